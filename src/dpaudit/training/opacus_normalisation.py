"""Opacus's data-dependent normalisation and sampling rate (opacus issues #571 and #819).

What ``PrivacyEngine.make_private`` (Opacus 1.6, ``privacy_engine.py`` and
``data_loader.py``; one process, ``poisson_sampling=True``) derives from a ``DataLoader`` of
N records and batch size b (``drop_last=False``), step by step in IEEE double precision:

1. ``len(data_loader)`` = k = ceil(N / b) (PyTorch's batch sampler, exact integers);
2. ``DPDataLoader.from_data_loader`` samples each record with probability
   q_s = 1 / k (the float ``1 / len(data_loader)``);
3. the DP loader has ``len`` = s = ``int(1 / q_s)`` steps per epoch -- equal to k except
   where ``1 / (1 / k)`` rounds below k (k = 93, 99, 105, ...: s = k - 1);
4. the accountant's rate is q = 1 / s (``1 / len(dp_loader)``) and the optimizer divides
   the noisy clipped sum by ``expected_batch_size`` = D = ``int(N * q)``: truncation of a
   float product, so D can fall one below floor(N / s) (N = 2450, b = 50: D = 49) and can be
   0 (N = 49, b = 1: ``49 * (1 / 49)`` = 0.999...; the step divides by zero and the model
   becomes inf/nan).

The accountant analyses the subsampled Gaussian, whose output does not depend on N beyond the
sampled records.  The release here is (S + N(0, sigma^2 C^2 I_d)) / D with records sampled at
q_s, and both D and q_s are functions of the *private* N: under add/remove adjacency the
mechanism changes whenever (k, D) differs between N and N +- 1 (:func:`divisor_leaks`).  The
cause is this data-dependent divisor and sampling rate; an exact N q_s would move at every N,
and it is the truncation that leaves most N safe.  With d released weights the noise's norm
sigma C sqrt(d) / D is known to relative precision about 1 / sqrt(2 d), so when D changes the
two data sets are distinguishable whatever sigma: for data whose gradients vanish at the
start (targets 0 for a zero-initialised linear model) the release is exactly
-lr N(0, sigma^2 C^2 I_d) / D, and :func:`scale_pair_epsilon` gives the exact epsilon of that
pair -- a lower bound on the true epsilon of Opacus's mechanism, not limited by trials.

:class:`OpacusRun` is the mechanism (``make_private`` and a normal training loop -- forward,
``backward()`` and ``step()`` on every batch, empty Poisson batches included -- for T steps of
SGD on a bias-free linear model started at 0; the released weights), :class:`SizeNeighbours`
the pair (first N records, first N + 1), :class:`UpdateNorm` the score; together a
:class:`dpaudit.BlackBoxAudit` (:func:`normalisation_audit`) for the trial engine.  The fix,
``OpacusRun(public_sample_rate=q)``: a ``DPDataLoader`` at a public rate and a public divisor
(``optimizer.expected_batch_size = batch_size``).  :func:`normalisation_finding` is the
configuration error a user reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpaudit.validation import check_count, check_delta, check_positive

__all__ = ["OpacusArithmetic", "NormalisationFinding", "OpacusRun", "SizeNeighbours",
           "UpdateNorm", "affected_fraction", "divisor_leaks", "leaking_sizes",
           "normalisation_audit", "normalisation_finding", "opacus_arithmetic",
           "opacus_divisor", "scale_pair_epsilon"]


def _arithmetic(n: np.ndarray, batch_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k, s, D) of steps 1-4 above for an array of data set sizes (float64 = Python floats,
    truncation toward zero = ``int`` on these positive numbers)."""
    n = np.asarray(n, dtype=np.int64)
    k = (n + batch_size - 1) // batch_size
    s = np.trunc(1.0 / (1.0 / k)).astype(np.int64)
    d = np.trunc(n * (1.0 / s)).astype(np.int64)
    return k, s, d


@dataclass(frozen=True)
class OpacusArithmetic:
    """What ``make_private`` derives from N records and DataLoader batch size b.

    Attributes:
      n, batch_size: the inputs.
      loader_batches: k = len(DataLoader) = ceil(N / b).
      sample_rate: q_s = 1 / k, the Poisson sampler's rate.
      steps_per_epoch: s = len(DPDataLoader) = int(1 / q_s).
      accountant_rate: 1 / s, the rate the accountant is told.
      divisor: D = expected_batch_size = int(N * (1 / s)) in float arithmetic (0 possible).
    """

    n: int
    batch_size: int
    loader_batches: int
    sample_rate: float
    steps_per_epoch: int
    accountant_rate: float
    divisor: int

    @property
    def release(self) -> tuple[int, int]:
        """What of N the release depends on: (k, D) (s and the rates are functions of k)."""
        return self.loader_batches, self.divisor


