"""The bad-input catalogue (issue 15): every public function and CLI command x {NaN, +-inf,
empty, mismatched lengths, wrong dtype, out of range, huge, malformed file}.

Library: each case must raise ``ValueError`` whose message names the argument.
CLI: each case must exit 2 with exactly one line on stderr starting with ``error:`` and no
traceback.  ``test_catalogue_count`` prints the count (``pytest -s``) and checks the
catalogue's reach (every command, every target).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import dpaudit as da
from dpaudit import canaries as CN
from dpaudit import estimators as E
from dpaudit import risk as R
from dpaudit.attacks import quantile as _QA
from dpaudit.canaries import correlated as CORR
from dpaudit.curves import ZCDP, resolve_family
from dpaudit.curves.calibration import dpsgd_noise_multiplier
from dpaudit.estimators import gaussian_pair as _GP
from dpaudit.estimators import hockey_stick as _HS
from dpaudit.stats import binomial as B

NAN, INF = math.nan, math.inf

# ---------------------------------------------------------------- bad values per kind of argument
KINDS: dict[str, dict[str, Any]] = {
    "count": {"nan": NAN, "inf": INF, "-inf": -INF, "string": "10", "complex": 10 + 0j,
              "bool": True, "negative": -1, "fraction": 2.5},
    "confidence": {"nan": NAN, "inf": INF, "-inf": -INF, "string": "0.95", "complex": 0.95 + 0j,
                   "bool": True, "zero": 0.0, "one": 1.0, "above": 1.5, "negative": -0.1},
    "delta": {"nan": NAN, "inf": INF, "-inf": -INF, "string": "1e-5", "complex": 1e-5 + 0j,
              "bool": True, "negative": -1e-5, "one": 1.0, "above": 2.0},
    "probability": {"nan": NAN, "inf": INF, "-inf": -INF, "string": "0.5", "complex": 0.5 + 0j,
                    "bool": True, "negative": -0.1, "above": 1.5},
    "positive": {"nan": NAN, "inf": INF, "-inf": -INF, "string": "1", "complex": 1 + 0j,
                 "bool": True, "zero": 0.0, "negative": -1.0},
    "nonnegative": {"nan": NAN, "inf": INF, "-inf": -INF, "string": "1", "complex": 1 + 0j,
                    "bool": True, "negative": -1.0},
    "choice": {"unknown": "bogus", "number": 3, "none": None},
    "family": {"unknown": "bogus", "bad_q": ("subsampled_gaussian", 2.0), "number": 3},
    "float_array": {"empty": [], "nan": [0.1, NAN], "inf": [0.1, INF], "strings": ["0.1", "0.2"],
                    "complex": [0.1j, 0.2], "2d": [[0.1, 0.2], [0.3, 0.4]]},
    "binary_array": {"empty": [], "two": [0, 2], "strings": ["1", "0"], "fraction": [0.5, 1],
                     "nan": [1, NAN]},
    "matrix": {"empty": np.zeros((0, 2)), "nan": [[1, NAN]], "strings": [["1", "0"]],
               "three_d": np.zeros((2, 2, 2))},
}


@dataclass(frozen=True)
class Target:
    name: str
    fn: Callable[..., Any]
    good: dict[str, Any]
    args: dict[str, str]          # argument -> kind
    needles: dict[str, str] | None = None  # argument -> word expected in the message


def _obs(n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    m = np.arange(n) % 2
    return m, m * 2.0 + rng.normal(size=n)


M, S = _obs()


def _zoo_power(**kw: Any) -> Any:
    from dpaudit.zoo.power import power

    return power(**kw)


def _run_zoo_reference(**kw: Any) -> Any:
    from dpaudit.zoo.run import run_zoo

    return run_zoo(only=("dpaudit",), **kw)


def _eps_delta_tail(eps, n, r, u, delta):
    from dpaudit.estimators.tight import log_tail_probabilities_eps_delta

    return log_tail_probabilities_eps_delta(eps, n, r, u, delta=delta)


X = (np.arange(40).reshape(20, 2) % 3 == 0).astype(int)

TARGETS = [
    Target("tight", E.tight, dict(n=1000, r=100, u=10),
           dict(n="count", r="count", u="count", delta="delta", confidence="confidence",
                family="family", mode="choice")),
    Target("bits", E.bits, dict(n=1000, errors=300),
           dict(n="count", errors="count", delta="delta", confidence="confidence",
                family="family", ci="choice", floor="choice")),
    Target("steinke", E.steinke, dict(m=1000, guesses=200, correct=180),
           dict(m="count", guesses="count", correct="count", delta="delta",
                confidence="confidence", variant="choice")),
    Target("mahloujifar", E.mahloujifar, dict(m=1000, guesses=200, correct=180),
           dict(m="count", guesses="count", correct="count", delta="delta",
                confidence="confidence", family="family")),
    Target("multi_run", E.multi_run, dict(member=M, score=S, delta=1e-5),
           dict(member="binary_array", score="float_array", delta="delta",
                confidence="confidence", direction="choice", estimate="choice",
                grid="choice", max_thresholds="count")),
    Target("multi_run_counts", E.multi_run_counts, dict(tp=40, fn=10, fp=5, tn=45),
           dict(tp="count", fn="count", fp="count", tn="count", delta="delta",
                confidence="confidence")),
    Target("audit_one_run", E.audit_one_run,
           dict(member=M, score=S, methods=("tight",)),
           dict(member="binary_array", score="float_array", delta="delta",
                confidence="confidence", family="family", bits_ci="choice")),
    Target("guesses_from_scores", E.guesses_from_scores,
           dict(truth=M, score=S, k_pos=10, k_neg=10),
           dict(truth="binary_array", score="float_array", k_pos="count", k_neg="count")),
    Target("lifted", E.lifted, dict(x=X, y=1 - X),
           dict(x="matrix", y="matrix", delta="delta", confidence="confidence",
                interval="choice", neighbourhood="choice")),
    Target("tight_p_value", E.tight_p_value, dict(curve=da.GaussianDP(1.0), n=100, r=10, u=1),
           dict(n="count", r="count", u="count", mode="choice")),
    Target("GaussianDP", da.GaussianDP, dict(mu=1.0), dict(mu="positive")),
    Target("LaplaceDP", da.LaplaceDP, dict(eps=1.0), dict(eps="positive")),
    Target("EpsDeltaDP", da.EpsDeltaDP, dict(eps=1.0, delta=1e-5),
           dict(eps="nonnegative", delta="delta")),
    Target("SubsampledGaussianDP", da.SubsampledGaussianDP, dict(mu=1.0, q=0.5),
           dict(mu="positive", q="probability")),
    Target("GaussianDP.epsilon", lambda delta: da.GaussianDP(1.0).epsilon(delta),
           dict(delta=1e-5), dict(delta="delta")),
    Target("GaussianDP.delta", lambda epsilon: da.GaussianDP(1.0).delta(epsilon),
           dict(epsilon=1.0), dict(epsilon="nonnegative")),
    Target("SubsampledGaussianDP.epsilon",
           lambda delta: da.SubsampledGaussianDP(1.0, 0.5).epsilon(delta),
           dict(delta=1e-5), dict(delta="delta")),
    Target("dpsgd_curve", da.dpsgd_curve,
           dict(noise_multiplier=1.0, sampling_rate=0.01, steps=10),
           dict(noise_multiplier="positive", sampling_rate="probability", steps="count")),
    Target("resolve_family", resolve_family, dict(family="gdp", delta=1e-5),
           dict(family="family", delta="delta")),
    Target("claim_family", da.curves.claim_family, dict(family="gdp", delta=1e-5),
           dict(family="family", delta="delta")),
    Target("ProfileCurve", da.curves.ProfileCurve, dict(eps=[0.5, 1.0], deltas=[1e-3, 1e-5]),
           dict(eps="float_array", deltas="float_array")),
    Target("dpsgd_family", da.curves.dpsgd_family,
           dict(noise_multiplier=1.0, sampling_rate=0.05, steps=10, delta=1e-5),
           dict(noise_multiplier="positive", sampling_rate="probability", steps="count",
                delta="delta")),
    Target("log_tail_probabilities_eps_delta", _eps_delta_tail,
           dict(eps=1.0, n=100, r=10, u=1, delta=1e-5),
           dict(n="count", r="count", u="count", delta="delta")),
    Target("clopper_pearson", B.clopper_pearson, dict(k=3, n=10),
           dict(k="count", n="count", confidence="confidence", side="choice")),
    Target("binomial_interval", B.binomial_interval, dict(k=3, n=10),
           dict(k="count", n="count", confidence="confidence", method="choice")),
    Target("risk.thm35_tail", R.thm35_tail, dict(priors=[0.1, 0.2], epsilon=1.0, delta=1e-5),
           dict(priors="float_array", epsilon="nonnegative", delta="delta"),
           {"priors": "prior"}),
    Target("risk.single_target_bound", R.single_target_bound,
           dict(prior=0.1, epsilon=1.0, delta=1e-5),
           dict(prior="probability", epsilon="nonnegative", delta="delta", theorem="choice")),
    Target("risk.epsilon_protect", R.epsilon_protect, dict(prior=0.1, tau=0.05, delta=1e-5),
           dict(prior="probability", tau="probability", delta="delta")),
    Target("risk.leaked_bits", R.leaked_bits, dict(epsilon=1.0, alpha=0.05),
           dict(epsilon="nonnegative", alpha="probability")),
    Target("risk.gdp_mu", R.gdp_mu, dict(epsilon=1.0, delta=1e-5),
           dict(epsilon="nonnegative", delta="delta")),
    Target("risk.rero_bound", R.rero_bound, dict(kappa=0.1, epsilon=1.0, delta=1e-5),
           dict(kappa="probability", epsilon="nonnegative", delta="delta")),
    Target("hockey_stick", _HS.hockey_stick, dict(member=M, score=S),
           dict(member="binary_array", score="float_array", delta="delta",
                confidence="confidence", grid_ratio="positive")),
    Target("hockey_stick_histogram", _HS.hockey_stick_histogram, dict(member=M, score=S),
           dict(member="binary_array", score="float_array", delta="delta", bins="count")),
    Target("gaussian_pair", _GP.gaussian_pair, dict(member=M, score=S),
           dict(member="binary_array", score="float_array", delta="delta",
                confidence="confidence", variances="choice", grid_points="count")),
    Target("gaussian_pair_fit", _GP.gaussian_pair_fit, dict(member=M, score=S),
           dict(member="binary_array", score="float_array", delta="delta")),
    Target("quantile.fit_quantile_model", _QA.fit_quantile_model,
           dict(public_features=np.c_[S, S ** 2], public_scores=S,
                options=_QA.QuantileOptions(max_iter=2)),
           dict(public_features="matrix", public_scores="float_array"),
           {"public_features": "features"}),
    *[Target(f"correlated.{f.__name__}", f,
             dict(x=np.zeros((8, 2)), strategy=[0.8, 0.6], groups=np.array([0, 1]),
                  sampling_rate=0.5, noise_multiplier=1.0),
             dict(x="matrix", strategy="float_array", sampling_rate="probability",
                  noise_multiplier="positive"), {"x": "transcript"})
      for f in (CORR.whitened_scores, CORR.naive_step_scores)],
    Target("canaries.plan_gradient_canaries", CN.plan_gradient_canaries,
           dict(layout=CN.Layout.from_sizes([50, 10]), activity=np.zeros(60), n=10,
                sampling_rate=0.1, rng=np.random.default_rng(0)),
           dict(n="count", sampling_rate="probability", scale="positive", spread="count",
                per_tensor="count", sentinel="probability"), needles={"n": "canaries"}),
    Target("canaries.check_released_noise", CN.check_released_noise,
           dict(sum_squares=np.ones(5), coordinates=10, noise_multiplier=1.0),
           dict(sum_squares="float_array", coordinates="count", noise_multiplier="positive",
                alpha="probability")),
    Target("canaries.plan_reserved_examples", CN.plan_reserved_examples,
           dict(n=10, reserved=20, num_classes=3, sampling_rate=0.1,
                rng=np.random.default_rng(0)),
           dict(n="count", reserved="count", num_classes="count", sampling_rate="probability",
                value="positive"), needles={"n": "canaries"}),
    Target("zoo.run_zoo", _run_zoo_reference, dict(trials=40, seed=0),
           dict(trials="count", seed="count", confidence="confidence")),
    Target("zoo.power.power", _zoo_power, dict(trials=100, confidence=0.99, epsilon=1.0,
                                               delta=0.0),
           dict(trials="count", confidence="confidence", epsilon="nonnegative", delta="delta",
                currency="choice")),
    Target("ZCDP", ZCDP, dict(rho=0.5), dict(rho="positive")),
    Target("ZCDP.delta", lambda epsilon: ZCDP(0.5).delta(epsilon), dict(epsilon=1.0),
           dict(epsilon="nonnegative")),
    Target("calibration.dpsgd_noise_multiplier", dpsgd_noise_multiplier,
           dict(epsilon=1.0, delta=1e-5),
           dict(epsilon="positive", delta="delta", sampling_rate="probability",
                steps="count")),
]

# attack-metric conventions (issue 26): convex-hull AUROC, interpolated TPR, max accuracy
from dpaudit.stats import attack_metrics as AM  # noqa: E402

TARGETS += [
    Target("attack_metrics.auroc", AM.auroc, dict(member=M, score=S),
           dict(member="binary_array", score="float_array", convention="choice")),
    Target("attack_metrics.tpr_at_fpr", AM.tpr_at_fpr, dict(member=M, score=S, fpr=0.01),
           dict(member="binary_array", score="float_array", fpr="probability",
                convention="choice")),
    Target("attack_metrics.roc_convex_hull", AM.roc_convex_hull, dict(member=M, score=S),
           dict(member="binary_array", score="float_array")),
    Target("attack_metrics.max_accuracy", AM.max_accuracy, dict(member=M, score=S),
           dict(member="binary_array", score="float_array", prevalence="probability")),
]

# the curator's inverse questions (issue 37) and Opacus's normalisation arithmetic (issue 38)
from dpaudit.risk import inverse as RI  # noqa: E402
from dpaudit.training import opacus_normalisation as ON  # noqa: E402

TARGETS += [
    Target("risk.largest_epsilon_for_attacked", RI.largest_epsilon_for_attacked,
           dict(priors=[0.1] * 20, delta=1e-5, max_attacked=10),
           dict(priors="float_array", delta="delta", max_attacked="count",
                confidence="confidence", delta_multiplier="positive"), {"priors": "prior"}),
    Target("risk.largest_epsilon_for_success", RI.largest_epsilon_for_success,
           dict(priors=[0.1] * 20, delta=1e-5, max_success=0.5),
           dict(priors="float_array", delta="delta", max_success="probability"),
           {"priors": "prior"}),
    Target("opacus_normalisation.opacus_arithmetic", ON.opacus_arithmetic,
           dict(n=999, batch_size=50), dict(n="count", batch_size="count")),
    Target("opacus_normalisation.normalisation_finding", ON.normalisation_finding,
           dict(n=999, batch_size=50, weights=4000),
           dict(n="count", batch_size="count", weights="count", delta="delta")),
    Target("opacus_normalisation.scale_pair_epsilon", ON.scale_pair_epsilon,
           dict(weights=4000, divisors=(49, 50), delta=1e-5),
           dict(weights="count", delta="delta")),
]

# the spine (issue 31): the one calling convention of the count estimators, the claim
import functools  # noqa: E402

from dpaudit.claim import Claim  # noqa: E402
from dpaudit.games.audit import audit_multi_run  # noqa: E402

TARGETS += [
    Target("estimators.bound", functools.partial(E.bound, "tight"),
           dict(canaries=1000, guesses=100, wrong=10),
           dict(canaries="count", guesses="count", wrong="count", delta="delta",
                confidence="confidence", family="family")),
    Target("claim.Claim", Claim, dict(epsilon=1.0),
           dict(epsilon="nonnegative", delta="delta", relation="choice", family="family")),
    Target("audit_multi_run", audit_multi_run, dict(member=M, score=S),
           dict(member="binary_array", score="float_array", delta="delta",
                confidence="confidence", direction="choice", grid="choice")),
]

# the one training audit of any trainer adapter (issue 31): a NumPy loop's canaries
from dpaudit.canaries import dirac_plan  # noqa: E402
from dpaudit.training.adapter import LoopCanaries, audit_adapter  # noqa: E402

_PLAN = dirac_plan(np.arange(4), np.array([True, False, True, False]), sampling_rate=0.5)


def _loop_with_steps(steps: int = 3) -> LoopCanaries:
    """A NumPy loop's canaries after ``steps`` released steps (the audit needs at least one)."""
    loop = LoopCanaries(_PLAN, dimension=8, max_grad_norm=1.0)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        loop.release(loop.plant(np.zeros(8)) + rng.normal(size=8), noise_multiplier=1.0,
                     batch_size=5)
    return loop


