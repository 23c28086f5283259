"""Keyed 64-bit fingerprints of rows and cells, computed by the engine, to detect rows shared between releases.

Two schemes: whole rows as stored (:func:`row_fingerprints`, below), and one hash per *normalised* cell
(:func:`cell_fingerprints`, :data:`CELL_SCHEME`: numbers by value, text trimmed and case-folded), which the
release ledger keeps so that re-exported copies match on the columns they share (issue 27). The cell scheme
is v3 (:mod:`distpriv.data.cell_hash`: typed 64-bit codes from the engine, keyed SipHash-2-4 in numpy);
v2 (keyed MD5 of each normalised text, in the engine) is still computed on request (:data:`CELL_SCHEME_V2`).

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



def _table_columns(data: Any, columns: Sequence[str] | None, open_options: dict[str, Any]) -> tuple[Table, list[str]]:
    """The opened table and the columns that define a row (default: all), checked to exist."""
    table: Table = open_table(data, **open_options)
    cols = table.columns if columns is None else list(dict.fromkeys(columns))
    if not cols:
        raise InvalidParameterError("columns: need at least one column")
    table.check_columns(cols, "columns")
    return table, cols

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
                    raise EngineError("the table changed while computing fingerprints", argument="data")
                out[filled : filled + values.size] = values
                filled += values.size
            if filled != total:
                raise EngineError("the table changed while computing fingerprints", argument="data")
    finally:
        con.execute(f"DROP VIEW IF EXISTS {_VIEW}")
    out.sort()
    return out


def _relation_reader(rel: Any, batch: int = 1_000_000) -> Any:
    """Arrow record-batch reader over a DuckDB relation (the method name differs across DuckDB versions)."""
    method = getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader
    return method(batch)


#: Rows per batch of the cell-hash query (its canonical parts are up to three columns per table column).
_CELL_BATCH = 1 << 17


def _fingerprint_arrow(data: Any, key_hex: str) -> NDArray[np.uint64]:
    """Fingerprints of an in-memory pandas DataFrame / pyarrow Table / RecordBatch (unsorted)."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        con.execute("SET enable_progress_bar = false")
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
    table, cols = _table_columns(data, columns, open_options)
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
                con.execute("SET enable_progress_bar = false")
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



# --------------------------------------------------------------------------- normalised cells (issue 27)
#: Identifier of the per-cell scheme of :func:`cell_fingerprints` (stored in the release ledger): scheme v3,
#: typed 64-bit codes hashed with SipHash-2-4 by numpy (:mod:`distpriv.data.cell_hash`).
CELL_SCHEME = "distpriv-cell-sip64/v3"
#: The earlier scheme (keyed MD5 of each cell's normalised text, computed by DuckDB, about ten times slower):
#: still computed on request, to compare a table with a ledger entry written before v3.
CELL_SCHEME_V2 = "distpriv-cell-md5-64/v2"
#: Every scheme :func:`cell_fingerprints` computes.
CELL_SCHEMES = (CELL_SCHEME, CELL_SCHEME_V2)

_WS = "' ' || chr(9) || chr(10) || chr(13) || chr(11) || chr(12)"
_INT_RE = r"[+-]?[0-9]+"
_DEC_RE = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"


def normalise_name(name: Any) -> str:
    """A column name as compared across tables: trimmed and case-folded (``' Race'`` and ``'RACE'`` agree)."""
    return str(name).strip().casefold()


def _double_text(x: str) -> str:
    """Canonical text of a DOUBLE expression: NULL for NaN, integral values below 1e15 as integers, else %.17g."""
    return (f"CASE WHEN isnan({x}) THEN NULL "
            f"WHEN {x} = trunc({x}) AND abs({x}) < 1e15 THEN CAST(CAST({x} AS BIGINT) AS VARCHAR) "
            f"ELSE printf('%.17g', {x}) END")


def _is_text(dtype: str) -> bool:
    base = dtype.upper()
    return not (base in _INTEGERS or base in _NUMERIC or base.startswith("DECIMAL") or base == "BOOLEAN")


def _prepared(name: str, dtype: str) -> str:
    """First stage: text cells trimmed of ASCII whitespace (computed once per cell), other cells as they are."""
    col = quote_ident(name)
    return f"trim(CAST({col} AS VARCHAR), {_WS})" if _is_text(dtype) else col


