"""Canary scores of one DP-SGD run, each implemented once (higher = "bit 1").

Units.  A canary's *reading* of a released vector u is its inner product with the canary's
unit read direction, sum_j w_ij u[c_ij] (:meth:`~dpaudit.canaries.plan.CanaryPlan.read`).
The white-box observation of step t is the reading of the released noisy clipped gradient
*sum* divided by the clip norm C,

    y_{t,i} = <g~_t, w_i> / C = b_i s_{t,i} a_i + sigma Z_{t,i}  (+ real-data background),

with s_{t,i} ~ Bernoulli(q) the canary's participation, a_i its amplitude (the reading of its
clipped gradient in units of C; 1 for a Dirac canary) and Z standard normal ("Privacy Audit
as Bits Transmission" §6.4; "Tight Auditing of Differentially Private Machine Learning",
Nasr et al. 2023, §4).  An integration that releases the *mean* (Opacus with
``loss_reduction="mean"`` divides by the expected batch size B) must multiply back by B
before dividing by C.

* :func:`lr_step_scores` -- the optimal per-step log-likelihood ratio of the mixture
  (1 - q) N(0, sigma^2) + q N(a, sigma^2) against N(0, sigma^2):
  log(1 - q + q exp((a y - a^2 / 2) / sigma^2)), in log space;
* :class:`WhiteBoxAccumulator` -- per-step readings -> the white-box scores ``"lr"`` (sum of
  the per-step LR) or ``"sum"`` (a sum_t y_t - q T a^2 / 2, the Gaussian shift statistic);
  it keeps only these sufficient statistics, never the T x n transcript;
* :func:`last_iterate_scores` -- the reading of theta_0 - theta_T (only the final model is
  released);
* :func:`black_box_scores` -- canary loss before minus after training (only losses released).

Any score gives a valid one-run audit (the bits are random and the score is a function of
the released output); the scores differ only in power.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpaudit.validation import check_choice, check_probability

__all__ = ["WHITE_BOX_KINDS", "lr_step_scores", "log_bernoulli_mgf", "WhiteBoxAccumulator",
           "last_iterate_scores", "black_box_scores", "SIGMA_FLOOR", "running_sums",
           "sum_log_bernoulli_mgf"]

WHITE_BOX_KINDS = ("lr", "sum")
#: the smallest noise multiplier the likelihood-ratio score divides by (a step reported with
#: sigma = 0 is scored as if sigma were this; the claim checks report it)
SIGMA_FLOOR = 1e-3


#: the largest |u| at which :func:`log_bernoulli_mgf` uses expm1 and
#: :func:`sum_log_bernoulli_mgf` exp (e^u stays below 1e131, so neither it nor a doubling's
#: square can overflow); beyond it, or for non-finite u, the log-space form
_DIRECT_MAX = 300.0


def log_bernoulli_mgf(u: np.ndarray, q: float) -> np.ndarray:
    """log(1 - q + q e^u) elementwise (the log moment generating function of Bernoulli(q)
    at u), for any u: log1p(q expm1(u)) where every |u| is at most :data:`_DIRECT_MAX`
    (accurate near u = 0, where the log-space form below loses digits to cancellation; two
    vectorised calls), else in log space -- with c = log(1 - q) and d = u + log q - c, it is
    c + max(d, 0) + log1p(exp(-|d|)) (``np.logaddexp(c, log q + u)`` written with NumPy's
    vectorised exp and log1p; the same value to rounding).  The step hooks evaluate it for
    every canary at every step."""
    u = np.asarray(u, dtype=float)
    if q >= 1:
        return u + math.log(q)
    big = max(float(u.max()), -float(u.min())) if u.size else 0.0
    if big <= _DIRECT_MAX:                      # also False for NaN
        return np.log1p(q * np.expm1(u))
    c = math.log1p(-q)
    d = u + (math.log(q) - c)
    return c + np.maximum(d, 0.0) + np.log1p(np.exp(-np.abs(d)))


#: at most this many doublings (squares) follow one exp in :func:`sum_log_bernoulli_mgf`
#: (the relative error at most doubles per square: 4 times exp's, about 1e-15, at the end
#: of a run)
_DOUBLINGS = 2


def sum_log_bernoulli_mgf(x: np.ndarray, lambdas: np.ndarray, q: float, *,
                          centred: bool = False) -> np.ndarray:
    """(G, *x.shape[:-1]): for each lambda_g, the sum over x's last axis of
    log(1 - q + q e^u) at u = lambda_g x (minus q u when ``centred``: the cumulant generating
    function of c - q, c ~ Bernoulli(q)) -- :func:`log_bernoulli_mgf` summed, for a grid of
    lambdas at once.

    A sum, so what matters is its absolute error, not each small term's relative one: each
    term is log(z) with z = (1 - q) + q e^u formed in float64 (NumPy's vectorised exp and
    log, several times faster than expm1 and log1p), whose absolute error is a few units in
    the last place of max(1, |u|) -- about 4e-16 (1 + |u|), against the contribution check's
    thresholds of order 10 (:mod:`dpaudit.canaries.contribution`); the centring q u is taken
    off the sum once per lambda (q lambda_g sum x), not term by term.  One lambda at a time
    on buffers of x's size (they stay in cache), along a grid that doubles (lambda_{g+1} =
    2 lambda_g, as the contribution check's powers of 2) with e^{2v} = (e^v)^2: a
    multiplication instead of an exponential, at most :data:`_DOUBLINGS` times in a row
    before exp is evaluated afresh.  Where some |u| exceeds :data:`_DIRECT_MAX` or x is not
    finite, the elementwise log-space form, which holds for any u."""
    x = np.asarray(x, dtype=float)
    lam = np.asarray(lambdas, dtype=float).reshape(-1)
    big = float(np.abs(lam).max()) * float(np.abs(x).max()) if x.size and lam.size else 0.0
    if q >= 1 or not np.isfinite(big) or big > _DIRECT_MAX:
        u = lam.reshape(-1, *([1] * x.ndim)) * x
        v = log_bernoulli_mgf(u, q)
        return (v - q * u if centred else v).sum(axis=-1)
    out = np.empty((lam.size, *x.shape[:-1]))
    xs = x.sum(axis=-1) if centred else None
    e, t = np.empty_like(x), np.empty_like(x)
    prev, run = math.nan, 0
    for g in np.lexsort((np.abs(lam), np.sign(lam))).tolist():   # by sign, |lambda| rising
        lg = float(lam[g])
        if lg == 2 * prev and run < _DOUBLINGS:
            np.multiply(e, e, out=e)                # e^{2v} = (e^v)^2
            run += 1
        else:
            np.multiply(x, lg, out=e)
            np.exp(e, out=e)
            run = 0
        prev = lg
        np.multiply(e, q, out=t)
        t += 1.0 - q
        np.log(t, out=t)
        out[g] = t.sum(axis=-1)
        if xs is not None:
            out[g] -= (q * lg) * xs
    return out


#: rows of at least this many values are accumulated one vectorised add per row (NumPy's
#: cumulative sum along the first axis runs at several ns a value on wide rows)
_ROW_ADD_MIN = 64


def running_sums(start: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(B + 1, ...): start, start + rows[0], start + rows[0] + rows[1], ..., added in that
    order (a cumulative sum: the floats of one ``+=`` per row).  Wide rows (a block's
    readings of many canaries) are added row by row into one buffer, about 10 times faster
    than ``np.cumsum(axis=0)`` there and the same floats (the same additions in the same
    order); narrow ones in one ``np.cumsum`` call."""
    rows = np.asarray(rows)
    stack = np.concatenate([np.asarray(start)[None], rows])
    if stack.ndim < 2 or stack[0].size < _ROW_ADD_MIN:
        return np.cumsum(stack, axis=0)
    for i in range(1, stack.shape[0]):      # steps of a block, each a vectorised add
        np.add(stack[i - 1], stack[i], out=stack[i])
    return stack


