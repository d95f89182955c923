"""Registry of experiment runners.

A runner is ``fn(out_dir: Path, *, full: bool = False, seed: int = 0, size: str | None = None)
-> list[Path]`` that writes a CSV with every seed's numbers and a PNG, and returns the paths
written.  ``size`` is one of :data:`SIZES`: "tiny" (seconds; the test suite), "small" (the default,
about a minute on 2 cores) and "full" (the paper's settings); ``full=True`` is the older spelling
of ``size="full"``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Experiment", "EXPERIMENTS", "SIZES", "experiment", "get_experiment", "load_all"]

#: Run sizes every runner accepts.
SIZES = ("tiny", "small", "full")

Runner = Callable[..., list[Path]]


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    source: str  # paper / figure reproduced, e.g. "Tight One-Run Fig. 3"
    run: Runner


EXPERIMENTS: dict[str, Experiment] = {}


def experiment(name: str, description: str, source: str) -> Callable[[Runner], Runner]:
    """Decorator registering a runner under ``name``."""

    def deco(fn: Runner) -> Runner:
        if name in EXPERIMENTS:
            raise RuntimeError(f"experiment {name!r} registered twice")
        EXPERIMENTS[name] = Experiment(name, description, source, fn)
        return fn

    return deco


def load_all() -> None:
    """Import every runner module of this package (they self-register)."""
    import dpaudit.papers.experiments as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name not in ("registry", "plotting"):
            importlib.import_module(f"dpaudit.papers.experiments.{info.name}")


def get_experiment(name: str) -> Experiment:
    load_all()
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {', '.join(sorted(EXPERIMENTS))}; "
                         f"got {name!r}")
    return EXPERIMENTS[name]
