"""SmartNoise SQL: ``snsql.from_df(...).execute(query)`` on a pandas table, audited black-box.

Noise comes from OpenDP's compiled measurements (``randomness="library"``).  One query costs
about 0.3-0.5 s here (SmartNoise searches the noise scale with OpenDP on every query), so the
entries run a small share of the zoo's trial budget.  Claims: the query's total cost as
SmartNoise states it, ``reader.get_privacy_cost(query)`` (``Privacy(epsilon)`` is spent by each
noisy aggregate, so AVG = SUM / COUNT costs 2 epsilon and VAR 3 epsilon, as documented), one
row per individual (row_privacy, add/remove), censor_dims off (no thresholding).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.zoo.entry import Pair, ZooEntry

__all__ = ["entries"]

LIB = "smartnoise-sql"
A = "add_remove"


@dataclass(frozen=True)
class Query:
    """``SELECT <aggregate>(x) FROM t`` with metadata bounds [lower, upper]."""

    aggregate: str
    epsilon: float
    bounds: tuple[float, float] = (0.0, 10.0)

    @property
    def sql(self) -> str:
        return f"SELECT {self.aggregate}(x) FROM t"

    def reader(self, data: Any) -> Any:
        import pandas as pd
        import snsql

        meta = {"": {"": {"t": {"row_privacy": True, "censor_dims": False,
                                "x": {"type": "float", "lower": self.bounds[0],
                                      "upper": self.bounds[1]}}}}}
        df = pd.DataFrame({"x": [float(v) for v in data]}, dtype=float)
        return snsql.from_df(df, privacy=snsql.Privacy(epsilon=self.epsilon, delta=0.0),
                             metadata=meta)

    def cost(self) -> tuple[float, float]:
        """SmartNoise's own statement of the query's (epsilon, delta)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eps, delta = self.reader((1.0,)).get_privacy_cost(self.sql)
        return float(eps), float(delta)

    def __call__(self, data: Any, rng: np.random.Generator) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = self.reader(data).execute(self.sql)
        v = rows[1][0] if len(rows) > 1 else None
        return float("nan") if v is None else float(v)


def entries() -> list[ZooEntry]:
    pairs = (Pair("[0] vs [0, 10]", (0.0,), (0.0, 10.0), A),
             Pair("[5] vs [5, 1e9] (beyond the bound)", (5.0,), (5.0, 1e9), A))
    kw: dict[str, Any] = {"randomness": "library", "adjacency": A, "trials_scale": 0.03}
    out = []
    for agg in ("COUNT", "SUM", "AVG"):
        q = Query(agg, 1.0)
        eps, delta = q.cost()
        out.append(ZooEntry(f"smartnoise-sql/{agg}", LIB, q, eps, delta, pairs,
                            f"{q.sql}, bounds [0, 10], Privacy(epsilon=1)", **kw))
    return out
