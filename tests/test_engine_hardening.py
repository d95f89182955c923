"""Trial engine and store under hostile conditions: a driver killed with SIGKILL or SIGINT
leaves no worker and no lock behind, trials reach the store every few seconds whatever the
chunk size, worker deaths and sys.exit become per-trial failures, a trial that hangs times out,
and the store refuses foreign databases, damaged files and impossible rows with one clear
error."""

from __future__ import annotations

import json
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
from dpaudit.engine import StoreLockedError, TrialStore, execute, trial_rng
from dpaudit.engine.store import StoreError

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
LINUX = sys.platform.startswith("linux")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(TESTS), env.get("PYTHONPATH", "")])
    return env


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _stored(store: Path) -> int:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    except sqlite3.Error:
        return 0


def _start_driver(store: Path, audit: str = "SLOW20") -> subprocess.Popen[bytes]:
    # the default chunk size (100,000 / 16 = 6,250 trials of 20 ms: two minutes per chunk
    # before this revision) -- trials must still reach the store within seconds
    cmd = [sys.executable, "-m", "dpaudit", "run", f"engine_audits:{audit}", "--trials",
           "100000", "--workers", "2", "--executor", "process", "--store", str(store),
           "--seed", "1", "--json"]
    # faulthandler: a driver that does not exit can be made to print every thread's stack
    env = dict(_env(), PYTHONFAULTHANDLER="1")
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait for the driver; if it is still running after ``timeout`` s, fail with the stacks
    of all its threads (SIGABRT makes faulthandler print them) instead of a bare timeout."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGABRT)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            err = b"(no output within 10 s of SIGABRT)"
        raise AssertionError(f"the driver was still running {timeout:g} s after the signal; "
                             f"its threads:\n{err.decode(errors='replace')[-6000:]}") from None


def _wait_stored(store: Path, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        n = _stored(store)
        if n > 0:
            return n
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode()[-2000:])
        time.sleep(0.1)
    raise AssertionError("no trial reached the store")