def opacus_arithmetic(n: int, batch_size: int) -> OpacusArithmetic:
    """:class:`OpacusArithmetic` of N = ``n`` records at DataLoader batch size ``batch_size``."""
    n = check_count("n", n, minimum=1)
    b = check_count("batch_size", batch_size, minimum=1)
    k, s, d = (int(v[0]) for v in _arithmetic(np.array([n]), b))
    return OpacusArithmetic(n, b, k, 1 / k, s, 1 / s, d)


def opacus_divisor(n: int, batch_size: int) -> tuple[float, int]:
    """(sampler rate q_s = 1 / ceil(n / b), expected_batch_size D) of ``make_private``."""
    a = opacus_arithmetic(n, batch_size)
    return a.sample_rate, a.divisor


def leaking_sizes(batch_size: int, n_max: int, n_min: int = 1) -> np.ndarray:
    """Boolean array over N = n_min..n_max: True where (k, D) of N differs from that of
    N - 1 (when N >= 2) or N + 1 -- the sizes at which the release depends on one record."""
    b = check_count("batch_size", batch_size, minimum=1)
    lo = check_count("n_min", n_min, minimum=1)
    hi = check_count("n_max", n_max, minimum=lo)
    n = np.arange(max(lo - 1, 1), hi + 2)
    k, _, d = _arithmetic(n, b)
    change = (k[1:] != k[:-1]) | (d[1:] != d[:-1])       # between n[i] and n[i] + 1
    leak = np.zeros(n.size, dtype=bool)
    leak[:-1] |= change
    leak[1:] |= change
    return leak[n.searchsorted(lo):n.searchsorted(hi) + 1]


def divisor_leaks(n: int, batch_size: int) -> bool:
    """True iff Opacus's release at N = ``n`` differs in (k, D) from N - 1 or N + 1."""
    n = check_count("n", n, minimum=1)
    return bool(leaking_sizes(batch_size, n, n)[0])


def affected_fraction(batch_size: int, n_min: int, n_max: int) -> float:
    """Fraction of the data set sizes N in [n_min, n_max] where :func:`divisor_leaks`."""
    return float(leaking_sizes(batch_size, n_max, n_min).mean())


def _log_delta(eps: float, d: int, a: float) -> float:
    """log delta(eps) of P = N(0, a^2 I_d) against Q = N(0, I_d), both directions, a > 1.

    With u = ||x||^2 (Q: chi^2_d, P: a^2 chi^2_d) the log likelihood ratio
    log p/q = -d ln a + u (1 - 1/a^2) / 2 is increasing in u, so the optimal events are
    thresholds (Neyman-Pearson): delta_PQ = P(u > t) - e^eps Q(u > t) at
    t = 2 (eps + d ln a) / (1 - 1/a^2), delta_QP = Q(u < t') - e^eps P(u < t') at
    t' = 2 (d ln a - eps) / (1 - 1/a^2); delta(eps) = max of the two (log space).
    """
    c = 1.0 - 1.0 / a ** 2
    out = -math.inf
    t = 2.0 * (eps + d * math.log(a)) / c
    lp, lq = float(stats.chi2.logsf(t / a ** 2, d)), float(stats.chi2.logsf(t, d))
    if eps + lq - lp < 0:
        out = lp + math.log1p(-math.exp(eps + lq - lp))
    t = 2.0 * (d * math.log(a) - eps) / c
    if t > 0:
        lq, lp = float(stats.chi2.logcdf(t, d)), float(stats.chi2.logcdf(t / a ** 2, d))
        if eps + lp - lq < 0:
            out = max(out, lq + math.log1p(-math.exp(eps + lp - lq)))
    return out


