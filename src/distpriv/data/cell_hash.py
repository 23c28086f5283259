"""Scheme v3 of the ledger's cell hashes: the engine normalises each cell to a typed 64-bit code, numpy hashes it.

Scheme ``distpriv-cell-sip64/v3`` (:data:`distpriv.data.fingerprint.CELL_SCHEME`; this module is imported
only when cells are hashed, not on every release). Every cell of column ``name`` becomes a *kind* and
a 64-bit *code*:

* missing (null, NaN, empty or blank text, and a text equal to one of the CSV reader's missing-value
  markers ``NA``, ``N/A``, ``NaN``, ``null`` in any case): kind 0, code 0;
* a number whose value is an integer in [−2⁶³, 2⁶³): kind 1, the integer (two's complement) — integer
  columns, booleans (1/0), floats with an integral value (40.0, −0.0), text that is a plain decimal
  number (``'007'``, ``'5.0'``, ``'1e3'``) and ``'true'``/``'false'`` (1/0), whatever the case;
* any other number (non-integral or beyond ±2⁶³, ±inf): kind 2, the IEEE-754 bits of its float64 value
  (−0.0 is 0; decimals and text numbers through float64);
* a single-precision float is first written as its shortest decimal (``float32(0.1)`` is 0.1, as a CSV
  export writes it), and a timestamp without time zone at midnight as its date (``2020-01-01``);
* text (after trimming ASCII whitespace, lower-cased; also dates and other types by their text cast, and
  integers beyond ±2⁶³ within the 128-bit range written as their exact decimal digits; wider integers and
  decimals beyond float64's range go through float64, so they may match neighbours: only more caution): kind 3, the first 8 bytes (little-endian)
  of the unkeyed BLAKE2b-64 digest of its UTF-8 bytes;

and its hash is SipHash-2-4 (:mod:`distpriv.data.siphash`) of the code under a key derived for (name, kind):
(k0, k1) = the first 16 bytes, as two little-endian words, of HMAC-SHA256(key,
``"distpriv-cell/v3" ‖ 0x1F ‖ name ‖ 0x1F ‖ kind``). The same value therefore hashes alike from a CSV, a
Parquet file or a frame, and the normalisation is the one of scheme v2 (numbers by value, text trimmed and
case-folded) with numbers compared exactly instead of through their ``%.17g`` text: cells equal under v2 are
equal under v3 (one exception: v2 also equated an infinite float with the text ``inf``), and v3 also matches an integer with an integral float of the same value beyond 10¹⁵ (v2 wrote
``1e+17`` and ``100000000000000000``), so a re-export is detected at least as often as before. Different cells of a
column collide with probability about 2⁻⁶⁴ per pair (SipHash is a PRF; two distinct texts also collide in the
64-bit digest with probability about 2⁻⁶⁴) — a collision can only add a spurious match, which makes the
ledger more cautious, never less.

Cost. DuckDB does the per-row normalisation with integer and float casts (text goes through two regular
expressions only when it starts like a number); numpy hashes each column once per distinct value where that
is cheap to find (a small integer range, the distinct texts of a batch, a float column with few distinct
values) and element-wise otherwise, in cache-sized chunks: about 0.1 µs per cell, against about 1 µs for
scheme v2's per-cell MD5 of a text (and its ``printf('%.17g')`` of every float).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .siphash import siphash24
from .sources import NA_VALUES, quote_ident

MISSING, INT, FLOAT, TEXT = 0, 1, 2, 3
_KINDS = 4

_WS = "' ' || chr(9) || chr(10) || chr(13) || chr(11) || chr(12)"
_INT_RE = r"[+-]?[0-9]+"
_DEC_RE = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
#: integer types whose every value fits a BIGINT
_SMALL_INTS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")
_FLOATS = ("FLOAT", "DOUBLE", "REAL")
_TWO63 = 2.0**63
#: batches up to this many rows are hashed element-wise (finding distinct values would not pay)
_SMALL_BATCH = 4096
#: a column whose integer codes span fewer values than this (and than the batch) is hashed once per value
_RANGE_TABLE = 1 << 16


def kind_keys(key: bytes, name: str) -> NDArray[np.uint64]:
    """(4, 2) array: the SipHash key (k0, k1) of each kind of cell of column ``name`` (module docstring)."""
    out = np.empty((_KINDS, 2), dtype=np.uint64)
    for kind in range(_KINDS):
        d = hmac.new(bytes(key), f"distpriv-cell/v3\x1f{name}\x1f{kind}".encode(), hashlib.sha256).digest()
        out[kind] = (int.from_bytes(d[:8], "little"), int.from_bytes(d[8:16], "little"))
    return out


def text_code(text: str) -> int:
    """The code of a text cell: the unkeyed BLAKE2b-64 digest of its UTF-8 bytes, little-endian."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _route(dtype: str) -> str:
    base = dtype.upper()
    if base in _SMALL_INTS or base == "BOOLEAN":
        return "int"
    if base in _FLOATS or base.startswith("DECIMAL"):
        return "float"
    return "text"  # VARCHAR, wide integers (through their digits), dates and every other type


