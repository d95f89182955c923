"""A trade-off function given numerically: a callable or a table of (alpha, beta) points."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dpaudit.curves.base import LabelledCurve, as_alpha
from dpaudit.validation import check_finite_array, check_same_length

__all__ = ["NumericCurve"]


class NumericCurve(LabelledCurve):
    """f given as a vectorised callable alpha -> beta, or by :meth:`from_table`.

    All conversions use the generic numeric routines of :mod:`dpaudit.curves.base`.
    ``symmetric=False`` makes ``delta``/``epsilon`` take the max over both orders.
    """

    def __init__(self, tradeoff: Callable[[np.ndarray], np.ndarray], *, symmetric: bool = True,
                 label: str = "NumericCurve", params: Mapping[str, float] | None = None) -> None:
        if not callable(tradeoff):
            raise ValueError("tradeoff must be a callable alpha -> beta")
        self._f = tradeoff
        self.symmetric = bool(symmetric)
        self._label = label
        self._params = dict(params or {})

    @classmethod
    def from_table(cls, alpha: Any, beta: Any, *, symmetric: bool = True) -> NumericCurve:
        """Piecewise-linear interpolation of a table of (alpha, beta) points.

        Linear interpolation between achievable (alpha, beta) points is itself achievable by
        randomising between the two tests, so the table is read as the trade-off function of a
        discrete mechanism.  alpha must be increasing in [0, 1] and beta non-increasing in [0, 1].
        """
        a = check_finite_array("alpha", alpha, min_size=2)
        b = check_finite_array("beta", beta, min_size=2)
        check_same_length(alpha=a, beta=b)
        if (a < 0).any() or (a > 1).any() or (b < 0).any() or (b > 1).any():
            raise ValueError("alpha and beta table entries must be in [0, 1]")
        if (np.diff(a) <= 0).any():
            raise ValueError("alpha table must be strictly increasing")
        if (np.diff(b) > 0).any():
            raise ValueError("beta table must be non-increasing")
        if a[0] > 0:
            a = np.concatenate([[0.0], a])
            b = np.concatenate([[1.0], b])
        if a[-1] < 1:
            a = np.concatenate([a, [1.0]])
            b = np.concatenate([b, [0.0]])
        return cls(lambda x: np.interp(x, a, b), symmetric=symmetric, label="TableCurve",
                   params={"points": float(len(a))})

    def tradeoff(self, alpha: Any) -> np.ndarray:
        a = as_alpha(alpha)
        out = np.asarray(self._f(a), dtype=float)
        if out.shape != a.shape:
            out = np.broadcast_to(out, a.shape).astype(float)
        if np.isnan(out).any():
            raise ValueError("tradeoff callable returned NaN")
        return np.clip(out, 0.0, 1.0)
