"""Case studies of Beyond Worst Case built on the bounds of :mod:`dpaudit.risk` (and on training/).

Modules (import them directly; nothing heavy is imported here):

* :mod:`~dpaudit.papers.casestudies.extraction` -- canary extraction from a DP n-gram count model
  (Beyond Worst Case §5, the Gaussian-mechanism version), with
  :mod:`~dpaudit.papers.casestudies.ngram`
  (the count model) and :mod:`~dpaudit.papers.casestudies.corpus` (the shipped training text);
* :mod:`~dpaudit.papers.casestudies.lm_extraction` -- the same attack on the paper's fully
  connected character n-gram network trained with DP-SGD (torch, via :mod:`dpaudit.papers.charlm`);
* :mod:`~dpaudit.papers.casestudies.pii` -- measured PII prior: a seeded Faker email corpus
  scored by a small non-DP "public" character model (Beyond Worst Case §5.1, BWC notes §3.1);
* :mod:`~dpaudit.papers.casestudies.marginals` -- marginals/RAP attribute inference on census data
  (Beyond Worst Case §6) with :mod:`~dpaudit.papers.casestudies.census` and
  :mod:`~dpaudit.papers.casestudies.rap`.

:mod:`dpaudit.risk` holds only the bounds (and the generic priors they take as input).
"""
