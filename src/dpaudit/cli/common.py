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

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import typer
import typer.core
from rich.console import Console
from rich.table import Table

from dpaudit.results import AuditResult, json_safe
from dpaudit.validation import check_nested_counts

__all__ = ["app", "bound_app", "console", "fmt_number", "json_payload", "print_results",
           "print_json", "verdict", "assumption_notes", "OPTION_ALIASES", "rewrite_aliases",
           "normalize_name",
           "resolve_wrong_correct", "check_claimed_epsilon", "given_options", "reject_unused"]

#: Old option spellings, per command path, kept as hidden aliases for one release (0.2 removes
#: them).  Keys are the command path ("bound tight"); values map old -> new spelling.
OPTION_ALIASES: dict[str, dict[str, str]] = {
    "bound tight": {"--n": "--canaries", "--r": "--guesses", "--u": "--wrong"},
    "bound bits": {"--n": "--canaries", "--errors": "--wrong"},
    "bound steinke": {"--m": "--canaries"},
    "bound mahloujifar": {"--m": "--canaries"},
    "curve": {"--eps": "--epsilon", "--q": "--sampling-rate"},
    "simulate": {"--eps": "--epsilon", "--q": "--sampling-rate",
                 "--true-epsilon": "--compute-true-epsilon"},
}


def rewrite_aliases(argv: Sequence[str], *,
                    notes: list[str] | None = None) -> list[str]:
    """Rewrite the old option spellings of :data:`OPTION_ALIASES` to the current ones.

    The command path is the longest key of the table that the leading words of ``argv`` spell;
    both ``--old VALUE`` and ``--old=VALUE`` are rewritten.  A deprecation note per alias is
    appended to ``notes``; :func:`dpaudit.cli.main` prints them on stderr after a successful run
    (never on stdout, so ``--json`` stays parseable; never before an ``error:`` line)."""
    args = list(argv)
    words: list[str] = []
    for a in args:
        if a.startswith("-"):
            break
        words.append(a)
    table: dict[str, str] = {}
    for k in range(len(words), 0, -1):
        key = " ".join(words[:k])
        if key in OPTION_ALIASES:
            table = OPTION_ALIASES[key]
            break
    if not table:
        return args
    out: list[str] = []
    for a in args:
        name, eq, val = a.partition("=")
        if name in table:
            if notes is not None:
                notes.append(f"note: {name} is deprecated, use {table[name]}")
            a = table[name] + eq + val
        out.append(a)
    return out


def normalize_name(text: str) -> str:
    """Values naming things are spelt with underscores; hyphens and case are forgiven."""
    return text.strip().lower().replace("-", "_")


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
    """Names (Python parameter names) of the options typed on the command line."""
    from typer._click.core import ParameterSource

    return {p.name for p in ctx.command.params if p.name is not None
            and ctx.get_parameter_source(p.name) is ParameterSource.COMMANDLINE}


def reject_unused(ctx: typer.Context, used: Iterable[str], what: str) -> None:
    """An option given on the command line that ``what`` does not use is an error (it used to
    be silently ignored).  ``used`` holds Python parameter names."""
    keep = set(used)
    opts = {p.name: p.opts[0] for p in ctx.command.params if p.name is not None and p.opts}
    bad = sorted(opts[n] for n in given_options(ctx) - keep
                 if n in opts and opts[n].startswith("--"))
    if bad:
        raise ValueError(f"{what} does not use {', '.join(bad)}")


# Help without type noise on flags ("--json <bool>"): a flag takes no value.
_display_type_rich = typer.core.TyperOption.display_type_rich


def _flag_display_type(self: typer.core.TyperOption, ctx: Any) -> str | None:
    if getattr(self, "is_flag", False):
        return None
    return _display_type_rich(self, ctx)


typer.core.TyperOption.display_type_rich = _flag_display_type  # type: ignore[method-assign]

app = typer.Typer(
    name="dpaudit", add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="Empirical privacy auditing of differential privacy, and attack-risk bounds.")
bound_app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False,
                        help="Compute an epsilon lower bound from counts (no raw data needed).")
app.add_typer(bound_app, name="bound")


