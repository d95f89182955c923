"""Picklable audits for the trial-engine tests (imported by worker processes and by
subprocess drivers: keep it dependency-free beyond dpaudit)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.games.blackbox import BlackBoxAudit
from dpaudit.games.examples import CountNeighbours, GaussianCount, identity_score


@dataclass(frozen=True)
class SlowGaussianCount:
    """GaussianCount that sleeps ``pause`` seconds per run (stands in for training)."""

    sigma: float = 1.0
    pause: float = 0.002

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        time.sleep(self.pause)
        return float(len(dataset) + self.sigma * rng.standard_normal())


@dataclass(frozen=True)
class FlakyMechanism:
    """Raises when its first draw is below ``rate`` (deterministic per trial)."""

    rate: float = 0.05

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        u = rng.random()
        if u < self.rate:
            raise RuntimeError(f"simulated crash (u={u:.4f})")
        return float(len(dataset) + rng.standard_normal())


@dataclass(frozen=True)
class RandomizedResponse:
    """eps-DP randomised response on the canary bit: a tight null for coverage tests."""

    epsilon: float = 1.0

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        bit = float(len(dataset) > 0 and dataset[-1] == "canary")
        keep = rng.random() < np.exp(self.epsilon) / (1 + np.exp(self.epsilon))
        return bit if keep else 1.0 - bit


SLOW = BlackBoxAudit(SlowGaussianCount(1.0, 0.002), CountNeighbours(10), identity_score)
FLAKY = BlackBoxAudit(FlakyMechanism(0.05), CountNeighbours(10), identity_score)
FAST = BlackBoxAudit(GaussianCount(1.0), CountNeighbours(10), identity_score)
FLAWED = BlackBoxAudit(GaussianCount(0.5), CountNeighbours(10), identity_score)
RR = BlackBoxAudit(RandomizedResponse(1.0), CountNeighbours(3), identity_score)
SLOWER_NO_PAUSE = BlackBoxAudit(SlowGaussianCount(1.0, 0.0), CountNeighbours(10), identity_score)


@dataclass(frozen=True)
class DieOnceGaussianCount:
    """GaussianCount (same draws) whose worker process SIGKILLs itself, once per ``marker``
    file, at the first trial whose noise exceeds ``z`` (about 1 trial in 740 for z = 3): a
    worker death mid-run, without a subprocess driver or timing."""

    marker: str
    sigma: float = 1.0
    z: float = 3.0

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        noise = rng.standard_normal()
        if noise > self.z:
            import os
            import signal

            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        return float(len(dataset) + self.sigma * noise)


@dataclass(frozen=True)
class FailsMoreWithoutCanary:
    """Outputs A (1.0), B (0.0) or fails (raises): on D1 (canary in) A .5, B .1, fail .4; on D0
    A .2, B .2, fail .6.  With failure as an output this is exactly ln(2.5)-DP (ratios 2.5, 2,
    1.5); conditioned on success it is ln(3)-DP (B: 0.5 / (1/6)) -- the case where auditing
    only successful trials claims a false violation."""

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        canary = len(dataset) > 0 and dataset[-1] == "canary"
        u = rng.random()
        a, b = (0.5, 0.6) if canary else (0.2, 0.4)
        if u < a:
            return 1.0
        if u < b:
            return 0.0
        raise RuntimeError("the mechanism failed")


FAILS = BlackBoxAudit(FailsMoreWithoutCanary(), CountNeighbours(3), identity_score)


@dataclass(frozen=True)
class DiesOnDraw:
    """Gaussian count whose worker process exits (os._exit) when its first draw after the
    secret bit is below ``rate``: a deterministic crash of the interpreter on a few trials."""

    rate: float = 0.0007

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        if rng.random() < self.rate:
            import os

            os._exit(7)
        return float(len(dataset) + rng.standard_normal())


@dataclass(frozen=True)
class ExitsOnDraw:
    """Calls sys.exit(3) when its first draw is below ``rate`` (1.0: every trial)."""

    rate: float = 1.0

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        if rng.random() < self.rate:
            import sys

            sys.exit(3)
        return float(len(dataset) + rng.standard_normal())


@dataclass(frozen=True)
class MarkupError:
    """Fails every tenth trial (by its first draw) with rich markup in the message."""

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        if rng.random() < 0.1:
            raise RuntimeError("[/red] closing tag [bold]not markup[/bold]")
        return float(len(dataset) + rng.standard_normal())


@dataclass(frozen=True)
class HangsOnDraw:
    """Sleeps ``hang`` seconds when its first draw is below ``rate`` (a trial that never
    returns, in test time)."""

    rate: float = 0.02
    hang: float = 30.0

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        if rng.random() < self.rate:
            time.sleep(self.hang)
        return float(len(dataset) + rng.standard_normal())


DIES = BlackBoxAudit(DiesOnDraw(), CountNeighbours(10), identity_score)
EXITS = BlackBoxAudit(ExitsOnDraw(1.0), CountNeighbours(10), identity_score)
EXITS_SOME = BlackBoxAudit(ExitsOnDraw(0.05), CountNeighbours(10), identity_score)
MARKUP = BlackBoxAudit(MarkupError(), CountNeighbours(10), identity_score)
HANGS = BlackBoxAudit(HangsOnDraw(), CountNeighbours(10), identity_score)
SLOW20 = BlackBoxAudit(SlowGaussianCount(1.0, 0.02), CountNeighbours(10), identity_score)


def env_noise_mechanism(dataset: Any, rng: np.random.Generator) -> float:
    """Reads its noise scale from the environment at call time (DPAUDIT_TEST_NOISE_SCALE):
    the code fingerprint cannot see a change; ``--identity-env`` can."""
    import os

    scale = float(os.environ.get("DPAUDIT_TEST_NOISE_SCALE", "1.0"))
    return float(len(dataset) + scale * rng.standard_normal())


ENV_NOISE = BlackBoxAudit(env_noise_mechanism, CountNeighbours(), identity_score)
