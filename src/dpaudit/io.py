"""Reading observation files: CSV (columns ``member``, ``score``), ``.npz`` or JSON.

Every reader goes through :func:`check_readable_file` (a regular file of at most
:func:`max_file_bytes` bytes, so ``/dev/zero`` or a 50 GB file gives a one-line error instead of
a MemoryError) and turns every way a file can be malformed -- truncated ``.npz``, random bytes,
deeply nested JSON, text that is not UTF-8 -- into a :class:`ValueError` naming the file.

CSV is read the way spreadsheets write it: a UTF-8 byte-order mark is ignored, numbers may be
quoted (``"0.5"``), header names are matched case-insensitively, and ``;`` is accepted as the
delimiter when the header uses it.  A CSV is streamed, not slurped (a NUL byte -- a binary file
-- is refused after a block scan; the numbers are parsed from the file by NumPy's reader), a
header naming a column twice is refused.  ``.npz`` archives are checked from the zip directory
and each needed array's ``.npy`` header before anything is inflated: only the needed arrays are
read, and an array whose uncompressed size or declared shape exceeds the size limit (a zip
bomb, a header claiming 1e12 elements) is refused.  JSON objects with a repeated key and
booleans given as scores are refused.

Outputs never overwrite inputs: every file read through this module (and every trial store
opened) is noted (:func:`dpaudit.output.note_input`), and :func:`check_output_path`
(= :func:`dpaudit.output.check_output_target`) refuses to write a report or an export over one
of them, naming both, or onto anything but a regular file.
"""

from __future__ import annotations

import csv
import json
import math
import os
import stat
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from dpaudit.observations import LiftedObservations, MembershipObservations
from dpaudit.output import check_output_target, note_input, reset_inputs

#: the one output-path check (kept under its old name): :func:`dpaudit.output.check_output_target`
check_output_path = check_output_target

__all__ = ["load_scores", "write_scores", "load_lifted", "check_readable_file", "read_text",
           "read_json",
           "max_file_bytes", "DEFAULT_MAX_FILE_BYTES", "read_npz", "check_output_path",
           "note_input", "reset_inputs", "score_direction_warning", "scan_binary",
           "check_no_text_scores"]


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
    note_input(p)
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


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return out


def read_json(path: str | Path, what: str = "JSON file") -> object:
    """A (checked, UTF-8) JSON file parsed; invalid or too deeply nested JSON is a ValueError."""
    p = Path(path)
    text = read_text(p, what)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise ValueError(f"{what} {p.name}: key {e.args[0]!r} appears twice in one object "
                         f"(which value is meant?)") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {p.name} is not valid JSON ({e.msg}, line {e.lineno})") \
            from None
    except RecursionError:
        raise ValueError(f"{what} {p.name}: JSON nested too deeply") from None


def _from_columns(cols: Mapping[str, object], source: str) -> MembershipObservations:
    missing = [c for c in ("member", "score") if c not in cols]
    if missing:
        have = ", ".join(sorted(cols)) or "none"
        raise ValueError(f"{source}: missing column(s) {', '.join(missing)} "
                         f"(need 'member' and 'score'; found {have})")
    return MembershipObservations.from_arrays(cols["member"], cols["score"])


#: the CSV header is read with at most this many characters
_MAX_HEADER = 1 << 16
_SCAN_BLOCK = 1 << 24


def scan_binary(path: Path) -> bool:
    """Raise on a NUL byte (a binary file), streaming 16 MiB blocks; return whether the file
    holds a double quote (quoted cells need the csv module)."""
    quoted = False
    offset = 0
    with path.open("rb") as fh:
        while block := fh.read(_SCAN_BLOCK):
            nul = block.find(b"\x00")
            if nul >= 0:
                raise ValueError(f"{path}: not a text CSV (NUL byte at offset {offset + nul:,}; "
                                 f"a binary file?)")
            quoted = quoted or b'"' in block
            offset += len(block)
    return quoted


