"""The result type every estimator returns."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["AuditResult"]


def _plain(value: Any) -> Any:
    """Convert NumPy scalars/arrays and nested containers to JSON-friendly Python values."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@dataclass(frozen=True)
class AuditResult:
    """An empirical lower bound on epsilon, with everything needed to reproduce it.

    Attributes:
      epsilon: lower bound on epsilon at ``delta`` that holds with probability ``confidence``
        (0 when nothing is rejected).
      delta: the delta at which ``epsilon`` is stated.
      confidence: probability that the bound holds (e.g. 0.95).
      method: estimator name ("multi_run", "tight", "bits", "steinke", "mahloujifar", ...).
      params: fitted parameters (e.g. ``{"mu": 1.23}`` for a GDP family fit).
      p_value: p-value of the rejected null at the fitted parameter, where defined.
      settings: every input needed to reproduce the number (counts, family, ci, mode, ...).
      details: auxiliary figures (confidence bounds on FPR/FNR, AUROC, the chosen threshold).
    """

    epsilon: float
    delta: float
    confidence: float
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)
    p_value: float | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)

    def ratio_to(self, true_epsilon: float) -> float:
        """Fraction of a reference (e.g. theoretical) epsilon that the bound recovers."""
        return float(self.epsilon / true_epsilon) if true_epsilon > 0 else math.nan

    def violates(self, claimed_epsilon: float) -> bool:
        """True when the lower bound proves the claim false (bound > claim)."""
        return bool(self.epsilon > claimed_epsilon)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
