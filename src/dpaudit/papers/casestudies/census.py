"""Census-like records: ACS-style columns, a Bayesian-network generator/prior, a PUMS loader.

Case study 2 of Beyond Worst Case (§6.1, "Datasets"): the paper fits a Bayesian network (BayNet) to
a
discretised ACS extract with 16 attributes, samples 100 fresh records from the fitted network as
the "original" dataset, and uses the same network as the adversary's explicit prior. This module
provides every piece of that pipeline without downloading anything:

* :data:`ACS_COLUMNS` -- the 16 ACS PUMS person attributes of the folktables ``ACSEmployment``
  task (AGEP, SCHL, MAR, RELP, DIS, ESP, CIT, MIG, MIL, ANC, NATIVITY, DEAR, DEYE, DREM, SEX,
  RAC1P), each with the mapping from raw PUMS codes to a 0-based category. AGEP is binned into
  10 decades (the paper: "'AGEP' (domain size 10 after discretization)"); SCHL and RELP are
  coarsened to 8 and 6 levels to keep 3-way marginals small (documented decision; the paper
  follows Annamalai et al. 2024, whose exact bins are not in the seed).
* :class:`BayesNet` -- a discrete Bayesian network (DAG + conditional probability tables) with
  vectorised ancestral sampling, maximum-likelihood fitting with a Dirichlet pseudo-count, and
  exact conditional inference given per-record evidence (variable elimination vectorised over
  records: sum-product for conditional marginals and P(evidence), max-product with traceback
  for the MAP completion and its probability -- the p*_i of Thm 3.5 for multi-column exact
  match, BWC notes §4.2).
* :func:`acs_generator_network` -- a fixed, seeded "census-like" network over the ACS columns
  (a synthetic stand-in for the raw data; no real records involved).
* :func:`load_pums_csv` / :func:`write_pums_csv` -- read a real ACS PUMS person CSV (the user's
  own download) into category indices, rejecting bad files with a ``ValueError`` that names the
  column; write records back in PUMS code format (used to produce the shipped synthetic sample
  ``dpaudit/data/acs_pums_synthetic_sample.csv``).
"""

from __future__ import annotations

import csv
import string
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from dpaudit.validation import check_count, check_nonnegative

__all__ = [
    "ColumnSpec", "ACS_COLUMNS", "ACS_PARENTS", "BayesNet", "acs_generator_network",
    "load_pums_csv", "write_pums_csv", "shipped_pums_sample_path", "column_index",
    "fit_acs_network",
]


# --------------------------------------------------------------------------------------------
# Column specifications (raw PUMS code -> category index)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ColumnSpec:
    """One discretised ACS PUMS column.

    ``codes[k]`` lists the raw PUMS codes (as stripped strings; ``""`` is PUMS's blank = N/A)
    mapped to category ``k``. For a binned numeric column (AGEP) ``bins`` holds the right-open
    bin edges instead and ``codes`` is empty.
    """

    name: str
    labels: tuple[str, ...]
    codes: tuple[tuple[str, ...], ...] = ()
    bins: tuple[float, ...] = ()

    @property
    def size(self) -> int:
        return len(self.labels)

    def encode(self, raw: Sequence[str]) -> np.ndarray:
        """Raw PUMS strings -> category indices; ValueError naming the column on bad values."""
        vals = np.asarray([str(r).strip() for r in raw], dtype=object)
        if self.bins:
            try:
                num = np.asarray(vals, dtype=float)
            except ValueError as exc:
                raise ValueError(f"column {self.name}: non-numeric value ({exc})") from None
            edges = np.asarray(self.bins, dtype=float)
            if np.any(~np.isfinite(num)) or np.any(num < edges[0]) or np.any(num >= edges[-1]):
                bad = num[~((num >= edges[0]) & (num < edges[-1]))][:3]
                raise ValueError(f"column {self.name}: values must lie in [{edges[0]:g}, "
                                 f"{edges[-1]:g}); got {bad.tolist()}")
            return (np.searchsorted(edges, num, side="right") - 1).astype(np.int64)
        lookup = {_norm_code(c): k for k, group in enumerate(self.codes) for c in group}
        normed = [_norm_code(v) for v in vals]
        unknown = sorted({v for v in normed if v not in lookup})
        if unknown:
            allowed = sorted(lookup, key=lambda s: (len(s), s))
            raise ValueError(f"column {self.name}: unexpected code(s) {unknown[:5]}; "
                             f"accepted PUMS codes are {allowed} ('' = blank/N/A)")
        return np.fromiter((lookup[v] for v in normed), dtype=np.int64, count=len(normed))

    def decode(self, idx: np.ndarray, rng: np.random.Generator) -> list[str]:
        """Category indices -> one representative raw PUMS code each (ages uniform in bin)."""
        idx = np.asarray(idx, dtype=np.int64)
        if self.bins:
            lo = np.asarray(self.bins[:-1])[idx]
            hi = np.minimum(np.asarray(self.bins[1:])[idx], 100.0)
            ages = np.floor(lo + rng.random(idx.shape) * (hi - lo)).astype(int)
            return [str(a) for a in ages]
        first = np.asarray([g[0] for g in self.codes], dtype=object)
        return [str(c) for c in first[idx]]


