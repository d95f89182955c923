"""The precision attack on every float noise sampler of the zoo's libraries.

Haney, Desfontaines, Hartman, Shrestha and Hay, "Precision-based attacks and interval
refining: how to break, then fix, differential privacy on finite computers" (2022), Section 3;
Mironov, "On Significance of the Least Significant Bits for Differential Privacy" (CCS 2012).

For each sampler (values 0 and 1, sensitivity 1) it draws ``--draws`` outputs per value and
reports, among outputs in (-1/2, 1/2):

* ``P0(S)``, ``P1(S)``: the frequency of S = "not a multiple of 2^-53" (the zoo's ``OffGrid``
  score) under value 0 and value 1;
* ``finest grid``: the largest k such that some output is an odd multiple of 2^-k, per value.

A sampler that returns ``value + noise`` in doubles has P1(S) = 0 exactly (1 plus a double in
(-3/2, -1/2) is an exact multiple of 2^-53) and P0(S) > 0: that separation is a violation of
every (eps, delta) claim with delta < P0(S) (zoo entries ``*-precision``).  Samplers that are
exact then rounded once (OpenDP) or snapped to a coarse grid (diffprivlib's Snapping, PyDP's
Laplace with granularity 2^-40) show no separation.  Samplers with integer or categorical
outputs (Geometric, GaussianDiscrete, Exponential, PermuteAndFlip) are outside this attack.
SmartNoise SQL draws with OpenDP's ``make_laplace`` / ``make_gaussian`` and PipelineDP with
PyDP's mechanisms (``snsql/sql/_mechanisms``, ``pipeline_dp/dp_computations.py``), so their
rows are OpenDP's and PyDP's.

    .venv-zoo/bin/python studies/zoo_precision.py [--draws 3000]
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Callable, Iterator

from dpaudit.zoo.entry import OffGrid


def finest(v: float) -> int:
    """k such that v != 0 is an odd multiple of 2^-k."""
    m, e = math.frexp(v)
    mi = int(m * 2**53)
    return -(e - 53 + (mi & -mi).bit_length() - 1)


def samplers() -> Iterator[tuple[str, Callable[[float, int], float]]]:
    try:
        import diffprivlib.mechanisms as M

        def dl(cls: str, **kw: object) -> Callable[[float, int], float]:
            return lambda v, s: getattr(M, cls)(random_state=s, **kw).randomise(v)

        dom = dict(lower=-10.0, upper=10.0)
        yield "diffprivlib Laplace", dl("Laplace", epsilon=1.0, sensitivity=1.0)
        yield "diffprivlib LaplaceTruncated", dl("LaplaceTruncated", epsilon=1.0,
                                                 sensitivity=1.0, **dom)
        yield "diffprivlib LaplaceFolded", dl("LaplaceFolded", epsilon=1.0, sensitivity=1.0,
                                              **dom)
        yield "diffprivlib LaplaceBoundedDomain", dl("LaplaceBoundedDomain", epsilon=1.0,
                                                     sensitivity=1.0, **dom)
        yield "diffprivlib LaplaceBoundedNoise", dl("LaplaceBoundedNoise", epsilon=1.0,
                                                    delta=0.01, sensitivity=1.0)
        yield "diffprivlib Staircase", dl("Staircase", epsilon=1.0, sensitivity=1.0)
        yield "diffprivlib Gaussian", dl("Gaussian", epsilon=1.0, delta=1e-3, sensitivity=1.0)
        yield "diffprivlib GaussianAnalytic", dl("GaussianAnalytic", epsilon=1.0, delta=1e-3,
                                                 sensitivity=1.0)
        yield "diffprivlib Uniform", dl("Uniform", delta=0.2, sensitivity=1.0)
        yield "diffprivlib Snapping", dl("Snapping", epsilon=1.0, sensitivity=1.0, **dom)
    except ImportError as exc:
        print(f"skipped diffprivlib: {exc}")
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        space = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float))
        lap = dp.m.make_laplace(*space, scale=1.0)
        gau = dp.m.make_gaussian(*space, scale=1.0)
        yield "opendp make_laplace (float)", lambda v, s: lap(float(v))
        yield "opendp make_gaussian (float)", lambda v, s: gau(float(v))
    except ImportError as exc:
        print(f"skipped opendp: {exc}")
    try:
        from pydp.algorithms import numerical_mechanisms as nm

        yield "pydp LaplaceMechanism", lambda v, s: nm.LaplaceMechanism(
            epsilon=1.0, sensitivity=1.0).add_noise(float(v))
        yield "pydp GaussianMechanism", lambda v, s: nm.GaussianMechanism(
            epsilon=1.0, delta=1e-3, sensitivity=1.0).add_noise(float(v))
    except ImportError as exc:
        print(f"skipped pydp: {exc}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=3000)
    n = ap.parse_args().draws
    score = OffGrid()
    print(f"{'sampler':34s} {'P0(S)':>7s} {'P1(S)':>7s}  finest grid (v=0, v=1)  seconds")
    for name, draw in samplers():
        t = time.perf_counter()
        hits, grid = [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for v, base in ((0.0, 0), (1.0, 10**6)):
                outs = [float(draw(v, base + s)) for s in range(n)]
                near = [o for o in outs if o != 0.0 and abs(o) < 0.5]
                hits.append(sum(score(o) for o in outs) / n)
                grid.append(max((finest(o) for o in near), default=None))
        g = ", ".join("-" if k is None else f"2^-{k}" for k in grid)
        print(f"{name:34s} {hits[0]:7.4f} {hits[1]:7.4f}  {g:22s}"
              f"{time.perf_counter() - t:6.1f}", flush=True)


if __name__ == "__main__":
    main()
