"""The aggregate pass on every local backend against the in-memory pandas path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from _data_backends import LOCAL_BACKENDS, as_backend, mixed_table
from distpriv import data as dd
from distpriv.errors import InvalidParameterError, InvalidTypeError, UnknownLabelError
from distpriv.moments import GroupMoments
from distpriv.queries import Query

QUERY = Query(
    [
        "mean:my age",
        "sum:hours per week",
        "count:sex=Female",
        "proportion:work class!=Private & my age>=40",
        "mean:veteran",
        "count:veteran=true",
        "mean:year",
    ]
)
PROTECT = "income=>50K"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return mixed_table()


@pytest.fixture(scope="module")
def reference(table) -> GroupMoments:
    return GroupMoments.from_frame(table, QUERY, PROTECT)


def assert_same_moments(got: GroupMoments, ref: GroupMoments) -> None:
    np.testing.assert_array_equal(got.counts, ref.counts)
    np.testing.assert_allclose(got.sums, ref.sums, rtol=1e-12, atol=1e-9)
    scale = np.abs(ref.scatter).max(axis=(1, 2), keepdims=True)
    # entries agree to 1e-9 of the largest entry of their group's scatter (a relative accuracy of the moments)
    assert np.all(np.abs(got.scatter - ref.scatter) <= 1e-9 * scale), np.abs(got.scatter - ref.scatter).max()
    np.testing.assert_allclose(np.diagonal(got.scatter, axis1=1, axis2=2), np.diagonal(ref.scatter, axis1=1, axis2=2),
                               rtol=1e-8)


@pytest.mark.parametrize("backend", LOCAL_BACKENDS)
def test_summary_matches_pandas_path(backend, table, reference, tmp_path):
    summary = dd.summarize(as_backend(table, backend, tmp_path), QUERY, PROTECT)
    assert_same_moments(summary.moments, reference)
    assert summary.rows == summary.kept == len(table) and summary.dropped == 0
    assert summary.missing == {c: 0 for c in ["income", "my age", "hours per week", "sex", "work class",
                                              "veteran", "year"]}
    np.testing.assert_allclose(summary.values, QUERY.evaluate(table), rtol=1e-12)
    np.testing.assert_allclose(summary.record_sensitivities(100), QUERY.record_sensitivities(table, 100), rtol=1e-12)
    assert summary.ranges["my age"] == (float(table["my age"].min()), float(table["my age"].max()))
    # 'year' has |mean|/sd = 1e8: the second, centred pass ran and kept its variance accurate
    assert summary.passes == 2
    var_year = summary.moments.covariances[:, 6, 6]
    np.testing.assert_allclose(var_year, [table.loc[table.income == ">50K", "year"].var(ddof=0),
                                          table.loc[table.income != ">50K", "year"].var(ddof=0)], rtol=1e-8)
    # the moment model is the same for any n and θ
    for theta, n in ((0.45, 100), (0.55, 777)):
        for replace in (False, True):
            m1, c1 = summary.moments.dataset_moments(theta, n, replace=replace)
            m2, c2 = reference.dataset_moments(theta, n, replace=replace)
            np.testing.assert_allclose(m1, m2, rtol=1e-12)
            np.testing.assert_allclose(c1, c2, rtol=1e-8, atol=1e-12 * np.abs(c2).max())


def test_well_conditioned_table_takes_one_pass(table, reference):
    q = Query(["mean:my age", "count:sex=Female"])
    summary = dd.summarize(table, q, PROTECT)
    assert summary.passes == 1
    assert_same_moments(summary.moments, GroupMoments.from_frame(table, q, PROTECT))


def test_naive_one_pass_would_fail_on_year(table):
    """The centred pass matters: Σv² − N ā² for 'year' in doubles has no correct digit left."""
    y = table.loc[table.income == ">50K", "year"].to_numpy()
    naive = (y**2).sum() / len(y) - y.mean() ** 2
    assert abs(naive - y.var()) > 0.1 * y.var()


def test_constant_column_has_exactly_zero_variance(table):
    """The protected predicate as a statistic is constant in each group: zero variance, one pass."""
    q = Query(["count:income=>50K", "mean:my age"])
    summary = dd.summarize(table, q, PROTECT)
    assert summary.passes == 1
    assert np.all(summary.moments.scatter[:, 0, :] == 0) and np.all(summary.moments.scatter[:, :, 0] == 0)
    assert summary.moments.sums[0, 0] == summary.moments.counts[0] and summary.moments.sums[1, 0] == 0


def test_products_split_over_passes(table, reference):
    summary = dd.summarize(table, QUERY, PROTECT, max_products=5)
    assert_same_moments(summary.moments, reference)
    assert summary.passes == 1 + 5 + 6  # 28 products: 6 chunks in the first sweep, 6 in the centred one


@pytest.mark.parametrize("backend", ["pandas", "polars", "duckdb", "csv"])
def test_missing_values(backend, table, tmp_path):
    df = table.copy()
    df["hours per week"] = df["hours per week"].astype(float)
    df.loc[[3, 10, 11], "hours per week"] = np.nan
    df["work class"] = df["work class"].astype(object)
    df.loc[[10, 20], "work class"] = None
    native = as_backend(df, backend, tmp_path)
    with pytest.raises(InvalidParameterError, match=r"missing values \(null or NaN\) in used columns "
                                                    r"\['hours per week \(3\)', 'work class \(2\)'\]"):
        dd.summarize(native, QUERY, PROTECT)
    summary = dd.summarize(native, QUERY, PROTECT, missing="drop")
    kept = df.dropna(subset=["hours per week", "work class"])
    assert summary.rows == len(df) and summary.dropped == 4 and summary.kept == len(df) - 4
    assert summary.missing["hours per week"] == 3 and summary.missing["work class"] == 2
    assert_same_moments(summary.moments, GroupMoments.from_frame(kept, QUERY, PROTECT))


def test_missing_policy_and_other_errors(table):
    with pytest.raises(UnknownLabelError, match="missing: unknown value 'skip'"):
        dd.summarize(table, QUERY, PROTECT, missing="skip")
    with pytest.raises(InvalidParameterError, match=r"stats: unknown column 'agee' in data \(did you mean 'my age'\?\); available columns are"):
        dd.summarize(table, ["mean:agee"], PROTECT)
    with pytest.raises(InvalidTypeError, match="statistic 'mean:sex': mean needs a numeric column"):
        dd.summarize(table, ["mean:sex"], PROTECT)
    with pytest.raises(InvalidParameterError, match=r"operator '>' needs a numeric column, but 'income' holds "
                                                    r"labels; did you mean 'income=>50K'\?"):
        dd.summarize(table, ["mean:my age"], "income>50K")
    with pytest.raises(UnknownLabelError, match="'Femal' is not a value of column 'sex'"):
        dd.summarize(table, ["count:sex=Femal"], PROTECT)
    with pytest.raises(InvalidParameterError, match="column 'my age' is numeric"):
        dd.summarize(table, ["count:my age=old"], PROTECT)
    with pytest.raises(InvalidParameterError, match="is boolean; value must be true/false"):
        dd.summarize(table, ["count:veteran=maybe"], PROTECT)
    inf = table.assign(**{"hours per week": np.where(np.arange(len(table)) == 5, np.inf, table["hours per week"])})
    with pytest.raises(InvalidParameterError, match=r"columns \['hours per week'\] contain infinite values"):
        dd.summarize(inf, QUERY, PROTECT)
    with pytest.raises(InvalidParameterError, match="the table has no rows"):
        dd.summarize(table.iloc[:0], QUERY, PROTECT)
    with pytest.raises(InvalidParameterError, match="reserved by distpriv"):
        dd.summarize(table.assign(__dp_g=1), QUERY, PROTECT)


def test_string_labels_compare_as_text(tmp_path):
    """Label columns compare the cell text, as Condition.mask does (values never seen give 0, not an error)."""
    df = pd.DataFrame({"code": ["10", "x", "10", "y"], "v": [1.0, 2.0, 3.0, 4.0]})
    for native in (df, as_backend(df, "duckdb", tmp_path)):
        s = dd.summarize(native, ["count:code=10", "count:code!=x", "count:code=zzz"], "code=10")
        np.testing.assert_array_equal(s.values, [2.0, 3.0, 0.0])


def test_count_rows(table, tmp_path):
    for backend in ("pandas", "parquet-glob", "csv"):
        assert dd.count_rows(as_backend(table, backend, tmp_path)) == len(table)


def test_dask_partition_function_is_the_pandas_group_by():
    """The per-partition function of the Dask products pass (distpriv.data.aggregate._partial_products) against
    pandas' own group_by on one partition: sums, minima and maxima skip NaN and nulls (an all-missing group has
    sum 0 and min/max NaN), products are summed over the rows where both factors are present."""
    from distpriv.data.aggregate import OK, G, _partial_products, _v

    rng = np.random.default_rng(5)
    n = 40
    pdf = pd.DataFrame({G: rng.random(n) < 0.5, OK: rng.random(n) < 0.7,
                        _v(0): pd.array(rng.normal(size=n), dtype="Float64"), _v(1): rng.normal(size=n)})
    pdf.loc[~pdf[OK], _v(0)] = pd.NA  # incomplete rows: a null in the nullable column
    pdf.loc[~pdf[OK], _v(1)] = np.nan  # and a NaN in the numpy one
    extra = [("n", "len", None), ("s0", "sum", _v(0)), ("lo1", "min", _v(1)), ("hi0", "max", _v(0))]
    got = _partial_products(pdf, [G, OK], [(0, 0), (0, 1), (1, 1)], extra).set_index([G, OK]).sort_index()
    x = pdf.assign(**{_v(0): pdf[_v(0)].astype(float)})
    x["p00"], x["p01"], x["p11"] = x[_v(0)] ** 2, x[_v(0)] * x[_v(1)], x[_v(1)] ** 2
    want = x.groupby([G, OK]).agg(n=(_v(1), "size"), s0=(_v(0), "sum"), lo1=(_v(1), "min"), hi0=(_v(0), "max"),
                                  p00=("p00", "sum"), p01=("p01", "sum"), p11=("p11", "sum")).sort_index()
    assert list(got.index) == list(want.index) and len(got) == 4
    for col, ref in (("n", "n"), ("s0", "s0"), ("lo1", "lo1"), ("hi0", "hi0"), ("__dp_p0_0", "p00"),
                     ("__dp_p0_1", "p01"), ("__dp_p1_1", "p11")):
        np.testing.assert_allclose(got[col].to_numpy(dtype=float), want[ref].to_numpy(dtype=float), rtol=1e-12)
    assert got.loc[(True, False), "s0"] == 0.0 and np.isnan(got.loc[(False, False), "lo1"])
    assert _partial_products(pdf.iloc[:0], [G, OK], [(0, 1)], extra).empty
