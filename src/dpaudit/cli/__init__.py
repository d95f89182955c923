"""The ``dpaudit`` command-line tool (typer + rich).

Commands load lazily.  :data:`COMMANDS` maps each top-level command to the modules of this
package that register it and the one-line help ``dpaudit --help`` prints; a command's modules
are imported only when the command line names it, so ``dpaudit --version`` and
``dpaudit --help`` import neither NumPy nor any command module.  To add a command, write a
module that decorates a function with ``@app.command("name")`` (``from dpaudit.cli.common
import app``), or a sub-app with ``app.add_typer(...)``, and add one row to :data:`COMMANDS`
(CONTRIBUTING.md; ``tests/test_cli_lazy.py`` checks the table against the modules).
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

__all__ = ["COMMANDS", "Command", "app", "main", "load_commands", "root_help"]


class Command(NamedTuple):
    """Where a command lives: the modules (of this package) registering it; its one-line help."""

    modules: tuple[str, ...]
    help: str


#: command name -> (modules that register it, one-line help for ``dpaudit --help``)
COMMANDS: dict[str, Command] = {
    "audit": Command(("audit",), "Multi-run audit (Hypothesis Interpretation, "
                     "Clopper-Pearson): epsilon lower bound + GDP-based estimate."),
    "curve": Command(("curve",), "Print epsilon(delta) and the optimal single-bit error e* of "
                     "a privacy curve."),
    "demo": Command(("demo",), "Run the showcase audits: one-run DP-SGD (correct vs flawed), "
                    "then a multi-run audit."),
    "one-run": Command(("one_run",), "One-run audits (tight, bits, Steinke, Mahloujifar) side "
                       "by side on the same guesses."),
    "report": Command(("report",), "Build the self-contained HTML (or PNG) audit card from a "
                      "saved --json result."),
    "reproduce": Command(("reproduce",), "Reproduce a paper figure/table as CSV + PNG."),
    "risk": Command(("risk",), "Bound how many of n targets any attacker can reconstruct under "
                    "(epsilon, delta)-DP."),
    "run": Command(("run",), "Black-box multi-run audit of your mechanism on the trial "
                   "engine."),
    "simulate": Command(("simulate",), "One-run audit of a simulated mechanism with every "
                        "method, and the verdict."),
    "train-audit": Command(("train_audit",), "Audit one real DP-SGD training run (Opacus) with "
                           "canaries: every method and the verdict."),
    "bound": Command(("bound", "lifted"), "Compute an epsilon lower bound from counts (no raw "
                     "data needed)."),
    "store": Command(("store",), "Inspect and export trial stores (dpaudit run --store)."),
    "zoo": Command(("zoo",), "Audit released DP libraries (black-box) and write the zoo "
                   "report."),
}


def __getattr__(name: str) -> Any:
    if name == "app":
        from dpaudit.cli.app import app

        return app
    raise AttributeError(f"module 'dpaudit.cli' has no attribute {name!r}")


def load_commands() -> None:
    """Import every command module (the whole command tree)."""
    from dpaudit.cli.app import load_commands as _load

    _load()


ROOT_HELP = "Empirical privacy auditing of differential privacy, and attack-risk bounds."


def root_help() -> str:
    """``dpaudit --help``: the usage line and the command table, without importing typer."""
    width = max(len(n) for n in COMMANDS) + 2
    lines = ["Usage: dpaudit [OPTIONS] COMMAND [ARGS]...", "", f"  {ROOT_HELP}", "",
             "Options:", f"  {'--version':<{width}} Print the version and exit.",
             f"  {'--help':<{width}} Show this message and exit.", "", "Commands:"]
    lines += [f"  {name:<{width}} {c.help}" for name, c in COMMANDS.items()]
    lines += ["", "Run 'dpaudit COMMAND --help' for a command's options."]
    return "\n".join(lines)


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
    args = list(sys.argv[1:] if argv is None else argv)
    # the two start-up paths answer from this module alone (no typer, no NumPy)
    if args == ["--version"]:
        from dpaudit import __version__

        print(f"dpaudit {__version__}")
        return 0
    if args in ([], ["--help"]):
        print(root_help())
        return 0 if args else 2  # no command at all is a usage error, as in click
    import typer

    from dpaudit.cli.aliases import rewrite_aliases
    from dpaudit.cli.app import app

    out_mod = sys.modules.get("dpaudit.output")
    if out_mod is not None:  # the inputs noted by an earlier command in this process
        out_mod.reset_inputs()
    try:
        notes: list[str] = []
        args = rewrite_aliases(args, notes=notes)
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
        # usage errors of click (bad option, missing argument, ...): duck-typed, so that the
        # click typer depends on (vendored or not) needs no import here
        if hasattr(e, "format_message") and hasattr(e, "exit_code"):
            msg = e.format_message()
            if msg:
                print(f"error: {msg}", file=sys.stderr)
            return 2
        raise
    return int(rv) if isinstance(rv, int) else 0


def _console_main() -> None:  # pragma: no cover - thin wrapper for the console script
    sys.exit(main())
