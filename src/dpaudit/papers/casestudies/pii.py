"""A measured PII prior: masked names in short emails, scored by a public character LM.

Beyond Worst Case §5.1 (BWC notes §3.1, item 3) estimates the prior of a masked name from the
perplexity
of a pre-trained GPT-2 on each filled-in sequence, normalised over the candidate set.  GPT-2
cannot be downloaded here, so every ingredient is rebuilt locally and seeded:

1. **Data.** Short emails generated with Faker (en_US, seeded) from a fixed set of templates,
   each containing people's names (:func:`email_corpus`).  Faker draws first names from US
   frequency tables, so names are non-uniform as in real text.
2. **Public model.** A small character n-gram network (:class:`dpaudit.papers.charlm.CharMLP`)
   trained *without* DP on a public email corpus drawn with a different seed (the stand-in for
   GPT-2 and its public training data).
3. **Targets.** ``n_sequences`` further emails each with one masked first name (Lukas et al.):
   the candidate set is every name that occurs masked in these sequences (BWC notes §3.1 (i)).
4. **Prior.** For sequence s and candidate c, log L(s, c) = sum of the model's log-probabilities
   of the characters of the filled-in sequence; prior(c | s) = L(s, c) / sum_c' L(s, c')
   (BWC notes §3.1 "recommended" normalisation: proportional to the sequence likelihood
   exp(-N_tok ln PPL)).  The characters before the mask are the same for every candidate and
   cancel; the model's context is ``context`` characters, so only the name and the next
   ``context`` characters differ and are scored.

The paper's numbers imply a maximum PII prior of about 0.0055 over ~500 Enron sequences
(BWC notes §6.4); :class:`PIIPrior` reports what this measurement gives instead (see
docs/risk_case_studies.md for the comparison).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpaudit.papers.casestudies.ngram import ALPHABET, encode
from dpaudit.validation import check_count

__all__ = ["TEMPLATES", "PIIPrior", "email_corpus", "masked_sequences", "measure_pii_prior"]

#: email templates; {name} is the masked PII, {other} another person, {topic}/{day} filler.
TEMPLATES = (
    "hi {name}, please send the {topic} to {other} before {day}. thanks, {other2}",
    "dear {name}, thank you for the {topic}. i will call you on {day}. best, {other}",
    "{other} asked me to forward the {topic} to {name} by {day}.",
    "thanks {name}! the {topic} looks good. let us meet on {day} with {other}.",
    "hello {name}, {other} is out until {day}; can you review the {topic}?",
    "please ask {name} to sign the {topic} and return it to {other} on {day}.",
)
_TOPICS = ("report", "contract", "invoice", "schedule", "budget", "proposal", "memo",
           "agenda", "draft", "minutes")
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")


def _fill(fake, rng: np.random.Generator, n: int) -> list[tuple[str, str, str]]:  # noqa: ANN001
    """n emails as (text before the name, name, text after the name)."""
    out = []
    for _ in range(n):
        t = TEMPLATES[int(rng.integers(len(TEMPLATES)))]
        vals = {"other": fake.first_name(), "other2": fake.first_name(),
                "topic": _TOPICS[int(rng.integers(len(_TOPICS)))],
                "day": _DAYS[int(rng.integers(len(_DAYS)))]}
        name = fake.first_name().lower()
        pre, post = t.split("{name}")
        out.append((pre.format(**vals).lower(), name, post.format(**vals).lower()))
    return out


def _faker(seed: int):  # noqa: ANN202 - faker.Faker
    try:
        from faker import Faker
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ImportError("the PII prior needs Faker: pip install 'dpaudit[casestudies]'") \
            from exc
    fake = Faker("en_US")
    fake.seed_instance(int(seed))
    return fake


def email_corpus(n: int, seed: int) -> list[str]:
    """n generated emails (Faker en_US seeded with ``seed``), names filled in."""
    n = check_count("n", n, minimum=1)
    rng = np.random.default_rng(seed)
    return [a + b + c for a, b, c in _fill(_faker(seed), rng, n)]


def masked_sequences(n: int, seed: int) -> list[tuple[str, str, str]]:
    """n emails with one masked first name each: (prefix, secret name, suffix)."""
    n = check_count("n", n, minimum=1)
    return _fill(_faker(seed), np.random.default_rng(seed), n)


@dataclass(frozen=True)
class PIIPrior:
    """prior[s, c]: probability of candidate ``candidates[c]`` in masked sequence s;
    ``secret[s]``: index of the true name of sequence s."""

    candidates: tuple[str, ...]
    prior: np.ndarray = field(repr=False)
    secret: np.ndarray = field(repr=False)

    @property
    def canary_priors(self) -> np.ndarray:
        """The prior of each sequence's true name (the canaries of Beyond Worst Case Fig. 2)."""
        return self.prior[np.arange(self.prior.shape[0]), self.secret]

    def scaled_down(self, k: int = 10) -> np.ndarray:
        """Per sequence, the k heaviest candidates renormalised, sorted by rank: (S, k)
        (the "scaled down to 10 possible digits" of Beyond Worst Case §5.2)."""
        k = check_count("k", k, minimum=2)
        top = -np.sort(-self.prior, axis=1)[:, :k]
        return top / top.sum(axis=1, keepdims=True)

    def summary(self) -> dict[str, float]:
        cp = self.canary_priors
        return {"sequences": float(self.prior.shape[0]), "candidates": float(len(self.candidates)),
                "max": float(cp.max()), "median": float(np.median(cp)),
                "p10": float(np.quantile(cp, 0.1)), "min": float(cp.min()),
                "top1_scaled10_mean": float(self.scaled_down(10)[:, 0].mean())}


