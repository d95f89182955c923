"""dp_accounting's subsampled-Gaussian privacy-loss distribution and its self-composition,
computed without their per-point and per-order Python loops (the same PMFs).

``from_gaussian_mechanism`` (dp_accounting PLD; Doroshenko, Ghazi, Kamath, Kumar, Manurangsi,
"Connect the Dots", 2022) discretises the privacy loss pessimistically: it evaluates the
mechanism's hockey-stick divergence

    delta(eps) = mu_upper_cdf(x(eps)) - e^eps * mu_lower_cdf(x(eps)),
    x(eps) = the largest x whose privacy loss is >= eps (the inverse privacy loss),

at every multiple of the discretisation interval between the loss's truncation bounds and
turns the deltas into a PMF (``create_pmf_pessimistic_connect_dots_fixed_gap``).  Its
``GaussianPrivacyLoss.get_delta_for_epsilon`` computes x(eps) in a Python list comprehension,
one scalar call per grid point (tens of thousands of points, most of the cost of
``dpsgd_curve``).  :class:`VectorisedGaussianPrivacyLoss` is the same mechanism with the same
formula evaluated on the whole grid at once:

* REMOVE: x(eps) = -1/2 - sigma^2 log(1 + (e^eps - 1) / q) (sensitivity 1), for
  eps > log(1 - q);
* ADD: x(eps) = 1 - 1/2 + sigma^2 log(1 + (e^-eps - 1) / q), for eps < -log(1 - q);

with dp_accounting's own log-space expression (``log_a_times_exp_b_plus_c``: log(a e^b + c)
= d + log1p(-e^{log(-c) - d}), d = b + log a, for a > 0 > c) and its own special points (the
grid points within ``math.isclose`` of the boundary go through its scalar code).  Everything
else -- truncation, tails, the connect-the-dots PMF, composition -- is dp_accounting's.  The
vectorised logarithms may round differently from the scalar ones in the last bit: the PMF
agrees with dp_accounting's to ~1e-16 per point (tested), far below the discretisation's
own pessimism (the interval, 1e-4 or coarser, in the privacy loss).

:func:`self_compose` is ``PrivacyLossDistribution.self_compose``: each PMF raised to the
T-th power by one FFT and truncated to Chernoff bounds (``compute_self_convolve_bounds``:
log-MGFs at the orders +-1..20 / n, one ``scipy.special.logsumexp`` call each in
dp_accounting).  Here the log-MGFs of several orders come from one array pass; an order whose
bound lies near an integer is recomputed with SciPy's call, so the integer bounds -- and the
composed PMF -- are dp_accounting's (tested bit for bit).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["gaussian_pld", "self_compose"]

#: tail mass dp_accounting's ``self_compose`` may truncate (its default)
TAIL_MASS_TRUNCATION = 1e-15
#: Chernoff orders evaluated together (memory: this many rows of the PMF's length)
_ORDER_CHUNK = 8
#: a truncation bound this close to an integer is recomputed with SciPy's ``logsumexp``, as
#: dp_accounting does (the two log-MGFs agree to ~1e-15 relative, which moves a bound by at
#: most ~1e-3 at 300,000 points and T = 10^4: the rounding never differs away from integers)
_BOUND_MARGIN = 0.05


def _mechanism_class() -> Any:
    """The vectorised subclass (built lazily: dp_accounting takes seconds to import)."""
    from dp_accounting.pld import privacy_loss_mechanism as plm

    class VectorisedGaussianPrivacyLoss(plm.GaussianPrivacyLoss):
        """``GaussianPrivacyLoss`` whose ``get_delta_for_epsilon`` inverts the privacy loss
        on the whole epsilon grid at once (module docstring); add/remove adjacency only."""

        def _inverse_vec(self, eps: np.ndarray) -> np.ndarray:
            q = self.sampling_prob
            add = self.adjacency_type == plm.AdjacencyType.ADD
            if q == 1.0:
                inner = eps
            else:
                # dp_accounting: log_a_times_exp_b_plus_c(1/q, b, 1 - 1/q), b = -eps (ADD)
                # or eps (REMOVE); b == 0 is its exact special case log(a + c)
                a, c = 1 / q, 1 - 1 / q
                b = -eps if add else eps
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    d = b + np.log(a)
                    val = d + np.log1p(-np.exp(np.log(-c) - d))
                val = np.where(b == 0, np.log(a + c), val)
                inner = -val if add else val
            out = (self._inverse_privacy_loss_without_subsampling_add(inner) if add
                   else self._inverse_privacy_loss_without_subsampling_remove(inner))
            if q != 1.0:
                edge = (-math.log(1 - q)) if add else math.log(1 - q)
                near = np.flatnonzero(np.abs(eps - edge) <= 1e-8 * (abs(edge) + np.abs(eps)))
                for i in near:  # dp_accounting's scalar path at the boundary (math.isclose)
                    if math.isclose(float(eps[i]), edge):
                        out[i] = self.inverse_privacy_loss(float(eps[i]))
            return np.asarray(out, dtype=float)

        def get_delta_for_epsilon(self, epsilon: Any) -> Any:
            if self.adjacency_type not in (plm.AdjacencyType.ADD, plm.AdjacencyType.REMOVE):
                return super().get_delta_for_epsilon(epsilon)
            scalar = isinstance(epsilon, (int, float))
            epsilons = np.array([epsilon]) if scalar else np.asarray(epsilon)
            deltas = np.zeros_like(epsilons, dtype=float)
            if self.sampling_prob == 1.0:
                inv = np.full_like(epsilons, True, dtype=bool)
            elif self.adjacency_type == plm.AdjacencyType.ADD:
                inv = epsilons < -math.log1p(-self.sampling_prob)
            else:
                inv = epsilons > math.log1p(-self.sampling_prob)
                deltas[~inv] = -np.expm1(epsilons[~inv])
            x = self._inverse_vec(np.asarray(epsilons[inv], dtype=float))
            deltas[inv] = (self.mu_upper_cdf(x)
                           - np.exp(epsilons[inv] + self.mu_lower_log_cdf(x)))
            deltas = np.clip(deltas, 0, 1)
            return float(deltas[0]) if scalar else deltas

    return VectorisedGaussianPrivacyLoss


_CLASS: Any = None


def gaussian_pld(sigma: float, q: float, vdi: float) -> Any:
    """dp_accounting's ``from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q,
    value_discretization_interval=vdi)`` (sensitivity 1, pessimistic, connect the dots,
    add/remove adjacency, log mass truncation bound -50), its grid of deltas computed at
    once.  Falls back to dp_accounting's own function if its internal construction is not
    where this version expects it."""
    global _CLASS
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    create = getattr(pld_lib, "_create_pld_pmf_from_monotone_privacy_loss", None)
    if create is None:  # pragma: no cover - another dp_accounting layout
        return pld_lib.from_gaussian_mechanism(
            standard_deviation=sigma, sampling_prob=q, value_discretization_interval=vdi)
    from dp_accounting.pld import privacy_loss_mechanism as plm

    if _CLASS is None:
        _CLASS = _mechanism_class()

    def pmf(adjacency: Any) -> Any:
        mech = _CLASS(sigma, sensitivity=1, pessimistic_estimate=True,
                      log_mass_truncation_bound=-50, sampling_prob=q,
                      adjacency_type=adjacency)
        return create(mech, pessimistic_estimate=True, value_discretization_interval=vdi,
                      use_connect_dots=True)

    remove = pmf(plm.AdjacencyType.REMOVE)
    if q == 1.0:
        return pld_lib.PrivacyLossDistribution(remove)
    return pld_lib.PrivacyLossDistribution(remove, pmf(plm.AdjacencyType.ADD))


def _log_mgfs(probs: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """log sum_i p_i e^{i s} for every order s: the log-MGFs of dp_accounting's
    ``compute_self_convolve_bounds`` (``scipy.special.logsumexp(i s, b=p)`` order by order),
    here a few orders per array pass: max-shifted, the largest term kept apart as SciPy does."""
    n = probs.size
    idx = np.arange(n)
    out = np.empty(orders.size)
    pos = probs > 0
    for a in range(0, orders.size, _ORDER_CHUNK):
        o = orders[a:a + _ORDER_CHUNK]
        x = idx[None, :] * o[:, None]
        x[:, ~pos] = -np.inf
        top = x.max(axis=1, keepdims=True)
        at_top = x == top
        m = np.sum(probs * at_top, axis=1, keepdims=True)
        x[at_top] = -np.inf
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            tot = np.sum(probs * np.exp(x - top), axis=1, keepdims=True)
            tot = np.where(tot == 0, tot, tot / m)
            out[a:a + o.size] = (np.log1p(tot) + np.log(m) + top)[:, 0]
    return out


def _convolve_bounds(probs: np.ndarray, num_times: int, tail: float) -> tuple[int, int]:
    """dp_accounting's ``compute_self_convolve_bounds`` (Chernoff bounds at orders +-1..20 / n
    on the composed PMF's support): the same formula on the log-MGFs of :func:`_log_mgfs`.
    An order whose bound falls within ``_BOUND_MARGIN`` of an integer and could decide the
    result (within two of the tightest bound) is recomputed with SciPy's own
    ``logsumexp``, so the integer bounds are dp_accounting's."""
    from scipy import special

    n = probs.size
    upper, lower = (n - 1) * num_times, 0
    if tail == 0:
        return lower, upper
    orders = np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / n
    mgfs = _log_mgfs(probs, orders)
    log_tail = math.log(2 / tail)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bounds = (num_times * mgfs + log_tail) / orders
    fin = np.isfinite(bounds)
    pos, neg = fin & (orders > 0), fin & (orders < 0)
    tight_up = float(np.ceil(bounds[pos]).min()) if pos.any() else math.inf
    tight_lo = float(np.floor(bounds[neg]).max()) if neg.any() else -math.inf
    near = fin & (np.abs(bounds - np.round(bounds)) < _BOUND_MARGIN)
    decides = (pos & (bounds <= tight_up + 2)) | (neg & (bounds >= tight_lo - 2))
    for i in np.flatnonzero(near & decides):
        mgf = float(special.logsumexp(np.arange(n) * orders[i], b=probs))
        bounds[i] = (num_times * mgf + log_tail) / float(orders[i])
    for order, bound in zip(orders.tolist(), bounds.tolist(), strict=True):
        if not math.isfinite(bound):
            continue
        if order > 0:
            upper = min(upper, math.ceil(bound))
        if order < 0:
            lower = max(lower, math.floor(bound))
    return lower, upper


