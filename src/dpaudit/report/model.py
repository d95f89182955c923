"""The report model: everything an audit card shows, computed once, rendered by html/png.

Built from the JSON payload that ``--json`` prints (``{"results": [...], "claimed_epsilon",
"verdict", "verdict_method", ...}`` or a bare ``AuditResult.to_dict()``), optional
observations (member, score) for the score plots, and provenance.  Only summaries are kept
(a few hundred ROC vertices, a few threshold boxes), so the size does not grow with the number
of canaries.

A row's ``assumption`` (e.g. "the mechanism is μ-GDP": a null family other than eps_delta on a
user's scores) is named in the verdict ("assuming ...") and in a note; an estimate
(``details.estimate``, e.g. ``multi_run_gdp``) is noted as one and is never the verdict's basis.

The verdict rests on ONE result -- ``verdict_method`` when the payload names it, else the first
(primary) result, as :func:`dpaudit.cli.common.print_results` does: each row holds at the stated
confidence on its own, the maximum over rows does not (unless the run was ``--simultaneous``,
in which case the commands name the best row as ``verdict_method``).

Every row is shown as what the estimator registry says it is (:attr:`MethodRow.kind`,
:mod:`dpaudit.registry`): a lower bound "≥ x", a bound under a named assumption, a DP-SGD
family member the run fails ("fails the claimed DP-SGD curve at ε = x": not a bound on a run
outside the family), or an estimate "~ x (estimate)".  The card's "ε ≥" headline and its
attacker section use only :attr:`ReportModel.bound`: a lower bound valid for ANY mechanism for
the run as it happened -- the verdict row when it is one, else the payload's
``any_mechanism_epsilon`` -- and say so when the audit has none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.observations import MembershipObservations
from dpaudit.report.provenance import Provenance, make_provenance
from dpaudit.report.risk import RiskTranslation, risk_translation
from dpaudit.report.summaries import RegionPoints, RocCurve, summarize_scores
from dpaudit.validation import check_confidence, check_delta

__all__ = ["MethodRow", "GuessSeries", "ScoreSummary", "TestBox", "ReportModel",
           "build_report"]


@dataclass(frozen=True)
class MethodRow:
    """One method's bound (a row of the side-by-side comparison)."""

    method: str
    epsilon: float
    delta: float
    confidence: float
    fit: str
    p_value: float | None
    basis: bool
    #: "bound" (valid for the claim as stated), "assumption" (a bound only under a named
    #: assumption), "curve" (a DP-SGD family member the run fails), "estimate"
    kind: str = "bound"
    assumption: str | None = None

    def cell(self) -> str:
        """The epsilon cell: what the row's number is (module docstring)."""
        e = _fmt_eps(self.epsilon)
        if self.kind == "estimate":
            return f"~ {e} (estimate)"
        if self.kind == "curve":
            return (f"fails the claimed DP-SGD curve at ε = {e}" if self.epsilon > 0 else
                    "rejects no member of the claimed DP-SGD curve")
        if self.kind == "assumption":
            return f"≥ {e} (assuming)"
        return f"≥ {e}"

    def confidence_cell(self) -> str:
        return "-" if not math.isfinite(self.confidence) else f"{100 * self.confidence:g}%"


def _fmt_eps(x: float) -> str:
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4f}" if abs(x) >= 1e-3 or x == 0 else f"{x:.3e}"


@dataclass(frozen=True)
class GuessSeries:
    """One-run audits: the bound at every grid point (number of guesses r), each at
    ``per_test_confidence`` (Bonferroni over the grid), and the reported (largest) point."""

    method: str
    guesses: tuple[int, ...]
    epsilons: tuple[float, ...]
    chosen: int
    per_test_confidence: float


@dataclass(frozen=True)
class TestBox:
    """The confusion-matrix test a bound rests on: (FPR, FNR) and its confidence box."""

    label: str
    fpr: float | None
    fnr: float | None
    fpr_lo: float
    fpr_hi: float
    fnr_lo: float
    fnr_hi: float


@dataclass(frozen=True)
class ScoreSummary:
    """What the score plots show (summaries only)."""

    roc: RocCurve
    auroc: tuple[float, float, float]
    tpr_at: tuple[Mapping[str, float], ...]
    region: RegionPoints
    confidence: float