def scale_pair_epsilon(weights: int, divisors: tuple[int, int], delta: float) -> float:
    """Exact epsilon at ``delta`` between N(0, (sigma C / D0)^2 I_d) and N(0, (sigma C / D1)^2
    I_d): Opacus's release on data whose gradients vanish at the start, for the two divisors
    D0 != D1 of N and N +- 1 (d = ``weights``; sigma and C cancel: only a = max/min of the
    divisors matters).  A lower bound on the true epsilon of the mechanism, without trials.
    Solved by :func:`dpaudit.search.solve_monotone` (delta(eps) decreases in eps)."""
    from dpaudit.search import solve_monotone

    d = check_count("weights", weights, minimum=1)
    d0, d1 = (check_count("divisors", v, minimum=1) for v in divisors)
    delta = check_delta(delta)
    if d0 == d1:
        return 0.0
    if delta == 0:
        return math.inf                      # the privacy loss is unbounded in ||x||
    a = max(d0, d1) / min(d0, d1)
    if _log_delta(0.0, d, a) <= math.log(delta):
        return 0.0
    target = -math.log(delta)
    return solve_monotone(lambda e: -_log_delta(e, d, a), target, 0.0, 1.0, max_hi=1e9)


@dataclass(frozen=True)
class NormalisationFinding:
    """Whether ``make_private`` at (N, b) leaks through its divisor / sampling rate, by how much,
    and what to change.  ``here`` and ``neighbours`` (N - 1 when N >= 2, N + 1) are
    :class:`OpacusArithmetic`; ``epsilon`` is :func:`scale_pair_epsilon` for the largest
    divisor change when ``weights`` is given (None otherwise, or when no divisor changes)."""

    here: OpacusArithmetic
    neighbours: tuple[OpacusArithmetic, ...]
    weights: int | None = None
    delta: float = 1e-5

    @property
    def leaks(self) -> bool:
        return any(m.release != self.here.release for m in self.neighbours)

    @property
    def zero_divisor(self) -> bool:
        return self.here.divisor == 0

    @property
    def relative_change(self) -> float:
        """Largest |D' - D| / max(D, D') over the neighbours (1.0 with a zero divisor)."""
        return max((abs(m.divisor - self.here.divisor) / max(m.divisor, self.here.divisor, 1)
                    for m in self.neighbours), default=0.0)

    @property
    def epsilon(self) -> float | None:
        ds = [m.divisor for m in self.neighbours if m.divisor != self.here.divisor]
        if self.weights is None or not ds or self.here.divisor == 0 or 0 in ds:
            return None
        worst = max(ds, key=lambda v: max(v, self.here.divisor) / min(v, self.here.divisor))
        return scale_pair_epsilon(self.weights, (self.here.divisor, worst), self.delta)

    def message(self) -> str:
        """The configuration finding, in words."""
        h = self.here
        head = (f"normalisation: Opacus make_private at N = {h.n} records, DataLoader batch "
                f"size {h.batch_size}, divides the noisy sum by expected_batch_size = "
                f"int(N * (1/{h.steps_per_epoch})) = {h.divisor} and samples at "
                f"1/{h.loader_batches}")
        if not self.leaks and not self.zero_divisor:
            return head + ("; N - 1 and N + 1 give the same, so the release does not depend "
                           "on one record here")
        moves = "; ".join(f"N = {m.n} gives {m.divisor} and 1/{m.loader_batches}"
                          for m in self.neighbours if m.release != h.release)
        out = f"{head}; {moves}"
        if self.zero_divisor:
            out += " -- a zero divisor: the step divides by 0 and the model becomes inf/nan"
        else:
            moved = (f"the noise scale moves by {100 * self.relative_change:.1f}%"
                     if self.relative_change else "the sampling rate moves")
            out += (f": both come from the private data set size, so the release depends on "
                    f"whether one record is present ({moved}")
            eps = self.epsilon
            out += (f"; with {self.weights:,} weights and gradients that vanish at the start, "
                    f"epsilon = {eps:.4g} at delta = {self.delta:g})" if eps is not None
                    else ")")
        return out + (" (opacus #571, #819). Fix: sample at a public rate "
                      "(pass DPDataLoader(dataset, sample_rate=q) to make_private) and divide "
                      f"by a public constant (optimizer.expected_batch_size = {h.batch_size} "
                      "after make_private, or loss_reduction=\"sum\" with your own public "
                      "normalisation).")


def normalisation_finding(n: int, batch_size: int, *, weights: int | None = None,
                          delta: float = 1e-5) -> NormalisationFinding:
    """:class:`NormalisationFinding` of ``make_private`` at N = ``n``, DataLoader batch size
    ``batch_size`` (``weights``: the number of released weights, for the epsilon)."""
    here = opacus_arithmetic(n, batch_size)
    if weights is not None:
        check_count("weights", weights, minimum=1)
    return NormalisationFinding(
        here, tuple(opacus_arithmetic(m, batch_size) for m in (n - 1, n + 1) if m >= 1),
        weights, check_delta(delta))


