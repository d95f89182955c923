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


def opacus_steps(model, optimizer, loader, steps: int) -> None:  # type: ignore[no-untyped-def]
    """``steps`` steps of the plain Opacus loop the training benchmarks time: zero the
    gradients, cross-entropy of ``model`` on the loader's batch, backward, ``optimizer.step()``
    (the loader is iterated again as often as needed)."""
    from torch import nn

    done = 0
    while done < steps:
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            done += 1
            if done >= steps:
                return
