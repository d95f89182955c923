"""Observation types produced by games and consumed by estimators, validated on construction.

* :class:`MembershipObservations` -- per-canary ``member`` (truth bit: 1 = included / bit 1) and
  ``score`` (higher = more likely member / bit 1).  Used by the multi-run audit and, as
  per-canary truth bits and scores, by the one-run audits.
* :class:`SortedObservations` -- membership observations validated once (both classes
  present) and sorted once by score: what the public estimator entry points build and pass
  inward, so that no inner layer re-validates or re-sorts.
* :class:`LiftedObservations` -- LiDP trial-by-canary 0/1 matrices ``x`` (tests on the model
  trained with the K canaries) and ``y`` (tests on the model with K - 1 canaries plus fresh
  ones), Pillutla et al..

Bad input (NaN/inf scores, empty or mismatched arrays, non-binary labels) raises ValueError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.validation import check_binary_array, check_finite_array, check_same_length

__all__ = ["MembershipObservations", "SortedObservations", "LiftedObservations"]


@dataclass(frozen=True, eq=False)
class MembershipObservations:
    member: np.ndarray
    score: np.ndarray

    @classmethod
    def from_arrays(cls, member: Any, score: Any) -> MembershipObservations:
        """Validated observations.  Boolean ``member`` and float64 ``score`` inputs are not
        copied: the fields are read-only views of the caller's arrays (other dtypes are
        converted once: integer bits compared in their own dtype, scores to float64)."""
        m = check_binary_array("member", member)
        s = check_finite_array("score", score)
        check_same_length(member=m, score=s)
        return cls(member=_read_only(m), score=_read_only(s))

    @property
    def n(self) -> int:
        return int(self.member.size)

    @property
    def n_members(self) -> int:
        return int(np.count_nonzero(self.member))

    @property
    def n_nonmembers(self) -> int:
        return self.n - self.n_members

    def require_both_classes(self) -> None:
        if self.n_members == 0 or self.n_nonmembers == 0:
            raise ValueError(f"member must contain both 0 and 1 entries; got "
                             f"{self.n_members} members and {self.n_nonmembers} non-members")


@dataclass(frozen=True, eq=False)
class SortedObservations:
    """Membership observations validated once and sorted once (ascending score).

    Attributes:
      obs: the validated observations (input order).
      scores: the scores sorted ascending.
      member: the member flags in the same order.
      pos, neg: the members' and the non-members' scores, sorted ascending.

    Any sort order within a run of equal scores will do: equal scores are interchangeable in
    every array kept here (the sorted scores, the sorted member / non-member scores, and the
    member count of each run of equal scores), so the faster unstable sort gives the same
    results as a stable one.
    """

    obs: MembershipObservations
    scores: np.ndarray
    member: np.ndarray
    pos: np.ndarray
    neg: np.ndarray

    @classmethod
    def from_arrays(cls, member: Any, score: Any) -> SortedObservations:
        """Validate (:meth:`MembershipObservations.from_arrays`, both classes required) and
        sort: the public boundary's one pass."""
        obs = MembershipObservations.from_arrays(member, score)
        obs.require_both_classes()
        return cls.of(obs)

    @classmethod
    def of(cls, obs: MembershipObservations) -> SortedObservations:
        """Sort observations that are already valid (no check)."""
        order = np.argsort(obs.score)
        ss = obs.score[order]
        mem = obs.member[order]
        return cls(obs, ss, mem, ss[mem], ss[~mem])

    def run_starts(self) -> np.ndarray:
        """True at the first position of every run of equal sorted scores."""
        ss = self.scores
        keep = np.empty(ss.size, dtype=bool)
        keep[:1] = True
        np.not_equal(ss[1:], ss[:-1], out=keep[1:])
        return keep

    def unique(self) -> np.ndarray:
        """np.unique(score) from the sorted scores."""
        return self.scores[self.run_starts()]


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view (the caller's array itself stays writable)."""
    v = a.view()
    v.flags.writeable = False
    return v


def _binary_matrix(name: str, a: np.ndarray) -> np.ndarray:
    """A 0/1 (trials, K) matrix as bool.  Boolean and integer inputs take a fast path that
    compares in their own dtype (no float64 copy of the matrix); anything else, and any
    failure, goes through :func:`check_binary_array` (same messages)."""
    if a.ndim == 2 and a.size and (a.dtype == bool or np.issubdtype(a.dtype, np.integer)):
        if a.dtype == bool:
            return a
        if a.dtype.itemsize == 1:  # 0/1 bytes: one comparison, then a view as bool
            if not (a.view(np.uint8) > 1).any():
                return a.view(np.uint8).view(bool) if a.flags.c_contiguous else a != 0
        elif not ((a != 0) & (a != 1)).any():
            return a != 0
    return check_binary_array(name, a, ndim=2)


@dataclass(frozen=True, eq=False)
class LiftedObservations:
    """x, y: (trials, K) 0/1 matrices of test outcomes (Pillutla et al., Algorithm 1)."""

    x: np.ndarray
    y: np.ndarray

    @classmethod
    def from_arrays(cls, x: Any, y: Any) -> LiftedObservations:
        xa = np.asarray(x, dtype=object) if isinstance(x, (list, tuple)) else np.asarray(x)
        ya = np.asarray(y, dtype=object) if isinstance(y, (list, tuple)) else np.asarray(y)
        for name, a in (("x", xa), ("y", ya)):
            if a.size == 0:
                raise ValueError(f"{name} must be a non-empty (trials, K) 0/1 matrix, got shape "
                                 f"{a.shape}")
        if xa.ndim == 1:
            xa = xa.reshape(-1, 1)
        if ya.ndim == 1:
            ya = ya.reshape(-1, 1)
        xb = _binary_matrix("x", xa)
        yb = _binary_matrix("y", ya)
        if xb.shape[1] != yb.shape[1]:
            raise ValueError(f"x and y must have the same number of canaries per trial (K); "
                             f"got {xb.shape[1]} and {yb.shape[1]}")
        return cls(x=xb, y=yb)

    @property
    def k(self) -> int:
        return int(self.x.shape[1])
