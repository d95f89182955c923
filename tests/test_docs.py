"""Every code block of README.md and docs/**/*.md runs as written (issue 15).

Convention (COMMON.md, "Docs are executed"): fenced ```python blocks are executed in order, one
namespace per file; in ```bash / ```sh / ```console blocks every line that starts with
``dpaudit `` (after an optional ``$ `` prompt; ``\\`` continues a line; ``# ...`` comments are
dropped) is run through :func:`dpaudit.cli.main` and must exit 0.  A block whose info string
contains ``no-run`` is skipped: only for blocks that need a cluster, the user's own files or
minutes of compute.  Files are discovered at collection time, so docs added later are covered.
Each file runs in a fresh temporary working directory (files the snippets write land there).

Printed values are checked too: a top-level expression statement whose comment starts with a
number (``E.tight(...).epsilon   # 4.1371``) must evaluate to that number at the precision it is
written with (half a unit of the last digit), so a comment cannot drift from what the code
prints.
"""

from __future__ import annotations

import ast
import math
import os
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
SHELL_INFOS = ("bash", "sh", "shell", "console")


def doc_files() -> list[Path]:
    files = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def code_blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, body, first line number) of every fenced block, in order."""
    blocks: list[tuple[str, str, int]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m["fence"], m["info"].strip(), i + 1
        body: list[str] = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i])
            i += 1
        i += 1
        blocks.append((info, "\n".join(body), start + 1))
    return blocks


def cli_lines(body: str) -> list[str]:
    """The ``dpaudit ...`` commands of a shell block (continuations joined)."""
    joined: list[str] = []
    buf = ""
    for raw in body.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        joined.append(buf + line)
        buf = ""
    if buf:
        joined.append(buf)
    out = []
    for line in joined:
        s = line.strip()
        if s.startswith("$ "):
            s = s[2:].strip()
        if s.startswith("dpaudit "):
            out.append(s)
    return out


def run_by(info: str) -> list[str]:
    """The test files a block's info string names with ``run-by=FILE[,FILE...]`` (one such
    word: two break the docs site's fences; tests/doc_commands.py): they run its ``dpaudit``
    lines as written and check what those write."""
    return [f for w in info.split() if w.startswith("run-by=")
            for f in w[len("run-by="):].split(",") if f]


def runnable(info: str) -> str | None:
    """'python', 'shell' or None (skipped, or run by the tests ``run-by=`` names) for a block's
    info string."""
    words = info.replace(",", " ").split()
    if not words or "no-run" in words or "no_run" in words or run_by(info):
        return None
    lang = words[0].lower()
    if lang in ("python", "py", "python3"):
        return "python"
    if lang in SHELL_INFOS:
        return "shell"
    return None


DOCS = doc_files()
NUMBER_COMMENT = re.compile(r"#\s*(-?\d+(?:\.\d+)?(?:e-?\d+)?)(?=$|[\s,;)(])")


def checked_block(body: str, where: str) -> tuple[object, list[tuple[str, float, float, int]]]:
    """Compile a python block; expression statements with a numeric comment become
    assignments to ``__doc_value_<i>`` so that their value can be compared afterwards.
    Returns (code, [(name, expected, tolerance, line)])."""
    tree = ast.parse(body, where)
    lines = body.splitlines()
    checks: list[tuple[str, float, float, int]] = []
    for i, node in enumerate(tree.body):
        if not isinstance(node, ast.Expr) or node.end_lineno is None:
            continue
        src = lines[node.end_lineno - 1]
        m = NUMBER_COMMENT.search(src[node.end_col_offset:]) if node.end_col_offset is not None \
            else None
        if not m:
            continue
        text = m.group(1)
        mant = text.split("e")[0]
        decimals = len(mant.split(".")[1]) if "." in mant else 0
        exp = int(text.split("e")[1]) if "e" in text else 0
        tol = 0.5 * 10.0 ** (exp - decimals) * (1 + 1e-9)
        name = f"__doc_value_{i}"
        tree.body[i] = ast.copy_location(
            ast.Assign(targets=[ast.Name(name, ast.Store())], value=node.value), node)
        checks.append((name, float(text), tol, node.lineno))
    ast.fix_missing_locations(tree)
    return compile(tree, where, "exec"), checks


def test_docs_are_discovered():
    names = {p.name for p in DOCS}
    assert "README.md" in names and len(DOCS) >= 2


@pytest.mark.slow  # runs every documented snippet
@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_snippets_run(path, tmp_path, monkeypatch, capsys):
    import matplotlib

    matplotlib.use("Agg")
    from dpaudit.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    ns: dict[str, object] = {"__name__": f"doc:{path.name}"}
    ran = 0
    for info, body, line in code_blocks(path.read_text()):
        kind = runnable(info)
        where = f"{path.relative_to(ROOT)}:{line}"
        if kind == "python":
            try:
                code, checks = checked_block(body, where)
                exec(code, ns)  # noqa: S102 - the docs are ours
            except Exception as e:  # pragma: no cover - the failure message is the point
                pytest.fail(f"{where}: python block failed: {type(e).__name__}: {e}")
            for name, expected, tol, ln in checks:
                got = ns[name]
                try:
                    val = float(got)  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    continue  # a tuple/array printed with a leading number: not checked
                if not (math.isfinite(val) and abs(val - expected) <= tol):
                    pytest.fail(f"{path.relative_to(ROOT)}:{line + ln}: comment says "
                                f"{expected:g} but the code gives {got!r}")
            ran += 1
        elif kind == "shell":
            for cmd in cli_lines(body):
                argv = shlex.split(cmd, comments=True)[1:]
                rc = main(argv)
                err = capsys.readouterr().err
                if rc != 0:
                    pytest.fail(f"{where}: `{cmd}` exited {rc}: {err.strip()}")
                ran += 1
    if os.environ.get("DPAUDIT_DOCS_VERBOSE"):
        print(f"{path.name}: {ran} snippets")


def run_by_prefix(cmd: str) -> str:
    """The first words by which a test names a ``run-by=`` line: ``dpaudit COMMAND NAME``."""
    return " ".join(shlex.split(cmd, comments=True)[:3])


def test_run_by_lines_are_run_by_the_tests_they_name():
    """Every line of a ``run-by=`` block is run by one of the files it names: the file exists
    and passes the doc and the line's first words to ``tests/doc_commands.py``, which runs
    that one line as written and asserts it exits 0."""
    seen = 0
    for path in DOCS:
        for info, body, line in code_blocks(path.read_text()):
            files = run_by(info)
            if not files:
                continue
            where = f"{path.relative_to(ROOT)}:{line}"
            texts = []
            for f in files:
                assert (ROOT / f).is_file(), f"{where}: run-by={f} does not exist"
                texts.append((ROOT / f).read_text())
            cmds = cli_lines(body)
            assert cmds, f"{where}: a run-by block without a dpaudit line"
            for cmd in cmds:
                doc, prefix = f'"{path.relative_to(ROOT)}"', f'"{run_by_prefix(cmd)}"'
                assert any(doc in t and prefix in t and "doc_commands" in t for t in texts), \
                    f"{where}: no file of {files} runs `{cmd}` (run_documented({doc}, {prefix}))"
                seen += 1
    assert seen >= 1


def test_numeric_comments_are_checked():
    code, checks = checked_block("x = 2\nx * 1.5   # 3.0\nx  # 2.49 (not 2)\nx  # note\n", "t")
    ns: dict[str, object] = {}
    exec(code, ns)  # noqa: S102
    assert [(c[1], round(c[2], 6)) for c in checks] == [(3.0, 0.05), (2.49, 0.005)]
    assert ns[checks[0][0]] == 3.0 and abs(ns[checks[1][0]] - 2.49) > checks[1][2]


def test_parser_handles_fences_and_continuations():
    text = "x\n```python\na = 1\n```\n```bash no-run\ndpaudit nope\n```\n" \
           "```bash\n$ dpaudit curve gdp \\\n  --mu 1   # comment\necho hi\n```\n"
    blocks = code_blocks(text)
    assert [runnable(i) for i, _, _ in blocks] == ["python", None, "shell"]
    assert runnable("bash run-by=tests/x.py") is None
    assert run_by("bash run-by=tests/x.py,tests/y.py") == ["tests/x.py", "tests/y.py"]
    assert cli_lines(blocks[2][1]) == ["dpaudit curve gdp    --mu 1   # comment"]
    assert shlex.split(cli_lines(blocks[2][1])[0], comments=True) == ["dpaudit", "curve", "gdp",
                                                                      "--mu", "1"]
