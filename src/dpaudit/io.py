"""Reading observation files: CSV (columns ``member``, ``score``), ``.npz`` or JSON.

Every reader goes through :func:`check_readable_file` (a regular file of at most
:func:`max_file_bytes` bytes, so ``/dev/zero`` or a 50 GB file gives a one-line error instead of
a MemoryError) and turns every way a file can be malformed -- truncated ``.npz``, random bytes,
deeply nested JSON, text that is not UTF-8 -- into a :class:`ValueError` naming the file.

CSV is read the way spreadsheets write it: a UTF-8 byte-order mark is ignored, numbers may be
quoted (``"0.5"``), header names are matched case-insensitively, and ``;`` is accepted as the
delimiter when the header uses it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import zipfile
from pathlib import Path

import numpy as np

from dpaudit.observations import LiftedObservations, MembershipObservations

__all__ = ["load_scores", "load_lifted", "check_readable_file", "read_text", "read_json",
           "max_file_bytes", "DEFAULT_MAX_FILE_BYTES"]


def __getattr__(name: str) -> object:
    """Lazy re-export of the adapters (DESIGN.md: ``from dpaudit.io import from_in_out``);
    lazy so that reading a file does not import the estimators the adapters use."""
    if name == "from_in_out":
        from dpaudit.adapters.in_out import from_in_out

        return from_in_out
    raise AttributeError(f"module 'dpaudit.io' has no attribute {name!r}")

#: Largest input file read (bytes); override with the environment variable
#: ``DPAUDIT_MAX_FILE_BYTES``.  1 GiB holds ~40 million CSV rows.
DEFAULT_MAX_FILE_BYTES = 1 << 30

_NPZ_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP = b"PK\x05\x06"


def max_file_bytes() -> int:
    """The size limit of input files: ``DPAUDIT_MAX_FILE_BYTES`` or 1 GiB."""
    env = os.environ.get("DPAUDIT_MAX_FILE_BYTES")
    if env is None:
        return DEFAULT_MAX_FILE_BYTES
    try:
        v = int(env)
    except ValueError:
        raise ValueError(f"DPAUDIT_MAX_FILE_BYTES must be a positive integer, got {env!r}") \
            from None
    if v <= 0:
        raise ValueError(f"DPAUDIT_MAX_FILE_BYTES must be a positive integer, got {env!r}")
    return v


def check_readable_file(path: str | Path, what: str = "scores file") -> Path:
    """A path to an existing regular file no larger than :func:`max_file_bytes`."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise ValueError(f"{what} not found: {p}") from None
    except OSError as e:
        raise ValueError(f"{what} cannot be read: {p} ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{what} path is a directory, not a file: {p}")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{what} must be a regular file (not a device, pipe or socket): {p}")
    limit = max_file_bytes()
    if st.st_size > limit:
        raise ValueError(f"{what} {p.name} is {st.st_size:,} bytes, above the limit of "
                         f"{limit:,} (set DPAUDIT_MAX_FILE_BYTES to raise it)")
    return p


def read_text(path: str | Path, what: str = "file") -> str:
    """The text of a (checked) file, UTF-8 with an optional byte-order mark."""
    p = check_readable_file(path, what)
    data = p.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: not UTF-8 text (binary file?); byte {e.start} is "
                         f"{data[e.start]:#04x}") from None


