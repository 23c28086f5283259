"""The reference batches of every θ from one set of keys (issue 21: a 10-pair ``--range`` costs little more than one).

:func:`distpriv.release.data.shared_weighted_draws` draws one matrix of uniform keys per group for all k and reads
every k-subset off it (the k smallest keys of a row). Checked here, independently of that code:

* each k alone is an exact sample of its law: every subset of C(s, k) equally likely (χ² test at a fixed seed),
  and the sums' mean and variance equal the closed forms k·m̄ and k(1 − k/s)·S² (without replacement), k·σ²
  (with replacement), within tolerances from the sample size;
* the draws of a k are those of the same k drawn alone from the same generator (k = 0, k = s, k > s and with
  replacement included; the same subsets, sums equal to rounding), so :class:`~distpriv.release.data.MomentSampler` can replay a θ's reference batch;
* :meth:`MomentSampler.prepare` for all θ gives the batches of θ prepared one at a time, and
  ``raw(p, reference, reference_rng())`` replays them (the quantile layout's ranks rely on it).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from distpriv.data import stratified_sample, summarize
from distpriv.release.data import MomentSampler, shared_weighted_draws, weighted_draws
from distpriv.release.layout import RecordingSampler

S = 6  # rows of the small matrices whose subsets are enumerated
DRAWS = 20_000


def _subset_codes(draws: np.ndarray) -> np.ndarray:
    return np.rint(draws[:, 0]).astype(np.int64)


@pytest.mark.parametrize("wide", [False, True], ids=["gathered", "matrix-product"])
def test_each_k_is_a_uniform_k_subset_and_the_ks_are_nested(wide: bool) -> None:
    """Row weights read back through a matrix that identifies the subset: 2^j in one column (the summed path) or
    the identity (wider than the gather limit: the W @ mat path). Every k-subset has probability 1/C(S, k)."""
    mat = np.eye(S) if wide else (2.0 ** np.arange(S))[:, None]
    ks = [1, 2, 3, 5, S]
    out = shared_weighted_draws(mat, ks, DRAWS, np.random.default_rng(11), replace=False)
    codes = {k: (out[k] @ 2.0 ** np.arange(S) if wide else out[k][:, 0]).round().astype(np.int64) for k in ks}
    if wide:  # each row is a 0/1 vector with exactly k ones
        for k in ks:
            assert set(np.unique(out[k])) <= {0.0, 1.0} and np.all(out[k].sum(axis=1) == k)
    for k in ks:
        expected = sorted(sum(2**j for j in c) for c in itertools.combinations(range(S), k))
        values, counts = np.unique(codes[k], return_counts=True)
        assert values.tolist() == expected if k < S else values.tolist() == [2**S - 1]
        if len(expected) > 1:  # χ² goodness of fit to the uniform law on the C(S, k) subsets
            p = stats.chisquare(counts).pvalue
            assert p > 1e-6, (k, p, counts)
    for a, b in itertools.pairwise(ks):  # nested: the a smallest keys are among the b smallest
        assert np.all(codes[a] & codes[b] == codes[a])


def _finite_population_check(draws: np.ndarray, col: np.ndarray, k: int, *, replace: bool) -> None:
    s, n = col.size, draws.shape[0]
    mean = k * col.mean()
    var = k * col.var(ddof=0) if replace else k * (1 - k / s) * col.var(ddof=1)
    assert abs(draws.mean() - mean) < 4.5 * math.sqrt(var / n), (k, draws.mean(), mean)
    assert abs(draws.var(ddof=1) / var - 1) < 4.5 * math.sqrt(2 / (n - 1)) + 0.02, (k, draws.var(ddof=1), var)


@pytest.mark.parametrize("replace", [False, True])
def test_moments_of_every_k_match_the_closed_form(replace: bool) -> None:
    g = np.random.default_rng(3)
    col = g.normal(10.0, 3.0, 400)
    mat = np.column_stack([col, g.random(400) < 0.3])
    ks = [0, 40, 200, 399, 400] + ([900] if replace else [])
    out = shared_weighted_draws(mat, ks, 2500 if replace else 4000, np.random.default_rng(5), replace=replace)
    assert np.all(out[0] == 0.0)
    for k in ks[1:]:
        if not replace and k == 400:
            np.testing.assert_allclose(out[k], np.broadcast_to(mat.sum(axis=0), out[k].shape))  # every row
            continue
        _finite_population_check(out[k][:, 0], col, k, replace=replace)


@pytest.mark.parametrize("replace", [False, True])
def test_a_k_drawn_with_others_is_the_k_drawn_alone(replace: bool) -> None:
    g = np.random.default_rng(4)
    mat = g.normal(size=(50, 3))
    ks = [0, 7, 20, 49, 50, 64]  # 64 > 50 rows: with replacement even without (a subsample smaller than k)
    together = shared_weighted_draws(mat, ks, 300, np.random.default_rng(8), replace=replace)
    for k in ks:
        alone = weighted_draws(mat, k, 300, np.random.default_rng(8), replace=replace)
        np.testing.assert_allclose(together[k], alone, rtol=1e-12, atol=1e-9)
    # and the generator is left in the same state whatever ks is (the next group's draws do not move)
    g1, g2 = np.random.default_rng(8), np.random.default_rng(8)
    shared_weighted_draws(mat, ks, 300, g1, replace=replace)
    weighted_draws(mat, 7, 300, g2, replace=replace)
    assert g1.random() == g2.random()


# --------------------------------------------------------------------------- MomentSampler
THETAS = (0.1, 0.2, 0.35, 0.5)
N = 300


@pytest.fixture(scope="module")
def population() -> tuple[pd.DataFrame, list[str], str]:
    rng = np.random.default_rng(2)
    rich = rng.random(3000) < 0.4
    table = pd.DataFrame({"age": rng.gamma(4.0, 10.0, 3000) + 17 + 8 * rich,
                          "sex": np.where(rng.random(3000) < 0.4, "Female", "Male"),
                          "income": np.where(rich, ">50K", "<=50K")})
    return table, ["mean:age", "count:sex=Female"], "income=>50K"


def _sampler(population: tuple[pd.DataFrame, list[str], str], cls: type[MomentSampler] = MomentSampler
             ) -> MomentSampler:
    table, q, protect = population
    summary = summarize(table, q, protect)
    sub = stratified_sample(table, q, protect, 500, seed=0, summary=summary)
    return cls(sub, summary.moments, N, replace=False, reference=400, seed=7)


def test_prepare_for_all_thetas_equals_one_at_a_time_and_replays(population) -> None:
    together = _sampler(population)
    together.prepare(THETAS)
    for p in THETAS:
        alone = _sampler(population)
        # the same subsets; the sums may differ in the last bits (summed in another order)
        np.testing.assert_allclose(together.reference_samples(p), alone.reference_samples(p), rtol=1e-12)
        # the raw draws of reference_rng() replay the batch: mapped, they are the reference samples
        xbar, a, mu, ref = together._maps[together._k(p)]
        raw = together.raw(p, together.reference, together.reference_rng())
        np.testing.assert_allclose(mu + (raw - xbar) @ a, ref, rtol=1e-12, atol=1e-9)
        # matched exactly to the closed-form moments, each θ on its own
        m, c = together.exact_moments(p)
        np.testing.assert_allclose(ref.mean(axis=0), m, rtol=1e-9)
        np.testing.assert_allclose(np.cov(ref, rowvar=False), c, rtol=1e-7, atol=1e-9 * np.abs(c).max())


def test_recording_sampler_replays_the_reference_draws(population) -> None:
    rec = _sampler(population, RecordingSampler)
    assert isinstance(rec, RecordingSampler)
    rec.setup([0], [N // 2])
    plain = _sampler(population)
    for p in (0.0, *THETAS):  # θ = 0 too: no protected record, the generator still advances the same way
        x, ranks = rec.raw_with_ranks(p, rec.reference, rec.reference_rng())
        np.testing.assert_allclose(x, plain.raw(p, plain.reference, plain.reference_rng()), rtol=1e-12, atol=1e-9)
        assert ranks.shape == (rec.reference, 1)
