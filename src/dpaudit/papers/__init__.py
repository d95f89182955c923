"""Reproductions of the papers dpaudit implements: figure/table runners, case studies and the
papers' own simulators and trainers.

Nothing in the product core imports this package (tests/test_architecture.py checks it); it
builds on the core's public API.  ``dpaudit reproduce NAME`` runs a registered runner.

* :mod:`dpaudit.papers.experiments` -- runners (CSV + PNG) and their registry;
* :mod:`dpaudit.papers.casestudies` -- the risk case studies of "Beyond the Worst Case"
  (extraction from n-gram models, census marginals) and LiDP on real training;
* :mod:`dpaudit.papers.lidp_simulators` -- the LiDP paper's Gaussian simulator, RDP
  calibration and vectorised logistic DP-SGD trainer;
* :mod:`dpaudit.papers.charlm`, :mod:`dpaudit.papers.lidp_dpsgd` -- batched torch trainers of
  the case studies (need the ``torch`` extra).
"""