@dataclass(frozen=True)
class ReportModel:
    """One audit card."""

    title: str
    verdict: str
    violation: bool | None
    claimed_epsilon: float | None
    bound: float
    verdict_method: str
    delta: float
    confidence: float
    true_epsilon: float | None
    methods: tuple[MethodRow, ...]
    guesses: tuple[GuessSeries, ...]
    scores: ScoreSummary | None
    test_boxes: tuple[TestBox, ...]
    risk: RiskTranslation
    provenance: Provenance
    facts: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    certified_mu: float | None = None
    #: the row (or "any_mechanism_epsilon") ``bound`` comes from; None: the audit has no lower
    #: bound valid for any mechanism (``bound`` is NaN)
    bound_source: str | None = None


def _num(x: Any, name: str) -> float:
    """JSON numbers (with AuditResult's "inf" / "-inf" strings and None = NaN) as floats."""
    if x is None:
        return math.nan
    if isinstance(x, str) and x in ("inf", "-inf", "Infinity", "-Infinity", "nan", "NaN"):
        return float(x.replace("Infinity", "inf"))
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {x!r}")
    return float(x)


def _opt_num(x: Any, name: str) -> float | None:
    return None if x is None else _num(x, name)


def _get(d: Mapping[str, Any], key: str) -> float:
    """A number of a JSON object; strict JSON writes inf as null + ``<key>_note`` "inf"."""
    v = d.get(key)
    if v is None and isinstance(d.get(f"{key}_note"), str):
        return _num(d[f"{key}_note"], key)
    return _num(v, key)


def _get_opt(d: Mapping[str, Any], key: str) -> float | None:
    if d.get(key) is None and not isinstance(d.get(f"{key}_note"), str):
        return None
    return _get(d, key)