def lr_step_scores(y: np.ndarray, sampling_rate: float, noise_multiplier: float | np.ndarray,
                   amplitude: np.ndarray | float = 1.0) -> np.ndarray:
    """log(1 - q + q exp((a y - a^2/2) / sigma^2)) elementwise, in log space
    (:func:`log_bernoulli_mgf`)."""
    a = np.asarray(amplitude, dtype=float)
    return log_bernoulli_mgf((a * np.asarray(y) - a * a / 2) / noise_multiplier ** 2,
                             sampling_rate)


class WhiteBoxAccumulator:
    """Running white-box statistics of n canaries: ``add(y, sigma)`` once per released step.

    Args:
      n: number of canaries.
      sampling_rate: q.
      amplitude: (n,) or scalar expected reading of a sampled canary (units of C).
    """

    def __init__(self, n: int, *, sampling_rate: float,
                 amplitude: np.ndarray | float = 1.0) -> None:
        self.n = int(n)
        self.q = check_probability("sampling_rate", sampling_rate, open_low=True)
        self.amplitude = np.broadcast_to(np.asarray(amplitude, dtype=float), (self.n,)).copy()
        self.steps = 0
        self.sum = np.zeros(self.n)
        self.lr_sum = np.zeros(self.n)

    def add(self, y: np.ndarray, noise_multiplier: float) -> None:
        """Record one step's readings y (n,), in units of C of the noisy clipped sum.

        ``noise_multiplier`` is the sigma the optimizer reports for the step.  A step that
        ran with sigma below :data:`SIGMA_FLOOR` (0, or NaN) is scored with sigma =
        ``SIGMA_FLOOR``: any fixed function of the releases is a valid score, the training
        goes on, and the claim checks report the step (:mod:`dpaudit.canaries.claims`)."""
        y = np.asarray(y, dtype=float)
        if y.shape != (self.n,):
            raise ValueError(f"y must have one reading per canary ({self.n}); got {y.shape}")
        self.add_steps(y[None], (noise_multiplier,))

    def add_steps(self, y: np.ndarray, noise_multipliers: np.ndarray | Sequence[float]) -> None:
        """Record B successive steps at once: ``y`` (B, n), ``noise_multipliers`` (B,) --
        the sums of B calls of :meth:`add` (the per-step scores in one vectorised call, added
        in step order: the same floats)."""
        y = np.asarray(y, dtype=float)
        if y.ndim != 2 or y.shape[1] != self.n:
            raise ValueError(f"y must have one row of n = {self.n} readings per step; got "
                             f"{y.shape}")
        s = np.asarray(noise_multipliers, dtype=float).reshape(-1)
        if s.shape != (y.shape[0],):
            raise ValueError(f"noise_multipliers must have one value per step "
                             f"({y.shape[0]}); got {s.shape}")
        s = np.where(s >= SIGMA_FLOOR, s, SIGMA_FLOOR)  # also NaN: scored, never refused
        self.sum = running_sums(self.sum, y)[-1]
        self.lr_sum = running_sums(self.lr_sum, lr_step_scores(y, self.q, s[:, None],
                                                               self.amplitude))[-1]
        self.steps += y.shape[0]

    def scores(self, kind: str = "lr") -> np.ndarray:
        """``"lr"``: sum_t LR_t; ``"sum"``: a sum_t y_t - q T a^2 / 2."""
        check_choice("score", kind, WHITE_BOX_KINDS)
        if self.steps == 0:
            raise ValueError("no optimizer step was recorded (attach before training)")
        if kind == "lr":
            return self.lr_sum.copy()
        a = self.amplitude
        return a * self.sum - self.q * self.steps * a * a / 2


def last_iterate_scores(before: np.ndarray, after: np.ndarray,
                        weights: np.ndarray | None = None) -> np.ndarray:
    """Reading of theta_0 - theta_T: ``before``/``after`` are the parameters at the canaries'
    read coordinates, (n,) or (n, k) with unit ``weights`` rows (n, k)."""
    d = np.asarray(before, dtype=float) - np.asarray(after, dtype=float)
    if d.ndim == 1:
        return d
    w = np.ones_like(d) if weights is None else np.asarray(weights, dtype=float)
    return np.einsum("ij,ij->i", d, w)


def black_box_scores(loss_before: np.ndarray, loss_after: np.ndarray) -> np.ndarray:
    """Per-canary loss under the initial model minus under the final model (the model learnt
    the canary = more likely a member)."""
    return np.asarray(loss_before, dtype=float) - np.asarray(loss_after, dtype=float)