TARGETS += [
    Target("training.adapter.LoopCanaries", LoopCanaries,
           dict(plan=_PLAN, dimension=8, max_grad_norm=1.0),
           dict(dimension="count", max_grad_norm="positive")),
    Target("training.adapter.audit_adapter", audit_adapter,
           dict(adapter=_loop_with_steps(), noise_multiplier=1.0, sampling_rate=0.5, steps=3),
           dict(noise_multiplier="positive", sampling_rate="probability", steps="count",
                max_grad_norm="positive", threat="choice", kind="choice", delta="delta",
                confidence="confidence")),
]

# kinds that do not apply to an argument (documented exceptions)
SKIP = {
    # a 0-d float array is accepted as one entry by design
    ("risk.thm35_tail", "priors", "2d"),
    # documented: epsilon = +inf means "no privacy" in the risk bounds (bounds become 1)
    *{(f"risk.{f}", "epsilon", "inf") for f in ("thm35_tail", "single_target_bound",
                                                "leaked_bits", "rero_bound")},
}


def library_cases() -> list[tuple[Target, str, str, Any]]:
    out = []
    for t in TARGETS:
        for arg, kind in t.args.items():
            for case, value in KINDS[kind].items():
                if (t.name, arg, case) in SKIP:
                    continue
                out.append((t, arg, case, value))
        # mismatched lengths for every pair of arrays
        arrays = [a for a, k in t.args.items() if k in ("float_array", "binary_array")]
        if len(arrays) >= 2:
            out.append((t, arrays[1], "mismatched", "MISMATCH"))
    return out


