"""smartnoise-synth: a released synthetic table as a zoo entry (the synthetic-data game).

The game.  The data set is a small table of categorical records; the neighbours differ in one
worst-case record, a record whose cell no other record occupies (``(1, 1, 1)`` among
``(0, 0, 0)`` rows), so that every marginal touching it moves by one count.  The mechanism
fits the synthesizer with the library's own epsilon and releases a synthetic table of a fixed
number of rows; the scores read that record's cells from the synthetic table (how many rows
equal the record, how many have its value in one column), fixed post-processings, so the
zoo's two-phase audit (:mod:`dpaudit.zoo.audit`: search on its own trials, one threshold,
Clopper-Pearson bound on fresh trials of the trial engine) applies unchanged: the
worst-case-record game of black-box synthetic-data audits (as in the MST / AIM audit of
arXiv 2604.18352), reduced to the budget a 2-core machine allows.

Claims: smartnoise-synth states ``epsilon`` for the fit without stating the adjacency, so the
replaced record is tested at 2 epsilon (:func:`dpaudit.zoo.entry.tested_claim`).  The
synthesizers' query selection and sampling draw from NumPy's and Python's global generators,
seeded from the trial's stream, but their Laplace noise comes from OpenDP's ``make_laplace``
(its own generator): trials are not reproducible from the seed (``randomness="library"``);
the bounds stay valid (each trial is an independent run).

Finding (``MWEM-categories``): the synthesizer's preprocessing learns each categorical
column's categories from the private data without noise (``LabelTransformer._fit``, inferred
by ``TableTransformer.create`` when the caller passes no transformer, the documented
``Synthesizer.create("mwem", epsilon=1.0).fit_sample(df)`` usage), and samples only those
categories: a record whose value no other record has adds a category, so the synthetic table
contains that value only when the record is present (P0 = 0 exactly), breaking every
epsilon.  This is the domain leak of synthetic-data pipelines of Stadler, Oprisanu and
Troncoso, "Synthetic Data -- Anonymisation Groundhog Day" (USENIX Security 2022), and the
synthetic-data analogue of diffprivlib's classes_ (IBM/differential-privacy-library #106).
The entry ``MWEM`` audits the synthesizer proper on neighbours with the same categories.

Cost: one MWEM fit on a 10-record, 3-column table takes about 1.4 s here; MST about 16 s and
AIM about 27 s (private-pgm on JAX), which puts their thousands-of-fits audit (the tight
MST / AIM audit of arXiv 2604.18352: mu_emp ~ 0.43 against mu = 0.45) out of this zoo's
budget.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.zoo.entry import Cause, Pair, ZooEntry

__all__ = ["entries", "Synth", "RowCount", "ColumnCount"]

LIB = "smartnoise-synth"
COLUMNS = ("a", "b", "c")


@dataclass(frozen=True)
class Synth:
    """``Synthesizer.create(name, epsilon).fit(table)``, then ``sample(rows)`` as a tuple of
    records (a hashable output)."""

    name: str
    epsilon: float
    rows: int = 50

    def __call__(self, data: Any, rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
        import pandas as pd
        from snsynth import Synthesizer

        seed = int(rng.integers(0, 2**31 - 1))
        random.seed(seed)
        np.random.seed(seed)  # noqa: NPY002 -- the synthesizers draw from the global state
        df = pd.DataFrame(list(data), columns=list(COLUMNS))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth = Synthesizer.create(self.name, epsilon=self.epsilon, verbose=False)
            synth.fit(df, preprocessor_eps=0.0, categorical_columns=list(COLUMNS))
            out = synth.sample(self.rows)
        return tuple(tuple(int(v) for v in row) for row in out[list(COLUMNS)].to_numpy())


@dataclass(frozen=True)
class RowCount:
    """score = number of synthetic rows equal to ``row``."""

    row: tuple[int, ...]

    def __call__(self, output: Any) -> float:
        return float(sum(tuple(r) == self.row for r in output))

    def __str__(self) -> str:
        return f"rows equal to {self.row}"


@dataclass(frozen=True)
class ColumnCount:
    """score = number of synthetic rows whose column ``index`` equals ``value``."""

    index: int
    value: int

    def __call__(self, output: Any) -> float:
        return float(sum(r[self.index] == self.value for r in output))

    def __str__(self) -> str:
        return f"rows with {COLUMNS[self.index]} = {self.value}"


_CATEGORIES = Cause(
    module="snsynth.transform.label", snippet="self.labels[val] = self.category",
    explanation="the categorical columns' categories are read from the private data without "
                "noise (LabelTransformer._fit, inferred by TableTransformer.create) and only "
                "those categories are synthesized: the value 1 of column a occurs in the "
                "synthetic table only when the record (1, 1, 1) is in the data",
    reference="Stadler, Oprisanu, Troncoso, USENIX Security 2022 (domain leak of synthetic "
              "data); no smartnoise-sdk issue found",
    known=False)


def entries() -> list[ZooEntry]:
    """smartnoise-synth entries (MWEM only: see the module docstring for MST and AIM)."""
    base = ((0, 0, 0),) * 8 + ((1, 1, 1),)
    target = (1, 1, 0)
    same = Pair("8 x (0,0,0) + (1,1,1) + one record: (0,0,0) vs (1,1,0)",
                base + ((0, 0, 0),), base + (target,), "replace_one")
    zeros = ((0, 0, 0),) * 9
    new = Pair("9 x (0,0,0) + one record: (0,0,0) vs (1,1,1) (a new category)",
               zeros + ((0, 0, 0),), zeros + ((1, 1, 1),), "replace_one")
    return [
        ZooEntry("smartnoise-synth/MWEM-categories", LIB, Synth("mwem", 1.0), 1.0, 0.0,
                 (new,), "MWEMSynthesizer(epsilon=1).fit(categorical_columns=...), 3 "
                 "categorical columns, 50 synthetic rows",
                 scores=(ColumnCount(0, 1), RowCount((1, 1, 1))), trials_scale=0.1,
                 adjacency="unstated", randomness="library", cause=_CATEGORIES),
        ZooEntry("smartnoise-synth/MWEM", LIB, Synth("mwem", 1.0), 1.0, 0.0, (same,),
                 "MWEMSynthesizer(epsilon=1), same categories on both sides, 50 synthetic "
                 "rows", scores=(RowCount(target), ColumnCount(2, 0)), trials_scale=0.1,
                 adjacency="unstated", randomness="library"),
    ]
