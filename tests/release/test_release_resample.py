"""The Poissonised multinomial sampler (distpriv.release.resample) has exactly the Multinomial(k; 1/s, …) law.

Statistical tests at fixed seeds: chi-square goodness of fit of the joint counts against the exact multinomial
pmf (cells with expected count >= 5 kept, the rest pooled), at level 1e-4, for the default Poisson rate and for
rates far below and above k/s (the correction of step 2, then of step 3, does all the work). A wrong correction
(e.g. removing balls uniformly over bins instead of over balls) shifts cell probabilities by O(1/k), which the
200,000 draws here resolve: see test_wrong_removal_is_detected.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from distpriv.release.resample import (
    POISSON_MIN_RATE,
    poisson_alias,
    poisson_table,
    resample_counts,
    uniform_multinomial,
)

DRAWS = 200_000


def _compositions(k: int, s: int) -> list[tuple[int, ...]]:
    if s == 1:
        return [(k,)]
    return [(i, *rest) for i in range(k + 1) for rest in _compositions(k - i, s - 1)]


def _gof_pvalue(w: np.ndarray, k: int, s: int) -> float:
    cells = _compositions(k, s)
    radix = (k + 1) ** np.arange(s)[::-1]  # a composition as a base-(k + 1) number
    codes = np.array([int(np.dot(c, radix)) for c in cells])
    order = np.argsort(codes)
    pos = np.searchsorted(codes[order], np.asarray(w, dtype=np.int64) @ radix)
    observed = np.bincount(order[pos], minlength=len(cells)).astype(float)
    probs = np.array([math.factorial(k) / math.prod(math.factorial(c) for c in cell) / s**k for cell in cells])
    expected = probs * w.shape[0]
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize("rate_factor", [None, 0.5, 1.0, 1.6])
def test_joint_law_is_multinomial(rate_factor):
    k, s = 40, 3
    rate = None if rate_factor is None else rate_factor * k / s
    w = uniform_multinomial(k, s, DRAWS, np.random.default_rng(11), rate=rate)
    assert w.shape == (DRAWS, s) and w.dtype == np.int64
    assert np.all(w.sum(axis=1) == k) and np.all(w >= 0)
    assert _gof_pvalue(w, k, s) > 1e-4


def test_moments_match_multinomial():
    k, s, n = 50_000, 200, 4_000
    w = uniform_multinomial(k, s, n, np.random.default_rng(5)).astype(float)
    p = 1.0 / s
    # mean of every count is k/s; the per-bin means over n draws have sd sqrt(k p (1 - p) / n)
    se = math.sqrt(k * p * (1 - p) / n)
    assert np.abs(w.mean(axis=0) - k * p).max() < 5 * se
    # variance k p (1 - p) and covariance -k p^2, averaged over bins (relative sd ~ sqrt(2 / (n s)))
    var = w.var(axis=0, ddof=1).mean()
    assert abs(var / (k * p * (1 - p)) - 1) < 6 * math.sqrt(2 / (n * s))
    c = np.cov(w[:, :2], rowvar=False)[0, 1]
    assert abs(c - (-k * p * p)) < 6 * k * p * (1 - p) / math.sqrt(n)


def test_wrong_removal_is_detected():
    """The test above has the power to see a plausible bug: removing balls bin-uniformly (not ball-uniformly)."""
    k, s = 40, 3
    g = np.random.default_rng(11)
    w = g.poisson(1.6 * k / s, size=(DRAWS, s))
    while True:  # one ball at a time, from a uniformly chosen non-empty bin of every row still over k
        over = np.flatnonzero(w.sum(axis=1) > k)
        if not over.size:
            break
        keys = np.where(w[over] > 0, g.random((over.size, s)), -1.0)
        w[over, keys.argmax(axis=1)] -= 1
    keep = w.sum(axis=1) == k
    assert _gof_pvalue(w[keep], k, s) < 1e-6


def test_resample_counts_switches_at_the_rate():
    s = 10
    small = resample_counts(int(POISSON_MIN_RATE * s) - 1, s, 3, np.random.default_rng(0))
    same = np.random.default_rng(0).multinomial(int(POISSON_MIN_RATE * s) - 1, np.full(s, 0.1), size=3)
    np.testing.assert_array_equal(small, same)  # below the threshold: numpy's stream, unchanged
    big = resample_counts(int(POISSON_MIN_RATE * s), s, 3, np.random.default_rng(0))
    np.testing.assert_array_equal(big, uniform_multinomial(int(POISSON_MIN_RATE * s), s, 3, np.random.default_rng(0)))
    assert big.dtype == float and np.all(big.sum(axis=1) == POISSON_MIN_RATE * s)


def test_edge_cases():
    g = np.random.default_rng(1)
    assert uniform_multinomial(0, 4, 3, g).sum() == 0
    np.testing.assert_array_equal(uniform_multinomial(7, 1, 2, g), [[7], [7]])
    assert uniform_multinomial(5, 3, 0, g).shape == (0, 3)
    with pytest.raises(ValueError):
        uniform_multinomial(-1, 3, 1, g)


def test_sampler_with_replacement_at_large_k_follows_the_closed_form() -> None:
    """MomentSampler.raw for a table modelled from itself with k/s >= POISSON_MIN_RATE (the Poissonised
    counts): mean and variance of F within sampling error of the closed-form moments (with replacement)."""
    import pandas as pd

    from distpriv.data import stratified_sample, summarize
    from distpriv.release.data import MomentSampler

    rng = np.random.default_rng(2)
    rich = rng.random(1500) < 0.45
    table = pd.DataFrame({"age": rng.gamma(4.0, 10.0, 1500) + 17 + 8 * rich,
                          "sex": np.where(rng.random(1500) < 0.4, "Female", "Male"),
                          "income": np.where(rich, ">50K", "<=50K")})
    q, protect, n = ["mean:age", "count:sex=Female"], "income=>50K", 200_000
    summary = summarize(table, q, protect)
    sub = stratified_sample(table, q, protect, 4000, seed=0, summary=summary)  # whole groups
    assert sub.sizes == tuple(int(c) for c in summary.moments.counts)
    sampler = MomentSampler(sub, summary.moments, n, replace=True, reference=200, seed=0)
    for theta in (0.3, 0.6):
        assert min(theta * n / sub.sizes[0], (1 - theta) * n / sub.sizes[1]) >= POISSON_MIN_RATE
        mu, cov = sampler.exact_moments(theta)
        raw = sampler.raw(theta, 4000, np.random.default_rng(9))
        assert np.all(np.abs(raw.mean(axis=0) - mu) < 4.5 * np.sqrt(np.diag(cov) / 4000))
        assert np.all(np.abs(raw.var(axis=0, ddof=1) / np.diag(cov) - 1) < 4.5 * np.sqrt(2 / 3999))


@pytest.mark.parametrize("lam", [0.3, 9.1, 250.0, 999.5, 1.0e5])
def test_poisson_alias_law(lam):
    """The alias-table Poisson draws (step 1) against scipy's Poisson pmf: chi-square goodness of fit at level
    1e-4 (cells with expected count >= 5, tails pooled), and mean/variance within 5 standard errors."""
    x = poisson_alias(lam, (DRAWS,), np.random.default_rng(17))
    assert x.dtype == np.int64 and x.min() >= 0
    lo, hi = int(stats.poisson.ppf(1e-7, lam)), int(stats.poisson.isf(1e-7, lam))
    j = np.arange(lo, hi + 1)
    expected = stats.poisson.pmf(j, lam) * DRAWS
    observed = np.bincount(np.clip(x, lo, hi) - lo, minlength=j.size).astype(float)
    expected[0] += stats.poisson.cdf(lo - 1, lam) * DRAWS  # tails pooled into the end cells
    expected[-1] += stats.poisson.sf(hi, lam) * DRAWS
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-4
    assert abs(x.mean() - lam) < 5 * math.sqrt(lam / DRAWS)
    assert abs(x.var(ddof=1) / lam - 1) < 5 * math.sqrt(2 / DRAWS + 1 / (lam * DRAWS))


@pytest.mark.parametrize("lam", [0.3, 9.1, 999.5, 1.0e5])
def test_poisson_alias_table_reproduces_the_pmf(lam):
    """The alias table's implied probabilities (prob[j] + Σ_{alias[i]=j} (1 − prob[i])) / K equal scipy's Poisson pmf
    on the table to 1e-9 relative or 1e-16 absolute, and the pmf mass off the table is < 1e-19 (Chernoff bound in
    poisson_alias's docstring)."""
    lo, prob, alias = poisson_table(lam)
    j = np.arange(lo, lo + prob.size)
    half = math.ceil(14 * math.sqrt(lam) + 30)
    assert lo == max(0, math.floor(lam) - half) and j[-1] == math.floor(lam) + half
    implied = (prob + np.bincount(alias, weights=1 - prob, minlength=j.size)) / j.size
    ref = stats.poisson.pmf(j, lam)
    np.testing.assert_allclose(implied, ref, rtol=1e-9, atol=1e-16)
    assert stats.poisson.cdf(lo - 1, lam) + stats.poisson.sf(j[-1], lam) < 1e-19


def test_poisson_alias_falls_back_when_the_table_exceeds_the_draws():
    """Few draws at a huge rate: numpy's Poisson sampler (its stream exactly), not a table of ~28,000 cells."""
    np.testing.assert_array_equal(poisson_alias(1.0e6, (3, 5), np.random.default_rng(4)),
                                  np.random.default_rng(4).poisson(1.0e6, size=(3, 5)))
    assert poisson_alias(0.0, (2, 3), np.random.default_rng(4)).tolist() == [[0] * 3] * 2
    with pytest.raises(ValueError):
        poisson_alias(-1.0, (2,), np.random.default_rng(4))