LIB_CASES = library_cases()


def run_library_case(t: Target, arg: str, case: str, value: Any) -> str | None:
    """None if handled (ValueError naming the argument), else what happened."""
    kw = dict(t.good)
    if isinstance(value, str) and value == "MISMATCH":
        kw[arg] = np.asarray(kw[arg])[:-1]
    else:
        kw[arg] = value
    needle = (t.needles or {}).get(arg, arg)
    try:
        t.fn(**kw)
    except ValueError as e:
        msg = str(e)
        if (isinstance(value, str) and value == "MISMATCH") or needle.lower() in msg.lower():
            return None
        return f"ValueError without the argument name: {msg[:120]}"
    except Exception as e:  # noqa: BLE001 - classifying the failure is the point
        return f"{type(e).__name__}: {str(e)[:120]}"
    return "accepted silently"


@pytest.mark.parametrize("t,arg,case,value", LIB_CASES,
                         ids=[f"{c[0].name}-{c[1]}-{c[2]}" for c in LIB_CASES])
def test_library_bad_input(t, arg, case, value):
    problem = run_library_case(t, arg, case, value)
    assert problem is None, problem


@pytest.mark.slow  # > 5 s: end-to-end or exhaustive; CI runs it
def test_good_inputs_work():
    # the catalogue's base calls are valid, so every failure above is due to the bad value
    for t in TARGETS:
        t.fn(**t.good)


