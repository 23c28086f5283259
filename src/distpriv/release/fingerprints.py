"""Per-row fingerprints of a table: keyed 64-bit hashes that detect shared rows by content.

Composition (Chen & Ohrimenko Props. A.4/A.5) depends on whether two releases
used the same records, which a hash of the *file* cannot tell (one appended byte
changes it). The private ledger of a release therefore keeps one fingerprint
per row,

    fp(r) = combine(h₁(r), …, h_d(r)),    h_j(r) = mix(SipHash-2-4_{k_j}(c_j(r))),

over the columns in order of their names. c_j(r) is a canonical form of the
cell: numbers (and booleans, as 0/1) as the 8 little-endian bytes of their
float64 value with trailing zero bytes removed (−0 as 0; so a CSV and a Parquet
copy of one table agree whatever the integer/float types), other values as the
UTF-8 of their stripped text, missing values as a 15-byte marker no number can
produce. SipHash-2-4 is the keyed pseudo-random function of Aumasson & Bernstein
(2012); its key k_j for column j is BLAKE2b-96(name_j) keyed with the release's
16-character key (operating-system entropy), so column names are bound in;
``mix`` is pandas' bijective 64-bit finaliser (:func:`pandas.util.hash_array`);
``combine`` is the multiply-xor combination
((…((c₀ ⊕ h₁)·m₁) ⊕ h₂)·m₂ …) + c₁ modulo 2⁶⁴ with odd multipliers
m_j = 1000003 + Σ_{i<j} (82520 + 2(d − i)). Each column is factorised first, so
only its distinct values are hashed; everything is vectorised. Without the key,
a fingerprint reveals nothing testable about a row; the key is kept in the
ledger, which is private.

Fingerprints are stored sorted (uint64 ``.npy``); the rows of a new table that
also occur in an earlier release are counted with the earlier release's key
(as a multiset: a row present twice here and once there counts once).
Different records with identical values in every column are indistinguishable
here (they count as shared): a table without an identifying column can share
rows with an unrelated one by coincidence.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import string
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = ["KEY_LENGTH", "MISSING", "CanonicalTable", "canonical_table", "column_key", "combine", "count_shared",
           "new_key", "row_fingerprints"]

#: Length of a fingerprint key (SipHash takes 16 bytes; 16 characters of a 64-symbol alphabet: 96 bits).
KEY_LENGTH = 16
_ALPHABET = string.ascii_letters + string.digits + "-_"
#: Canonical form of a missing value (longer than any number's 8 bytes).
MISSING = b"\x00missing-value\x00"


def new_key() -> str:
    """A fresh fingerprint key from the operating system's entropy."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(KEY_LENGTH))


def column_key(key: str, name: str) -> str:
    """k_j = BLAKE2b-96 of the column name keyed with the release key, as 16 URL-safe base64 characters."""
    digest = hashlib.blake2b(name.encode("utf-8"), key=key.encode("ascii"), digest_size=12).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii")


def _numeric(series: pd.Series) -> NDArray[np.float64] | None:
    """The column as float64 when it is numeric or boolean and exactly representable, else ``None``."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        if pd.api.types.is_complex_dtype(dtype):
            return None
        if pd.api.types.is_integer_dtype(dtype):
            ints = series.dropna()
            if len(ints) and int(np.abs(ints.to_numpy(dtype=np.int64)).max()) >= 2**53:
                return None  # not exact as float64: use the text form
        x = np.array(series.to_numpy(dtype=float, na_value=np.nan), dtype=float, copy=True)
        x[x == 0] = 0.0  # −0 as 0
        return x
    return None


@dataclass(frozen=True)
class CanonicalTable:
    """Per column (by name): each row's code into the column's distinct canonical cells (−1: missing)."""

    columns: tuple[tuple[str, NDArray[np.intp], NDArray[np.object_]], ...]
    rows: int

    def cells(self) -> dict[str, list[bytes]]:
        """Every row's canonical cell bytes, per column (for inspection and tests)."""
        out = {}
        for name, codes, cells in self.columns:
            enc = [c if isinstance(c, bytes) else str(c).encode("utf-8") for c in cells] + [MISSING]
            out[name] = [enc[i] for i in codes]
        return out


def canonical_table(frame: pd.DataFrame) -> CanonicalTable:
    """Factorise every column and write its distinct values canonically (see the module docstring)."""
    by_name = {str(c): c for c in frame.columns}
    cols = []
    for name in sorted(by_name):
        series = frame[by_name[name]]
        x = _numeric(series)
        if x is not None:
            codes, uniques = pd.factorize(x, use_na_sentinel=True)
            cells = np.ascontiguousarray(np.asarray(uniques, dtype="<f8")).view("S8").astype(object)
        else:
            text = series.astype(str).str.strip().where(series.notna(), None)
            codes, uniques = pd.factorize(text, use_na_sentinel=True)
            cells = np.asarray(uniques, dtype=object)
        cols.append((name, np.asarray(codes, dtype=np.intp), cells))
    return CanonicalTable(tuple(cols), len(frame))


def combine(arrays: list[NDArray[np.uint64]]) -> NDArray[np.uint64]:
    """((…((c₀ ⊕ a₁)·m₁) ⊕ a₂)·m₂ …) + c₁ modulo 2⁶⁴ (module docstring), vectorised."""
    d = len(arrays)
    out = np.full(arrays[0].shape, 0x345678, dtype=np.uint64)
    mult = 1000003
    for i, a in enumerate(arrays):
        out ^= a
        out *= np.uint64(mult)
        mult = (mult + 82520 + 2 * (d - i)) % 2**64
    out += np.uint64(97531)
    return out


def row_fingerprints(frame: pd.DataFrame, key: str, *, table: CanonicalTable | None = None) -> NDArray[np.uint64]:
    """Sorted keyed fingerprints of the rows of ``frame`` (``table``: a precomputed :func:`canonical_table`)."""
    if not isinstance(key, str) or len(key) != KEY_LENGTH or not key.isascii():
        raise ValueError("key: expected 16 ASCII characters")  # pragma: no cover - internal use
    t = canonical_table(frame) if table is None else table
    if not t.columns:
        return np.zeros(t.rows, dtype=np.uint64)
    per_col = []
    for name, codes, cells in t.columns:
        values = np.empty(len(cells) + 1, dtype=object)
        values[:-1] = cells
        values[-1] = MISSING  # code −1 picks the last entry
        h = pd.util.hash_array(values, encoding="utf8", hash_key=column_key(key, name), categorize=False)
        per_col.append(np.asarray(h, dtype=np.uint64)[codes])
    return np.sort(combine(per_col))


def count_shared(current: NDArray[np.uint64], previous: NDArray[np.uint64]) -> int:
    """Size of the multiset intersection of two fingerprint arrays: Σ_x min(#x in current, #x in previous)."""
    if previous.size == 0 or current.size == 0:
        return 0
    cv, cc = np.unique(current, return_counts=True)
    pv, pc = np.unique(previous, return_counts=True)
    _, ci, pi = np.intersect1d(cv, pv, assume_unique=True, return_indices=True)
    return int(np.minimum(cc[ci], pc[pi]).sum())