def _windows(strings: list[str], context: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (context, next char) pair of every string (BOS-padded): contexts, targets and
    the string index of each pair."""
    ctx, tgt, owner = [], [], []
    for i, s in enumerate(strings):
        codes = np.concatenate([np.zeros(context, np.int64), encode(s)])
        win = np.lib.stride_tricks.sliding_window_view(codes, context + 1)
        ctx.append(win[:, :context])
        tgt.append(win[:, context])
        owner.append(np.full(win.shape[0], i))
    return np.concatenate(ctx), np.concatenate(tgt), np.concatenate(owner)


def measure_pii_prior(*, n_sequences: int = 500, n_public: int = 3000, context: int = 6,
                      hidden: int = 128, epochs: int = 3, seed: int = 0) -> PIIPrior:
    """Measure the PII prior (module docstring): public model on ``n_public`` emails (seed
    ``seed + 1``), ``n_sequences`` masked sequences (seed ``seed``)."""
    from dpaudit.papers.charlm import fit_char_lm, next_char_logprob

    check_count("context", context, minimum=1)
    public = email_corpus(n_public, seed + 1)
    ctx, tgt, _ = _windows(public, context)
    model = fit_char_lm(ctx, tgt, vocab=len(ALPHABET), hidden=hidden, epochs=epochs,
                        seed=seed)
    seqs = masked_sequences(n_sequences, seed)
    candidates = tuple(sorted({name for _, name, _ in seqs}))
    index = {c: i for i, c in enumerate(candidates)}
    # only the last `context` characters of the prefix and the first `context` characters of
    # the suffix can change the score; score each distinct (left, right) pair once.
    pairs = [(p[-context:], s[:context]) for p, _, s in seqs]
    uniq = sorted(set(pairs))
    u_index = {pr: i for i, pr in enumerate(uniq)}
    strings = []
    for left, right in uniq:
        for c in candidates:
            strings.append(left + c + right)
    ctx, tgt, owner = _windows(strings, context)
    # drop the windows predicting characters of `left` (identical for all candidates)
    lefts = np.repeat([len(left) for left, _ in uniq], len(candidates))
    pos = np.arange(owner.size) - np.searchsorted(owner, owner)
    keep = pos >= lefts[owner]
    lp = next_char_logprob(model, ctx[keep], tgt[keep])
    score = np.bincount(owner[keep], weights=lp, minlength=len(strings)).reshape(
        len(uniq), len(candidates))
    score -= score.max(axis=1, keepdims=True)
    table = np.exp(score)
    table /= table.sum(axis=1, keepdims=True)
    rows = np.asarray([u_index[pr] for pr in pairs])
    secret = np.asarray([index[name] for _, name, _ in seqs])
    return PIIPrior(candidates, table[rows], secret)