def _normalised_text(name: str, dtype: str) -> str:
    """SQL text of one cell normalised for comparison across exports (NULL when missing); ``name`` is the column
    of :func:`_prepared`.

    Numbers by value (integers as their exact decimal digits, other numbers as :func:`_double_text`); text
    trimmed of ASCII whitespace, empty text missing, text that is a plain decimal number read as that number,
    ``true``/``false`` as 1/0 like booleans, any other text lower-cased; other types through their text cast.
    """
    col = quote_ident(name)
    base = dtype.upper()
    if base in _INTEGERS:
        return f"CAST({col} AS VARCHAR)"
    if base in _NUMERIC or base.startswith("DECIMAL"):
        return _double_text(f"(CAST({col} AS DOUBLE) + 0.0)")
    if base == "BOOLEAN":
        return f"CASE WHEN {col} THEN '1' WHEN NOT {col} THEN '0' END"
    t = col
    dbl = f"(CAST({t} AS DOUBLE) + 0.0)"
    # only text starting with a digit, a sign or a point can be a number: the regular expressions run on those
    return (f"CASE WHEN {t} = '' THEN NULL "
            f"WHEN NOT (ascii({t}) BETWEEN 48 AND 57 OR ascii({t}) IN (43, 45, 46)) THEN "
            f"(CASE WHEN lower({t}) = 'true' THEN '1' WHEN lower({t}) = 'false' THEN '0' ELSE lower({t}) END) "
            f"WHEN regexp_full_match({t}, '{_INT_RE}') AND TRY_CAST({t} AS HUGEINT) IS NOT NULL "
            f"THEN CAST(CAST({t} AS HUGEINT) AS VARCHAR) "
            f"WHEN regexp_full_match({t}, '{_DEC_RE}') THEN {_double_text(dbl)} "
            f"ELSE lower({t}) END")


def _stages(columns: Sequence[str], types: Sequence[Any], source: str) -> str:
    """``SELECT t0, t1, ... FROM (SELECT r0, r1, ... FROM source)``: the normalised texts of every cell."""
    pairs = list(zip(map(str, columns), map(str, types), strict=True))
    first = ", ".join(f"{_prepared(c, t)} AS r{i}" for i, (c, t) in enumerate(pairs))
    second = ", ".join(f"{_normalised_text(f'r{i}', 'VARCHAR' if _is_text(t) else t)} AS t{i}"
                       for i, (_, t) in enumerate(pairs))
    return f"SELECT {second} FROM (SELECT {first} FROM {source})"


def _cell_sql(columns: Sequence[str], types: Sequence[Any], source: str) -> str:
    """One keyed hash per cell: column ``h<i>`` = md5_number_lower(prefix_i ‖ ('=' ‖ text | '-')), where the
    ``i``-th ``?`` parameter is prefix_i = hex(key) ‖ 0x1F ‖ normalised name ‖ 0x1F."""
    outs = ", ".join(f"md5_number_lower(?::VARCHAR || (CASE WHEN t{i} IS NULL THEN '-' ELSE '=' || t{i} END)) AS h{i}"
                     for i in range(len(columns)))
    return f"SELECT {outs} FROM ({_stages(columns, types, source)})"