@dataclass(frozen=True)
class SizeNeighbours:
    """D0 = the first ``n`` records, D1 = the first n + 1 (add/remove adjacency) of a fixed
    random regression data set (``features`` inputs, ``outputs`` targets)."""

    n: int
    features: int = 4
    outputs: int = 1000
    seed: int = 0

    def __call__(self, rng: np.random.Generator) -> tuple[tuple[np.ndarray, np.ndarray],
                                                          tuple[np.ndarray, np.ndarray]]:
        g = np.random.default_rng(self.seed)
        x = g.normal(size=(self.n + 1, self.features)).astype(np.float32)
        y = g.normal(size=(self.n + 1, self.outputs)).astype(np.float32)
        return (x[:-1], y[:-1]), (x, y)


@dataclass(frozen=True)
class OpacusRun:
    """Unmodified Opacus: ``PrivacyEngine().make_private`` on DataLoader(data, batch_size),
    SGD (lr 1) for ``steps`` steps of MSE regression with a bias-free linear model started at
    0, in a normal training loop (zero_grad, forward, backward, step on every batch -- an
    empty Poisson batch gives a nan loss and Opacus releases noise / divisor); releases the
    final weights (flat).  All randomness (Poisson sampling, noise) comes from the trial's
    generator.

    ``public_sample_rate`` = q applies the fix: the DataLoader handed to ``make_private`` is
    ``DPDataLoader(data, sample_rate=q)`` (Opacus then samples at 1 / int(1 / q), public) and
    ``optimizer.expected_batch_size`` is set to ``batch_size`` (a public divisor)."""

    batch_size: int
    noise_multiplier: float
    steps: int = 1
    max_grad_norm: float = 1.0
    public_sample_rate: float | None = None

    def __call__(self, data: tuple[np.ndarray, np.ndarray], rng: np.random.Generator
                 ) -> np.ndarray:
        import logging
        import warnings

        import torch
        from opacus import PrivacyEngine
        from opacus.data_loader import DPDataLoader
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.set_num_threads(1)
        logging.getLogger("opacus").setLevel(logging.ERROR)  # "First batch is empty" notes
        x, y = (torch.from_numpy(a) for a in data)
        seed = int(rng.integers(0, 2 ** 62))
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(seed)  # the Poisson sampler draws from torch's global RNG
            model = nn.Linear(x.shape[1], y.shape[1], bias=False)
            nn.init.zeros_(model.weight)
            data_set = TensorDataset(x, y)
            loader = (DataLoader(data_set, batch_size=self.batch_size)
                      if self.public_sample_rate is None
                      else DPDataLoader(data_set, sample_rate=self.public_sample_rate))
            model, opt, loader = PrivacyEngine().make_private(
                module=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
                data_loader=loader, noise_multiplier=self.noise_multiplier,
                max_grad_norm=self.max_grad_norm,
                noise_generator=torch.Generator().manual_seed(seed + 1))
            if self.public_sample_rate is not None:
                opt.expected_batch_size = self.batch_size      # the public divisor
            done = 0
            while done < self.steps:
                for xb, yb in loader:
                    opt.zero_grad()
                    nn.functional.mse_loss(model(xb), yb).backward()
                    opt.step()
                    done += 1
                    if done >= self.steps:
                        break
            return model._module.weight.detach().double().numpy().ravel()


@dataclass(frozen=True)
class UpdateNorm:
    """Score: minus the norm of the released weights (a smaller divisor -- the smaller data
    set -- gives a larger update; higher = "D1", the larger data set)."""

    def __call__(self, output: np.ndarray) -> float:
        return -float(np.linalg.norm(output))


def normalisation_audit(n: int, batch_size: int, noise_multiplier: float, *,
                        outputs: int = 1000, features: int = 4, steps: int = 1,
                        max_grad_norm: float = 1.0, fixed: bool = False) -> object:
    """The :class:`dpaudit.BlackBoxAudit` of Opacus's normalisation at these settings
    (``fixed``: with the public rate 1 / ceil(n / batch_size) and the public divisor
    ``batch_size``, the same for both data sets)."""
    from dpaudit.games.blackbox import BlackBoxAudit

    check_positive("noise_multiplier", noise_multiplier)
    rate = opacus_arithmetic(n, batch_size).sample_rate if fixed else None
    return BlackBoxAudit(OpacusRun(batch_size, noise_multiplier, steps, max_grad_norm, rate),
                         SizeNeighbours(n, features, outputs), UpdateNorm())