def _version(value: bool) -> None:
    if value:
        from dpaudit import __version__

        typer.echo(f"dpaudit {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Empirical privacy auditing of differential privacy, and attack-risk bounds."""

console = Console()


def print_json(obj: Any) -> None:
    """Strict JSON on stdout (no rich markup, no bare NaN/Infinity), for scripting."""
    typer.echo(json.dumps(json_safe(obj), indent=2, sort_keys=False, default=str,
                          allow_nan=False))


def verdict(epsilon_lb: float, claimed: float | None, assumption: str | None = None
            ) -> str | None:
    """The one-line verdict against a claimed epsilon; ``assumption`` (the basis row's
    ``AuditResult.assumption``) is named first: "assuming the mechanism is μ-GDP, violation:
    ..." (:func:`dpaudit.estimators.verdict.verdict_sentence`)."""
    if claimed is None:
        return None
    from dpaudit.estimators.verdict import verdict_sentence

    return verdict_sentence(epsilon_lb, claimed, assumption)


def _basis_verdict(rs: Sequence[AuditResult], claimed: float | None) -> str | None:
    """The verdict of the first (primary) row; an estimate cannot be the basis."""
    if claimed is None or not rs:
        return None
    from dpaudit.estimators.verdict import check_not_estimate

    check_not_estimate(rs[0])
    v = verdict(rs[0].epsilon, claimed, rs[0].assumption)
    if v and len(rs) > 1:
        v += f" (verdict from {rs[0].method}; other rows are for comparison)"
    return v


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
        out.append(f"note: {', '.join(names)} {verb} {text} (null family {fam}): not valid for "
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


def json_payload(results: Sequence[AuditResult] | AuditResult, *,
                 claimed_epsilon: float | None = None, true_epsilon: float | None = None,
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The object ``print_results(..., as_json=True)`` prints (also what ``--report`` and
    ``dpaudit report`` read): results, claim, violation and verdict (from the first result),
    true epsilon and ``extra``; a lone result without extras is printed bare."""
    rs: list[AuditResult] = [results] if isinstance(results, AuditResult) else list(results)
    best = rs[0].epsilon if rs else 0.0
    v = _basis_verdict(rs, claimed_epsilon)
    out: dict[str, Any] = {"results": [r.to_dict() for r in rs]}
    if claimed_epsilon is not None:
        out["claimed_epsilon"] = claimed_epsilon
        out["violation"] = bool(best > claimed_epsilon)
        out["verdict"] = v
        out["verdict_assumption"] = rs[0].assumption
    if true_epsilon is not None:
        out["true_epsilon"] = true_epsilon
    if extra:
        out.update(extra)
    return out if len(rs) != 1 or extra or claimed_epsilon is not None \
        or true_epsilon is not None else rs[0].to_dict()


def print_results(results: Sequence[AuditResult] | AuditResult, *, as_json: bool = False,
                  claimed_epsilon: float | None = None, true_epsilon: float | None = None,
                  title: str = "Audit", extra: dict[str, Any] | None = None) -> None:
    """Render results side by side (rich table) or as JSON (keys mirror AuditResult).

    With ``claimed_epsilon`` the verdict is taken from the first result (the primary method):
    taking the best of several bounds would not hold at the stated confidence.
    """
    rs: list[AuditResult] = [results] if isinstance(results, AuditResult) else list(results)
    # The verdict rests on the FIRST (primary) result only: each row holds at the stated
    # confidence on its own, but the maximum over several rows does not.
    v = _basis_verdict(rs, claimed_epsilon)
    if as_json:
        print_json(json_payload(rs, claimed_epsilon=claimed_epsilon, true_epsilon=true_epsilon,
                                extra=extra))
        return
    # a row that is an estimate (under an assumption) is never shown as "epsilon >="
    estimates = any(r.is_estimate for r in rs)
    header = ["method", "epsilon" if estimates else "epsilon >=", "delta", "confidence"]
    rows = []
    for r in rs:
        e = fmt_number(r.epsilon)
        if estimates:
            e = f"~ {e} (estimate)" if r.is_estimate else f">= {e}"
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
    table = Table(title=title, caption=", ".join(caption) or None)
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
