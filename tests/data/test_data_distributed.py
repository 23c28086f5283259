"""Dask (2-worker LocalCluster) and PySpark (local mode) give the pandas path's results."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from _data_backends import mixed_table
from distpriv import data as dd
from distpriv.moments import GroupMoments, moment_model
from distpriv.queries import Predicate
from test_data_aggregate import PROTECT, QUERY, assert_same_moments
from test_data_fingerprint import python_fingerprints

KEY = bytes(range(100, 132))


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    df = mixed_table(4000, seed=7)
    df["hours per week"] = df["hours per week"].where(np.arange(len(df)) % 97 != 5)  # 42 NaNs
    return df


@pytest.fixture(scope="module")
def reference(table) -> GroupMoments:
    return GroupMoments.from_frame(table.dropna(subset=["hours per week"]), QUERY, PROTECT)


def _release_parameters(moments: GroupMoments) -> tuple[np.ndarray, dp.Guarantee]:
    model = moment_model(moments, [(0.45, 0.55)], 200)
    mech = dp.calibrate("expm-gauss", model, [(0.45, 0.55)], epsilon=1.0, delta=1e-3)
    return mech.noise_covariance, mech.guarantee


def _check_backend(native, table, reference) -> None:
    summary = dd.summarize(native, QUERY, PROTECT, missing="drop")
    assert_same_moments(summary.moments, reference)
    assert summary.dropped == 42 and summary.missing["hours per week"] == 42
    assert summary.passes == 2  # the centred pass for 'year' runs on the cluster too
    cov, guarantee = _release_parameters(summary.moments)
    cov_ref, guarantee_ref = _release_parameters(reference)
    np.testing.assert_allclose(cov, cov_ref, rtol=1e-7, atol=1e-12 * np.abs(cov_ref).max())
    assert (guarantee.epsilon, guarantee.delta) == (guarantee_ref.epsilon, guarantee_ref.delta)
    sub = dd.stratified_sample(native, QUERY, PROTECT, 300, seed=5, missing="drop", summary=summary)
    assert sub.sizes == (300, 300)
    np.testing.assert_allclose(sub.matrix, QUERY.column_matrix(sub.frame), rtol=1e-12)
    np.testing.assert_array_equal(sub.protected, Predicate(PROTECT).mask(sub.frame))
    again = dd.stratified_sample(native, QUERY, PROTECT, 300, seed=5, missing="drop", summary=summary)
    pd.testing.assert_frame_equal(sub.frame, again.frame)
    cols = ["my age", "sex", "income", "work class", "veteran", "year", "hours per week"]
    np.testing.assert_array_equal(dd.row_fingerprints(native, key=KEY, columns=cols),
                                  python_fingerprints(table[cols], KEY))


# --------------------------------------------------------------------------- Dask
# the `dask_client` and `spark` fixtures: tests/conftest.py (one session shared with test_data_release_backends.py)
def test_dask_local_cluster_matches_pandas(dask_client, table, reference):
    import dask.dataframe as ddf

    assert len(dask_client.scheduler_info()["workers"]) == 2
    frame = ddf.from_pandas(table, npartitions=4)
    assert dd.open_table(frame).backend == "dask"
    _check_backend(frame, table, reference)


def test_dask_keys_differ_between_partitions(dask_client):
    """Sampling keys come from default_rng([seed, partition]): identical partitions get different keys."""
    import dask.dataframe as ddf

    from distpriv.data.sample import KEY, _with_key

    same = pd.DataFrame({"x": np.zeros(50)})
    frame = ddf.concat([ddf.from_pandas(same, npartitions=1)] * 3)
    keys = _with_key(dd.open_table(frame), 9).collect().to_pandas()[KEY].to_numpy()
    assert keys.size == 150 and np.unique(keys).size == 150


def test_dask_parquet_dataset(dask_client, table, reference, tmp_path):
    import dask.dataframe as ddf

    for i, part in enumerate(np.array_split(np.arange(len(table)), 3)):
        table.iloc[part].to_parquet(tmp_path / f"p{i}.parquet", index=False)
    frame = ddf.read_parquet(str(tmp_path / "*.parquet"))
    summary = dd.summarize(frame, QUERY, PROTECT, missing="drop")
    assert_same_moments(summary.moments, reference)


# --------------------------------------------------------------------------- Spark
def test_spark_local_matches_pandas(spark, table, reference):
    plain = table.astype({"sex": str, "income": str})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyspark's notes about the pandas version
        frame = spark.createDataFrame(plain).repartition(3)
    assert dd.open_table(frame).backend == "pyspark"
    _check_backend(frame, table, reference)
