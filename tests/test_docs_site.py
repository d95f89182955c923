"""The documentation site (mkdocs.yml): its generated CLI reference covers every command and
option, every page of the navigation exists, and the API reference names every module that
defines a public name.  The strict build itself runs in ``make docs`` (part of ``make test``)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "tools" /
                                                  "cli_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _nav_pages() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:"):]
    return re.findall(r"([\w./-]+\.md)\s*$", nav, flags=re.M)


def test_every_nav_page_exists():
    pages = _nav_pages()
    assert "index.md" in pages and "reference/cli.md" in pages
    missing = [p for p in pages if not (ROOT / "docs" / p).is_file()]
    assert not missing, missing


@pytest.mark.slow  # imports every command module
def test_cli_reference_covers_every_command_and_option():
    import typer.main

    from dpaudit.cli import COMMANDS
    from dpaudit.cli.app import app

    text = _cli_reference().markdown()
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="dpaudit")
    for name in COMMANDS:
        assert f"## `dpaudit {name}`" in text
        cmd = root.get_command(ctx, name)
        sub = cmd.context_class(cmd, info_name=name, parent=ctx)
        for p in cmd.get_params(sub):
            if getattr(p, "param_type_name", "") == "option" and not p.hidden \
                    and p.name != "help":
                assert f"`{p.opts[0]}" in text, (name, p.opts)
    assert "### `dpaudit bound tight`" in text and "### `dpaudit store export`" in text
    assert "`--canaries <int>`" in text


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "tools" /
                                                  "docs_hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_api_reference_covers_every_module():
    """Every documented module of src/dpaudit is named by a curated page of
    docs/reference/api/ or goes on the generated "More modules" page; a curated page names
    only modules that exist."""
    hooks = _hooks()
    docs = ROOT / "docs"
    public = hooks.public_modules()
    assert "dpaudit.estimators.tight" in public and "dpaudit.outcome" in public
    assert not any(m.startswith(("dpaudit.cli", "dpaudit.papers")) for m in public)
    documented = hooks.documented_modules(docs)
    more = hooks.uncovered_modules(docs)
    assert set(public) <= documented | set(more)
    src = ROOT / "src"
    stale = sorted(m for m in documented
                   if not (src.joinpath(*m.split(".")).with_suffix(".py").is_file()
                           or (src.joinpath(*m.split(".")) / "__init__.py").is_file()))
    assert not stale, f"docs/reference/api names modules that do not exist: {stale}"


def test_every_code_block_renders_as_code():
    """The site's fences (pymdownx.superfences, as in mkdocs.yml) open on every block of every
    page once the hooks drop the docs test's words (``no-run``, ``run-by=``): without that, a
    ```` ```bash no-run ```` block and every block after it on its page rendered as text
    (literal backticks in the HTML)."""
    import markdown

    hooks = _hooks()
    assert hooks.strip_test_words("```bash no-run\n~~~python run-by=tests/a.py,tests/b.py  \n"
                                  "```python\n```bash hl_lines=\"2\"\n") == \
        "```bash\n~~~python\n```python\n```bash hl_lines=\"2\"\n"
    pages = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
             if re.search(r"^ {0,3}(`{3,}|~{3,})\S+ ", p.read_text(), flags=re.M)]
    assert pages  # the pages whose fences carry words after the language
    for page in pages:
        html = markdown.markdown(hooks.strip_test_words(page.read_text()),
                                 extensions=["pymdownx.superfences", "pymdownx.highlight"])
        assert "```" not in html and "~~~" not in html, f"{page.name}: a fence rendered as text"
