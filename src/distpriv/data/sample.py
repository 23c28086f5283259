"""A bounded, seeded, stratified random subsample of a table, drawn inside its engine.

For each group g (P: the protected predicate holds, Q: the rest) with N_g
complete rows the result holds s_g = min(size, N_g) of them, a simple random
sample without replacement. How: every row gets a pseudo-random key u ∈ [0, 1)
(:func:`_with_key`; independent across rows, a function of the seed and the
row's position), the engine returns the rows of group g with u < q_g, where
q_g ≈ (s_g + 5√s_g + 10) / N_g, and the s_g smallest keys are kept. The rows
with the s_g smallest of N_g i.i.d. uniform keys are a uniform s_g-subset, and
all of them pass the filter, so the result is exactly that subset; when fewer
than s_g rows pass (probability below 1e-6) q_g is doubled and the filter
rerun. Only about s_g + 5√s_g rows per group leave the engine.

Keys per engine: numpy ``default_rng(seed)`` for in-memory frames; DuckDB
``hash(row_number() OVER () XOR hash(seed))`` (file order is kept; for Parquet
files the row number is read from the scan's ``file_row_number`` instead of a
window, same values); Polars
``hash(seed)`` of the row index; Dask ``default_rng([seed, partition])`` per
partition; Spark ``rand(seed)``. The same seed on the same data in the same
order (and partitioning, for Dask/Spark) gives the same subsample; different
engines give different (equally distributed) subsamples of the same sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from .._validation import check_choice, check_int
from ..errors import EngineError, InvalidParameterError, InvalidTypeError
from ..moments import GroupMoments
from ..queries import Predicate, Query, as_predicate, as_query
from .aggregate import (
    MISSING_POLICIES,
    OK,
    ContributionFrame,
    G,
    TableSummary,
    contribution_frame,
    missing_counts,
)
from .expressions import check_names, used_columns
from .sources import Table, _format, engine_errors, open_table, quote_ident

if TYPE_CHECKING:
    import pandas as pd

#: Name of the random key column added inside the engine.
KEY = "__dp_u"
_INDEX = "__dp_i"
_TWO53 = 9007199254740992.0


class _Rows:
    """The sampled rows of the used columns: the engine's result and the picked row positions; the pandas
    frame is built on first use (and kept)."""

    def __init__(self, result: nw.DataFrame[Any] | nw.LazyFrame[Any], index: NDArray[np.intp]) -> None:
        self.result = result
        self.index = index
        self.frame: pd.DataFrame | None = None

    def to_pandas(self) -> pd.DataFrame:
        if self.frame is None:
            res = self.result.collect() if isinstance(self.result, nw.LazyFrame) else self.result
            picked = res[self.index.tolist()] if self.index.size else res.head(0)
            self.frame = picked.to_pandas().reset_index(drop=True)
        return self.frame


@dataclass(frozen=True)
class Subsample:
    """Rows sampled per group: their used columns, contributions and group.

    Attributes
    ----------
    frame:
        pandas DataFrame of the used columns of the sampled rows (P rows first, then Q), built on first access.
    matrix:
        (s_P + s_Q, m) per-record contributions v(r) of the query, same row order.
    protected:
        (s_P + s_Q,) True for rows of P.
    population_counts:
        (N_P, N_Q): complete rows of each group in the table.
    query, predicate, seed:
        What was sampled and with which seed.
    """

    rows: _Rows
    matrix: NDArray[np.float64]
    protected: NDArray[np.bool_]
    population_counts: NDArray[np.int64]
    query: Query
    predicate: Predicate
    seed: int

    @property
    def frame(self) -> pd.DataFrame:
        """The used columns of the sampled rows as a pandas DataFrame (imports pandas on first use)."""
        return self.rows.to_pandas()

    @property
    def sizes(self) -> tuple[int, int]:
        """(s_P, s_Q)."""
        p = int(self.protected.sum())
        return p, int(self.protected.size - p)

    def moments(self) -> GroupMoments:
        """Per-group aggregates of the subsample itself."""
        return GroupMoments.from_rows(self.matrix, self.protected, self.query, self.predicate)


def _dask_key(pdf: pd.DataFrame, seed: int, partition_info: dict[str, Any] | None = None) -> pd.DataFrame:
    number = 0 if partition_info is None else int(partition_info["number"])
    return pdf.assign(**{KEY: np.random.default_rng([seed, number]).random(len(pdf))})


def _with_key(table: Table, seed: int, columns: Sequence[str] | None = None) -> nw.LazyFrame[Any]:
    """The table (its ``columns`` for in-memory frames) with a uniform [0, 1) key column :data:`KEY`
    computed by its engine (module docstring)."""
    native = table.native
    with engine_errors(table.what, table.backend):
        if table.eager:
            df = nw.from_native(native, eager_only=True)
            if columns is not None:
                df = df.select(*columns)  # do not copy unused columns of an in-memory frame
            keys = np.random.default_rng(seed).random(len(df))
            return df.with_columns(nw.new_series(KEY, keys, nw.Float64, backend=df.implementation)).lazy()
        if table.backend == "duckdb":
            # DuckDB's 64-bit integer mixer (murmurhash64) of (row number XOR a hash of the seed); the
            # two-argument hash(a, b) only XORs the hashes and is not uniform enough for this
            # (tests/data/test_data_sample.py::test_inclusion_is_uniform).
            scan = _parquet_rows(table, columns)
            if scan is not None:
                rel, row = scan
            else:
                rel, row = native, "row_number() OVER ()"
            mixed = f"hash(xor(({row})::UBIGINT, hash({seed}::UBIGINT)))"
            rel = rel.project(f'*, ({mixed} >> 11)::DOUBLE / {_TWO53} AS "{KEY}"')
            return nw.from_native(rel)
        if table.backend == "polars-lazy":
            import polars as pl

            lf = native.with_row_index(_INDEX).with_columns(
                ((pl.col(_INDEX).hash(seed) // 2048).cast(pl.Float64) / _TWO53).alias(KEY)
            ).drop(_INDEX)
            return nw.from_native(lf)
        if table.backend == "dask":
            meta = native._meta.assign(**{KEY: np.zeros(0, dtype=float)})
            return _from_native_quiet(native.map_partitions(_dask_key, seed, meta=meta))
        if table.backend == "pyspark":
            from pyspark.sql import functions as F  # noqa: N812

            return nw.from_native(native.withColumn(KEY, F.rand(seed)))
    raise InvalidTypeError(f"{table.what}: sampling is not supported for backend {table.backend!r}")


def _parquet_rows(table: Table, columns: Sequence[str] | None) -> tuple[Any, str] | None:
    """For Parquet files: a scan of ``columns`` with the row number (1-based, in file order over the files)
    read from the scan's ``file_row_number`` and ``file_index`` plus per-file offsets from the footers,
    instead of the ``row_number() OVER ()`` window (the whole sampling pass over a 40M-row file: 0.54–0.60 s
    against 0.85–0.91 s with the window, idle machine). Same numbers, hence the same keys and the same
    subsample. ``None`` (use the window) for CSV, frames, or when a column of either name exists (any case)."""
    if not table.files or table.connection is None or columns is None:
        return None
    if any(_format(p, table.what) != "parquet" for p in table.files):
        return None
    # DuckDB matches names case-insensitively: a user column `File_Index` would hide the virtual column (the
    # offsets would be NULL, every key equal) and `FILE_ROW_NUMBER` would clash with the option
    if any(str(c).lower() in ("file_row_number", "file_index") for cols in table.file_columns for c in cols):
        return None
    con = table.connection
    files = [str(p) for p in table.files]
    many = len(files) > 1
    rel = con.read_parquet(files if many else files[0], union_by_name=many, file_row_number=True)
    cols = ", ".join(quote_ident(c) for c in columns)
    if not many:
        return rel.project(f"{cols}, file_row_number"), "file_row_number + 1"
    sizes = con.execute("SELECT file_name, num_rows FROM parquet_file_metadata($files)", {"files": files}).fetchall()
    by_name = dict(sizes)
    if any(f not in by_name for f in files):  # names reported differently: keep the window
        return None
    offsets = np.concatenate([[0], np.cumsum([int(by_name[f]) for f in files])[:-1]])
    listed = ", ".join(str(int(o)) for o in offsets)
    row = f"file_row_number + 1 + ([{listed}]::UBIGINT[])[file_index::BIGINT + 1]"
    return rel.project(f"{cols}, file_row_number, file_index"), row


def _from_native_quiet(native: Any) -> nw.LazyFrame[Any]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return nw.from_native(native)


def _threshold(target: int, total: int) -> float:
    if target >= total:
        return 1.0
    return min(1.0, (target + 5.0 * math.sqrt(target) + 10.0) / total)


def stratified_sample(
    data: Any,
    query: Query | Sequence[str],
    protect: Predicate | str,
    size: int,
    *,
    seed: int = 0,
    missing: str = "error",
    summary: TableSummary | None = None,
    **open_options: Any,
) -> Subsample:
    """min(``size``, N_g) rows of each group, uniformly at random without replacement (module docstring).

    Parameters
    ----------
    data:
        A :class:`Table` or anything :func:`open_table` accepts.
    query, protect:
        The statistics (whose contributions are returned) and the protected predicate.
    size:
        Rows per group (at most).
    seed:
        Non-negative integer seed of the row keys.
    missing:
        ``"error"`` or ``"drop"``, as in :func:`distpriv.data.summarize`.
    summary:
        A summary of the same table, query and predicate: its group counts are reused (no counting pass).
    """
    count = check_int(size, "size", minimum=1)
    s = check_int(seed, "seed", minimum=0)
    if s >= 2**63:
        raise InvalidParameterError(f"must be < 2**63 (engines take 64-bit signed seeds), got {s}", argument="seed")
    policy = check_choice(missing, "missing", MISSING_POLICIES)
    table = open_table(data, **open_options)
    check_names([KEY, _INDEX], table)
    q = as_query(query)
    pred = as_predicate(protect)
    prep: ContributionFrame = contribution_frame(table, q, pred, frame=_with_key(table, s, used_columns(q, pred)), keep=[KEY])
    if summary is not None:
        if not isinstance(summary, TableSummary):
            raise InvalidTypeError(f"summary: expected a TableSummary, got {type(summary).__name__}")
        if summary.query != q or summary.moments.predicate != pred:
            raise InvalidParameterError("summary: was computed for a different query or protected predicate")
        counts = summary.moments.counts.copy()
    else:
        counts = missing_counts(prep, policy)
    targets = np.minimum(count, counts)
    q_g = [_threshold(int(targets[g]), int(counts[g])) for g in range(2)]
    keep = [*prep.used, *prep.contributions, G, KEY]
    numeric = [*prep.contributions, G, KEY]
    while True:
        cond = nw.col(OK) & (nw.col(KEY) < nw.when(nw.col(G)).then(nw.lit(q_g[0])).otherwise(nw.lit(q_g[1])))
        with engine_errors(table.what, table.backend):
            lazy = prep.frame.filter(cond).select(*keep)
            got: nw.DataFrame[Any] | nw.LazyFrame[Any]
            cols: dict[str, Any]
            if table.backend == "duckdb":
                # DuckDB's own numpy fetch of the numeric columns: no pyarrow (~0.3 s to import, issue 26); the
                # rows' frame re-runs the same query on demand (Subsample.frame; insertion order is preserved)
                got = lazy
                cols = {c: np.asarray(v) for c, v in nw.to_native(lazy.select(*numeric)).fetchnumpy().items()}
            else:
                eager = lazy.collect()
                got = eager
                # plain Python values of the few thousand rows: converting columns to numpy through pyarrow would
                # import pandas (~0.3 s), which only the rows' frame needs (built on demand, Subsample.frame)
                cols = eager.select(*numeric).to_dict(as_series=False)
        flags = np.asarray(cols[G], dtype=bool)
        short = False
        for g, mask in enumerate((flags, ~flags)):
            have = int(mask.sum())
            if have < targets[g]:
                if q_g[g] >= 1.0:
                    raise EngineError(
                        f"{table.what}: the table changed while sampling ({have} rows of group {g}, "
                        f"{int(counts[g])} counted)"
                    )
                q_g[g] = min(1.0, 2.0 * q_g[g])
                short = True
        if not short:
            break
    keys = np.asarray(cols[KEY], dtype=float)
    picked = []
    for g, mask in enumerate((flags, ~flags)):
        at = np.flatnonzero(mask)
        picked.append(at[np.argsort(keys[at], kind="stable")[: int(targets[g])]])
    index = np.concatenate(picked)
    matrix = np.column_stack([np.asarray(cols[c], dtype=float) for c in prep.contributions])[index]
    matrix = matrix.reshape(index.size, q.dim)
    rows = _Rows(got.select(*prep.used), index)
    return Subsample(rows, matrix, flags[index], counts.astype(np.int64), q, pred, s)
