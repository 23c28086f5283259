"""Closed-form moment models of linear statistics: exact enumeration, Monte Carlo of the samplers, aggregates."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import distpriv as dp
from distpriv.errors import InvalidParameterError, InvalidTypeError
from distpriv.moments import GroupMoments, moment_model, protected_count
from distpriv.property import PropertyModel
from distpriv.queries import ADULT_QUERY, Query
from distpriv.release.data import bootstrap_sampler


# --------------------------------------------------------------------------- helpers
def _mc_check(samples: np.ndarray, mean: np.ndarray, cov: np.ndarray, alpha: float = 1e-3) -> dict:
    """z-scores of the Monte Carlo mean and covariance entries against the model, Bonferroni bound.

    Mean: z_j = (x̄_j − μ_j) / sqrt(Σ_jj / R), exact standard error under the model.
    Covariance: Ĉ_jl is the mean of the products (x_j − x̄_j)(x_l − x̄_l); its standard error is the
    products' standard deviation / sqrt(R) (valid for any distribution with finite fourth moments).
    The bound z* makes the chance that any of the K = m + m(m+1)/2 entries exceeds it ≤ alpha.
    """
    r, m = samples.shape
    xbar = samples.mean(axis=0)
    centred = samples - xbar
    z_mean = (xbar - mean) / np.sqrt(np.diag(cov) / r)
    z_cov = np.zeros((m, m))
    for j in range(m):
        for k in range(j, m):
            prod = centred[:, j] * centred[:, k]
            est = prod.sum() / (r - 1)
            se = prod.std(ddof=1) / math.sqrt(r)
            z_cov[j, k] = z_cov[k, j] = (est - cov[j, k]) / se
    entries = m + m * (m + 1) // 2
    z_star = float(stats.norm.isf(alpha / (2 * entries)))
    worst = max(float(np.abs(z_mean).max()), float(np.abs(z_cov[np.triu_indices(m)]).max()))
    return {"z_mean": z_mean, "z_cov": z_cov, "z_star": z_star, "worst": worst}


def _synthetic(n_p: int, n_q: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_p + n_q
    group = np.array(["yes"] * n_p + ["no"] * n_q)
    x = np.where(group == "yes", rng.gamma(2.0, 3.0, n) + 10, rng.normal(20, 4, n))
    y = 0.5 * x + rng.normal(0, 2, n)
    cat = rng.choice(["a", "b", "c"], n, p=[0.2, 0.3, 0.5])
    return pd.DataFrame({"x": x, "y y": y, "cat": cat, "g": group})


SYN_QUERY = Query(["mean:x", "sum:y y", "count:cat=a", "proportion:x>18"])


# --------------------------------------------------------------------------- exact enumeration
def test_without_replacement_matches_exact_enumeration():
    """Every dataset of k = 2 of 6 protected and 3 of 7 other records: exact mean and covariance of F."""
    df = _synthetic(6, 7, seed=3)
    gm = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    v = SYN_QUERY.column_matrix(df)
    pos, neg = np.flatnonzero(df["g"] == "yes"), np.flatnonzero(df["g"] != "yes")
    n, k = 5, 2
    values = np.array(
        [SYN_QUERY.reduce(v[list(a) + list(b)].sum(axis=0), n)
         for a in itertools.combinations(pos, k) for b in itertools.combinations(neg, n - k)]
    )
    assert values.shape == (math.comb(6, 2) * math.comb(7, 3), 4)
    mean, cov = gm.dataset_moments(k / n, n)
    np.testing.assert_allclose(mean, values.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(cov, np.cov(values, rowvar=False, ddof=0), rtol=1e-10, atol=1e-12)


def test_with_replacement_matches_exact_enumeration():
    """Every ordered draw of 2 protected (of 4) and 2 other (of 5) records with replacement."""
    df = _synthetic(4, 5, seed=4)
    gm = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    v = SYN_QUERY.column_matrix(df)
    pos, neg = np.flatnonzero(df["g"] == "yes"), np.flatnonzero(df["g"] != "yes")
    values = np.array(
        [SYN_QUERY.reduce(v[list(a) + list(b)].sum(axis=0), 4)
         for a in itertools.product(pos, repeat=2) for b in itertools.product(neg, repeat=2)]
    )
    mean, cov = gm.dataset_moments(0.5, 4, replace=True)
    np.testing.assert_allclose(mean, values.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(cov, np.cov(values, rowvar=False, ddof=0), rtol=1e-10, atol=1e-12)


def test_whole_group_drawn_has_no_variance_from_it():
    """k = N_P without replacement: the protected part is fixed, only Q contributes variance."""
    df = _synthetic(5, 30, seed=5)
    gm = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    _, cov_all = gm.dataset_sum_moments(5, 10, replace=False)
    _, cov_q = gm.dataset_sum_moments(0, 5, replace=False)
    np.testing.assert_allclose(cov_all, cov_q, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- Monte Carlo
def test_synthetic_without_replacement_monte_carlo_and_power():
    """PropertyModel on a small population where the finite-population correction halves the variance."""
    df = _synthetic(60, 140, seed=1)
    pm = PropertyModel(df, "g=yes", SYN_QUERY, 60)
    gm = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    samples = pm.sample_query(0.5, 20_000, rng=7)
    mean, cov = gm.dataset_moments(0.5, 60)
    res = _mc_check(samples, mean, cov)
    assert res["worst"] < res["z_star"], res
    # The same Monte Carlo refutes the with-replacement covariance (factor (60-30)/59 ≈ 0.51 missing):
    # the check has power.
    mean_r, cov_r = gm.dataset_moments(0.5, 60, replace=True)
    wrong = _mc_check(samples, mean_r, cov_r)
    assert wrong["worst"] > 10 * wrong["z_star"]


def test_synthetic_with_replacement_bootstrap_monte_carlo():
    """release.data.bootstrap_sampler (with replacement) against replace=True moments, and power."""
    df = _synthetic(80, 120, seed=2)
    gm = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    mask = (df["g"] == "yes").to_numpy()
    sampler = bootstrap_sampler(SYN_QUERY.column_matrix(df), mask, SYN_QUERY, 100)
    samples = sampler(0.4, 20_000, np.random.default_rng(11))
    mean, cov = gm.dataset_moments(0.4, 100, replace=True)
    res = _mc_check(samples, mean, cov)
    assert res["worst"] < res["z_star"], res
    wrong = _mc_check(samples, *gm.dataset_moments(0.4, 100, replace=False))
    assert wrong["worst"] > 10 * wrong["z_star"]  # the FPC would halve the variance (40 of 80 drawn)


@pytest.mark.parametrize("p", [0.45, 0.55])
def test_adult_property_model_monte_carlo(adult_model_part, p):
    """Chen & Ohrimenko's setting: n = 100 Adult records, income share p, Table 1 query (without replacement)."""
    pm = PropertyModel(adult_model_part, "income=>50K", ADULT_QUERY, 100)
    gm = GroupMoments.from_frame(adult_model_part, ADULT_QUERY, "income=>50K")
    samples = pm.sample_query(p, 20_000, rng=int(p * 100))
    mean, cov = gm.dataset_moments(p, 100)
    res = _mc_check(samples, mean, cov)
    assert res["worst"] < res["z_star"], res


