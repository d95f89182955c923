"""Tables -> membership observations: pandas DataFrames, Parquet and CSV with named columns.

* :func:`from_dataframe` -- a pandas DataFrame (or anything with ``df[column]`` returning
  array-likes, e.g. a dict of arrays or a pyarrow Table converted with ``to_pandas()``);
* :func:`read_parquet` -- a Parquet file through pyarrow, reading only the needed columns;
* :func:`read_table` -- a file by suffix: ``.parquet``/``.pq`` (pyarrow), ``.csv``/``.txt``/no
  suffix (the standard library's csv module, no pandas needed), ``.npz``/``.json`` (the
  column names as keys).

Columns: ``member_col`` (0/1, or true/false), ``score_col`` (real, higher = member) and an
optional ``group_col`` (user id) with an explicit ``aggregate`` rule ("max", "mean", "sum"; see
:mod:`dpaudit.adapters.groups`) for user-level audits.  pandas and pyarrow are the ``parquet``
extra (``pip install 'dpaudit[parquet]'``); they are imported only when a Parquet file is read,
and their absence gives a ValueError naming the extra.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.adapters.groups import aggregate_by_group
from dpaudit.observations import MembershipObservations

__all__ = ["from_dataframe", "read_parquet", "read_table", "from_columns"]

_TRUE = {"1", "1.0", "true", "t", "yes", "in", "member"}
_FALSE = {"0", "0.0", "false", "f", "no", "out", "nonmember", "non-member"}


def _member_values(values: Any, column: str, source: str) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype.kind in "OUS":  # text: accept 0/1/true/false spellings
        low = np.char.lower(np.char.strip(a.astype(str)))
        ok = np.isin(low, list(_TRUE | _FALSE))
        if not ok.all():
            bad = a[np.flatnonzero(~ok)[0]]
            raise ValueError(f"{source}: column {column!r} must be 0/1 (or true/false); "
                             f"found {str(bad)!r}")
        return np.isin(low, list(_TRUE))
    return a


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _score_values(values: Any, column: str, source: str, text_numbers: bool) -> np.ndarray:
    if not text_numbers:  # a typed format: the values as stored, validated by the caller
        from dpaudit.io import check_no_text_scores

        check_no_text_scores(values, column, source)
    a = np.asarray(values)
    if a.dtype == bool or (a.dtype.kind == "O" and any(type(v) is bool for v in a.ravel())):
        raise ValueError(f"{source}: column {column!r} holds booleans; scores are real numbers "
                         f"(higher = more likely a member)")
    if not text_numbers:
        return a  # numbers (or objects): MembershipObservations.from_arrays checks them
    if a.dtype.kind in "OUS":
        try:
            a = a.astype(float)
        except (TypeError, ValueError):
            bad = next(v for v in a.ravel() if not _is_number(v))
            raise ValueError(f"{source}: column {column!r} must be numeric; found "
                             f"{str(bad)!r}") from None
    return a


def from_columns(columns: dict[str, Any], *, member_col: str = "member",
                 score_col: str = "score", group_col: str | None = None,
                 aggregate: str | None = None, source: str = "table",
                 text_numbers: bool = False) -> MembershipObservations:
    """Observations from a mapping column name -> values (the common core of every reader).

    Scores must be numbers of the source's own type system: text is parsed as a number only
    when ``text_numbers`` (CSV, where every cell is text); a string score in Parquet, .npz,
    JSON or a DataFrame is refused (:func:`dpaudit.io.check_no_text_scores`), as in
    :func:`dpaudit.io.load_scores`."""
    need = [member_col, score_col] + ([group_col] if group_col else [])
    missing = [c for c in need if c not in columns]
    if missing:
        have = ", ".join(map(str, columns)) or "none"
        raise ValueError(f"{source}: missing column(s) {', '.join(map(repr, missing))} "
                         f"(found {have}); choose columns with member_col/score_col/group_col "
                         f"(CLI: --member-col, --score-col, --group-col)")
    member = _member_values(columns[member_col], member_col, source)
    score = _score_values(columns[score_col], score_col, source, text_numbers)
    if group_col is None:
        if aggregate is not None:
            raise ValueError(f"{source}: aggregate={aggregate!r} needs a group column "
                             f"(group_col / --group-col)")
        try:
            return MembershipObservations.from_arrays(member, score)
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from None
    if aggregate is None:
        raise ValueError(f"{source}: group column {group_col!r} needs an explicit aggregate "
                         f"rule: 'max', 'mean' or 'sum' (--aggregate)")
    try:
        return aggregate_by_group(np.asarray(columns[group_col]), member, score,
                                  aggregate=aggregate).observations
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None


def from_dataframe(df: Any, *, member_col: str = "member", score_col: str = "score",
                   group_col: str | None = None, aggregate: str | None = None
                   ) -> MembershipObservations:
    """Observations from a pandas DataFrame's columns (see :func:`from_columns`)."""
    cols = getattr(df, "columns", None)
    if cols is None:
        raise ValueError("df must be a pandas DataFrame (or have .columns)")
    names = [str(c) for c in cols]
    wanted = {c for c in (member_col, score_col, group_col) if c is not None}
    data = {n: df[n].to_numpy() if hasattr(df[n], "to_numpy") else np.asarray(df[n])
            for n in names if n in wanted}
    return from_columns({**dict.fromkeys(names), **data}, member_col=member_col,
                        score_col=score_col, group_col=group_col, aggregate=aggregate,
                        source="DataFrame")


