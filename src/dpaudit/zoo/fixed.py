"""Public violations that no longer reproduce at the pinned versions: each is checked at run
time (the check fails loudly if the old behaviour is back) and reported with its fixing
change, never counted as a finding.

Checks run the library the way the bug report did and return (reproduces, evidence).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["FixedViolation", "FIXED", "check_all"]


@dataclass(frozen=True)
class FixedViolation:
    library: str
    reference: str
    summary: str
    fixed_by: str
    check: Callable[[], tuple[bool, str]] | None


def _sn_reader(meta_x: dict[str, Any]) -> Any:
    import pandas as pd
    import snsql

    meta = {"": {"": {"t": {"row_privacy": True, "censor_dims": False, "x": meta_x}}}}
    return snsql.from_df(pd.DataFrame({"x": [1.0, 2.0]}), metadata=meta,
                         privacy=snsql.Privacy(epsilon=1.0, delta=0.0))


def _sn_unbounded_sum() -> tuple[bool, str]:
    """smartnoise-sdk #317: SUM over a column without bounds released without noise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _sn_reader({"type": "float"}).execute("SELECT SUM(x) FROM t")
        except ValueError as exc:
            return False, f"refused: {exc}"
    return True, "SUM over an unbounded column was answered"


def _sn_expression_in_aggregate() -> tuple[bool, str]:
    """smartnoise-sdk #201: clamping before an expression inside the aggregate."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _sn_reader({"type": "float", "lower": 0.0, "upper": 10.0}).execute(
                "SELECT SUM(x * 1000) FROM t")
        except ValueError as exc:
            return False, f"refused: {exc}"
    return True, "SUM(x * 1000) was answered with the sensitivity of x"


def _sn_variance_scale() -> tuple[bool, str]:
    """smartnoise-sdk #203: VARIANCE's sum of squares noised at the scale of the values."""
    from dpaudit.greybox import replay
    from dpaudit.greybox.python_hooks import smartnoise_primitives

    def run(data: Any, seed: int) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = _sn_reader({"type": "float", "lower": 0.0, "upper": 10.0})
            return r.execute("SELECT VAR(x) FROM t")

    _, t0, _ = replay(run, (0.0,), (0.0,), smartnoise_primitives())
    sens = sorted(float(c.inputs.get("sensitivity", 0.0)) for c in t0.calls)
    ok = bool(sens) and max(sens) >= 100.0 * (1 - 1e-6)
    return (not ok), f"declared sensitivities of VAR's noisy sums: {[round(s, 6) for s in sens]}"


def _odp_sized_float_sum() -> tuple[bool, str]:
    """Casacuberta et al. 2022 on OpenDP <= 0.4: the sized float sum stated the ideal
    sensitivity (d_in / 2)(U - L) although rounding moves it by 1024 (U - L) here."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    big, n = 2.0**50, 4096
    t = (dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n),
         dp.symmetric_distance()) >> dp.t.then_clamp((big, big + 1.0)) >> dp.t.then_sum()
    a = [big + 0.25] * n
    moved = abs(float(t(a)) - float(t([big] + a[1:])))
    sens = float(t.map(2))
    return sens < moved, (f"n = {n}, bounds [2^50, 2^50 + 1], one record replaced: the sum "
                          f"moves by {moved:g}, the stated sensitivity at d_in = 2 is "
                          f"{sens:.6g}")


def _odp_noisy_max_zcdp(runs: int = 4000) -> tuple[bool, str]:
    """opendp #2911: make_noisy_max under zCDP claimed the exponential mechanism's
    rho = eps^2 / 8 while selecting by permute-and-flip (only eps-DP).  On scores (0, 0) vs
    (1, -1) at scale 1 the two differ in P(index 0 | (1, -1)): e / (e + 1/e) = 0.881 for the
    exponential mechanism (Gumbel noise), 1 - e^-2 / 2 = 0.932 for permute-and-flip
    (exponential noise).  With 4000 runs the frequency's standard deviation is <= 0.0052, so
    the midpoint 0.907 is 5 deviations from either: the selection rule is told apart with
    error probability below 1e-6."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    m = dp.m.make_noisy_max(dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                            dp.linf_distance(T=float), dp.zero_concentrated_divergence(),
                            scale=1.0)
    freq = sum(m([1.0, -1.0]) == 0 for _ in range(runs)) / runs
    pf = freq > (0.8808 + 0.9323) / 2
    return pf, (f"P(index 0 | scores (1, -1)) = {freq:.4f} over {runs} runs "
                f"(exponential mechanism 0.881, permute-and-flip 0.932); claimed rho at "
                f"d_in = 1: {float(m.map(1.0)):g} = eps^2 / 8, correct for the exponential "
                f"mechanism")


