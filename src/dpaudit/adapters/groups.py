"""Per-user (group-level) aggregation for user-level DP audits.

User-level DP protects all records of one user at once, so the audit's secret is one bit per
USER: the user's records are all in the training data or all out.  A table with several records
per user (``group``), each with the user's membership bit and a per-record score, is reduced to
one observation per user: the user's bit and an aggregate of the user's record scores.  The
aggregation rule is explicit (there is no default) because it is part of the attack:

* ``"max"``  -- the most member-like record (an attacker that needs one telltale record);
* ``"mean"`` -- the average record score (robust to a single outlier);
* ``"sum"``  -- total evidence; for per-record log-likelihood ratios of independent records this
  is the user's exact log-likelihood ratio (Neyman-Pearson optimal), but it favours users with
  more records, so use it when record counts do not depend on membership.

Every rule is a function of the user's records only, so the user-level observations satisfy
what the estimators need (one secret per user; a score computed from the output) whatever rule
is chosen; the rule only changes the power of the audit.  A user whose records disagree on the
membership bit is rejected (ValueError naming the user), since it breaks "one secret per user".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.observations import MembershipObservations
from dpaudit.validation import check_binary_array, check_choice, check_finite_array

__all__ = ["AGGREGATIONS", "GroupedObservations", "aggregate_by_group"]

AGGREGATIONS = ("max", "mean", "sum")


@dataclass(frozen=True, eq=False)
class GroupedObservations:
    """One observation per group: ``groups[i]`` has bit ``member[i]`` and ``score[i]``
    (the aggregate of its ``sizes[i]`` records)."""

    groups: np.ndarray
    sizes: np.ndarray
    observations: MembershipObservations
    aggregate: str

    @property
    def member(self) -> np.ndarray:
        return self.observations.member

    @property
    def score(self) -> np.ndarray:
        return self.observations.score


def aggregate_by_group(group: Any, member: Any, score: Any, *,
                       aggregate: str) -> GroupedObservations:
    """Reduce per-record (group, member, score) rows to one (member, score) per group.

    Args:
      group: group (user) identifier per record: any hashable values NumPy can sort
        (integers or strings).
      member: 0/1 per record; must be constant within each group.
      score: per-record score, higher = more likely member.
      aggregate: "max", "mean" or "sum" (required: the rule is part of the attack).

    Groups are returned in sorted order of their identifiers.  Vectorised (one ``np.unique``).
    """
    how = check_choice("aggregate", aggregate, AGGREGATIONS)
    m = check_binary_array("member", member)
    s = check_finite_array("score", score)
    g = np.asarray(group)
    if g.ndim != 1:
        g = g.reshape(-1)
    if not (g.size == m.size == s.size):
        raise ValueError(f"group, member and score must have the same length, got "
                         f"{g.size}, {m.size} and {s.size}")
    if g.dtype == object:
        g = g.astype(str)
    try:
        keys, inv, sizes = np.unique(g, return_inverse=True, return_counts=True)
    except TypeError:
        raise ValueError("group must hold sortable identifiers (integers or strings)") \
            from None
    k = keys.size
    ones = np.bincount(inv, weights=m.astype(float), minlength=k)
    mixed = (ones > 0) & (ones < sizes)
    if mixed.any():
        i = int(np.flatnonzero(mixed)[0])
        raise ValueError(f"group {keys[i].item()!r} has records with member = 1 and member = 0 "
                         f"({int(ones[i])} of {int(sizes[i])}); user-level audits need one "
                         f"membership bit per group ({int(mixed.sum())} such group(s))")
    if how == "max":
        agg = np.full(k, -np.inf)
        np.maximum.at(agg, inv, s)
    else:
        agg = np.bincount(inv, weights=s, minlength=k)
        if how == "mean":
            agg = agg / sizes
    obs = MembershipObservations.from_arrays(ones > 0, agg.astype(float))
    return GroupedObservations(groups=keys, sizes=sizes, observations=obs, aggregate=how)