def _naive_timestamp(dtype: str) -> bool:
    """A TIMESTAMP type without a time zone (``TIMESTAMP``, ``TIMESTAMP_S/MS/NS``)."""
    base = dtype.upper()
    return base.startswith("TIMESTAMP") and "TIME ZONE" not in base and not base.endswith("TZ")


def typed_cells_sql(columns: Sequence[str], types: Sequence[Any], source: str) -> str:
    """DuckDB query giving every cell's canonical parts: per column ``k`` an ``i<k>`` (BIGINT), a ``d<k>``
    (DOUBLE) or, for text-like columns, all of ``i<k>``, ``d<k>`` and ``s<k>`` (VARCHAR) with at most one of
    them non-null per row. No key enters the query."""
    inner, mid, outer = [], [], []
    for k, (name, dtype) in enumerate(zip(map(str, columns), map(str, types), strict=True)):
        col = quote_ident(name)
        route = _route(dtype)
        if route == "int":
            inner.append(f"{col} AS r{k}")
            mid.append(f"r{k}")
            outer.append(f"CAST(r{k} AS BIGINT) AS i{k}")
        elif route == "float":
            # a single-precision value by its shortest decimal (what a CSV export of it writes: float32(0.1) is 0.1)
            single = dtype.upper() in ("FLOAT", "REAL")
            inner.append(f"CAST(CAST({col} AS VARCHAR) AS DOUBLE) AS r{k}" if single else f"{col} AS r{k}")
            mid.append(f"r{k}")
            outer.append(f"CAST(r{k} AS DOUBLE) AS d{k}")
        else:
            text = f"CAST({col} AS VARCHAR)"
            if _naive_timestamp(dtype):  # a timestamp at midnight is its date (a CSV of dates reads back as DATE)
                text = f"CASE WHEN CAST({col} AS TIME) = TIME '00:00:00' THEN CAST(CAST({col} AS DATE) AS VARCHAR) ELSE {text} END"
            # the CSV reader's missing-value markers (sources.NA_VALUES) are missing in a frame's text too
            na = ", ".join(f"'{v.lower()}'" for v in NA_VALUES if v)
            inner.append(f"CASE WHEN lower(trim({text}, {_WS})) IN ({na}) THEN NULL "
                         f"ELSE nullif(trim({text}, {_WS}), '') END AS r{k}")
            r = f"r{k}"
            mid.append(f"{r}, lower({r}) AS l{k}, CASE WHEN {r} IS NULL THEN 0 "
                       f"WHEN NOT (ascii({r}) BETWEEN 48 AND 57 OR ascii({r}) IN (43, 45, 46)) THEN 3 "
                       f"WHEN regexp_full_match({r}, '{_INT_RE}') THEN (CASE WHEN TRY_CAST({r} AS BIGINT) IS NOT NULL "
                       f"THEN 1 WHEN TRY_CAST({r} AS HUGEINT) IS NOT NULL THEN 4 ELSE 2 END) "
                       f"WHEN regexp_full_match({r}, '{_DEC_RE}') THEN 2 ELSE 3 END AS c{k}")
            c, low = f"c{k}", f"l{k}"
            outer.append(f"CASE WHEN {c} = 1 THEN CAST({r} AS BIGINT) WHEN {c} = 3 AND {low} = 'true' THEN 1 "
                         f"WHEN {c} = 3 AND {low} = 'false' THEN 0 END AS i{k}")
            outer.append(f"CASE WHEN {c} = 2 THEN CAST({r} AS DOUBLE) END AS d{k}")
            outer.append(f"CASE WHEN {c} = 4 THEN CAST(CAST({r} AS HUGEINT) AS VARCHAR) "
                         f"WHEN {c} = 3 AND {low} NOT IN ('true', 'false') THEN {low} END AS s{k}")
    return (f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(mid)} FROM "
            f"(SELECT {', '.join(inner)} FROM {source}))")


def _ints(arr: Any) -> tuple[NDArray[np.bool_] | None, NDArray[np.uint64]]:
    """Validity (None: no nulls) and values of an Arrow int64 array, as uint64 words."""
    import pyarrow.compute as pc

    if arr.null_count == 0:
        return None, np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64).view(np.uint64)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    vals = np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False), dtype=np.int64).view(np.uint64)
    return valid, vals


