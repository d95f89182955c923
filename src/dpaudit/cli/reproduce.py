"""``dpaudit reproduce NAME --out DIR``: run a registered experiment runner."""

from __future__ import annotations

from pathlib import Path

import typer

from dpaudit.cli.common import app, console, print_json
from dpaudit.papers.experiments.registry import EXPERIMENTS, SIZES, get_experiment, load_all
from dpaudit.validation import check_choice, check_count


@app.command("reproduce")
def reproduce(
    name: str = typer.Argument(..., help="Experiment name (use 'list' to see them all)."),
    out: Path = typer.Option(Path("out"), "--out", help="Directory for the CSV and PNG."),
    size: str = typer.Option("small", "--size", help="tiny (seconds), small (about a minute) "
                             "or full (the paper's settings; slow)."),
    full: bool = typer.Option(False, "--full", help="Same as --size full."),
    seed: int = typer.Option(0, "--seed", help="Base random seed."),
    as_json: bool = typer.Option(False, "--json", help="Print the written paths as JSON."),
) -> None:
    """Reproduce a paper figure/table as CSV + PNG."""
    if name == "list":
        load_all()
        if as_json:
            print_json({"experiments": [{"name": k, "source": EXPERIMENTS[k].source,
                                         "description": EXPERIMENTS[k].description}
                                        for k in sorted(EXPERIMENTS)]})
            return
        for key in sorted(EXPERIMENTS):
            e = EXPERIMENTS[key]
            console.print(f"[bold]{key}[/bold]  {e.source}: {e.description}")
        return
    seed = check_count("--seed", seed)
    size = check_choice("--size", size, SIZES)
    if full and size not in ("small", "full"):
        raise ValueError(f"--full means --size full; it contradicts --size {size}")
    size = "full" if full else size
    exp = get_experiment(name)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory (the CSV and PNG files "
                         f"go into a directory)")
    out.mkdir(parents=True, exist_ok=True)
    paths = exp.run(out, size=size, seed=seed)
    if as_json:
        print_json({"experiment": name, "files": [str(p) for p in paths]})
    else:
        for p in paths:
            console.print(f"wrote {p}")
