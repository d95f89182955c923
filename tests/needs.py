"""Optional extras in the test suite: skip where they are absent, FAIL under ``CI=true``.

``make test`` installs every extra (torch/Opacus, Ray, pyarrow, Faker, Playwright) and, as root,
Chromium; a CI run in which one of them is missing must go red, not quietly skip the tests that
exercise it.  Elsewhere (a developer without an extra) the tests skip with the reason shown.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

__all__ = ["in_ci", "need", "skip_outside_ci"]


def in_ci() -> bool:
    """True under ``CI=true`` (the CI entry point sets nothing else)."""
    return os.environ.get("CI", "").lower() == "true"


def need(module: str) -> ModuleType:
    """``pytest.importorskip(module)``, except that under ``CI=true`` a missing module fails."""
    if in_ci():
        try:
            return importlib.import_module(module)
        except ImportError as e:
            pytest.fail(f"{module} is required under CI=true (make test installs it): {e}",
                        pytrace=False)
    return pytest.importorskip(module)


def skip_outside_ci(reason: str) -> None:
    """Skip with ``reason``, except under ``CI=true``, where what is missing fails the test."""
    if in_ci():
        pytest.fail(f"required under CI=true (make test installs it): {reason}", pytrace=False)
    pytest.skip(reason)
