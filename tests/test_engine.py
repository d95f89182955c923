"""Trial engine: reproducibility across executors / workers / chunking / restarts, the SQLite
store (resume, refusal of another configuration, driver lock), retried and reported failures,
and the Python API (run_audit, run_trials)."""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from dataclasses import dataclass

import numpy as np
import pytest
from scipy.special import ndtr

import engine_audits as ea
from dpaudit.engine import (
    StoreLockedError,
    TrialStore,
    TrialStreams,
    execute,
    run_audit,
    run_chunk,
    trial_rng,
)
from dpaudit.estimators.multi_run import multi_run
from dpaudit.estimators.sequential import first_crossing
from dpaudit.games.blackbox import BlackBoxAudit, run_trials
from needs import need


def _expected(audit: BlackBoxAudit, seed: int, n: int) -> np.ndarray:
    """Independent per-trial computation: a fresh Philox generator per trial."""
    return np.array([audit.run_trial(trial_rng(seed, t), t) for t in range(n)])


def test_streams_pure_function_of_seed_and_trial() -> None:
    s = TrialStreams(5)
    a = s.at(7).random(5)
    s.at(8).standard_normal(11)
    b = s.at(7).random(5)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, trial_rng(5, 7).random(5))
    # different trials and seeds give different streams
    assert not np.array_equal(a, trial_rng(5, 8).random(5))
    assert not np.array_equal(a, trial_rng(6, 7).random(5))
    # a trial that draws a lot never reaches the next trial's block
    big = trial_rng(5, 7).random(100_000)
    assert not np.isin(trial_rng(5, 8).random(4), big).any()


@pytest.mark.slow
def test_identical_across_executors_workers_chunking() -> None:
    want = _expected(ea.FAST, 11, 1500)
    runs = [execute(ea.FAST, trials=1500, seed=11, executor="inline"),
            execute(ea.FAST, trials=1500, seed=11, executor="inline", chunk_size=7),
            execute(ea.FAST, trials=1500, seed=11, executor="process", workers=2),
            execute(ea.FAST, trials=1500, seed=11, executor="process", workers=2,
                    chunk_size=61)]
    for r in runs:
        np.testing.assert_array_equal(r.records, want)
        assert r.ok.all() and not r.failures
    # the run_trials wrapper returns the same observations, and the same law as before
    obs = run_trials(ea.FAST, 1500, seed=11, workers=2, progress=False)
    np.testing.assert_array_equal(obs.score, want[:, 1])
    np.testing.assert_array_equal(obs.member, want[:, 0] > 0.5)


@pytest.mark.slow
def test_store_resume_computes_only_missing(tmp_path) -> None:
    path = tmp_path / "a.sqlite"
    want = _expected(ea.FAST, 3, 2000)
    r1 = execute(ea.FAST, trials=800, seed=3, executor="inline", store=path)
    assert (r1.computed, r1.reused) == (800, 0)
    # punch holes (as a killed driver would leave) and resume to a larger budget
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM trials WHERE t % 97 = 5")
    holes = len(range(5, 800, 97))
    r2 = execute(ea.FAST, trials=2000, seed=3, executor="process", workers=2, store=path,
                 resume=True)
    assert r2.reused == 800 - holes and r2.computed == 1200 + holes
    np.testing.assert_array_equal(r2.records, want)
    with TrialStore(path, readonly=True) as st:
        info = st.info()
        t, data = st.records(info.audit_id)
    assert info.trials == 2000 and info.max_trial == 1999 and info.missing_below_max == 0
    np.testing.assert_array_equal(t, np.arange(2000))  # no trial missing or duplicated
    np.testing.assert_array_equal(data, want)
    # a finished audit resumes with nothing to compute
    r3 = execute(ea.FAST, trials=2000, seed=3, executor="inline", store=path, resume=True)
    assert r3.computed == 0
    np.testing.assert_array_equal(r3.records, want)


