"""Noisy k-way marginals (Beyond Worst Case App. A) and the modified RAP multi-attribute-inference
attack.

Mechanism (Def. A.1/A.2, §6.1). For an attribute set V (|V| = k) the *full* marginal vector of
counts ``Q_V(X)[v] = #{i : x_i,V = v}`` is released with i.i.d. Gaussian noise N(0, 2 sigma^2)
per cell (the paper's parametrisation). Under replace-one adjacency one record moves one unit of
count from one cell to another, so the L2 sensitivity of a full vector is sqrt(2); the noisy
vector is therefore (sqrt(2) / (sqrt(2) sigma)) = (1/sigma)-GDP, and T such releases compose to
(sqrt(T)/sigma)-GDP (Dong-Roth-Su). Calibration to (epsilon, delta): sigma = sqrt(T) / mu with
mu = :func:`dpaudit.risk.fdp.gdp_mu` (epsilon, delta) (BWC notes §4.1 "Recipe", §6.8).
Only marginals that involve an unknown attribute are released and accounted:
T = C(d, k) - C(d - d', k). We release counts (sensitivity sqrt 2) rather than the fractions of
Def. A.2 (which normalises by |X| yet states the sensitivity on counts; BWC notes §8) -- dividing
by n afterwards is post-processing.

Attack (§6.1 "Adapting RAP attack"; Aydore et al. 2021, Dick et al. 2023). The dataset is relaxed
to per-record probability vectors X~_j[i] in the simplex of each column; the relaxed marginal of
V = {a, b, c} is sum_i X~_a[i] (x) X~_b[i] (x) X~_c[i] (outer product), and the attack minimises
sum_V ||Q~_V(X~) - y_V||_2^2 against the *released noisy* marginals y_V with Adam on softmax
logits, then rounds each unknown column by argmax. The paper's three modifications are all
implemented: (1) noisy rather than exact marginals; (2) known columns are one-hot and frozen;
(3) unknown columns start at the Bayesian-network prior conditioned on the known columns.
Optimiser, learning rate and step count are unspecified in the paper (BWC notes §8 item 11); they
are options here. Everything is vectorised: the relaxed marginals of all released sets come from
one ``np.bincount`` per step and the gradient is one gather per group of sets sharing the same
unknown columns.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dpaudit.risk.fdp import gdp_mu
from dpaudit.validation import check_count, check_delta, check_nonnegative, check_positive

__all__ = [
    "marginal_workload", "marginals_sigma", "NoisyMarginals", "noisy_marginals",
    "RAPOptions", "RAPResult", "rap_attack",
]


def marginal_workload(columns: Sequence[int], unknown: Sequence[int], k: int = 3
                      ) -> list[tuple[int, ...]]:
    """All k-subsets of ``columns`` that contain at least one ``unknown`` column (sorted).

    Their number is T = C(d, k) - C(d - d', k) with d = len(columns), d' = len(unknown).
    """
    k = check_count("k", k, minimum=1)
    cols = sorted(int(c) for c in columns)
    unk = {int(u) for u in unknown}
    if not unk <= set(cols):
        raise ValueError("unknown columns must be a subset of columns")
    if k > len(cols):
        raise ValueError(f"k must be at most the number of columns ({len(cols)}); got {k}")
    return [s for s in itertools.combinations(cols, k) if unk & set(s)]


def marginals_sigma(epsilon: float, delta: float, n_marginals: int) -> float:
    """Per-marginal sigma (noise N(0, 2 sigma^2) per count) for (epsilon, delta)-DP overall.

    sigma = sqrt(T) / mu, mu = gdp_mu(epsilon, delta) (BWC notes §4.1; §6.8 e.g. ACS d'=1,
    T=105, epsilon=1: sigma = 38.228, count-noise std sqrt(2) sigma = 54.062). epsilon = inf
    releases exact marginals (sigma = 0).
    """
    t = check_count("n_marginals", n_marginals, minimum=1)
    d = check_delta(delta)
    eps = float(epsilon)
    if math.isinf(eps) and eps > 0:
        return 0.0
    check_positive("epsilon", eps)
    return math.sqrt(t) / gdp_mu(eps, d)


@dataclass(frozen=True)
class NoisyMarginals:
    """Released noisy full marginal vectors, stored flat.

    ``values[offsets[m]:offsets[m+1]]`` is the noisy count vector of ``workload[m]`` in C order
    over ``sizes`` of its attributes. ``noise_std`` = sqrt(2) sigma.
    """

    workload: tuple[tuple[int, ...], ...]
    sizes: tuple[int, ...]
    offsets: np.ndarray
    values: np.ndarray
    sigma: float
    epsilon: float
    delta: float

    @property
    def noise_std(self) -> float:
        return math.sqrt(2.0) * self.sigma

    @property
    def mu(self) -> float:
        """GDP parameter of the whole release, sqrt(T) * sqrt(2) / noise_std (inf if exact)."""
        return math.inf if self.sigma == 0 else math.sqrt(len(self.workload)) / self.sigma

    def marginal(self, m: int) -> np.ndarray:
        shape = tuple(self.sizes[a] for a in self.workload[m])
        return self.values[self.offsets[m]:self.offsets[m + 1]].reshape(shape)


def _cell_index(records: np.ndarray, workload: Sequence[Sequence[int]], sizes: Sequence[int]
                ) -> tuple[np.ndarray, np.ndarray]:
    """Flat cell index of every (marginal, record): shape (M, n); and the offsets (M + 1)."""
    w = np.asarray(workload, dtype=np.int64)  # (M, k)
    s = np.asarray(sizes, dtype=np.int64)[w]  # (M, k)
    strides = np.cumprod(s[:, ::-1], axis=1)[:, ::-1]
    strides = np.concatenate([strides[:, 1:], np.ones((len(w), 1), dtype=np.int64)], axis=1)
    offsets = np.concatenate([[0], np.cumsum(np.prod(s, axis=1))])
    vals = records[:, w]  # (n, M, k)
    idx = offsets[:-1][:, None] + np.einsum("nmk,mk->mn", vals, strides)
    return idx, offsets


def noisy_marginals(records: np.ndarray, sizes: Sequence[int], workload: Sequence[Sequence[int]],
                    sigma: float, rng: np.random.Generator, *, epsilon: float = math.nan,
                    delta: float = math.nan) -> NoisyMarginals:
    """Release every marginal in ``workload`` with N(0, 2 sigma^2) noise per count cell."""
    x = np.asarray(records, dtype=np.int64)
    if x.ndim != 2 or x.shape[1] != len(sizes):
        raise ValueError(f"records must have shape (n, {len(sizes)})")
    if not workload:
        raise ValueError("workload must not be empty")
    sig = float(sigma)
    if not sig >= 0 or not math.isfinite(sig):
        raise ValueError(f"sigma must be a finite number >= 0; got {sigma!r}")
    idx, offsets = _cell_index(x, workload, sizes)
    exact = np.bincount(idx.ravel(), minlength=int(offsets[-1])).astype(float)
    noisy = exact + (rng.normal(0.0, math.sqrt(2.0) * sig, exact.shape) if sig > 0 else 0.0)
    return NoisyMarginals(tuple(tuple(int(a) for a in v) for v in workload),
                          tuple(int(s) for s in sizes), offsets, noisy, sig, float(epsilon),
                          float(delta))


@dataclass(frozen=True)
class RAPOptions:
    """Settings of the relaxed-projection attack (unspecified in the paper, BWC notes §8.11).

    The objective is  ||Q~(X~) - y||^2 / (2 s^2) + prior_weight * sum_i,u KL(X~_iu || pi_iu),
    s = max(released noise std, min_noise_std), pi = the initial prior. The default
    ``prior_weight = 0`` is plain RAP (Aydore et al.) with the paper's three modifications
    (noisy marginals, frozen known columns, BayNet initialisation; Beyond Worst Case App. A): the
    paper
    adds no penalty.  ``prior_weight = 1`` is an option that makes the objective the negative
    log-posterior of a mean-field relaxation, which keeps the attack from fitting pure noise
    at small epsilon (see docs/risk_case_studies.md for the measured difference).
    """

    steps: int = 400
    learning_rate: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.999
    init: str = "prior"  # "prior" (paper's modification 3) or "uniform"
    prior_weight: float = 0.0
    min_noise_std: float = 1.0

    def __post_init__(self) -> None:
        check_count("steps", self.steps, minimum=1)
        check_positive("learning_rate", self.learning_rate)
        check_nonnegative("prior_weight", self.prior_weight)
        check_positive("min_noise_std", self.min_noise_std)
        if self.init not in ("prior", "uniform"):
            raise ValueError(f"init must be one of prior, uniform; got {self.init!r}")


@dataclass(frozen=True)
class RAPResult:
    """``probs[j]``: relaxed distribution (n, size) of unknown column ``unknown[j]``;
    ``guess``: argmax rounding, shape (n, d'); ``loss``: objective per step."""

    unknown: tuple[int, ...]
    probs: tuple[np.ndarray, ...]
    guess: np.ndarray
    loss: np.ndarray = field(repr=False)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def rap_attack(known: np.ndarray, known_cols: Sequence[int], unknown_cols: Sequence[int],
               released: NoisyMarginals, *, init_probs: Sequence[np.ndarray] | None = None,
               options: RAPOptions | None = None) -> RAPResult:
    """Modified RAP M-AI attack: reconstruct ``unknown_cols`` of every record.

    Args:
      known: (n, len(known_cols)) category indices the adversary knows (frozen one-hot).
      released: the noisy marginals (every set must lie inside known_cols + unknown_cols).
      init_probs: per unknown column an (n, size) prior P(x_u | x_known) (modification 3);
        required when ``options.init == "prior"``.
    """
    opt = options or RAPOptions()
    known = np.asarray(known, dtype=np.int64)
    kc = [int(c) for c in known_cols]
    uc = [int(c) for c in unknown_cols]
    if known.ndim != 2 or known.shape[1] != len(kc):
        raise ValueError("known must have shape (n_records, len(known_cols))")
    if not uc:
        raise ValueError("unknown_cols must not be empty")
    n = known.shape[0]
    sizes = released.sizes
    kpos = {c: i for i, c in enumerate(kc)}
    upos = {c: i for i, c in enumerate(uc)}
    # ---- initial logits
    if opt.init == "prior":
        if init_probs is None or len(init_probs) != len(uc):
            raise ValueError("init_probs must give one (n, size) array per unknown column")
        logits = [np.log(np.clip(np.asarray(p, dtype=float), 1e-12, None)) for p in init_probs]
    else:
        logits = [np.zeros((n, sizes[u])) for u in uc]
    for j, u in enumerate(uc):
        if logits[j].shape != (n, sizes[u]):
            raise ValueError(f"init_probs[{j}] must have shape ({n}, {sizes[u]})")
    # ---- group released sets by their unknown columns; precompute cell indices
    groups: dict[tuple[int, ...], list[int]] = {}
    for m, attrs in enumerate(released.workload):
        if any(a not in kpos and a not in upos for a in attrs):
            raise ValueError(f"released marginal {attrs} uses a column that is neither known "
                             "nor unknown")
        key = tuple(a for a in attrs if a in upos)
        if key:
            groups.setdefault(key, []).append(m)
    plans = []
    for key, ms in groups.items():
        idx_parts = []
        for m in ms:
            attrs = released.workload[m]
            s = [sizes[a] for a in attrs]
            strides = [int(np.prod(s[i + 1:])) for i in range(len(s))]
            off = np.full(n, int(released.offsets[m]), dtype=np.int64)
            ustr = []
            for a, st in zip(attrs, strides, strict=True):
                if a in kpos:
                    off = off + known[:, kpos[a]] * st
                else:
                    ustr.append(st)
            grid = np.zeros(tuple(sizes[u] for u in key), dtype=np.int64)
            for r, st in enumerate(ustr):
                shape = [1] * len(key)
                shape[r] = sizes[key[r]]
                grid = grid + (np.arange(sizes[key[r]]) * st).reshape(shape)
            idx_parts.append(off.reshape((n,) + (1,) * len(key)) + grid[None])
        plans.append((key, np.stack(idx_parts)))  # (M_g, n, *sizes[key])
    y = released.values
    total = int(released.offsets[-1])
    # exact contribution of marginals with no unknown column is constant; drop them from y
    const = np.zeros(total)
    for m, attrs in enumerate(released.workload):
        if not any(a in upos for a in attrs):
            sl = slice(int(released.offsets[m]), int(released.offsets[m + 1]))
            idx_m, _ = _cell_index(_assemble(known, kc, attrs), [attrs], sizes)
            const[sl] = np.bincount(idx_m.ravel(), minlength=sl.stop - sl.start)
    all_idx = np.concatenate([idx.ravel() for _, idx in plans])
    scale = 1.0 / (2.0 * max(released.noise_std, opt.min_noise_std) ** 2)
    log_prior = [z - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True))
                 - z.max(1, keepdims=True) for z in logits]
    use_prior = opt.prior_weight > 0 and opt.init == "prior"
    letters = "bcd"
    m1 = [np.zeros_like(z) for z in logits]
    m2 = [np.zeros_like(z) for z in logits]
    losses = np.empty(opt.steps)
    for t in range(1, opt.steps + 1):
        xs = [_softmax(z) for z in logits]
        q = const.copy()
        weights = []
        for key, idx in plans:
            w = xs[upos[key[0]]]
            for r in range(1, len(key)):
                sub = "a" + letters[:r]
                w = np.einsum(f"{sub},a{letters[r]}->{sub}{letters[r]}", w, xs[upos[key[r]]])
            weights.append(np.broadcast_to(w[None], idx.shape).ravel())
        # one bincount over every released cell of every group
        q += np.bincount(all_idx, weights=np.concatenate(weights), minlength=total)
        resid = q - y
        losses[t - 1] = float(resid @ resid) * scale
        grads = [np.zeros_like(z) for z in logits]
        for key, idx in plans:
            g = 2.0 * scale * resid[idx].sum(axis=0)  # (n, *sizes[key])
            r_all = len(key)
            for r in range(r_all):
                others = [xs[upos[key[o]]] for o in range(r_all) if o != r]
                sub_g = "a" + letters[:r_all]
                subs = [f"a{letters[o]}" for o in range(r_all) if o != r]
                out = f"a{letters[r]}"
                grads[upos[key[r]]] += np.einsum(",".join([sub_g] + subs) + "->" + out, g,
                                                 *others)
        for j in range(len(uc)):
            gx = grads[j]
            if use_prior:
                logx = np.log(np.clip(xs[j], 1e-300, None))
                kl = (xs[j] * (logx - log_prior[j])).sum()
                losses[t - 1] += opt.prior_weight * float(kl)
                gx = gx + opt.prior_weight * (logx - log_prior[j])
            gz = xs[j] * (gx - (gx * xs[j]).sum(axis=1, keepdims=True))
            m1[j] = opt.beta1 * m1[j] + (1 - opt.beta1) * gz
            m2[j] = opt.beta2 * m2[j] + (1 - opt.beta2) * gz * gz
            mh = m1[j] / (1 - opt.beta1 ** t)
            vh = m2[j] / (1 - opt.beta2 ** t)
            logits[j] = logits[j] - opt.learning_rate * mh / (np.sqrt(vh) + 1e-8)
    probs = tuple(_softmax(z) for z in logits)
    guess = np.stack([p.argmax(axis=1) for p in probs], axis=1)
    return RAPResult(tuple(uc), probs, guess, losses)


def _assemble(known: np.ndarray, known_cols: Sequence[int], attrs: Sequence[int]) -> np.ndarray:
    """A records array whose columns ``attrs`` hold the known values (others zero)."""
    width = max(max(attrs), max(known_cols)) + 1
    out = np.zeros((known.shape[0], width), dtype=np.int64)
    for i, c in enumerate(known_cols):
        out[:, c] = known[:, i]
    return out
