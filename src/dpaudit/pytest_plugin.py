"""pytest plugin (entry point ``pytest11: dpaudit``): the ``assert_dp`` fixture.

    def test_private(assert_dp):
        assert_dp(mechanism, neighbours, score, epsilon=1.0)

Import-light on purpose: pytest loads this module in every session where dpaudit is
installed, so nothing heavy is imported until the fixture is used.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def assert_dp() -> Any:
    """:func:`dpaudit.testing.assert_dp` (imported when the fixture is requested)."""
    from dpaudit.testing import assert_dp as gate

    return gate
