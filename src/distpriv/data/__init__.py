"""Engine-agnostic table access: files scanned lazily, frames used where they live, aggregates pushed down.

A table is opened once (:func:`open_table`: a CSV/Parquet path or glob through
an embedded DuckDB, or a pandas, Polars, pyarrow, DuckDB, Dask or PySpark
frame through narwhals) and every computation runs inside its engine:

* :func:`summarize` — one aggregate pass: per-group counts, sums and
  cross-products of the statistics' per-record contributions
  (→ :class:`distpriv.moments.GroupMoments`, the closed-form f_θ moments), column
  ranges, missing values, the true statistics;
* :func:`stratified_sample` — a bounded, seeded random subsample per group for
  the parts that need records (Wasserstein W∞, assumption tests);
* :func:`row_fingerprints` — keyed 64-bit fingerprints of rows, to detect rows
  shared between releases.

Only aggregates and bounded samples reach Python, so memory does not grow with
the table (``benchmarks/bench_scale.py``; ``tests/data/test_data_memory.py``).
"""

from __future__ import annotations

from .aggregate import KAPPA_MAX, MISSING_POLICIES, TableSummary, count_rows, summarize
from .fingerprint import FINGERPRINT_SCHEME, new_fingerprint_key, row_fingerprints
from .sample import Subsample, stratified_sample
from .sources import BACKENDS, SUPPORTED_INPUTS, Table, open_table

__all__ = [
    "BACKENDS",
    "FINGERPRINT_SCHEME",
    "KAPPA_MAX",
    "MISSING_POLICIES",
    "SUPPORTED_INPUTS",
    "Subsample",
    "Table",
    "TableSummary",
    "count_rows",
    "new_fingerprint_key",
    "open_table",
    "row_fingerprints",
    "stratified_sample",
    "summarize",
]
