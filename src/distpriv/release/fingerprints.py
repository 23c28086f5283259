"""Per-row fingerprints of a table: keyed 64-bit hashes that detect shared rows by content.

Composition (Chen & Ohrimenko Props. A.4/A.5) depends on whether two releases
used the same records, which a hash of the *file* cannot tell (one appended byte
changes it). The private ledger of a release therefore keeps one fingerprint
per row,

    fp(r) = mix(SipHash-2-4_key(c(r)))

where c(r) is a canonical serialisation of the row — every column, sorted by
name, as ``name␟value`` joined by ``␞``; numbers written as integers when
integral (so a CSV and a Parquet copy of one table agree), strings stripped,
missing values as ``\\0`` — SipHash-2-4 is the keyed pseudo-random function of
Aumasson & Bernstein (2012) with a 16-character key drawn from the operating
system's entropy per release, and ``mix`` is pandas' bijective 64-bit
finaliser. Both run vectorised in C (:func:`pandas.util.hash_array`). Without
the key, a fingerprint reveals nothing testable about a row; the key is kept
in the ledger, which is private.

Fingerprints are stored sorted (uint64 ``.npy``); the rows of a new table that
also occur in an earlier release are counted with the earlier release's key
(as a multiset: a row present twice here and once there counts once).
Different records with identical values in every column are indistinguishable
here (they count as shared): a table without an identifying column can share
rows with an unrelated one by coincidence.
"""

from __future__ import annotations

import secrets
import string

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = ["KEY_LENGTH", "canonical_rows", "count_shared", "new_key", "row_fingerprints"]

#: Length of a fingerprint key (SipHash takes 16 bytes; 16 characters of a 64-symbol alphabet: 96 bits).
KEY_LENGTH = 16
_ALPHABET = string.ascii_letters + string.digits + "-_"
_FIELD, _RECORD, _MISSING = "\x1f", "\x1e", "\x00"


def new_key() -> str:
    """A fresh fingerprint key from the operating system's entropy."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(KEY_LENGTH))


def _canonical_column(s: pd.Series) -> NDArray[np.object_]:
    missing = s.isna().to_numpy()
    if pd.api.types.is_bool_dtype(s.dtype):
        out = np.where(s.fillna(False).to_numpy(dtype=bool), "1", "0").astype(object)
    elif pd.api.types.is_numeric_dtype(s.dtype):
        x = s.to_numpy(dtype=float, na_value=np.nan)
        integral = np.isfinite(x) & (np.floor(x) == x) & (np.abs(x) < 2.0**53)
        ints = np.where(integral, x, 0.0).astype(np.int64).astype(str)
        out = np.where(integral, ints, x.astype(str)).astype(object)
    else:
        out = s.astype(str).str.strip().to_numpy(dtype=object)
    out[missing] = _MISSING
    return out


def canonical_rows(frame: pd.DataFrame) -> NDArray[np.object_]:
    """c(r) for every row (see the module docstring): an object array of strings."""
    names = sorted(str(c) for c in frame.columns)
    by_name = {str(c): c for c in frame.columns}
    acc = np.full(len(frame), "", dtype=object)
    for i, name in enumerate(names):
        prefix = (_RECORD if i else "") + name + _FIELD
        acc = acc + prefix + _canonical_column(frame[by_name[name]])
    return acc


def row_fingerprints(frame: pd.DataFrame, key: str, *, rows: NDArray[np.object_] | None = None) -> NDArray[np.uint64]:
    """Sorted keyed fingerprints of the rows of ``frame`` (``rows``: precomputed :func:`canonical_rows`)."""
    if not isinstance(key, str) or len(key) != KEY_LENGTH or not key.isascii():
        raise ValueError("key: expected 16 ASCII characters")  # pragma: no cover - internal use
    c = canonical_rows(frame) if rows is None else rows
    fps = pd.util.hash_array(c, encoding="utf8", hash_key=key, categorize=False)
    return np.sort(np.asarray(fps, dtype=np.uint64))


def count_shared(current: NDArray[np.uint64], previous: NDArray[np.uint64]) -> int:
    """Size of the multiset intersection of two fingerprint arrays: Σ_x min(#x in current, #x in previous)."""
    if previous.size == 0 or current.size == 0:
        return 0
    cv, cc = np.unique(current, return_counts=True)
    pv, pc = np.unique(previous, return_counts=True)
    _, ci, pi = np.intersect1d(cv, pv, assume_unique=True, return_indices=True)
    return int(np.minimum(cc[ci], pc[pi]).sum())
