"""Bounded stratified subsamples drawn inside the engine: sizes, contents, seeds, uniformity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _data_backends import LOCAL_BACKENDS, as_backend, mixed_table
from distpriv import data as dd
from distpriv.errors import InvalidParameterError, InvalidTypeError
from distpriv.queries import Predicate, Query

Q = Query(["mean:my age", "count:sex=Female", "sum:hours per week"])
PROTECT = "income=>50K"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return mixed_table(2000, seed=2)


@pytest.mark.parametrize("backend", LOCAL_BACKENDS)
def test_sizes_and_contents(backend, table, tmp_path):
    native = as_backend(table, backend, tmp_path)
    sub = dd.stratified_sample(native, Q, PROTECT, 150, seed=3)
    n_p = int((table["income"] == ">50K").sum())
    assert sub.sizes == (150, 150)
    assert sub.population_counts.tolist() == [n_p, len(table) - n_p]
    assert list(sub.frame.columns) == ["income", "my age", "sex", "hours per week"]
    # contributions and groups agree with the pandas path evaluated on the returned rows
    np.testing.assert_allclose(sub.matrix, Q.column_matrix(sub.frame), rtol=1e-12)
    np.testing.assert_array_equal(sub.protected, Predicate(PROTECT).mask(sub.frame))
    assert sub.protected[:150].all() and not sub.protected[150:].any()
    # every sampled row is a row of the table, and no row is drawn twice
    key_cols = ["my age", "hours per week"]
    merged = sub.frame.merge(table[key_cols].drop_duplicates(), on=key_cols, how="left", indicator=True)
    assert (merged["_merge"] == "both").all()
    again = dd.stratified_sample(native, Q, PROTECT, 150, seed=3)
    pd.testing.assert_frame_equal(sub.frame, again.frame)
    other = dd.stratified_sample(native, Q, PROTECT, 150, seed=4)
    assert not sub.frame.equals(other.frame)


def test_group_smaller_than_size_is_taken_whole(table):
    ids = table.assign(row=np.arange(len(table)))
    small = ids.iloc[:300]
    q = Query(["sum:row"])
    sub = dd.stratified_sample(small, q, PROTECT, 10_000, seed=0)
    n_p = int((small["income"] == ">50K").sum())
    assert sub.sizes == (n_p, 300 - n_p)
    assert sorted(sub.matrix[:, 0].astype(int)) == list(range(300))


def test_summary_reuse_and_missing(table):
    df = table.copy()
    df["hours per week"] = df["hours per week"].astype(float)
    df.loc[[0, 1, 2], "hours per week"] = np.nan
    with pytest.raises(InvalidParameterError, match="missing values"):
        dd.stratified_sample(df, Q, PROTECT, 10)
    summary = dd.summarize(df, Q, PROTECT, missing="drop")
    sub = dd.stratified_sample(df, Q, PROTECT, 50, seed=1, missing="drop", summary=summary)
    assert sub.sizes == (50, 50) and not sub.frame["hours per week"].isna().any()
    np.testing.assert_array_equal(sub.population_counts, summary.moments.counts)
    with pytest.raises(InvalidParameterError, match="summary: was computed for a different query"):
        dd.stratified_sample(df, ["mean:my age"], PROTECT, 5, summary=summary, missing="drop")
    with pytest.raises(InvalidTypeError, match="summary: expected a TableSummary"):
        dd.stratified_sample(df, Q, PROTECT, 5, summary=object(), missing="drop")
    with pytest.raises(InvalidParameterError, match="size: must be >= 1"):
        dd.stratified_sample(df, Q, PROTECT, 0)
    with pytest.raises(InvalidParameterError, match="seed: must be >= 0"):
        dd.stratified_sample(df, Q, PROTECT, 5, seed=-1)


@pytest.mark.parametrize("backend", ["pandas", "polars-lazy", "parquet"])
def test_inclusion_is_uniform(backend, tmp_path):
    """Over T seeds each row of a group of N is drawn T·s/N times on average.

    For simple random sampling without replacement the inclusion indicators have covariance
    p(1−p)·N/(N−1)·(I − J/N), p = s/N, so X = Σ_i (c_i − Tp)² / (T p(1−p) N/(N−1)) is ≈ χ²(N − 1).
    """
    n_p, n_q, size, seeds = 24, 36, 8, 300
    df = pd.DataFrame({"row": np.arange(n_p + n_q, dtype=float), "g": ["p"] * n_p + ["q"] * n_q})
    native = as_backend(df, backend, tmp_path)
    table = dd.open_table(native)
    summary = dd.summarize(table, ["sum:row"], "g=p")
    counts = np.zeros(n_p + n_q)
    for seed in range(seeds):
        sub = dd.stratified_sample(table, ["sum:row"], "g=p", size, seed=seed, summary=summary)
        rows = sub.matrix[:, 0].astype(int)
        assert len(set(rows)) == 2 * size
        counts[rows] += 1
    for lo, hi in ((0, n_p), (n_p, n_p + n_q)):
        big_n = hi - lo
        p = size / big_n
        x = ((counts[lo:hi] - seeds * p) ** 2).sum() / (seeds * p * (1 - p) * big_n / (big_n - 1))
        assert stats.chi2.sf(x, big_n - 1) > 1e-3, (backend, lo, x)


def test_pandas_index_does_not_matter(table):
    shuffled = table.sample(frac=1.0, random_state=1)
    shuffled.index = np.r_[np.arange(1000), np.arange(1000)]  # non-unique, non-default
    sub = dd.stratified_sample(shuffled, Q, PROTECT, 100, seed=2)
    np.testing.assert_allclose(sub.matrix, Q.column_matrix(sub.frame), rtol=1e-12)
    np.testing.assert_array_equal(sub.protected, Predicate(PROTECT).mask(sub.frame))
    s1, s2 = dd.summarize(shuffled, Q, PROTECT), dd.summarize(table, Q, PROTECT)
    np.testing.assert_array_equal(s1.moments.counts, s2.moments.counts)
    np.testing.assert_allclose(s1.moments.sums, s2.moments.sums, rtol=1e-12)


def test_seed_range_and_reserved_names(table):
    with pytest.raises(InvalidParameterError, match=r"seed: must be < 2\*\*63"):
        dd.stratified_sample(table, Q, PROTECT, 5, seed=2**63)
    with pytest.raises(InvalidParameterError, match="reserved by distpriv"):
        dd.stratified_sample(table.assign(__dp_u=1.0), Q, PROTECT, 5)


def test_parquet_row_numbers_give_the_window_keys(table, tmp_path):
    """Parquet scans number rows from file_row_number/file_index + footer offsets instead of a window:
    the same keys, hence the same subsample, as ``row_number() OVER ()`` over the files in order (one file,
    and three files of different sizes through a glob)."""
    from distpriv.data.sample import _parquet_rows

    table.to_parquet(tmp_path / "one.parquet", index=False)
    for i, part in enumerate(np.array_split(np.arange(len(table)), [300, 1100])):
        table.iloc[part].to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    for source in (str(tmp_path / "one.parquet"), str(tmp_path / "part-*.parquet")):
        t = dd.open_table(source)
        scan = _parquet_rows(t, ["my age"])
        assert scan is not None
        rel, row = scan
        fast = [r[0] for r in rel.project(f"({row})::UBIGINT").fetchall()]
        window = [r[0] for r in t.native.project("(row_number() OVER ())::UBIGINT").fetchall()]
        assert fast == window == list(range(1, len(table) + 1))
        sub = dd.stratified_sample(source, Q, PROTECT, 150, seed=3)
        t_csv = tmp_path / "same.csv"
        table.to_csv(t_csv, index=False)  # CSV keeps the window: same keys, same rows
        ref = dd.stratified_sample(str(t_csv), Q, PROTECT, 150, seed=3)
        np.testing.assert_allclose(sub.matrix, ref.matrix, rtol=1e-12)
    # a column named like a virtual column, in any case (DuckDB matches names case-insensitively): the window is
    # used, and the keys stay distinct and seeded (review: `File_Index` in a glob made every key equal)
    table.assign(file_row_number=1).to_parquet(tmp_path / "clash.parquet", index=False)
    assert _parquet_rows(dd.open_table(str(tmp_path / "clash.parquet")), ["my age"]) is None
    table.assign(FILE_ROW_NUMBER=1).to_parquet(tmp_path / "upper.parquet", index=False)
    assert _parquet_rows(dd.open_table(str(tmp_path / "upper.parquet")), ["my age"]) is None
    for i, part in enumerate(np.array_split(np.arange(len(table)), 2)):
        table.iloc[part].assign(File_Index=9).to_parquet(tmp_path / f"fi-{i}.parquet", index=False)
    glob = str(tmp_path / "fi-*.parquet")
    assert _parquet_rows(dd.open_table(glob), ["my age"]) is None
    for source in (glob, str(tmp_path / "upper.parquet")):
        a = dd.stratified_sample(source, Q, PROTECT, 150, seed=3)
        b = dd.stratified_sample(source, Q, PROTECT, 150, seed=4)
        ref = dd.stratified_sample(str(t_csv), Q, PROTECT, 150, seed=3)
        np.testing.assert_allclose(a.matrix, ref.matrix, rtol=1e-12)  # same keys as the window over the rows
        assert not np.array_equal(a.matrix, b.matrix)
