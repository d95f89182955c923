"""Provenance of a report: what was run, on which inputs, with which settings, when."""

from __future__ import annotations

import datetime as _dt
import hashlib
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpaudit.results import json_safe

__all__ = ["InputFile", "Provenance", "hash_file", "make_provenance"]


@dataclass(frozen=True)
class InputFile:
    """An input file: its name as given, size in bytes and SHA-256 of its content."""

    name: str
    sha256: str
    size: int


def hash_file(path: str | Path) -> InputFile:
    """SHA-256 of a file, read in 1 MiB blocks (ValueError when it cannot be read)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"report input not found or not a file: {p}")
    h = hashlib.sha256()
    with p.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return InputFile(name=str(path), sha256=h.hexdigest(), size=p.stat().st_size)


@dataclass(frozen=True)
class Provenance:
    """dpaudit version, the command, inputs, every setting, seed, date (UTC) and run time."""

    version: str
    command: str
    inputs: tuple[InputFile, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    seed: Any = None
    date: str = ""
    run_seconds: float | None = None
    environment: Mapping[str, str] = field(default_factory=dict)


def _environment() -> dict[str, str]:
    import numpy
    import scipy

    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "scipy": scipy.__version__, "platform": platform.platform(terse=True)}


def make_provenance(*, command: str | None = None, inputs: Iterable[str | Path | InputFile] = (),
                    settings: Mapping[str, Any] | None = None, seed: Any = None,
                    run_seconds: float | None = None, date: str | None = None) -> Provenance:
    """Collect provenance; ``seed`` defaults to ``settings["seed"]`` when present."""
    from dpaudit import __version__

    files = tuple(x if isinstance(x, InputFile) else hash_file(x) for x in inputs)
    st = json_safe(dict(settings or {}))
    if seed is None:
        seed = st.get("seed")
    if date is None:
        date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    cmd = command if command is not None else "dpaudit (Python API)"
    return Provenance(version=__version__, command=cmd, inputs=files, settings=st, seed=seed,
                      date=date, run_seconds=None if run_seconds is None else float(run_seconds),
                      environment=_environment())