def test_store_refuses_other_configuration_and_unasked_resume(tmp_path) -> None:
    path = tmp_path / "b.sqlite"
    execute(ea.FAST, trials=50, seed=1, executor="inline", store=path)
    with pytest.raises(ValueError, match="already holds 50 trials.*--resume"):
        execute(ea.FAST, trials=50, seed=1, executor="inline", store=path)
    with pytest.raises(ValueError, match=r"another version of this audit \(the "
                                         r"configuration differs in: seed\)"):
        execute(ea.FAST, trials=50, seed=2, executor="inline", store=path, resume=True)
    with pytest.raises(ValueError, match=r"differs in: game; the mechanism's parameters "
                                         r"changed \(.*GaussianCount\(sigma=1.0\) -> "
                                         r".*GaussianCount\(sigma=0.5\)"):
        execute(ea.FLAWED, trials=50, seed=1, executor="inline", store=path, resume=True)
    with TrialStore(path, readonly=True) as st:
        assert st.info().trials == 50


def test_driver_lock_refuses_second_driver(tmp_path) -> None:
    path = tmp_path / "c.sqlite"
    holder = TrialStore(path)
    holder.acquire()
    try:
        with pytest.raises(StoreLockedError, match="in use by another driver"):
            execute(ea.FAST, trials=20, seed=0, executor="inline", store=path)
    finally:
        holder.close()
    assert execute(ea.FAST, trials=20, seed=0, executor="inline", store=path).computed == 20


@pytest.mark.slow
def test_failures_retried_then_reported(tmp_path) -> None:
    n = 600
    # which trials fail: the mechanism's first draw (after the bit) is < 0.05
    fails = [t for t in range(n) if (g := trial_rng(9, t)) is not None
             and (g.random(), g.random())[1] < 0.05]
    assert 10 < len(fails) < 60
    r = execute(ea.FLAKY, trials=n, seed=9, executor="process", workers=2, retries=2,
                store=tmp_path / "f.sqlite")
    assert [f.trial for f in r.failures] == fails
    assert all(f.attempts == 3 and f.error.startswith("RuntimeError: simulated crash")
               for f in r.failures)
    assert r.ok.sum() == n - len(fails) and np.isnan(r.records[~r.ok]).all()
    with TrialStore(tmp_path / "f.sqlite", readonly=True) as st:
        assert [f.trial for f in st.failures(r.audit_id)] == fails
    # the API reports them; the in-memory wrapper raises naming the first one
    ar = run_audit(ea.FLAKY, trials=n, seed=9, executor="inline", claimed_epsilon=1.0)
    assert [f.trial for f in ar.failures] == fails and ar.observations.n == n - len(fails)
    # the fixed-n audit keeps failed trials as an output scored below every success, with
    # their secret bit (the first draw of their stream)
    member = np.array([trial_rng(9, t).random() < 0.5 for t in range(n)])
    score = r.records[:, 1].copy()
    score[fails] = np.nextafter(np.nanmin(score), -np.inf)
    want = multi_run(member, score, delta=0.0, confidence=0.95, seed=9)
    assert ar.result.epsilon == want.epsilon
    assert ar.result.settings["failed_trials"] == "scored below every success"
    np.testing.assert_array_equal(member[r.ok], ar.observations.member)
    np.testing.assert_array_equal(ea.FLAKY.secrets(9, np.arange(n)), member)
    assert ea.FLAKY.secret(9, 5) == member[5]
    # the sequential audit keeps them in the sequence (NaN score: outside every betting set);
    # the Gaussian count is not (1, 0)-DP, so it stops with a violation
    sq = run_audit(ea.FLAKY, trials=n, seed=9, executor="inline", claimed_epsilon=1.0,
                   sequential=True)
    stop = first_crossing(member, np.where(r.ok, r.records[:, 1], np.nan), 1.0, 0.0, 0.95)
    assert sq.violation and sq.sequential.stopping_trial == sq.run.stopped_at == stop
    assert sq.sequential.n == stop and sq.run.failures
    with pytest.raises(ValueError, match=f"trial {fails[0]} failed"):
        run_trials(ea.FLAKY, n, seed=9, workers=1, progress=False)


