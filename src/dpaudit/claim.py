"""What an audit tests: the claim, its neighbouring relation, and the null family valid for it.

A :class:`Claim` is the head of the spine (Claim -> Source -> Observations -> Estimator ->
Audit -> renderers).  It holds what is promised -- an (epsilon, delta) pair, or a curve
(mu-GDP, a DP-SGD / BandMF accounting event, any :class:`~dpaudit.curves.Curve`, so a
rho-zCDP or Renyi guarantee converted to a trade-off curve plugs in) -- the neighbouring
relation, and the assumptions the user explicitly asked for.  **The null family of the f-DP
estimators is decided here and nowhere else** (:meth:`Claim.null_family`):

* an (epsilon, delta) claim: ``eps_delta`` at delta -- f_{eps,delta} is the trade-off curve of
  (eps, delta)-DP itself (Dong, Roth & Su 2022, Prop. 2.5), so every mechanism meeting the claim
  lies above the member at the claim, whatever its shape (Tight One-Run, Thm. 1 with §6.2);
* a curve claim of a named family (mu-GDP, Laplace, a subsampled Gaussian, DP-SGD at
  (sigma, q, T) from the PLD accountant, :func:`dpaudit.curves.accounting.dpsgd_family`; BandMF
  through its rounds): that family (members above the claim are dominated by it:
  :func:`dpaudit.curves.claim_family`) -- valid, no assumption;
* any other curve: ``eps_delta`` at delta at the curve's epsilon(delta) (the curve implies
  (epsilon(delta), delta)-DP), valid for it;
* an explicit ``family`` other than the claim's own (``--family gdp``): an assumption about the
  mechanism's shape, carried by the rows (``AuditResult.assumption``) and printed by every
  output as "assuming ...".

Named assumptions about the scores (``assume``: "independent_scores", "gaussian_scores",
"asymptotic"; :data:`dpaudit.registry.ASSUMPTIONS`) let rows that are bounds only
under them decide the verdict; they are printed with it.  Nothing is assumed unless asked.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dpaudit.curves.base import Curve
from dpaudit.curves.families import DEFAULT_FAMILY, Family, claim_family, resolve_family
from dpaudit.registry import ASSUMPTIONS, check_assumptions
from dpaudit.validation import check_choice, check_delta, check_nonnegative

__all__ = ["Claim", "RELATIONS", "DPSGDParams", "falsified_by", "FALSIFYING_CHECKS",
           "FALSIFYING_STATISTICAL_CHECKS"]

#: neighbouring relations a claim may be stated under
RELATIONS = ("add_remove", "replace_one", "zero_out")


@dataclass(frozen=True)
class DPSGDParams:
    """A DP-SGD (or amplified BandMF, through its ``steps`` = rounds) accounting claim: the
    noise multiplier, Poisson sampling rate and number of compositions."""

    noise_multiplier: float
    sampling_rate: float
    steps: int


@dataclass(frozen=True)
class Claim:
    """What is promised, and what the user agreed to assume.

    Attributes:
      epsilon: the claimed epsilon at ``delta`` (for a curve claim: the curve's, unless given).
      delta: the delta at which epsilons are stated.
      curve: the claimed trade-off curve, if the claim is a curve (None: an (eps, delta) pair).
      dpsgd: the DP-SGD / BandMF accounting parameters when the claim is that event.
      relation: the neighbouring relation ("add_remove", "replace_one", "zero_out").
      family: an explicit null family (None: the claim's own, :meth:`null_family`).
      assume: the named assumptions asked for (keys of ``registry.ASSUMPTIONS``).
    """

    epsilon: float
    delta: float = 1e-5
    curve: Curve | None = None
    dpsgd: DPSGDParams | None = None
    relation: str = "add_remove"
    family: Any = None
    assume: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        eps = check_nonnegative("claimed_epsilon", self.epsilon)
        if not math.isfinite(eps):
            raise ValueError(f"claimed_epsilon must be a finite number >= 0, got {eps!r}")
        object.__setattr__(self, "epsilon", float(eps))
        object.__setattr__(self, "delta", check_delta(self.delta))
        check_choice("relation", self.relation, RELATIONS)
        if self.curve is not None and not isinstance(self.curve, Curve):
            raise ValueError(f"curve must be a dpaudit Curve; got {self.curve!r}")
        object.__setattr__(self, "assume", check_assumptions(self.assume))
        if self.family is not None:  # validated with the family's own message
            resolve_family(getattr(self.family, "name", self.family)
                           if isinstance(self.family, _CurveFamily) else self.family,
                           self.delta)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def of(cls, claim: Claim | float | None, delta: float = 1e-5, *,
           assume: Iterable[str] | str | None = None, allow_asymptotic: bool = False,
           family: Any = None) -> Claim | None:
        """A Claim from a Claim, a claimed epsilon (an (eps, delta) pair) or None."""
        if claim is None or isinstance(claim, Claim):
            return claim
        extra = {"asymptotic"} if allow_asymptotic else set()
        return cls(float(claim), delta, family=family,
                   assume=check_assumptions(assume) | extra)

    @classmethod
    def from_curve(cls, curve: Curve, delta: float = 1e-5, *, family: Any = None,
                   relation: str = "add_remove", assume: Iterable[str] = (),
                   epsilon: float | None = None) -> Claim:
        """The claim "the mechanism is ``curve``-DP" (``epsilon``: its epsilon at delta,
        default ``curve.epsilon(delta)``); ``family``: the curve's own named family when it
        has one (e.g. "gdp" for GaussianDP: valid, no assumption), else the (eps, delta)
        family at delta."""
        fam = None if family is None else _CurveFamily(family)
        eps = float(curve.epsilon(delta)) if epsilon is None else float(epsilon)
        return cls(eps, delta, curve=curve, relation=relation, family=fam,
                   assume=frozenset(assume))

    @classmethod
    def gdp(cls, mu: float, delta: float = 1e-5) -> Claim:
        """The claim "mu-GDP" (Dong, Roth & Su 2022), with the GDP family as its valid null."""
        from dpaudit.curves.gaussian import GaussianDP

        return cls.from_curve(GaussianDP(mu), delta, family="gdp")

    @classmethod
    def dpsgd_claim(cls, noise_multiplier: float, sampling_rate: float, steps: int,
                    delta: float = 1e-5, *, epsilon: float | None = None,
                    relation: str = "add_remove", family: Any = None) -> Claim:
        """The claim "DP-SGD with (sigma, q, T)" (BandMF: T = its rounds); ``epsilon`` the
        accountant's epsilon at delta (default: ``dpsgd_curve``'s); ``family``: an explicit
        null family (None: the claim's own DP-SGD family; "eps_delta" is valid too, anything
        else an assumption)."""
        if epsilon is None:
            from dpaudit.curves.accounting import dpsgd_curve

            epsilon = float(dpsgd_curve(noise_multiplier, sampling_rate, steps).epsilon(delta))
        if isinstance(family, str) and family == "dpsgd":
            family = None
        return cls(float(epsilon), delta,
                   dpsgd=DPSGDParams(float(noise_multiplier), float(sampling_rate), int(steps)),
                   relation=relation, family=family)

    def member_noise_multiplier(self, epsilon: float) -> float | None:
        """For a DP-SGD claim: the noise multiplier of the DP-SGD curve at the claim's (q, T)
        whose epsilon at delta is ``epsilon`` (the member a row rejects; calibrated with
        dp_accounting at a coarse discretisation, 1e-2: a label, not a bound); None
        otherwise or beyond the accountant's range."""
        if self.dpsgd is None or not math.isfinite(epsilon) or epsilon <= 0:
            return None
        return _member_sigma(round(float(epsilon), 10), self.delta, self.dpsgd.sampling_rate,
                             self.dpsgd.steps)

    # ------------------------------------------------------------------ the null family
    def null_family(self) -> Family:
        """The null family of the f-DP estimators for this claim (module docstring): the one
        decision of the project.  ``assumption`` is None exactly when the family is valid for
        every mechanism meeting the claim as stated."""
        if isinstance(self.family, _CurveFamily):
            return claim_family(self.family.name, self.delta)
        if self.family is not None:
            fam = resolve_family(self.family, self.delta)
            if self.curve is None and self.dpsgd is None:
                return fam  # an explicit family on an (eps, delta) claim keeps its assumption
            own = self._own_family()
            return fam if fam.name != own.name else own
        return self._own_family()

    def _own_family(self) -> Family:
        if self.dpsgd is not None:
            from dpaudit.curves.accounting import dpsgd_family

            p = self.dpsgd
            return claim_family(dpsgd_family(p.noise_multiplier, p.sampling_rate, p.steps,
                                             self.delta, claimed_epsilon=self.epsilon),
                                self.delta)
        return resolve_family(DEFAULT_FAMILY, self.delta)

    @property
    def family_name(self) -> str:
        """The null family's name (what ``--json``'s ``family`` key prints)."""
        if self.dpsgd is not None and self.family is None:
            return "dpsgd"
        f = self.family.name if isinstance(self.family, _CurveFamily) else self.family
        if isinstance(f, str):
            return f
        return self.null_family().name

    @property
    def assumptions(self) -> tuple[str, ...]:
        """Every assumption this claim asked for, in words (printed by every output)."""
        out = [ASSUMPTIONS[a] for a in sorted(self.assume)]
        a = self.null_family().assumption
        return tuple([a, *out] if a else out)

    def to_dict(self) -> dict[str, Any]:
        """The claim's ``--json`` keys."""
        out: dict[str, Any] = {"epsilon": self.epsilon, "delta": self.delta,
                               "relation": self.relation, "family": self.family_name,
                               "assume": sorted(self.assume),
                               "assumptions": list(self.assumptions)}
        if self.curve is not None:
            out["curve"] = repr(self.curve)
        if self.dpsgd is not None:
            out["dpsgd"] = {"noise_multiplier": self.dpsgd.noise_multiplier,
                            "sampling_rate": self.dpsgd.sampling_rate,
                            "steps": self.dpsgd.steps}
        return out


@functools.lru_cache(maxsize=64)
def _member_sigma(epsilon: float, delta: float, q: float, steps: int) -> float | None:
    """The calibrated noise multiplier of :meth:`Claim.member_noise_multiplier` (cached: a
    verdict is worded more than once)."""
    from dpaudit.curves.calibration import dpsgd_noise_multiplier

    try:
        return float(dpsgd_noise_multiplier(epsilon, delta, q, steps,
                                            value_discretization_interval=1e-2))
    except (ValueError, ArithmeticError):
        return None


@dataclass(frozen=True)
class _CurveFamily:
    """Marks ``family`` as the claimed curve's own named family (valid: no assumption)."""

    name: Any


#: claim checks whose failure in one direction shows the run did LESS than the claim:
#: check name -> (observed value > claimed value) falsifies (True) or (observed < claimed)
FALSIFYING_CHECKS = {"steps": True, "noise_multiplier": False, "sampling_rate": True}
#: statistical claim checks whose failure refutes the claim: the released noise read on the
#: canaries' coordinates below the claim's sigma C (``dpaudit.canaries.noise``, false-alarm
#: probability at most 1e-6 on a run that adds the claimed noise, far below any verdict's level);
#: the planted canaries' contributions above what per-example clipping to C gives
#: (``dpaudit.canaries.contribution``, same false-alarm level) -- only when ``weaker``
FALSIFYING_STATISTICAL_CHECKS = ("released_noise", "clipped_contribution")


def falsified_by(checks: Iterable[Any]) -> tuple[str, ...]:
    """The failed claim checks (``dpaudit.canaries.ClaimCheck``: name, ok, claimed,
    observed, message, weaker) that falsify the claim: the run took more steps, used less
    noise (any optimizer group or step below the claimed sigma, sigma = 0 included) or
    sampled at a larger rate than the claim accounts for, or the noise it released was
    below the claim's (the released-noise check, see ``FALSIFYING_STATISTICAL_CHECKS``).
    Other configuration errors (clip norm, fixed-size batches, normalisation, noise strategy)
    are reported as such but decide nothing by themselves: they do not say by themselves
    which way the privacy moved."""
    out = []
    for c in checks:
        name = getattr(c, "name", None)
        if getattr(c, "ok", True):
            continue
        message = str(getattr(c, "message", name))
        if name in FALSIFYING_STATISTICAL_CHECKS:
            if getattr(c, "weaker", False):
                out.append(message)
            continue
        if name not in FALSIFYING_CHECKS:
            continue
        claimed = getattr(c, "claimed", None)
        observed = getattr(c, "observed", None)
        values = observed if isinstance(observed, (list, tuple)) else [observed]
        if claimed is None or any(v is None for v in values):
            continue
        try:
            cl = float(claimed)
            vs = [float(v) for v in values if v is not None]
        except (TypeError, ValueError):
            continue
        more = FALSIFYING_CHECKS[name]
        # NaN (an unreadable sigma) counts as less noise
        if any((v > cl) if more else not (v >= cl) for v in vs):
            out.append(message)
    return tuple(out)
