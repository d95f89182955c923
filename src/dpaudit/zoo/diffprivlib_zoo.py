"""diffprivlib (IBM): mechanisms, tools and one model, audited black-box.

Every call gets ``random_state`` = an integer drawn from the trial's stream, so trials are
reproducible, and a fresh ``BudgetAccountant`` (the default accountant would grow without end).

Known bugs audited (causes located in the installed source by :func:`dpaudit.zoo.entry.locate`):

* ``tools.sum`` / ``tools.mean`` / ``tools.var`` on floats: the sensitivity is the exact-arithmetic
  one ((U - L), (U - L) / n, (U - L)^2 (n - 1) / n^2 under replace-one), but NumPy's
  floating-point summation rounds: with values near 2^50 and U - L = 1 (ulp(2^50) = 1/4),
  replacing one record moves the float sum of 4096 records by 1024 (U - L) -- the rounding
  attack of Casacuberta, Shoemate, Vadhan and Wagaman, "Widespread Underestimation of
  Sensitivity in Differentially Private Libraries and How to Fix It" (CCS 2022), Section 4.
* ``models.LinearRegression``: the sensitivity of the diagonal 2nd-degree coefficient
  sum_i x_i^2 uses the lower bound twice (``bounds_X[0][i], bounds_X[0][i]``), so with
  bounds_X = (0, 100) it is 0 and that coefficient gets no noise (IBM/differential-privacy-library
  issue #104, item 1, September 2025; filed again as issue #105 by Cebere et al. with
  dp-recorder, "Privacy in Theory, Bugs in Practice: Grey-Box Auditing of Differential Privacy
  Libraries", PETS 2026; fix proposed in PR #110, open).
* **Precision of value + noise** (Haney, Desfontaines, Hartman, Shrestha and Hay, "Precision-based
  attacks and interval refining: how to break, then fix, differential privacy on finite
  computers", 2022, Section 3; Mironov, CCS 2012, for the low-order bits): every float sampler
  that returns ``value + noise`` in floats (Laplace and its truncated / folded / bounded
  variants, Staircase, Gaussian, GaussianAnalytic) releases, for value 1, outputs in (-1/2, 1/2)
  that are exact multiples of 2^-53 (1 and any double of magnitude in [1/2, 2) are multiples of
  2^-53, and their difference is exact), while for value 0 the output is the noise itself,
  finer than 2^-53 near 0 in most draws.  The output set S = "|output| < 1/2 and not a
  multiple of 2^-53" has P1(S) = 0 exactly and P0(S) of 0.08 to 0.3, so P0(S) - e^eps P1(S) >
  delta breaks (eps, delta)-DP for every eps (IBM/differential-privacy-library issue #94).
* ``models.LogisticRegression``: ``classes_ = np.unique(y)`` releases the label set of the
  training data without noise (IBM/differential-privacy-library issue #106): replacing one
  record's label by a label no other record has adds a class, deterministically.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.zoo.entry import (
    Cause,
    Coordinate,
    Identity,
    NegAbs,
    Negate,
    OffGrid,
    Pair,
    ZooEntry,
)

__all__ = ["entries", "float_sum_pair", "precision_entries"]

LIB = "diffprivlib"


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


def _accountant() -> Any:
    from diffprivlib.accountant import BudgetAccountant

    return BudgetAccountant()


V = "value_distance"  # mechanisms: inputs at distance <= the declared sensitivity
R = "replace_one"
U = "unstated"


@dataclass(frozen=True)
class Mech:
    """One diffprivlib mechanism: ``cls(epsilon=..., **params).randomise(value)``."""

    cls: str
    epsilon: float
    params: tuple[tuple[str, Any], ...] = ()

    def __call__(self, value: Any, rng: np.random.Generator) -> Any:
        import diffprivlib.mechanisms as m

        mech = getattr(m, self.cls)(epsilon=self.epsilon, random_state=_seed(rng),
                                    **dict(self.params))
        return mech.randomise(value)


@dataclass(frozen=True)
class ExpMech:
    """``Exponential(utility=dataset)``: the data set is the utility vector (sensitivity 1)."""

    epsilon: float

    def __call__(self, utility: Any, rng: np.random.Generator) -> float:
        from diffprivlib.mechanisms import Exponential

        mech = Exponential(epsilon=self.epsilon, sensitivity=1.0, utility=list(utility),
                           random_state=_seed(rng))
        return float(mech.randomise())


@dataclass(frozen=True)
class Tool:
    """One ``diffprivlib.tools`` aggregate on a 1-d array: ``fn(array, epsilon=..., **kw)``."""

    fn: str
    epsilon: float
    kwargs: tuple[tuple[str, Any], ...] = ()

    def __call__(self, data: Any, rng: np.random.Generator) -> Any:
        import diffprivlib.tools as tools

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = getattr(tools, self.fn)(np.asarray(data, dtype=float), epsilon=self.epsilon,
                                          random_state=_seed(rng), accountant=_accountant(),
                                          **dict(self.kwargs))
        if self.fn == "histogram":
            return np.asarray(out[0], dtype=float)
        return out


@dataclass(frozen=True)
class LinReg:
    """``models.LinearRegression(fit_intercept=False).fit(X, y).coef_[0]`` on one feature."""

    epsilon: float
    bounds_X: tuple[float, float]
    bounds_y: tuple[float, float]

    def __call__(self, data: Any, rng: np.random.Generator) -> float:
        from diffprivlib.models import LinearRegression

        xy = np.asarray(data, dtype=float).reshape(-1, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LinearRegression(epsilon=self.epsilon, bounds_X=self.bounds_X,
                                     bounds_y=self.bounds_y, fit_intercept=False,
                                     random_state=_seed(rng), accountant=_accountant())
            model.fit(xy[:, :1], xy[:, 1])
        return float(np.ravel(model.coef_)[0])


@dataclass(frozen=True)
class LogReg:
    """``models.LogisticRegression(data_norm=1).fit(X, y)``; the output is ``len(classes_)``
    (a post-processing of the released model)."""

    epsilon: float

    def __call__(self, data: Any, rng: np.random.Generator) -> float:
        from diffprivlib.models import LogisticRegression

        xy = np.asarray(data, dtype=float).reshape(-1, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LogisticRegression(epsilon=self.epsilon, data_norm=1.0,
                                       random_state=_seed(rng), accountant=_accountant())
            model.fit(xy[:, :1], xy[:, 1].astype(int))
        return float(len(model.classes_))


def float_sum_pair(n: int = 4096, exponent: int = 50) -> Pair:
    """Replace-one neighbours whose NumPy float sums differ by 1024 (U - L) (n = 4096,
    bounds [2^50, 2^50 + 1]): D0 = n copies of 2^50 + 1/4, D1 = D0 with the first record
    2^50.  The exact sums differ by 1/4; np.sum's pairwise rounding (ulp 1024 at 2^62)
    makes the float sums differ by 1024 (Casacuberta et al., CCS 2022, Section 4: the
    rounding attack, here found by a grid search over (v, w) in [L, U])."""
    lo = 2.0**exponent
    d0 = np.full(n, lo + 0.25)
    d1 = d0.copy()
    d1[0] = lo
    return Pair(f"float sum: {n} x (2^{exponent}+1/4) vs one record 2^{exponent}",
                tuple(d0.tolist()), tuple(d1.tolist()), R)


def _bounds_pairs(lo: float, hi: float) -> tuple[Pair, ...]:
    """Clamping neighbours: records at a bound, beyond it, empty and one-record data sets."""
    mid = (lo + hi) / 2
    return (
        Pair("one record: [lower] vs [upper]", (lo,), (hi,), R),
        Pair("10 x mid, one record at upper vs at lower", (mid,) * 9 + (lo,),
             (mid,) * 9 + (hi,), R),
        Pair("beyond bounds: [lower - 1e6] vs [upper + 1e6]", (lo - 1e6,), (hi + 1e6,), R),
    )


_FLOAT_SUM = Cause(
    module="diffprivlib.tools.utils",
    snippet="actual_sum = _func(array, axis=axis, dtype=dtype, keepdims=keepdims)",
    explanation="np.sum rounds: replacing one record in [L, U] moves the float sum by up "
                "to 1024 (U - L) at n = 4096, |x| ~ 2^50, but the noise is calibrated to U - L; "
                "and at |sum| ~ 2^62 that noise (Laplace scale 2) is far below the float "
                "spacing 1024, so sum + noise rounds back to the sum: the release is the "
                "un-noised rounded sum.  Fixing the summation alone would not restore DP: the "
                "noise must also be at least the output's float spacing",
    reference="Casacuberta, Shoemate, Vadhan, Wagaman, CCS 2022 (rounding attack)")
_FLOAT_MEAN = Cause(
    module="diffprivlib.tools.utils",
    snippet="actual_mean = _func(array, axis=axis, dtype=dtype, keepdims=keepdims)",
    explanation="np.mean = rounded float sum / n: the mean moves by 1024 (U - L) / n, the "
                "noise is calibrated to (U - L) / n; at |mean| ~ 2^50 that noise (Laplace scale "
                "2^-11) is far below the float spacing 1/4, so the release is the un-noised "
                "rounded mean.  Fixing the summation alone would not restore DP",
    reference="Casacuberta, Shoemate, Vadhan, Wagaman, CCS 2022 (rounding attack)")
_FLOAT_VAR = Cause(
    module="diffprivlib.tools.utils",
    snippet="actual_var = _func(array, axis=axis, dtype=dtype, keepdims=keepdims)",
    explanation="np.var centres on the rounded mean: the variance moves by 256 times the "
                "declared sensitivity (U - L)^2 (n - 1) / n^2 at n = 4096, |x| ~ 2^50",
    reference="Casacuberta, Shoemate, Vadhan, Wagaman, CCS 2022 (rounding attack)")
_LINREG = Cause(
    module="diffprivlib.models.linear_regression",
    snippet="sensitivity = np.max(np.abs([bounds_X[0][i], bounds_X[0][i]])) ** 2",
    explanation="the diagonal coefficient sum x_i^2 gets sensitivity max(|lower|, |lower|)^2 "
                "= 0 for bounds_X = (0, 100): no noise on it",
    reference="IBM/differential-privacy-library issue #104, item 1 (Sept. 2025; filed again "
              "as #105 by Cebere et al., PETS 2026; fix proposed in PR #110, open)")


_PRECISION_WHY = ("for value 1 every output in (-1/2, 1/2) is an exact multiple of 2^-53 (the "
                  "sum of 1 and a double of magnitude in [1/2, 2)), for value 0 the output is the "
                  "noise itself, finer than 2^-53 near 0 in most draws: the set 'finer than "
                  "2^-53 near 0' has probability 0 under value 1")
_PRECISION_REF = ("Haney, Desfontaines, Hartman, Shrestha, Hay 2022 (precision-based attacks); "
                  "IBM/differential-privacy-library issue #94 (open)")


def _precision_cause(module: str, snippet: str, what: str) -> Cause:
    return Cause(module, snippet, f"{what} is computed in floats: {_PRECISION_WHY}",
                 _PRECISION_REF)


def _precision_entry(key: str, mech: Mech, delta: float, description: str,
                     cause: Cause) -> ZooEntry:
    """value 1 vs 0 under the precision score :class:`OffGrid` (module docstring)."""
    return ZooEntry(key, LIB, mech, mech.epsilon, delta,
                    (Pair("value 1 vs 0 (float precision of value + noise)", 1.0, 0.0, V),),
                    description, scores=(OffGrid(),), adjacency=V, cause=cause)


def precision_entries() -> list[ZooEntry]:
    """The precision attack on diffprivlib's float samplers beyond ``Laplace`` (whose entry is
    ``diffprivlib/Laplace-precision``): one entry per distinct line adding the noise."""
    eps, s1 = 1.0, (("sensitivity", 1.0),)
    dom = (("lower", -10.0), ("upper", 10.0))
    gauss = _precision_cause("diffprivlib.mechanisms.gaussian",
                             "return value + standard_normal * self._scale",
                             "value + standard_normal * scale")
    return [
        _precision_entry("diffprivlib/Gaussian-precision",
                         Mech("Gaussian", eps, (("delta", 1e-3),) + s1), 1e-3,
                         "mechanisms.Gaussian(1, 1e-3), sensitivity 1, precision of the output",
                         gauss),
        _precision_entry("diffprivlib/GaussianAnalytic-precision",
                         Mech("GaussianAnalytic", eps, (("delta", 1e-3),) + s1), 1e-3,
                         "mechanisms.GaussianAnalytic(1, 1e-3), sensitivity 1, precision of the "
                         "output (inherits Gaussian.randomise)", gauss),
        _precision_entry("diffprivlib/LaplaceBoundedDomain-precision",
                         Mech("LaplaceBoundedDomain", eps, s1 + dom), 0.0,
                         "mechanisms.LaplaceBoundedDomain on [-10, 10], sensitivity 1, precision "
                         "of the output",
                         _precision_cause("diffprivlib.mechanisms.laplace",
                                          "noisy = value + self._scale * self._laplace_sampler(",
                                          "value + scale * noise (each rejection-sampling "
                                          "candidate)")),
        _precision_entry("diffprivlib/LaplaceBoundedNoise-precision",
                         Mech("LaplaceBoundedNoise", eps, (("delta", 0.01),) + s1), 0.01,
                         "mechanisms.LaplaceBoundedNoise(1, 0.01), sensitivity 1, precision of "
                         "the output",
                         _precision_cause("diffprivlib.mechanisms.laplace",
                                          "return value + noisy[idx]", "value + bounded noise")),
        _precision_entry("diffprivlib/Staircase-precision", Mech("Staircase", eps, s1), 0.0,
                         "mechanisms.Staircase, sensitivity 1, precision of the output",
                         _precision_cause("diffprivlib.mechanisms.staircase",
                                          "return value + sign * ((1 - binary_rv)",
                                          "value + staircase noise")),
    ]


def entries() -> list[ZooEntry]:
    """diffprivlib's zoo entries (claims are diffprivlib's own epsilon / delta)."""
    eps = 1.0
    lo, hi = 0.0, 10.0
    b = (("bounds", (lo, hi)),)
    fb = (("bounds", (2.0**50, 2.0**50 + 1.0)),)
    fsum = float_sum_pair()
    out = [
        ZooEntry("diffprivlib/Laplace", LIB, Mech("Laplace", eps, (("sensitivity", 1.0),)),
                 eps, 0.0, (Pair("value 0 vs 1", 0.0, 1.0, V),
                            Pair("value 1e15 vs 1e15 + 1 (float Laplace, large magnitude)",
                                 1e15, 1e15 + 1.0, V)),
                 "mechanisms.Laplace, sensitivity 1", adjacency=V),
        ZooEntry("diffprivlib/Laplace-precision", LIB,
                 Mech("Laplace", eps, (("sensitivity", 1.0),)), eps, 0.0,
                 (Pair("value 1 vs 0 (float precision of value + noise)", 1.0, 0.0, V),),
                 "mechanisms.Laplace, sensitivity 1, precision of the output",
                 scores=(OffGrid(),), adjacency=V,
                 cause=Cause("diffprivlib.mechanisms.laplace",
                             "return value - scale * standard_laplace",
                             "value - scale * noise is computed in floats: for value 1 every "
                             "output in (-1/2, 1/2) is a multiple of 2^-53, for value 0 most "
                             "are not, so the output set 'finer than 2^-53 near 0' has "
                             "probability about 0.2 vs 0",
                             "Haney, Desfontaines, Hartman, Shrestha, Hay 2022 (precision-based "
                             "attacks); IBM/differential-privacy-library issue #94 (open)")),
        ZooEntry("diffprivlib/Laplace-eps20", LIB,
                 Mech("Laplace", 20.0, (("sensitivity", 1.0),)), 20.0, 0.0,
                 (Pair("value 0 vs 1", 0.0, 1.0, V),), "mechanisms.Laplace, extreme epsilon 20",
                 scores=(Identity(), Negate(), NegAbs(0.0), NegAbs(1.0)), adjacency=V),
        ZooEntry("diffprivlib/GaussianAnalytic", LIB,
                 Mech("GaussianAnalytic", eps, (("delta", 1e-3), ("sensitivity", 1.0))),
                 eps, 1e-3, (Pair("value 0 vs 1", 0.0, 1.0, V),),
                 "mechanisms.GaussianAnalytic, sensitivity 1", adjacency=V),
        ZooEntry("diffprivlib/Geometric", LIB, Mech("Geometric", eps, (("sensitivity", 1),)),
                 eps, 0.0, (Pair("value 0 vs 1", 0, 1, V),), "mechanisms.Geometric, sensitivity 1",
                 adjacency=V),
        ZooEntry("diffprivlib/Exponential", LIB, ExpMech(eps), eps, 0.0,
                 (Pair("utilities (1,0,0) vs (0,1,1)", (1.0, 0.0, 0.0), (0.0, 1.0, 1.0), V),
                  Pair("utilities (0,0) vs (1,0)", (0.0, 0.0), (1.0, 0.0), V)),
                 "mechanisms.Exponential, utility sensitivity 1", adjacency=V,
                 notes="utility vectors at L-infinity distance 1"),
        ZooEntry("diffprivlib/count_nonzero", LIB, Tool("count_nonzero", eps), eps, 0.0,
                 (Pair("[0] vs [1]", (0.0,), (1.0,), R),
                  Pair("[0]*10 vs [0]*9 + [1]", (0.0,) * 10, (0.0,) * 9 + (1.0,), R)),
                 "tools.count_nonzero", adjacency=U),
        ZooEntry("diffprivlib/sum", LIB, Tool("sum", eps / 2, b), eps / 2, 0.0,
                 _bounds_pairs(lo, hi), "tools.sum, bounds [0, 10]", adjacency=U),
        ZooEntry("diffprivlib/sum-float", LIB, Tool("sum", eps / 2, fb), eps / 2, 0.0,
                 (fsum,), "tools.sum, bounds [2^50, 2^50 + 1]", cause=_FLOAT_SUM, adjacency=U),
        ZooEntry("diffprivlib/mean", LIB, Tool("mean", eps / 2, b), eps / 2, 0.0,
                 _bounds_pairs(lo, hi), "tools.mean, bounds [0, 10]", adjacency=U),
        ZooEntry("diffprivlib/mean-float", LIB, Tool("mean", eps / 2, fb), eps / 2, 0.0,
                 (fsum,), "tools.mean, bounds [2^50, 2^50 + 1]", cause=_FLOAT_MEAN,
                 adjacency=U),
        ZooEntry("diffprivlib/var", LIB, Tool("var", eps / 2, b), eps / 2, 0.0,
                 _bounds_pairs(lo, hi), "tools.var, bounds [0, 10]", adjacency=U),
        ZooEntry("diffprivlib/var-float", LIB, Tool("var", eps / 2, fb), eps / 2, 0.0,
                 (fsum,), "tools.var, bounds [2^50, 2^50 + 1]", cause=_FLOAT_VAR, adjacency=U),
        ZooEntry("diffprivlib/histogram", LIB,
                 Tool("histogram", eps, (("bins", 4), ("range", (0.0, 4.0)))), eps, 0.0,
                 (Pair("[0.5] vs [3.5]", (0.5,), (3.5,), R),
                  Pair("[0.5]*6 vs [0.5]*5 + [3.5]", (0.5,) * 6, (0.5,) * 5 + (3.5,), R)),
                 "tools.histogram, 4 bins on [0, 4]", adjacency=U,
                 scores=tuple(Coordinate(j, s) for j in (0, 3) for s in (1.0, -1.0))),
        ZooEntry("diffprivlib/median", LIB, Tool("median", eps, b), eps, 0.0,
                 (Pair("[0,0,10] vs [0,10,10]", (0.0, 0.0, 10.0), (0.0, 10.0, 10.0), R),
                  Pair("[5] vs [10]", (5.0,), (10.0,), R)),
                 "tools.median (exponential mechanism), bounds [0, 10]", adjacency=U),
        ZooEntry("diffprivlib/LinearRegression", LIB,
                 LinReg(eps / 2, (0.0, 100.0), (0.0, 1.0)), eps / 2, 0.0,
                 (Pair("[(1, 0), (1, 0)] vs [(1, 0), (100, 0)]", (1.0, 0.0, 1.0, 0.0),
                       (1.0, 0.0, 100.0, 0.0), R),
                  Pair("[(1, 1), (0, 0)] vs [(1, 1), (1, 1)]", (1.0, 1.0, 0.0, 0.0),
                       (1.0, 1.0, 1.0, 1.0), R)),
                 "models.LinearRegression(fit_intercept=False), bounds_X (0, 100), "
                 "bounds_y (0, 1)", scores=(Identity(), Negate(), NegAbs(0.0)),
                 cause=_LINREG, trials_scale=0.5, adjacency=U),
        ZooEntry("diffprivlib/LogisticRegression-classes", LIB, LogReg(eps), eps, 0.0,
                 (Pair("labels [0, 1, 1] vs [0, 1, 2] (x = 0)", (0.0, 0.0, 0.0, 1.0, 0.0, 1.0),
                       (0.0, 0.0, 0.0, 1.0, 0.0, 2.0), R),),
                 "models.LogisticRegression(data_norm=1), output len(classes_)",
                 cause=Cause("diffprivlib.models.logistic_regression",
                             "self.classes_ = np.unique(y)",
                             "the model's label set classes_ is the set of labels in the "
                             "training data, released without noise: replacing one record's "
                             "label by a new one adds a class to the released model",
                             "IBM/differential-privacy-library issue #106 (open; Cebere et al., "
                             "PETS 2026)"),
                 trials_scale=0.05, adjacency=U),
    ]
    return out + precision_entries()
