"""The benchmarks' resumable results journal: one JSON object per line, appended and flushed
to disk as each unit of work finishes, so a killed run resumes where it stopped (a re-run
skips the keys already present)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def load(path: Path, key: str = "id") -> dict[str, dict[str, Any]]:
    """The rows of the journal at ``path`` by their ``key`` field (empty if there is none)."""
    done: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row[key]] = row
    return done


def append(path: Path, row: dict[str, Any]) -> None:
    """Append ``row`` to the journal and push it to disk (only to a regular file or a new
    path: :func:`dpaudit.output.writable_target`)."""
    from dpaudit.output import writable_target

    writable_target(path, what="journal")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
