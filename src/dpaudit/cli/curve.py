"""``dpaudit curve KIND ...``: epsilon at delta and the optimal bit error e* of a guarantee."""

from __future__ import annotations

import typer
from rich.table import Table

from dpaudit.cli.common import app, console, print_json
from dpaudit.curves import (
    Curve,
    EpsDeltaDP,
    GaussianDP,
    LaplaceDP,
    SubsampledGaussianDP,
    dpsgd_curve,
)
from dpaudit.validation import check_choice, check_delta

KINDS = ("gdp", "laplace", "eps-delta", "sgm", "dpsgd")


def _need(name: str, value: float | None, kind: str) -> float:
    if value is None:
        raise ValueError(f"curve {kind!r} needs --{name}")
    return value


def build_curve(kind: str, *, mu: float | None = None, eps: float | None = None,
                curve_delta: float | None = None, q: float | None = None,
                noise_multiplier: float | None = None, steps: int | None = None,
                symmetrized: bool = False) -> Curve:
    check_choice("kind", kind, KINDS)
    if kind == "gdp":
        return GaussianDP(_need("mu", mu, kind))
    if kind == "laplace":
        return LaplaceDP(_need("eps", eps, kind))
    if kind == "eps-delta":
        return EpsDeltaDP(_need("eps", eps, kind), _need("curve-delta", curve_delta, kind))
    if kind == "sgm":
        return SubsampledGaussianDP(_need("mu", mu, kind), _need("q", q, kind),
                                    symmetrized=symmetrized)
    return dpsgd_curve(_need("noise-multiplier", noise_multiplier, kind), _need("q", q, kind),
                       int(_need("steps", steps, kind)))


@app.command("curve")
def curve_cmd(
    kind: str = typer.Argument(..., help=f"One of: {', '.join(KINDS)}."),
    mu: float | None = typer.Option(None, "--mu", help="GDP / SGM parameter mu."),
    eps: float | None = typer.Option(None, "--eps", help="Laplace / (eps, delta) epsilon."),
    curve_delta: float | None = typer.Option(None, "--curve-delta",
                                             help="delta of an eps-delta curve."),
    q: float | None = typer.Option(None, "--q", help="Sampling rate (sgm, dpsgd)."),
    noise_multiplier: float | None = typer.Option(None, "--noise-multiplier",
                                                  help="DP-SGD noise multiplier."),
    steps: int | None = typer.Option(None, "--steps", help="DP-SGD steps."),
    symmetrized: bool = typer.Option(False, "--symmetrized",
                                     help="SGM: Dong et al.'s symmetrised guarantee."),
    delta: float = typer.Option(1e-5, "--delta", help="delta at which to report epsilon."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Print epsilon(delta) and the optimal single-bit error e* of a privacy curve."""
    delta = check_delta(delta)
    c = build_curve(kind, mu=mu, eps=eps, curve_delta=curve_delta, q=q,
                    noise_multiplier=noise_multiplier, steps=steps, symmetrized=symmetrized)
    out = {**c.to_dict(), "delta": delta, "epsilon": c.epsilon(delta), "bit_error": c.bit_error()}
    if as_json:
        print_json(out)
        return
    t = Table(title=repr(c))
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_row(f"epsilon at delta={delta:g}", f"{out['epsilon']:.4f}")
    t.add_row("optimal bit error e*", f"{out['bit_error']:.6f}")
    console.print(t)
