"""distpriv.stattests: χ² and binomial tails, D'Agostino–Pearson normaltest, two-sample KS without scipy.stats.

scipy.stats is the independent oracle. The agreement asserted is **bit-identical** (``==``),
not a tolerance: the module evaluates the same formulas with the same floating-point
operations in the same order (the moments with numpy's pairwise sums, logs with ``np.log``,
the χ² tail with ``scipy.special.chdtrc``, the KS recursions term by term), so any
difference means scipy changed its algorithm (checked with scipy 1.17). Closed forms and a
brute-force enumeration of the KS null distribution check the formulas independently of scipy.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import textwrap
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from distpriv import stattests
from distpriv.accounting.radius import min_samples, sample_l1_radius
from distpriv.stattests import (
    _ks_equal_n_sf,
    _ks_unequal_n_sf,
    binom_sf,
    chi2_sf,
    ks_2samp,
    ks_2samp_pvalue,
    normaltest,
    normaltest_pvalue,
)

KINDS = ("normal", "skewed", "heavy", "ties", "nearly_constant", "lognormal")


def _sample(rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
    if kind == "normal":
        return rng.normal(3.0, 2.0, size=n)
    if kind == "skewed":
        return rng.exponential(size=n)
    if kind == "heavy":
        return rng.standard_t(2, size=n)
    if kind == "ties":
        return rng.integers(0, 6, size=n).astype(float)
    if kind == "nearly_constant":
        return 1.0 + 1e-9 * rng.normal(size=n)
    return rng.lognormal(size=n)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


# --------------------------------------------------------------------------- χ²
def test_chi2_sf_matches_scipy_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        df = float(rng.choice([1, 2, 3, 6, 10, 0.5 * rng.integers(1, 40)]))
        x = float(rng.exponential(df * rng.uniform(0.2, 3.0)))
        assert chi2_sf(x, df) == float(stats.chi2.sf(x, df))


def test_chi2_sf_edges_follow_scipy() -> None:
    for x, df in [(-1.0, 2.0), (0.0, 3.0), (math.inf, 2.0), (math.nan, 2.0), (3.0, 0.0), (3.0, -1.0),
                  (1e-300, 1.0), (1e4, 3.0)]:
        assert _same(chi2_sf(x, df), float(stats.chi2.sf(x, df))), (x, df)
    assert chi2_sf(-1.0, 2.0) == 1.0 and chi2_sf(math.inf, 2.0) == 0.0 and math.isnan(chi2_sf(1.0, 0.0))


def test_chi2_two_degrees_of_freedom_is_exponential() -> None:
    """P(χ²₂ > x) = exp(−x/2) (closed form; rel. 1e-13 since chdtrc is an incomplete-gamma routine)."""
    for x in [1e-8, 0.1, 1.0, 2.5, 10.0, 50.0, 300.0]:
        assert chi2_sf(x, 2.0) == pytest.approx(math.exp(-x / 2), rel=1e-13)


# --------------------------------------------------------------------------- binomial tail and the order-statistic radius
def test_binom_sf_matches_scipy_bit_for_bit() -> None:
    rng = np.random.default_rng(2)
    for _ in range(2000):
        n = int(rng.integers(0, 10**6)) if rng.random() < 0.7 else int(rng.integers(0, 60))
        p = float(rng.choice([0.0, 1.0, rng.uniform(), 1 - 10 ** rng.uniform(-8, -1)]))
        k = int(rng.integers(-2, n + 3)) if rng.random() < 0.5 else int(round(n * p + rng.normal() * 3))
        assert binom_sf(k, n, p) == float(stats.binom.sf(k, n, p)), (k, n, p)
    assert binom_sf(3, 10, 1.5) != binom_sf(3, 10, 1.5)  # NaN outside [0, 1], as scipy
    assert binom_sf(2, 4, 0.5) == pytest.approx(5 / 16, rel=1e-15)  # P(Bin(4, 1/2) >= 3) = (4 + 1)/16


def _old_order_statistic_index(n: int, p: float, gamma: float) -> int:
    """sample_l1_radius's index as computed before (scipy.stats.binom.ppf/sf): the oracle."""
    k = int(stats.binom.ppf(1.0 - gamma, n, 1.0 - p))
    while k >= 1 and float(stats.binom.sf(k - 1, n, 1.0 - p)) <= gamma:
        k -= 1
    while float(stats.binom.sf(k, n, 1.0 - p)) > gamma:
        k += 1
    return k + 1


