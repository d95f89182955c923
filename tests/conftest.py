"""Shared test helpers (fixtures) and the ``slow`` marker's policy.

* ``cli`` -- run the command line in-process: ``rc, out, err = cli("curve", "gdp", "--mu", "1")``;
* ``cli_json`` -- the same with ``--json`` appended, asserting exit status 0; returns the
  parsed document;
* ``one_thread`` -- torch limited to one thread for the test (real-training tests share two
  cores with the other worker; use with ``pytestmark = pytest.mark.usefixtures("one_thread")``);
* ``demo_run`` -- ``dpaudit demo --json --report CARD`` run once per test run and shared by
  the xdist workers (it trains real models): ``(exit status, stdout, stderr, CARD)``.

``@pytest.mark.slow`` marks Monte Carlo coverage tests and the slowest end-to-end tests (Ray
parity, the documentation snippets, the demo, the figure runners, the whole bad-input
catalogue); ``pytest -m "not slow" -n 2`` is the fast loop, CI (``make test``) runs everything.
Optional extras are requested with :func:`needs.need` (skip locally, fail under ``CI=true``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# JAX's persistent compilation cache for the test run (set before any test imports JAX): the
# xdist workers, the docs pages and the CLI subprocesses that compile the same XLA programs
# read each other's, and a second run on the same machine compiles almost nothing (the JAX
# training tests: 37 -> 15 CPU s).  The same programs give the same executables, so results
# do not change.  The folder is git-ignored; a caller's own settings win.
_JAX_CACHE = Path(__file__).resolve().parents[1] / ".jax_cache"
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(_JAX_CACHE))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

# One OpenMP / BLAS thread per test process (set before any test imports torch or NumPy's
# BLAS): `make test` runs two xdist workers per suite on the machine's cores, so a second
# intra-op thread per worker only competes with the other workers, and OpenMP's waiting
# threads spin (the language-model tests and docs page: 28.7 -> 22.6 user CPU s).  Results do
# not change (the trainers already pin torch to one thread while they train); a caller's own
# settings win.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """``cli(*argv) -> (exit status, stdout, stderr)`` of ``dpaudit.cli.main``."""
    from dpaudit.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        rc = main([str(a) for a in argv])
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run


@pytest.fixture
def cli_json(cli: Callable[..., tuple[int, str, str]]) -> Callable[..., Any]:
    """``cli_json(*argv) -> dict``: ``argv + --json``, exit status 0, stdout parsed."""

    def run(*argv: str) -> Any:
        rc, out, err = cli(*argv, "--json")
        assert rc == 0, err
        return json.loads(out)

    return run


@pytest.fixture
def one_thread() -> Iterator[None]:
    """torch.set_num_threads(1) for the test, restored afterwards."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, str, Path]:
    """``dpaudit demo --json --report CARD`` once for the whole run: ``(rc, stdout, stderr,
    CARD)``.  Two tests read the demo (its verdicts, and its card in a browser); the demo trains
    real models (about 20 CPU seconds), so the first worker to need it runs it under a file lock
    in the directory the xdist workers share (pytest-xdist's "run a session fixture once"
    recipe) and the others read what it wrote.  The demo is seeded (``--seed`` 0), so every
    worker would have computed the same document."""
    from dpaudit.cli import main

    root = tmp_path_factory.getbasetemp()
    try:
        import fcntl
    except ImportError:  # no POSIX locks: each worker runs its own demo
        fcntl = None  # type: ignore[assignment]
    else:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            root = root.parent  # this run's directory, shared by its workers
    where = root / "demo_run"
    where.mkdir(exist_ok=True)
    card, saved = where / "demo.html", where / "demo_run.json"
    with open(where / "lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.exists():
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(["demo", "--json", "--report", str(card)])
            saved.write_text(json.dumps({"rc": rc, "out": out.getvalue(),
                                         "err": err.getvalue()}), encoding="utf-8")
    run = json.loads(saved.read_text(encoding="utf-8"))
    return run["rc"], run["out"], run["err"], card
