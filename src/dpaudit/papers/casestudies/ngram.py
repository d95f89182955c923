"""A character n-gram language model trained with differential privacy (Gaussian mechanism).

Case study 1 of Beyond Worst Case (§5.2) trains a character n-gram model with DP-SGD on a canary and
extracts the secret by ranking candidates by model likelihood. On this machine we train the
count-based n-gram model directly with the Gaussian mechanism, which is the same kind of
guarantee (a GDP curve) without a deep-learning stack:

* each document (= one record) contributes its n-gram *count vector* over cells
  (context bucket, next character); contexts are the previous ``order - 1`` characters
  (start-padded), mapped to ``buckets`` rows by a fixed multiplicative hash (data-independent);
* per-record clipping to L2 norm ``clip`` (like DP-SGD's per-example clipping);
* the sum is released with N(0, s^2) on every released cell.

Sensitivity: count vectors are non-negative, so for replace-one neighbours
||a - b||^2 = ||a||^2 + ||b||^2 - 2 a.b <= 2 clip^2, i.e. Delta = sqrt(2) clip, and the release
is mu-GDP with mu = sqrt(2) clip / s. We calibrate s = sqrt(2) clip / gdp_mu(epsilon, delta)
(:func:`dpaudit.risk.fdp.gdp_mu`), so the model is exactly (epsilon, delta)-DP and exactly
mu-GDP (which the MMC G_mu comparator needs).

"Lazy" training (the paper, following Stock et al.: "we only train the parameters corresponding
to the fixed first 8 digits"): only a public, data-independent set of context rows is trained
and released; each record's counts outside those rows are dropped before clipping.

The released table is post-processed into next-character probabilities
p(c | ctx) = (max(count, 0) + smoothing) / sum_c' (max(count', 0) + smoothing); rows that were
not released predict uniformly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dpaudit.risk.fdp import gdp_mu
from dpaudit.validation import check_count, check_delta, check_nonnegative, check_positive

__all__ = [
    "ALPHABET", "encode", "NgramSpec", "RecordEvents", "record_events", "clip_scales",
    "ngram_noise_std", "NgramModel", "train_dp_ngram",
]

#: character vocabulary; anything else maps to "?" (last symbol). Index 0 is also BOS padding.
ALPHABET = "\x02abcdefghijklmnopqrstuvwxyz0123456789 .,;:'!-\n?"
_LOOKUP = np.full(256, len(ALPHABET) - 1, dtype=np.int64)
for _i, _ch in enumerate(ALPHABET):
    _LOOKUP[ord(_ch)] = _i
_LOOKUP[[ord(c) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]] = _LOOKUP[[ord(c) for c in
                                                                    "abcdefghijklmnopqrstuvwxyz"]]
_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


def encode(text: str) -> np.ndarray:
    """Characters -> vocabulary indices (case-folded; unknown -> '?')."""
    b = np.frombuffer(text.encode("latin-1", errors="replace"), dtype=np.uint8)
    return _LOOKUP[b]


@dataclass(frozen=True)
class NgramSpec:
    """n-gram order (context = order - 1 characters) and number of hashed context rows."""

    order: int = 8
    buckets: int = 1 << 22

    def __post_init__(self) -> None:
        check_count("order", self.order, minimum=2)
        check_count("buckets", self.buckets, minimum=1)
        if len(ALPHABET) ** (self.order - 1) >= 2 ** 63:
            raise ValueError(f"order must be at most {int(63 / math.log2(len(ALPHABET)))}")

    @property
    def vocab(self) -> int:
        return len(ALPHABET)

    def context_rows(self, codes: np.ndarray) -> np.ndarray:
        """Hashed context row of every position of a code sequence (..., L) -> (..., L).

        The context of position t is codes[t - order + 1 : t] (BOS-padded), encoded exactly in
        base V and hashed with a fixed 64-bit multiplicative (Fibonacci) hash, high bits folded
        down, into ``buckets`` rows.
        """
        c = np.asarray(codes, dtype=np.int64)
        w = self.order - 1
        pad = np.zeros(c.shape[:-1] + (w,), dtype=np.int64)
        full = np.concatenate([pad, c], axis=-1)
        win = np.lib.stride_tricks.sliding_window_view(full, w, axis=-1)[..., :-1, :]
        powers = self.vocab ** np.arange(w - 1, -1, -1, dtype=np.int64)
        key = (win * powers).sum(-1).astype(np.uint64)
        with np.errstate(over="ignore"):
            h = key * _HASH_MULT
        h ^= h >> np.uint64(29)  # fold the well-mixed high bits into the low ones
        return (h % np.uint64(self.buckets)).astype(np.int64)


@dataclass(frozen=True)
class RecordEvents:
    """Sparse per-record count vectors: record ``rec[j]`` has ``count[j]`` in cell ``cell[j]``
    (cell = row * V + next char); one entry per distinct (record, cell)."""

    rec: np.ndarray
    cell: np.ndarray
    count: np.ndarray
    n_records: int


def record_events(docs: Sequence[str], spec: NgramSpec,
                  trained_rows: np.ndarray | None = None) -> RecordEvents:
    """Count vectors of every document (vectorised over all characters of all documents).

    ``trained_rows``: sorted public rows to train ("lazy" training); events in other rows are
    dropped before clipping. ``None`` trains every row.
    """
    codes = [encode(d) for d in docs]
    lens = np.asarray([len(c) for c in codes], dtype=np.int64)
    if len(codes) == 0:
        return RecordEvents(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), 0)
    # place every doc in its own row of a padded matrix so windows never cross documents
    width = max(int(lens.max()), 1)
    mat = np.zeros((len(codes), width), dtype=np.int64)
    mask = np.arange(width)[None, :] < lens[:, None]
    mat[mask] = np.concatenate(codes) if lens.sum() else np.zeros(0, np.int64)
    rows = spec.context_rows(mat)
    cell = rows * spec.vocab + mat
    rec = np.broadcast_to(np.arange(len(codes))[:, None], mat.shape)
    cell, rec = cell[mask], rec[mask]
    if trained_rows is not None:
        keep = np.isin(cell // spec.vocab, trained_rows)
        cell, rec = cell[keep], rec[keep]
    key = rec.astype(np.int64) * (spec.buckets * spec.vocab) + cell
    uniq, cnt = np.unique(key, return_counts=True)
    return RecordEvents(uniq // (spec.buckets * spec.vocab), uniq % (spec.buckets * spec.vocab),
                        cnt.astype(float), len(codes))


def clip_scales(events: RecordEvents, clip: float) -> np.ndarray:
    """Per-record factor min(1, clip / ||counts||_2) (per-example clipping)."""
    c = check_positive("clip", clip)
    sq = np.bincount(events.rec, weights=events.count ** 2, minlength=events.n_records)
    norm = np.sqrt(sq)
    return np.where(norm > c, c / np.where(norm > 0, norm, 1.0), 1.0)


def ngram_noise_std(epsilon: float, delta: float, clip: float = 1.0) -> float:
    """Noise std s = sqrt(2) clip / mu, mu = gdp_mu(epsilon, delta); 0 for epsilon = inf."""
    c = check_positive("clip", clip)
    d = check_delta(delta)
    eps = float(epsilon)
    if math.isinf(eps) and eps > 0:
        return 0.0
    check_positive("epsilon", eps)
    return math.sqrt(2.0) * c / gdp_mu(eps, d)


@dataclass(frozen=True)
class NgramModel:
    """Released noisy counts of the rows ``rows`` (sorted), shape (len(rows), V)."""

    spec: NgramSpec
    rows: np.ndarray
    table: np.ndarray = field(repr=False)
    smoothing: float = 0.1

    def row_probs(self, table_rows: np.ndarray) -> np.ndarray:
        """Post-processing: clamp at zero, add ``smoothing``, normalise (..., V)."""
        t = np.maximum(table_rows, 0.0) + self.smoothing
        return t / t.sum(axis=-1, keepdims=True)

    def next_logprob(self, context_rows: np.ndarray) -> np.ndarray:
        """log p(. | context) for an array of context rows -> (..., V)."""
        r = np.asarray(context_rows, dtype=np.int64)
        pos = np.clip(np.searchsorted(self.rows, r), 0, max(len(self.rows) - 1, 0))
        found = (self.rows[pos] == r) if len(self.rows) else np.zeros(r.shape, bool)
        probs = np.full(r.shape + (self.spec.vocab,), 1.0 / self.spec.vocab)
        if found.any():
            probs[found] = self.row_probs(self.table[pos[found]])
        return np.log(probs)

    def candidate_logprob(self, prefix: str, candidates: Sequence[str]) -> np.ndarray:
        """log P(candidate | prefix) for equal-length candidate strings (Secret-Sharer ranking)."""
        cand = np.stack([encode(c) for c in candidates])  # (K, m)
        pre = encode(prefix)
        full = np.concatenate([np.broadcast_to(pre, (cand.shape[0], pre.size)), cand], axis=1)
        rows = self.spec.context_rows(full)[:, pre.size:]
        lp = self.next_logprob(rows)
        return np.take_along_axis(lp, cand[..., None], axis=-1)[..., 0].sum(axis=1)


def train_dp_ngram(docs: Sequence[str], spec: NgramSpec, *, clip: float, noise_std: float,
                   rng: np.random.Generator, trained_rows: np.ndarray | None = None,
                   smoothing: float = 0.1) -> NgramModel:
    """Train the n-gram model with the Gaussian mechanism: sum of clipped count vectors + noise.

    With ``noise_std = ngram_noise_std(epsilon, delta, clip)`` the released table is
    (epsilon, delta)-DP w.r.t. replacing one document (see the module docstring).
    ``trained_rows=None`` releases all ``spec.buckets`` rows (keep ``buckets`` modest then).
    """
    s = check_nonnegative("noise_std", noise_std)
    check_nonnegative("smoothing", smoothing)
    rows = (np.arange(spec.buckets, dtype=np.int64) if trained_rows is None
            else np.unique(np.asarray(trained_rows, dtype=np.int64)))
    ev = record_events(docs, spec, rows if trained_rows is not None else None)
    w = ev.count * clip_scales(ev, clip)[ev.rec]
    row_of = np.searchsorted(rows, ev.cell // spec.vocab)
    flat = row_of * spec.vocab + ev.cell % spec.vocab
    table: np.ndarray = np.bincount(flat, weights=w, minlength=rows.size * spec.vocab).reshape(
        rows.size, spec.vocab)
    if s > 0:
        table = table + rng.normal(0.0, s, table.shape)
    return NgramModel(spec, rows, table, float(smoothing))