# ------------------------------------------------------------------------------------- CLI
def _files(tmp: Any) -> dict[str, str]:
    p = {}
    (tmp / "empty.csv").write_text("")
    p["empty"] = str(tmp / "empty.csv")
    (tmp / "nan.csv").write_text("member,score\n1,nan\n0,0.1\n")
    p["nan"] = str(tmp / "nan.csv")
    (tmp / "onecol.csv").write_text("member\n1\n0\n")
    p["onecol"] = str(tmp / "onecol.csv")
    (tmp / "bin.csv").write_bytes(bytes(range(256)) * 4)
    p["binary"] = str(tmp / "bin.csv")
    (tmp / "trunc.npz").write_bytes(b"PK\x03\x04" + b"\x00" * 20)
    p["truncated_npz"] = str(tmp / "trunc.npz")
    (tmp / "deep.json").write_text("[" * 50_000 + "]" * 50_000)
    p["deep_json"] = str(tmp / "deep.json")
    (tmp / "strings.json").write_text('{"member": [1, 0], "score": ["a", "b"]}')
    p["strings_json"] = str(tmp / "strings.json")
    (tmp / "twoclass.csv").write_text("member,score\n2,0.5\n0,0.1\n")
    p["bad_member"] = str(tmp / "twoclass.csv")
    p["missing"] = str(tmp / "nope.csv")
    p["directory"] = str(tmp)
    p["dev_zero"] = "/dev/zero"
    (tmp / "x.txt").write_text("0.1\nabc\n")
    p["bad_priors"] = str(tmp / "x.txt")
    (tmp / "priors.txt").write_text("0.1\n0.2\n0.05\n")
    p["priors"] = str(tmp / "priors.txt")
    _hostile_files(tmp, p)
    _issue32_files(tmp, p)
    return p


def _issue32_files(tmp: Any, p: dict[str, str]) -> None:
    """Overflowing inputs and non-regular outputs of issue 32 (hardening round 4)."""
    import os

    (tmp / "bigint.json").write_text('{"member": [0, 1, 0, 1], "score": [1, 2, 3, 1'
                                     + "0" * 400 + "]}")
    p["bigint_json"] = str(tmp / "bigint.json")
    (tmp / "huge.csv").write_text("member,score\n" + "".join(
        f"{i % 2},{(1 if i % 3 else -1) * 1.7e308:.17g}\n" for i in range(60)))
    p["huge_csv"] = str(tmp / "huge.csv")
    os.mkfifo(tmp / "out.fifo")  # stands in for a device: never written
    p["fifo"] = str(tmp / "out.fifo")
    (tmp / "result.json").write_text('{"results": [{"method": "tight", "epsilon": 1.0, '
                                     '"delta": 1e-05, "confidence": 0.95}]}')
    p["result"] = str(tmp / "result.json")
    rng = np.random.default_rng(7)
    body = "".join(f"{i % 2},{float(v)!r}\n" for i, v in enumerate(rng.normal(size=100)))
    (tmp / "doubled.csv").write_text("member,score\n" + body + body)
    p["doubled"] = str(tmp / "doubled.csv")
    (tmp / "one_member.csv").write_text("member,score\n1,0.5\n0,0.1\n0,0.3\n0,0.2\n")
    p["one_member"] = str(tmp / "one_member.csv")
    (tmp / "bigint_g.json").write_text('{"member": [0, 1, 0, 1], "g": [1, 2, 3, 4], '
                                       '"score": [1, 2, 3, 1' + "0" * 400 + "]}")
    p["bigint_group"] = str(tmp / "bigint_g.json")
    (tmp / "mixed.json").write_text('{"member": [0, 1, 0, 1], "g": [1, 2, 3, 4], '
                                    '"score": [1, 2, 3, "x"]}')
    p["mixed_json"] = str(tmp / "mixed.json")