def test_run_chunk_retries_transient_failures() -> None:
    calls: dict[int, int] = {}

    def mech(d, rng):
        k = len(calls)
        calls[k] = 1
        if k % 3 == 0:  # every third call fails once; the retry succeeds
            raise OSError("transient")
        return float(len(d))

    audit = BlackBoxAudit(mech, lambda rng: ([], [1]), float)
    res = run_chunk(audit, 0, 0, 20, retries=1)
    assert res.ok.all() and not res.failures


@pytest.mark.slow
def test_run_audit_fixed_n_matches_multi_run_and_mechanism() -> None:
    ar = run_audit(ea.FAST, trials=4000, seed=2, executor="process", workers=2,
                   claimed_epsilon=1.0, delta=1e-5)
    want = _expected(ea.FAST, 2, 4000)
    r = multi_run(want[:, 0] > 0.5, want[:, 1], delta=1e-5, confidence=0.95)
    assert ar.result.epsilon == r.epsilon and ar.result.method == "multi_run"
    # the engine samples the right law: the count with sigma = 1 has MAP error Phi(-1/2)
    err = np.mean((want[:, 1] > 10.5) != (want[:, 0] > 0.5))
    e = float(ndtr(-0.5))
    assert abs(err - e) <= 4 * math.sqrt(e * (1 - e) / 4000)
    assert ar.violation == (r.epsilon > 1.0)


def test_run_audit_sequential_stops_early_and_reproducibly(tmp_path) -> None:
    kw = dict(trials=20_000, seed=4, sequential=True, claimed_epsilon=1.0, delta=1e-5)
    a = run_audit(ea.FLAWED, executor="inline", **kw)
    b = run_audit(ea.FLAWED, executor="process", workers=2, store=tmp_path / "s.sqlite", **kw)
    assert a.violation and b.violation
    assert a.sequential.stopping_trial == b.sequential.stopping_trial < 1000
    assert a.observations.n == a.sequential.stopping_trial
    assert b.run.computed < 2000  # stopped long before the budget
    np.testing.assert_array_equal(a.observations.score, b.observations.score)
    assert a.result.method == "sequential" and a.result.p_value <= 0.05


def test_engine_bad_input(tmp_path) -> None:
    with pytest.raises(ValueError, match="executor"):
        execute(ea.FAST, trials=10, seed=0, executor="gpu")
    with pytest.raises(ValueError, match="trials"):
        execute(ea.FAST, trials=0, seed=0)
    with pytest.raises(ValueError, match="seed"):
        execute(ea.FAST, trials=10, seed=-1)
    with pytest.raises(ValueError, match="claimed_epsilon"):
        run_audit(ea.FAST, trials=10, seed=0, sequential=True)
    with pytest.raises(ValueError, match="picklable"):
        execute(BlackBoxAudit(lambda d, r: 0.0, lambda r: ([], [1]), float), trials=10,
                seed=0, executor="process", workers=2)
    with pytest.raises(OSError, match="no trial store"):
        TrialStore(tmp_path / "missing.sqlite", readonly=True)
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(OSError, match="not a dpaudit trial store"):
        TrialStore(tmp_path / "junk.sqlite")


def test_parquet_export(tmp_path) -> None:
    pq = need("pyarrow.parquet")
    path = tmp_path / "p.sqlite"
    r = execute(ea.FAST, trials=100, seed=1, executor="inline", store=path)
    with TrialStore(path, readonly=True) as st:
        out = st.to_parquet(tmp_path / "p.parquet")
    table = pq.read_table(out)
    np.testing.assert_array_equal(table.column("trial").to_numpy(), np.arange(100))
    np.testing.assert_array_equal(table.column("score").to_numpy(), r.records[:, 1])
    assert table.schema.metadata[b"dpaudit_audit_id"].decode() == r.audit_id