def _norm_code(c: str) -> str:
    """PUMS codes may be zero-padded ("01") or written as floats ("1.0"); normalise them."""
    c = c.strip()
    if c == "" or c.lower() in ("nan", "na", "b", "bb"):
        return ""
    try:
        f = float(c)
    except ValueError:
        return c
    return str(int(f)) if f == int(f) else c


def _r(lo: int, hi: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(lo, hi + 1))


ACS_COLUMNS: tuple[ColumnSpec, ...] = (
    ColumnSpec("AGEP", tuple(f"{10 * i}-{10 * i + 9}" if i < 9 else "90+" for i in range(10)),
               bins=tuple(float(10 * i) for i in range(10)) + (200.0,)),
    ColumnSpec("SCHL", ("N/A or none", "nursery-grade 8", "grade 9-12 no diploma",
                        "HS diploma/GED", "some college", "associate", "bachelor", "graduate"),
               codes=(("", "1"), _r(2, 11), _r(12, 15), _r(16, 17), _r(18, 19), ("20",), ("21",),
                      _r(22, 24))),
    ColumnSpec("MAR", ("married", "widowed", "divorced", "separated", "never married"),
               codes=tuple((str(i),) for i in range(1, 6))),
    ColumnSpec("RELP", ("reference person", "spouse/partner", "child", "other relative",
                        "non-relative", "group quarters"),
               codes=(("0",), ("1", "13"), _r(2, 4), _r(5, 10), ("11", "12", "14", "15"),
                      ("16", "17"))),
    ColumnSpec("DIS", ("with disability", "without"), codes=(("1",), ("2",))),
    ColumnSpec("ESP", ("N/A",) + tuple(f"code {i}" for i in range(1, 9)),
               codes=(("",),) + tuple((str(i),) for i in range(1, 9))),
    ColumnSpec("CIT", ("born US", "born PR/territory", "born abroad to US parents",
                       "naturalized", "not a citizen"),
               codes=tuple((str(i),) for i in range(1, 6))),
    ColumnSpec("MIG", ("N/A (<1 yr)", "same house", "abroad", "moved in US"),
               codes=(("",), ("1",), ("2",), ("3",))),
    ColumnSpec("MIL", ("N/A (<17)", "active duty", "past service", "reserves only", "never"),
               codes=(("",), ("1",), ("2",), ("3",), ("4",))),
    ColumnSpec("ANC", ("single", "multiple", "unclassified", "not reported", "suppressed"),
               codes=(("1",), ("2",), ("3",), ("4",), ("8",))),
    ColumnSpec("NATIVITY", ("native", "foreign born"), codes=(("1",), ("2",))),
    ColumnSpec("DEAR", ("yes", "no"), codes=(("1",), ("2",))),
    ColumnSpec("DEYE", ("yes", "no"), codes=(("1",), ("2",))),
    ColumnSpec("DREM", ("N/A (<5)", "yes", "no"), codes=(("",), ("1",), ("2",))),
    ColumnSpec("SEX", ("male", "female"), codes=(("1",), ("2",))),
    ColumnSpec("RAC1P", tuple(f"race {i}" for i in range(1, 10)),
               codes=tuple((str(i),) for i in range(1, 10))),
)