def _hostile_files(tmp: Any, p: dict[str, str]) -> None:
    """Store, engine and file cases of issue 26 (hardening)."""
    import io as _io
    import json as _json
    import sqlite3
    import zipfile

    db = tmp / "foreign.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE users (id INTEGER)")
    p["foreign_db"] = str(db)
    damaged = tmp / "damaged.sqlite"
    damaged.write_bytes(b"SQLite format 3\x00" + np.random.default_rng(0).bytes(16_384))
    p["damaged_store"] = str(damaged)
    badschema = tmp / "badschema.sqlite"
    with sqlite3.connect(badschema) as c:
        c.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        c.execute("INSERT INTO meta VALUES ('schema', 'one')")
    p["bad_schema_store"] = str(badschema)
    head = _io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False,
                                                "shape": (10**12,)})
    with zipfile.ZipFile(tmp / "lie.npz", "w") as z:
        b = _io.BytesIO()
        np.save(b, np.array([0, 1]))
        z.writestr("member.npy", b.getvalue())
        z.writestr("score.npy", head.getvalue() + bytes(16))
    p["lying_npz"] = str(tmp / "lie.npz")
    (tmp / "nul.csv").write_bytes(b"member,score\n" + b"\x00" * 100_000)
    p["nul_csv"] = str(tmp / "nul.csv")
    (tmp / "dup.csv").write_text("member,score,score\n1,0.5,0.1\n0,0.2,0.3\n")
    p["dup_header"] = str(tmp / "dup.csv")
    (tmp / "dup.json").write_text('{"member": [1, 0], "score": [0.1, 0.2], "score": [1, 2]}')
    p["dup_key"] = str(tmp / "dup.json")
    (tmp / "bool.json").write_text('{"member": [1, 0], "score": [true, false]}')
    p["bool_scores"] = str(tmp / "bool.json")
    res = {"results": [{"method": "tight", "epsilon": 1.0, "delta": 1e-5, "confidence": 0.95,
                        "params": {}, "p_value": None, "settings": [1, 2], "details": {}}]}
    (tmp / "settings_list.json").write_text(_json.dumps(res))
    p["payload_settings_list"] = str(tmp / "settings_list.json")
    res["results"][0].update(settings={}, epsilon=1e308)
    (tmp / "eps_huge.json").write_text(_json.dumps(res))
    p["payload_eps_huge"] = str(tmp / "eps_huge.json")
    res["results"][0].update(epsilon=1.0, details="x")
    (tmp / "details_str.json").write_text(_json.dumps(res))
    p["payload_details_str"] = str(tmp / "details_str.json")


BOUND = {
    "tight": ["--canaries", "1000", "--guesses", "100", "--wrong", "10"],
    "bits": ["--canaries", "1000", "--wrong", "300"],
    "steinke": ["--canaries", "1000", "--guesses", "200", "--correct", "180"],
    "mahloujifar": ["--canaries", "1000", "--guesses", "200", "--correct", "180"],
}
NUMBER_BAD = {"nan": "nan", "inf": "inf", "-inf": "-inf", "text": "abc", "negative": "-1",
              "huge": "1e400"}


