"""Estimators: observations (+ family, delta, confidence) -> AuditResult."""

from dpaudit.estimators.bits import bits  # noqa: E402,F401  (seed 000)
from dpaudit.estimators.lifted import lifted, lifted_tuned  # noqa: E402,F401  (seed 002)
from dpaudit.estimators.one_run import audit_one_run  # noqa: E402,F401  (side by side)
from dpaudit.estimators.steinke import guesses_from_scores, steinke  # noqa: E402,F401  (SNJ23)
from dpaudit.estimators.tight import tight, tight_p_value  # noqa: E402,F401  (seed 001)
from dpaudit.estimators.mahloujifar import mahloujifar  # noqa: E402,F401  (MMC24 f-DP)
