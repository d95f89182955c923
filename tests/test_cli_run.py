"""``dpaudit run`` and ``dpaudit store info`` (in-process CLI)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import engine_audits as ea
from dpaudit.cli import main
from dpaudit.engine import execute


def test_run_json_fixed_n_and_store_info(tmp_path, capsys) -> None:
    store = tmp_path / "cli.sqlite"
    rc = main(["run", "engine_audits:FAST", "--trials", "2000", "--executor", "inline",
               "--store", str(store), "--claimed-epsilon", "0.5", "--delta", "1e-5",
               "--seed", "3", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    ref = execute(ea.FAST, trials=2000, seed=3, executor="inline")
    from dpaudit.estimators.multi_run import multi_run

    want = multi_run(ref.records[:, 0] > 0.5, ref.records[:, 1], delta=1e-5)
    assert doc["results"][0]["epsilon"] == want.epsilon
    assert doc["claimed_epsilon"] == 0.5
    assert doc["violation"] is (want.epsilon > 0.5)
    assert doc["verdict_method"] == "multi_run" and doc["verdict"].startswith(
        "violation" if want.epsilon > 0.5 else "no violation")
    assert doc["engine"]["computed"] == 2000 and doc["engine"]["failed_trials"] == []
    rc = main(["store", "info", str(store), "--json"])
    info = json.loads(capsys.readouterr().out)
    assert rc == 0 and info["trials"] == 2000 and info["audit_id"] == doc["engine"]["audit_id"]
    assert info["config"]["seed"] == 3 and info["fields"] == ["member", "score"]


def test_run_sequential_json(capsys) -> None:
    rc = main(["run", "engine_audits:FLAWED", "--trials", "20000", "--executor", "inline",
               "--sequential", "--claimed-epsilon", "1", "--delta", "1e-5", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["violation"] is True and doc["verdict_method"] == "sequential"
    seq = doc["sequential"]
    assert seq["rejected"] and seq["e_value"] >= 20 and seq["trials_used"] < 1000
    assert doc["engine"]["trials"] == seq["stopping_trial"]


def test_run_reports_failed_trials(capsys) -> None:
    rc = main(["run", "engine_audits:FLAKY", "--trials", "300", "--executor", "inline",
               "--retries", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    failed = doc["engine"]["failed_trials"]
    assert failed and all(f["attempts"] == 2 and "simulated crash" in f["error"]
                          for f in failed)
    assert doc["engine"]["successful_trials"] == 300 - len(failed)
    assert np.all(np.diff([f["trial"] for f in failed]) > 0)


def test_run_bad_input(tmp_path, capsys) -> None:
    cases = [
        (["run", "no_colon"], "MODULE:OBJECT"),
        (["run", "no_such_module_xyz:A"], "cannot import module"),
        (["run", "engine_audits:NOPE"], "has no attribute"),
        (["run", "engine_audits:np"], "not a dpaudit.BlackBoxAudit"),
        (["run", "engine_audits:FAST", "--executor", "gpu"], "--executor"),
        (["run", "engine_audits:FAST", "--sequential"], "claimed_epsilon"),
        (["store", "info", str(tmp_path / "none.sqlite")], "no trial store"),
    ]
    for argv, msg in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error:") and msg in err and "Traceback" not in err


@pytest.mark.slow
def test_engine_run_is_the_audit_and_names_its_spec() -> None:
    """``run_audit`` returns the one Audit (its facts the engine's); ``to_audit(spec=)``, the
    former ``AuditRun`` call, names the audit in ``engine.audit`` (no stray ``spec`` key)."""
    from dpaudit.engine import AuditRun, EngineFacts, run_audit
    from dpaudit.outcome import Audit

    run = run_audit(ea.FAST, trials=200, seed=0, executor="inline", claimed_epsilon=5.0)
    assert AuditRun is Audit and isinstance(run.facts, EngineFacts)
    assert run.failures == () and run.run.n == 200 and run.sequential is None
    doc = run.to_audit(spec="engine_audits:FAST").to_dict()
    assert doc["engine"]["audit"] == "engine_audits:FAST" and "spec" not in doc
    assert doc["violation"] is run.violation is False
    assert run.to_dict()["engine"]["audit"] is None
