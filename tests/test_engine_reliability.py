"""Reliability of the trial engine under crashes (subprocess tests, a few seconds each):
SIGKILL of the driver and of a worker mid-run, then resume; two drivers on one store.  Each
interrupted run is compared with an uninterrupted one: identical observations, no trial missing
or duplicated."""

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


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """The uninterrupted run (in-process, no store) -- and the independent per-trial check."""
    run = execute(ea.SLOW, trials=N, seed=5, executor="inline")
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and SIGKILL")
def test_sigkill_driver_then_resume(tmp_path, reference) -> None:
    store = tmp_path / "kill.sqlite"
    proc = _driver(store)
    before = _wait_for(store, 200, proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its workers, mid-run
    proc.wait(timeout=30)
    after_kill = _stored(store)
    assert before <= after_kill < N
    res = _driver(store, "--resume")
    out, err = res.communicate(timeout=120)
    assert res.returncode == 0, err.decode()[-2000:]
    _check_store(store, reference)
    import json

    doc = json.loads(out)
    assert doc["engine"]["reused"] == after_kill
    assert doc["engine"]["computed"] == N - after_kill


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and SIGKILL")
def test_kill_worker_mid_run(tmp_path, reference) -> None:
    store = tmp_path / "worker.sqlite"
    proc = _driver(store)
    _wait_for(store, 200, proc)
    workers = _children(proc.pid)
    assert workers, "no worker processes found"
    os.kill(workers[0], signal.SIGKILL)  # a worker dies: the pool is rebuilt, chunks re-run
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-2000:]
    _check_store(store, reference)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses flock")
def test_two_drivers_on_one_store(tmp_path) -> None:
    n = 100_000  # 10 ms per trial: the first driver is still running when the second starts
    store = tmp_path / "two.sqlite"
    first = _driver(store, audit="SLOWER", n=n)
    try:
        _wait_for(store, 50, first)
        second = _driver(store, "--resume", audit="SLOWER", n=n)
        _, err2 = second.communicate(timeout=120)
        assert first.poll() is None  # the first driver was running all along
        assert second.returncode == 2
        assert "in use by another driver" in err2.decode()
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with TrialStore(store, readonly=True) as st:
        info = st.info()
        t, data = st.records(info.audit_id)
    assert info.runs == 1 and t.size >= 50 and np.unique(t).size == t.size
    want = np.array([ea.SLOWER_NO_PAUSE.run_trial(trial_rng(5, int(i)), int(i)) for i in t])
    np.testing.assert_array_equal(data, want)
