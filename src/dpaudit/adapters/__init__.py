"""Input adapters: the outputs practitioners already have -> dpaudit observations.

* :mod:`dpaudit.adapters.in_out` -- in/out score arrays (:func:`from_in_out`) and the
  shadow-model layout (:class:`ShadowLayout`: runs x examples membership and score matrices,
  per-run, per-example and pooled audits);
* :mod:`dpaudit.adapters.tables` -- pandas DataFrames, Parquet (the ``parquet`` extra) and CSV
  with named columns;
* :mod:`dpaudit.adapters.groups` -- per-user aggregation (max, mean, sum) for user-level DP;
* :mod:`dpaudit.adapters.tools` -- privacy_meter and TensorFlow Privacy MIA results.

``from_in_out`` is also importable as ``dpaudit.io.from_in_out`` (DESIGN.md contract).
"""

from dpaudit.adapters.groups import AGGREGATIONS, GroupedObservations, aggregate_by_group
from dpaudit.adapters.in_out import (
    PerExampleAudit,
    PerExampleBounds,
    ShadowLayout,
    from_in_out,
    per_example_audit,
)
from dpaudit.adapters.tables import from_columns, from_dataframe, read_parquet, read_table
from dpaudit.adapters.tools import from_privacy_meter, from_tf_privacy

__all__ = ["AGGREGATIONS", "GroupedObservations", "aggregate_by_group", "PerExampleAudit",
           "PerExampleBounds", "ShadowLayout", "from_in_out", "per_example_audit",
           "from_columns",
           "from_dataframe", "read_parquet", "read_table", "from_privacy_meter",
           "from_tf_privacy"]