def test_sample_l1_radius_index_unchanged() -> None:
    """The least j with P(Bin(N, 1 − p) >= j) <= γ, as with scipy.stats, on random (N, p, γ)."""
    rng = np.random.default_rng(9)
    checked = 0
    while checked < 300:
        p, gamma = float(10 ** rng.uniform(-5, -0.3)), float(10 ** rng.uniform(-9, -0.05))
        need = min_samples(p, gamma)
        if need > 100_000:
            continue
        n = int(need + rng.integers(0, 2 * need + 50))
        r = sample_l1_radius(np.arange(n, dtype=float)[::-1], p, gamma)
        j = _old_order_statistic_index(n, p, gamma)
        assert (r.index, r.c) == (j, float(j - 1)), (n, p, gamma)
        checked += 1


# --------------------------------------------------------------------------- normaltest
@pytest.mark.parametrize("kind", KINDS)
def test_normaltest_matches_scipy_bit_for_bit(kind: str) -> None:
    rng = np.random.default_rng(KINDS.index(kind))
    for n in [20, 21, 33, 57, 100, 250, 999, 1000, 3000]:
        x = _sample(rng, kind, n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # scipy's precision-loss warning (nearly constant)
            ref = stats.normaltest(x)
        ours = normaltest(x)
        assert _same(ours.statistic, float(ref.statistic)), (kind, n)
        assert _same(ours.pvalue, float(ref.pvalue)), (kind, n)
        assert _same(normaltest_pvalue(x), float(ref.pvalue))


def test_normaltest_small_samples_and_edge_cases() -> None:
    """n < 8 → NaN (scipy: NaN + SmallSampleWarning); 8 <= n < 20 computed as scipy; NaN propagates."""
    rng = np.random.default_rng(7)
    for n in range(0, 8):
        assert all(math.isnan(v) for v in normaltest(rng.normal(size=n)))
    for n in range(8, 20):
        x = rng.normal(size=n)
        assert normaltest(x) == tuple(float(v) for v in stats.normaltest(x))
    x = rng.normal(size=50)
    x[7] = np.nan
    assert math.isnan(normaltest_pvalue(x)) and math.isnan(float(stats.normaltest(x).pvalue))
    assert math.isnan(normaltest_pvalue(np.full(30, 2.5)))  # m₂ = 0: skewness undefined, as scipy
    sym = np.repeat([0.0, 1.0], 40)  # skewness exactly 0: scipy's Y = 0 → 1 convention
    assert normaltest(sym) == tuple(float(v) for v in stats.normaltest(sym))
    assert normaltest(list(range(30))).pvalue == float(stats.normaltest(np.arange(30)).pvalue)
    with pytest.raises(ValueError, match="1-D"):
        normaltest(np.zeros((10, 2)))


def test_normaltest_known_value() -> None:
    """K² of a fixed sample against the Z formulas written out independently with math.*."""
    x = np.array([2.1, 3.4, 1.9, 5.6, 4.4, 3.3, 2.8, 7.1, 3.9, 4.0, 2.2, 3.1, 6.3, 2.9, 3.6, 4.8, 3.0, 5.1,
                  2.5, 3.8, 4.1, 9.0])
    n = x.size
    d = x - x.mean()
    m2, m3, m4 = (float(np.mean(d**k)) for k in (2, 3, 4))
    b1, b2 = m3 / m2**1.5, m4 / m2**2
    y = b1 * math.sqrt((n + 1) * (n + 3) / (6 * (n - 2)))
    beta2 = 3 * (n * n + 27 * n - 70) * (n + 1) * (n + 3) / ((n - 2) * (n + 5) * (n + 7) * (n + 9))
    w2 = -1 + math.sqrt(2 * (beta2 - 1))
    zs = math.asinh(y / math.sqrt(2 / (w2 - 1))) / math.sqrt(math.log(math.sqrt(w2)))
    e, v = 3 * (n - 1) / (n + 1), 24 * n * (n - 2) * (n - 3) / ((n + 1) ** 2 * (n + 3) * (n + 5))
    sb = 6 * (n * n - 5 * n + 2) / ((n + 7) * (n + 9)) * math.sqrt(6 * (n + 3) * (n + 5) / (n * (n - 2) * (n - 3)))
    a = 6 + 8 / sb * (2 / sb + math.sqrt(1 + 4 / sb**2))
    t = 1 + (b2 - e) / math.sqrt(v) * math.sqrt(2 / (a - 4))
    zk = (1 - 2 / (9 * a) - math.copysign(abs((1 - 2 / a) / t) ** (1 / 3), t)) / math.sqrt(2 / (9 * a))
    k2 = zs * zs + zk * zk
    got = normaltest(x)
    assert got.statistic == pytest.approx(k2, rel=1e-12)
    assert got.pvalue == pytest.approx(math.exp(-k2 / 2), rel=1e-12)


# --------------------------------------------------------------------------- Kolmogorov–Smirnov
def _ks_cases() -> list[tuple[str, int, int, int]]:
    sizes = [(20, 20), (20, 33), (57, 40), (100, 100), (250, 600), (1000, 1000), (1000, 1000), (999, 1000),
             (1000, 1500), (3000, 3000), (3000, 1499)]
    return [(kind, n1, n2, i) for i, kind in enumerate(KINDS) for n1, n2 in sizes]


@pytest.mark.parametrize(("kind", "n1", "n2", "seed"), _ks_cases())
def test_ks_2samp_matches_scipy_bit_for_bit(kind: str, n1: int, n2: int, seed: int) -> None:
    rng = np.random.default_rng(1000 * seed + n1 + 7 * n2)
    x = _sample(rng, kind, n1)
    # the same law (H₀), a shifted one and a rescaled one
    for y in (_sample(rng, kind, n2), _sample(rng, kind, n2) + 0.1 * np.std(x), 1.3 * _sample(rng, kind, n2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = stats.ks_2samp(x, y)
        ours = ks_2samp(x, y)
        assert ours.statistic == float(ref.statistic)
        assert ours.pvalue == float(ref.pvalue)
        assert ks_2samp_pvalue(y, x) == float(ref.pvalue)


def test_ks_2samp_small_and_tied_samples_match_scipy() -> None:
    rng = np.random.default_rng(11)
    for _ in range(400):
        n1 = int(rng.integers(1, 30))
        n2 = n1 if rng.random() < 0.5 else int(rng.integers(1, 30))
        top = int(rng.integers(1, 12))
        x, y = rng.integers(0, top, n1).astype(float), rng.integers(0, top, n2).astype(float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = stats.ks_2samp(x, y)
            ours = ks_2samp(x, y)
        assert (ours.statistic, ours.pvalue) == (float(ref.statistic), float(ref.pvalue)), (x, y)


def _brute_force_tail(n1: int, n2: int) -> dict[int, Fraction]:
    """P(L·D >= h) for every h, by enumerating all C(n1+n2, n1) orders of the merged sample."""
    lcm = n1 * n2 // math.gcd(n1, n2)
    counts: dict[int, int] = {}
    for first in itertools.combinations(range(n1 + n2), n1):
        chosen, c1, c2, h = set(first), 0, 0, 0
        for pos in range(n1 + n2):
            if pos in chosen:
                c1 += 1
            else:
                c2 += 1
            h = max(h, abs(c1 * (lcm // n1) - c2 * (lcm // n2)))
        counts[h] = counts.get(h, 0) + 1
    total = math.comb(n1 + n2, n1)
    return {h: Fraction(sum(c for g, c in counts.items() if g >= h), total) for h in range(lcm + 1)}


@pytest.mark.parametrize(("n1", "n2"), [(4, 5), (5, 5), (3, 6), (6, 4), (2, 7), (1, 3)])
def test_ks_exact_p_against_enumeration(n1: int, n2: int) -> None:
    """The exact p-value is P(D >= d) over the C(n1+n2, n1) equally likely orders (rel. 1e-13)."""
    tail = _brute_force_tail(n1, n2)
    lcm = n1 * n2 // math.gcd(n1, n2)
    for h in range(1, lcm + 1):  # L = n when n1 = n2
        p = _ks_equal_n_sf(n1, h) if n1 == n2 else _ks_unequal_n_sf(n1, n2, h)
        assert p == pytest.approx(float(tail[h]), rel=1e-13, abs=1e-300), (n1, n2, h)
    # and through the public function, on data realising every order
    for first in itertools.combinations(range(n1 + n2), n1):
        x = np.array(first, dtype=float)
        y = np.array(sorted(set(range(n1 + n2)) - set(first)), dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # h = 1, n1 = n2: the asymptotic fallback
            d = ks_2samp(x, y)
        h = round(d.statistic * lcm)
        if h == 0 or (n1 == n2 and h == 1):
            continue  # p = 1 (exact); h = 1 with n1 = n2 may fall back to the asymptotic law, as scipy
        assert d.pvalue == pytest.approx(float(tail[h]), rel=1e-13)


def test_ks_equal_n_closed_form_small_h() -> None:
    """Gnedenko–Korolyuk with explicit binomials for n = 30 (exact rationals)."""
    n = 30
    for h in range(1, n + 1):
        exact = 2 * sum(Fraction((-1) ** (k + 1) * math.comb(2 * n, n - k * h), math.comb(2 * n, n))
                        for k in range(1, n // h + 1))
        assert _ks_equal_n_sf(n, h) == pytest.approx(float(exact), rel=1e-13)


def test_ks_2samp_edge_cases_follow_scipy() -> None:
    x = np.arange(5.0)
    with pytest.warns(RuntimeWarning, match="unsuccessful"):  # exact p = 1 + 2⁻⁵² for h = 1: scipy falls back
        ours = ks_2samp(x, x + 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = stats.ks_2samp(x, x + 0.5)
    assert (ours.statistic, ours.pvalue) == (float(ref.statistic), float(ref.pvalue))
    assert ks_2samp(x, x) == (0.0, 1.0)
    assert ks_2samp([1.0], [2.0]) == (1.0, 1.0) == tuple(float(v) for v in stats.ks_2samp([1.0], [2.0])[:2])
    y = np.array([0.3, np.nan, 2.0])
    assert all(math.isnan(v) for v in ks_2samp(x, y))
    with pytest.raises(ValueError, match="empty"):
        ks_2samp(x, [])
    with pytest.raises(ValueError, match="1-D"):
        ks_2samp(np.zeros((3, 2)), x)


def test_ks_2samp_large_samples_use_the_asymptotic_law_like_scipy() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=stattests.KS_MAX_EXACT_N + 1), rng.normal(0.02, 1.0, size=7000)
    ref = stats.ks_2samp(x, y)
    assert ks_2samp(x, y) == (float(ref.statistic), float(ref.pvalue))
    x, y = rng.normal(size=stattests.KS_MAX_EXACT_N), rng.normal(0.02, 1.0, size=stattests.KS_MAX_EXACT_N - 1)
    ref = stats.ks_2samp(x, y)  # the largest exact case (lattice-path count)
    assert ks_2samp(x, y) == (float(ref.statistic), float(ref.pvalue))


# --------------------------------------------------------------------------- the release does not load scipy.stats
def test_release_assumption_tests_and_radius_do_not_import_scipy_stats() -> None:
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import distpriv as dp
        from distpriv.release.assumptions import diagnose_assumptions
        r = np.random.default_rng(0)
        model = dp.EmpiricalModel({0.45: r.normal(size=(300, 2)), 0.55: r.exponential(size=(400, 2))})
        diag = diagnose_assumptions(model, [(0.45, 0.55)], epsilon=1.0, delta=1e-3)
        assert {t.name for t in diag.tests.values()} == {"translation", "gaussian", "equal_covariance"}
        from distpriv.accounting.radius import sample_l1_radius  # the Approximate Wasserstein candidate's c
        assert sample_l1_radius(np.abs(r.normal(size=5000)), 1e-2, 1e-3).index == 4971  # scipy.stats.binom: 4971
        print(sorted(m for m in sys.modules if m == "scipy.stats" or m.startswith("scipy.stats.")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
