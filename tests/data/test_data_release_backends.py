"""The new statistics (issue 22) released on every engine: the same seeded release publishes the same values.

A population whose groups the stratified subsample holds whole (at most
:data:`distpriv.release.data.SUBSAMPLE_ROWS` rows per group) gives every engine the same rows in a canonical order,
hence the same resampled datasets (:class:`distpriv.release.data.MomentSampler`): pandas, DuckDB (Parquet files),
Dask (a 2-worker LocalCluster) and Spark (local mode, when Java is present) must then publish the same values,
noise scales and intervals — for the linear statistics (histograms, group-by sums, counts and means, whose moments
are closed-form from one aggregate pass) and for the nonlinear ones (quantiles from their exact law on one
``GROUP BY`` of the grid, variances and ratios from the resampler). With larger groups the engines draw different
(equally distributed) subsamples, so the shape-based parts differ by sampling error (docs: statistics).
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from distpriv.release import protect

BASE: dict[str, Any] = {"protect": "income=>50K", "pairs": [(0.3, 0.5)], "epsilon": 1.0, "delta": 1e-3,
                        "samples": 400, "seed": 11}
LINEAR = ["hist:education", "hist:age@0,30,50,inf", "sum:hours@by=sex", "count:age>40@by=sex:Female|Male",
          "mean:hours@by=sex"]
NONLINEAR = ["median:age", "quantile:hours@0.9", "var:age", "std:hours", "ratio:sum(hours)/sum(age)", "mean:age"]
STATS = LINEAR + NONLINEAR  # one release per engine


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(21)
    size = 2500
    rich = rng.random(size) < 0.4
    age = np.where(rich, rng.integers(30, 70, size), rng.integers(18, 60, size))
    sex = np.where(rng.random(size) < np.where(rich, 0.3, 0.55), "Female", "Male")
    edu = rng.choice(["HS", "BSc", "MSc", "PhD"], size=size, p=[0.4, 0.3, 0.2, 0.1])
    hours = np.round(rng.normal(np.where(sex == "Male", 42, 36), 6)).astype(np.int64)
    pop = pd.DataFrame({"age": age, "sex": sex, "education": edu, "hours": hours,
                        "income": np.where(rich, ">50K", "<=50K")})
    return pop, pop.sample(250, random_state=4).reset_index(drop=True)


def _published(data: Any, population: Any, stats: list[str]) -> dict[str, Any]:
    res = protect(data, stats=stats, population=population, **BASE)
    doc = res.to_json()
    return {"mechanism": res.chosen.name, "guarantee": doc["guarantee"], "values": res.values,
            "statistics": [{k: st.get(k) for k in ("spec", "value", "noise_std", "interval")}
                           for st in doc["statistics"]]}


def _flat(stats: list[dict[str, Any]], key: str) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(s[key], dtype=float)) for s in stats])


def _assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got["mechanism"] == want["mechanism"]
    assert json.dumps(got["guarantee"], sort_keys=True) == json.dumps(want["guarantee"], sort_keys=True)
    assert [s["spec"] for s in got["statistics"]] == [s["spec"] for s in want["statistics"]]
    for key in ("value", "noise_std", "interval"):
        a, b = _flat(got["statistics"], key), _flat(want["statistics"], key)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(b).max())))


@pytest.fixture(scope="module")
def reference(frames) -> dict[str, Any]:
    pop, table = frames
    return _published(table, pop, STATS)


def test_duckdb_parquet_files_publish_the_pandas_values(frames, reference, tmp_path) -> None:
    pop, table = frames
    for i, part in enumerate(np.array_split(np.arange(len(pop)), 2)):  # two files: one scan over both
        pop.iloc[part].to_parquet(tmp_path / f"pop{i}.parquet", index=False)
    table.to_parquet(tmp_path / "data.parquet", index=False)
    _assert_same(_published(str(tmp_path / "data.parquet"), str(tmp_path / "pop*.parquet"), STATS), reference)


@pytest.mark.slow
def test_dask_publishes_the_pandas_values(dask_client, frames, reference) -> None:
    import dask.dataframe as ddf

    pop, table = frames
    _assert_same(_published(ddf.from_pandas(table, npartitions=2), ddf.from_pandas(pop, npartitions=3), STATS),
                 reference)


@pytest.mark.slow
def test_spark_publishes_the_pandas_values(spark, frames, reference) -> None:
    pop, table = frames
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyspark's notes about the pandas version
        data, population = spark.createDataFrame(table).repartition(2), spark.createDataFrame(pop).repartition(3)
    _assert_same(_published(data, population, STATS), reference)
