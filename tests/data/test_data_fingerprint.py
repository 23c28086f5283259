"""Keyed row fingerprints: one scheme on every backend, checked against a pure-Python implementation."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd
import pytest

from _data_backends import LOCAL_BACKENDS, as_backend, mixed_table
from distpriv import data as dd
from distpriv.errors import InvalidParameterError, InvalidTypeError

KEY = bytes(range(32))


def python_fingerprints(df: pd.DataFrame, key: bytes) -> np.ndarray:
    """The scheme of distpriv.data.fingerprint, written independently with hashlib (slow, small tables)."""
    out = []
    cols = sorted(df.columns)
    for row in df[cols].itertuples(index=False):
        parts = []
        for value in row:
            if value is None or (isinstance(value, float) and math.isnan(value)):
                parts.append("-")
                continue
            if isinstance(value, (bool, np.bool_)):
                text = "1" if value else "0"
            elif isinstance(value, (int, np.integer)) and abs(int(value)) >= 2**53:
                text = str(int(value))  # beyond float64's exact integers: the exact digits
            elif isinstance(value, (int, float, np.integer, np.floating)):
                text = "%.17g" % (float(value) + 0.0)
            else:
                text = str(value)
            parts.append(f"{len(text.encode())}:{text}")
        digest = hashlib.md5((key.hex() + "\x1f" + "".join(parts)).encode()).digest()
        out.append(int.from_bytes(digest[8:16], "little"))
    return np.sort(np.array(out, dtype=np.uint64))


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    df = mixed_table(500, seed=5)
    df["note"] = np.where(np.arange(500) % 7 == 0, None, "ça va | 1:2")
    df.loc[3, "hours per week"] = np.nan
    return df


@pytest.fixture(scope="module")
def expected(table) -> np.ndarray:
    return python_fingerprints(table, KEY)


@pytest.mark.parametrize("backend", LOCAL_BACKENDS)
def test_same_fingerprints_on_every_backend(backend, table, expected, tmp_path):
    fp = dd.row_fingerprints(as_backend(table, backend, tmp_path), key=KEY)
    assert fp.dtype == np.uint64 and fp.shape == (len(table),)
    assert np.all(fp[:-1] <= fp[1:])
    np.testing.assert_array_equal(fp, expected)


def test_scheme_details(table, expected):
    # column order does not matter; ints and floats of the same value agree
    np.testing.assert_array_equal(dd.row_fingerprints(table[table.columns[::-1]], key=KEY), expected)
    as_float = table.assign(**{"my age": table["my age"].astype(float)})
    np.testing.assert_array_equal(dd.row_fingerprints(as_float, key=KEY), expected)
    # another key changes every fingerprint
    other = dd.row_fingerprints(table, key=bytes(32))
    assert np.intersect1d(other, expected).size == 0
    # a column subset defines rows by those columns only
    sub = dd.row_fingerprints(table, key=KEY, columns=["sex", "income"])
    np.testing.assert_array_equal(sub, python_fingerprints(table[["sex", "income"]], KEY))
    assert np.unique(sub).size == 4  # 2 sexes × 2 income classes; duplicates keep their multiplicity


def test_overlap_between_tables(table):
    a = table.iloc[:300]
    b = pd.concat([table.iloc[200:], table.iloc[[0, 0]]])  # 100 rows shared, plus a row repeated twice
    fa, fb = dd.row_fingerprints(a, key=KEY), dd.row_fingerprints(b, key=KEY)
    assert np.intersect1d(fa, fb).size == 101
    assert np.isin(fb, fa).sum() == 102


def test_key_and_column_errors(table):
    with pytest.raises(InvalidTypeError, match="key: expected bytes"):
        dd.row_fingerprints(table, key="secret-secret-secret")
    with pytest.raises(InvalidParameterError, match="key: needs at least 16 bytes, got 8"):
        dd.row_fingerprints(table, key=b"12345678")
    with pytest.raises(InvalidParameterError, match="columns: unknown column 'nope'"):
        dd.row_fingerprints(table, key=KEY, columns=["nope"])
    assert len(dd.new_fingerprint_key()) == 32 and dd.new_fingerprint_key() != dd.new_fingerprint_key()


def test_pandas_index_is_not_part_of_a_row(table, expected):
    shuffled = table.sample(frac=1.0, random_state=0)
    shuffled.index = np.r_[np.arange(250), np.arange(250)]  # a non-unique, non-default index
    np.testing.assert_array_equal(dd.row_fingerprints(shuffled, key=KEY), expected)
    with pytest.raises(InvalidParameterError, match=r"data: repeated column names \['sex'\]"):
        dd.row_fingerprints(table[["sex", "sex"]], key=KEY)


@pytest.mark.parametrize("backend", ["pandas", "polars", "parquet", "duckdb"])
def test_number_edge_cases(backend, tmp_path):
    floats = [0.1, -0.0, 1e-300, 123456789.125, -5.0, 1e15, 999999999999999.0, 2.0**60, float("inf"), np.nan]
    ints = [0, -1, 10**15 - 1, 10**15, 2**60, -(2**62), 7, 40, 1, 2]
    df = pd.DataFrame({"f": floats, "i": np.array(ints, dtype=np.int64), "b": [True, False] * 5})
    fp = dd.row_fingerprints(as_backend(df, backend, tmp_path), key=KEY)
    np.testing.assert_array_equal(fp, python_fingerprints(df, KEY))


# --------------------------------------------------------------------------- per-column cells (issue 27)
@pytest.mark.parametrize("backend", LOCAL_BACKENDS)
def test_cells_agree_on_every_backend(backend, table, tmp_path):
    """The normalised cell hashes of the release ledger: one scheme on every engine (rows compared as a multiset,
    since file scans need not keep the frame's order), the pandas path checked against hashlib in
    test_release_ledger.py."""
    from distpriv.data.fingerprint import cell_fingerprints

    ref_names, ref = cell_fingerprints(table, key=KEY)
    names, cells = cell_fingerprints(as_backend(table, backend, tmp_path), key=KEY)
    assert names == ref_names == [c.strip().casefold() for c in table.columns]
    assert cells.dtype == np.uint64 and cells.shape == (len(table), len(table.columns))
    order = np.lexsort(ref.T[::-1])
    got = np.lexsort(cells.T[::-1])
    np.testing.assert_array_equal(cells[got], ref[order])


def test_normalised_row_hashes_count_equal_rows(table):
    from distpriv.data.fingerprint import normalised_row_hashes

    h = normalised_row_hashes(table, key=KEY, columns=["sex", "income"])
    assert np.unique(h).size == 4  # 2 sexes × 2 income classes
    upper = table.assign(sex=table["sex"].str.upper())
    np.testing.assert_array_equal(np.sort(normalised_row_hashes(upper, key=KEY, columns=["income", "sex"])), np.sort(h))
