"""``dpaudit zoo [--trials N] [--seed S] [--only LIB[,LIB/NAME...]] [--confidence C]
[--out docs/zoo.md] [--store-dir DIR [--resume]] [--json]``.

Reruns the zoo of black-box audits of released DP libraries (:mod:`dpaudit.zoo`) and writes the
Markdown report.  The libraries come from the ``zoo`` extra; the ones not installed are
skipped with the reason.  Each entry's final trials can go to a durable trial store
(``--store-dir``), so an interrupted run resumes with ``--resume``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dpaudit.cli.common import app, console, print_json

if TYPE_CHECKING:
    from dpaudit.zoo.audit import ZooResult
    from dpaudit.zoo.run import ZooRun


@app.command("zoo")
def zoo_cmd(
    trials: int = typer.Option(4000, "--trials", help="Final-audit trials per entry (times "
                               "the entry's share); the search uses a quarter as many."),
    seed: int = typer.Option(0, "--seed", help="Seed of the final audits (the search uses a "
                             "disjoint stream)."),
    only: str | None = typer.Option(None, "--only", help="Comma-separated libraries or "
                                    "entry keys (e.g. diffprivlib,opendp/laplace)."),
    confidence: float = typer.Option(0.99, "--confidence", help="Probability that no "
                                     "violation in the run is false (Bonferroni over "
                                     "entries)."),
    out: Path | None = typer.Option(None, "--out", help="Write the Markdown report here "
                                    "(e.g. docs/zoo.md)."),
    store_dir: Path | None = typer.Option(None, "--store-dir", help="One SQLite trial store "
                                          "per entry in this directory (durable)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the audits in --store-dir."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Audit released DP libraries (black-box) and write the zoo report."""
    from dpaudit.output import check_output_target, write_text
    from dpaudit.zoo.run import markdown, run_zoo

    if out is not None:
        check_output_target(out, what="--out")
    if store_dir is not None and store_dir.exists() and not store_dir.is_dir():
        raise ValueError(f"--store-dir {store_dir} exists and is not a directory (it holds "
                         f"one trial store per entry)")
    if resume and store_dir is None:
        raise ValueError("--resume needs --store-dir")
    sel = tuple(s.strip() for s in only.split(",") if s.strip()) if only else None
    if only is not None and not sel:
        raise ValueError("--only must name at least one library or entry key")

    cmd = f"dpaudit zoo --trials {trials} --seed {seed}" + \
        (f" --only {only}" if only else "") + (f" --out {out}" if out else "")

    def show(r: ZooResult) -> None:
        if not as_json:
            console.print(f"{r.key}: {r.currency} >= {r.epsilon_lb:.3f} (tested "
                          f"{r.tested_epsilon:.4g})"
                          f" -> {r.verdict}")

    def partial(run: ZooRun) -> None:
        # the report so far, rewritten after every entry (an interrupted run keeps it)
        if out is not None:
            write_text(out, markdown(run, command=cmd + "  (in progress)"), what="--out")

    run = run_zoo(trials=trials, seed=seed, only=sel, confidence=confidence,
                  store_dir=store_dir, resume=resume, progress=show, partial=partial)
    if out is not None:
        write_text(out, markdown(run, command=cmd), what="--out")
    if as_json:
        print_json(run.to_dict())
    else:
        v = [r.key for r in run.results if r.verdict == "violation"]
        console.print(f"{len(run.results)} entries, {len(v)} violation(s)"
                      + (f": {', '.join(v)}" if v else "")
                      + (f"; report: {out}" if out else ""))
        for lib, why in run.skipped.items():
            console.print(f"skipped {lib}: {why}")
