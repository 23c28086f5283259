"""The speed-ups of the common-factor bound keep its floats (issue 25, compare speed-up): the memoised corner
values equal fresh computations, the batched density calls equal one call per law, and a constant that changes
the corners is part of the memo key."""

from __future__ import annotations

import numpy as np
import pytest

from distpriv.accounting import laplace as lap
from distpriv.accounting import laplace_common as lc


def test_memoised_corner_equals_a_fresh_one() -> None:
    rng = np.random.default_rng(7)
    for _ in range(4):
        t = rng.uniform(0.0, 1.0, 4)
        c = rng.uniform(0.05, 0.5, 4)
        sc = rng.uniform(0.3, 1.5, 4)
        eps = float(rng.choice([0.2, 1.0]))
        first = lc.shifted_product_delta(t, c, sc, eps)
        again = lc.shifted_product_delta(t.copy(), list(c), tuple(sc), eps)  # other containers, same bits
        fresh = lc._shifted_product_delta(t, c, sc, eps)
        assert first == again == fresh
        assert 0.0 < fresh < 1.0


def test_tail_cells_switch_is_part_of_the_memo_key(monkeypatch: pytest.MonkeyPatch) -> None:
    t, c, sc = np.array([0.6, 0.9, 0.3, 0.5]), np.array([0.2, 0.3, 0.1, 0.25]), np.array([0.8, 1.0, 0.7, 1.2])
    fast = lc.shifted_product_delta(t, c, sc, 0.5)
    monkeypatch.setattr(lc, "TAIL_CELLS", False)
    full = lc.shifted_product_delta(t, c, sc, 0.5)
    assert full == lc._shifted_product_delta(t, c, sc, 0.5)
    assert full != fast  # the full window's cells give another (certified) value: not read from the memo


def test_paired_densities_equal_one_call_per_law() -> None:
    rng = np.random.default_rng(11)
    for mu_p, mu_q, s, b in [(0.0, 0.7, 0.4, 1.0), (-1.3, 2.1, 2.5, 0.2), (0.3, 0.3, 1e-3, 5.0)]:
        coord = lap.GaussLaplaceCoord(mu_p, s, mu_q, s, b)
        y = np.concatenate([rng.normal(0.0, 30.0 * (s + b), 300), [-1e4, 0.0, -0.0, 1e4]])
        fp, fq = coord._logpdfs(y)
        assert np.array_equal(fp, lap.gl_logpdf(y, mu_p, s, b))
        assert np.array_equal(fq, lap.gl_logpdf(y, mu_q, s, b))
    # unequal spreads: one call per law, as before
    coord = lap.GaussLaplaceCoord(0.0, 0.5, 1.0, 0.8, 1.0)
    y = rng.normal(0.0, 5.0, 50)
    fp, fq = coord._logpdfs(y)
    assert np.array_equal(fp, lap.gl_logpdf(y, 0.0, 0.5, 1.0)) and np.array_equal(fq, lap.gl_logpdf(y, 1.0, 0.8, 1.0))


def test_window_losses_equal_one_call_per_point() -> None:
    sc = lc.ShiftCoord(0.3, 0.8, 0.9, 1e-2)
    for y1, y2 in [(-3.0, 3.8), (-40.0, 41.0), (0.1, 0.2)]:
        got = sc._losses(y1, y2)
        for y, g in zip((y1, y2), got, strict=True):
            d = lap.gl_logpdf(np.array([y, y - 0.8]), 0.0, 0.3, 0.9)
            assert g == float(d[0] - d[1])
