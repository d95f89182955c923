"""The CLI reference page, generated from the typer commands (no hand-maintained copy).

``markdown()`` walks the click command tree behind :data:`dpaudit.cli.app` (every command
module loaded) in the order of :data:`dpaudit.cli.COMMANDS` and writes, for each command and
sub-command, its help text, its usage line and a table of its arguments and options (names,
value type, default, help).  The site's hook (``tools/docs_hooks.py``) substitutes it for the
marker ``<!-- dpaudit:cli-reference -->`` in ``docs/reference/cli.md``; ``python
tools/cli_reference.py`` prints it.
"""

from __future__ import annotations

import re
from typing import Any

MARKER = "<!-- dpaudit:cli-reference -->"


def _cell(text: str) -> str:
    """One Markdown table cell: one line, pipes escaped."""
    text = re.sub(r"\s+", " ", text or "").strip()
    return text.replace("|", "\\|")


def _command(cmd: Any, path: list[str], ctx: Any, out: list[str], level: int) -> None:
    """Append the section of ``cmd`` (and of its sub-commands) to ``out``.

    Only click's stable command API is used (``get_params``, ``get_help_record``,
    ``collect_usage_pieces``, ``list_commands``/``get_command``), so the page is the same
    whichever typer release (with its own click, or click itself) is installed."""
    full = " ".join(path)
    out.append(f"{'#' * level} `{full}`\n")
    helptext = (cmd.help or cmd.short_help or "").split("\f")[0].strip()
    if helptext:
        out.append(helptext + "\n")
    sub_ctx = cmd.context_class(cmd, info_name=path[-1], parent=ctx)
    pieces = " ".join(cmd.collect_usage_pieces(sub_ctx))
    out.append(f"```text\nUsage: {full} {pieces}\n```\n")
    rows = []
    for p in cmd.get_params(sub_ctx):
        if getattr(p, "hidden", False) or p.name == "help":
            continue
        record = p.get_help_record(sub_ctx)
        if record is None:  # an argument without help text
            record = (str(getattr(p, "human_readable_name", p.name)), "")
        names, helpline = record
        kind = " (argument)" if getattr(p, "param_type_name", "") == "argument" else ""
        rows.append(f"| `{_cell(names)}`{kind} | {_cell(helpline)} |")
    if rows:
        out.append("| option | meaning |\n|---|---|")
        out.extend(rows)
        out.append("")
    if hasattr(cmd, "list_commands"):
        for name in cmd.list_commands(sub_ctx):
            sub = cmd.get_command(sub_ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                _command(sub, [*path, name], sub_ctx, out, level + 1)


def markdown() -> str:
    """The reference of every ``dpaudit`` command, as Markdown."""
    import typer.main

    from dpaudit.cli import COMMANDS, load_commands
    from dpaudit.cli.app import app

    load_commands()
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="dpaudit")
    out: list[str] = []
    for name in COMMANDS:
        cmd = root.get_command(ctx, name)
        if cmd is None:
            raise ValueError(f"command {name!r} of dpaudit.cli.COMMANDS is not registered")
        _command(cmd, ["dpaudit", name], ctx, out, 2)
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown())
