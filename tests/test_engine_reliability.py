"""Reliability of the trial engine under crashes (subprocess tests, a few seconds each):
a second driver on a running store is refused, then SIGKILL of the driver mid-run and resume;
SIGKILL of a worker mid-run.  Each interrupted run is compared with an uninterrupted one:
identical observations, no trial missing or duplicated.  One subprocess driver in all (each
start imports dpaudit, the main cost under load): the refused second driver and the resume run
in-process through the CLI against the killed subprocess driver's store, and the worker kills
itself (engine_audits.DieOnceGaussianCount) under an in-process driver."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import engine_audits as ea
from dpaudit.engine import TrialStore, execute, trial_rng

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
N = 1500  # 2 ms per trial on 2 workers: about 1.5 s uninterrupted
BIG = 100_000  # a budget the killed driver never reaches


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(TESTS), env.get("PYTHONPATH", "")])
    return env


def _driver(store: Path, *extra: str, audit: str = "SLOW", n: int = N
            ) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "dpaudit", "run", f"engine_audits:{audit}", "--trials", str(n),
           "--workers", "2", "--executor", "process", "--store", str(store), "--seed", "5",
           "--chunk-size", "25", "--json", *extra]
    return subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _stored(store: Path) -> int:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    except sqlite3.Error:
        return 0


def _wait_for(store: Path, at_least: int, proc: subprocess.Popen[bytes],
              timeout: float = 60.0) -> int:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        n = _stored(store)
        if n >= at_least:
            return n
        if proc.poll() is not None:
            raise AssertionError(f"driver exited early: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.05)
    raise AssertionError("timed out waiting for trials in the store")


def _reference(n: int) -> np.ndarray:
    """The uninterrupted run, in-process, of the same trials without the pause (the pause
    draws nothing, so the records are the same) -- and the independent per-trial check."""
    run = execute(ea.SLOWER_NO_PAUSE, trials=n, seed=5, executor="inline")
    t = 17
    np.testing.assert_array_equal(run.records[t], ea.SLOW.run_trial(trial_rng(5, t), t))
    return run.records


def _check_store(store: Path, reference: np.ndarray) -> None:
    with TrialStore(store, readonly=True) as st:
        info = st.info()
        t, data = st.records(info.audit_id)
    np.testing.assert_array_equal(t, np.arange(reference.shape[0]))  # none missing, none duplicated
    np.testing.assert_array_equal(data, reference)
    assert info.failures == 0


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses flock and SIGKILL")
def test_second_driver_refused_then_sigkill_driver_then_resume(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    store = tmp_path / "kill.sqlite"
    args = ["run", "engine_audits:SLOW", "--workers", "2", "--executor", "process",
            "--store", str(store), "--seed", "5", "--chunk-size", "25", "--json", "--resume"]
    proc = _driver(store, n=BIG)
    try:
        _wait_for(store, 200, proc)
        # a second driver on the running store is refused (exit 2, one error line)
        assert main([*args, "--trials", str(BIG)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error:") and "in use by another driver" in err
        assert proc.poll() is None  # the first driver was running all along
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its workers, mid-run
        proc.wait(timeout=30)
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = [r[0] for r in db.execute("SELECT t FROM trials ORDER BY t")]
    assert 200 <= len(stored) < BIG and len(set(stored)) == len(stored)
    # resume to a budget beyond every stored trial: only the missing ones are computed
    m = max(stored) + 600
    assert main([*args, "--trials", str(m)]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["engine"]["reused"] == len(stored)
    assert doc["engine"]["computed"] == m - len(stored)
    _check_store(store, _reference(m))
    with TrialStore(store, readonly=True) as st:
        assert st.info().runs == 2  # the refused driver never registered a run


@pytest.mark.slow
def test_worker_dies_mid_run(tmp_path) -> None:
    from dpaudit.engine import ProcessExecutor
    from dpaudit.games.blackbox import BlackBoxAudit
    from dpaudit.games.examples import CountNeighbours, identity_score

    marker = tmp_path / "died"
    audit = BlackBoxAudit(ea.DieOnceGaussianCount(str(marker)), CountNeighbours(10),
                          identity_score)
    store = tmp_path / "worker.sqlite"
    with ProcessExecutor(2) as ex:
        run = execute(audit, trials=N, seed=5, executor=ex, store=store, chunk_size=25)
        assert ex.pool_restarts == 1  # the pool was rebuilt once, its chunks re-run
    assert marker.exists() and run.computed == N and not run.failures
    ref = _reference(N)
    np.testing.assert_array_equal(run.records, ref)
    _check_store(store, ref)
