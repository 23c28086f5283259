"""protect()/release at scale: every table read by its engine, closed-form f_θ moments, input options."""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from _cli import run_in_process
from distpriv.errors import DistPrivError, InvalidParameterError, InvalidTypeError
from distpriv.release import protect
from distpriv.release.core import prepare
from distpriv.release.spec import ReleaseSpec

BASE = dict(protect="income=>50K", pairs=[(0.45, 0.55)], epsilon=1.0, delta=1e-3)


def people(n: int, seed: int, start: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rich = rng.random(n) < 0.45
    return pd.DataFrame({
        "id": np.arange(start, start + n),
        "income": np.where(rich, ">50K", "<=50K"),
        "age": np.round(rng.normal(40, 10, n) + 5 * rich),
        "sex": np.where(rng.random(n) < 0.3 + 0.15 * rich, "Female", "Male"),
    })


@pytest.fixture(scope="module")
def pop() -> pd.DataFrame:
    return people(3000, 1, start=10_000)  # each group fits in the subsample: engines agree exactly


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return people(300, 2)


def _same_release(a, b) -> None:  # noqa: ANN001
    ja, jb = a.to_json(), b.to_json()
    assert ja["mechanism"] == jb["mechanism"]
    assert ja["guarantee"] == jb["guarantee"]
    assert ja["noise"] == jb["noise"]
    assert [s["noise_std"] for s in ja["statistics"]] == [s["noise_std"] for s in jb["statistics"]]
    np.testing.assert_array_equal(a.values, b.values)  # seeded: same truth, same noise


def test_model_has_the_closed_form_moments_and_the_raw_draws_follow_the_sampler(table, pop) -> None:
    res = protect(table, stats=["mean:age", "count:sex=Female"], population=pop, samples=400, seed=1, **BASE)
    m = res.prepared.modelling
    fit = m.model.to_gaussian()  # of the standardised statistics D⁻¹F (release/standardize.py)
    sampler, d = m.sampler.base, m.sampler.scale
    np.testing.assert_allclose(d, res.prepared.standardization.scale, rtol=0)
    for theta in (0.45, 0.55):
        mu, cov = sampler.exact_moments(theta)
        np.testing.assert_allclose(fit.mean(theta) * d, mu, rtol=1e-12)
        np.testing.assert_allclose(fit.covariance(theta) * np.outer(d, d), cov, rtol=1e-9)
        # independent check of the closed form: datasets drawn without replacement from the population
        rng = np.random.default_rng(7)
        k = round(theta * 300)
        v = np.column_stack([pop.age.to_numpy(float), (pop.sex == "Female").to_numpy(float)])
        rich = (pop.income == ">50K").to_numpy()
        draws = np.array([
            np.concatenate([v[rng.choice(np.flatnonzero(rich), k, replace=False)],
                            v[rng.choice(np.flatnonzero(~rich), 300 - k, replace=False)]]).sum(axis=0)
            for _ in range(2000)]) * [1 / 300, 1.0]
        se = np.sqrt(np.diag(cov) / 2000)
        assert np.all(np.abs(draws.mean(axis=0) - mu) < 4.5 * se)
        assert np.all(np.abs(draws.var(axis=0, ddof=1) / np.diag(cov) - 1) < 4.5 * np.sqrt(2 / 1999))
        # raw draws of the sampler (no moment matching): the sampler's law, within sampling error
        raw = sampler.raw(theta, 4000, np.random.default_rng(3))
        assert np.all(np.abs(raw.mean(axis=0) - mu) < 4.5 * np.sqrt(np.diag(cov) / 4000))
        ratio = raw.var(axis=0, ddof=1) / np.diag(cov)
        assert np.all(np.abs(ratio - 1) < 4.5 * np.sqrt(2 / 3999))
    np.testing.assert_allclose(res.prepared.data.values, [table.age.mean(), (table.sex == "Female").sum()])


def test_same_release_from_pandas_polars_duckdb_and_files(tmp_path, table, pop) -> None:
    import duckdb
    import polars as pl

    kw = dict(stats=["mean:age", "count:sex=Female"], samples=200, seed=5, **BASE)
    ref = protect(table, population=pop, **kw)
    table.to_csv(tmp_path / "t.csv", index=False)
    for i, part in enumerate(np.array_split(np.arange(len(pop)), 3)):
        pop.iloc[part].to_parquet(tmp_path / f"pop-{i}.parquet", index=False)
    con = duckdb.connect()
    runs = {
        "polars": protect(pl.from_pandas(table), population=pl.from_pandas(pop).lazy(), **kw),
        "duckdb": protect(con.from_df(table), population=con.from_df(pop), **kw),
        "files": protect(str(tmp_path / "t.csv"), population=str(tmp_path / "pop-*.parquet"), **kw),
    }
    for res in runs.values():
        _same_release(ref, res)


def test_same_release_on_a_dask_local_cluster(table, pop) -> None:
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    kw = dict(stats=["mean:age", "count:sex=Female"], samples=200, seed=5, **BASE)
    ref = protect(table, population=pop, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, distributed.Client(cluster):
            res = protect(dd.from_pandas(table, npartitions=2), population=dd.from_pandas(pop, npartitions=3), **kw)
            ledger = res.ledger()
    _same_release(ref, res)
    assert ledger.own.rows == len(table) and ledger.own.fingerprints.size == len(table)


@pytest.mark.skipif(sys.platform != "linux", reason="local Spark is tested on Linux")
def test_same_release_on_pyspark_when_available(table, pop) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'distpriv[spark]')")
    import shutil

    if shutil.which("java") is None:
        pytest.skip("no Java runtime")
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        kw = dict(stats=["mean:age", "count:sex=Female"], samples=200, seed=5, **BASE)
        ref = protect(table, population=pop, **kw)
        res = protect(spark.createDataFrame(table), population=spark.createDataFrame(pop), **kw)
        _same_release(ref, res)
    finally:
        spark.stop()


def test_backtick_quoted_column_names(table, pop) -> None:
    ren = {"income": "in=come", "age": "weight (g)", "sex": "a:b"}
    res = protect(table.rename(columns=ren), stats=["mean:`weight (g)`", "count:`a:b`=Female"],
                  protect="`in=come`=>50K", pairs=[(0.45, 0.55)], epsilon=1.0, delta=1e-3,
                  population=pop.rename(columns=ren), samples=200, seed=5)
    ref = protect(table, population=pop, stats=["mean:age", "count:sex=Female"], samples=200, seed=5, **BASE)
    np.testing.assert_array_equal(res.prepared.data.values, ref.prepared.data.values)
    assert res.to_json()["mechanism"] == ref.to_json()["mechanism"]


def test_missing_values_error_names_column_and_count_or_are_dropped(table, pop) -> None:
    holes = table.copy()
    holes.loc[[3, 5, 8], "age"] = np.nan
    with pytest.raises(InvalidParameterError, match=r"age \(3\)"):
        protect(holes, stats=["mean:age"], population=pop, samples=50, **BASE)
    # the kept count depends on the data (here possibly on the secret): it must be declared public (review)
    with pytest.raises(InvalidParameterError, match=r"3 rows were dropped.*n="):
        protect(holes, stats=["mean:age"], population=pop, samples=50, missing="drop", **BASE)
    res = protect(holes, stats=["mean:age"], population=pop, samples=50, missing="drop", n=len(table) - 3, **BASE)
    assert res.prepared.modelling.n == len(table) - 3
    assert res.prepared.data.values[0] == pytest.approx(holes.age.mean())  # pandas skips NaN: same rows
    assert res.prepared.data.rows == len(table)  # the ledger fingerprints every row read


def test_unsupported_frame_and_unknown_label_give_short_errors(table, pop) -> None:
    with pytest.raises(InvalidTypeError, match="pandas, Polars"):
        protect({"age": [1, 2]}, stats=["mean:age"], population=pop, **BASE)
    cats = pop.assign(code=pd.Categorical([f"c{i % 100_000}" for i in range(len(pop))],
                                          categories=[f"c{i}" for i in range(100_000)]))
    with pytest.raises(DistPrivError) as err:
        protect(table.assign(code="c1"), stats=["count:code=nope"], population=cats, **BASE)
    assert len(str(err.value)) < 400 and "… and 99990 more" in str(err.value)


def test_cli_sep_encoding_missing_glob_and_bad_input(tmp_path, table, pop) -> None:
    odd = table.assign(sex=np.where(table.sex == "Female", "Fémale", "Male"))
    odd.to_csv(tmp_path / "t.csv", sep=";", encoding="latin-1", index=False)
    odd.to_csv(tmp_path / "t-utf8.csv", index=False)
    pop.assign(sex=np.where(pop.sex == "Female", "Fémale", "Male")).to_csv(tmp_path / "pop.csv", index=False)
    for i, part in enumerate(np.array_split(np.arange(len(pop)), 2)):
        pop.iloc[part].to_parquet(tmp_path / f"p{i}.parquet", index=False)
    pop.iloc[:10].drop(columns="age").to_parquet(tmp_path / "q-0.parquet", index=False)
    pop.iloc[10:].to_parquet(tmp_path / "q-1.parquet", index=False)
    common = ["--stat", "mean:age", "--stat", "count:sex=Fémale", "--protect", "income=>50K", "--pairs", "0.45,0.55",
              "--epsilon", "1", "--delta", "1e-3", "--samples", "100", "--seed", "3", "--format", "json"]
    plain = ["--stat", "mean:age", *common[4:12], "--format", "json"]  # no count, no seed
    good = {
        # --sep/--encoding apply to every CSV input (issue 23): the UTF-8, comma-separated population overrides them
        "latin-1": ["release", "t.csv", "--sep", ";", "--encoding", "latin-1", "--population", "pop.csv",
                    "--population-sep", ",", "--population-encoding", "utf-8", *common],
        "utf-8": ["release", "t-utf8.csv", "--population", "pop.csv", *common],
        "glob": ["release", "t-utf8.csv", "--population", "p*.parquet", *plain],
    }
    bad = {
        "glob matching nothing": (["release", "t-utf8.csv", "--population", "none-*.parquet"], "no file matches"),
        "column missing from some files": (["release", "t-utf8.csv", "--population", "q-*.parquet"],
                                           "column 'age' is missing from 1 of 2 files"),
        "missing values": (["release", "holes.csv", "--population", "pop.csv"], "age (2)"),
        "bad --missing": (["release", "t-utf8.csv", "--population", "pop.csv", "--missing", "keep"], "--missing"),
        "engine error": (["release", "t-utf8.csv", "--population", "broken.parquet"], "engine error"),
    }
    odd.assign(age=[np.nan, np.nan, *odd.age[2:]]).to_csv(tmp_path / "holes.csv", index=False)
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really parquet")
    runs = {**{k: v for k, v in good.items()}, **{k: [*v[0], *plain, "--out", "never"] for k, v in bad.items()}}
    # through the console script's entry point in-process, with the warnings a fresh process shows
    # (_cli.run_in_process: a process each added only its ~1-3 s CPU of imports, issue 26; the console script's own
    # one line and exit status end to end: tests/release/test_release.py)
    done = {name: ((r.stdout, r.stderr), r.returncode)
            for name, r in ((name, run_in_process(args, tmp_path, fresh_warnings=True)) for name, args in runs.items())}
    for name in good:
        assert done[name][1] == 0, (name, done[name][0][1])
    ja, jb = (json.loads(done[k][0][0]) for k in ("latin-1", "utf-8"))
    assert [s["value"] for s in ja["statistics"]] == [s["value"] for s in jb["statistics"]]
    for name, (_, needle) in bad.items():
        (stdout, stderr), code = done[name]
        assert code == 2 and stdout == "", (name, stderr)
        assert stderr.count("\n") == 1 and "Traceback" not in stderr, (name, stderr)
        assert needle in stderr and len(stderr) < 600, (name, stderr)
    assert not (tmp_path / "never").exists()


def test_prepare_accepts_an_engine_frame_directly(table, pop) -> None:
    import polars as pl

    spec = ReleaseSpec(data=None, stats=("mean:age",), population_frame=pop, samples=50, **BASE)  # type: ignore[arg-type]
    prep = prepare(spec, data=pl.from_pandas(table))
    assert prep.data.source.backend == "polars" and prep.data.kept == len(table)


def test_translation_mechanism_claims_hold_when_the_exact_covariances_differ() -> None:
    """Independent review finding: a count whose variance differs across θ (hypergeometric draws from a
    population where the groups differ in the share of women) is not a translation; a two-sample test on
    the model's samples cannot see the 1-2% variance gap, so ExpM (L) claimed (1, 0) at the paper's scale.
    The claim is checked here against the independent oracle on the Gaussian law with moments computed by
    hand (two hypergeometric sums, finite-population correction)."""
    from profile_oracle import NoiseLaw, output_delta

    n_pop, n = 10_000, 2000
    rich = np.arange(n_pop) < 4200
    female = np.where(rich, np.arange(n_pop) % 5 == 0, np.arange(n_pop) % 2 == 0)  # 20% vs 50% women
    pop = pd.DataFrame({"income": np.where(rich, ">50K", "<=50K"), "sex": np.where(female, "Female", "Male")})
    table = pop.sample(n, random_state=3).reset_index(drop=True)
    res = protect(table, stats=["count:sex=Female"], population=pop, mechanism="expm-laplace", samples=200, seed=1,
                  **BASE)
    doc = res.to_json()
    g = doc["guarantee"]

    def moments(theta: float) -> tuple[float, float]:
        mu = var = 0.0
        for k, size, p in ((round(theta * n), 4200, 0.2), (n - round(theta * n), 5800, 0.5)):
            mu += k * p
            var += k * p * (1 - p) * (size - k) / (size - 1)
        return mu, var

    (ma, va), (mb, vb) = moments(0.45), moments(0.55)
    assert abs(va - vb) / va > 0.01  # the gap the test cannot see
    b = doc["statistics"][0]["noise_std"] / np.sqrt(2.0)
    # the paper's scale Δ/ε with a pure claim is what the review refuted: either more noise or a δ > 0
    assert b > abs(ma - mb) * (1 + 1e-9) or float(g["delta"]) > 0
    law = NoiseLaw("laplace", np.array([[2 * b * b]]), np.eye(1), np.array([b]))
    prof = output_delta([ma], [[va]], [mb], [[vb]], law, float(g["epsilon"]))
    assert not prof.violates(float(g["delta"])), (prof.delta, g)
