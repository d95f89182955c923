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

Concurrency: a driver holds an exclusive ``flock`` on ``REAL.lock``, REAL the store's resolved
path (so a second driver reaching the store through a symlink or another relative path is
refused too; the file holds the driver's pid), and one on the database file itself (flock is
keyed by the file, not its name: a driver reaching the store through a hard link is refused
too; SQLite's own fcntl byte-range locks are independent of it).  The locks are released by
the operating system when the driver dies, even by SIGKILL, and are never inherited by
processes the driver forks (worker processes close them at fork).  A second driver on the
same store is refused with a clear error.  Readers (``dpaudit store info``,
:meth:`TrialStore.records`) need no lock.  A store holds one audit: opening it for a different
configuration is refused.

Safety: an existing SQLite database that is not a dpaudit trial store (other tables, no
``meta`` schema row) is refused before anything is written into it; a damaged file (random
bytes, truncation) raises :class:`StoreError` (an ``OSError``: one ``error:`` line on the
command line), and rows a store never holds (negative trial index, a record of the wrong size)
are refused on read.
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
from typing import Any, Literal

import numpy as np

from dpaudit.engine.game import TrialFailure

__all__ = ["TrialStore", "StoreInfo", "audit_id_of", "StoreLockedError", "StoreError"]

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


class StoreError(OSError):
    """The file is not a (healthy) dpaudit trial store."""


_TABLES = frozenset({"meta", "audits", "trials", "failures", "runs"})

#: lock descriptors held by this process; a forked child closes its copies (closing a copy
#: does not release the parent's flock, and the child never holds it)
_LOCK_FDS: set[int] = set()


def _close_lock_fds_in_child() -> None:
    for fd in list(_LOCK_FDS):
        try:
            os.close(fd)
        except OSError:
            pass
    _LOCK_FDS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_lock_fds_in_child)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