def _results(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if not isinstance(payload, Mapping):
        raise ValueError(f"report payload must be a JSON object (the output of --json), got "
                         f"{type(payload).__name__}")
    if "results" in payload:
        rs = payload["results"]
        if not isinstance(rs, list) or not rs or not all(isinstance(r, Mapping) for r in rs):
            raise ValueError("report payload 'results' must be a non-empty list of results "
                             "(objects with method, epsilon, delta, confidence)")
    elif "epsilon" in payload and "method" in payload:
        rs = [payload]
    else:
        raise ValueError("report payload must contain 'results' (the output of a dpaudit "
                         "command's --json) or be one result with 'method' and 'epsilon'")
    for i, r in enumerate(rs):
        missing = [k for k in ("method", "epsilon", "delta", "confidence") if k not in r]
        if missing:
            raise ValueError(f"report payload results[{i}] lacks {', '.join(missing)}")
    return rs


def _fit(params: Any) -> str:
    if not isinstance(params, Mapping) or not params:
        return "-"
    parts = []
    for k, v in params.items():
        try:
            parts.append(f"{k}={_num(v, 'params'):.4g}")
        except ValueError:
            parts.append(f"{k}={v}")
    return ", ".join(parts)


def _guess_series(r: Mapping[str, Any]) -> GuessSeries | None:
    s, d = r.get("settings") or {}, r.get("details") or {}
    grid, eps = s.get("grid"), d.get("grid_epsilons")
    if not isinstance(grid, list) or not isinstance(eps, list) or len(grid) != len(eps):
        return None
    try:
        guesses = tuple(int(a) + int(b) for a, b in grid)
        e = tuple(_num(x, "grid_epsilons") for x in eps)
        chosen = int(s.get("guesses", guesses[int(np.nanargmax(e))]))
        conf = _num(s.get("per_test_confidence", r["confidence"]), "per_test_confidence")
    except (TypeError, ValueError):
        return None
    return GuessSeries(method=str(r["method"]), guesses=guesses, epsilons=e, chosen=chosen,
                       per_test_confidence=conf)


def _test_box(r: Mapping[str, Any]) -> TestBox | None:
    """The (FPR, FNR) box of the test behind a multi-run or lifted bound, from its details."""
    d = r.get("details") or {}
    label = f"test behind {r['method']}"
    try:
        if "tpr_bounds" in d and "fpr_bounds" in d:
            tlo, thi = (_num(x, "tpr_bounds") for x in d["tpr_bounds"])
            flo, fhi = (_num(x, "fpr_bounds") for x in d["fpr_bounds"])
            fpr = fnr = None
            if "fpr" in d and "tpr" in d:
                fpr, fnr = _num(d["fpr"], "fpr"), 1.0 - _num(d["tpr"], "tpr")
            elif {"tp", "fp", "n_members", "n_nonmembers"} <= set(d):
                fpr = _num(d["fp"], "fp") / _num(d["n_nonmembers"], "n_nonmembers")
                fnr = 1.0 - _num(d["tp"], "tp") / _num(d["n_members"], "n_members")
            return TestBox(label, fpr, fnr, flo, fhi, 1.0 - thi, 1.0 - tlo)
        if "tpr_lower" in d and "fpr_upper" in d:
            tlo, fhi = _num(d["tpr_lower"], "tpr_lower"), _num(d["fpr_upper"], "fpr_upper")
            return TestBox(label, None, None, 0.0, fhi, 0.0, 1.0 - tlo)
    except (TypeError, ValueError):
        return None
    return None


def _scalar_facts(payload: Mapping[str, Any]) -> dict[str, Any]:
    skip = {"results", "verdict", "violation", "claimed_epsilon", "verdict_method",
            "true_epsilon", "verdict_guarantee"}
    return {str(k): v for k, v in payload.items()
            if k not in skip and (v is None or isinstance(v, (str, int, float, bool)))}


def _default_verdict(basis: Mapping[str, Any], bound: float, claimed: float | None,
                     method: str, delta: float, confidence: float) -> str:
    if claimed is not None:  # the one wording (dpaudit.verdict via dpaudit.outcome)
        from dpaudit.outcome import Audit, audit_of

        row = audit_of({"results": [dict(basis)]}).results[0]
        return str(Audit.of(row, claimed).message())
    if not math.isfinite(bound):
        return (f"no claimed epsilon given, and no row is a lower bound valid for any "
                f"mechanism ({method} is not)")
    return (f"no claimed epsilon given: the audit proves epsilon >= {bound:.4f} at delta = "
            f"{delta:g} ({method}, {100 * confidence:g}% confidence)")


def _kind(r: Mapping[str, Any]) -> str:
    """What a row's number is (:func:`dpaudit.registry.row_kind`)."""
    from dpaudit.outcome import audit_of
    from dpaudit.registry import row_kind

    return row_kind(audit_of({"results": [dict(r)]}).results[0])


def _run_bound(payload: Mapping[str, Any], rs: Sequence[Mapping[str, Any]],
               kinds: Sequence[str], basis_i: int) -> tuple[float, str | None]:
    """The lower bound valid for any mechanism for the run as it happened, and its source:
    the verdict row when it is one, else the payload's ``any_mechanism_epsilon``, else
    (NaN, None)."""
    if kinds[basis_i] == "bound":
        return _get(rs[basis_i], "epsilon"), str(rs[basis_i]["method"])
    anym = _get_opt(payload, "any_mechanism_epsilon")
    if anym is not None and math.isfinite(anym):
        return anym, "any_mechanism_epsilon"
    return math.nan, None


def _assumption(r: Mapping[str, Any]) -> str | None:
    a = r.get("assumption")
    return a if isinstance(a, str) and a else None


def _is_estimate(r: Mapping[str, Any]) -> bool:
    d = r.get("details")
    return isinstance(d, Mapping) and d.get("estimate") is True


def _assumption_notes(rs: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The card names every row that rests on an assumption or is an estimate (as the CLI
    does, :func:`dpaudit.cli.common.assumption_notes`)."""
    out = []
    for r in rs:
        a = _assumption(r)
        if _is_estimate(r):
            out.append(f"{r['method']} is an estimate assuming {a or 'a model'}, not a lower "
                       f"bound; it is never the basis of the verdict.")
        elif a is not None:
            out.append(f"{r['method']} assumes {a}: its bound is not valid for every mechanism "
                       f"meeting an (epsilon, delta) claim (the default family eps_delta is).")
    return tuple(out)


def build_report(payload: Mapping[str, Any], *, observations: MembershipObservations |
                 tuple[Any, Any] | None = None, title: str | None = None,
                 inputs: Sequence[Any] = (), settings: Mapping[str, Any] | None = None,
                 command: str | None = None, run_seconds: float | None = None,
                 risk_prior: float = 0.01, notes: Sequence[str] = (),
                 provenance: Provenance | None = None) -> ReportModel:
    """Turn a ``--json`` payload (+ observations and provenance) into a :class:`ReportModel`.

    ``observations`` (member, score) enable the ROC, AUROC / TPR-at-low-FPR intervals and the
    observed privacy-region points; without them those panels say so.  ``risk_prior`` is the
    prior success of reconstructing one target's secret (e.g. 0.01 = one of 100 equally likely
    values) used by the Beyond Worst Case risk translation.
    """
    rs = _results(payload)
    vm = payload.get("verdict_method")
    basis_i = 0
    if isinstance(vm, str):
        names = [str(r["method"]) for r in rs]
        if vm not in names:
            raise ValueError(f"report payload verdict_method {vm!r} is not among the results' "
                             f"methods ({', '.join(names)})")
        basis_i = names.index(vm)
    basis = rs[basis_i]
    if _is_estimate(basis):
        raise ValueError(f"report payload: {basis['method']} is an estimate under an "
                         f"assumption, not a lower bound; it cannot be the verdict's basis")
    kinds = [_kind(r) for r in rs]
    bound, bound_source = _run_bound(payload, rs, kinds, basis_i)
    delta = check_delta(_get(basis, "delta"))
    confidence = check_confidence(_get(basis, "confidence"))
    claimed = _get_opt(payload, "claimed_epsilon")
    true_eps = _get_opt(payload, "true_epsilon")
    v = payload.get("verdict")
    verdict = str(v) if v else _default_verdict(basis, bound, claimed, str(basis["method"]),
                                                delta, confidence)
    violation = payload.get("violation")
    if violation is None and claimed is not None:  # the Audit's verdict (one place)
        from dpaudit.outcome import Audit, audit_of

        violation = Audit.of(audit_of({"results": [dict(basis)]}).results[0],
                             claimed).violation
    methods = tuple(MethodRow(method=str(r["method"]), epsilon=_get(r, "epsilon"),
                              delta=_get(r, "delta"), confidence=_get(r, "confidence"),
                              fit=_fit(r.get("params")), p_value=_get_opt(r, "p_value"),
                              basis=i == basis_i, kind=kinds[i], assumption=_assumption(r))
                    for i, r in enumerate(rs))
    guesses = tuple(g for g in map(_guess_series, rs) if g is not None)
    box = _test_box(basis)
    boxes = () if box is None else (box,)
    scores = None
    if observations is not None:
        obs = observations if isinstance(observations, MembershipObservations) else \
            MembershipObservations.from_arrays(*observations)
        obs.require_both_classes()
        extra_t = [_num((r.get("details") or {}).get("threshold"), "threshold") for r in rs
                   if isinstance((r.get("details") or {}).get("threshold"), (int, float))]
        roc, auc, tpr, region = summarize_scores(obs.member, obs.score, confidence,
                                                 extra_thresholds=extra_t)
        scores = ScoreSummary(roc=roc, auroc=auc, tpr_at=tuple(tpr), region=region,
                              confidence=confidence)
    params = basis.get("params") or {}
    mu = params.get("mu") if isinstance(params, Mapping) else None
    fam = str((basis.get("settings") or {}).get("family", ""))
    gdp_fit = fam == "gdp"
    certified_mu = _num(mu, "mu") if mu is not None and gdp_fit else None
    prov = provenance or make_provenance(command=command, inputs=inputs, settings=settings,
                                         run_seconds=run_seconds)
    facts = _scalar_facts(payload)
    # the guarantee of the verdict rule (dpaudit.estimators.verdict), shown under the verdict
    g = payload.get("verdict_guarantee")
    guarantee = (f"Verdict guarantee: {g}",) if isinstance(g, str) and g else ()
    if title is None:
        mech = payload.get("mechanism")
        title = f"Audit of {mech}" if mech else f"Audit ({basis['method']})"
    return ReportModel(title=str(title), verdict=verdict,
                       violation=None if violation is None else bool(violation),
                       claimed_epsilon=claimed, bound=bound, verdict_method=str(basis["method"]),
                       delta=delta, confidence=confidence, true_epsilon=true_eps,
                       methods=methods, guesses=guesses, scores=scores, test_boxes=boxes,
                       risk=risk_translation(claimed, bound, delta, prior=risk_prior,
                                             true_epsilon=true_eps),
                       bound_source=bound_source,
                       provenance=prov, facts=facts,
                       notes=tuple(str(n) for n in (*guarantee, *_assumption_notes(rs),
                                                    *notes)),
                       certified_mu=certified_mu)