def read_json(path: str | Path, what: str = "JSON file") -> object:
    """A (checked, UTF-8) JSON file parsed; invalid or too deeply nested JSON is a ValueError."""
    p = Path(path)
    text = read_text(p, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {p.name} is not valid JSON ({e.msg}, line {e.lineno})") \
            from None
    except RecursionError:
        raise ValueError(f"{what} {p.name}: JSON nested too deeply") from None


def _from_columns(cols: dict[str, object], source: str) -> MembershipObservations:
    missing = [c for c in ("member", "score") if c not in cols]
    if missing:
        have = ", ".join(sorted(cols)) or "none"
        raise ValueError(f"{source}: missing column(s) {', '.join(missing)} "
                         f"(need 'member' and 'score'; found {have})")
    return MembershipObservations.from_arrays(cols["member"], cols["score"])


def _parse_number_table(body: str, ncols: int, delimiter: str, usecols: tuple[int, ...],
                        source: str) -> np.ndarray:
    """The numeric columns ``usecols`` of a CSV body (header removed) as a float matrix."""
    try:
        if '"' not in body:  # fast path
            data = np.loadtxt(io.StringIO(body), delimiter=delimiter, usecols=usecols, ndmin=2,
                              dtype=float, comments=None)
        else:  # quoted cells (spreadsheets): the csv module removes the quotes
            rows = [r for r in csv.reader(io.StringIO(body), delimiter=delimiter) if r]
            data = np.array([[r[i].strip() for i in usecols] for r in rows], dtype=float)
            data = data.reshape(-1, len(usecols))
    except (ValueError, IndexError) as e:
        raise ValueError(f"{source}: columns 'member' and 'score' must be numeric "
                         f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    return data


def _load_csv(path: Path) -> MembershipObservations:
    text = read_text(path, "scores file")
    header, _, body = text.partition("\n")
    if not header.strip():
        raise ValueError(f"{path}: empty file (need a header with 'member' and 'score')")
    delimiter = ";" if ";" in header and "," not in header else ","
    names = [h.strip().lower() for h in next(csv.reader([header], delimiter=delimiter))]
    if "member" not in names or "score" not in names:
        return _from_columns(dict.fromkeys(names), str(path))
    im, isc = names.index("member"), names.index("score")
    data = _parse_number_table(body, len(names), delimiter, (im, isc), str(path))
    if data.size == 0:
        raise ValueError(f"{path}: no data rows")
    return MembershipObservations.from_arrays(data[:, 0], data[:, 1])


def _read_npz(path: Path, what: str) -> dict[str, np.ndarray]:
    """Every array of a ``.npz`` archive (no pickles), or a ValueError saying what is wrong."""
    p = check_readable_file(path, what)
    with p.open("rb") as fh:
        magic = fh.read(4)
    if magic not in (_NPZ_MAGIC, _EMPTY_ZIP):
        kind = "a .npy array" if magic.startswith(b"\x93NUM") else "not a zip archive"
        raise ValueError(f"{p}: not a .npz file ({kind}); save with numpy.savez")
    try:
        with np.load(p, allow_pickle=False) as z:
            return {k: np.asarray(z[k]) for k in z.files}
    except (OSError, EOFError, zipfile.BadZipFile, ValueError, KeyError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        if "allow_pickle" in msg:
            msg = "it holds Python objects (pickles), which are never loaded; save numeric arrays"
        raise ValueError(f"{p}: not a readable .npz file ({msg})") from None


def _load_npz(path: Path) -> MembershipObservations:
    return _from_columns(_read_npz(path, "scores file"), str(path))


def _load_json(path: Path) -> MembershipObservations:
    obj = read_json(path, "scores file")
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
    p = check_readable_file(path, "scores file")
    suffix = p.suffix.lower()
    if suffix == ".npz":
        return _load_npz(p)
    if suffix == ".json":
        return _load_json(p)
    if suffix in (".csv", ".txt", ""):
        return _load_csv(p)
    raise ValueError(f"scores file must be .csv, .npz or .json; got {p.name!r}")


def load_lifted(path: str | Path) -> LiftedObservations:
    """LiDP test matrices from a ``.npz`` with arrays ``x`` and ``y`` (trials x K, 0/1)."""
    p = Path(path)
    arrays = _read_npz(p, "lifted-test file")
    missing = [k for k in ("x", "y") if k not in arrays]
    if missing:
        raise ValueError(f"{p.name} must contain arrays 'x' and 'y' (missing "
                         f"{', '.join(missing)}; found {', '.join(arrays) or 'none'})")
    return LiftedObservations.from_arrays(arrays["x"], arrays["y"])
