"""The trial engine: many runs of a mechanism, on one machine or a Ray cluster, with a durable
trial store and anytime-valid stopping.

Layers: a *game* describes one trial (:mod:`~dpaudit.engine.game`; e.g.
:class:`dpaudit.BlackBoxAudit`) -> an *executor* runs chunks of trials
(:mod:`~dpaudit.engine.executors`: inline, process pool, Ray) -> the *store* keeps them
(:mod:`~dpaudit.engine.store`, SQLite) -> estimators read them (:func:`run_audit`: the fixed-n
Clopper-Pearson audit or the sequential e-process of :mod:`dpaudit.estimators.sequential`).
Per-trial randomness is a pure function of (seed, t) (:mod:`~dpaudit.randomness`).

Ray is imported only inside this package, lazily, by the Ray executor.
"""

from dpaudit.engine.audit import AuditRun, EngineFacts, run_audit
from dpaudit.engine.executors import (
    EXECUTORS,
    Executor,
    InlineExecutor,
    ProcessExecutor,
    RayExecutor,
    make_executor,
)
from dpaudit.engine.game import ChunkResult, TrialFailure, TrialGame, run_chunk
from dpaudit.engine.runner import TrialRun, execute
from dpaudit.engine.store import StoreLockedError, TrialStore
from dpaudit.randomness import TrialStreams, trial_rng

__all__ = [
    "AuditRun", "EngineFacts", "run_audit",
    "execute", "TrialRun", "TrialGame", "TrialFailure", "ChunkResult",
    "run_chunk", "Executor", "InlineExecutor", "ProcessExecutor", "RayExecutor",
    "make_executor", "EXECUTORS", "TrialStore", "StoreLockedError", "TrialStreams", "trial_rng",
]
