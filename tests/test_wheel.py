"""The wheel as a user installs it: built from the tree, installed alone (no editable path, no
source checkout on sys.path), its ``dpaudit`` command runs, reports the package version, loads
a command module, finds the paper runners and the type marker ``py.typed``.

The wheel is installed with ``pip install --no-deps --target`` into a temporary folder and run
by this interpreter with only that folder in front of ``sys.path`` (the dependencies, NumPy,
SciPy, typer, come from the test environment: nothing is downloaded)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _build(out: Path) -> Path:
    """``pip wheel --no-deps`` of the tree; without build isolation when setuptools is here."""
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out),
           str(ROOT)]
    if importlib.util.find_spec("setuptools") is not None:
        cmd.insert(5, "--no-build-isolation")
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
    (wheel,) = out.glob("dpaudit-*.whl")
    return wheel


@pytest.mark.slow  # builds and installs a wheel (about 10-20 s)
def test_wheel_installs_and_runs(tmp_path):
    from dpaudit import __version__

    wheel = _build(tmp_path / "dist")
    assert wheel.name.startswith(f"dpaudit-{__version__}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "dpaudit/py.typed" in names
    assert "dpaudit/papers/experiments/registry.py" in names  # dpaudit reproduce ships
    assert not any(n.startswith(("tests/", "docs/", "benchmarks/", "tools/")) for n in names)

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                    "--quiet", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(target), "PYTHONNOUSERSITE": "1"}
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()

    def dpaudit(*args: str) -> str:
        code = ("import sys, dpaudit, dpaudit.cli as c; "
                "assert dpaudit.__file__.startswith(sys.argv[1]), dpaudit.__file__; "
                "sys.exit(c.main(sys.argv[2:]))")
        done = subprocess.run([sys.executable, "-c", code, str(target), *args], cwd=run_dir,
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert dpaudit("--version").strip() == f"dpaudit {__version__}"
    out = dpaudit("bound", "tight", "--canaries", "1000", "--guesses", "1000", "--wrong",
                  "300", "--json")
    assert '"epsilon"' in out
    assert "tight-ablation-r" in dpaudit("reproduce", "list")
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert f"Version: {__version__}" in text
    assert "Provides-Extra: papers" in text and "Provides-Extra: docs" in text