def cli_cases() -> list[tuple[str, list[str]]]:
    cases: list[tuple[str, list[str]]] = []
    for cmd, base in BOUND.items():
        for opt in ("--delta", "--confidence", "--claimed-epsilon"):
            for case, v in NUMBER_BAD.items():
                cases.append((f"bound {cmd} {opt} {case}", ["bound", cmd, *base, opt, v]))
        for i in range(0, len(base), 2):
            for case, v in (("negative", "-5"), ("text", "x"), ("fraction", "2.5"),
                            ("zero" if i == 0 else "above_total", "0" if i == 0 else "100000")):
                argv = list(base)
                argv[i + 1] = v
                cases.append((f"bound {cmd} {base[i]} {case}", ["bound", cmd, *argv]))
        if cmd != "steinke":
            for fam in ("bogus", "subsampled_gaussian:2", "sgm:x", "laplace:3"):
                cases.append((f"bound {cmd} --family {fam}", ["bound", cmd, *base,
                                                              "--family", fam]))
    for kind, base in (("gdp", ["--mu", "1"]), ("laplace", ["--epsilon", "1"]),
                       ("subsampled_gaussian", ["--mu", "1", "--sampling-rate", "0.5"]),
                       ("eps_delta", ["--epsilon", "1", "--curve-delta", "1e-6"])):
        for i in range(0, len(base), 2):
            for case, v in NUMBER_BAD.items():
                argv = list(base)
                argv[i + 1] = v
                cases.append((f"curve {kind} {base[i]} {case}", ["curve", kind, *argv]))
        cases.append((f"curve {kind} --delta 1", ["curve", kind, *base, "--delta", "1"]))
    cases.append(("curve dpsgd missing --steps", ["curve", "dpsgd", "--noise-multiplier", "1",
                                                 "--sampling-rate", "0.01"]))
    cases.append(("curve dpsgd --steps 0", ["curve", "dpsgd", "--noise-multiplier", "1",
                                           "--sampling-rate", "0.01", "--steps", "0"]))
    cases.append(("curve bogus", ["curve", "bogus", "--mu", "1"]))
    for name in ("empty", "nan", "onecol", "binary", "truncated_npz", "deep_json",
                 "strings_json", "bad_member", "missing", "directory", "dev_zero"):
        for cmd in ("audit", "one-run"):
            cases.append((f"{cmd} file {name}", [cmd, f"FILE:{name}"]))
    cases.append(("bound lifted file truncated", ["bound", "lifted", "FILE:truncated_npz"]))
    cases.append(("bound lifted file csv", ["bound", "lifted", "FILE:nan"]))
    for opt, v in (("--delta", "nan"), ("--confidence", "2"), ("--threshold", "bogus"),
                   ("--direction", "up"), ("--claimed-epsilon", "-1"), ("--grid", "uniform")):
        cases.append((f"audit {opt} {v}", ["audit", "FILE:good", opt, v]))
    cases.append(("audit --grid with --threshold split", ["audit", "FILE:good", "--threshold",
                                                          "split", "--grid", "quantiles"]))
    for opt, v in (("--methods", "bogus"), ("--fractions", "2"), ("--fractions", "x"),
                   ("--bits-ci", "wald"), ("--true-epsilon", "nan"), ("--family", "bogus"),
                   ("--assume", "bogus")):
        cases.append((f"one-run {opt} {v}", ["one-run", "FILE:good", opt, v]))
    for opt, v in (("--canaries", "1"), ("--canaries", "-3"), ("--delta", "nan"),
                   ("--confidence", "0"), ("--mu", "inf"), ("--flawed", "bogus")):
        cases.append((f"simulate gaussian {opt} {v}", ["simulate", "gaussian", opt, v]))
    cases.append(("simulate bogus", ["simulate", "bogus"]))
    cases.append(("simulate svt --flawed alg9", ["simulate", "svt", "--flawed", "alg9"]))
    risk_base = ["risk", "--epsilon", "1", "--delta", "1e-5", "--prior", "0.1"]
    for opt in ("--epsilon", "--delta", "--prior", "--confidence", "--tau"):
        for case, v in NUMBER_BAD.items():
            argv = [a for a in risk_base]
            if opt in argv:
                argv[argv.index(opt) + 1] = v
            else:
                argv += [opt, v]
            cases.append((f"risk {opt} {case}", argv))
    cases.append(("risk --targets 0", [*risk_base, "--targets", "0"]))
    # sweeps, the inverse questions and the risk card (issue 37)
    for spec in ("1,1", "2,1", "0:1:0", "1:0:1", "0:1", "0:100000:0.001", "1,,2"):
        cases.append((f"risk --epsilon {spec}", ["risk", "--epsilon", spec, "--prior", "0.1"]))
    inv = ["risk", "--delta", "1e-5", "--prior", "0.56", "--targets", "100"]
    for case, v in {**NUMBER_BAD, "fraction": "2.5", "targets": "100",
                    "unmet": "10"}.items():
        cases.append((f"risk --max-attacked {case}", [*inv, "--max-attacked", v]))
    for case, v in {**NUMBER_BAD, "zero": "0", "one": "1", "unmet": "0.5"}.items():
        cases.append((f"risk --max-success {case}", [*inv, "--max-success", v]))
    cases.append(("risk without --epsilon or an inverse", inv))
    for case, v in (("directory", "FILE:directory"), ("png", "card.png"),
                    ("the prior file", "FILE:priors")):
        cases.append((f"risk --report {case}", ["risk", "--epsilon", "1", "--prior-file",
                                                "FILE:priors", "--report", v]))
    cases.append(("risk --prior-file bad", ["risk", "--epsilon", "1", "--prior-file",
                                            "FILE:bad_priors"]))
    cases.append(("risk --prior-file /dev/zero", ["risk", "--epsilon", "1", "--prior-file",
                                                  "/dev/zero"]))
    ex = "dpaudit.games.examples:gaussian_count_audit"
    for label, extra in (("module", ["nomodule:x"]), ("object", ["dpaudit.games.examples:nope"]),
                         ("--trials 0", [ex, "--trials", "0"]),
                         ("--confidence 2", [ex, "--trials", "10", "--executor", "inline",
                                             "--confidence", "2"]),
                         ("--claimed-epsilon nan", [ex, "--trials", "10", "--executor",
                                                    "inline", "--claimed-epsilon", "nan"]),
                         ("--executor bogus", [ex, "--trials", "10", "--executor", "bogus"])):
        cases.append((f"run {label}", ["run", *extra]))
    cases.append(("store info missing", ["store", "info", "FILE:missing"]))
    cases.append(("report missing", ["report", "FILE:missing"]))
    cases.append(("report malformed", ["report", "FILE:deep_json"]))
    # issue 26: store, engine and number cases
    for name in ("foreign_db", "damaged_store", "bad_schema_store"):
        cases.append((f"store info {name}", ["store", "info", f"FILE:{name}"]))
        cases.append((f"run --store {name}", ["run", ex, "--trials", "10", "--executor",
                                              "inline", "--store", f"FILE:{name}"]))
    cases.append(("store export damaged", ["store", "export", "FILE:damaged_store",
                                           "FILE:missing"]))
    cases.append(("store export onto itself", ["store", "export", "FILE:foreign_db",
                                               "FILE:foreign_db"]))
    for label, extra in (("--trials 1e12", ["--trials", "1000000000000"]),
                         ("--retries 1e12", ["--retries", "1000000000000"]),
                         ("--resume without --store", ["--resume"]),
                         ("--workers with inline", ["--workers", "2"]),
                         ("--trial-timeout 0", ["--trial-timeout", "0"]),
                         ("--trial-timeout nan", ["--trial-timeout", "nan"])):
        cases.append((f"run {label}", ["run", ex, "--trials", "10", "--executor", "inline",
                                       *extra]))
    cases.append(("run os:system", ["run", "os:system", "--trials", "10"]))
    cases.append(("run every trial fails", ["run", "engine_audits:EXITS", "--trials", "10",
                                            "--executor", "inline"]))
    for name in ("lying_npz", "nul_csv", "dup_header", "dup_key", "bool_scores"):
        for cmd in ("audit", "one-run"):
            cases.append((f"{cmd} file {name}", [cmd, f"FILE:{name}"]))
    cases.append(("audit --report onto its input", ["audit", "FILE:good", "--report",
                                                    "FILE:good"]))
    for name in ("payload_settings_list", "payload_eps_huge", "payload_details_str"):
        cases.append((f"report {name}", ["report", f"FILE:{name}"]))
    cases.append(("risk --prior-file NUL", ["risk", "--epsilon", "1", "--prior-file",
                                            "FILE:nul_csv"]))
    for label, argv in (
            ("curve eps_delta --epsilon 1e308", ["curve", "eps_delta", "--epsilon", "1e308",
                                                 "--curve-delta", "1e-6"]),
            ("curve laplace --epsilon 1e308", ["curve", "laplace", "--epsilon", "1e308"]),
            ("curve dpsgd --noise-multiplier 1e-320", ["curve", "dpsgd", "--noise-multiplier",
                                                       "1e-320", "--sampling-rate", "0.01",
                                                       "--steps", "10"]),
            ("curve dpsgd --steps 1e12", ["curve", "dpsgd", "--noise-multiplier", "1",
                                          "--sampling-rate", "0.01", "--steps",
                                          "1000000000000"]),
            ("simulate rr --epsilon 1e308", ["simulate", "rr", "--epsilon", "1e308"]),
            ("simulate dpsgd --steps 1e12", ["simulate", "dpsgd", "--steps",
                                             "1000000000000"]),
            ("bound tight --canaries 1e26", ["bound", "tight", "--canaries", "1" + "0" * 26,
                                             "--guesses", "100", "--wrong", "10"]),
            ("bound bits --canaries 1e23", ["bound", "bits", "--canaries", "1" + "0" * 23,
                                            "--wrong", "10"]),
            ("bound tight --confidence 1e-320", ["bound", "tight", *BOUND["tight"],
                                                 "--confidence", "1e-320"]),
            ("risk --targets 1e12", [*risk_base[:5], "--prior", "0.5", "--targets",
                                     "1000000000000"]),
            ("risk --confidence 0.3", [*risk_base, "--confidence", "0.3"])):
        cases.append((label, argv))
    cases.append(("reproduce bogus", ["reproduce", "bogus"]))
    for label, extra in (("--framework bogus", ["--framework", "bogus"]),
                         ("--mechanism bogus", ["--mechanism", "bogus"]),
                         ("--mechanism bandmf (opacus)", ["--mechanism", "bandmf"]),
                         ("jax --model cnn", ["--framework", "jax", "--model", "cnn"]),
                         ("jax --bands 1", ["--framework", "jax", "--mechanism", "bandmf",
                                            "--bands", "1"]),
                         ("jax --flawed bogus", ["--framework", "jax", "--flawed", "bogus"]),
                         ("jax --canary-branch (input canaries)",
                          ["--framework", "jax", "--canary-branch", "--threat", "black_box"]),
                         ("--sentinel 1", ["--sentinel", "1"]),
                         ("--sentinel nan", ["--sentinel", "nan"]),
                         ("--sentinel (input canaries)",
                          ["--sentinel", "0.03", "--threat", "black_box"]),
                         ("jax --sentinel -0.1", ["--framework", "jax", "--sentinel", "-0.1"]),
                         ("--finetune (not lm)", ["--finetune", "lora"]),
                         ("lm --finetune bogus", ["--model", "lm", "--finetune", "bogus"]),
                         ("lm --sequence-kind bogus", ["--model", "lm", "--threat", "black_box",
                                                       "--sequence-kind", "bogus"]),
                         ("lm --flawed mean_noise", ["--model", "lm", "--flawed",
                                                     "mean_noise"])):
        cases.append((f"train-audit {label}", ["train-audit", *extra]))
    cases.append(("reproduce --size", ["reproduce", "bits-dpsgd", "--size", "huge"]))
    cases.append(("zoo --only bogus", ["zoo", "--only", "bogus"]))
    cases.append(("zoo --trials 0", ["zoo", "--only", "dpaudit", "--trials", "0"]))
    cases.append(("zoo --confidence 2", ["zoo", "--only", "dpaudit", "--confidence", "2"]))
    cases.append(("zoo --resume", ["zoo", "--only", "dpaudit", "--resume"]))
    # issue 32: overflowing inputs and outputs onto files that are not regular
    cases += [
        ("audit bigint.json (10^400)", ["audit", "FILE:bigint_json"]),
        ("one-run bigint.json (10^400)", ["one-run", "FILE:bigint_json"]),
        ("curve dpsgd --noise-multiplier 1e-200", ["curve", "dpsgd", "--noise-multiplier",
                                                   "1e-200", "--sampling-rate", "1",
                                                   "--steps", "1"]),
        ("audit --report FIFO", ["audit", "FILE:good", "--report", "FILE:fifo"]),
        ("one-run --format png --report FIFO", ["one-run", "FILE:good", "--format", "png",
                                                "--report", "FILE:fifo"]),
        ("report --out FIFO", ["report", "FILE:result", "--out", "FILE:fifo"]),
        ("report --out directory", ["report", "FILE:result", "--out", "FILE:directory"]),
        ("zoo --out FIFO", ["zoo", "--only", "dpaudit", "--out", "FILE:fifo"]),
        ("store export to FIFO", ["store", "export", "FILE:foreign_db", "FILE:fifo"]),
        # errors that leaked internals now name the argument
        ("run :X (Empty module name)", ["run", ":X"]),
        ("run .x:Y (relative import)", ["run", ".x:Y"]),
        ("reproduce --seed -1 (expected non-negative integer)",
         ["reproduce", "bits-gaussian", "--size", "tiny", "--seed", "-1"]),
        ("audit doubled file", ["audit", "FILE:doubled"]),
        ("audit bigint.json --group-col", ["audit", "FILE:bigint_group", "--group-col", "g",
                                           "--aggregate", "max"]),
        ("audit text score among numbers (JSON)", ["audit", "FILE:mixed_json", "--group-col",
                                                   "g", "--aggregate", "max"]),
        ("zoo --store-dir FIFO", ["zoo", "--only", "dpaudit", "--store-dir", "FILE:fifo"]),
        ("one-run doubled file", ["one-run", "FILE:doubled"]),
    ]
    return cases