class _Guard:
    """Turns SQLite's errors on a damaged or foreign file into :class:`StoreError`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        if exc is None or not isinstance(exc, sqlite3.Error):
            return False
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise StoreError(f"trial store {self.path} is busy ({exc}); another process is "
                             f"writing to it") from None
        raise StoreError(f"trial store {self.path} is damaged or not a dpaudit trial store "
                         f"({exc}); move it aside and start a new --store") from None


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
        self._guard = _Guard(self.path)
        if readonly and not self.path.exists():
            raise OSError(f"no trial store at {self.path}")
        if not readonly and self.path.parent and not self.path.parent.exists():
            raise OSError(f"directory {self.path.parent} does not exist")
        if self.path.exists() and not self.path.is_file():
            raise OSError(f"trial store {self.path} is not a regular file")
        from dpaudit.output import note_input

        note_input(self.path)
        uri = f"file:{self.path}?mode=ro" if readonly else str(self.path)
        self._lock_fd: int | None = None
        self._db_lock_fd: int | None = None
        self.readonly = readonly
        try:
            self._db = sqlite3.connect(uri, uri=readonly, timeout=30.0,
                                       isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open trial store {self.path} ({exc})") from None
        try:
            with self._guard:
                self._check_foreign()
                if not readonly:
                    self._db.execute("PRAGMA journal_mode=WAL")
                    self._db.execute("PRAGMA synchronous=NORMAL")
                    self._db.executescript(_SCHEMA)
                    self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)",
                                     (str(SCHEMA_VERSION),))
                row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None or str(row[0]).strip() != str(SCHEMA_VERSION):
                raise StoreError(f"trial store {self.path} has schema "
                                 f"{None if row is None else str(row[0])[:40]!r}; this dpaudit "
                                 f"reads schema {SCHEMA_VERSION} only")
        except BaseException:
            self._db.close()
            raise

    def _check_foreign(self) -> None:
        """Refuse a database that is not a trial store before writing anything into it."""
        tables = {r[0] for r in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if not tables:
            if self.readonly:
                raise StoreError(f"{self.path} is not a dpaudit trial store (an empty file "
                                 f"or database)")
            return
        other = sorted(tables - _TABLES)
        has_meta = "meta" in tables and self._db.execute(
            "SELECT 1 FROM meta WHERE key='schema'").fetchone() is not None
        if other or not has_meta:
            shown = ", ".join(other[:5]) + (" ..." if len(other) > 5 else "")
            raise StoreError(f"{self.path} is an SQLite database but not a dpaudit trial store"
                             f"{f' (tables: {shown})' if other else ''}; refusing to write "
                             f"into it -- give --store a new file")

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> TrialStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        # the database first, then the locks: closing a descriptor of the database file drops
        # every POSIX (fcntl) lock this process holds on it, SQLite's included
        try:
            self._db.close()
        except sqlite3.Error:  # pragma: no cover - a damaged file
            pass
        self.release()

    def acquire(self) -> None:
        """Take the driver lock (``REAL.lock`` of the resolved path); StoreLockedError if
        another driver has it."""
        if self._lock_fd is not None:
            return
        import fcntl

        lock = f"{self.path.resolve()}.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            alive = not holder.isdigit() or _pid_alive(int(holder))
            why = (f"pid {holder}" if alive else
                   f"pid {holder}, which is no longer running: processes it started still "
                   f"hold {lock}; end them (e.g. fuser {lock}) and resume")
            raise StoreLockedError(f"trial store {self.path} is in use by another driver "
                                   f"({why}); wait for it to finish or use another "
                                   f"--store") from None
        # the database file itself, so that the lock holds across hard links (another name of
        # the same inode has another REAL.lock): flock is keyed by the file, not its name.
        # SQLite locks with fcntl byte ranges, which flock does not touch on local files; this
        # descriptor is opened while no transaction is open and closed after the connection
        # (closing it drops the process's fcntl locks on the file).  Not for network file
        # systems that emulate flock with fcntl (SQLite's WAL mode needs a local file anyway).
        try:
            dbfd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            os.close(fd)
            raise StoreError(f"trial store {self.path} cannot be opened to lock it "
                             f"({e.strerror or e})") from None
        try:
            fcntl.flock(dbfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(dbfd)
            os.close(fd)
            raise StoreLockedError(f"trial store {self.path} is in use by another driver "
                                   f"that reached the same file by another name (a hard "
                                   f"link); wait for it to finish or use another "
                                   f"--store") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd
        self._db_lock_fd = dbfd
        _LOCK_FDS.update((fd, dbfd))

    def release(self) -> None:
        for name in ("_db_lock_fd", "_lock_fd"):
            fd = getattr(self, name, None)
            if fd is not None:
                _LOCK_FDS.discard(fd)
                os.close(fd)  # closing the descriptor drops the flock
                setattr(self, name, None)

    # -- audits ----------------------------------------------------------------------------
    def audit(self) -> tuple[str, dict[str, Any], tuple[str, ...], str] | None:
        row = self._db.execute("SELECT audit_id, config, fields, version FROM audits "
                               "ORDER BY created LIMIT 1").fetchone()
        if row is None:
            return None
        try:
            cfg, fields = json.loads(row[1]), json.loads(row[2])
        except (TypeError, ValueError):
            raise StoreError(f"trial store {self.path}: the stored configuration is not JSON; "
                             f"the file is damaged or was not written by dpaudit") from None
        if not isinstance(cfg, dict) or not isinstance(fields, list) or not fields or \
                not all(isinstance(f, str) for f in fields):
            raise StoreError(f"trial store {self.path}: the stored configuration or field "
                             f"list is malformed")
        return str(row[0]), cfg, tuple(fields), str(row[3])

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

            keys = [k for k in _diff_keys(old_cfg, cfg)
                    if k not in ("identity", "versions", "declared")]
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
        try:
            t = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        except (TypeError, ValueError, OverflowError):
            raise StoreError(f"trial store {self.path} holds a trial index that is not an "
                             f"integer; the file is damaged") from None
        bad = [r for r in rows if not isinstance(r[1], bytes) or len(r[1]) != 8 * k]
        if bad:
            raise StoreError(f"trial store {self.path}: trial {bad[0][0]} holds a record of "
                             f"{len(bad[0][1]) if isinstance(bad[0][1], bytes) else '?'} bytes, "
                             f"expected {8 * k} ({k} numbers); the file is damaged")
        if t[0] < 0:
            raise StoreError(f"trial store {self.path} holds trial index {int(t[0])}; trial "
                             f"indices are >= 0 -- the file is damaged")
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
        from dpaudit.output import atomic_output

        with atomic_output(out, what="export", suffix=".parquet") as tmp:
            pq.write_table(table, tmp)
        return Path(out)


def _guarded(fn: Any) -> Any:
    import functools

    @functools.wraps(fn)
    def wrapper(self: TrialStore, *args: Any, **kwargs: Any) -> Any:
        with self._guard:
            return fn(self, *args, **kwargs)
    return wrapper


for _name in ("audit", "register", "trial_indices", "count", "write_many", "records",
              "failures", "start_run", "finish_run", "info", "to_parquet"):
    setattr(TrialStore, _name, _guarded(getattr(TrialStore, _name)))
