"""Direct tests of :mod:`distpriv.release.data` (public behaviour): Table, predicates, MomentSampler, subsample sizes.

Every number is checked against a direct pandas computation on a small frame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from distpriv.queries import Predicate
from distpriv.release import data as rd

N_ROWS = 60


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 80, N_ROWS).astype(float), "hours": rng.normal(40, 8, N_ROWS),
                         "sex": rng.choice(["F", "M"], N_ROWS)})


QUERY = rd.build_query(["mean:age", "mean:hours", "proportion:sex=F"], ["age", "hours", "female"])


def _contributions(frame: pd.DataFrame) -> np.ndarray:
    """Per-record contributions of QUERY: the columns of the means, the indicator of the proportion."""
    return np.column_stack([frame["age"], frame["hours"], (frame["sex"] == "F").astype(float)])


def _direct_moments(frame: pd.DataFrame, mask: np.ndarray, k: int, n: int, *, replace: bool) -> tuple[np.ndarray, np.ndarray]:
    """E[F], Cov[F] of the mean of k rows of P and n − k rows of Q, drawn with / without replacement."""
    v = _contributions(frame)
    mu = np.zeros(3)
    cov = np.zeros((3, 3))
    for rows, c in ((v[mask], k), (v[~mask], n - k)):
        mu += c * rows.mean(axis=0)
        s = np.cov(rows, rowvar=False, ddof=0)
        fpc = 1.0 if replace else (len(rows) - c) / (len(rows) - 1)
        cov += c * s * fpc
    return mu / n, cov / n**2


def test_table_values_and_ranges_match_pandas(df: pd.DataFrame) -> None:
    t = rd.open_input(df, QUERY, Predicate("age > 40"), what="data")
    assert (t.rows, t.kept, t.label) == (N_ROWS, N_ROWS, "the data")
    np.testing.assert_allclose(t.values, [df["age"].mean(), df["hours"].mean(), (df["sex"] == "F").mean()], rtol=1e-12)
    assert t.summary.ranges["age"] == (df["age"].min(), df["age"].max())
    assert t.summary.ranges["hours"] == pytest.approx((df["hours"].min(), df["hours"].max()))
    # per-record sensitivities: range / n for means, 1 / n for the proportion
    np.testing.assert_allclose(t.summary.record_sensitivities(50),
                               [(df["age"].max() - df["age"].min()) / 50, (df["hours"].max() - df["hours"].min()) / 50,
                                1 / 50])


@pytest.mark.parametrize("text,mask", [
    ("age > 40", lambda d: d["age"] > 40),
    ("`age` <= 40", lambda d: d["age"] <= 40),
    ("sex=F", lambda d: d["sex"] == "F"),
    ("sex=F & hours > 40", lambda d: (d["sex"] == "F") & (d["hours"] > 40)),
])
def test_predicate_parsing_splits_the_groups_as_pandas_does(df: pd.DataFrame, text: str, mask) -> None:
    m = mask(df).to_numpy()
    t = rd.open_input(df, QUERY, Predicate(text), what="data")
    np.testing.assert_array_equal(t.summary.moments.counts, [m.sum(), (~m).sum()])
    np.testing.assert_allclose(t.summary.moments.sums[0], _contributions(df)[m].sum(axis=0), rtol=1e-12)


def test_predicates_matching_no_row_or_every_row_are_refused(df: pd.DataFrame) -> None:
    with pytest.raises(dp.InvalidParameterError, match="matches no row of the data"):
        rd.open_input(df, QUERY, Predicate("age > 200"), what="data")
    with pytest.raises(dp.InvalidParameterError, match="predicate .age>=0. matches every row of population; the share cannot vary"):
        rd.open_input(df, QUERY, Predicate("age >= 0"), what="population")


def test_pairs_must_give_different_protected_counts() -> None:
    assert rd.check_pairs_achievable([(0.4, 0.6)], 50) == {0.4: 20, 0.6: 30}
    with pytest.raises(dp.InvalidParameterError, match="both round to 5 protected records"):
        rd.check_pairs_achievable([(0.5, 0.51)], 10)


@pytest.mark.parametrize("population", [False, True])
def test_moment_sampler_matches_the_direct_moments(df: pd.DataFrame, population: bool) -> None:
    pred = Predicate("age > 40")
    mask = (df["age"] > 40).to_numpy()
    t = rd.open_input(df, QUERY, pred, what="data")
    n = 15  # <= 19 rows outside the predicate, so a population can supply every dataset
    mod = rd.model_f_theta(t, t if population else None, QUERY, pred, [(0.4, 0.6)], n=n, samples=300, rng=1,
                           subsample=12)
    assert mod.source == ("population" if population else "data") and mod.public == population
    for theta, k in ((0.4, 6), (0.6, 9)):
        mu, cov = _direct_moments(df, mask, k, n, replace=not population)
        emu, ecov = mod.sampler.exact_moments(theta)
        np.testing.assert_allclose(emu, mu, rtol=1e-10)
        np.testing.assert_allclose(ecov, cov, rtol=1e-8, atol=1e-14)
        # the model's samples have exactly those moments (moment matching), whatever the subsample
        x = mod.model.samples(theta)
        assert x.shape == (300, 3)
        np.testing.assert_allclose(x.mean(axis=0), mu, rtol=1e-9)
        np.testing.assert_allclose(np.cov(x, rowvar=False, ddof=1), cov, rtol=1e-6, atol=1e-12)
        # fresh draws go through the same affine map: their mean is μ up to the reference batch's sampling error
        fresh = mod.sampler(theta, 4000, np.random.default_rng(5))
        assert np.all(np.abs(fresh.mean(axis=0) - mu) <= 5 * np.sqrt(np.diag(cov) / 300))


@pytest.mark.parametrize("size,expected", [(10, (10, 10)), (30, (30, 19)), (100, (41, 19))])
def test_stratified_subsample_sizes(df: pd.DataFrame, size: int, expected: tuple[int, int]) -> None:
    pred = Predicate("age > 40")
    assert int((df["age"] > 40).sum()) == 41
    t = rd.open_input(df, QUERY, pred, what="data")
    mod = rd.model_f_theta(t, None, QUERY, pred, [(0.4, 0.6)], n=50, samples=100, rng=3, subsample=size)
    assert mod.subsample is not None
    assert mod.subsample.sizes == expected  # min(size, N_g) rows of each group
    np.testing.assert_array_equal(mod.subsample.population_counts, [41, 19])
    assert mod.subsample.matrix.shape == (sum(expected), 3)
    # the sampled rows are rows of the table, P rows first
    v = _contributions(df)
    rows = {tuple(r) for r in np.round(v, 12)}
    assert all(tuple(r) in rows for r in np.round(mod.subsample.matrix, 12))
    assert mod.subsample.protected[: expected[0]].all() and not mod.subsample.protected[expected[0]:].any()


def test_population_too_small_for_a_share_is_refused(df: pd.DataFrame) -> None:
    pred = Predicate("age > 40")
    t = rd.open_input(df, QUERY, pred, what="data")
    with pytest.raises(dp.InvalidParameterError, match="needs 20 records satisfying the predicate and 30 others"):
        rd.model_f_theta(t, t, QUERY, pred, [(0.4, 0.6)], n=50, samples=100, rng=3)


def test_public_seed_depends_only_on_the_canonical_public_inputs() -> None:
    a = rd.public_seed({"epsilon": 1.0, "pairs": [[0.4, 0.6]]})
    assert a == rd.public_seed({"pairs": [[0.4, 0.6]], "epsilon": 1.0})  # key order does not matter
    assert a != rd.public_seed({"epsilon": 2.0, "pairs": [[0.4, 0.6]]})
    assert 0 <= a < 2**64
