"""Claim checks: compare a DP-SGD privacy claim with what the run actually did.

Deterministic before statistical: a claim for the wrong number of steps, noise multiplier,
clip norm or sampling rate is a *configuration error*, visible without any statistics, and is
reported first, in words.  The statistical audit still runs and is reported beside it.

Facts come from the run itself (an integration records them at every optimizer step): the
steps taken, the noise multiplier(s) and clip norm(s) the optimizer used, the observed
batch sizes, the normalisation divisor and, when known, the data set size.

Batch sizes.  Under Poisson sampling at rate q over N records (the sampling the DP-SGD
accounting of Abadi et al. 2016 and Mironov, Talwar, Zhang 2019 assumes) a batch size is
Binomial(N, q).  Two checks, each with a false-alarm probability below 1e-6 on correct
runs:

* the mean of T batch sizes must lie within z = 5 standard errors sqrt(N q (1 - q) / T)
  (+ 1/2 for rounding) of N q -- otherwise the implied rate mean / N is reported;
* they must not be (nearly) all equal: two tests, Bonferroni-combined at 1e-6 -- the variance
  ((T - 1) s^2 / (N q (1 - q)) is approximately chi^2_{T-1}; lower tail), and the count k of
  the most frequent size (under Binomial(N, q) sizes, P(some size occurs >= k times among T)
  <= C(T, k) p_max^(k - 1) with p_max the largest Binomial(N, q) probability, a union bound
  that is exact in form, unlike the chi-square approximation, and is not fooled by each
  epoch's short last batch).  Failing it means fixed-size batches (shuffling), which the
  Poisson accounting does not cover (opacus issue #80; Chua et al. 2024, "How Private are
  DP-SGD Implementations?").

Normalisation.  Opacus divides the noisy sum by ``expected_batch_size`` = int(N q), computed
from the (private) data set size; the accountant assumes the plain subsampled Gaussian.  When
int(N q) differs from int((N +- 1) q) the released scale differs between neighbouring data
sets (opacus issues #571 and #819): reported as a configuration finding when N is known.
(``make_private``'s sampling rate 1 / ceil(N / b) also depends on N; the exact arithmetic per
DataLoader batch size b is ``dpaudit.training.opacus_normalisation.normalisation_finding``.)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from dpaudit.canaries.contribution import ContributionRecord, check_contribution
from dpaudit.canaries.noise import check_released_noise, format_steps

__all__ = ["Claim", "RunFacts", "ClaimCheck", "check_claim", "BATCH_Z", "VARIANCE_ALPHA"]

BATCH_Z = 5.0
VARIANCE_ALPHA = 1e-6


@dataclass(frozen=True)
class Claim:
    """A DP-SGD privacy claim: T steps of the subsampled Gaussian at (sigma, q), clip C."""

    noise_multiplier: float
    sampling_rate: float
    steps: int
    max_grad_norm: float | None = None


@dataclass(frozen=True, eq=False)
class RunFacts:
    """What the run did (recorded by an integration at each step).

    Attributes:
      steps: optimizer steps taken.
      noise_multipliers: every distinct noise multiplier the optimizer used.
      max_grad_norms: every distinct clip norm the optimizer used.
      batch_sizes: (T,) number of examples in each step's batch (real + canary examples).
      expected_batch_size: the divisor of the noisy sum (None if the sum is released).
      dataset_size: N, the number of records sampled from (None if unknown).
      loss_reduction: "mean" or "sum".
      step_noise_multipliers: (T,) the optimizer's noise multiplier at each step (empty if
        not recorded): names the steps that ran with another sigma, or none.
      noise_sum_squares: (T,) per step, the sum of squares of the released values at the
        canaries' ``noise_coordinates`` distinct read coordinates, in units of
        ``noise_unit`` (the canaries' clip norm) -- the released-noise check
        (:mod:`dpaudit.canaries.noise`); empty if not recorded.
      noise_coordinates: k, the read coordinates behind ``noise_sum_squares``.
      noise_unit: the clip norm the readings are divided by.
      contribution: the planted canaries' contribution statistics, one record per reading
        (:mod:`dpaudit.canaries.contribution`: per-example clipping checked); empty if the
        integration did not say which canaries it planted at each step.
    """

    steps: int
    noise_multipliers: tuple[float, ...] = ()
    max_grad_norms: tuple[float, ...] = ()
    batch_sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    expected_batch_size: float | None = None
    dataset_size: int | None = None
    loss_reduction: str = "mean"
    step_noise_multipliers: np.ndarray = field(default_factory=lambda: np.zeros(0))
    noise_sum_squares: np.ndarray = field(default_factory=lambda: np.zeros(0))
    noise_coordinates: int = 0
    noise_unit: float | None = None
    contribution: tuple[ContributionRecord, ...] = ()

    def to_dict(self) -> dict[str, object]:
        b = np.asarray(self.batch_sizes)
        return {"steps": self.steps, "noise_multipliers": list(self.noise_multipliers),
                "max_grad_norms": list(self.max_grad_norms),
                "batch_size_mean": float(b.mean()) if b.size else None,
                "batch_size_var": float(b.var(ddof=1)) if b.size > 1 else None,
                "batch_size_min": int(b.min()) if b.size else None,
                "batch_size_max": int(b.max()) if b.size else None,
                "expected_batch_size": self.expected_batch_size,
                "dataset_size": self.dataset_size, "loss_reduction": self.loss_reduction,
                "noise_coordinates": self.noise_coordinates,
                "contribution": [r.to_dict() for r in self.contribution]}


@dataclass(frozen=True)
class ClaimCheck:
    """One comparison of the claim with the run: ``ok`` False = a configuration error."""

    name: str
    ok: bool
    claimed: object
    observed: object
    message: str
    #: a failed check that shows the run gave *less* privacy than the claim (fewer noise,
    #: more steps, a larger clip norm): the claim is refuted, a violation -- as opposed to a
    #: finding the claim's accounting does not cover (fixed-size batches, normalisation)
    weaker: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "ok", bool(self.ok))  # a NumPy bool is not JSON

    def to_dict(self) -> dict[str, object]:
        from dpaudit.results import json_safe

        return json_safe(asdict(self))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def check_claim(claim: Claim, facts: RunFacts) -> list[ClaimCheck]:
    """Every deterministic check of ``claim`` against ``facts`` (see module docstring);
    failed checks first."""
    out: list[ClaimCheck] = []
    ok = claim.steps == facts.steps
    out.append(ClaimCheck(
        "steps", ok, claim.steps, facts.steps,
        f"steps: the claim is for {claim.steps} steps"
        + ("" if ok else f" but the run took {facts.steps}"),
        weaker=facts.steps > claim.steps))
    if facts.noise_multipliers or np.size(facts.step_noise_multipliers):
        out.append(_sigma_check(claim, facts))
    if claim.max_grad_norm is not None and facts.max_grad_norms:
        used = facts.max_grad_norms
        ok = all(_close(c, claim.max_grad_norm) for c in used)
        out.append(ClaimCheck(
            "max_grad_norm", ok, claim.max_grad_norm, list(used),
            f"clip norm: the claim assumes C = {claim.max_grad_norm:g}"
            + ("" if ok else " but the optimizer clipped to "
               + ", ".join(f"{c:g}" for c in used)),
            weaker=any(c > claim.max_grad_norm and not _close(c, claim.max_grad_norm)
                       for c in used)))
    out.extend(_batch_checks(claim, facts))
    # deterministic checks first (failed ones first), then the statistical one
    out = sorted(out, key=lambda c: c.ok)
    if np.size(facts.noise_sum_squares) and facts.noise_coordinates > 0:
        out.append(_noise_check(claim, facts))
    if facts.contribution and facts.contribution[0].planted > 0:
        out.append(_contribution_check(facts.contribution))
    return sorted(out, key=lambda c: c.ok)


def _contribution_check(records: tuple[ContributionRecord, ...]) -> ClaimCheck:
    """The planted canaries' contributions against per-example clipping
    (:mod:`.contribution`): below = not the claimed mechanism (a configuration error that
    does not by itself say the run gave less privacy), above = the clip norm's sensitivity
    exceeded (weaker)."""
    reading = check_contribution(records)
    return ClaimCheck("clipped_contribution", reading.ok, 1.0, reading.estimate,
                      reading.message(), weaker=reading.above)


def _sigma_check(claim: Claim, facts: RunFacts) -> ClaimCheck:
    """The optimizer's noise multiplier against the claim's, naming the steps that differ
    (a step with sigma = 0 "ran without noise")."""
    per_step = np.asarray(facts.step_noise_multipliers, dtype=float)
    used = (list(dict.fromkeys(per_step.tolist())) if per_step.size
            else list(facts.noise_multipliers))
    want = claim.noise_multiplier
    ok = all(_close(s, want) for s in used)
    msg = f"noise multiplier: the claim assumes sigma = {want:g}"
    weaker = any(not (s >= want) and not _close(s, want) for s in used)  # NaN: weaker
    if not ok:
        msg += " but the optimizer used " + ", ".join(f"{s:g}" for s in used)
        if per_step.size:
            none = tuple(int(k) for k in np.flatnonzero(~(per_step > 0)) + 1)
            low = tuple(int(k) for k in np.flatnonzero(
                (per_step > 0) & (per_step < want) & ~np.isclose(per_step, want,
                                                                 rtol=1e-6, atol=1e-12)) + 1)
            every = len(none) + len(low) == per_step.size   # no step list: all of them
            if none:
                msg += ("; every step" if every and not low else f"; {format_steps(none)}"
                        ) + " ran without noise (sigma = 0)"
            if low and not (every and not none):
                msg += f"; {format_steps(low)} ran with less noise than the claim"
    return ClaimCheck("noise_multiplier", ok, want, used, msg, weaker=weaker)


def _noise_check(claim: Claim, facts: RunFacts) -> ClaimCheck:
    """The released noise read on the canaries' coordinates (:mod:`.noise`), in units of
    the claim's clip norm."""
    ss = np.asarray(facts.noise_sum_squares, dtype=float)
    if claim.max_grad_norm is not None and facts.noise_unit is not None:
        ss = ss * (facts.noise_unit / claim.max_grad_norm) ** 2
    ss = np.where(np.isfinite(ss), ss, np.inf)  # a non-finite release is not "too little"
    reading = check_released_noise(np.minimum(ss, np.finfo(float).max),
                                   facts.noise_coordinates, claim.noise_multiplier)
    return ClaimCheck("released_noise", reading.ok, claim.noise_multiplier,
                      float(np.median(reading.sigma_estimates)),
                      reading.message(claim.noise_multiplier), weaker=not reading.ok)


def _batch_checks(claim: Claim, facts: RunFacts) -> list[ClaimCheck]:
    b = np.asarray(facts.batch_sizes, dtype=float)
    q = claim.sampling_rate
    out: list[ClaimCheck] = []
    n = facts.dataset_size
    if n is None and facts.expected_batch_size is not None:
        n_eff: float | None = facts.expected_batch_size / q  # what the optimizer's divisor implies
    else:
        n_eff = n
    if b.size >= 2 and n_eff is not None and q < 1:
        mean, var = n_eff * q, n_eff * q * (1 - q)
        if n is not None:
            se = math.sqrt(var / b.size)
            ok = abs(b.mean() - mean) <= BATCH_Z * se + 0.5
            out.append(ClaimCheck(
                "sampling_rate", ok, q, float(b.mean() / n),
                f"sampling rate: the claim assumes q = {q:g}; the observed batch sizes "
                f"(mean {b.mean():.2f} of N = {n}) imply {b.mean() / n:.4g}"
                + ("" if ok else f" (more than {BATCH_Z:g} standard errors from N q = "
                   f"{mean:.2f})")))
        if var >= 1.0 and b.size >= 10:
            stat = (b.size - 1) * b.var(ddof=1) / var
            p_var = float(stats.chi2.cdf(stat, b.size - 1))
            k = int(np.unique(b, return_counts=True)[1].max())
            n_int = int(round(n_eff))
            p_max = float(stats.binom.pmf(math.floor((n_int + 1) * q), n_int, q))
            log_p = (math.lgamma(b.size + 1) - math.lgamma(k + 1) - math.lgamma(b.size - k + 1)
                     + (k - 1) * math.log(p_max))
            p_mode = math.exp(min(0.0, log_p))
            ok = min(p_var, p_mode) >= VARIANCE_ALPHA / 2
            out.append(ClaimCheck(
                "poisson_batches", ok, f"Poisson: variance {var:.2f}",
                float(b.var(ddof=1)),
                "batch sizes: Poisson sampling gives Binomial(N, q) batch sizes (variance "
                f"{var:.2f}); observed variance {b.var(ddof=1):.3g}"
                + ("" if ok else " -- fixed-size batches (shuffling), which the Poisson "
                   "accounting of the claim does not cover (opacus #80)")))
    if (n is not None and facts.expected_batch_size is not None
            and facts.loss_reduction == "mean" and q < 1):
        here = math.floor(n * q)
        neighbours = {math.floor((n - 1) * q), math.floor((n + 1) * q)}
        ok = neighbours == {here}
        moved = max((abs(v - here) / max(v, here, 1) for v in neighbours), default=0.0)
        out.append(ClaimCheck(
            "normalisation", ok, "a public divisor", facts.expected_batch_size,
            f"normalisation: the noisy sum is divided by int(N q) = {here} computed from "
            f"the private data set size N = {n}" + ("" if ok else
                f"; a neighbouring data set (N +- 1) gives {sorted(neighbours - {here})}, so "
                f"the released scale depends on one record (a {100 * moved:.1f}% change; "
                "opacus #571, #819). Fix: divide by a public constant "
                "(optimizer.expected_batch_size = your batch size after make_private, or "
                "loss_reduction=\"sum\" with your own public normalisation) and sample at a "
                "public rate (DPDataLoader(dataset, sample_rate=q)); "
                "dpaudit.training.opacus_normalisation.normalisation_finding(N, batch_size) "
                "lists which N and batch sizes leak")))
    return out
