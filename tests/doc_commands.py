"""Documented command lines that a test runs *and* checks (``run-by=`` blocks of the docs).

A fenced shell block whose info string names test files -- ```` ```bash run-by=tests/x.py ````
-- is not run by ``tests/test_docs.py``; its ``dpaudit`` lines are run, as written, by those
tests through :func:`run_documented` or :func:`documented_output`, which then check what the
command wrote or printed (the numbers a reproduction is meant to show).  The same
seconds-long reproduction used to run twice, once unchecked for the docs and once checked by
its test.  ``test_docs.py`` fails if a line of
such a block is not named (by its first words) in one of the files its block names, so every
documented line is still run by the suite.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
from pathlib import Path

from test_docs import ROOT, cli_lines, code_blocks, run_by

__all__ = ["documented_line", "documented_output", "run_documented"]


def documented_line(doc: str, prefix: str) -> str:
    """The one ``dpaudit`` line of a ``run-by=`` block of ``doc`` (a path from the repository
    root) that starts with ``prefix``; an error if there is none or more than one."""
    found = [cmd for info, body, _ in code_blocks((ROOT / doc).read_text())
             if run_by(info) for cmd in cli_lines(body)
             if shlex.split(cmd, comments=True)[:len(shlex.split(prefix))] == shlex.split(prefix)]
    if len(found) != 1:
        raise AssertionError(f"{doc}: {len(found)} run-by lines start with {prefix!r}")
    return found[0]


def documented_output(doc: str, prefix: str, cwd: Path) -> str:
    """Run the documented line (:func:`documented_line`) through ``dpaudit.cli.main`` in
    ``cwd``, assert it exits 0, and return what it printed."""
    from dpaudit.cli import main

    cmd = documented_line(doc, prefix)
    argv = shlex.split(cmd, comments=True)[1:]
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    finally:
        os.chdir(old)
    assert rc in (0, None), f"`{cmd}` exited {rc}: {err.getvalue().strip()}"
    return out.getvalue()


def run_documented(doc: str, prefix: str, cwd: Path) -> list[Path]:
    """:func:`documented_output` of a command that writes files: the files it says it wrote
    (its ``wrote PATH`` lines), relative paths resolved against ``cwd``."""
    printed = documented_output(doc, prefix, cwd)
    paths = [cwd / line[len("wrote "):].strip() for line in printed.splitlines()
             if line.startswith("wrote ")]
    assert paths and all(p.is_file() for p in paths), printed
    return paths
