"""The zoo's rules without any DP library: tested claims, score maps, the report, the CLI."""

import math

import pytest

from dpaudit.zoo import entries
from dpaudit.zoo.audit import audit_entry, search_seed_of
from dpaudit.zoo.entry import Cause, OffGrid, Pair, ZooEntry, finite_score, locate
from dpaudit.zoo.entry import tested_claim as claim_for
from dpaudit.zoo.reference_zoo import SimulatorRun
from dpaudit.zoo.run import markdown, run_zoo


def _entry(adjacency: str, eps: float = 1.0, delta: float = 0.0) -> ZooEntry:
    from dpaudit.mechanisms.simple import LaplaceMechanism

    return ZooEntry("dpaudit/x", "dpaudit", SimulatorRun(LaplaceMechanism(eps)), eps, delta,
                    (Pair("p", 0, 1, adjacency),), "x", adjacency=adjacency)


def test_tested_claim_group_privacy_for_replaced_records():
    # Dwork-Roth group privacy: a replaced record = two add/remove steps
    assert claim_for(_entry("add_remove"), Pair("p", 0, 1, "replace_one")) == (2.0, 0.0)
    eps, delta = claim_for(_entry("unstated", 0.5, 1e-5), Pair("p", 0, 1, "replace_one"))
    assert eps == 1.0 and delta == pytest.approx((1 + math.exp(0.5)) * 1e-5)
    # add/remove pairs are not neighbours under the replace-one reading: never used
    assert claim_for(_entry("unstated"), Pair("p", 0, 1, "add_remove")) is None
    assert claim_for(_entry("replace_one"), Pair("p", 0, 1, "add_remove")) is None
    assert claim_for(_entry("replace_one"), Pair("p", 0, 1, "replace_one")) == (1.0, 0.0)


def test_finite_score_is_a_fixed_map():
    assert finite_score(2.5) == 2.5
    assert finite_score(math.inf) == 1.7e308 and finite_score(-math.inf) == -1.7e308
    assert finite_score(math.nan) == -1.0e308


def test_locate_finds_the_line_or_nothing():
    c = Cause("dpaudit.zoo.entry", "def finite_score(x: Any) -> float:", "e", "r")
    where = locate(c)
    assert where is not None and where[0] == "dpaudit/zoo/entry.py"
    import inspect

    import dpaudit.zoo.entry as m

    assert inspect.getsource(m).splitlines()[where[1] - 1].startswith("def finite_score")
    assert locate(Cause("dpaudit.zoo.entry", "no such line here", "e", "r")) is None
    assert locate(Cause("no_such_module_xyz", "x", "e", "r")) is None


def test_compiled_cause_needs_the_tagged_version():
    import numpy as np

    ok = Cause("dpaudit.zoo.entry", "def finite_score(x: Any) -> float:", "e", "r",
               compiled=("numpy", np.__version__, "src/x.rs", 7))
    assert locate(ok) == (f"src/x.rs (v{np.__version__} tag)", 7)
    other = Cause("dpaudit.zoo.entry", "def finite_score(x: Any) -> float:", "e", "r",
                  compiled=("numpy", "0.0.1", "src/x.rs", 7))
    assert locate(other) is None
    unbound = Cause("dpaudit.zoo.entry", "no such line here", "e", "r",
                    compiled=("numpy", np.__version__, "src/x.rs", 7))
    assert locate(unbound) is None


def test_opendp_04_entries_are_skipped_with_the_reason_elsewhere():
    import importlib.metadata

    from zoo_needs import need

    need("opendp")
    out, skipped = entries(("opendp-0.4",))
    if importlib.metadata.version("opendp").startswith("0.4."):
        # the legacy venv: the entries load and nothing is skipped
        assert out and "opendp-0.4" not in skipped
    else:
        assert out == [] and "need opendp 0.4.x" in skipped["opendp-0.4"]


def test_search_stream_is_its_own_purpose():
    import numpy as np

    s = search_seed_of(0)
    assert s == int(np.random.SeedSequence([0, 0x2005]).generate_state(1, np.uint64)[0] >> 1)
    assert s != 0 and search_seed_of(1) != s


