"""The typer application and its lazily loaded commands.

Only typer is imported here: ``dpaudit --help`` lists the commands from the table
:data:`dpaudit.cli.COMMANDS` (name -> modules that register it, one-line help) without
importing them, and a command's modules (with NumPy, SciPy and the estimators) are imported when
the command line names that command.  A command module registers itself as before, with
``@app.command(...)`` on :data:`app` or ``@bound_app.command(...)`` on :data:`bound_app`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer
import typer.core
import typer.main

__all__ = ["App", "app", "bound_app", "LazyGroup", "load_command", "load_commands"]

PACKAGE = "dpaudit.cli"


def _table() -> dict[str, Any]:
    from dpaudit.cli import COMMANDS

    return COMMANDS


def load_command(name: str) -> None:
    """Import the modules that register command ``name`` (see :data:`dpaudit.cli.COMMANDS`)."""
    for module in _table()[name].modules:
        importlib.import_module(f"{PACKAGE}.{module}")


def load_commands() -> None:
    """Import every command module (the whole command tree, e.g. for generated docs)."""
    for name in _table():
        load_command(name)


def _quiet_flags(params: list[Any]) -> list[Any]:
    """Help without type noise on flags ("--json <bool>"): a flag takes no value, so its
    displayed type is empty."""
    for p in params:
        if getattr(p, "is_flag", False) and getattr(p, "metavar", "") is None:
            p.metavar = ""
    return params


class Command(typer.core.TyperCommand):
    """Every dpaudit command: flags are shown without a value type in ``--help``."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _quiet_flags(super().get_params(ctx))


class Group(typer.core.TyperGroup):
    """Every dpaudit sub-command group (``bound``, ``store``): as :class:`Command`."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _quiet_flags(super().get_params(ctx))


class App(typer.Typer):
    """A typer app whose commands and groups are :class:`Command` / :class:`Group`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", Group)
        kwargs.setdefault("pretty_exceptions_enable", False)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)


class LazyGroup(Group):
    """The root group: commands not yet imported are listed by name and one-line help, and
    imported when the command line resolves to them."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = list(super().list_commands(ctx))
        return names + [n for n in _table() if n not in names]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        cmd = super().get_command(ctx, cmd_name)
        table = _table()
        if cmd is None and cmd_name in table:
            # a stand-in for listings (``dpaudit --help``); resolve_command swaps in the real one
            cmd = Command(cmd_name, help=table[cmd_name].help,
                                          short_help=table[cmd_name].help)
            cmd.dpaudit_lazy = True  # type: ignore[attr-defined]
        return cmd

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, cmd, rest = super().resolve_command(ctx, args)
        if name in _table() and (getattr(cmd, "dpaudit_lazy", False) or not _loaded(name)):
            # not yet imported, or only some of its modules (``bound``: bound and lifted)
            load_command(name)
            cmd = typer.main.get_group(app).commands[name]
            self.add_command(cmd, name)
        return name, cmd, rest


def _loaded(name: str) -> bool:
    return all(f"{PACKAGE}.{m}" in sys.modules for m in _table()[name].modules)


app = App(name="dpaudit", cls=LazyGroup, add_completion=False, no_args_is_help=True,
          help="Empirical privacy auditing of differential privacy, and attack-risk bounds.")
bound_app = App(no_args_is_help=True,
                help="Compute an epsilon lower bound from counts (no raw data needed).")


def _version(value: bool) -> None:
    if value:
        from dpaudit import __version__

        typer.echo(f"dpaudit {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Empirical privacy auditing of differential privacy, and attack-risk bounds."""
