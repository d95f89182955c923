"""Risk against epsilon: the numbers of ``dpaudit risk`` at many epsilons (Beyond Worst Case).

A data curator choosing epsilon reads the bounds of Swanberg et al., "Beyond the Worst Case"
(Thm 3.5 over n targets, its n = 1 case, Cor 3.4's advantage, §3.2's leaked bits) along a
grid of epsilons.  Each row of :func:`risk_sweep` *is* :func:`dpaudit.risk.summary.
risk_summary` at that epsilon -- the single-epsilon command's numbers, not an interpolation.

Grids (:func:`epsilon_grid`): ``"0.5,1,2,4,8"`` (a list) or ``"0.5:8:0.5"`` (start:stop:step,
stop included; each point start + i step written with 12 significant digits, so 0.1:0.3:0.1
is 0.1, 0.2, 0.3 and not 0.30000000000000004).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit.risk.summary import risk_summary
from dpaudit.validation import check_confidence, check_delta

__all__ = ["MAX_GRID", "epsilon_grid", "risk_sweep", "plain_sentence"]

#: the most epsilons one sweep evaluates (each is a full Thm 3.5 computation over n targets).
MAX_GRID = 1000


def _number(text: str, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"epsilon must be a number >= 0, a list (0.5,1,2) or a range "
                         f"start:stop:step; {what} {text!r} is not a number") from None
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"epsilon must be finite and >= 0; {what} is {text!r}")
    return x


def epsilon_grid(spec: str) -> tuple[float, ...]:
    """The epsilons of ``spec``: one number, a comma list, or start:stop:step (stop included).

    Raises ValueError (naming epsilon) unless every value is finite and >= 0, the list is
    strictly increasing, the step is > 0 and there are at most :data:`MAX_GRID` values."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"epsilon must be a number, a list or a range, got {spec!r}")
    s = spec.strip()
    if ":" in s:
        parts = s.split(":")
        if len(parts) != 3:
            raise ValueError(f"epsilon range must be start:stop:step, got {spec!r}")
        start, stop, step = (_number(p.strip(), w) for p, w in
                             zip(parts, ("start", "stop", "step"), strict=True))
        if step <= 0 or stop < start:
            raise ValueError(f"epsilon range start:stop:step needs step > 0 and stop >= start, "
                             f"got {spec!r}")
        count = math.floor((stop - start) / step * (1 + 1e-12)) + 1
        if count > MAX_GRID:
            raise ValueError(f"epsilon range gives {count} values; at most {MAX_GRID}")
        values = tuple(float(f"{start + i * step:.12g}") for i in range(count))
    else:
        values = tuple(_number(p.strip(), "value") for p in s.split(","))
        if len(values) > MAX_GRID:
            raise ValueError(f"epsilon list has {len(values)} values; at most {MAX_GRID}")
    if any(b <= a for a, b in zip(values, values[1:], strict=False)):
        raise ValueError(f"epsilon values must be strictly increasing, got {spec!r}")
    return values


def risk_sweep(epsilons: Any, delta: float, priors: np.ndarray, *, confidence: float = 0.95,
               tau: float = 0.05, delta_multiplier: float = 1.0) -> list[dict[str, Any]]:
    """:func:`risk_summary` at each epsilon of ``epsilons`` (same priors, delta, confidence)."""
    check_delta(delta)
    check_confidence(confidence)
    return [risk_summary(float(e), delta, priors, confidence=confidence, tau=tau,
                         delta_multiplier=delta_multiplier) for e in epsilons]


def plain_sentence(epsilon: float, v_ub: int, targets: int, confidence: float,
                   success_bound: float, prior_max: float) -> str:
    """The guarantee in words for a non-specialist (no symbols but epsilon's value)."""
    def pct(x: float) -> str:
        return f"{x:.1%}" if x >= 1e-3 else f"{100 * x:.2g}%"

    people = "person" if targets == 1 else "people"
    return (f"At privacy level epsilon = {epsilon:g}, with {100 * confidence:g}% confidence no "
            f"attacker reconstructs the records of more than {v_ub:,} of your {targets:,} "
            f"{people}, and any single person's record is guessed right with probability at "
            f"most {pct(success_bound)} (without the data, the best guess is right "
            f"{pct(prior_max)} of the time).")
