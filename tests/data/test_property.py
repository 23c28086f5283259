"""PropertyModel: exact property counts, sampling without replacement, agreement with the slow reference."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import distpriv as dp
from distpriv.errors import InvalidParameterError, InvalidTypeError, UnknownLabelError
from distpriv.moments import sample_without_replacement
from distpriv.property import PropertyModel
from distpriv.queries import ADULT_QUERY, Query


@pytest.fixture(scope="module")
def pm(adult_model_part) -> PropertyModel:
    return PropertyModel(adult_model_part, "income=>50K", ADULT_QUERY, 100)


def _small_population() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "x": np.arange(20, dtype=float),
            "flag": pd.Categorical(["yes"] * 3 + ["no"] * 17),
        }
    )


# --------------------------------------------------------------------------- structure
def test_sub_populations(pm, adult_model_part):
    assert len(adult_model_part) == 25_222
    assert pm.satisfying.size + pm.other.size == 25_222
    assert pm.satisfying.size == int((adult_model_part["income"] == ">50K").sum())
    assert pm.matrix.shape == (25_222, 5)
    assert pm.achievable_range() == (0.0, 1.0)
    assert math.isclose(pm.population_share, pm.satisfying.size / 25_222)


def test_count_for(pm):
    assert pm.count_for(0.45) == 45
    assert pm.count_for(0.55) == 55
    assert pm.count_for(0.1 + 0.2) == 30  # 0.30000000000000004·100 is accepted as 30
    assert pm.count_for(0) == 0 and pm.count_for(1) == 100
    with pytest.raises(InvalidParameterError, match=r"p·n .* not an integer"):
        pm.count_for(0.455)
    for bad in (-0.1, 1.1):
        with pytest.raises(InvalidParameterError, match=r"\[0, 1\]"):
            pm.count_for(bad)
    with pytest.raises(InvalidParameterError, match="finite"):
        pm.count_for(float("nan"))
    with pytest.raises(InvalidTypeError, match="p"):
        pm.count_for("half")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- correctness
@pytest.mark.parametrize("p", [0.0, 0.3, 0.45, 0.55, 1.0])
def test_exact_counts_and_no_duplicates(pm, p):
    idx = pm.sample_indices(p, 500, rng=1)
    assert idx.shape == (500, 100) and idx.dtype == np.int64
    hits = pm.mask[idx].sum(axis=1)
    assert np.all(hits == round(p * 100))
    srt = np.sort(idx, axis=1)
    assert not np.any(srt[:, 1:] == srt[:, :-1])
    assert idx.min() >= 0 and idx.max() < 25_222


def test_sample_query_equals_query_on_sampled_rows(pm, adult_model_part):
    values = pm.sample_query(0.45, 200, rng=7)
    idx = pm.sample_indices(0.45, 200, rng=7)  # same seed -> same datasets
    assert values.shape == (200, 5)
    np.testing.assert_allclose(values, ADULT_QUERY.evaluate_rows(pm.matrix, idx), rtol=1e-12)
    for i in (0, 57, 199):  # independent pandas evaluation of a few datasets
        np.testing.assert_allclose(values[i], ADULT_QUERY.evaluate(adult_model_part.iloc[idx[i]]), rtol=1e-12)
    # counts are integers, the female count equals the number of sampled women
    assert np.all(values[:, 2:4] == np.round(values[:, 2:4]))


def test_chunked_sampling_is_consistent(pm, monkeypatch):
    import distpriv.moments as moments

    monkeypatch.setattr(moments, "_INDEX_CHUNK", 700)  # 7 datasets of n = 100 per chunk
    values = pm.sample_query(0.3, 50, rng=9)
    idx = pm.sample_indices(0.3, 50, rng=9)
    assert np.all(pm.mask[idx].sum(axis=1) == 30)
    np.testing.assert_allclose(values, ADULT_QUERY.evaluate_rows(pm.matrix, idx), rtol=1e-12)


def test_seeded_and_reproducible(pm):
    a = pm.sample_query(0.55, 100, rng=3)
    b = pm.sample_query(0.55, 100, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, pm.sample_query(0.55, 100, rng=4))


def test_moments_match_sampling_without_replacement_theory(pm):
    """E[F] and Var[F] of sums of k draws without replacement: Var = k σ² (N−k)/(N−1)."""
    size = 20_000
    for p in (0.45, 0.55):
        k = pm.count_for(p)
        values = pm.sample_query(p, size, rng=11)
        mean = np.zeros(5)
        var = np.zeros(5)
        for rows, draws in ((pm.satisfying, k), (pm.other, 100 - k)):
            v = pm.matrix[rows]
            pop = rows.size
            mean += draws * v.mean(axis=0)
            var += draws * v.var(axis=0) * (pop - draws) / (pop - 1)
        scale = ADULT_QUERY.scales(100)
        mean, var = mean * scale, var * scale**2
        se = np.sqrt(var / size)
        assert np.all(np.abs(values.mean(axis=0) - mean) < 4 * se), (values.mean(axis=0), mean)
        # the sample variance of N normal-ish values has relative s.e. ≈ sqrt(2/N) = 1%
        np.testing.assert_allclose(values.var(axis=0, ddof=1), var, rtol=0.06)


def test_agrees_with_slow_reference(pm):
    """Same θ, two implementations: means within 4 standard errors, spreads within 25%."""
    slow = pm.sample_query_reference(0.45, 300, rng=5)
    fast = pm.sample_query(0.45, 3000, rng=5)
    assert slow.shape == (300, 5)
    assert np.all(slow[:, 2:4] == np.round(slow[:, 2:4]))
    sd = fast.std(axis=0, ddof=1)
    se = sd * np.sqrt(1 / 300 + 1 / 3000)
    assert np.all(np.abs(slow.mean(axis=0) - fast.mean(axis=0)) < 4 * se)
    np.testing.assert_allclose(slow.std(axis=0, ddof=1), sd, rtol=0.25)


@pytest.mark.parametrize(("pool", "k"), [(6, 2), (12, 3), (7, 5), (5, 5), (9, 0)])
def test_subset_sampler_is_uniform(pool, k):
    """Every k-subset equally likely (chi-square), for both the redraw and the argpartition strategy."""
    size = 30_000
    draws = sample_without_replacement(pool, k, size, rng=2)
    assert draws.shape == (size, k)
    if k == 0:
        return
    srt = np.sort(draws, axis=1)
    assert not np.any(srt[:, 1:] == srt[:, :-1])
    subsets = {c: i for i, c in enumerate(itertools.combinations(range(pool), k))}
    codes = np.array([subsets[tuple(r)] for r in srt.tolist()])
    counts = np.bincount(codes, minlength=len(subsets))
    if len(subsets) > 1:
        assert stats.chisquare(counts).pvalue > 1e-3
    else:
        assert counts[0] == size


def test_subset_sampler_errors():
    with pytest.raises(InvalidParameterError, match="distinct"):
        sample_without_replacement(3, 4, 10)
    with pytest.raises(InvalidParameterError, match="pool"):
        sample_without_replacement(0, 0, 10)
    assert sample_without_replacement(4, 2, 0).shape == (0, 2)


# --------------------------------------------------------------------------- models
def test_empirical_and_gaussian_models(pm):
    emp = pm.empirical_model([0.45, 0.55], size=500, rng=0)
    assert isinstance(emp, dp.EmpiricalModel)
    assert emp.labels == (0.45, 0.55)
    assert emp.samples(0.45).shape == (500, 5)
    # higher income share -> fewer never-married records (Chen & Ohrimenko Figure 5 direction)
    assert emp.mean(0.55)[2] < emp.mean(0.45)[2]
    again = pm.empirical_model([0.45, 0.55], size=500, rng=0)
    np.testing.assert_array_equal(emp.samples(0.55), again.samples(0.55))
    gauss = pm.gaussian_model([0.45, 0.55], size=500, rng=0)
    assert isinstance(gauss, dp.GaussianModel)
    np.testing.assert_allclose(gauss.mean(0.45), emp.mean(0.45))
    np.testing.assert_allclose(gauss.covariance(0.55), emp.covariance(0.55))
    with pytest.raises(InvalidParameterError, match="distinct"):
        pm.empirical_model([0.45, 0.45])
    with pytest.raises(InvalidParameterError, match="not an integer"):
        pm.empirical_model([0.45, 0.555])
    with pytest.raises(InvalidParameterError, match="size"):
        pm.empirical_model([0.45], size=1)
    with pytest.raises(InvalidTypeError, match="ps"):
        pm.empirical_model(0.45)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- errors
def test_constructor_errors(adult_model_part):
    with pytest.raises(InvalidParameterError, match="n: must be >= 1"):
        PropertyModel(adult_model_part, "income=>50K", ADULT_QUERY, 0)
    with pytest.raises(InvalidParameterError, match="n: must be >= 1"):
        PropertyModel(adult_model_part, "income=>50K", ADULT_QUERY, -5)
    with pytest.raises(InvalidTypeError, match="n"):
        PropertyModel(adult_model_part, "income=>50K", ADULT_QUERY, 10.5)  # type: ignore[arg-type]
    with pytest.raises(UnknownLabelError, match=r"'salary'.*available columns"):
        PropertyModel(adult_model_part, "salary=>50K", ADULT_QUERY, 100)
    with pytest.raises(UnknownLabelError, match="'height'"):
        PropertyModel(adult_model_part, "income=>50K", Query(["mean:height"]), 100)
    with pytest.raises(InvalidParameterError, match="matches no record"):
        PropertyModel(adult_model_part, "age>200", ADULT_QUERY, 100)
    with pytest.raises(InvalidParameterError, match="matches every record"):
        PropertyModel(adult_model_part, "age>0", ADULT_QUERY, 100)
    with pytest.raises(InvalidTypeError, match="population"):
        PropertyModel(adult_model_part.to_numpy(), "income=>50K", ADULT_QUERY, 100)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="population"):
        PropertyModel(adult_model_part.iloc[:0], "income=>50K", ADULT_QUERY, 100)


def test_population_cannot_supply(pm):
    small = PropertyModel(_small_population(), "flag=yes", ["mean:x", "count:flag=yes"], 10)
    assert small.achievable_range() == (0.0, 0.3)
    assert small.count_for(0.3) == 3
    with pytest.raises(InvalidParameterError, match=r"needs 4 records .* only 3"):
        small.count_for(0.4)
    values = small.sample_query(0.3, 1000, rng=0)
    assert np.all(values[:, 1] == 3)
    # all three 'yes' rows (x = 0, 1, 2) are always present: x-sum = 3 + 7 of 17 others
    np.testing.assert_allclose(values[:, 0].mean() * 10, 3 + 7 * np.mean(np.arange(3, 20)), rtol=0.02)
    whole = PropertyModel(_small_population(), "flag=no", ["mean:x"], 20)
    assert whole.achievable_range() == (0.85, 0.85)
    np.testing.assert_allclose(whole.sample_query(0.85, 5, rng=0), 9.5)  # the whole population
    with pytest.raises(InvalidParameterError, match=r"needs 4 records not satisfying .* only 3.*smallest achievable p is 0.85"):
        whole.count_for(0.8)  # 16 'no' + 4 'yes', but only 3 'yes' exist
    with pytest.raises(InvalidParameterError, match="size"):
        pm.sample_query(0.45, 0)
