"""pytest plugin with the ``assert_dp`` fixture -- opt-in, not auto-registered.

    # conftest.py at the root of your tests (or: pytest -p dpaudit.pytest_plugin)
    pytest_plugins = ["dpaudit.pytest_plugin"]

    def test_private(assert_dp):
        assert_dp(mechanism, neighbours, score, epsilon=1.0)

It is deliberately NOT registered as a ``pytest11`` entry point: an entry point is loaded in
every pytest session of every environment where dpaudit is installed, and importing this
module imports the ``dpaudit`` package (NumPy, SciPy: about a second), which would slow down
the collection of unrelated test suites.  ``from dpaudit.testing import assert_dp`` works
without any plugin.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def assert_dp() -> Any:
    """:func:`dpaudit.testing.assert_dp` (imported when the fixture is requested)."""
    from dpaudit.testing import assert_dp as gate

    return gate
