"""Per-trial random streams: the ``"trial"`` purpose of :mod:`dpaudit.randomness`."""

from dpaudit.randomness import TrialStreams, philox_key, trial_rng

__all__ = ["philox_key", "TrialStreams", "trial_rng"]
