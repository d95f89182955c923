"""``dpaudit curve KIND ...``: epsilon at delta and the optimal bit error e* of a guarantee.

KIND is ``gdp`` (``--mu``), ``laplace`` (``--epsilon``), ``eps_delta`` (``--epsilon``,
``--curve-delta``), ``subsampled_gaussian`` (alias ``sgm``; ``--mu``, ``--sampling-rate``,
``--symmetrized``) or ``dpsgd`` (``--noise-multiplier``, ``--sampling-rate``, ``--steps``).
An option that the kind does not use is an error rather than silently ignored.
"""

from __future__ import annotations

import math

import typer
from rich.table import Table

from dpaudit.cli.common import app, console, normalize_name, print_json
from dpaudit.curves import (
    Curve,
    EpsDeltaDP,
    GaussianDP,
    LaplaceDP,
    SubsampledGaussianDP,
    dpsgd_curve,
)
from dpaudit.validation import check_choice, check_count, check_delta

KINDS = ("gdp", "laplace", "eps_delta", "subsampled_gaussian", "dpsgd")
#: Accepted other spellings of a kind.
KIND_ALIASES = {"sgm": "subsampled_gaussian"}
#: The options each kind uses (CLI spelling); any other given option is an error.
KIND_OPTIONS = {
    "gdp": ("mu",),
    "laplace": ("epsilon",),
    "eps_delta": ("epsilon", "curve-delta"),
    "subsampled_gaussian": ("mu", "sampling-rate", "symmetrized"),
    "dpsgd": ("noise-multiplier", "sampling-rate", "steps"),
}


def _need(name: str, value: float | None, kind: str) -> float:
    if value is None:
        raise ValueError(f"curve {kind!r} needs --{name}")
    return value


#: e^epsilon must be a finite double for every conversion (e^709.78 overflows)
MAX_EPSILON = 700.0
#: smallest DP-SGD noise multiplier the accountant is asked about (below it the privacy-loss
#: distribution overflows, and the guarantee is meaningless anyway)
MIN_NOISE_MULTIPLIER = 0.05
MAX_STEPS = 10**9


def check_cli_epsilon(name: str, value: float) -> float:
    """An epsilon option: finite, in [0, MAX_EPSILON]."""
    if not (math.isfinite(value) and 0 <= value <= MAX_EPSILON):
        raise ValueError(f"{name} must be in [0, {MAX_EPSILON:g}] (e^epsilon must be a finite "
                         f"number), got {value!r}")
    return float(value)


def build_curve(kind: str, *, mu: float | None = None, eps: float | None = None,
                curve_delta: float | None = None, q: float | None = None,
                noise_multiplier: float | None = None, steps: int | None = None,
                symmetrized: bool = False) -> Curve:
    """The curve of ``kind``; options the kind does not use must be left unset."""
    k = normalize_name(kind)
    k = KIND_ALIASES.get(k, k)
    check_choice("kind", k, KINDS)
    given = {"mu": mu, "epsilon": eps, "curve-delta": curve_delta, "sampling-rate": q,
             "noise-multiplier": noise_multiplier, "steps": steps,
             "symmetrized": True if symmetrized else None}
    unused = [f"--{o}" for o, v in given.items() if v is not None and o not in KIND_OPTIONS[k]]
    if unused:
        raise ValueError(f"curve {k!r} does not use {', '.join(unused)} (it takes "
                         f"{', '.join('--' + o for o in KIND_OPTIONS[k])})")
    if k == "gdp":
        return GaussianDP(_need("mu", mu, k))
    if k == "laplace":
        return LaplaceDP(check_cli_epsilon("--epsilon", _need("epsilon", eps, k)))
    if k == "eps_delta":
        return EpsDeltaDP(check_cli_epsilon("--epsilon", _need("epsilon", eps, k)),
                          _need("curve-delta", curve_delta, k))
    if k == "subsampled_gaussian":
        return SubsampledGaussianDP(_need("mu", mu, k), _need("sampling-rate", q, k),
                                    symmetrized=symmetrized)
    sigma = _need("noise-multiplier", noise_multiplier, k)
    if not (math.isfinite(sigma) and sigma >= MIN_NOISE_MULTIPLIER):
        raise ValueError(f"--noise-multiplier must be a finite number >= "
                         f"{MIN_NOISE_MULTIPLIER:g} (below it the accountant's privacy loss "
                         f"overflows and no guarantee is left), got {sigma!r}")
    t = check_count("--steps", _need("steps", steps, k), minimum=1)
    if t > MAX_STEPS:
        raise ValueError(f"--steps must be in [1, {MAX_STEPS:,}], got {t:,}")
    try:
        return dpsgd_curve(sigma, _need("sampling-rate", q, k), t)
    except (OverflowError, ZeroDivisionError, FloatingPointError):
        raise ValueError(f"the accountant overflows for --noise-multiplier {sigma:g}, "
                         f"--sampling-rate {q:g}, --steps {t}: no meaningful guarantee; use "
                         f"more noise, a smaller sampling rate or fewer steps") from None


@app.command("curve")
def curve_cmd(
    kind: str = typer.Argument(..., help=f"One of: {', '.join(KINDS)} (alias sgm)."),
    mu: float | None = typer.Option(None, "--mu", help="GDP / subsampled Gaussian mu."),
    eps: float | None = typer.Option(None, "--epsilon", help="Laplace / (eps, delta) epsilon."),
    curve_delta: float | None = typer.Option(None, "--curve-delta",
                                             help="delta of an eps_delta curve."),
    q: float | None = typer.Option(None, "--sampling-rate",
                                   help="Sampling rate (subsampled_gaussian, dpsgd)."),
    noise_multiplier: float | None = typer.Option(None, "--noise-multiplier",
                                                  help="DP-SGD noise multiplier."),
    steps: int | None = typer.Option(None, "--steps", help="DP-SGD steps."),
    symmetrized: bool = typer.Option(False, "--symmetrized",
                                     help="subsampled_gaussian: Dong et al.'s symmetrised "
                                          "guarantee."),
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
    t.add_row(f"epsilon at delta={delta:g}", fmt_eps(out["epsilon"]))
    t.add_row("optimal bit error e*", f"{out['bit_error']:.6f}")
    console.print(t)


def fmt_eps(x: float) -> str:
    return f"{x:.4f}" if x == x and abs(x) != float("inf") else str(x)
