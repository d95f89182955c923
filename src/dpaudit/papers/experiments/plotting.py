"""Shared helpers of the figure runners: size presets, CSV output, seed summaries and plots.

Every runner writes a *long* CSV (one row per setting x seed x method, so every seed's number
is kept) and a PNG drawn from the same rows: mean +- one standard deviation over seeds per
method, and the theoretical epsilon as a dashed black line (the value the audit tries to reach).

The registry skips this module when it imports runners (it registers nothing).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.papers.experiments.registry import SIZES
from dpaudit.validation import check_choice

__all__ = [
    "SIZES", "resolve_size", "seed_sequence", "write_csv", "summarize", "plot_panels",
    "COLORS",
]

# One colour per method name, so that all figures read the same way.
COLORS: dict[str, str] = {
    "tight": "tab:blue", "tight_exact": "tab:blue", "tight_paper": "tab:cyan",
    "tight_hoeffding": "tab:purple", "bits_cp": "tab:blue", "bits_aci": "tab:cyan",
    "bits_hoeffding": "tab:purple", "xiang": "tab:green", "steinke": "tab:red",
    "steinke_best_k": "tab:red", "steinke_no_abstain": "tab:orange", "mahloujifar": "tab:olive",
    "gdp_ceiling": "tab:gray", "accuracy v/r": "tab:blue",
}
#: series drawn as reference lines rather than estimates.
REFERENCE_SERIES = ("gdp_ceiling",)


def resolve_size(full: bool, size: str | None) -> str:
    """``size`` wins when given ("tiny" for the test suite, "small" default, "full" = paper)."""
    if size is None:
        return "full" if full else "small"
    return check_choice("size", size, SIZES)


def seed_sequence(base_seed: int, *key: int) -> np.random.Generator:
    """Independent, reproducible generator for (base seed, setting index..., repetition)."""
    return np.random.default_rng(np.random.SeedSequence([int(base_seed), *map(int, key)]))


def _fmt(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return "" if math.isnan(v) else repr(v) if math.isinf(v) else f"{v:.6g}"
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]],
              columns: Sequence[str] | None = None) -> Path:
    """Write ``rows`` (dicts) to ``path``; columns = union of keys in first-seen order."""
    if columns is None:
        seen: dict[str, None] = {}
        for row in rows:
            for k in row:
                seen.setdefault(k, None)
        columns = list(seen)
    from dpaudit.output import atomic_output

    with atomic_output(path, what="CSV") as tmp, tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({k: _fmt(row.get(k, "")) for k in columns})
    return path


def summarize(rows: Iterable[Mapping[str, Any]], keys: Sequence[str],
              value: str = "epsilon") -> list[dict[str, Any]]:
    """Group ``rows`` by ``keys``: mean, std (ddof=0), min, max and count of ``value``."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        v = row.get(value)
        if v is None or v == "":
            continue
        groups[tuple(row[k] for k in keys)].append(float(v))
    out = []
    for key, vals in groups.items():
        a = np.asarray(vals, dtype=float)
        out.append({**dict(zip(keys, key, strict=True)), "mean": float(a.mean()),
                    "std": float(a.std()), "min": float(a.min()), "max": float(a.max()),
                    "count": int(a.size)})
    return out


def plot_panels(path: Path, rows: Sequence[Mapping[str, Any]], *, panel_key: str | None,
                x_key: str, y_key: str = "epsilon", series_key: str = "method",
                theory_key: str | None = "theory_eps", title: Callable[[Any], str] | None = None,
                xlabel: str = "n (number of canaries)", ylabel: str = "epsilon lower bound",
                xlog: bool = True, ylog: bool = False, suptitle: str = "",
                hlines: Mapping[Any, Sequence[tuple[float, str]]] | None = None,
                labels: Mapping[str, str] | None = None, diagonal: bool = False,
                ylim: tuple[float | None, float | None] | None = None,
                theory_label: str = "theoretical eps") -> Path:
    """One panel per value of ``panel_key``; per series mean +- std over seeds vs ``x_key``.

    ``theory_key`` names a per-row column holding the theoretical epsilon: drawn dashed black
    (constant per panel: a horizontal line; varying with x: a dashed curve).  ``diagonal``
    draws y = x instead (for figures whose x-axis is the claimed epsilon).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({r[panel_key] for r in rows}) if panel_key else [None]
    ncol = len(panels)
    fig, axes = plt.subplots(1, ncol, figsize=(max(4.6 * ncol, 7.0), 4.0), squeeze=False)
    for i, (ax, pv) in enumerate(zip(axes[0], panels, strict=True)):
        theory_txt = ""
        prow = [r for r in rows if panel_key is None or r[panel_key] == pv]
        series = list(dict.fromkeys(r[series_key] for r in prow))
        for s in series:
            summ = sorted(summarize([r for r in prow if r[series_key] == s], [x_key], y_key),
                          key=lambda d: float(d[x_key]))
            if not summ:
                continue
            x = np.array([float(d[x_key]) for d in summ])
            m = np.array([d["mean"] for d in summ])
            sd = np.array([d["std"] for d in summ])
            label = (labels or {}).get(s, s)
            if s in REFERENCE_SERIES:
                ax.plot(x, m, ls=":", lw=1.5, label=label, color=COLORS.get(s))
                continue
            ax.plot(x, m, marker="o", ms=3.5, label=label, color=COLORS.get(s))
            ax.fill_between(x, m - sd, m + sd, alpha=0.2, color=COLORS.get(s))
        if theory_key:
            th = sorted(summarize(prow, [x_key], theory_key), key=lambda d: float(d[x_key]))
            if th:
                tx = np.array([float(d[x_key]) for d in th])
                ty = np.array([d["mean"] for d in th])
                if np.allclose(ty, ty[0]):
                    ax.axhline(ty[0], color="k", ls="--", lw=1.2, label=theory_label)
                    theory_txt = f" ({theory_label} {ty[0]:.3g})"
                else:
                    ax.plot(tx, ty, "k--", lw=1.2, label=theory_label)
        if diagonal:
            xs = np.array(sorted({float(r[x_key]) for r in prow}))
            ax.plot(xs, xs, "k--", lw=1.2, label="claimed eps (y = x)")
        for yv, lab in (hlines or {}).get(pv, ()):
            ax.axhline(yv, color="gray", ls=":", lw=1.0, label=lab)
        if xlog:
            ax.set_xscale("log")
        if ylog:
            ax.set_yscale("log")
        if ylim is not None:
            ax.set_ylim(*ylim)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title is not None:
            ax.set_title(title(pv) + theory_txt, fontsize=10)
        ax.grid(alpha=0.3)
        if i == 0 or hlines:
            ax.legend(fontsize=7)
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def save_figure(fig: Any, path: Path, dpi: int = 120) -> Path:
    """``fig.savefig`` through :func:`dpaudit.output.atomic_output` (a regular file or a new
    path only, renamed into place when complete); the format follows the suffix of ``path``."""
    from dpaudit.output import atomic_output

    with atomic_output(path, what="figure") as tmp:
        fig.savefig(tmp, dpi=dpi, format=Path(path).suffix.lstrip(".") or "png")
    return Path(path)
