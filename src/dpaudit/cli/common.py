"""Shared CLI plumbing: the typer app, sub-apps, option naming, result rendering (table / JSON).

Naming scheme of the command line (documented in ``docs/cli.md``):

* options are whole lower-case words joined by hyphens (``--canaries``, ``--guesses``,
  ``--wrong``, ``--correct``, ``--epsilon``, ``--sampling-rate``, ``--noise-multiplier``,
  ``--claimed-epsilon``); single-letter maths names (``--n``, ``--r``, ``--u``, ``--m``,
  ``--q``, ``--eps``) are not used;
* values that name things (curve kinds, families, mechanisms, methods) are spelt as in the Python
  API, with underscores (``eps_delta``, ``subsampled_gaussian``); the hyphenated spelling is
  accepted too (:func:`normalize_name`);
* old option spellings stay accepted for one release as hidden aliases: :data:`OPTION_ALIASES`
  maps them per command and :func:`rewrite_aliases` (called by :func:`dpaudit.cli.main`) rewrites
  them before parsing, with a one-line note on stderr;
* JSON output (``--json``) is strict JSON: a non-finite number is written as ``null`` with a
  sibling ``<key>_note`` saying ``"inf"``, ``"-inf"`` or ``"nan"``
  (:func:`dpaudit.results.json_safe`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from dpaudit.cli.aliases import OPTION_ALIASES, normalize_name, rewrite_aliases
from dpaudit.cli.app import app, bound_app
from dpaudit.outcome import Audit
from dpaudit.registry import epsilon_cell, row_kind
from dpaudit.results import AuditResult, json_safe
from dpaudit.validation import check_nested_counts

__all__ = ["app", "bound_app", "console", "fmt_number", "json_payload", "print_results",
           "print_json", "assumption_notes", "OPTION_ALIASES", "rewrite_aliases",
           "normalize_name",
           "resolve_wrong_correct", "check_claimed_epsilon", "given_options", "reject_unused"]


def resolve_wrong_correct(guesses: int, wrong: int | None, correct: int | None, *,
                          total_name: str = "--guesses") -> int:
    """The number of wrong guesses from exactly one of ``--wrong`` / ``--correct``."""
    if (wrong is None) == (correct is None):
        raise ValueError("give exactly one of --wrong and --correct (integers in "
                         f"[0, {total_name} = {guesses}])")
    if wrong is not None:
        return check_nested_counts(**{total_name: guesses, "--wrong": wrong})[1]
    c = check_nested_counts(**{total_name: guesses, "--correct": correct})[1]
    return guesses - c


def check_claimed_epsilon(value: float | None) -> float | None:
    """``--claimed-epsilon``: a finite number >= 0 (NaN or -1 used to give a verdict)."""
    if value is None:
        return None
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"--claimed-epsilon must be a finite number >= 0, got {value!r}")
    return float(value)


def given_options(ctx: typer.Context) -> set[str]:
    """Names (Python parameter names) of the options typed on the command line (click's
    ``ParameterSource.COMMANDLINE``, compared by name: typer may vendor click)."""
    return {p.name for p in ctx.command.params if p.name is not None
            and getattr(ctx.get_parameter_source(p.name), "name", None) == "COMMANDLINE"}


def reject_unused(ctx: typer.Context, used: Iterable[str], what: str) -> None:
    """An option given on the command line that ``what`` does not use is an error (it used to
    be silently ignored).  ``used`` holds Python parameter names."""
    keep = set(used)
    opts = {p.name: p.opts[0] for p in ctx.command.params if p.name is not None and p.opts}
    bad = sorted(opts[n] for n in given_options(ctx) - keep
                 if n in opts and opts[n].startswith("--"))
    if bad:
        raise ValueError(f"{what} does not use {', '.join(bad)}")


console = Console()


def print_json(obj: Any) -> None:
    """Strict JSON on stdout (no rich markup, no bare NaN/Infinity), for scripting."""
    typer.echo(json.dumps(json_safe(obj), indent=2, sort_keys=False, default=str,
                          allow_nan=False))


def assumption_notes(rs: Sequence[AuditResult]) -> list[str]:
    """Lines naming the rows that rest on an assumption or are estimates (printed under every
    table, so that no such figure reads as a lower bound valid for the claim as stated)."""
    out = [f"note: {r.method} is an estimate assuming {r.assumption}, not a lower bound "
           f"(never used for a verdict)" for r in rs if r.is_estimate]
    groups: dict[tuple[str, str], list[str]] = {}
    for r in rs:
        if r.assumption is not None and not r.is_estimate:
            fam = str(r.settings.get("family", "")) if r.settings else ""
            groups.setdefault((r.assumption, fam), []).append(r.method)
    for (text, fam), names in groups.items():
        verb = "assumes" if len(names) == 1 else "assume"
        tag = f" (null family {fam})" if fam else ""
        out.append(f"note: {', '.join(names)} {verb} {text}{tag}: not valid for "
                   f"every mechanism meeting an (epsilon, delta) claim, as the default family "
                   f"eps_delta is")
    return out


def fmt_number(x: Any) -> str:
    """Table formatting: 4 decimals, scientific below 1e-3, '-' for None/NaN, 'inf'; lists and
    tuples (e.g. an interval) element by element."""
    if x is None:
        return "-"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(fmt_number(v) for v in x) + "]"
    if isinstance(x, float):
        if math.isnan(x):
            return "-"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return f"{x:.4f}" if abs(x) >= 1e-3 or x == 0 else f"{x:.3e}"
    return str(x)


def json_payload(results: Sequence[AuditResult] | AuditResult | Audit, *,
                 claimed_epsilon: float | None = None, true_epsilon: float | None = None,
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The object ``print_results(..., as_json=True)`` prints (also what ``--report`` and
    ``dpaudit report`` read): :meth:`dpaudit.outcome.Audit.to_dict` of the results with the
    verdict against ``claimed_epsilon`` (first row = primary method)."""
    if isinstance(results, Audit):
        return results.to_dict()
    return Audit.of(results, claimed_epsilon, true_epsilon=true_epsilon,
                    extra=extra).to_dict()