#: DAG of the census-like generator (and the default structure fitted to real PUMS data):
#: column -> parents. At most two parents, listed in a topological (BayNet visit) order.
ACS_PARENTS: dict[str, tuple[str, ...]] = {
    "AGEP": (), "SEX": (), "RAC1P": (),
    "NATIVITY": ("RAC1P",), "CIT": ("NATIVITY", "AGEP"), "ANC": ("NATIVITY", "RAC1P"),
    "MAR": ("AGEP", "SEX"), "RELP": ("AGEP", "MAR"), "SCHL": ("AGEP", "NATIVITY"),
    "ESP": ("AGEP", "RELP"), "MIG": ("AGEP", "MAR"), "MIL": ("AGEP", "SEX"),
    "DIS": ("AGEP", "SCHL"), "DEAR": ("AGEP", "DIS"), "DEYE": ("DIS", "AGEP"),
    "DREM": ("DIS", "AGEP"),
}


def column_index(names: Sequence[str], name: str) -> int:
    """Position of ``name`` in ``names`` (ValueError listing the valid names)."""
    try:
        return list(names).index(name)
    except ValueError:
        raise ValueError(f"column must be one of {list(names)}; got {name!r}") from None


# --------------------------------------------------------------------------------------------
# Bayesian network
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Factor:
    """Non-negative table over (record, *vars); ``log_scale`` per record keeps it O(1)."""

    vars: tuple[int, ...]
    table: np.ndarray
    log_scale: np.ndarray


