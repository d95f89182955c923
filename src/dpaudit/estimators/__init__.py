"""Estimators: observations (+ family, delta, confidence) -> AuditResult."""