def print_results(results: Sequence[AuditResult] | AuditResult | Audit, *,
                  as_json: bool = False, claimed_epsilon: float | None = None,
                  true_epsilon: float | None = None, title: str = "Audit",
                  extra: dict[str, Any] | None = None) -> None:
    """Render results side by side (rich table) or as JSON (keys mirror AuditResult).

    Given an :class:`~dpaudit.outcome.Audit`, its verdict is printed (computed once, there);
    given rows and ``claimed_epsilon``, the verdict is the Audit's of the rows (the first
    result, the primary method: taking the best of several bounds would not hold at the
    stated confidence).
    """
    if isinstance(results, Audit):
        audit = dataclasses.replace(
            results, true_epsilon=results.true_epsilon if true_epsilon is None
            else true_epsilon, extra={**results.extra, **(extra or {})})
    else:
        rs0 = [results] if isinstance(results, AuditResult) else list(results)
        audit = Audit.of(rs0, claimed_epsilon, true_epsilon=true_epsilon, extra=extra)
    rs: list[AuditResult] = list(audit.results)
    true_epsilon = audit.true_epsilon
    v = audit.message()
    if as_json:
        print_json(audit.to_dict())
        return
    # a row that is not a bound valid for the claim as stated (an estimate, a bound under an
    # assumption, a DP-SGD family member) is never shown under "epsilon >=": each cell says
    # what its number is (dpaudit.registry.row_kind)
    plain = all(row_kind(r) == "bound" for r in rs)
    header = ["method", "epsilon >=" if plain else "epsilon", "delta", "confidence"]
    rows = []
    for r in rs:
        e = fmt_number(r.epsilon)
        if not plain:
            e = epsilon_cell(r, e)
        row = [r.method, e, fmt_number(r.delta), fmt_number(r.confidence)]
        if true_epsilon is not None:
            row.append(f"{100 * r.ratio_to(true_epsilon):.1f}%")
        row.append(", ".join(f"{k}={fmt_number(v)}" for k, v in r.params.items()) or "-")
        row.append(fmt_number(r.p_value))
        if any(x.assumption is not None for x in rs):
            row.append("-" if r.assumption is None else _short_assumption(r.assumption))
        rows.append(row)
    if true_epsilon is not None:
        header.append("of true eps")
    header += ["fit", "p-value"]
    if any(x.assumption is not None for x in rs):
        header.append("assuming")
    # rows without a finite-sample guarantee ("asymptotic" estimates) are labelled as such
    if any(r.guarantee != "finite-sample" for r in rs):
        header.append("guarantee")
        for row, r in zip(rows, rs, strict=True):
            row.append(r.guarantee)
    # No constant columns: with several rows, a column with one value for all of them (delta,
    # confidence; an empty fit or p-value) moves to the caption.
    keep = list(range(len(header)))
    caption = []
    if len(rows) > 1:
        for j in range(2, len(header)):
            values = {row[j] for row in rows}
            if len(values) == 1:
                keep.remove(j)
                if values != {"-"}:
                    caption.append(f"{header[j]} = {rows[0][j]}")
    from rich.text import Text

    # the title holds user strings (file names, MODULE:OBJECT): printed literally, never markup
    table = Table(title=Text(title, style="italic"), caption=", ".join(caption) or None)
    for j in keep:
        table.add_column(header[j], justify="left" if header[j] in ("method", "fit") else "right")
    for row in rows:
        table.add_row(*[row[j] for j in keep])
    console.print(table)
    for r in rs:
        if r.details.get("hit_ceiling"):
            console.print(f"note: {r.method} rejected the top of its family's range "
                          f"({r.settings.get('family', 'family')}): epsilon >= "
                          f"{fmt_number(r.epsilon)} is the ceiling's epsilon, at the family's "
                          f"ceiling; the data may support more")
    for line in assumption_notes(rs):
        console.print(line, markup=False)
    if extra:
        for k, val in extra.items():
            console.print(f"{k}: {fmt_number(val)}")
    if v:
        console.print(f"[bold]{v}[/bold]")


def _short_assumption(text: str) -> str:
    """Table cell of an assumption: "the mechanism is μ-GDP" -> "μ-GDP"."""
    for pre in ("the mechanism is ", "the mechanism's trade-off curve is "):
        if text.startswith(pre):
            return text[len(pre):]
    return text


def parse_float_list(text: str, name: str) -> list[float]:
    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"{name} must be a comma-separated list of numbers, got {text!r}") \
            from None


def iter_or_one(x: Any) -> Iterable[Any]:
    return x if isinstance(x, (list, tuple)) else [x]
