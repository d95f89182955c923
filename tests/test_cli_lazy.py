"""The command line loads lazily (dpaudit.cli.COMMANDS): ``--version`` and ``--help`` import
neither NumPy/SciPy nor any command module, a command imports only its own modules, and the
table names exactly the commands the modules register, with their own one-line help."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer.main

from dpaudit.cli import COMMANDS, load_commands, main, root_help
from dpaudit.cli.app import app

COMMAND_MODULES = sorted({f"dpaudit.cli.{m}" for c in COMMANDS.values() for m in c.modules})


def _modules_after(argv: list[str]) -> tuple[set[str], str]:
    code = (f"import sys, json\nfrom dpaudit.cli import main\nrc = main({argv!r})\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return set(json.loads(proc.stderr.strip().splitlines()[-1])), proc.stdout


def test_version_imports_nothing_heavy():
    mods, out = _modules_after(["--version"])
    assert out.startswith("dpaudit ")
    heavy = {"numpy", "scipy", "typer", "rich", *COMMAND_MODULES} & mods
    assert heavy == set()


def test_root_help_imports_nothing_heavy_and_lists_every_command():
    mods, out = _modules_after(["--help"])
    assert {"numpy", "scipy", "typer", *COMMAND_MODULES} & mods == set()
    for name, cmd in COMMANDS.items():
        assert f"  {name} " in out and cmd.help in out


@pytest.mark.slow
def test_a_command_imports_only_its_own_modules():
    mods, out = _modules_after(["bound", "tight", "--canaries", "1000", "--guesses", "100",
                                "--wrong", "10", "--json"])
    assert json.loads(out)["method"] == "tight"
    loaded = {m for m in COMMAND_MODULES if m in mods}
    assert loaded == {"dpaudit.cli.bound", "dpaudit.cli.lifted"}


def test_table_matches_the_registered_commands():
    load_commands()
    group = typer.main.get_group(app)
    assert set(group.commands) == set(COMMANDS)
    for name, cmd in COMMANDS.items():
        real = group.commands[name]
        first = (real.short_help or real.help or "").strip().split("\n\n")[0]
        assert " ".join(first.split()) == cmd.help, name


def test_no_arguments_prints_the_help_and_is_a_usage_error(capsys):
    assert main([]) == 2
    assert capsys.readouterr().out.strip() == root_help()


@pytest.mark.slow
def test_a_command_split_over_modules_loads_them_all(capsys):
    # one-run imports dpaudit.cli.bound (parse_family) but not dpaudit.cli.lifted: the bound
    # group must still hold `lifted` afterwards
    code = ("import sys\nimport dpaudit.cli.bound\nfrom dpaudit.cli import main\n"
            "sys.exit(main(['bound', 'lifted', '--help']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and "--interval" in proc.stdout