def _hash_words(kind: NDArray[np.uint8], code: NDArray[np.uint64], keys: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """SipHash of every (kind, code) under the key of its kind; once per distinct value where that is cheap."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = code.size
    present = np.flatnonzero(np.bincount(kind, minlength=_KINDS))  # (np.unique would take a slow hash path)
    if n > _SMALL_BATCH and present.size == 1:
        k0, k1 = keys[int(present[0])]
        if int(present[0]) == INT:
            signed = code.view(np.int64)
            lo, hi = int(signed.min()), int(signed.max())
            if hi - lo < min(_RANGE_TABLE, n):  # a small range of integers: hash each value once
                table = siphash24(np.arange(lo, hi + 1, dtype=np.int64).view(np.uint64), k0, k1)
                return table[signed - lo]
        sample = np.sort(code[: 1 << 16])
        if (np.count_nonzero(sample[1:] != sample[:-1]) + 1) * 4 <= sample.size:  # few distinct values
            enc = pc.dictionary_encode(pa.array(code, type=pa.uint64()))
            table = siphash24(np.asarray(enc.dictionary.to_numpy(), dtype=np.uint64), k0, k1)
            return table[np.asarray(enc.indices.to_numpy(), dtype=np.int64)]
        return siphash24(code, k0, k1)
    return siphash24(code, keys[kind, 0], keys[kind, 1])


def batch_cells(batch: Any, keys: Sequence[NDArray[np.uint64]]) -> NDArray[np.uint64]:
    """(rows, len(keys)) hashes of an Arrow record batch of :func:`typed_cells_sql` (``keys[k]``: column k's
    :func:`kind_keys`)."""
    import pyarrow.compute as pc

    b = batch.num_rows
    # parts that are null throughout the batch (the number parts of a plain text column) are skipped
    names = {n for n in batch.schema.names if batch.column(n).null_count < b}
    out = np.empty((b, len(keys)), dtype=np.uint64)
    for k, kk in enumerate(keys):
        kind = np.zeros(b, dtype=np.uint8)
        code = np.zeros(b, dtype=np.uint64)
        text: tuple[NDArray[np.bool_], NDArray[np.uint64]] | None = None
        if f"i{k}" in names:
            valid, vals = _ints(batch.column(f"i{k}"))
            if valid is None:
                kind[:] = INT
                code = vals.copy()
            else:
                kind[valid] = INT
                code[valid] = vals[valid]
        if f"d{k}" in names:
            x = np.asarray(batch.column(f"d{k}").to_numpy(zero_copy_only=False), dtype=np.float64) + 0.0
            with np.errstate(invalid="ignore"):
                num = ~np.isnan(x)
                integral = (x == np.trunc(x)) & (x >= -_TWO63) & (x < _TWO63)  # False for NaN and ±inf
                as_int = x.astype(np.int64).view(np.uint64)  # garbage where not integral, never used there
            if f"i{k}" in names:  # a text column: only where the float part is present
                kind[integral] = INT
                code[integral] = as_int[integral]
                other = num & ~integral
                kind[other] = FLOAT
                code[other] = x[other].view(np.uint64)
            else:
                kind = np.where(integral, np.uint8(INT), np.where(num, np.uint8(FLOAT), np.uint8(MISSING)))
                code = np.where(integral, as_int, np.where(num, x.view(np.uint64), np.uint64(0)))
        if f"s{k}" in names:
            enc = pc.dictionary_encode(batch.column(f"s{k}"))
            words = np.array([text_code(t) for t in enc.dictionary.to_pylist()], dtype=np.uint64)
            table = siphash24(words, kk[TEXT, 0], kk[TEXT, 1])
            idx = enc.indices
            if idx.null_count == 0:
                valid_t = np.ones(b, dtype=bool)
                pos = np.asarray(idx.to_numpy(), dtype=np.int64)
            else:
                valid_t = np.asarray(idx.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
                pos = np.asarray(pc.fill_null(idx, 0).to_numpy(zero_copy_only=False), dtype=np.int64)[valid_t]
            text = (valid_t, table[pos])
            kind[valid_t] = TEXT
        col = out[:, k]
        if text is None:
            col[:] = _hash_words(kind, code, kk)
        elif text[1].size == b:  # a text column without numbers or missing cells
            col[:] = text[1]
        else:
            rest = ~text[0]
            col[rest] = _hash_words(kind[rest], code[rest], kk)
            col[text[0]] = text[1]
    return out
