"""The zoo's tests run in their own venv (``make zoo-test``); its libraries are required there.

Outside CI a missing library skips with the reason shown; under ``CI=true`` it fails (as
``tests/needs.py`` does for the main suite's extras)."""

from __future__ import annotations

import importlib
import os

import pytest


def need(module: str) -> object:
    if os.environ.get("CI", "").lower() == "true":
        try:
            return importlib.import_module(module)
        except ImportError as e:
            pytest.fail(f"{module} is required under CI=true (make zoo-test installs it): {e}",
                        pytrace=False)
    return pytest.importorskip(module)