def _wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="reads /proc, uses SIGKILL")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_driver_death_leaves_no_worker_and_no_lock(tmp_path, capsys, sig) -> None:
    from dpaudit.cli import main

    store = tmp_path / "s.sqlite"
    proc = _start_driver(store)
    try:
        _wait_stored(store, proc)  # within seconds, although a default chunk is 2 minutes
        workers = _children(proc.pid)
        assert len(workers) >= 2
        os.kill(proc.pid, sig)  # the driver only, not its process group
        _wait_exit(proc, 30)
        left = _wait_gone(workers)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for p in _children(proc.pid) + [w for w in locals().get("workers", [])]:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    assert left == []
    if sig == signal.SIGINT:
        assert proc.returncode == 130
    # the lock died with the driver: a resume is not refused
    stored = _stored(store)
    args = ["run", "engine_audits:SLOW20", "--trials", str(stored + 3), "--executor",
            "inline", "--store", str(store), "--seed", "1", "--json", "--resume"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    eng = doc["engine"]
    assert eng["reused"] >= 1 and eng["reused"] + eng["computed"] == eng["trials"] == stored + 3


@pytest.mark.slow
def test_commits_every_few_seconds_whatever_the_chunk_size(tmp_path) -> None:
    """An interrupted run keeps the trials of every finished chunk: chunks are sized to about
    ``commit_seconds`` of work (before: trials / 8 per chunk, nothing stored)."""
    store = tmp_path / "c.sqlite"
    with pytest.raises(KeyboardInterrupt):
        execute(_InterruptAt(ea.SLOWER_NO_PAUSE, at=2000, pause=0.0004), trials=20_000,
                seed=0, executor="inline", store=store, commit_seconds=0.05)
    stored = _stored(store)
    assert stored >= 1000  # the old default chunk was 2,500 trials: 0 stored


class _InterruptAt:
    """Wraps a game; Ctrl-C (KeyboardInterrupt) at trial ``at``; ``pause`` seconds a trial."""

    fields = ("member", "score")

    def __init__(self, game, at: int, pause: float) -> None:
        self.game, self.at, self.pause = game, at, pause

    def config(self):
        return {"interrupt": self.game.config()}

    def run_trial(self, rng, t):
        if t == self.at:
            raise KeyboardInterrupt
        time.sleep(self.pause)
        return self.game.run_trial(rng, t)


@pytest.mark.slow
def test_worker_deaths_are_per_trial_failures_and_reproducible(tmp_path) -> None:
    n = 3000
    dies = [t for t in range(n) if (g := trial_rng(4, t)) is not None
            and (g.random(), g.random())[1] < ea.DiesOnDraw().rate]
    assert 1 <= len(dies) <= 5
    runs = [execute(ea.DIES, trials=n, seed=4, executor="process", workers=2, retries=1)
            for _ in range(2)]
    for r in runs:
        assert [f.trial for f in r.failures] == dies
        assert all(f.attempts == 2 and "worker process died" in f.error for f in r.failures)
        assert r.ok.sum() == n - len(dies)
    np.testing.assert_array_equal(runs[0].records, runs[1].records)
    # the other trials are computed as an uninterrupted run computes them
    for t in [t for t in range(n) if t not in dies][:50]:
        np.testing.assert_array_equal(runs[0].records[t], ea.DIES.run_trial(trial_rng(4, t), t))


def test_sys_exit_in_a_trial_is_a_failure(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    r = execute(ea.EXITS_SOME, trials=300, seed=2, executor="process", workers=2)
    exits = [t for t in range(300) if (g := trial_rng(2, t)) is not None
             and (g.random(), g.random())[1] < 0.05]
    assert [f.trial for f in r.failures] == exits
    assert all(f.error == "SystemExit: 3 (the trial called sys.exit)" for f in r.failures)
    # every trial exits: one error line naming the cause, exit 2 (not exit 3, no message)
    assert main(["run", "engine_audits:EXITS", "--trials", "20", "--executor", "inline"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: every trial failed: 20 of 20")
    assert "SystemExit: 3" in err[0]


@pytest.mark.slow
def test_trial_timeout(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    hang = [t for t in range(60) if (g := trial_rng(3, t)) is not None
            and (g.random(), g.random())[1] < 0.02]
    assert hang == [33, 55]
    t0 = time.monotonic()
    r = execute(ea.HANGS, trials=60, seed=3, executor="process", workers=2, retries=0,
                trial_timeout=0.3)
    assert time.monotonic() - t0 < 20  # each hanging trial costs 0.3 s, not 30 s
    assert [f.trial for f in r.failures] == hang
    assert all(f.error.startswith("TrialTimeout: the trial ran longer than 0.3 s")
               for f in r.failures)
    assert main(["run", "engine_audits:FAST", "--trials", "10", "--executor", "inline",
                 "--trial-timeout", "0"]) == 2
    assert "--trial-timeout" in capsys.readouterr().err


def test_markup_in_errors_and_names_printed_literally(capsys) -> None:
    from dpaudit.cli import main

    assert main(["run", "engine_audits:MARKUP", "--trials", "60", "--executor", "inline"]) == 0
    out = capsys.readouterr().out
    assert "RuntimeError: [/red] closing tag [bold]not" in " ".join(out.split())


def _refused_while_held(store, other, match: str, trials: int = 10) -> None:
    """A driver on ``other`` is refused while one holds ``store``'s lock."""
    holder = TrialStore(store)
    holder.acquire()
    try:
        with pytest.raises(StoreLockedError, match=match):
            execute(ea.FAST, trials=trials, seed=0, executor="inline", store=other,
                    resume=True)
    finally:
        holder.close()


def test_lock_through_symlink_and_dead_holder(tmp_path) -> None:
    store = tmp_path / "real.sqlite"
    link = tmp_path / "link.sqlite"
    execute(ea.FAST, trials=10, seed=0, executor="inline", store=store)
    link.symlink_to(store)
    _refused_while_held(store, link, "in use by another driver")
    # a forked child never holds the lock: the parent's lock ends with the parent
    holder = TrialStore(store)
    holder.acquire()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        time.sleep(3)
        os._exit(0)
    try:
        holder.close()  # the "driver" is gone; its child lives on
        assert execute(ea.FAST, trials=10, seed=0, executor="inline", store=store,
                       resume=True).computed == 0
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_foreign_sqlite_database_is_never_written(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    db = tmp_path / "app.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE users (id INTEGER, name TEXT)")
        c.execute("INSERT INTO users VALUES (1, 'a')")
    before = db.read_bytes()
    with pytest.raises(StoreError, match="not a dpaudit trial store .tables: users"):
        execute(ea.FAST, trials=10, seed=0, executor="inline", store=db)
    assert main(["run", "engine_audits:FAST", "--trials", "10", "--executor", "inline",
                 "--store", str(db)]) == 2
    assert "refusing to write into it" in capsys.readouterr().err
    assert db.read_bytes() == before and not Path(f"{db}-wal").exists()


def _good_store(tmp_path: Path) -> Path:
    store = tmp_path / "g.sqlite"
    execute(ea.FAST, trials=400, seed=0, executor="inline", store=store)
    with sqlite3.connect(store) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return store


@pytest.mark.parametrize("argv", [["store", "info", "S"], ["store", "export", "S", "O"],
                                  ["run", "engine_audits:FAST", "--trials", "500",
                                   "--executor", "inline", "--store", "S", "--resume"]])
def test_damaged_store_one_error_line(tmp_path, capsys, argv) -> None:
    from dpaudit.cli import main

    store = _good_store(tmp_path)
    data = bytearray(store.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 8192] = np.random.default_rng(0).bytes(8192)
    store.write_bytes(bytes(data))
    args = [str(store) if a == "S" else str(tmp_path / "o.parquet") if a == "O" else a
            for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "damaged" in err[0]


@pytest.mark.parametrize("sql,needle", [
    ("UPDATE trials SET t = -1 WHERE t = 0", "trial index -1"),
    ("UPDATE trials SET data = zeroblob(8) WHERE t = 5", "record of 8 bytes, expected 16"),
    ("UPDATE meta SET value = 'x1' WHERE key = 'schema'", "has schema 'x1'"),
    ("UPDATE audits SET config = '{not json'", "stored configuration is not JSON"),
])
def test_impossible_rows_refused(tmp_path, sql, needle) -> None:
    store = _good_store(tmp_path)
    with sqlite3.connect(store) as c:
        c.execute(sql)
    with pytest.raises(StoreError, match=needle):
        with TrialStore(store, readonly=True) as st:
            st.records(st.audit()[0])


def test_member_seven_refused(tmp_path) -> None:
    from dpaudit.engine import run_audit

    store = _good_store(tmp_path)
    bad = np.array([7.0, 0.5], dtype="<f8").tobytes()
    with sqlite3.connect(store) as c:
        c.execute("UPDATE trials SET data = ? WHERE t = 3", (bad,))
    with pytest.raises(ValueError, match="trial 3 records member 7"):
        run_audit(ea.FAST, trials=400, seed=0, executor="inline", store=store, resume=True)


@pytest.mark.parametrize("argv,needle", [
    (["--resume"], "--resume continues the audit in a trial store"),
    (["--workers", "2"], "--workers applies to --executor process or ray"),
    (["--retries", "1000000000000"], "--retries must be in [0, 100]"),
    (["--trials", "1000000000000"], "trials (--trials) must be at most"),
])
def test_run_options_refused(capsys, argv, needle) -> None:
    from dpaudit.cli import main

    base = ["run", "engine_audits:FAST", "--trials", "10", "--executor", "inline"]
    assert main([*base, *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_run_non_factory_refused(capsys) -> None:
    from dpaudit.cli import main

    assert main(["run", "os:system", "--trials", "10"]) == 2
    assert "nor a zero-argument factory" in capsys.readouterr().err


def test_lock_holds_across_a_hard_link(tmp_path) -> None:
    """Issue 32: a hard link is another name of the same file with its own NAME.lock; the
    driver also locks the database file itself (flock is keyed by the file)."""
    store = tmp_path / "real.sqlite"
    execute(ea.FAST, trials=10, seed=0, executor="inline", store=store)
    (tmp_path / "other").mkdir()
    link = tmp_path / "other" / "hard.sqlite"
    os.link(store, link)
    _refused_while_held(store, link, "hard link", trials=20)
    run = execute(ea.FAST, trials=20, seed=0, executor="inline", store=link, resume=True)
    assert run.computed == 10  # the lock is gone with its holder; the 10 stored trials count
