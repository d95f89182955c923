"""The trial store: one SQLite file (standard library) per audit, in WAL mode.

Layout (schema version 1):

* ``meta(key, value)`` -- schema version;
* ``audits(audit_id, config, fields, version, created)`` -- the audit's full configuration
  (JSON) and the dpaudit version that produced it, recorded once; ``audit_id`` is the SHA-256
  of the canonical configuration JSON (first 16 hex digits);
* ``trials(audit_id, t, data)`` -- one row per trial, primary key (audit_id, t), ``data`` the
  trial's record as little-endian float64 (``len(fields)`` numbers);
* ``failures(audit_id, t, attempts, error)`` -- trials that failed after their retries;
* ``runs(audit_id, started, finished, executor, workers, computed)`` -- one row per driver run.

Durability: trials are written in batches, one transaction per batch (``INSERT OR IGNORE``, so
a trial index is never stored twice), with ``synchronous=NORMAL`` in WAL mode: a driver killed
with SIGKILL at any moment loses at most the batch in flight; the file stays consistent and a
new run computes only the missing trials.

Concurrency: a driver holds an exclusive ``flock`` on ``PATH.lock`` (released by the operating
system when the process dies, even by SIGKILL); a second driver on the same store is refused
with a clear error.  Readers (``dpaudit store info``, :meth:`TrialStore.observations`) need no
lock.  A store holds one audit: opening it for a different configuration is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.engine.game import TrialFailure

__all__ = ["TrialStore", "StoreInfo", "audit_id_of", "StoreLockedError"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audits (
    audit_id TEXT PRIMARY KEY, config TEXT NOT NULL, fields TEXT NOT NULL,
    version TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    audit_id TEXT NOT NULL, t INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (audit_id, t)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS failures (
    audit_id TEXT NOT NULL, t INTEGER NOT NULL, attempts INTEGER NOT NULL, error TEXT NOT NULL,
    PRIMARY KEY (audit_id, t)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    audit_id TEXT NOT NULL, started REAL NOT NULL, finished REAL, executor TEXT,
    workers INTEGER, computed INTEGER);
"""


#: rows t0 .. t0+m-1 of one run of trials from one blob (?4) of m records of ?5 bytes each
_INSERT_RUN = ("WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?2) "
               "INSERT OR IGNORE INTO trials SELECT ?1, ?3 + i, substr(?4, i * ?5 + 1, ?5) "
               "FROM s")
#: at most this many bytes of records per INSERT statement (far below SQLite's 1e9 limit)
_MAX_BLOB = 1 << 23


class StoreLockedError(ValueError):
    """Another driver holds the store."""


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def audit_id_of(config: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StoreInfo:
    path: str
    audit_id: str | None
    config: dict[str, Any] | None
    fields: tuple[str, ...]
    version: str | None
    trials: int
    failures: int
    max_trial: int | None
    missing_below_max: int
    runs: int
    size_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "audit_id": self.audit_id, "config": self.config,
                "fields": list(self.fields), "version": self.version, "trials": self.trials,
                "failures": self.failures, "max_trial": self.max_trial,
                "missing_below_max": self.missing_below_max, "runs": self.runs,
                "size_bytes": self.size_bytes}


def _diff_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if canonical_json(a.get(k)) !=
                  canonical_json(b.get(k)))


