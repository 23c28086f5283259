"""The audit's candidate thresholds: quantiles from one sort equal numpy's ``inverted_cdf`` quantiles (issue 25)."""

from __future__ import annotations

import numpy as np
import pytest

from distpriv.auditing import MAX_CANDIDATES, _candidates, _inverted_cdf


def _levels(n: int) -> np.ndarray:
    lv = np.geomspace(1.0 / n, 0.5, MAX_CANDIDATES // 2)
    return np.unique(np.clip(np.concatenate([lv, 1.0 - lv]), 0.0, 1.0))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000, 4097, 40_000])
def test_inverted_cdf_is_numpys(n: int) -> None:
    rng = np.random.default_rng(n)
    for s in (rng.normal(size=n), np.round(rng.normal(size=n), 1), np.where(rng.random(n) < 0.3, np.inf, 1.0)):
        for levels in (_levels(n), np.concatenate([rng.random(300), [0.0, 0.5, 1.0]])):
            want = np.quantile(s, levels, method="inverted_cdf")
            assert np.array_equal(_inverted_cdf(s, levels), want)
    s = rng.normal(size=n)
    s[0] = np.nan
    assert np.all(np.isnan(_inverted_cdf(s, _levels(n))))


def test_candidates_are_order_statistics_dense_in_both_tails() -> None:
    s = np.arange(40_000, dtype=float)[::-1]
    c = _candidates(s)
    # levels 1/n … 1 − 1/n: order statistics 1 … n − 1 (1-based), every one of the first and last few
    assert len(c) <= MAX_CANDIDATES and c[0] == 0.0 and c[-1] == 39_998.0
    assert np.all(np.isin(c, s)) and {0.0, 1.0, 2.0, 39_996.0, 39_997.0} <= set(c.tolist())