def test_a_bound_above_the_claim_without_a_cause_is_not_a_violation():
    # the simulator is 5-DP; claiming 0.5 puts the bound above the claim, but with no located
    # cause the verdict is "unexplained", never "violation"
    from dpaudit.mechanisms.simple import LaplaceMechanism

    e = ZooEntry("dpaudit/lying", "dpaudit", SimulatorRun(LaplaceMechanism(5.0)), 0.5, 0.0,
                 (Pair("p", 0, 1, "value_distance"),), "5-DP claimed 0.5",
                 adjacency="value_distance")
    r = audit_entry(e, trials=2000, seed=1)
    assert r.epsilon_lb > 0.5 and r.verdict == "unexplained"
    # the row carries its final audit's Audit, whose verdict is the statistical half
    assert r.audit is not None and r.audit.violation is True
    assert r.audit.result.epsilon == r.epsilon_lb and r.audit.claimed_epsilon == 0.5
    assert "audit" not in r.to_dict() and r.to_dict()["verdict"] == "unexplained"
    e2 = ZooEntry("dpaudit/lying", "dpaudit", SimulatorRun(LaplaceMechanism(5.0)), 0.5, 0.0,
                  (Pair("p", 0, 1, "value_distance"),), "5-DP claimed 0.5",
                  adjacency="value_distance",
                  cause=Cause("dpaudit.mechanisms.simple", "return bits.astype(float) + "
                              "rng.laplace(0.0, 1.0 / self.eps, bits.size)", "x", "y"))
    r2 = audit_entry(e2, trials=2000, seed=1)
    assert r2.verdict == "violation" and r2.cause.startswith("dpaudit/mechanisms/simple.py:")


def test_report_escapes_and_lists_every_entry():
    run = run_zoo(trials=100, seed=0, only=("dpaudit",))
    assert run.entry_confidence == pytest.approx(1 - 0.01 / 4)
    md = markdown(run, command="dpaudit zoo --only dpaudit <x>")
    assert "&lt;x&gt;" in md and md.count("| dpaudit |") == 4
    assert "None in this run." in md
    # the zCDP rows are in their own currency, and every clean row states its power
    assert md.count("| rho 0.5 (zCDP) |") == 2
    assert "## What the \"no violation found\" rows tried" in md
    assert md.count("p >= ") >= 8  # 4 table rows + 4 rows of the "tried" section


def test_only_validation():
    with pytest.raises(ValueError, match="--only"):
        entries(("bogus",))


def test_cli_zoo_json(tmp_path, capsys):
    import json

    from dpaudit.cli import main

    out = tmp_path / "zoo.md"
    rc = main(["zoo", "--only", "dpaudit", "--trials", "100", "--out", str(out), "--json"])
    assert rc in (0, None)
    doc = json.loads(capsys.readouterr().out)
    assert [r["key"] for r in doc["results"]] == [
        "dpaudit/LaplaceMechanism", "dpaudit/RandomizedResponse",
        "dpaudit/GaussianMechanism-zCDP", "dpaudit/RandomizedResponse-zCDP"]
    assert [r["currency"] for r in doc["results"]] == ["epsilon", "epsilon", "rho", "rho"]
    assert doc["violations"] == [] and out.read_text().startswith("# The zoo")


def test_offgrid_score():
    s = OffGrid()
    assert s(0.25) == 0.0 and s(0.25 + 2.0**-54) == 1.0 and s(0.6 + 2.0**-52) == 0.0
    assert s(float("nan")) == 0.0 and s(-(2.0**-60)) == 1.0 and s(0.0) == 0.0


@pytest.mark.parametrize("kw", [dict(grid=0.0), dict(grid=float("nan")), dict(limit=-1.0),
                                dict(limit=float("inf")), dict(grid="1e-16"), dict(limit=True)])
def test_offgrid_bad_input(kw):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=name):
        OffGrid(**kw)