def _sphere_mechanism(canaries, rng):
    return canaries.sum(axis=0) + 0.5 * rng.standard_normal(canaries.shape[1])


def _dot_score(output, canaries):
    return canaries @ output


def test_lidp_game_on_the_engine() -> None:
    from dpaudit.games.lidp import LiDPTrialGame, UnitSphereCanaries, lidp_game

    sampler = UnitSphereCanaries(20).sample
    a = lidp_game(_sphere_mechanism, sampler, _dot_score, 60, 4, 3, rng=5, executor="inline")
    b = lidp_game(_sphere_mechanism, sampler, _dot_score, 60, 4, 3, rng=5, executor="process",
                  workers=2)
    np.testing.assert_array_equal(a.x_scores, b.x_scores)
    np.testing.assert_array_equal(a.y_scores, b.y_scores)
    # trial 9 recomputed by hand from its own stream (Pillutla et al. Algorithm 1, add/remove)
    g = trial_rng(5, 9)
    can = sampler(g, 7)
    x = _dot_score(_sphere_mechanism(can[:4], g), can[:4])
    y = _dot_score(_sphere_mechanism(can[:3], g), can[4:])
    np.testing.assert_array_equal(a.x_scores[9], x)
    np.testing.assert_array_equal(a.y_scores[9], y)
    assert LiDPTrialGame(_sphere_mechanism, sampler, _dot_score, 4, 3).fields[4] == "y_0"
    # inserted canaries score about 1 higher than fresh ones (<c, c> = 1)
    assert a.x_scores.mean() - a.y_scores.mean() > 0.5
    with pytest.raises(ValueError, match="integer seed"):
        lidp_game(_sphere_mechanism, sampler, _dot_score, 5, 2, rng=np.random.default_rng(0),
                  executor="inline")


def test_store_writes_runs_of_trials_as_rows(tmp_path, monkeypatch) -> None:
    """write_many inserts each contiguous run of successful trials from one blob (cut by SQLite
    into one row per trial): holes for failures, runs split across statements, failures that
    later succeed are cleared."""
    import dpaudit.engine.store as store_mod
    from dpaudit.engine.game import ChunkResult, TrialFailure

    monkeypatch.setattr(store_mod, "_MAX_BLOB", 5 * 3 * 8)  # at most 5 trials per statement
    rng = np.random.default_rng(0)
    rec = rng.standard_normal((40, 3))
    ok = np.ones(40, bool)
    ok[[0, 7, 8, 23, 39]] = False
    fails = tuple(TrialFailure(int(t) + 100, 3, "E: x") for t in np.flatnonzero(~ok))
    with TrialStore(tmp_path / "w.sqlite") as st:
        aid = st.register({"w": 1}, ("a", "b", "c"), "v")
        st.write_many(aid, [ChunkResult(100, 125, rec[:25], ok[:25], fails[:4]),
                            (125, rec[25:], ok[25:], fails[4:])])
        t, data = st.records(aid)
        np.testing.assert_array_equal(t, 100 + np.flatnonzero(ok))
        np.testing.assert_array_equal(data, rec[ok])
        assert [f.trial for f in st.failures(aid)] == [100, 107, 108, 123, 139]
        # trials 107, 108 succeed in a later run; writing trial 101 again changes nothing
        st.write(aid, 107, rec[[7, 8]], np.ones(2, bool))
        st.write(aid, 101, rec[[5]] + 1.0, np.ones(1, bool))
        t, data = st.records(aid)
        assert [f.trial for f in st.failures(aid)] == [100, 123, 139]
        ok[[7, 8]] = True
        np.testing.assert_array_equal(t, 100 + np.flatnonzero(ok))
        np.testing.assert_array_equal(data, rec[ok])


