"""Per-row fingerprints for the composition ledger: keyed 64-bit hashes that detect shared rows by content.

Composition (Chen & Ohrimenko Props. A.4/A.5) depends on whether two releases
used the same records, which a hash of the *file* cannot tell (one appended byte
changes it). The private ledger of a release therefore keeps one fingerprint
per row. There is one implementation, :func:`distpriv.data.row_fingerprints`
(scheme :data:`~distpriv.data.FINGERPRINT_SCHEME`): the engine holding the table
(DuckDB for files and in-memory frames, the workers for Dask and Spark) writes
every row canonically — cells in order of their column names, numbers through
float64 as C's ``%.17g`` (so a CSV and a Parquet copy, or 40 and 40.0, agree),
missing values marked, each cell length-prefixed — and takes the lower 64 bits
of MD5(key ‖ 0x1F ‖ row). Only 8 bytes per row come back to Python, so the
ledger of a table of any size costs one streaming pass. The key is the
release's 16-character key from the operating system's entropy (96 bits), kept
in the private ledger.

Fingerprints are stored sorted (uint64 ``.npy``) with the scheme's name; the
rows of a new table that also occur in an earlier release are counted with the
earlier release's key (as a multiset: a row present twice here and once there
counts once). Different records with identical values in every column are
indistinguishable here (they count as shared): a table without an identifying
column can share rows with an unrelated one by coincidence.
"""

from __future__ import annotations

import secrets
import string
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..data import FINGERPRINT_SCHEME
from ..data import row_fingerprints as _engine_fingerprints

__all__ = ["FINGERPRINT_SCHEME", "KEY_LENGTH", "count_shared", "new_key", "row_fingerprints", "table_fingerprints"]

#: Length of a fingerprint key (16 characters of a 64-symbol alphabet: 96 bits).
KEY_LENGTH = 16
_ALPHABET = string.ascii_letters + string.digits + "-_"


def new_key() -> str:
    """A fresh fingerprint key from the operating system's entropy."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(KEY_LENGTH))


def _key_bytes(key: str) -> bytes:
    if not isinstance(key, str) or len(key) != KEY_LENGTH or not key.isascii():
        raise ValueError("key: expected 16 ASCII characters")  # pragma: no cover - internal use
    return key.encode("ascii")


def table_fingerprints(table: Any, key: str) -> NDArray[np.uint64]:
    """Sorted keyed fingerprints of every row of ``table`` (a :class:`distpriv.data.Table` or anything
    :func:`distpriv.data.open_table` accepts), computed by its engine."""
    return _engine_fingerprints(table, key=_key_bytes(key))


def row_fingerprints(data: Any, key: str) -> NDArray[np.uint64]:
    """Alias of :func:`table_fingerprints` (a pandas frame, a path, any supported frame)."""
    return table_fingerprints(data, key)


def count_shared(current: NDArray[np.uint64], previous: NDArray[np.uint64]) -> int:
    """Size of the multiset intersection of two fingerprint arrays: Σ_x min(#x in current, #x in previous)."""
    if previous.size == 0 or current.size == 0:
        return 0
    cv, cc = np.unique(current, return_counts=True)
    pv, pc = np.unique(previous, return_counts=True)
    _, ci, pi = np.intersect1d(cv, pv, assume_unique=True, return_indices=True)
    return int(np.minimum(cc[ci], pc[pi]).sum())