@dataclass(frozen=True)
class BayesNet:
    """Discrete Bayesian network over columns ``names`` with domain ``sizes``.

    ``parents[j]`` is a tuple of column indices; ``cpts[j]`` has shape
    ``(*sizes[parents[j]], sizes[j])`` and sums to one over its last axis. ``order`` is a
    topological order (the BayNet "visit order" used for the multi-column experiment, Beyond Worst
    Case
    §6.3). The joint is P(x) = prod_j P(x_j | x_pa(j)), so records are independent draws and the
    prior is a product distribution as Thm 3.5 requires.
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    parents: tuple[tuple[int, ...], ...]
    cpts: tuple[np.ndarray, ...]
    order: tuple[int, ...]

    def __post_init__(self) -> None:
        d = len(self.names)
        if not (len(self.sizes) == len(self.parents) == len(self.cpts) == d):
            raise ValueError("names, sizes, parents and cpts must have the same length")
        if sorted(self.order) != list(range(d)):
            raise ValueError("order must be a permutation of the column indices")
        pos = {c: i for i, c in enumerate(self.order)}
        for j in range(d):
            shape = tuple(self.sizes[p] for p in self.parents[j]) + (self.sizes[j],)
            if self.cpts[j].shape != shape:
                raise ValueError(f"cpts[{self.names[j]}] must have shape {shape}; "
                                 f"got {self.cpts[j].shape}")
            if any(pos[p] >= pos[j] for p in self.parents[j]):
                raise ValueError(f"order is not topological at column {self.names[j]}")
            if not np.allclose(self.cpts[j].sum(-1), 1.0, atol=1e-9) or np.any(self.cpts[j] < 0):
                raise ValueError(f"cpts[{self.names[j]}] rows must be probability vectors")

    @property
    def d(self) -> int:
        return len(self.names)

    # -------------------------------------------------------------- construction
    @classmethod
    def from_parents(cls, names: Sequence[str], sizes: Sequence[int],
                     parents: dict[str, tuple[str, ...]], cpts: Sequence[np.ndarray]
                     ) -> BayesNet:
        """Build from name-keyed parents; the order is the dict order (must be topological)."""
        names = tuple(names)
        par = tuple(tuple(column_index(names, p) for p in parents[n]) for n in names)
        order = tuple(column_index(names, n) for n in parents)
        return cls(names, tuple(int(s) for s in sizes), par,
                   tuple(np.asarray(c, dtype=float) for c in cpts), order)

    @classmethod
    def fit(cls, records: np.ndarray, sizes: Sequence[int], parents: Sequence[Sequence[int]],
            *, names: Sequence[str] | None = None, order: Sequence[int] | None = None,
            pseudocount: float = 1.0) -> BayesNet:
        """Maximum-a-posteriori CPTs for a fixed DAG: (count + a) / (row total + a·|X_j|).

        Counting is one ``np.bincount`` per column over the flattened (parents, child) index.
        The pseudo-count keeps every conditional strictly positive (no zero-probability prior).
        """
        x = _check_records(records, sizes)
        a = check_nonnegative("pseudocount", pseudocount)
        d = x.shape[1]
        names = tuple(names) if names is not None else tuple(f"x{j}" for j in range(d))
        cpts = []
        for j in range(d):
            scope = tuple(parents[j]) + (j,)
            shape = tuple(int(sizes[c]) for c in scope)
            flat = np.ravel_multi_index(tuple(x[:, c] for c in scope), shape)
            counts = np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape) + a
            tot = counts.sum(-1, keepdims=True)
            cpts.append(np.where(tot > 0, counts / np.where(tot > 0, tot, 1), 1.0 / shape[-1]))
        if order is None:
            order = _topological(d, parents)
        return cls(names, tuple(int(s) for s in sizes), tuple(tuple(p) for p in parents),
                   tuple(cpts), tuple(order))

    # -------------------------------------------------------------- sampling / scoring
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Ancestral sampling of ``n`` records, shape (n, d), vectorised over records."""
        n = check_count("n", n, minimum=1)
        x = np.zeros((n, self.d), dtype=np.int64)
        for j in self.order:
            rows = self.cpts[j][tuple(x[:, p] for p in self.parents[j])]  # (n, size_j)
            rows = np.broadcast_to(rows, (n, self.sizes[j]))
            u = rng.random((n, 1))
            x[:, j] = np.minimum((np.cumsum(rows, axis=1) < u).sum(1), self.sizes[j] - 1)
        return x

    def log_prob(self, records: np.ndarray) -> np.ndarray:
        """log P(x) for each record (vectorised)."""
        x = _check_records(records, self.sizes)
        out = np.zeros(x.shape[0])
        for j in range(self.d):
            out += np.log(self.cpts[j][tuple(x[:, c] for c in self.parents[j] + (j,))])
        return out

    # -------------------------------------------------------------- inference
    def _evidence_factors(self, known: np.ndarray, known_cols: Sequence[int]) -> list[_Factor]:
        """CPTs with the evidence plugged in: one factor per column over (record, unknowns)."""
        n = known.shape[0]
        kpos = {c: i for i, c in enumerate(known_cols)}
        factors = []
        for j in range(self.d):
            scope = self.parents[j] + (j,)
            kn = [ax for ax, c in enumerate(scope) if c in kpos]
            un = [ax for ax, c in enumerate(scope) if c not in kpos]
            t = np.transpose(self.cpts[j], kn + un)
            if kn:
                t = t[tuple(known[:, kpos[scope[ax]]] for ax in kn)]
            else:
                t = np.broadcast_to(t, (n,) + t.shape)
            factors.append(_Factor(tuple(scope[ax] for ax in un), np.array(t, dtype=float),
                                   np.zeros(n)))
        return factors

    def _eliminate(self, factors: list[_Factor], var: int, how: str
                   ) -> tuple[list[_Factor], tuple[tuple[int, ...], np.ndarray] | None]:
        """Multiply the factors that mention ``var`` and sum or max it out."""
        touch = [f for f in factors if var in f.vars]
        rest = [f for f in factors if var not in f.vars]
        scope = tuple(sorted({v for f in touch for v in f.vars}))
        letters = string.ascii_letters
        sub = {v: letters[i + 1] for i, v in enumerate(scope)}
        ins = ",".join("a" + "".join(sub[v] for v in f.vars) for f in touch)
        prod = np.einsum(f"{ins}->a{''.join(sub[v] for v in scope)}",
                         *[f.table for f in touch])
        log_scale = np.sum([f.log_scale for f in touch], axis=0)
        ax = 1 + scope.index(var)
        trace = None
        if how == "sum":
            red = prod.sum(axis=ax)
        else:
            red = prod.max(axis=ax)
            trace = (tuple(v for v in scope if v != var), prod.argmax(axis=ax))
        m = red.reshape(red.shape[0], -1).max(axis=1)
        m = np.where(m > 0, m, 1.0)
        red = red / m.reshape((-1,) + (1,) * (red.ndim - 1))
        new = _Factor(tuple(v for v in scope if v != var), red, log_scale + np.log(m))
        return rest + [new], trace

    @staticmethod
    def _collapse(factors: list[_Factor]) -> np.ndarray:
        """log of the product of fully reduced (scalar-per-record) factors."""
        return np.sum([np.log(f.table.reshape(f.table.shape[0])) + f.log_scale
                       for f in factors], axis=0)

    def _prepare(self, known: np.ndarray, known_cols: Sequence[int],
                 query_cols: Sequence[int]) -> tuple[np.ndarray, list[int], list[int], list[int]]:
        known = np.asarray(known, dtype=np.int64)
        if known.ndim != 2 or known.shape[1] != len(known_cols):
            raise ValueError("known must have shape (n_records, len(known_cols))")
        known_cols = [int(c) for c in known_cols]
        query_cols = [int(c) for c in query_cols]
        if set(known_cols) & set(query_cols):
            raise ValueError("known_cols and query_cols must be disjoint")
        for i, c in enumerate(known_cols):
            if known.size and (known[:, i].min() < 0 or known[:, i].max() >= self.sizes[c]):
                raise ValueError(f"known values of column {self.names[c]} out of range")
        hidden = [c for c in range(self.d) if c not in known_cols and c not in query_cols]
        return known, known_cols, query_cols, hidden

    def _eliminate_all(self, fs: list[_Factor], vars_: Sequence[int], how: str
                       ) -> tuple[list[_Factor],
                                  list[tuple[int, tuple[tuple[int, ...], np.ndarray] | None]]]:
        """Eliminate ``vars_`` greedily (smallest combined table first); keep max traces."""
        left = list(vars_)
        traces = []
        while left:
            def cost(v: int, fs: list[_Factor] = fs) -> int:
                scope = {u for f in fs if v in f.vars for u in f.vars}
                return int(np.prod([self.sizes[u] for u in scope]))

            v = min(left, key=cost)
            left.remove(v)
            fs, tr = self._eliminate(fs, v, how)
            traces.append((v, tr))
        return fs, traces

    def log_evidence(self, known: np.ndarray, known_cols: Sequence[int]) -> np.ndarray:
        """log P(x_known) per record (all other columns summed out)."""
        known, known_cols, _, hidden = self._prepare(known, known_cols, [])
        fs, _ = self._eliminate_all(self._evidence_factors(known, known_cols), hidden, "sum")
        return self._collapse(fs)

    def conditional_marginal(self, known: np.ndarray, known_cols: Sequence[int],
                             col: int) -> np.ndarray:
        """P(x_col = v | x_known) for every record, shape (n, sizes[col]).

        Single-column case of BWC notes §4.2: P(x_u | rest) ∝ P(x_u | pa(u)) prod_children
        P(x_c | pa(c)); computed by sum-product elimination of every other unknown column.
        """
        known, known_cols, _, hidden = self._prepare(known, known_cols, [col])
        fs, _ = self._eliminate_all(self._evidence_factors(known, known_cols), hidden, "sum")
        out = np.ones((known.shape[0], self.sizes[col]))
        for f in fs:
            if f.vars == (col,):
                out = out * f.table
        return out / out.sum(axis=1, keepdims=True)

    def map_completion(self, known: np.ndarray, known_cols: Sequence[int],
                       query_cols: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """MAP values of ``query_cols`` given the known columns, and their posterior probability.

        Returns ``(z, p_star)`` with z of shape (n, len(query_cols)) and
        p*_i = max_z P(z | x_known,i) -- the best-guess prior success of multi-column exact match
        (BWC notes §1.7 "Multi-column exact match", §4.2). Columns that are neither known nor
        queried are summed out first (nuisance variables: max_z sum_h P(z, h, known)), then
        the query columns are max-eliminated and decoded by traceback.
        """
        known, known_cols, query_cols, hidden = self._prepare(known, known_cols, query_cols)
        if not query_cols:
            raise ValueError("query_cols must not be empty")
        fs, _ = self._eliminate_all(self._evidence_factors(known, known_cols), hidden, "sum")
        fs, traces = self._eliminate_all(fs, query_cols, "max")
        log_joint_max = self._collapse(fs)
        rows = np.arange(known.shape[0])
        val: dict[int, np.ndarray] = {}
        for v, (others, arg) in reversed(traces):
            val[v] = arg[(rows,) + tuple(val[o] for o in others)]
        z = np.stack([val[c] for c in query_cols], axis=1)
        p_star = np.exp(log_joint_max - self.log_evidence(known, known_cols))
        return z, np.clip(p_star, 0.0, 1.0)


def _topological(d: int, parents: Sequence[Sequence[int]]) -> tuple[int, ...]:
    done: list[int] = []
    left = set(range(d))
    while left:
        ready = sorted(j for j in left if all(p in done for p in parents[j]))
        if not ready:
            raise ValueError("parents contain a cycle")
        done.extend(ready)
        left -= set(ready)
    return tuple(done)


def _check_records(records: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    x = np.asarray(records)
    if x.ndim != 2 or x.shape[1] != len(sizes):
        raise ValueError(f"records must have shape (n, {len(sizes)}); got {x.shape}")
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError("records must be integer category indices")
    x = x.astype(np.int64)
    s = np.asarray(sizes)
    if x.size and (np.any(x < 0) or np.any(x >= s)):
        bad = int(np.argmax(np.any((x < 0) | (x >= s), axis=0)))
        raise ValueError(f"records column {bad} has values outside [0, {s[bad]})")
    return x


# --------------------------------------------------------------------------------------------
# The census-like generator network
# --------------------------------------------------------------------------------------------

#: rough national marginals (shape of the Dirichlet base measure), per column
_BASE: dict[str, tuple[float, ...]] = {
    "AGEP": (12, 13, 13, 13, 12, 13, 12, 7, 4, 1),
    "SEX": (49, 51), "RAC1P": (72, 12, 1, .1, .1, .2, 6, 5, 4),
    "NATIVITY": (86, 14), "CIT": (85, 1, 1, 7, 6), "ANC": (50, 20, 25, 4, 1),
    "MAR": (40, 6, 10, 2, 42), "RELP": (38, 20, 28, 6, 6, 2),
    "SCHL": (8, 12, 10, 25, 20, 8, 12, 5), "ESP": (78, 6, 2, 5, 1, 2, 1, 4, 1),
    "MIG": (2, 85, 1, 12), "MIL": (20, 1, 7, 1, 71), "DIS": (13, 87), "DEAR": (4, 96),
    "DEYE": (2.5, 97.5), "DREM": (6, 5, 89),
}


def acs_generator_network(seed: int = 2025, *, concentration: float = 6.0) -> BayesNet:
    """A fixed census-like Bayesian network over :data:`ACS_COLUMNS` (synthetic raw data).

    Each CPT row is Dirichlet(concentration · base) with the column's rough national base
    marginal, drawn from ``np.random.default_rng(seed)``; parents follow :data:`ACS_PARENTS`.
    Smaller ``concentration`` means stronger dependence on the parents. This is the stand-in
    for the paper's raw ACS extract: fit a network to samples of it (as one would to real PUMS
    data via :func:`load_pums_csv`) and use the fitted network as data source and prior.
    """
    rng = np.random.default_rng(seed)
    c = float(concentration)
    names = tuple(col.name for col in ACS_COLUMNS)
    sizes = tuple(col.size for col in ACS_COLUMNS)
    cpts = []
    for name, size in zip(names, sizes, strict=True):
        base = np.asarray(_BASE[name], dtype=float)
        base = base / base.sum()
        pshape = tuple(sizes[column_index(names, p)] for p in ACS_PARENTS[name])
        rows = rng.dirichlet(c * base * size / 2 + 0.05, size=pshape or None)
        cpts.append(np.asarray(rows).reshape(pshape + (size,)))
    return BayesNet.from_parents(names, sizes, ACS_PARENTS, cpts)


# --------------------------------------------------------------------------------------------
# PUMS CSV I/O
# --------------------------------------------------------------------------------------------

def shipped_pums_sample_path() -> Path:
    """Path of the small synthetic ACS-PUMS-format CSV shipped with dpaudit."""
    return Path(str(resources.files("dpaudit") / "data" / "acs_pums_synthetic_sample.csv"))


def load_pums_csv(path: str | Path, columns: Sequence[ColumnSpec] = ACS_COLUMNS
                  ) -> np.ndarray:
    """Read an ACS PUMS person CSV into category indices, shape (n, len(columns)).

    The file needs a header with at least the requested column names (any order, extra
    columns ignored, case-insensitive). Lines starting with ``#`` are comments. Raises
    ``ValueError`` naming the column for a missing column or an unexpected code.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file")
    with path.open(newline="") as fh:
        reader = csv.reader(row for row in fh if not row.lstrip().startswith("#"))
        try:
            header = [h.strip().upper() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"path {str(path)!r}: empty file (no header)") from None
        rows = [r for r in reader if r]
    cols = []
    for spec in columns:
        if spec.name.upper() not in header:
            raise ValueError(f"column {spec.name} is missing from {path.name} "
                             f"(header has {header[:20]})")
        k = header.index(spec.name.upper())
        if any(len(r) <= k for r in rows):
            raise ValueError(f"column {spec.name}: some rows are too short")
        cols.append(spec.encode([r[k] for r in rows]))
    if not rows:
        raise ValueError(f"path {str(path)!r}: no data rows")
    return np.stack(cols, axis=1)


def write_pums_csv(path: str | Path, records: np.ndarray, rng: np.random.Generator,
                   columns: Sequence[ColumnSpec] = ACS_COLUMNS, comment: str | None = None
                   ) -> Path:
    """Write category indices back as raw PUMS codes (one representative code per category)."""
    x = _check_records(records, [c.size for c in columns])
    path = Path(path)
    decoded = [spec.decode(x[:, j], rng) for j, spec in enumerate(columns)]
    from dpaudit.output import atomic_output

    with atomic_output(path, what="PUMS CSV") as tmp, tmp.open("w", newline="") as fh:
        if comment:
            for line in comment.splitlines():
                fh.write(f"# {line}\n")
        w = csv.writer(fh)
        w.writerow([c.name for c in columns])
        w.writerows(zip(*decoded, strict=True))
    return path


def fit_acs_network(records: np.ndarray, *, pseudocount: float = 1.0) -> BayesNet:
    """Fit the ACS structure (:data:`ACS_PARENTS`) to category-index records (e.g. the output of
    :func:`load_pums_csv` on public data) -- the paper's "BayNet fitted on public data"."""
    base_names = tuple(c.name for c in ACS_COLUMNS)
    parents = [tuple(column_index(base_names, p) for p in ACS_PARENTS[n]) for n in base_names]
    order = [column_index(base_names, n) for n in ACS_PARENTS]
    return BayesNet.fit(records, [c.size for c in ACS_COLUMNS], parents, names=base_names,
                        order=order, pseudocount=pseudocount)


if __name__ == "__main__":  # pragma: no cover - regenerates the shipped synthetic sample
    _out = shipped_pums_sample_path()
    _rng = np.random.default_rng(20251122)
    _recs = acs_generator_network().sample(500, _rng)
    write_pums_csv(_out, _recs, _rng, comment=(
        "SYNTHETIC DATA - not real ACS records. 500 person records sampled from\n"
        "dpaudit.papers.casestudies.census.acs_generator_network(seed=2025) and written in ACS PUMS code\n"  # noqa: E501
        "format by write_pums_csv (regenerate: python -m dpaudit.papers.casestudies.census)."))
    print(f"wrote {_out}")