@dataclass(frozen=True)
class _RaggedGame:
    """Trial 3 returns one number too many; trial 5 raises."""

    fields = ("x", "y")

    def run_trial(self, rng: np.random.Generator, t: int) -> tuple[float, ...]:
        if t == 5:
            raise KeyError("five")
        return (rng.random(), float(t), 0.0) if t == 3 else (rng.random(), float(t))

    def config(self) -> dict[str, str]:
        return {"kind": "ragged"}


def test_run_chunk_reports_wrong_sized_records() -> None:
    res = run_chunk(_RaggedGame(), 1, 0, 8, retries=1)
    assert [(f.trial, f.attempts) for f in res.failures] == [(3, 1), (5, 2)]
    assert "returned 3 numbers, expected 2" in res.failures[0].error
    assert res.failures[1].error == "KeyError: 'five'"
    good = [0, 1, 2, 4, 6, 7]
    np.testing.assert_array_equal(res.ok, np.isin(np.arange(8), good))
    np.testing.assert_array_equal(res.records[good, 0],
                                  [trial_rng(1, t).random() for t in good])
    np.testing.assert_array_equal(res.records[good, 1], good)
    assert np.isnan(res.records[[3, 5]]).all()


@pytest.mark.slow
def test_failures_as_output_prevent_a_false_violation() -> None:
    """A mechanism that fails more often without the canary (engine_audits.FAILS) is exactly
    ln(2.5)-DP with failure as an output, ln(3)-DP conditioned on success.  The fixed-n audit
    of all trials (failures scored at the bottom) stays below the claim; the same estimator on
    the successful trials only would claim a violation (seeded: 20,000 trials)."""
    claim = math.log(2.5)
    ar = run_audit(ea.FAILS, trials=20_000, seed=1, executor="inline", retries=0,
                   claimed_epsilon=claim)
    n_fail = len(ar.failures)
    assert abs(n_fail / 20_000 - 0.5) < 0.02  # (0.4 + 0.6) / 2
    assert not ar.violation and ar.result.epsilon < claim
    skipped = multi_run(ar.observations.member, ar.observations.score, delta=0.0,
                        confidence=0.95, seed=1)
    assert skipped.epsilon > claim  # what auditing only the successes would have claimed
    # the sequential audit keeps the failures in the sequence and finds no violation either
    sq = run_audit(ea.FAILS, trials=5000, seed=1, executor="inline", retries=0,
                   claimed_epsilon=claim, sequential=True)
    assert not sq.violation and sq.sequential.n == 5000


def test_finished_prefix_scan() -> None:
    from dpaudit.engine.runner import _prefix

    done = np.ones(200_000, bool)
    assert _prefix(done, 0) == 200_000 and _prefix(done, 123) == 200_000
    for hole in (0, 5, 65_535, 65_536, 65_537, 199_999):
        d = done.copy()
        d[hole] = False
        d[hole + 1:] = np.random.default_rng(hole).random(d.size - hole - 1) < 0.5
        assert _prefix(d, 0) == hole == np.argmin(d)


@dataclass(frozen=True)
class _BufferGame:
    """Returns the same NumPy buffer every trial (the engine must copy it)."""

    buf: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(2))
    fields = ("t", "u")

    def run_trial(self, rng: np.random.Generator, t: int) -> np.ndarray:
        self.buf[0], self.buf[1] = t, rng.random()
        return self.buf

    def config(self) -> dict[str, str]:
        return {"kind": "buffer"}


def test_run_chunk_copies_reused_buffers() -> None:
    res = run_chunk(_BufferGame(), 3, 10, 15)
    np.testing.assert_array_equal(res.records[:, 0], np.arange(10, 15))
    np.testing.assert_array_equal(res.records[:, 1], [trial_rng(3, t).random() for t in
                                                      range(10, 15)])
