"""The ``dpaudit`` command-line tool (typer + rich).

Commands live in sibling modules, each of which registers itself on :data:`app` (or on a
sub-app such as :data:`dpaudit.cli.common.bound_app`) when imported; :func:`main` imports
every module of this package, so adding a command means adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from dpaudit.cli.common import app, rewrite_aliases

__all__ = ["app", "main"]

_loaded = False


def load_commands() -> None:
    global _loaded
    if _loaded:
        return
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name != "common":
            importlib.import_module(f"{__name__}.{info.name}")
    _loaded = True


def check_confidence_option(args: list[str]) -> None:
    """``--confidence`` of every command is in [0.5, 1): it is the probability that the printed
    bound holds, and below one half a "bound" is more likely wrong than right (docs/cli.md).
    The Python API keeps (0, 1) (seed 003's v_UB at any quantile)."""
    for i, a in enumerate(args):
        if a == "--":
            return
        value = args[i + 1] if a == "--confidence" and i + 1 < len(args) else (
            a.partition("=")[2] if a.startswith("--confidence=") else None)
        if value is None:
            continue
        try:
            v = float(value)
        except ValueError:
            continue  # the option's own parser names it
        if 0 < v < 0.5:
            raise ValueError(f"--confidence must be in [0.5, 1) (the probability that the "
                             f"bound holds; below one half it is more likely wrong than "
                             f"right), got {value}")


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input and unreadable files print one line on stderr and exit 2."""
    load_commands()
    io_mod = sys.modules.get("dpaudit.io")
    if io_mod is not None:  # the inputs noted by an earlier command in this process
        io_mod.reset_inputs()
    try:
        notes: list[str] = []
        args = rewrite_aliases(sys.argv[1:] if argv is None else argv, notes=notes)
        check_confidence_option(args)
        rv = app(args=args, prog_name="dpaudit", standalone_mode=False)
        for note in notes:
            print(note, file=sys.stderr)
    except typer.Exit as e:
        return int(e.exit_code or 0)
    except (typer.Abort, KeyboardInterrupt):
        print("error: aborted", file=sys.stderr)
        return 130
    except (ValueError, OSError, KeyError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2
    except Exception as e:
        # usage errors of the (vendored) click layer: bad option, missing argument, ...
        if hasattr(e, "format_message") and hasattr(e, "exit_code"):
            msg = e.format_message()
            if msg:
                print(f"error: {msg}", file=sys.stderr)
            return 2
        raise
    return int(rv) if isinstance(rv, int) else 0


def _console_main() -> None:  # pragma: no cover - thin wrapper for the console script
    sys.exit(main())
