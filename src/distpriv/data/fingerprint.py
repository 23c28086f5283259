"""Keyed 64-bit fingerprints of rows, computed by the engine, to detect rows shared between releases.

Scheme :data:`FINGERPRINT_SCHEME` (the same for every input type, so a release
from a CSV file and a later one from a pandas frame of the same rows agree):

1. The row's cells, columns sorted by name, each as text: numbers (and
   booleans, as 1/0) through float64 and C's ``%.17g`` (round-trip exact: 40 and
   40.0 agree, −0.0 is 0), integers beyond 2⁵³ by their exact decimal digits; NaN and null are "missing"; text as is; other types
   (dates, ...) as DuckDB's text cast.
2. Each cell is written ``len:text`` (UTF-8 byte length) or ``-`` when missing,
   and the cells are concatenated, which makes the encoding injective.
3. fingerprint = the lower 64 bits of MD5(hex(key) ‖ 0x1F ‖ encoding), i.e.
   bytes 8..15 of the digest read little-endian (DuckDB ``md5_number_lower``).

DuckDB evaluates this SQL for files, DuckDB relations and in-memory frames
(which DuckDB scans in place); for Dask and Spark each partition is handed to
DuckDB on the workers (``map_partitions`` / ``mapInArrow``), so only 8 bytes per
row reach the driver. The result is a sorted ``uint64`` array (a multiset:
duplicate rows keep their multiplicity).

Collision odds: a secret key makes the fingerprints unpredictable without it,
and MD5 truncated to 64 bits behaves as a random function for non-adversarial
inputs, so two tables of a and b rows with no row in common show a spurious
shared fingerprint with probability at most a·b / 2⁶⁴ — 5.4e-8 for a = b = 10⁶,
5.4e-4 for a = b = 10⁸. (MD5's known weakness is crafted collisions, which
would need the key; a false "overlap" only makes the ledger more cautious.)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import EngineError, InvalidParameterError, InvalidTypeError
from .sources import Table, engine_errors, open_table, quote_ident

__all__ = ["FINGERPRINT_SCHEME", "canonical_sql", "new_fingerprint_key", "row_fingerprints"]

#: Identifier of the fingerprint scheme (stored next to fingerprints so that schemes never mix).
FINGERPRINT_SCHEME = "distpriv-row-md5-64/v1"

_NUMERIC = ("FLOAT", "DOUBLE", "REAL")
_VIEW = "__dp_fingerprint_rows"


def new_fingerprint_key() -> bytes:
    """32 bytes from the operating system's entropy, for :func:`row_fingerprints`."""
    return os.urandom(32)


def _check_key(key: Any) -> str:
    if not isinstance(key, (bytes, bytearray)):
        raise InvalidTypeError(f"key: expected bytes (e.g. new_fingerprint_key()), got {type(key).__name__}")
    if len(key) < 16:
        raise InvalidParameterError(f"key: needs at least 16 bytes, got {len(key)}")
    return bytes(key).hex()


_INTEGERS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
             "UBIGINT", "UHUGEINT")


def _text(name: str, dtype: str) -> str:
    """SQL text of one cell (NULL when missing); equal to C's %.17g for every number.

    Integral values below 10¹⁵ in magnitude print as plain integers, which is what %.17g prints for
    them, through a cheap integer cast; everything else goes through printf.
    """
    col = quote_ident(name)
    base = dtype.upper()
    if base in _INTEGERS:
        # beyond 2^53 an integer is not exact as float64: its decimal digits, so distinct ids stay distinct
        return (f"CASE WHEN abs({col}) < 1000000000000000 THEN CAST({col} AS VARCHAR) "
                f"WHEN abs({col}) < 9007199254740992 THEN printf('%.17g', CAST({col} AS DOUBLE)) "
                f"ELSE CAST({col} AS VARCHAR) END")
    if base in _NUMERIC or base.startswith("DECIMAL"):
        x = f"(CAST({col} AS DOUBLE) + 0.0)"  # + 0.0 turns -0.0 into 0.0
        return (f"CASE WHEN isnan({x}) THEN NULL "
                f"WHEN {x} = trunc({x}) AND abs({x}) < 1e15 THEN CAST(CAST({x} AS BIGINT) AS VARCHAR) "
                f"ELSE printf('%.17g', {x}) END")
    if base == "BOOLEAN":
        return f"CASE WHEN {col} THEN '1' WHEN NOT {col} THEN '0' END"
    if base == "VARCHAR":
        return col
    return f"CAST({col} AS VARCHAR)"


def canonical_sql(columns: Sequence[str], types: Sequence[Any], source: str) -> str:
    """DuckDB query computing the fingerprint (column ``fp``, UBIGINT) of every row of ``source``.

    The key is the query's single ``?`` parameter (its hex string), never part of the SQL text. Cell
    texts are computed once in an inner projection, then length-prefixed and concatenated.
    """
    cells = sorted(zip(map(str, columns), map(str, types), strict=True))
    if not cells:
        raise InvalidParameterError("columns: need at least one column")
    texts = ", ".join(f"{_text(c, t)} AS t{i}" for i, (c, t) in enumerate(cells))
    body = " || ".join(
        f"(CASE WHEN t{i} IS NULL THEN '-' ELSE CAST(strlen(t{i}) AS VARCHAR) || ':' || t{i} END)"
        for i in range(len(cells))
    )
    return f"SELECT md5_number_lower(? || chr(31) || {body}) AS fp FROM (SELECT {texts} FROM {source})"