CLI_CASES = cli_cases()


def run_cli_case(argv: list[str], files: dict[str, str], capsys: Any) -> str | None:
    from dpaudit.cli import main

    args = [files[a[5:]] if a.startswith("FILE:") else a for a in argv]
    try:
        rc = main(args)
    except BaseException as e:  # noqa: BLE001
        return f"raised {type(e).__name__}: {str(e)[:100]}"
    cap = capsys.readouterr()
    err = cap.err
    if rc != 2:
        return f"exit {rc}"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if len(lines) != 1 or not lines[0].startswith("error: ") or "Traceback" in err:
        return f"stderr not one error line: {err[:150]!r}"
    return None


@pytest.fixture
def cli_files(tmp_path):
    files = _files(tmp_path)
    m, s = _obs(400)
    np.savetxt(tmp_path / "good.csv", np.column_stack([m, s]), delimiter=",",
               header="member,score", comments="", fmt="%g")
    files["good"] = str(tmp_path / "good.csv")
    return files


@pytest.mark.parametrize("label,argv", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_bad_input(label, argv, cli_files, capsys):
    problem = run_cli_case(argv, cli_files, capsys)
    assert problem is None, problem


#: commands with no case in CLI_CASES yet (``demo`` takes only --seed and --report)
NOT_IN_CATALOGUE = {"demo"}


def test_catalogue_count(capsys):
    """The catalogue's size (printed with ``pytest -s``) and reach: every command of
    ``dpaudit.cli.COMMANDS`` but NOT_IN_CATALOGUE has CLI cases, every library target has
    cases, and no two CLI cases share a label (pytest would suffix the id and hide one).
    That each case is handled is asserted case by case by ``test_library_bad_input`` and
    ``test_cli_bad_input``; this test used to re-run all of them (about 1,900 cases) to count
    them, which doubled the catalogue's time without asserting anything more."""
    from dpaudit.cli import COMMANDS

    commands = {argv[0] for _, argv in CLI_CASES}
    assert set(COMMANDS) - NOT_IN_CATALOGUE <= commands, set(COMMANDS) - commands
    assert {t.name for t in TARGETS} == {t.name for t, _, _, _ in LIB_CASES}
    labels = [label for label, _ in CLI_CASES]
    assert len(set(labels)) == len(labels)
    with capsys.disabled():
        print(f"\nbad-input catalogue: {len(LIB_CASES) + len(CLI_CASES)} cases "
              f"(library {len(LIB_CASES)} on {len(TARGETS)} targets, CLI {len(CLI_CASES)} on "
              f"{len(commands)} commands)")


#: issue 32: inputs that used to overflow and now have a valid answer (exit 0, no traceback)
OVERFLOW_ANSWERS = [
    ("one-run huge.csv --distribution", ["one-run", "FILE:huge_csv", "--distribution"]),
    ("curve subsampled_gaussian --mu 40 --sampling-rate 0.2",
     ["curve", "subsampled_gaussian", "--mu", "40", "--sampling-rate", "0.2"]),
    ("simulate subsampled_gaussian --mu 50", ["simulate", "subsampled_gaussian", "--mu", "50",
                                              "--canaries", "1000"]),
    ("curve gdp --mu 1e300 (The function value at x=inf is NaN)",
     ["curve", "gdp", "--mu", "1e300"]),
    ("curve subsampled_gaussian --sampling-rate 1e-300 (math domain error)",
     ["curve", "subsampled_gaussian", "--mu", "40", "--sampling-rate", "1e-300"]),
    ("audit one member (each sample in data must contain two or more observations)",
     ["audit", "FILE:one_member"]),
    ("simulate dpsgd --steps 1 --sampling-rate 1 --noise-multiplier 0.05",
     ["simulate", "dpsgd", "--steps", "1", "--sampling-rate", "1", "--noise-multiplier",
      "0.05", "--canaries", "1000"]),
]


@pytest.mark.slow  # seconds each (DP-SGD accounting at sigma = 0.05)
@pytest.mark.parametrize("label,argv", OVERFLOW_ANSWERS, ids=[c[0] for c in OVERFLOW_ANSWERS])
def test_overflow_inputs_answer(label, argv, cli_files, capsys):
    import json as _json
    import math

    from dpaudit.cli import main

    args = [cli_files[a[5:]] if a.startswith("FILE:") else a for a in argv]
    rc = main([*args, "--json"])
    cap = capsys.readouterr()
    assert rc == 0 and "Traceback" not in cap.err, cap.err[-500:]
    doc = _json.loads(cap.out)
    if argv[:2] == ["curve", "gdp"]:  # eps ~ mu^2/2 is beyond the float range: inf
        assert doc["epsilon"] is None and doc["epsilon_note"] == "inf"
    elif "1e-300" in argv:  # q ~ 0: the pair is (almost) identical, eps = 0
        assert doc["epsilon"] == 0.0
    elif argv[0] == "audit":  # the bound, with the TPR interval skipped and saying why
        assert doc["results"][0]["epsilon"] >= 0
        assert "at least 2 members" in doc["tpr_at_fpr_0.01_ci_method"]
    elif argv[0] == "curve":
        # eps of the subsampled Gaussian at large mu: delta_q(eps) = q delta_G(log(1 + (e^eps
        # - 1)/q)) ~ q delta_G(eps - log q), so eps ~ eps_G(delta / q) + log q
        from dpaudit import GaussianDP

        assert doc["epsilon"] == pytest.approx(GaussianDP(40).epsilon(5e-5) + math.log(0.2),
                                               abs=1e-6)
    elif argv[0] == "simulate":
        assert doc["violation"] is False and doc["claimed_epsilon"] > 100
    else:
        assert {r["method"] for r in doc["results"]} >= {"gaussian_pair", "hockey_stick"}