def check_unique_names(names: list[str], source: str) -> None:
    """Refuse a header that names a column twice (which one would be meant?)."""
    seen: set[str] = set()
    for n in names:
        if n and n in seen:
            raise ValueError(f"{source}: column {n!r} appears twice in the header")
        seen.add(n)


def _load_csv(path: Path) -> MembershipObservations:
    p = check_readable_file(path, "scores file")
    quoted = scan_binary(p)
    try:
        with p.open(encoding="utf-8-sig", newline="") as fh:
            header = fh.readline(_MAX_HEADER)
            if len(header) >= _MAX_HEADER and not header.endswith("\n"):
                raise ValueError(f"{p}: the first line is longer than {_MAX_HEADER:,} "
                                 f"characters (not a CSV with a header?)")
            if not header.strip():
                raise ValueError(f"{p}: empty file (need a header with 'member' and 'score')")
            delimiter = ";" if ";" in header and "," not in header else ","
            names = [h.strip().lower()
                     for h in next(csv.reader([header.rstrip("\r\n")], delimiter=delimiter))]
            check_unique_names(names, str(p))
            if "member" not in names or "score" not in names:
                return _from_columns(dict.fromkeys(names), str(p))
            im, isc = names.index("member"), names.index("score")
            if quoted:  # spreadsheets: the csv module removes the quotes (streamed rows)
                rows = [r for r in csv.reader(fh, delimiter=delimiter) if r]
                data = np.array([[r[i].strip() for i in (im, isc)] for r in rows], dtype=float)
                data = data.reshape(-1, 2)
            else:  # NumPy's reader parses the rest of the file in blocks
                data = np.loadtxt(fh, delimiter=delimiter, usecols=(im, isc), ndmin=2,
                                  dtype=float, comments=None)
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: not UTF-8 text (binary file?); byte {e.start} of a block is "
                         f"{e.object[e.start]:#04x}") from None
    except (ValueError, IndexError) as e:
        if str(e).startswith(str(p)):
            raise
        raise ValueError(f"{p}: columns 'member' and 'score' must be numeric "
                         f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    if data.size == 0:
        raise ValueError(f"{p}: no data rows")
    return MembershipObservations.from_arrays(data[:, 0], data[:, 1])


def _npy_header(fh: IO[bytes], version: tuple[int, int]) -> tuple[tuple[int, ...], bool, np.dtype]:
    fmt = np.lib.format
    if version == (1, 0):
        return fmt.read_array_header_1_0(fh)
    if version == (2, 0):
        return fmt.read_array_header_2_0(fh)
    private = getattr(fmt, "_read_array_header", None)  # .npy 3.0 (utf-8 field names)
    if private is None:
        raise ValueError(f"unsupported .npy format version {version}")
    return private(fh, version)


def read_npz(path: str | Path, what: str = "file", keys: tuple[str, ...] | None = None
             ) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """The arrays ``keys`` (all when None) of a ``.npz`` archive, and the names of all of its
    arrays, checked before anything is inflated (see module): no pickles, each needed array's
    uncompressed size (zip directory) and declared shape (``.npy`` header) within
    :func:`max_file_bytes`.  A missing key is simply absent from the result."""
    p = check_readable_file(path, what)
    with p.open("rb") as fh:
        magic = fh.read(4)
    if magic not in (_NPZ_MAGIC, _EMPTY_ZIP):
        kind = "a .npy array" if magic.startswith(b"\x93NUM") else "not a zip archive"
        raise ValueError(f"{p}: not a .npz file ({kind}); save with numpy.savez")
    limit = max_file_bytes()
    try:
        with zipfile.ZipFile(p) as zf:
            members = {i.filename[:-4] if i.filename.endswith(".npy") else i.filename: i
                       for i in zf.infolist()}
            names = tuple(members)
            out: dict[str, np.ndarray] = {}
            for k in (names if keys is None else [k for k in keys if k in members]):
                info = members[k]
                if info.file_size > limit:
                    raise ValueError(f"array {k!r} inflates to {info.file_size:,} bytes, above "
                                     f"the limit of {limit:,} (a zip bomb? set "
                                     f"DPAUDIT_MAX_FILE_BYTES to raise it)")
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    shape, _, dtype = _npy_header(fh, version)
                    if dtype.hasobject:
                        raise ValueError("allow_pickle")
                    need = int(np.prod(shape, dtype=object)) * dtype.itemsize
                    if need > min(limit, info.file_size):
                        raise ValueError(f"array {k!r} declares shape {shape} ({need:,} bytes) "
                                         f"but holds {info.file_size:,} bytes")
                with zf.open(info) as fh:
                    out[k] = np.asarray(np.lib.format.read_array(fh, allow_pickle=False))
            return out, names
    except (OSError, EOFError, zipfile.BadZipFile, ValueError, KeyError,
            NotImplementedError, RuntimeError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        if "allow_pickle" in msg:
            msg = "it holds Python objects (pickles), which are never loaded; save numeric arrays"
        raise ValueError(f"{p}: not a readable .npz file ({msg})") from None


def _read_npz(path: Path, what: str, keys: tuple[str, ...]) -> dict[str, np.ndarray | None]:
    arrays, names = read_npz(path, what, keys)
    return {**dict.fromkeys(names), **arrays}


def _load_npz(path: Path) -> MembershipObservations:
    cols = _read_npz(path, "scores file", ("member", "score"))
    if "score" in cols and cols["score"] is not None and cols["score"].dtype == bool:
        raise ValueError(f"{path}: 'score' holds booleans; scores are real numbers (higher = "
                         f"more likely a member)")
    if cols.get("score") is not None:
        check_no_text_scores(cols["score"], "score", str(path))
    return _from_columns(cols, str(path))


def _load_json(path: Path) -> MembershipObservations:
    obj = read_json(path, "scores file")
    if isinstance(obj, list):  # list of {"member": .., "score": ..} records
        try:
            cols = {"member": [r["member"] for r in obj], "score": [r["score"] for r in obj]}
        except (KeyError, TypeError):
            raise ValueError(f"{path}: each record must have 'member' and 'score'") from None
        _no_boolean_scores(cols["score"], path)
        check_no_text_scores(cols["score"], "score", str(path))
        return _from_columns(cols, str(path))
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: JSON must be an object with 'member' and 'score' arrays")
    _no_boolean_scores(obj.get("score"), path)
    if obj.get("score") is not None:
        check_no_text_scores(obj["score"], "score", str(path))
    return _from_columns(obj, str(path))


def check_no_text_scores(values: object, column: str, source: str) -> None:
    """The one rule for text scores: in a typed format (.npz, JSON, Parquet, a DataFrame) a
    score is a number, never a string -- not even ``"0.5"`` (CSV cells are text, and numbers
    there may be quoted)."""
    a = np.asarray(values) if not isinstance(values, list) else None
    if a is not None and a.dtype.kind in "US":
        bad: object = a.reshape(-1)[0] if a.size else ""
    else:
        flat: Iterable[Any] = a.reshape(-1) if a is not None else cast(list[Any], values)
        bad = next((v for v in flat if isinstance(v, (str, bytes))), None)
        if bad is None:
            return
    raise ValueError(f"{source}: column {column!r} holds text ({str(bad)[:40]!r}); scores in "
                     f".npz, JSON and Parquet files must be numbers (only CSV cells are read "
                     f"as text) -- write the scores as numbers")


def _no_boolean_scores(score: object, path: Path) -> None:
    if isinstance(score, bool) or (isinstance(score, list) and
                                   any(type(v) is bool for v in score)):
        raise ValueError(f"{path}: 'score' holds booleans (true/false); scores are real "
                         f"numbers (higher = more likely a member)")


#: |z| of the Mann-Whitney statistic below which an AUROC under 1/2 is taken for noise
INVERTED_Z = 3.0


def score_direction_warning(member: ArrayLike, score: ArrayLike, source: str,
                            stored_auc: float | None = None) -> str | None:
    """A warning when the scores look sign-inverted, else None.

    dpaudit reads higher scores as "more likely a member".  Scores whose AUROC is below 1/2 by
    more than noise (the Mann-Whitney z-statistic, variance (n1 + n0 + 1) / (12 n1 n0) under
    exchangeability, below -:data:`INVERTED_Z`: about 1 null file in 700 warns) -- or a file
    whose own stored AUC is below 1/2 -- rank non-members above members: every one-run method
    then reports epsilon about 0 ("no leak") whatever the leak.  privacy_meter's LOSS attack
    writes such scores (AUC 0.0000 on its own runs)."""
    from dpaudit.stats.attack_metrics import auroc

    m = np.asarray(member, dtype=bool)
    n1, n0 = int(m.sum()), int(m.size - m.sum())
    if n1 == 0 or n0 == 0:
        return None
    a = auroc(m, score)
    z = (a - 0.5) / math.sqrt((n1 + n0 + 1) / (12.0 * n1 * n0))
    low_stored = stored_auc is not None and stored_auc < 0.5
    if z >= -INVERTED_Z and not low_stored:
        return None
    which = f"its stored AUC is {stored_auc:.4f}" if low_stored else f"AUROC {a:.4f} (z = {z:.1f})"
    return (f"{source}: the scores rank non-members above members ({which} < 1/2); dpaudit reads "
            f"higher scores as 'more likely a member', so audits of these scores find no leak. "
            f"If the attack's scores are oriented the other way (e.g. privacy_meter's LOSS "
            f"attack), negate them (score -> -score) and audit again")


def write_scores(path: str | Path, member: object, score: object) -> None:
    """Per-canary scores as ``member,score`` CSV (what :func:`load_scores` and
    ``dpaudit one-run SCORES.csv`` read); scores keep every digit (``%.17g``).  Written
    atomically, only onto a regular file or a new path (:mod:`dpaudit.output`)."""
    from dpaudit.output import atomic_output

    rows = np.column_stack([np.asarray(member, dtype=int), np.asarray(score, dtype=float)])
    with atomic_output(path, what="scores file") as tmp:
        np.savetxt(tmp, rows, delimiter=",", header="member,score", comments="",
                   fmt=["%d", "%.17g"])


def load_scores(path: str | Path, *, allow_duplicates: bool = False) -> MembershipObservations:
    """Load per-canary membership (or truth bit) and score from CSV, .npz or JSON.

    A file whose rows are k >= 2 copies of one block, or with many rows repeating an earlier
    row to the score's full precision, is refused unless ``allow_duplicates``
    (:mod:`dpaudit.repeats`: repeated canaries break the independence every bound assumes)."""
    p = check_readable_file(path, "scores file")
    suffix = p.suffix.lower()
    if suffix == ".npz":
        obs = _load_npz(p)
    elif suffix == ".json":
        obs = _load_json(p)
    elif suffix in (".csv", ".txt", ""):
        obs = _load_csv(p)
    else:
        raise ValueError(f"scores file must be .csv, .npz or .json; got {p.name!r}")
    from dpaudit.repeats import check_repeats

    check_repeats(obs.member, obs.score, str(p), allow=allow_duplicates)
    return obs


def load_lifted(path: str | Path) -> LiftedObservations:
    """LiDP test matrices from a ``.npz`` with arrays ``x`` and ``y`` (trials x K, 0/1)."""
    p = Path(path)
    arrays = _read_npz(p, "lifted-test file", ("x", "y"))
    missing = [k for k in ("x", "y") if arrays.get(k) is None]
    if missing:
        raise ValueError(f"{p.name} must contain arrays 'x' and 'y' (missing "
                         f"{', '.join(missing)}; found {', '.join(arrays) or 'none'})")
    assert arrays["x"] is not None and arrays["y"] is not None
    return LiftedObservations.from_arrays(arrays["x"], arrays["y"])
