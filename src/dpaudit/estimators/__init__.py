"""Estimators: observations (+ family, delta, confidence) -> AuditResult."""

from dpaudit.estimators.bits import bits  # noqa: E402,F401  (seed 000)
