"""Shared test helpers (fixtures) and the ``slow`` marker's policy.

* ``cli`` -- run the command line in-process: ``rc, out, err = cli("curve", "gdp", "--mu", "1")``;
* ``cli_json`` -- the same with ``--json`` appended, asserting exit status 0; returns the
  parsed document;
* ``one_thread`` -- torch limited to one thread for the test (real-training tests share two
  cores with the other worker; use with ``pytestmark = pytest.mark.usefixtures("one_thread")``).

``@pytest.mark.slow`` marks Monte Carlo coverage tests and the slowest end-to-end tests (Ray
parity, the documentation snippets, the demo, the figure runners, the whole bad-input
catalogue); ``pytest -m "not slow" -n 2`` is the fast loop, CI (``make test``) runs everything.
Optional extras are requested with :func:`needs.need` (skip locally, fail under ``CI=true``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest


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