def _require_parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError("reading Parquet needs pyarrow: pip install 'dpaudit[parquet]'") \
            from None
    return pq


def read_parquet(path: str | Path, *, member_col: str = "member", score_col: str = "score",
                 group_col: str | None = None, aggregate: str | None = None
                 ) -> MembershipObservations:
    """Observations from a Parquet file (pyarrow; only the needed columns are read)."""
    p = _existing(path)
    pq = _require_parquet()
    try:
        schema = pq.read_schema(p)
        names = schema.names
        wanted = [c for c in (member_col, score_col, group_col) if c is not None and c in names]
        for c in (member_col, score_col):
            if c in names:
                typ = schema.field(c).type
                if typ.num_fields > 0 or "list" in str(typ) or "map" in str(typ):
                    raise ValueError(f"column {c!r} has the nested type {typ}; "
                                     f"{'scores' if c == score_col else 'memberships'} must "
                                     f"be one number per row")
        table = pq.read_table(p, columns=wanted)
    except (OSError, ValueError, TypeError) as e:
        raise ValueError(f"{p}: not a readable Parquet file ({str(e).splitlines()[0]})") \
            from None
    cols: dict[str, Any] = dict.fromkeys(names)
    for c in wanted:
        cols[c] = table.column(c).to_numpy(zero_copy_only=False)
    return from_columns(cols, member_col=member_col, score_col=score_col,
                        group_col=group_col, aggregate=aggregate, source=str(p))


def _existing(path: str | Path) -> Path:
    from dpaudit.io import check_readable_file

    return check_readable_file(path, "scores file")


def _read_csv_columns(p: Path, wanted: list[str]) -> dict[str, Any]:
    from dpaudit.io import check_unique_names, read_text

    with io.StringIO(read_text(p, "scores file"), newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"{p}: empty file (need a header row)") from None
        check_unique_names(header, str(p))
        idx = {c: header.index(c) for c in wanted if c in header}
        rows = [r for r in reader if r and any(x.strip() for x in r)]
    if not rows:
        raise ValueError(f"{p}: no data rows")
    cols: dict[str, Any] = dict.fromkeys(header)
    for c, i in idx.items():
        try:
            cols[c] = np.array([r[i].strip() for r in rows])
        except IndexError:
            raise ValueError(f"{p}: a row has fewer fields than the header") from None
    return cols


def read_table(path: str | Path, *, member_col: str = "member", score_col: str = "score",
               group_col: str | None = None, aggregate: str | None = None,
               allow_duplicates: bool = False) -> MembershipObservations:
    """Observations from a CSV, Parquet, .npz or JSON file with named columns.  Repeated
    rows are refused unless ``allow_duplicates`` (:func:`dpaudit.io.load_scores`,
    :mod:`dpaudit.repeats`), checked on the final observations (after aggregation)."""
    from dpaudit.repeats import check_repeats

    obs = _read_table(path, member_col=member_col, score_col=score_col, group_col=group_col,
                      aggregate=aggregate)
    check_repeats(obs.member, obs.score, str(path), allow=allow_duplicates)
    return obs


def _read_table(path: str | Path, *, member_col: str, score_col: str, group_col: str | None,
                aggregate: str | None) -> MembershipObservations:
    p = _existing(path)
    suffix = p.suffix.lower()
    kw: dict[str, Any] = {"member_col": member_col, "score_col": score_col,
                          "group_col": group_col, "aggregate": aggregate}
    if suffix in (".parquet", ".pq"):
        return read_parquet(p, **kw)
    wanted = [c for c in (member_col, score_col, group_col) if c is not None]
    if suffix in (".csv", ".txt", ""):
        cols = _read_csv_columns(p, wanted)
    elif suffix == ".npz":
        from dpaudit.io import read_npz

        # only the needed arrays are inflated, after the zip directory and headers are checked
        arrays, names = read_npz(p, "scores file", tuple(wanted))
        cols = {**dict.fromkeys(names), **arrays}
    elif suffix == ".json":
        from dpaudit.io import read_json

        obj = read_json(p, "scores file")  # size limit, duplicate keys, nesting depth
        if isinstance(obj, list):
            if not all(isinstance(r, dict) for r in obj):
                raise ValueError(f"{p}: a JSON list must hold one object per record")
            keys = {k for r in obj for k in r}
            try:
                cols = {k: [r[k] for r in obj] for k in keys}
            except KeyError as e:
                raise ValueError(f"{p}: every record needs key {e}") from None
        elif isinstance(obj, dict):
            cols = obj
        else:
            raise ValueError(f"{p}: JSON must be an object of columns or a list of records")
    else:
        raise ValueError(f"scores file must be .csv, .parquet, .npz or .json; got {p.name!r}")
    return from_columns(cols, source=str(p), text_numbers=suffix in (".csv", ".txt", ""), **kw)