def _fingerprint_relation(con: Any, rel: Any, key_hex: str, *, count_first: bool) -> NDArray[np.uint64]:
    """Sorted fingerprints of a relation of ``con``.

    With ``count_first`` (files: a Parquet count is read from metadata) the rows are counted first and the
    fingerprints streamed into one preallocated array, so the peak memory is 8 bytes per row plus a batch.
    """
    rel.create_view(_VIEW, replace=True)
    try:
        total = int(con.sql(f"SELECT count(*) FROM {_VIEW}").fetchall()[0][0]) if count_first else None
        sql = canonical_sql(rel.columns, rel.types, _VIEW)
        reader = _relation_reader(con.sql(sql, params=[key_hex]))
        if total is None:
            parts = [np.asarray(b.column(0).to_numpy(zero_copy_only=False), dtype=np.uint64) for b in reader]
            out = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        else:
            out = np.empty(total, dtype=np.uint64)
            filled = 0
            for batch in reader:
                values = np.asarray(batch.column(0).to_numpy(zero_copy_only=False), dtype=np.uint64)
                if filled + values.size > total:
                    raise EngineError("data: the table changed while computing fingerprints")
                out[filled : filled + values.size] = values
                filled += values.size
            if filled != total:
                raise EngineError("data: the table changed while computing fingerprints")
    finally:
        con.execute(f"DROP VIEW IF EXISTS {_VIEW}")
    out.sort()
    return out


def _relation_reader(rel: Any) -> Any:
    """Arrow record-batch reader over a DuckDB relation (the method name differs across DuckDB versions)."""
    method = getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader
    return method(1_000_000)


def _fingerprint_arrow(data: Any, key_hex: str) -> NDArray[np.uint64]:
    """Fingerprints of an in-memory pandas DataFrame / pyarrow Table / RecordBatch (unsorted)."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        rel = con.from_df(data) if hasattr(data, "iloc") else con.from_arrow(data)
        sql = canonical_sql(rel.columns, rel.types, _VIEW)
        rel.create_view(_VIEW)
        return np.asarray(con.sql(sql, params=[key_hex]).fetchnumpy()["fp"], dtype=np.uint64)
    finally:
        con.close()


def _dask_partition(pdf: Any, key_hex: str) -> Any:
    import pandas as pd

    return pd.Series(_fingerprint_arrow(pdf, key_hex), dtype="uint64", name="fp")


def _spark_batches(batches: Any, key_hex: str) -> Any:
    import pyarrow as pa

    for batch in batches:
        fp = _fingerprint_arrow(pa.Table.from_batches([batch]), key_hex).view(np.int64)
        yield pa.RecordBatch.from_arrays([pa.array(fp, type=pa.int64())], names=["fp"])


def row_fingerprints(
    data: Any, *, key: bytes, columns: Sequence[str] | None = None, **open_options: Any
) -> NDArray[np.uint64]:
    """Sorted keyed 64-bit fingerprints of every row (module docstring: scheme and collision odds).

    Parameters
    ----------
    data:
        A :class:`Table` or anything :func:`open_table` accepts.
    key:
        Secret of at least 16 bytes (:func:`new_fingerprint_key`); the same key must be used for
        fingerprints that are compared.
    columns:
        Columns defining a row (default: all columns); their order does not matter.
    """
    key_hex = _check_key(key)
    table: Table = open_table(data, **open_options)
    cols = table.columns if columns is None else list(dict.fromkeys(columns))
    if not cols:
        raise InvalidParameterError("columns: need at least one column")
    table.check_columns(cols, "columns")
    backend = table.backend
    with engine_errors(table.what, backend):
        if backend == "duckdb":
            rel = table.native.select(*[quote_ident(c) for c in cols])
            if table.connection is not None:  # files: our own connection
                return _fingerprint_relation(table.connection, rel, key_hex, count_first=True)
            # A user's relation: stream it as Arrow batches into a private connection (its own
            # connection is not reachable from the relation object).
            import duckdb

            con = duckdb.connect(":memory:")
            try:
                return _fingerprint_relation(con, con.from_arrow(_relation_reader(rel)), key_hex, count_first=False)
            finally:
                con.close()
        if backend == "pandas":
            out = _fingerprint_arrow(table.native[cols], key_hex)  # DuckDB scans pandas in place, index ignored
        elif backend == "polars":
            out = _fingerprint_arrow(table.native.select(cols).to_arrow(), key_hex)
        elif backend == "pyarrow":
            out = _fingerprint_arrow(table.native.select(cols), key_hex)
        elif backend == "polars-lazy":
            lazy = table.native.select(cols)
            # streamed in batches where Polars can (collect_batches, Polars >= 1.31)
            batches = lazy.collect_batches() if hasattr(lazy, "collect_batches") else [lazy.collect()]
            parts = [_fingerprint_arrow(b.to_arrow(), key_hex) for b in batches]
            out = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        elif backend == "dask":
            import pandas as pd

            series = table.native[cols].map_partitions(
                _dask_partition, key_hex, meta=pd.Series(dtype="uint64", name="fp")
            )
            out = np.array(series.compute(), dtype=np.uint64)
        elif backend == "pyspark":
            sdf = table.native.select(*cols).mapInArrow(lambda it: _spark_batches(it, key_hex), "fp long")
            out = np.array(sdf.toArrow().column("fp").to_numpy(), dtype=np.int64).view(np.uint64)
        else:  # pragma: no cover - open_table admits no other backend
            raise InvalidTypeError(f"{table.what}: fingerprints are not supported for backend {backend!r}")
    out.sort()
    return out