def _self_compose_pmf(pmf: Any, num_times: int, tail: float) -> Any:
    """``DensePLDPmf.self_compose(num_times, tail)`` of dp_accounting (FFT power of the PMF,
    truncated to the Chernoff bounds, the truncated tail added to the infinity mass), with
    the bounds of :func:`_convolve_bounds`; any other PMF through its own method."""
    from dp_accounting.pld import pld_pmf
    from scipy import fft

    if not isinstance(pmf, pld_pmf.DensePLDPmf) or num_times <= 0:
        return pmf.self_compose(num_times, tail)
    probs = pmf._probs
    lower, upper = _convolve_bounds(probs, num_times, tail)
    out_len = upper - lower + 1
    fast_len = fft.next_fast_len(max(out_len, len(probs)))
    conv = np.real(fft.ifft(fft.fft(probs, fast_len) ** num_times))
    conv = np.array(np.roll(conv, -lower)[:out_len])
    inf_prob = tail - math.expm1(num_times * math.log1p(-pmf._infinity_mass))
    return pld_pmf.DensePLDPmf(pmf._discretization, pmf._lower_loss * num_times + lower,
                               conv, inf_prob, pmf._pessimistic_estimate)


def self_compose(pld: Any, num_times: int, tail: float = TAIL_MASS_TRUNCATION) -> Any:
    """dp_accounting's ``PrivacyLossDistribution.self_compose(num_times)``: both adjacencies'
    PMFs composed by one FFT power each (:func:`_self_compose_pmf`); the same PMFs."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    remove = _self_compose_pmf(pld._pmf_remove, num_times, tail)
    if pld._symmetric:
        return pld_lib.PrivacyLossDistribution(remove)
    return pld_lib.PrivacyLossDistribution(
        remove, _self_compose_pmf(pld._pmf_add, num_times, tail))
