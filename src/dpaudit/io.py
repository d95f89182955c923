"""Reading observation files: CSV (columns ``member``, ``score``), ``.npz`` or JSON."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from dpaudit.observations import MembershipObservations

__all__ = ["load_scores"]


def _from_columns(cols: dict[str, object], source: str) -> MembershipObservations:
    missing = [c for c in ("member", "score") if c not in cols]
    if missing:
        have = ", ".join(sorted(cols)) or "none"
        raise ValueError(f"{source}: missing column(s) {', '.join(missing)} "
                         f"(need 'member' and 'score'; found {have})")
    return MembershipObservations.from_arrays(cols["member"], cols["score"])


def _load_csv(path: Path) -> MembershipObservations:
    with path.open(newline="") as fh:
        header = fh.readline()
        if not header.strip():
            raise ValueError(f"{path}: empty file (need a header with 'member' and 'score')")
        names = [h.strip() for h in next(csv.reader([header]))]
        if "member" not in names or "score" not in names:
            return _from_columns(dict.fromkeys(names), str(path))
        im, isc = names.index("member"), names.index("score")
        try:
            data = np.loadtxt(fh, delimiter=",", usecols=(im, isc), ndmin=2, dtype=float,
                              comments=None)
        except ValueError as e:
            raise ValueError(f"{path}: columns 'member' and 'score' must be numeric ({e})") \
                from None
    if data.size == 0:
        raise ValueError(f"{path}: no data rows")
    return MembershipObservations.from_arrays(data[:, 0], data[:, 1])


def _load_npz(path: Path) -> MembershipObservations:
    try:
        with np.load(path, allow_pickle=False) as z:
            return _from_columns({k: z[k] for k in z.files}, str(path))
    except (OSError, EOFError) as e:
        raise ValueError(f"{path}: not a readable .npz file ({e})") from None


def _load_json(path: Path) -> MembershipObservations:
    try:
        obj = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: invalid JSON ({e.msg} at line {e.lineno})") from None
    if isinstance(obj, list):  # list of {"member": .., "score": ..} records
        try:
            cols = {"member": [r["member"] for r in obj], "score": [r["score"] for r in obj]}
        except (KeyError, TypeError):
            raise ValueError(f"{path}: each record must have 'member' and 'score'") from None
        return _from_columns(cols, str(path))
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: JSON must be an object with 'member' and 'score' arrays")
    return _from_columns(obj, str(path))


def load_scores(path: str | Path) -> MembershipObservations:
    """Load per-canary membership (or truth bit) and score from CSV, .npz or JSON."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"scores file not found: {p}")
    if p.is_dir():
        raise ValueError(f"scores path is a directory, not a file: {p}")
    suffix = p.suffix.lower()
    if suffix == ".npz":
        return _load_npz(p)
    if suffix == ".json":
        return _load_json(p)
    if suffix in (".csv", ".txt", ""):
        return _load_csv(p)
    raise ValueError(f"scores file must be .csv, .npz or .json; got {p.name!r}")
