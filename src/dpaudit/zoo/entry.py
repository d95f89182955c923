"""The zoo's vocabulary: a library mechanism under audit, its claim, the auditor's candidate
neighbours, the score functions tried on its outputs, and the located cause of a known bug.

A :class:`ZooEntry` is data, not code: the mechanism is a picklable callable
``mechanism(dataset, rng) -> output`` (the :class:`dpaudit.BlackBoxAudit` contract) wrapping one
call of the library as its users make it, with the library's own claimed (epsilon, delta) for
that call.  ``pairs`` are the neighbouring data sets the auditor may choose among (clamping
bounds and values at or beyond them, empty and one-record data sets, float constructions,
extreme parameters); ``scores`` are fixed post-processings of the output.  Which pair, score and
threshold the final audit uses is decided on separate search trials
(:mod:`dpaudit.zoo.audit`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Pair", "Cause", "ZooEntry", "Identity", "Negate", "NegAbs", "Coordinate", "OffGrid",
           "finite_score", "library_version", "locate", "tested_claim"]

_BIG = 1.0e300


def finite_score(x: Any) -> float:
    """A fixed map of any float output to a finite score (a post-processing, so it cannot
    increase the privacy loss): +inf -> 1.7e308, -inf -> -1.7e308, NaN (also a failed call)
    -> -1.0e308; finite values unchanged."""
    v = float(x)
    if math.isnan(v):
        return -1.0e308
    if math.isinf(v):
        return 1.7e308 if v > 0 else -1.7e308
    return v


@dataclass(frozen=True)
class Identity:
    """score = output (finite-mapped)."""

    def __call__(self, output: Any) -> float:
        return finite_score(output)

    def __str__(self) -> str:
        return "output"


@dataclass(frozen=True)
class Negate:
    """score = -output (the test "output <= t")."""

    def __call__(self, output: Any) -> float:
        return -finite_score(output)

    def __str__(self) -> str:
        return "-output"


@dataclass(frozen=True)
class NegAbs:
    """score = -|output - centre| (the test "output close to centre")."""

    centre: float = 0.0

    def __call__(self, output: Any) -> float:
        v = float(output)
        if math.isnan(v):
            return -1.7e308
        return -min(abs(v - self.centre), 1.7e308)

    def __str__(self) -> str:
        return f"-|output - {self.centre:g}|"


@dataclass(frozen=True)
class Coordinate:
    """score = sign * output[index] (vector outputs: histograms, noisy vectors)."""

    index: int
    sign: float = 1.0

    def __call__(self, output: Any) -> float:
        return self.sign * finite_score(np.ravel(np.asarray(output, dtype=float))[self.index])

    def __str__(self) -> str:
        return f"{'-' if self.sign < 0 else ''}output[{self.index}]"


@dataclass(frozen=True)
class OffGrid:
    """score = 1 when |output| < limit and output is not a multiple of ``grid``, else 0.

    The precision-based test of Haney, Desfontaines, Hartman, Shrestha and Hay, "Precision-based
    attacks and interval refining: how to break, then fix, differential privacy on finite
    computers" (2022), Section 3: a float x + noise with x = 1 and |x + noise| < 1/2 is exact and
    a multiple of 2^-53, while noise alone (x = 0) is finer near 0."""

    grid: float = 2.0**-53
    limit: float = 0.5

    def __post_init__(self) -> None:
        for name in ("grid", "limit"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v <= 0:
                raise ValueError(f"{name} must be a finite number > 0; got {v!r}")

    def __call__(self, output: Any) -> float:
        v = float(output)
        if not math.isfinite(v) or abs(v) >= self.limit:
            return 0.0
        return 0.0 if (v / self.grid).is_integer() else 1.0

    def __str__(self) -> str:
        return f"1[|output| < {self.limit:g}, output not a multiple of {self.grid:.3g}]"


DEFAULT_SCORES = (Identity(), Negate())


@dataclass(frozen=True)
class Pair:
    """Two neighbouring data sets chosen by the auditor, with the adjacency they satisfy."""

    label: str
    d0: Any
    d1: Any
    adjacency: str = "add_remove"

    def __call__(self, rng: np.random.Generator) -> tuple[Any, Any]:
        """The BlackBoxAudit ``neighbours`` contract (a fixed pair)."""
        return self.d0, self.d1


@dataclass(frozen=True)
class Cause:
    """Where a violation comes from, in the library's source at the pinned version.

    ``module`` is the importable module holding the faulty code and ``snippet`` a string on the
    faulty line; :func:`locate` finds the file and line in the installed package, so the
    report shows the line of the version actually audited (or says it was not found).

    ``compiled = (distribution, version, path, line)`` is for a cause in compiled code whose
    source is not installed: the line of ``path`` in the library's repository at that
    version's tag, read there by hand.  It is reported only when the installed version is
    exactly ``version`` and ``snippet`` (the binding that calls the compiled function) is
    found in ``module``; any other version leaves the cause unlocated."""

    module: str
    snippet: str
    explanation: str
    reference: str
    known: bool = True
    compiled: tuple[str, str, str, int] | None = None


@dataclass(frozen=True)
class ZooEntry:
    """One library call under audit.

    Attributes:
      key: unique id, ``library/mechanism`` (used by ``dpaudit zoo --only``).
      library: the distribution name (``pip`` name) whose version is reported.
      mechanism: ``mechanism(dataset, rng) -> output`` calling the library once.
      epsilon, delta: the library's claim for that call (its own parameters).
      pairs: candidate neighbours; scores: candidate score functions.
      cause: the located cause when the entry audits a known bug (None otherwise); a bound
        above the claim without a cause is shown but never reported as a finding.
      trials_scale: the entry's trial budget relative to the zoo's (slow library calls < 1).
      randomness: "seeded" (trial streams reach the library) or "library" (its own CSPRNG).
      adjacency: the neighbour relation the library's claim is stated for: "add_remove",
        "replace_one", or "unstated" (then the claim is read in the way least favourable to
        a finding: see :func:`tested_claim`).
      rho: a claim in its own currency, rho-zCDP (Bun and Steinke 2016): the audit then bounds
        rho under the trade-off curve every rho-zCDP mechanism satisfies
        (:mod:`dpaudit.curves.zcdp`), never a converted (epsilon, delta); ``epsilon`` and
        ``delta`` then hold the library's own conversion, shown for reference only.
    """

    key: str
    library: str
    mechanism: Callable[[Any, np.random.Generator], Any]
    epsilon: float
    delta: float
    pairs: tuple[Pair, ...]
    description: str
    scores: tuple[Callable[[Any], float], ...] = DEFAULT_SCORES
    cause: Cause | None = None
    trials_scale: float = 1.0
    randomness: str = "seeded"
    adjacency: str = "add_remove"
    notes: str = ""
    rho: float | None = None

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]

    @property
    def currency(self) -> str:
        """"rho" for a zCDP claim, else "epsilon"."""
        return "epsilon" if self.rho is None else "rho"


def tested_claim(entry: ZooEntry, pair: Pair) -> tuple[float, float] | None:
    """The (epsilon, delta) the pair is tested against, or None when the pair is not a pair
    of neighbours under some reading of the library's claim (it is then never used).

    * the pair's adjacency is the declared one: the claim itself;
    * replace-one pair, add/remove claim: group privacy over the two steps (remove, add),
      (2 eps, (1 + e^eps) delta) (Dwork and Roth, "The Algorithmic Foundations of
      Differential Privacy", Theorem 2.2 and its (eps, delta) form);
    * "unstated": replace-one pairs are tested against (2 eps, (1 + e^eps) delta), valid under
      both readings; add/remove pairs are not neighbours under the replace-one reading (the
      sizes differ), so they are not used;
    * add/remove pair, replace-one claim: not neighbours, not used.

    A rho-zCDP claim (``entry.rho``) is tested as (rho, 0) under the same rules, with group
    privacy 4 rho for a replaced record (k-group privacy of zCDP is k^2 rho, Bun and Steinke
    2016, Proposition 1.9).
    """
    if entry.rho is not None:
        if pair.adjacency == entry.adjacency:
            return entry.rho, 0.0
        if pair.adjacency == "replace_one" and entry.adjacency in ("add_remove", "unstated"):
            return 4.0 * entry.rho, 0.0
        return None
    eps, delta = entry.epsilon, entry.delta
    if pair.adjacency == entry.adjacency:
        return eps, delta
    if pair.adjacency == "replace_one" and entry.adjacency in ("add_remove", "unstated"):
        return 2.0 * eps, min(1.0 - 1e-12, (1.0 + math.exp(eps)) * delta) if delta else 0.0
    return None


def library_version(dist: str) -> str:
    """Installed version of a distribution ("not installed" when absent)."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def locate(cause: Cause) -> tuple[str, int] | None:
    """(path relative to site-packages, 1-based line) of ``cause.snippet`` in the installed
    ``cause.module``, or None when the snippet is not found (the cause is then not located).
    For a ``compiled`` cause: (path in the repository at the tag, line) when the installed
    version is the tagged one and the binding's snippet is found, else None."""
    if cause.compiled is not None:
        dist, version, cpath, cline = cause.compiled
        found = locate(Cause(cause.module, cause.snippet, cause.explanation, cause.reference))
        if found is None or library_version(dist) != version:
            return None
        return f"{cpath} (v{version} tag)", int(cline)
    try:
        mod = importlib.import_module(cause.module)
        src, _ = inspect.getsourcelines(mod)
        path = inspect.getsourcefile(mod) or ""
    except (ImportError, OSError, TypeError):
        return None
    for i, line in enumerate(src):
        if cause.snippet in line:
            parts = path.replace("\\", "/").split("/")
            top = cause.module.split(".")[0]
            rel = "/".join(parts[parts.index(top):]) if top in parts else path
            return rel, i + 1
    return None
