"""Helpers shared by the benchmark scripts (not a benchmark: ``run_all.py`` skips files whose
name starts with an underscore)."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def baseline_src(rev: str, tmp: Path) -> Path:
    """The ``src/`` tree of commit ``rev`` of this repository, extracted under ``tmp`` (the
    "before" of a benchmark's ``--baseline-rev``)."""
    archive = tmp / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, "src"],
                   check=True)
    with tarfile.open(archive) as tf:
        tf.extractall(tmp, filter="data")
    return tmp / "src"