def _hash_frame(data: Any, build: Any, params: list[str]) -> NDArray[np.uint64]:
    """(rows, m) hashes of an in-memory pandas DataFrame / pyarrow Table / RecordBatch, scanned by DuckDB."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        con.execute("SET enable_progress_bar = false")
        rel = con.from_df(data) if hasattr(data, "iloc") else con.from_arrow(data)
        rel.create_view(_VIEW)
        got = con.sql(build(rel.columns, rel.types, _VIEW), params=params).fetchnumpy()
        return np.column_stack([np.asarray(got[f"h{i}"], dtype=np.uint64) for i in range(len(params))]) \
            if params else np.empty((0, 0), dtype=np.uint64)
    finally:
        con.close()


def _hash_relation(con: Any, rel: Any, build: Any, params: list[str]) -> NDArray[np.uint64]:
    """(rows, m) hashes of a relation of ``con``, streamed in Arrow batches."""
    rel.create_view(_VIEW, replace=True)
    try:
        reader = _relation_reader(con.sql(build(rel.columns, rel.types, _VIEW), params=params))
        parts = [np.column_stack([np.asarray(b.column(i).to_numpy(zero_copy_only=False), dtype=np.uint64)
                                  for i in range(len(params))]) for b in reader]
    finally:
        con.execute(f"DROP VIEW IF EXISTS {_VIEW}")
    return np.concatenate(parts) if parts else np.empty((0, len(params)), dtype=np.uint64)


def _dask_hashes(pdf: Any, build: Any, params: list[str]) -> Any:
    import pandas as pd

    out = _hash_frame(pdf, build, params)
    return pd.DataFrame({f"h{i}": out[:, i] for i in range(len(params))}, dtype="uint64")


def _spark_hashes(batches: Any, build: Any, params: list[str]) -> Any:
    import pyarrow as pa

    for batch in batches:
        out = _hash_frame(pa.Table.from_batches([batch]), build, params).view(np.int64)
        yield pa.RecordBatch.from_arrays([pa.array(out[:, i], type=pa.int64()) for i in range(len(params))],
                                         names=[f"h{i}" for i in range(len(params))])


def _engine_hashes(table: Table, cols: list[str], build: Any, params: list[str]) -> NDArray[np.uint64]:
    """Run ``build``'s SQL over ``cols`` of ``table`` in its own engine; (rows, len(params)) uint64, row order
    of the engine."""
    backend = table.backend
    m = len(params)
    with engine_errors(table.what, backend):
        if backend == "duckdb":
            rel = table.native.select(*[quote_ident(c) for c in cols])
            if table.connection is not None:
                return _hash_relation(table.connection, rel, build, params)
            import duckdb

            con = duckdb.connect(":memory:")
            try:
                con.execute("SET enable_progress_bar = false")
                return _hash_relation(con, con.from_arrow(_relation_reader(rel)), build, params)
            finally:
                con.close()
        if backend == "pandas":
            return _hash_frame(table.native[cols], build, params)
        if backend == "polars":
            return _hash_frame(table.native.select(cols).to_arrow(), build, params)
        if backend == "pyarrow":
            return _hash_frame(table.native.select(cols), build, params)
        if backend == "polars-lazy":
            lazy = table.native.select(cols)
            batches = lazy.collect_batches() if hasattr(lazy, "collect_batches") else [lazy.collect()]
            parts = [_hash_frame(b.to_arrow(), build, params) for b in batches]
            return np.concatenate(parts) if parts else np.empty((0, m), dtype=np.uint64)
        if backend == "dask":
            import pandas as pd

            meta = pd.DataFrame({f"h{i}": pd.Series(dtype="uint64") for i in range(m)})
            frame = table.native[cols].map_partitions(_dask_hashes, build, params, meta=meta).compute()
            return np.asarray(frame.to_numpy(), dtype=np.uint64).reshape(-1, m)
        if backend == "pyspark":
            schema = ", ".join(f"h{i} long" for i in range(m))
            sdf = table.native.select(*cols).mapInArrow(lambda it: _spark_hashes(it, build, params), schema)
            arrow = sdf.toArrow()
            return np.column_stack([np.asarray(arrow.column(f"h{i}").to_numpy(), dtype=np.int64)
                                    for i in range(m)]).view(np.uint64).reshape(-1, m)
    raise InvalidTypeError(f"{table.what}: fingerprints are not supported for backend {backend!r}")  # pragma: no cover


def _unique_names(columns: Sequence[str]) -> list[str]:
    """Normalised names, made unique in column order (a second ``'Age'`` after ``'age'`` is ``'age#2'``)."""
    out: list[str] = []
    for c in columns:
        base = normalise_name(c)
        name, k = base, 1
        while name in out:
            k += 1
            name = f"{base}#{k}"
        out.append(name)
    return out


def _v3_reader_cells(reader: Any, keys: list[NDArray[np.uint64]], total: bool,
                     rows: int | None = None) -> NDArray[np.uint64]:
    """Hash every batch of an Arrow reader of :func:`distpriv.data.cell_hash.typed_cells_sql`; ``total``: one
    row hash per row (Σ over the columns mod 2⁶⁴) instead of a cell per column. With the row count ``rows``
    known (files), the hashes are written into one preallocated array (no second copy at the end)."""
    from .cell_hash import batch_cells

    shape: tuple[int, ...] = (0,) if total else (0, len(keys))
    if rows is not None:  # column-major, so that callers can reorder rows one column at a time, in place
        out = np.empty((rows, *shape[1:]), dtype=np.uint64, order="F")
        filled = 0
        for batch in reader:
            cells = batch_cells(batch, keys)
            if filled + len(cells) > rows:
                raise EngineError("the table changed while computing fingerprints", argument="data")
            out[filled : filled + len(cells)] = cells.sum(axis=1, dtype=np.uint64) if total else cells
            filled += len(cells)
        if filled != rows:
            raise EngineError("the table changed while computing fingerprints", argument="data")
        return out
    parts = []
    for batch in reader:
        cells = batch_cells(batch, keys)
        parts.append(cells.sum(axis=1, dtype=np.uint64) if total else cells)
    if parts:
        return np.concatenate(parts)
    return np.empty(shape, dtype=np.uint64)


def _v3_frame(data: Any, keys: list[NDArray[np.uint64]], total: bool) -> NDArray[np.uint64]:
    """Scheme v3 hashes of an in-memory pandas DataFrame / pyarrow Table / RecordBatch, scanned by DuckDB."""
    import duckdb

    from .cell_hash import typed_cells_sql as v3_sql

    con = duckdb.connect(":memory:")
    try:
        con.execute("SET enable_progress_bar = false")
        rel = con.from_df(data) if hasattr(data, "iloc") else con.from_arrow(data)
        rel.create_view(_VIEW)
        query = con.sql(v3_sql(rel.columns, rel.types, _VIEW))
        return _v3_reader_cells(_relation_reader(query, _CELL_BATCH), keys, total)
    finally:
        con.close()


def _v3_dask(pdf: Any, keys: list[NDArray[np.uint64]], total: bool) -> Any:
    import pandas as pd

    out = _v3_frame(pdf, keys, total).reshape(len(pdf), -1)
    return pd.DataFrame({f"h{i}": out[:, i] for i in range(out.shape[1])}, dtype="uint64")


def _v3_spark(batches: Any, keys: list[NDArray[np.uint64]], total: bool) -> Any:
    import pyarrow as pa

    for batch in batches:
        out = _v3_frame(pa.Table.from_batches([batch]), keys, total).reshape(batch.num_rows, -1).view(np.int64)
        yield pa.RecordBatch.from_arrays([pa.array(out[:, i], type=pa.int64()) for i in range(out.shape[1])],
                                         names=[f"h{i}" for i in range(out.shape[1])])


def _v3_engine(table: Table, cols: list[str], keys: list[NDArray[np.uint64]], total: bool) -> NDArray[np.uint64]:
    """Scheme v3 over ``cols`` of ``table``: the engine computes the canonical parts, numpy the hashes;
    (rows, len(cols)) uint64 (or (rows,) row totals), row order of the engine."""
    from .cell_hash import typed_cells_sql as v3_sql

    backend = table.backend
    m = 1 if total else len(cols)
    with engine_errors(table.what, backend):
        if backend == "duckdb":
            rel = table.native.select(*[quote_ident(c) for c in cols])
            if table.connection is not None:
                con = table.connection
                rel.create_view(_VIEW, replace=True)
                try:
                    rows = int(con.sql(f"SELECT count(*) FROM {_VIEW}").fetchall()[0][0])  # Parquet: metadata
                    query = con.sql(v3_sql(rel.columns, rel.types, _VIEW))
                    return _v3_reader_cells(_relation_reader(query, _CELL_BATCH), keys, total, rows)
                finally:
                    con.execute(f"DROP VIEW IF EXISTS {_VIEW}")
            import duckdb

            con = duckdb.connect(":memory:")
            try:
                con.execute("SET enable_progress_bar = false")
                src = con.from_arrow(_relation_reader(rel))
                src.create_view(_VIEW)
                query = con.sql(v3_sql(src.columns, src.types, _VIEW))
                return _v3_reader_cells(_relation_reader(query, _CELL_BATCH), keys, total)
            finally:
                con.close()
        if backend == "pandas":
            return _v3_frame(table.native[cols], keys, total)
        if backend == "polars":
            return _v3_frame(table.native.select(cols).to_arrow(), keys, total)
        if backend == "pyarrow":
            return _v3_frame(table.native.select(cols), keys, total)
        if backend == "polars-lazy":
            lazy = table.native.select(cols)
            batches = lazy.collect_batches() if hasattr(lazy, "collect_batches") else [lazy.collect()]
            parts = [_v3_frame(b.to_arrow(), keys, total) for b in batches]
            return np.concatenate(parts) if parts else np.empty(0 if total else (0, m), dtype=np.uint64)
        if backend == "dask":
            import pandas as pd

            meta = pd.DataFrame({f"h{i}": pd.Series(dtype="uint64") for i in range(m)})
            frame = table.native[cols].map_partitions(_v3_dask, keys, total, meta=meta).compute()
            out = np.asarray(frame.to_numpy(), dtype=np.uint64).reshape(-1, m)
            return out.reshape(-1) if total else out
        if backend == "pyspark":
            schema = ", ".join(f"h{i} long" for i in range(m))
            sdf = table.native.select(*cols).mapInArrow(lambda it: _v3_spark(it, keys, total), schema)
            arrow = sdf.toArrow()
            out = np.column_stack([np.asarray(arrow.column(f"h{i}").to_numpy(), dtype=np.int64)
                                   for i in range(m)]).view(np.uint64).reshape(-1, m)
            return out.reshape(-1) if total else out
    raise InvalidTypeError(f"{table.what}: fingerprints are not supported for backend {backend!r}")  # pragma: no cover


def cell_fingerprints(
    data: Any, *, key: bytes, columns: Sequence[str] | None = None, scheme: str = CELL_SCHEME, **open_options: Any
) -> tuple[list[str], NDArray[np.uint64]]:
    """Keyed 64-bit hashes of every normalised cell, one column per table column (scheme :data:`CELL_SCHEME`, or
    ``scheme`` = :data:`CELL_SCHEME_V2` to compare with a ledger entry written before v3).

    Returns ``(names, cells)``: the normalised column names (:func:`normalise_name`, made unique) and a
    ``(rows, len(names))`` uint64 array in the engine's row order. Scheme v3: ``cells[r, c]`` is SipHash-2-4 of
    the cell's typed 64-bit code under a key derived from ``key``, ``names[c]`` and the code's kind
    (:mod:`distpriv.data.cell_hash`). Scheme v2:

        cells[r, c] = lower 64 bits of MD5(hex(key) ‖ 0x1F ‖ names[c] ‖ 0x1F ‖ cell)

    with ``cell`` = ``'=' ‖ text`` for the normalised text of :func:`_normalised_text` (numbers by value, text
    trimmed and lower-cased, ...) or ``'-'`` when missing. A row restricted to any set S of columns is then
    identified by Σ_{c ∈ S} cells[r, c] mod 2⁶⁴ (a keyed random function of the normalised values in S, so
    rows agreeing on S, and only those up to a 2⁻⁶⁴ chance, agree): two exports of one table with columns
    reordered, renamed in case, dropped or added, in CSV or Parquet, agree on the columns they share.
    """
    key_hex = _check_key(key)
    if scheme not in CELL_SCHEMES:
        raise InvalidParameterError(f"unknown cell scheme {scheme!r} (known: {', '.join(CELL_SCHEMES)})",
                                    argument="scheme")
    table, cols = _table_columns(data, columns, open_options)
    names = _unique_names(cols)
    if scheme == CELL_SCHEME:
        from .cell_hash import kind_keys

        return names, _v3_engine(table, cols, [kind_keys(bytes(key), n) for n in names], total=False)
    params = [f"{key_hex}\x1f{n}\x1f" for n in names]
    return names, _engine_hashes(table, cols, _cell_sql, params)


def normalised_row_hashes(data: Any, *, key: bytes, columns: Sequence[str], **open_options: Any) -> NDArray[np.uint64]:
    """One keyed 64-bit hash per row of the normalised cells of ``columns`` (equal rows, equal hashes): the sum
    mod 2⁶⁴ of the row's scheme-v3 cell hashes, reduced batch by batch; used to count value collisions of a
    (large) population without materialising a cell per row."""
    _check_key(key)
    table: Table = open_table(data, **open_options)
    cols = list(dict.fromkeys(columns))
    if not cols:
        raise InvalidParameterError("columns: need at least one column")
    table.check_columns(cols, "columns")
    names = _unique_names(cols)
    from .cell_hash import kind_keys

    return _v3_engine(table, cols, [kind_keys(bytes(key), n) for n in names], total=True).reshape(-1)
