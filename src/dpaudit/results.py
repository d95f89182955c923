"""The result type every estimator returns, and the project's one JSON convention.

JSON convention (every ``--json`` output and :meth:`AuditResult.to_dict`): output is strict JSON
(RFC 8259), so a number that is not finite is written as ``null``; inside an object the key also
gets a sibling ``"<key>_note"`` saying what it was: ``"inf"``, ``"-inf"`` or ``"nan"``
(e.g. ``{"epsilon": null, "epsilon_note": "inf"}``).  Inside a list the entry is ``null`` only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["AuditResult", "json_safe", "nonfinite_note"]


def nonfinite_note(x: float) -> str:
    """The ``*_note`` string of a non-finite float: "inf", "-inf" or "nan"."""
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _nonfinite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def json_safe(value: Any) -> Any:
    """Convert NumPy scalars/arrays, tuples, paths, ... to strict-JSON Python values.

    Non-finite floats become ``None``; in a mapping the key gets a sibling ``<key>_note`` with
    :func:`nonfinite_note` (unless the mapping already has that key).  Dataclass-like objects
    with ``to_dict`` are expanded."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            v = v.item() if isinstance(v, np.generic) else v
            out[str(k)] = json_safe(v)
            if _nonfinite(v) and f"{k}_note" not in value:
                out[f"{k}_note"] = nonfinite_note(v)
        return out
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if _nonfinite(value):
        return None
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return json_safe(value.to_dict())
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


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
      guarantee: "finite-sample" (the bound holds with probability ``confidence`` at every
        sample size, under the assumptions in ``settings``) or "asymptotic" (a consistent
        estimate with no finite-sample guarantee: shown for comparison, never the verdict
        unless asked for explicitly).
      assumption: None when the bound (and a verdict drawn from it) holds for every mechanism
        that meets an (epsilon, delta) claim; otherwise what it assumes about the mechanism,
        e.g. "the mechanism is μ-GDP" (a null family other than "eps_delta" on a user's
        scores).  ``to_dict`` adds ``family_is_assumption`` = (assumption is not None).
    """

    epsilon: float
    delta: float
    confidence: float
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)
    p_value: float | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    guarantee: str = "finite-sample"
    assumption: str | None = None

    @property
    def is_estimate(self) -> bool:
        """True for a figure that is an estimate under an assumption, not a lower bound
        (e.g. ``multi_run_gdp``): printed as an estimate and never the basis of a verdict."""
        return bool(self.details.get("estimate", False)) if self.details else False

    def ratio_to(self, true_epsilon: float) -> float:
        """Fraction of a reference (e.g. theoretical) epsilon that the bound recovers."""
        return float(self.epsilon / true_epsilon) if true_epsilon > 0 else math.nan

    def violates(self, claimed_epsilon: float) -> bool:
        """True when the lower bound proves the claim false (bound > claim)."""
        return bool(self.epsilon > claimed_epsilon)

    def to_dict(self) -> dict[str, Any]:
        """The fields as strict-JSON values (see the module docstring for non-finite numbers:
        an infinite bound is ``"epsilon": null, "epsilon_note": "inf"``)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["family_is_assumption"] = self.assumption is not None
        return json_safe(out)
