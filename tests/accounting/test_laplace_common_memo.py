"""The speed-ups of the common-factor bound and of the coupling bound keep their floats (issue 25, compare
speed-up): memoised values equal fresh computations, batched calls (densities, Φ, level splits) equal one call at a
time, and a constant that changes the corners is part of the memo key."""

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


def test_density_terms_in_one_call_equal_one_call_per_term() -> None:
    """gl_logpdf evaluates both terms of the density in one _gl_term call: the floats of one call per term."""
    rng = np.random.default_rng(5)
    for mu, s, b in [(0.0, 0.4, 1.0), (1.5, 3.0, 0.1), (-2.0, 1e-3, 4.0)]:
        y = np.concatenate([rng.normal(mu, 40.0 * (s + b), 400), [mu, -1e5, 1e5]])
        z = y - mu
        x1, x2 = z / s - s / b, -z / s - s / b
        base, half = -0.5 * (z / s) ** 2, s * s / (2 * b * b)
        t1 = lap._gl_term(z, x1, base, -1.0, half, b)
        t2 = lap._gl_term(z, x2, base, 1.0, half, b)
        assert np.array_equal(lap.gl_logpdf(y, mu, s, b), -np.log(2.0 * b) + np.logaddexp(t1, t2))


def test_l1_tail_with_unsaturated_ndtr_equals_full_ndtr(monkeypatch: pytest.MonkeyPatch) -> None:
    """l1_tail evaluates Φ only where it is not saturated (laplace._ndtr): the floats of evaluating it everywhere."""
    from scipy import special

    rng = np.random.default_rng(3)
    a = rng.normal(size=(5, 5))
    cov = a @ a.T / 5.0
    mean, scales = rng.normal(0.0, 2.0, 5), rng.uniform(3.0, 6.0, 5)
    s = np.linspace(0.0, 40.0, 801)
    got = lc.l1_tail(s, mean, cov, scales)
    monkeypatch.setattr(lap, "_ndtr", special.ndtr)
    ref = lc.l1_tail(s, mean, cov, scales)
    assert np.array_equal(got, ref)
    assert float(got.min()) < 1e-6 and float(got.max()) == 1.0  # the grid reaches both saturated ends


def test_memoised_candidates_and_shift_laws_equal_fresh_ones() -> None:
    """The bound reads its candidates of C and the laws of D from memos (a search scales the noise only): the
    arrays equal fresh computations, and they are read-only (no caller can change what the next one reads)."""
    rng = np.random.default_rng(9)
    a, b = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    sa, sb = a @ a.T / 4 + 0.3 * np.eye(4), b @ b.T / 4 + 0.2 * np.eye(4)
    dm = np.abs(rng.normal(size=4))
    memo = lc._candidates_of(sa.tobytes(), sb.tobytes(), 4, lc.BARRIER_MUS, lc.FRACTIONS)
    fresh = lc.candidates(sa, sb)
    assert len(memo) == len(fresh) >= 2
    for c_memo, c_fresh in zip(memo, fresh, strict=True):
        assert np.array_equal(c_memo, c_fresh) and not c_memo.flags.writeable
        mean, cov = lc.shift_law(dm, sa, sb, c_memo)
        sh = lap.coupling_shift(dm, sa - np.diag(c_fresh), np.zeros(4), sb - np.diag(c_fresh), np.eye(4))
        assert np.array_equal(mean, sh.mean) and np.array_equal(cov, sh.cov)
        assert not mean.flags.writeable and not cov.flags.writeable
        again = lc.shift_law(dm.copy(), sa.copy(), sb.copy(), c_fresh)
        assert again[0] is mean and again[1] is cov  # a hit: the very arrays


def test_batched_level_splits_equal_one_t0_at_a_time() -> None:
    """The coupling bound's two level splits (t0 and t0 + Σσ) in one bisection: the floats of one call per t0,
    also where a coordinate is deterministic (σ = 0) or a t0 leaves no room (None)."""
    rng = np.random.default_rng(21)
    for d in (3, 5, 6):
        for _ in range(4):
            mu, sd = rng.normal(0.0, 2.0, d), rng.uniform(0.1, 1.5, d)
            if d == 6:
                sd[2] = 0.0
            base = float(np.abs(mu).sum())
            t0s = (base * 1.05 + 0.2, base * 1.05 + 0.2 + float(sd.sum()), 0.5 * base)
            batched = lap._level_splits(mu, sd, t0s)
            single = [lap._level_split(mu, sd, t0) for t0 in t0s]
            assert batched[2] is None and single[2] is None
            for x, y in zip(batched[:2], single[:2], strict=True):
                assert x is not None and y is not None and np.array_equal(x, y)
            splits = lap._best_splits(mu.tobytes(), sd.tobytes(), t0s[:2])
            for t0, pi in zip(t0s[:2], splits, strict=True):
                assert np.array_equal(pi, lap._best_split(mu.tobytes(), sd.tobytes(), t0))
