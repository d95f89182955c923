"""The estimator registry: one entry per method -- its name, what it reads, what it guarantees.

Every place that lists, runs or trusts a method asks this table (the one-run dispatcher, the
verdict, the CLI's method lists, the audit card's wording); an unknown name is an error, never
a silent fall-through to another method.

Guarantee kinds (the question a verdict asks of a row: "may this row decide?"):

* :data:`ANY_MECHANISM` -- a finite-sample lower bound valid for EVERY mechanism meeting the
  claim its null family stands for (Tight One-Run Thm. 1; Steinke, Nasr & Jagielski Thm. 3.1;
  Mahloujifar et al. Thm. 3.2; Bits Transmission §4; Hypothesis Interpretation §3 with
  Clopper-Pearson).  A null family other than the claim's own is the caller's explicit choice
  (``family=``, ``--family``), recorded in the row's ``assumption`` and named in the verdict.
* :data:`UNDER_ASSUMPTION` -- a finite-sample bound only under a named assumption about the
  SCORES that the claim does not imply (:data:`ASSUMPTIONS`): the hockey-stick order-statistics
  bound needs independent, identically distributed canary scores (Koskela & Mohammadi §3);
  the equal-variance Gaussian-pair bound needs Gaussian scores of a common variance ("Let's Ask
  Gauss").  Such a row decides a verdict only when the claim carries that assumption
  (:class:`dpaudit.claim.Claim` ``assume=``; CLI ``--assume``), and the verdict then says
  "assuming ...".  (A correct ε = 1 Laplace or randomized-response mechanism has scores that
  are not Gaussian: the equal-variance bound reads ε ≥ 2 to 4 on them.)
* :data:`ESTIMATE` -- no finite-sample guarantee for the claim: plug-in estimates
  (``asymptotic``: decide only with ``allow_asymptotic`` / ``--allow-asymptotic``, the named
  assumption "asymptotic") and model estimates that over-claim on real scores (never decide).
  Printed "~ x (estimate)" everywhere.

How a row decides (``Estimator.decides``): most rows decide by their bound ("bound": epsilon
lower bound > claimed epsilon).  The sequential audit's row decides by its own anytime-valid
test of the claim ("e_process": the test supermartingale K_t reached 1 / (1 - confidence) at
the claimed epsilon; Ville's inequality, :mod:`dpaudit.estimators.sequential`), which is
never weaker than its bound: the bound exceeds the claim only if the e-process at the claim
crossed, and it can cross with the bound equal to the claim (the grid point).  When the claim
audited differs from the one the e-process tested, the row decides by its (anytime-valid)
bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dpaudit.results import AuditResult

__all__ = ["Estimator", "ESTIMATORS", "ASSUMPTIONS", "ANY_MECHANISM", "UNDER_ASSUMPTION",
           "ESTIMATE", "GUARANTEE_KINDS", "get", "names", "guarantee_kind", "admitted",
           "required_assumption", "check_assumptions", "row_kind", "epsilon_cell",
           "DECISIONS", "e_process_decision"]

ANY_MECHANISM = "finite-sample-any-mechanism"
UNDER_ASSUMPTION = "finite-sample-under-named-assumption"
ESTIMATE = "estimate"
GUARANTEE_KINDS = (ANY_MECHANISM, UNDER_ASSUMPTION, ESTIMATE)
#: how a row decides a verdict: by its bound, or by its own anytime-valid test of the claim
DECISIONS = ("bound", "e_process")

#: the named assumptions a claim may carry (explicit options), and what each assumes
ASSUMPTIONS: dict[str, str] = {
    "independent_scores": "canary scores independent and identically distributed given "
                          "their bits (any distributions)",
    "gaussian_scores": "in/out canary scores independent Gaussians with a common variance "
                       "(any means)",
    "asymptotic": "a plug-in estimate is close to its limit (no finite-sample guarantee)",
}


@dataclass(frozen=True)
class Estimator:
    """One method: ``name``, the observations it ``reads`` ("guess counts": canaries,
    guesses, wrong; "scores": per-canary (member, score); "confusion counts"; "lifted
    trials"), its ``guarantee`` kind and, for :data:`UNDER_ASSUMPTION` / asymptotic rows, the
    named ``assumption`` (a key of :data:`ASSUMPTIONS`; None: never decides), and how its
    row ``decides`` (:data:`DECISIONS`; module docstring)."""

    name: str
    reads: str
    guarantee: str
    assumption: str | None = None
    paper: str = ""
    one_run: bool = False
    decides: str = "bound"


_E = Estimator
ESTIMATORS: dict[str, Estimator] = {e.name: e for e in (
    _E("tight", "guess counts", ANY_MECHANISM, paper="Tight One-Run Thm. 1", one_run=True),
    _E("bits", "guess counts", ANY_MECHANISM, paper="Bits Transmission §4", one_run=True),
    _E("steinke", "guess counts", ANY_MECHANISM, paper="Steinke, Nasr & Jagielski Thm. 3.1",
       one_run=True),
    _E("mahloujifar", "guess counts", ANY_MECHANISM, paper="Mahloujifar et al. Thm. 3.2",
       one_run=True),
    _E("steinke_best_k", "guess counts", ANY_MECHANISM, paper="Steinke et al. §6"),
    _E("steinke_no_abstain", "guess counts", ANY_MECHANISM, paper="Steinke et al. §6"),
    _E("multi_run", "scores", ANY_MECHANISM, paper="Hypothesis Interpretation §3"),
    _E("multi_run_per_example", "scores", ANY_MECHANISM, paper="Hypothesis Interpretation §3"),
    _E("multi_run_gdp", "scores", ESTIMATE, paper="Nasr et al. 2023 (GDP estimate)"),
    _E("sequential", "scores", ANY_MECHANISM, paper="anytime-valid betting test",
       decides="e_process"),
    _E("lifted", "lifted trials", ANY_MECHANISM, paper="Pillutla et al. Algorithm 1"),
    _E("hockey_stick", "scores", UNDER_ASSUMPTION, "independent_scores",
       paper="Koskela & Mohammadi §3", one_run=True),
    _E("gaussian_pair", "scores", ESTIMATE, paper="Let's Ask Gauss", one_run=True),
    _E("gaussian_pair_equal", "scores", UNDER_ASSUMPTION, "gaussian_scores",
       paper="Let's Ask Gauss", one_run=True),
    _E("gaussian_pair_fit", "scores", ESTIMATE, "asymptotic", paper="Let's Ask Gauss",
       one_run=True),
    _E("hockey_stick_histogram", "scores", ESTIMATE, "asymptotic",
       paper="Koskela & Mohammadi §4", one_run=True),
)}


def get(name: str) -> Estimator:
    """The entry of ``name``; ValueError naming the known methods otherwise."""
    if not isinstance(name, str) or name not in ESTIMATORS:
        raise ValueError(f"method must be one of {', '.join(ESTIMATORS)}; got {name!r}")
    return ESTIMATORS[name]


def names(*, reads: str | None = None, one_run: bool | None = None) -> tuple[str, ...]:
    """The registered method names (optionally those reading ``reads`` / the one-run ones)."""
    return tuple(e.name for e in ESTIMATORS.values()
                 if (reads is None or e.reads == reads)
                 and (one_run is None or e.one_run == one_run))


def guarantee_kind(r: AuditResult) -> str:
    """The guarantee kind of a row: its method's entry; a row of an unregistered method
    (a user's own estimator) is classified by its own fields (an estimate, an asymptotic row
    or one with an assumption not from a null family never counts as any-mechanism)."""
    e = ESTIMATORS.get(r.method)
    if e is not None:
        return e.guarantee
    if r.is_estimate or r.guarantee == "asymptotic":
        return ESTIMATE
    if r.assumption is not None and not (r.settings and "family" in r.settings):
        return UNDER_ASSUMPTION
    return ANY_MECHANISM


def required_assumption(r: AuditResult) -> str | None:
    """The named assumption (key of :data:`ASSUMPTIONS`) a row needs before it may decide a
    verdict; None for an any-mechanism row; "never" for an estimate that never decides."""
    kind = guarantee_kind(r)
    if kind == ANY_MECHANISM:
        return None
    if r.guarantee == "asymptotic":
        return "asymptotic"
    e = ESTIMATORS.get(r.method)
    if kind == UNDER_ASSUMPTION and e is not None and e.assumption is not None:
        return e.assumption
    return "never"


def e_process_decision(r: AuditResult, claimed_epsilon: float) -> bool | None:
    """The row's own test of ``claimed_epsilon`` when its method decides by an e-process
    (module docstring) and that e-process tested this very claim: True when it rejected the
    claim; None otherwise (the row then decides by its bound)."""
    e = ESTIMATORS.get(r.method)
    if e is None or e.decides != "e_process":
        return None
    tested = (r.settings or {}).get("claimed_epsilon")
    rejected = (r.details or {}).get("rejected")
    if not isinstance(rejected, bool) or tested is None:
        return None
    try:
        same = abs(float(tested) - float(claimed_epsilon)) <= 1e-12
    except (TypeError, ValueError):
        return None
    return rejected if same else None


def check_assumptions(assume: Iterable[str] | str | None) -> frozenset[str]:
    """Validate named assumptions (``assume=`` / ``--assume``)."""
    if assume is None:
        return frozenset()
    items = [assume] if isinstance(assume, str) else list(assume)
    out = set()
    for a in items:
        if not isinstance(a, str) or a not in ASSUMPTIONS:
            raise ValueError(f"assume must name assumptions among "
                             f"{', '.join(ASSUMPTIONS)}; got {a!r}")
        out.add(a)
    return frozenset(out)


def admitted(r: AuditResult, assume: frozenset[str] = frozenset()) -> bool:
    """May ``r`` decide a verdict for a claim carrying the named assumptions ``assume``?"""
    need = required_assumption(r)
    return need is None or need in assume


def row_kind(r: AuditResult) -> str:
    """What a row's number is, for every renderer: "bound" (a lower bound valid for the
    claim as stated), "assumption" (a bound only under a named assumption or an assumed null
    family), "curve" (under the claimed DP-SGD curve's family: the epsilon of the member the
    run fails, not a bound on a run outside the family), or "estimate"."""
    kind = guarantee_kind(r)
    if kind == ESTIMATE:
        return "estimate"
    if r.assumption is None and str((r.settings or {}).get("family", "")).startswith("dpsgd"):
        return "curve"
    if kind == ANY_MECHANISM and r.assumption is None:
        return "bound"
    return "assumption"


def epsilon_cell(r: AuditResult, text: str) -> str:
    """A table cell for ``r``'s epsilon already formatted as ``text``: ">= x", "~ x
    (estimate)", ">= x (assuming)" or "fails DP-SGD curve at x"."""
    kind = row_kind(r)
    if kind == "estimate":
        return f"~ {text} (estimate)"
    if kind == "curve":
        return f"fails DP-SGD curve at {text}" if r.epsilon > 0 else "rejects no DP-SGD member"
    if kind == "assumption":
        return f">= {text} (assuming)"
    return f">= {text}"
