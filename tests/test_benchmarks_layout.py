"""``benchmarks/`` holds timed benchmarks, every one run by ``make bench`` with quick
arguments (``benchmarks/run_all.py``); ``studies/`` holds the studies; every path to either
that the documentation or the code names exists."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run_all():
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "benchmarks" / "run_all.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_make_bench_runs_every_benchmark_with_its_arguments() -> None:
    run_all = _run_all()
    on_disk = set(run_all.scripts())
    assert on_disk == set(run_all.BENCHMARKS), (
        "every benchmarks/*.py needs a row (its quick arguments) in benchmarks/run_all.py: "
        f"missing {sorted(on_disk - set(run_all.BENCHMARKS))}, "
        f"stale {sorted(set(run_all.BENCHMARKS) - on_disk)}")
    assert "run_all.py" not in on_disk


def test_studies_are_not_benchmarks() -> None:
    studies = {p.name for p in (ROOT / "studies").glob("*.py")}
    benchmarks = {p.name for p in (ROOT / "benchmarks").glob("*.py")}
    assert {"tightness.py", "training_detection.py", "peers.py", "zoo.py"} <= studies
    assert not studies & benchmarks


def test_every_named_benchmark_or_study_exists() -> None:
    named: dict[str, set[str]] = {}
    files = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md",
             ROOT / "Makefile", *(ROOT / "docs").rglob("*.md"), *(ROOT / "src").rglob("*.py"),
             *(ROOT / "benchmarks").glob("*.py"), *(ROOT / "studies").glob("*.py"),
             *(ROOT / "tests").rglob("*.py")]
    for f in files:
        for ref in re.findall(r"\b((?:benchmarks|studies)/[A-Za-z0-9_]+\.py)\b",
                              f.read_text(encoding="utf-8")):
            named.setdefault(ref, set()).add(str(f.relative_to(ROOT)))
    missing = {ref: sorted(where) for ref, where in named.items() if not (ROOT / ref).exists()}
    assert not missing