def test_adult_bootstrap_monte_carlo(adult_model_part):
    """A 2,000-row Adult table modelled from itself (n = all rows, with replacement), as `release` does."""
    table = adult_model_part.iloc[:2000]
    mask = (table["income"] == ">50K").to_numpy()
    gm = GroupMoments.from_frame(table, ADULT_QUERY, "income=>50K")
    sampler = bootstrap_sampler(ADULT_QUERY.column_matrix(table), mask, ADULT_QUERY, 2000)
    samples = sampler(0.45, 8000, np.random.default_rng(5))
    res = _mc_check(samples, *gm.dataset_moments(0.45, 2000, replace=True))
    assert res["worst"] < res["z_star"], res


# --------------------------------------------------------------------------- aggregates
def test_aggregates_views_and_statistics():
    df = _synthetic(30, 50, seed=6)
    gm = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    v = SYN_QUERY.column_matrix(df)
    mask = (df["g"] == "yes").to_numpy()
    assert gm.counts.tolist() == [30, 50] and gm.rows == 80 and gm.share == 30 / 80
    np.testing.assert_allclose(gm.means[0], v[mask].mean(axis=0))
    np.testing.assert_allclose(gm.covariances[1], np.cov(v[~mask], rowvar=False, ddof=0), atol=1e-10)
    np.testing.assert_allclose(gm.cross_products[0], v[mask].T @ v[mask], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(gm.statistics(), SYN_QUERY.evaluate(df), rtol=1e-12)


def test_from_cross_products_with_shift_round_trips():
    df = _synthetic(30, 50, seed=7)
    gm = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    v = SYN_QUERY.column_matrix(df)
    mask = (df["g"] == "yes").to_numpy()
    shift = np.array([v[mask][0], v[~mask][3]])
    sums = np.array([(v[mask] - shift[0]).sum(0), (v[~mask] - shift[1]).sum(0)])
    cross = np.array([(v[mask] - shift[0]).T @ (v[mask] - shift[0]), (v[~mask] - shift[1]).T @ (v[~mask] - shift[1])])
    again = GroupMoments.from_cross_products(SYN_QUERY, gm.counts, sums, cross, shift=shift)
    np.testing.assert_allclose(again.sums, gm.sums, rtol=1e-12)
    np.testing.assert_allclose(again.scatter, gm.scatter, rtol=1e-9, atol=1e-9)


def test_merge_equals_whole():
    df = _synthetic(30, 50, seed=8)
    whole = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    a = GroupMoments.from_frame(df.iloc[:33], SYN_QUERY, "g=yes")
    b = GroupMoments.from_frame(df.iloc[33:], SYN_QUERY, "g=yes")
    merged = a.merge(b)
    np.testing.assert_array_equal(merged.counts, whole.counts)
    np.testing.assert_allclose(merged.sums, whole.sums, rtol=1e-12)
    np.testing.assert_allclose(merged.scatter, whole.scatter, rtol=1e-10, atol=1e-9)


def test_moment_model_labels_and_rounding():
    df = _synthetic(300, 700, seed=9)
    gm = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    model = moment_model(gm, [(0.45, 0.55), (0.55, 0.65)], 101)
    assert model.labels == (0.45, 0.55, 0.65)
    assert isinstance(model, dp.GaussianModel)
    # θ = 0.45 with n = 101 is realised with round(45.45) = 45 protected records
    assert protected_count(0.45, 101) == 45
    mean_u, _ = gm.dataset_sum_moments(45, 101, replace=False)
    np.testing.assert_allclose(model.mean(0.45), mean_u * SYN_QUERY.scales(101), rtol=1e-12)
    # a Gaussian-model mechanism calibrates from it
    mech = dp.calibrate("expm-gauss", model, [(0.45, 0.55)], epsilon=1.0, delta=1e-3)
    assert mech.guarantee.epsilon == 1.0


def test_errors():
    df = _synthetic(10, 20, seed=10)
    gm = GroupMoments.from_frame(df, SYN_QUERY, "g=yes")
    with pytest.raises(InvalidParameterError, match=r"theta: property share must be in \[0, 1\]"):
        gm.dataset_moments(1.5, 10)
    with pytest.raises(InvalidParameterError, match=r"needs 15 records of the protected group, but the table has 10"):
        gm.dataset_moments(0.5, 30)
    gm.dataset_moments(0.5, 30, replace=True)  # with replacement any k works
    with pytest.raises(InvalidParameterError, match="n: must be >= 1"):
        gm.dataset_moments(0.5, 0)
    with pytest.raises(InvalidTypeError, match="sums: expected shape"):
        GroupMoments(SYN_QUERY, np.array([1, 2]), np.zeros((2, 3)), np.zeros((2, 4, 4)))
    with pytest.raises(InvalidTypeError, match="counts"):
        GroupMoments(SYN_QUERY, np.array([1.0, 2.0]), np.zeros((2, 4)), np.zeros((2, 4, 4)))
    with pytest.raises(InvalidParameterError, match="negative variance"):
        GroupMoments(SYN_QUERY, np.array([2, 2]), np.zeros((2, 4)), -np.ones((2, 4, 4)))
    empty_q = GroupMoments.from_rows(SYN_QUERY.column_matrix(df), np.ones(30, dtype=bool), SYN_QUERY)
    with pytest.raises(InvalidParameterError, match="other group, but the table has none"):
        empty_q.dataset_moments(0.5, 4, replace=True)
    with pytest.raises(InvalidTypeError, match="pairs"):
        moment_model(gm, "0.4,0.5", 10)


# --------------------------------------------------------------------------- one f_θ stack (issue 24 item 3)
def test_property_model_and_release_share_the_closed_form_f_theta():
    """PropertyModel (numpy aggregates of an in-memory population) and the release's modelling (the data
    layer's engine aggregates, :func:`distpriv.release.data.model_f_theta`) give the same exact moments
    of f_θ, and the release's moment-matched samples have exactly those moments."""
    from distpriv.moments import DatasetSampler
    from distpriv.queries import Predicate
    from distpriv.release.data import MomentSampler, model_f_theta, open_input

    df = _synthetic(70, 130, seed=3)
    pm = PropertyModel(df, "g=yes", SYN_QUERY, 50)
    pred = Predicate("g=yes")
    pop = open_input(df, SYN_QUERY, pred, what="population")
    mod = model_f_theta(pop, pop, SYN_QUERY, pred, [(0.3, 0.5)], n=50, samples=400, rng=np.random.default_rng(0))
    assert isinstance(mod.sampler, MomentSampler) and isinstance(mod.sampler, DatasetSampler)
    gauss = pm.moment_model([0.3, 0.5])
    for p in (0.3, 0.5):
        mean, cov = pm.exact_moments(p)
        # independent formula: k (resp. n − k) draws without replacement, Var = c S (N − c)/(N − 1) per group
        want_mean, want_cov = np.zeros(4), np.zeros((4, 4))
        for rows, c in ((pm.satisfying, round(p * 50)), (pm.other, 50 - round(p * 50))):
            v = pm.matrix[rows]
            want_mean += c * v.mean(axis=0)
            want_cov += c * np.cov(v, rowvar=False, ddof=0) * (len(rows) - c) / (len(rows) - 1)
        s = SYN_QUERY.scales(50)
        np.testing.assert_allclose(mean, want_mean * s, rtol=1e-12)
        np.testing.assert_allclose(cov, want_cov * np.outer(s, s), rtol=1e-10, atol=1e-12)
        rel_mean, rel_cov = mod.sampler.exact_moments(p)
        np.testing.assert_allclose(rel_mean, mean, rtol=1e-10)
        np.testing.assert_allclose(rel_cov, cov, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(gauss.mean(p), mean, rtol=1e-12)
        np.testing.assert_allclose(gauss.covariance(p), cov, rtol=1e-12)
        ref = mod.model.samples(p)
        np.testing.assert_allclose(ref.mean(axis=0), mean, rtol=1e-9)
        np.testing.assert_allclose(np.cov(ref, rowvar=False), cov, rtol=1e-7, atol=1e-9)


def test_dataset_sampler_with_replacement_whole_group_and_refusals():
    """DatasetSampler(replace=True) may draw more rows of a group than it holds; without replacement the
    whole group is the only dataset; an empty group or a share outside [0, 1] is refused."""
    from distpriv.moments import DatasetSampler

    v = np.array([[1.0], [2.0], [4.0]])
    mask = np.array([True, True, False])
    q = Query(["sum:x"])
    gm = GroupMoments.from_rows(v, mask, q)
    s = DatasetSampler(v[mask], v[~mask], gm, 4, replace=True)
    draws = s.raw(0.75, 20_000, np.random.default_rng(1))  # 3 of {1, 2} with replacement + one 4
    assert set(np.unique(draws)) <= {7.0, 8.0, 9.0, 10.0}
    mean, cov = s.exact_moments(0.75)
    assert mean[0] == pytest.approx(3 * 1.5 + 4) and cov[0, 0] == pytest.approx(3 * 0.25)
    assert abs(draws.mean() - mean[0]) < 4 * math.sqrt(cov[0, 0] / 20_000)
    whole = DatasetSampler(v[mask], v[~mask], gm, 3, replace=False)
    np.testing.assert_array_equal(whole.raw(2 / 3, 5, 0), 7.0)
    with pytest.raises(InvalidParameterError, match="protected group"):
        whole.raw(1.0, 5, 0)  # 3 protected records without replacement, the group has 2
    with pytest.raises(InvalidParameterError, match="outside"):
        s.raw(1.5, 5, 0)