class TrialStore:
    """A SQLite trial store (see module).  Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False) -> None:
        self.path = Path(path)
        if readonly and not self.path.exists():
            raise OSError(f"no trial store at {self.path}")
        if not readonly and self.path.parent and not self.path.parent.exists():
            raise OSError(f"directory {self.path.parent} does not exist")
        uri = f"file:{self.path}?mode=ro" if readonly else str(self.path)
        try:
            self._db = sqlite3.connect(uri, uri=readonly, timeout=30.0,
                                       isolation_level=None, check_same_thread=False)
            if not readonly:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(_SCHEMA)
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)",
                                 (str(SCHEMA_VERSION),))
            row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise OSError(f"{self.path} is not a dpaudit trial store ({exc})") from None
        if row is None or int(row[0]) != SCHEMA_VERSION:
            raise OSError(f"{self.path}: unsupported trial-store schema {row}")
        self._lock_fd: int | None = None
        self.readonly = readonly

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> TrialStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.release()
        self._db.close()

    def acquire(self) -> None:
        """Take the driver lock (``PATH.lock``); StoreLockedError if another driver has it."""
        if self._lock_fd is not None:
            return
        import fcntl

        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise StoreLockedError(f"trial store {self.path} is in use by another driver "
                                   f"(pid {holder}); wait for it to finish or use another "
                                   f"--store") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = None

    # -- audits ----------------------------------------------------------------------------
    def audit(self) -> tuple[str, dict[str, Any], tuple[str, ...], str] | None:
        row = self._db.execute("SELECT audit_id, config, fields, version FROM audits "
                               "ORDER BY created LIMIT 1").fetchone()
        if row is None:
            return None
        return row[0], json.loads(row[1]), tuple(json.loads(row[2])), row[3]

    def register(self, config: Mapping[str, Any], fields: Iterable[str], version: str) -> str:
        """Record the audit (first run) or check that ``config`` is the stored one."""
        cfg = json.loads(canonical_json(config))
        aid = audit_id_of(cfg)
        existing = self.audit()
        if existing is None:
            self._db.execute("INSERT INTO audits VALUES (?, ?, ?, ?, ?)",
                             (aid, canonical_json(cfg), json.dumps(list(fields)), version,
                              time.time()))
            return aid
        old_id, old_cfg, _, old_version = existing
        if old_id != aid:
            from dpaudit.engine.identity import describe_changes

            keys = [k for k in _diff_keys(old_cfg, cfg) if k not in ("identity", "versions")]
            what = describe_changes(old_cfg, cfg)
            if keys:
                what.insert(0, f"the configuration differs in: {', '.join(keys)}")
            raise ValueError(f"trial store {self.path} holds audit {old_id} of another "
                             f"version of this audit ({'; '.join(what)}); refusing to mix "
                             f"trials -- use another --store path (or move the old store "
                             f"aside)")
        if old_version != version:
            raise ValueError(f"trial store {self.path} was written by dpaudit {old_version}, "
                             f"this is {version}; refusing to mix trials -- use another --store")
        return aid

    # -- trials ----------------------------------------------------------------------------
    def trial_indices(self, audit_id: str) -> np.ndarray:
        cur = self._db.execute("SELECT t FROM trials WHERE audit_id=? ORDER BY t", (audit_id,))
        return np.fromiter((r[0] for r in cur), dtype=np.int64)

    def count(self, audit_id: str) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM trials WHERE audit_id=?",
                                    (audit_id,)).fetchone()[0])

    def write(self, audit_id: str, start: int, records: np.ndarray, ok: np.ndarray,
              failures: Iterable[TrialFailure] = ()) -> None:
        """One transaction: the ok rows of trials start.. and the failures."""
        self.write_many(audit_id, [(start, records, ok, tuple(failures))])

    def write_many(self, audit_id: str, chunks: Iterable[Any]) -> None:
        """One transaction for several chunks (ChunkResult or (start, records, ok, failures));
        ``INSERT OR IGNORE``: a trial index already stored is never stored twice.

        Each contiguous run of successful trials is inserted by one statement: the run's
        records go in as a single little-endian float64 blob and SQLite cuts it into one row
        per trial (a recursive CTE over i with ``substr(blob, i w + 1, w)``), so Python builds
        no per-trial tuple and binds no per-trial parameters -- about 3x cheaper per row than
        ``executemany`` over per-row tuples (benchmarks/trials.py, line [2]).
        """
        runs: list[tuple[int, int, bytes, int]] = []
        fails: list[tuple[str, int, int, str]] = []
        for c in chunks:
            start, records, ok, failures = (c if isinstance(c, tuple) else
                                            (c.start, c.records, c.ok, c.failures))
            rec = np.ascontiguousarray(records, dtype="<f8")
            if rec.shape[0] == 0:
                continue
            w = rec.shape[1] * 8
            step = max(1, _MAX_BLOB // w)
            ok = np.asarray(ok, dtype=bool)
            good = np.flatnonzero(ok)
            if good.size:
                cut = np.flatnonzero(np.diff(good) != 1) + 1
                lo = np.concatenate(([good[0]], good[cut]))
                hi = np.concatenate((good[cut - 1], [good[-1]])) + 1
                for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
                    for s in range(a, b, step):
                        e = min(s + step, b)
                        runs.append((start + s, e - s, rec[s:e].tobytes(), w))
            fails += [(audit_id, f.trial, f.attempts, f.error) for f in failures]
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for t0, m, blob, w in runs:
                db.execute(_INSERT_RUN, (audit_id, m, t0, blob, w))
            if fails:
                db.executemany("INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?)", fails)
            if runs and db.execute("SELECT 1 FROM failures WHERE audit_id=? LIMIT 1",
                                   (audit_id,)).fetchone():
                # trials that failed in an earlier run and succeeded now
                db.executemany("DELETE FROM failures WHERE audit_id=? AND t >= ? AND t < ?",
                               [(audit_id, t0, t0 + m) for t0, m, _, _ in runs])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def records(self, audit_id: str, stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(trial indices, records (n, len(fields))) in trial order, optionally t < stop."""
        meta = self.audit()
        k = len(meta[2]) if meta else 0
        q = "SELECT t, data FROM trials WHERE audit_id=?"
        args: tuple[Any, ...] = (audit_id,)
        if stop is not None:
            q += " AND t < ?"
            args += (int(stop),)
        rows = self._db.execute(q + " ORDER BY t", args).fetchall()
        if not rows:
            return np.empty(0, np.int64), np.empty((0, k))
        t = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        data = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f8").reshape(len(rows), k)
        return t, data

    def failures(self, audit_id: str) -> list[TrialFailure]:
        rows = self._db.execute("SELECT t, attempts, error FROM failures WHERE audit_id=? "
                                "ORDER BY t", (audit_id,)).fetchall()
        return [TrialFailure(int(t), int(a), str(e)) for t, a, e in rows]

    def start_run(self, audit_id: str, executor: str, workers: int) -> int:
        cur = self._db.execute("INSERT INTO runs VALUES (?, ?, NULL, ?, ?, 0)",
                               (audit_id, time.time(), executor, workers))
        return int(cur.lastrowid or 0)

    def finish_run(self, run_id: int, computed: int) -> None:
        self._db.execute("UPDATE runs SET finished=?, computed=? WHERE rowid=?",
                         (time.time(), computed, run_id))

    # -- reports ---------------------------------------------------------------------------
    def info(self) -> StoreInfo:
        meta = self.audit()
        size = sum(os.path.getsize(p) for p in (self.path, Path(f"{self.path}-wal"))
                   if os.path.exists(p))
        if meta is None:
            return StoreInfo(str(self.path), None, None, (), None, 0, 0, None, 0, 0, size)
        aid, cfg, fields, version = meta
        n, mx = self._db.execute("SELECT COUNT(*), MAX(t) FROM trials WHERE audit_id=?",
                                 (aid,)).fetchone()
        nf = self._db.execute("SELECT COUNT(*) FROM failures WHERE audit_id=?",
                              (aid,)).fetchone()[0]
        runs = self._db.execute("SELECT COUNT(*) FROM runs WHERE audit_id=?",
                                (aid,)).fetchone()[0]
        missing = (int(mx) + 1 - int(n)) if mx is not None else 0
        return StoreInfo(str(self.path), aid, cfg, fields, version, int(n), int(nf),
                         None if mx is None else int(mx), missing, int(runs), size)

    def to_parquet(self, out: str | os.PathLike[str]) -> Path:
        """Export the trials as a Parquet table (columns ``trial`` + the fields); needs the
        ``parquet`` extra (pyarrow)."""
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError("Parquet export needs pyarrow: pip install 'dpaudit[parquet]'") \
                from None
        meta = self.audit()
        if meta is None:
            raise ValueError(f"trial store {self.path} holds no audit")
        aid, cfg, fields, version = meta
        t, data = self.records(aid)
        cols = {"trial": pa.array(t)}
        for j, name in enumerate(fields):
            cols[name] = pa.array(data[:, j])
        table = pa.table(cols).replace_schema_metadata(
            {"dpaudit_audit_id": aid, "dpaudit_config": canonical_json(cfg),
             "dpaudit_version": version})
        out = Path(out)
        pq.write_table(table, out)
        return out
