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


def test_api_reference_lists_the_defining_modules():
    """Every public package's modules (those that define a name of its ``__all__``) appear
    in a ``::: module`` directive of docs/reference/api/."""
    api = "\n".join(p.read_text() for p in (ROOT / "docs" / "reference" / "api").glob("*.md"))
    documented = set(re.findall(r"^::: ([\w.]+)\s*$", api, flags=re.M))
    src = ROOT / "src" / "dpaudit"
    skip = {"cli", "papers", "data", "__pycache__"}  # the CLI: reference/cli.md
    expected = set()
    for path in src.rglob("*.py"):
        rel = path.relative_to(src)
        if rel.parts[0] in skip or path.name.startswith("_") and path.name != "__init__.py":
            continue
        if path.name == "__init__.py":
            continue
        if rel.parts[0] == "zoo" and path.stem.endswith("_zoo"):
            continue  # one module per library: its entries are in the zoo report
        if rel.parts[0] == "greybox" and path.stem.endswith("_hooks"):
            continue
        if rel.parts[0] == "zoo" and path.stem == "greybox_check":
            continue
        if rel.parts[0] == "report" and path.stem in ("html", "png", "browser"):
            continue  # the card's renderers, reached through dpaudit.report.write
        expected.add("dpaudit." + ".".join(rel.with_suffix("").parts))
    missing = sorted(expected - documented)
    assert not missing, f"modules missing from docs/reference/api: {missing}"
    stale = sorted(m for m in documented
                   if importlib.util.find_spec(m.split(".")[0]) and not _module_file(src, m))
    assert not stale, f"docs/reference/api names modules that do not exist: {stale}"


def _module_file(src: Path, module: str) -> bool:
    parts = module.split(".")[1:]
    base = src.joinpath(*parts) if parts else src
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