FIXED: tuple[FixedViolation, ...] = (
    FixedViolation("smartnoise-sql", "opendp/smartnoise-sdk issue #317",
                   "SUM over a column with no bounds in the metadata was released with no "
                   "noise (the sensitivity None disabled the mechanism)",
                   "PR #318 (Dec 2020): unbounded columns are refused", _sn_unbounded_sum),
    FixedViolation("smartnoise-sql", "opendp/smartnoise-sdk issue #201",
                   "clamping happened at the column, not at the aggregated expression, so "
                   "SUM(f(x)) leaked f(x) beyond the declared sensitivity",
                   "PR #210 (May 2020): expressions inside aggregates are refused",
                   _sn_expression_in_aggregate),
    FixedViolation("smartnoise-sql", "opendp/smartnoise-sdk issue #203",
                   "VARIANCE's sum of squares was calibrated to the bounds of x, not x^2",
                   "the rewriter's sum of squares carries bounds [0, upper^2] (checked here: "
                   "sensitivity 100 for x in [0, 10])", _sn_variance_scale),
    FixedViolation("smartnoise-synth", "opendp/smartnoise-sdk issue #622 (Cebere et al., "
                   "PETS 2026)",
                   "DPcovariance.release clipped the data, then computed the covariance of "
                   "the unclipped data",
                   "PR #624 (Feb 2026), released in smartnoise-synth 1.0.6 "
                   "(snsynth/models/dp_covariance.py:115 uses the censored data); not run "
                   "here: smartnoise-synth <= 1.0.5 needs opacus < 0.15 (an old torch)", None),
    FixedViolation("opendp", "Casacuberta, Shoemate, Vadhan, Wagaman, CCS 2022 (rounding "
                   "attack on sized float sums)",
                   "make_sized_bounded_sum / _mean stated the ideal sensitivity (d_in / 2) "
                   "(U - L); the float sum moves by 1024 (U - L) at n = 4096, |x| ~ 2^50 "
                   "(reproduced on opendp 0.4.0: docs/zoo-opendp-0.4.md)",
                   "OpenDP 0.5.0 (PRs #467 sum, #476 mean: the relation includes the "
                   "rounding error)", _odp_sized_float_sum),
    FixedViolation("opendp", "opendp/opendp issue #2911 (filed on 0.15.1, closed)",
                   "make_noisy_max under zero-concentrated divergence claimed rho = eps^2 / 8 "
                   "(the exponential mechanism's) while selecting by permute-and-flip, which "
                   "is only eps-DP: 4 times the claimed budget",
                   "PR #2916 (Sept. 2026, noisy max respects its optimize argument); not "
                   "reproduced at 0.14.2 (the selection is Gumbel's), nor at 0.15.1 and 0.16.0 "
                   "installed from PyPI on this machine (P(index 0) = 0.877 and 0.880 over "
                   "20000 runs, integer and float scores)", _odp_noisy_max_zcdp),
)


def check_all() -> list[tuple[FixedViolation, bool | None, str]]:
    """(entry, reproduces, evidence); reproduces None when the check cannot run here."""
    out: list[tuple[FixedViolation, bool | None, str]] = []
    for f in FIXED:
        if f.check is None:
            out.append((f, None, "not checked at run time"))
            continue
        try:
            rep, ev = f.check()
        except ImportError as exc:
            out.append((f, None, f"library not installed: {exc}"))
            continue
        out.append((f, rep, ev))
    return out
