"""``dpaudit store info PATH [--json]`` and ``dpaudit store export PATH OUT.parquet``: what a
trial store (:mod:`dpaudit.engine.store`) holds."""

from __future__ import annotations

import typer
from rich.table import Table

from dpaudit.cli.app import App
from dpaudit.cli.common import app, console, print_json

store_app = App(no_args_is_help=True,
                help="Inspect and export trial stores (dpaudit run --store).")
app.add_typer(store_app, name="store")


@store_app.command("info")
def info_cmd(path: str = typer.Argument(..., help="Trial store (SQLite)."),
             as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")
             ) -> None:
    """Audit, configuration, version, trial and failure counts of a store."""
    from dpaudit.engine.store import TrialStore

    with TrialStore(path, readonly=True) as st:
        info = st.info()
    if as_json:
        print_json(info.to_dict())
        return
    table = Table(title=f"Trial store {path}", show_header=False)
    table.add_column("key")
    table.add_column("value")
    d = info.to_dict()
    for key in ("audit_id", "version", "trials", "failures", "max_trial", "missing_below_max",
                "runs", "size_bytes"):
        table.add_row(key, str(d[key]))
    table.add_row("fields", ", ".join(info.fields) or "-")
    for k, v in (info.config or {}).items():
        table.add_row(f"config.{k}", str(v))
    console.print(table)


@store_app.command("export")
def export_cmd(path: str = typer.Argument(..., help="Trial store (SQLite)."),
               out: str = typer.Argument(..., help="Parquet file to write."),
               as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")
               ) -> None:
    """Export the trials as Parquet (needs pyarrow: pip install 'dpaudit[parquet]')."""
    from dpaudit.engine.store import TrialStore
    from dpaudit.output import check_output_target

    check_output_target(out, path, what="export")
    with TrialStore(path, readonly=True) as st:
        written = st.to_parquet(out)
        n = st.info().trials
    if as_json:
        print_json({"path": str(written), "trials": n})
    else:
        console.print(f"wrote {n} trials to {written}")
