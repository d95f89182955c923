"""One version everywhere: ``dpaudit.__version__`` (what ``dpaudit --version`` prints), the
package metadata (pyproject reads the same attribute) and the newest CHANGELOG.md entry."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = None


def test_pyproject_reads_the_package_version():
    text = (ROOT / "pyproject.toml").read_text()
    if tomllib is not None:
        data = tomllib.loads(text)
        assert "version" not in data["project"] and "version" in data["project"]["dynamic"]
        assert data["tool"]["setuptools"]["dynamic"]["version"] == {
            "attr": "dpaudit.__version__"}
    else:
        assert 'dynamic = ["version"]' in text
        assert 'version = {attr = "dpaudit.__version__"}' in text


def test_cli_version_and_changelog_agree(capsys):
    from dpaudit import __version__
    from dpaudit.cli import main

    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"dpaudit {__version__}"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, flags=re.M)
    assert versions and versions[0] == __version__, (versions[:1], __version__)


def test_package_ships_type_information():
    text = (ROOT / "pyproject.toml").read_text()
    assert (ROOT / "src" / "dpaudit" / "py.typed").is_file()
    assert '"py.typed"' in text
