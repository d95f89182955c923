"""Shared CLI plumbing: the typer app, sub-apps, and result rendering (rich table / JSON)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from dpaudit.results import AuditResult

__all__ = ["app", "bound_app", "console", "fmt_number", "json_payload", "print_results",
           "print_json", "verdict"]

app = typer.Typer(
    name="dpaudit", add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="Empirical privacy auditing of differential privacy, and attack-risk bounds.")
bound_app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False,
                        help="Compute an epsilon lower bound from counts (no raw data needed).")
app.add_typer(bound_app, name="bound")

console = Console()


def print_json(obj: Any) -> None:
    """Plain JSON on stdout (no rich markup), for scripting."""
    typer.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


def verdict(epsilon_lb: float, claimed: float | None) -> str | None:
    """The one-line verdict against a claimed epsilon."""
    if claimed is None:
        return None
    if epsilon_lb > claimed:
        return f"violation: epsilon >= {epsilon_lb:.4f} > claimed {claimed:g}"
    return f"no violation detected (epsilon >= {epsilon_lb:.4f} <= claimed {claimed:g})"


def fmt_number(x: Any) -> str:
    """Table formatting: 4 decimals, scientific below 1e-3, '-' for None/NaN, 'inf'."""
    if x is None:
        return "-"
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
    v = verdict(best, claimed_epsilon)
    if v and len(rs) > 1:
        v += f" (verdict from {rs[0].method}; other rows are for comparison)"
    out: dict[str, Any] = {"results": [r.to_dict() for r in rs]}
    if claimed_epsilon is not None:
        out["claimed_epsilon"] = claimed_epsilon
        out["violation"] = bool(best > claimed_epsilon)
        out["verdict"] = v
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
    best = rs[0].epsilon if rs else 0.0
    v = verdict(best, claimed_epsilon)
    if v and len(rs) > 1:
        v += f" (verdict from {rs[0].method}; other rows are for comparison)"
    if as_json:
        print_json(json_payload(rs, claimed_epsilon=claimed_epsilon, true_epsilon=true_epsilon,
                                extra=extra))
        return
    table = Table(title=title)
    table.add_column("method")
    table.add_column("epsilon >=", justify="right")
    table.add_column("delta", justify="right")
    table.add_column("confidence", justify="right")
    if true_epsilon is not None:
        table.add_column("of true eps", justify="right")
    table.add_column("fit", justify="left")
    table.add_column("p-value", justify="right")
    for r in rs:
        row = [r.method, fmt_number(r.epsilon), fmt_number(r.delta), fmt_number(r.confidence)]
        if true_epsilon is not None:
            row.append(f"{100 * r.ratio_to(true_epsilon):.1f}%")
        row.append(", ".join(f"{k}={fmt_number(v)}" for k, v in r.params.items()) or "-")
        row.append(fmt_number(r.p_value))
        table.add_row(*row)
    console.print(table)
    if extra:
        for k, val in extra.items():
            console.print(f"{k}: {fmt_number(val)}")
    if v:
        console.print(f"[bold]{v}[/bold]")


def parse_float_list(text: str, name: str) -> list[float]:
    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"{name} must be a comma-separated list of numbers, got {text!r}") \
            from None


def iter_or_one(x: Any) -> Iterable[Any]:
    return x if isinstance(x, (list, tuple)) else [x]
