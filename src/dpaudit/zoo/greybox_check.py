"""The grey-box pass of a zoo entry: replay each candidate pair with identical randomness and
compare what reaches the library's noise primitives (:mod:`dpaudit.greybox`).

Available for the libraries whose primitives are reached through Python (diffprivlib; the
Python layers of SmartNoise SQL and PipelineDP, whose noise itself is compiled); OpenDP and
PyDP are compiled end to end and stay black-box.  Each pair costs two runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.greybox.recorder import Primitive
from dpaudit.greybox.replay import GreyboxFinding, replay
from dpaudit.zoo.entry import ZooEntry, tested_claim

__all__ = ["GreyboxSummary", "greybox_entry", "HOOKS"]


def _diffprivlib() -> tuple[Primitive, ...]:
    from dpaudit.greybox.diffprivlib_hooks import primitives

    return primitives()


def _smartnoise() -> tuple[Primitive, ...]:
    from dpaudit.greybox.python_hooks import smartnoise_primitives

    return smartnoise_primitives()


def _pipelinedp() -> tuple[Primitive, ...]:
    from dpaudit.greybox.python_hooks import pipelinedp_primitives

    return pipelinedp_primitives()


HOOKS: dict[str, Callable[[], tuple[Primitive, ...]]] = {
    "diffprivlib": _diffprivlib, "smartnoise-sql": _smartnoise, "pipeline-dp": _pipelinedp}


@dataclass(frozen=True)
class GreyboxSummary:
    findings: tuple[tuple[str, GreyboxFinding], ...]   # (pair label, finding)
    runs: int
    seconds: float
    primitive_calls: int

    def describe(self) -> str:
        if not self.findings:
            return f"none ({self.runs} runs, {self.primitive_calls} primitive calls)"
        label, f = self.findings[0]
        more = f" (+{len(self.findings) - 1})" if len(self.findings) > 1 else ""
        if f.kind == "sensitivity":
            return (f"{f.kind} at `{f.site}`: moved {f.measured:.6g} > declared "
                    f"{f.declared:.6g}{more}")
        return f"{f.kind} at `{f.site}`: {f.detail}{more}"


@dataclass(frozen=True)
class _Seeded:
    mechanism: Any

    def __call__(self, data: Any, seed: int) -> Any:
        return self.mechanism(data, np.random.default_rng(seed))


def greybox_entry(entry: ZooEntry, *, seed: int = 0) -> GreyboxSummary | None:
    """Replay every usable pair of ``entry`` (None when its library has no Python hooks)."""
    hooks = HOOKS.get(entry.library)
    if hooks is None:
        return None
    prims = hooks()
    start = time.perf_counter()
    found: list[tuple[str, GreyboxFinding]] = []
    runs = calls = 0
    for pair in entry.pairs:
        claim = tested_claim(entry, pair)
        if claim is None:
            continue
        fs, t0, t1 = replay(_Seeded(entry.mechanism), pair.d0, pair.d1, prims, seed=seed,
                            claimed_epsilon=claim[0] if claim[1] == 0 else None)
        runs += 2
        calls += len(t0.calls) + len(t1.calls)
        found += [(pair.label, f) for f in fs]
    return GreyboxSummary(tuple(found), runs, time.perf_counter() - start, calls)
