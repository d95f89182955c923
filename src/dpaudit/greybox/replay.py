"""Re:cord-play-style replay: run a mechanism on two neighbouring data sets with identical
randomness and compare what reaches its noise primitives.

Identical randomness: before each run, ``random``, ``numpy.random``'s global state and the
mechanism's own seed argument are set to the same value, so the two runs draw the same noise
as long as they take the same path.  Two checks (after Cebere, Erb, Desfontaines, Bellet and
Fitzsimons, "Privacy in Theory, Bugs in Practice: Grey-Box Auditing of Differential Privacy
Libraries", PETS 2026, Section 4; our implementation):

* control flow: the sequence of (primitive, call site) must not depend on the data set;
  a difference is data-dependent control flow outside the privacy primitives;
* sensitivity: for each pair of aligned primitive calls with a declared sensitivity s and
  recorded values v0, v1, the measured distance |v0 - v1| (L1 for vectors) must be <= s.
  An additive mechanism calibrated to s with privacy parameter eps (Laplace: scale s / eps)
  has privacy loss eps * |v0 - v1| / s between these inputs, so a larger distance falsifies
  the primitive's guarantee on this concrete pair: a deterministic finding, no statistics.

What a finding proves: the primitive's input moved by more than its declared sensitivity on a
concrete pair of neighbours, i.e. the privacy proof of the mechanism fails at that primitive.
Post-processing after the primitive can only lower the end-to-end loss; the black-box audit of
the zoo (:mod:`dpaudit.zoo.audit`) measures the end-to-end bound on fresh trials.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.greybox.recorder import Call, Primitive, Recorder

__all__ = ["Trace", "GreyboxFinding", "record", "replay", "compare", "implied_epsilon"]


@dataclass(frozen=True)
class Trace:
    """The primitive calls of one run (depth-0 calls of the declared primitives) and all
    recorded calls (raw randomness and nested primitives included)."""

    calls: tuple[Call, ...]
    all_calls: tuple[Call, ...]
    output: Any


@dataclass(frozen=True)
class GreyboxFinding:
    """A concrete falsification on one pair of data sets."""

    kind: str                     # "sensitivity" | "control_flow" | "composition"
    primitive: str
    site: str
    index: int
    measured: float | None
    declared: float | None
    epsilon_declared: float | None
    epsilon_implied: float | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def record(mechanism: Callable[[Any, int], Any], data: Any, seed: int,
           primitives: tuple[Primitive, ...]) -> Trace:
    """Run ``mechanism(data, seed)`` once under a :class:`Recorder` with seeded globals."""
    random.seed(seed)
    np.random.seed(seed % (2**32))  # noqa: NPY002 -- the global state libraries draw from
    with Recorder(primitives) as rec:
        out = mechanism(data, seed)
    names = {p.name for p in primitives}
    main = tuple(c for c in rec.calls if c.depth == 0 and c.primitive in names)
    return Trace(main, tuple(rec.calls), out)


def _distance(a: Any, b: Any) -> float:
    try:
        x = np.asarray(a, dtype=float)
        y = np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return math.nan
    if x.shape != y.shape:
        return math.inf
    with np.errstate(invalid="ignore"):
        d = np.abs(x - y)
    if np.any(np.isnan(d)):
        return math.inf if np.any(np.isnan(x) != np.isnan(y)) else math.nan
    return float(d.sum())


def implied_epsilon(t0: Trace, t1: Trace) -> float | None:
    """sum_i eps_i * |v0_i - v1_i| / s_i over the aligned primitive calls: the privacy loss
    bound of the composed pure-DP additive primitives on this pair (basic composition of
    eps_i * Delta_i / s_i, each the worst-case loss of a Laplace / geometric primitive
    calibrated to s_i at distance Delta_i).  None when the call sequences differ or any call
    lacks a value, a sensitivity or epsilon, or has delta > 0 (then nothing is concluded)."""
    if [(c.primitive, c.site) for c in t0.calls] != [(c.primitive, c.site) for c in t1.calls]:
        return None
    total = 0.0
    for c0, c1 in zip(t0.calls, t1.calls, strict=True):
        i0 = c0.inputs
        if any(i0.get(k) is None for k in ("value", "sensitivity", "epsilon")) or \
                "value" not in c1.inputs or (i0.get("delta") or 0.0) > 0:
            return None
        d = _distance(i0["value"], c1.inputs["value"])
        if math.isnan(d):
            return None
        s = float(i0["sensitivity"])
        if d == 0:
            continue
        total += math.inf if s == 0 else float(i0["epsilon"]) * d / s
    return total


def compare(t0: Trace, t1: Trace, *, rtol: float = 1e-9,
            claimed_epsilon: float | None = None) -> list[GreyboxFinding]:
    """Findings from two traces of neighbouring runs with identical randomness.

    With ``claimed_epsilon``, also a "composition" finding when :func:`implied_epsilon` of the
    pair exceeds it (the primitives together spend more than the mechanism claims)."""
    out: list[GreyboxFinding] = []
    seq0 = [(c.primitive, c.site) for c in t0.calls]
    seq1 = [(c.primitive, c.site) for c in t1.calls]
    if seq0 != seq1:
        i = next((k for k, (a, b) in enumerate(zip(seq0, seq1, strict=False)) if a != b),
                 min(len(seq0), len(seq1)))
        where = t0.calls[i] if i < len(t0.calls) else t1.calls[i]
        out.append(GreyboxFinding(
            "control_flow", where.primitive, where.site, i, None, None, None, None,
            f"primitive call sequences differ at call {i}: {len(seq0)} vs {len(seq1)} calls"))
    for i, (c0, c1) in enumerate(zip(t0.calls, t1.calls, strict=False)):
        if (c0.primitive, c0.site) != (c1.primitive, c1.site):
            break
        s = c0.inputs.get("sensitivity")
        if s is None or "value" not in c0.inputs or "value" not in c1.inputs:
            continue
        s1 = c1.inputs.get("sensitivity")
        d = _distance(c0.inputs["value"], c1.inputs["value"])
        if math.isnan(d):
            continue
        eps = c0.inputs.get("epsilon")
        if s1 is not None and s1 != s:
            # the declared sensitivity itself depends on the data (e.g. through n): both
            # declarations are recorded; the measured distance is checked against the larger
            s = max(float(s), float(s1))
        if d > float(s) * (1 + rtol) + 1e-300:
            implied = (math.inf if float(s) == 0 else float(eps) * d / float(s)) \
                if eps is not None else None
            out.append(GreyboxFinding(
                "sensitivity", c0.primitive, c0.site, i, d, float(s),
                None if eps is None else float(eps), implied,
                f"|value0 - value1| = {d:.6g} > declared sensitivity {float(s):.6g}"))
    if claimed_epsilon is not None:
        tot = implied_epsilon(t0, t1)
        if tot is not None and tot > claimed_epsilon * (1 + rtol):
            out.append(GreyboxFinding(
                "composition", "all primitives", t0.calls[0].site if t0.calls else "-", -1,
                tot, None, claimed_epsilon, tot,
                f"sum of eps_i * Delta_i / s_i = {tot:.6g} > claimed {claimed_epsilon:g}"))
    return out


def replay(mechanism: Callable[[Any, int], Any], d0: Any, d1: Any,
           primitives: tuple[Primitive, ...], *, seed: int = 0,
           claimed_epsilon: float | None = None
           ) -> tuple[list[GreyboxFinding], Trace, Trace]:
    """Record the two runs with the same seed and compare them."""
    t0 = record(mechanism, d0, seed, primitives)
    t1 = record(mechanism, d1, seed, primitives)
    return compare(t0, t1, claimed_epsilon=claimed_epsilon), t0, t1
