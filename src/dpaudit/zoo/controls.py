"""The zoo's known-correct mechanisms: the controls on which its false-violation rate is
measured (tests/zoo/test_false_violations.py, studies/zoo.py).

Each is eps-DP for its claim under the scores it is audited with: dpaudit's Laplace and
randomized-response simulators; diffprivlib's Geometric mechanism and its Laplace under the
threshold scores output / -output (which see it as the ideal Laplace up to float rounding; its
low-order bits are not eps-DP, the separate entry diffprivlib/Laplace-precision); OpenDP's and
PyDP's Laplace and OpenDP's Gaussian (an (eps, delta) claim) under the precision score
:class:`~dpaudit.zoo.entry.OffGrid` (built to resist it: exact arithmetic then one rounding,
and a granularity grid); PipelineDP's VARIANCE on [0, 10] (the control of the symmetric-bounds
finding); the rho-zCDP claims (dpaudit's Gaussian and randomized-response simulators, OpenDP's
Gaussian and noisy max under zero-concentrated divergence at 0.14.2, whose Gumbel selection is
the exponential mechanism).  Libraries that are not installed
contribute nothing.
"""

from __future__ import annotations

import dataclasses
import importlib

from dpaudit.zoo import reference_zoo
from dpaudit.zoo.entry import OffGrid, Pair, ZooEntry, library_version

__all__ = ["correct_entries"]


def correct_entries() -> list[ZooEntry]:
    """The known-correct entries of the installed libraries (module docstring)."""
    out = list(reference_zoo.entries())
    try:
        from dpaudit.zoo import diffprivlib_zoo

        keep = {"diffprivlib/Laplace", "diffprivlib/Geometric"}
        out += [dataclasses.replace(e, pairs=e.pairs[:1]) for e in diffprivlib_zoo.entries()
                if e.key in keep]
    except ImportError:
        pass
    for mod, key in (("opendp_zoo", "opendp/laplace"), ("opendp_zoo", "opendp/gaussian"),
                     ("pydp_zoo", "python-dp/LaplaceMechanism")):
        try:  # the library itself is imported when its entries are built
            m = importlib.import_module(f"dpaudit.zoo.{mod}")
            base = [e for e in m.entries() if e.key == key]
        except ImportError:
            continue
        out += [dataclasses.replace(e, key=f"{e.key}+offgrid", scores=(OffGrid(),),
                                    pairs=(Pair("value 1 vs 0", 1.0, 0.0, e.adjacency),))
                for e in base]
    try:
        from dpaudit.zoo import opendp_zoo

        out += [e for e in opendp_zoo.entries()
                if e.key in ("opendp/gaussian-zcdp", "opendp/noisy_max-zcdp")]
    except ImportError:
        pass
    try:
        from dpaudit.zoo import pipelinedp_zoo

        out += [e for e in pipelinedp_zoo.entries() if e.key == "pipeline-dp/VARIANCE-control"]
    except ImportError:
        pass
    # an entry module imports without its library (the library is imported on first call):
    # keep the entries whose library is installed
    return [e for e in out if library_version(e.library) != "not installed"]
