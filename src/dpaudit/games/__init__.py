"""Audit games: the bits-transmission framework (one run / many runs), the black-box parallel
multi-run driver, and end-to-end audits of simulated mechanisms."""

from dpaudit.games.audit import (
    GameFacts,
    OneRunReport,
    available_methods,
    default_family,
    demo_dpsgd,
    multi_run_audit,
    one_run_audit,
)
from dpaudit.games.bits import NULL, BitsTranscript, CanaryGenerator, partition_runs, transmit
from dpaudit.games.blackbox import BlackBoxAudit, run_trials, trial_rng
from dpaudit.games.lidp import LiDPScores, lidp_game  # Pillutla et al.

__all__ = [
    "CanaryGenerator", "BitsTranscript", "transmit", "partition_runs", "NULL",
    "BlackBoxAudit", "run_trials", "trial_rng", "OneRunReport", "GameFacts", "one_run_audit",
    "default_family", "multi_run_audit", "demo_dpsgd", "available_methods",
]
__all__ += ["LiDPScores", "lidp_game"]
