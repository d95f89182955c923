"""The optional-extra rule of the suite: skip locally, fail under CI=true."""

import pytest

from needs import need


def test_missing_extra_skips_outside_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        need("dpaudit_no_such_extra")


def test_missing_extra_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI=true"):
        need("dpaudit_no_such_extra")


def test_present_extra_is_returned_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert need("json").dumps([1]) == "[1]"
