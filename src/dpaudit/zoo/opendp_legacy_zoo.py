"""OpenDP 0.4.x (before the fix of its float aggregates), audited black-box: a known public
violation reproduced on the old version where it still installs.

Casacuberta, Shoemate, Vadhan and Wagaman, "Widespread Underestimation of Sensitivity in
Differentially Private Libraries and How to Fix It" (CCS 2022), Section 4 (rounding attacks on
float sums with known n): a sequential float sum of n values of magnitude about 2^k moves by
up to about n ulp(2^k) / 2 when one record is replaced, while OpenDP 0.4.0's
``make_sized_bounded_sum`` / ``make_sized_bounded_mean`` state the ideal sensitivity
(d_in / 2) (U - L) (resp. divided by n).  OpenDP 0.5.0 fixed both ("Account for finite data
types in aggregators based on our paper CSVW22": PRs #467 sum, #476 mean, #475 variance;
CHANGELOG of v0.5.0); the current version's float sums are audited in
:mod:`dpaudit.zoo.opendp_zoo` (no violation).

The compiled core ships no Rust source, so the cause is the line of the v0.4.0 tag of the
opendp/opendp repository (``Cause.compiled``), reported only when the installed version is
exactly that tag and the Python binding that calls it is found.  The module imports only
with opendp 0.4.x installed (its 0.4 API: ``opendp.trans``, ``opendp.meas``, ``check``);
otherwise the zoo skips it with the reason.  Install for a run (not part of ``dpaudit[zoo]``:
smartnoise-sql needs opendp 0.14.x)::

    python3 -m venv /tmp/venv-odp04
    /tmp/venv-odp04/bin/pip install opendp==0.4.0 "numpy<2" -e .
    /tmp/venv-odp04/bin/python -m dpaudit zoo --only opendp-0.4 --out docs/zoo-opendp-0.4.md

Claims: the measurements' own privacy relation at d_in = 2 (one record replaced; OpenDP's
symmetric distance counts a replacement as 2), checked with ``meas.check(2, eps)``.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.zoo.entry import Cause, Pair, ZooEntry

_VERSION = importlib.metadata.version("opendp")
if not _VERSION.startswith("0.4."):
    raise ImportError(f"the opendp-0.4 entries need opendp 0.4.x (installed: {_VERSION}); "
                      "run them from a venv with opendp==0.4.0 (docs/zoo-opendp-0.4.md)")

__all__ = ["entries"]

LIB = "opendp"
R = "replace_one"
REF = ("Casacuberta, Shoemate, Vadhan, Wagaman, CCS 2022 (rounding attack); fixed in OpenDP "
       "0.5.0 (PRs #467, #476)")


@dataclass(frozen=True)
class Legacy:
    """``make_sized_bounded_<kind>(size, bounds) >> make_base_laplace(scale)`` (OpenDP 0.4)."""

    kind: str
    size: int
    bounds: tuple[float, float]
    scale: float

    def measurement(self) -> Any:
        m = _CACHE.get(self)
        if m is None:
            from opendp.meas import make_base_laplace
            from opendp.mod import enable_features
            from opendp.trans import make_sized_bounded_mean, make_sized_bounded_sum

            enable_features("contrib", "floating-point")
            make = make_sized_bounded_sum if self.kind == "sum" else make_sized_bounded_mean
            m = make(self.size, self.bounds) >> make_base_laplace(self.scale)
            _CACHE[self] = m
        return m

    def claim(self) -> float:
        """The epsilon the measurement's own relation grants at d_in = 2: (U - L) / scale
        (sum) or (U - L) / (n scale) (mean); asserted through ``check``."""
        rng = self.bounds[1] - self.bounds[0]
        eps = rng / self.scale / (self.size if self.kind == "mean" else 1)
        if not self.measurement().check(2, eps * (1 + 1e-9)):
            raise ValueError(f"OpenDP does not grant epsilon {eps} for {self}")
        return eps

    def __call__(self, data: Any, rng: np.random.Generator) -> float:
        return float(self.measurement()([float(v) for v in data]))


_CACHE: dict[Legacy, Any] = {}


def _cause(kind: str, line: int, why: str) -> Cause:
    return Cause(module="opendp.trans", snippet=f"lib.opendp_trans__make_sized_bounded_{kind}",
                 explanation=why, reference=REF, known=True,
                 compiled=("opendp", "0.4.0", f"rust/opendp/src/trans/{kind}/mod.rs", line))


def entries() -> list[ZooEntry]:
    big = 2.0**50
    n = 4096
    fl0 = (big + 0.25,) * n
    fl1 = (big,) + fl0[1:]
    float_pair = Pair(f"float sum: {n} x (2^50+1/4) vs one record 2^50", fl0, fl1, R)
    out = []
    for kind, scale, line, why in (
            ("sum", 1.0, 46, "arg.iter().sum() rounds: replacing one record in [L, U] moves "
             "the float sum by 1024 (U - L) at n = 4096, |x| ~ 2^50, but the relation "
             "(line 52-53) states (d_in / 2) (U - L)"),
            ("mean", 1.0 / n, 27, "arg.iter().sum() / n rounds the same way: the mean moves "
             "by 1024 (U - L) / n, the relation (line 33-34) states (d_in / 2) (U - L) / n")):
        m = Legacy(kind, n, (big, big + 1.0), scale)
        eps = m.claim()
        out.append(ZooEntry(
            f"opendp-0.4/sized-{kind}-float", LIB, m, eps, 0.0, (float_pair,),
            f"make_sized_bounded_{kind}(n = 4096, [2^50, 2^50 + 1]) >> base_laplace("
            f"{'1' if kind == 'sum' else '1/4096'}); claim at d_in = 2 (one record replaced)",
            cause=_cause(kind, line, why), randomness="library", adjacency=R,
            trials_scale=0.5))
    # The same transformations on small bounds, where the float sum is exact: no violation
    # (known-correct controls for the false-violation count).
    small = Legacy("sum", 4, (0.0, 10.0), 10.0)
    out.append(ZooEntry(
        "opendp-0.4/sized-sum", LIB, small, small.claim(), 0.0,
        (Pair("[0, 0, 0, 0] vs [10, 0, 0, 0]", (0.0,) * 4, (10.0, 0.0, 0.0, 0.0), R),),
        "make_sized_bounded_sum(n = 4, [0, 10]) >> base_laplace(10); claim at d_in = 2",
        randomness="library", adjacency=R))
    small_mean = Legacy("mean", 4, (0.0, 10.0), 2.5)
    out.append(ZooEntry(
        "opendp-0.4/sized-mean", LIB, small_mean, small_mean.claim(), 0.0,
        (Pair("[0, 0, 0, 0] vs [10, 0, 0, 0]", (0.0,) * 4, (10.0, 0.0, 0.0, 0.0), R),),
        "make_sized_bounded_mean(n = 4, [0, 10]) >> base_laplace(2.5); claim at d_in = 2",
        randomness="library", adjacency=R))
    return out
