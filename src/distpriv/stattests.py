"""The hypothesis tests and tails the release uses, without importing ``scipy.stats``.

``import scipy.stats`` costs ~1 s (it builds every distribution's docstring) and the
release needs only four things from it (the assumption tests of
:mod:`distpriv.release.assumptions` and the order-statistic radius of
:mod:`distpriv.accounting.radius`). They are computed here from their formulas with numpy and
:mod:`scipy.special` (cheap, already loaded) and follow ``scipy.stats``' default conventions
(scipy 1.17: 1-D input, ``axis=0``, ``nan_policy="propagate"``, ``ks_2samp(method="auto")``),
so that the release's output does not change:

* :func:`chi2_sf` — the χ² upper tail, ``scipy.stats.chi2.sf``;
* :func:`binom_sf` — the binomial upper tail, ``scipy.stats.binom.sf`` (for the order-statistic
  radius of :mod:`distpriv.accounting.radius`, also on the release path);
* :func:`normaltest` — D'Agostino–Pearson's omnibus K² test, ``scipy.stats.normaltest``;
* :func:`ks_2samp` — the two-sided two-sample Kolmogorov–Smirnov test with its exact
  null distribution, ``scipy.stats.ks_2samp``.

Only the asymptotic Kolmogorov–Smirnov p-value (max(n₁, n₂) > :data:`KS_MAX_EXACT_N`, or
when the exact computation fails) imports ``scipy.stats`` (lazily, for ``kstwo.sf``).
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

#: ``ks_2samp(method="auto")`` is exact when max(n₁, n₂) <= this (scipy's ``MAX_AUTO_N``).
KS_MAX_EXACT_N = 10_000

_EPS = float(np.finfo(np.float64).eps)


class TestStatistic(NamedTuple):
    """A test statistic and its p-value."""

    statistic: float
    pvalue: float


# --------------------------------------------------------------------------- χ²
def chi2_sf(x: float, df: float) -> float:
    """Upper tail P(χ²_df > x) = Q(df/2, x/2), the regularized upper incomplete gamma function.

    Same values as ``scipy.stats.chi2.sf(x, df)`` (bit for bit): it is ``scipy.special.chdtrc(df, x)``
    on the support x > 0, 1 for x <= 0, 0 at x = +∞ and NaN for NaN x or df <= 0.
    For df = 2 it is exp(−x/2).
    """
    x, df = float(x), float(df)
    if not df > 0 or math.isnan(x):
        return math.nan
    if x <= 0:
        return 1.0
    if math.isinf(x):
        return 0.0
    return float(special.chdtrc(df, x))


def binom_sf(k: int, n: int, p: float) -> float:
    """Upper tail P(Bin(n, p) > k) = I_p(k + 1, n − k), the regularized incomplete beta function.

    The identity Σ_{i>k} C(n, i) p^i (1−p)^{n−i} = I_p(k+1, n−k) (0 <= k < n) is e.g.
    Abramowitz & Stegun 26.5.24. Same values as ``scipy.stats.binom.sf(k, n, p)`` for integer
    k, n >= 0 and p in [0, 1] (bit for bit: both are Boost's ``ibeta``, via
    ``scipy.special.betainc``): 1 for k < 0, 0 for k >= n; NaN for n < 0 or p outside [0, 1].
    """
    k, n, p = int(k), int(n), float(p)
    if n < 0 or not 0 <= p <= 1:
        return math.nan
    if k < 0:
        return 1.0
    if k >= n:
        return 0.0
    return float(special.betainc(k + 1, n - k, p))


# --------------------------------------------------------------------------- normality
def _central_moments(a: NDArray[np.float64]) -> tuple[np.float64, np.float64, np.float64, np.float64]:
    """The mean and the biased central moments m_k = (1/n) Σ (a_i − ā)^k, k = 2, 3, 4."""
    mean = np.float64(np.mean(a))
    d = a - mean
    d2 = d**2
    return mean, np.float64(np.mean(d2)), np.float64(np.mean(d2 * d)), np.float64(np.mean(d2**2))


def _skew_z(b1: np.float64, n: np.float64) -> np.float64:
    """D'Agostino's (1970) normal approximation Z(√b₁) of the sample skewness √b₁ = m₃/m₂^{3/2}.

    D'Agostino, "Transformation to normality of the null distribution of g₁", Biometrika 57
    (1970) 679–681: with Y = √b₁ · ((n+1)(n+3)/(6(n−2)))^{1/2},
    β₂(√b₁) = 3(n²+27n−70)(n+1)(n+3)/((n−2)(n+5)(n+7)(n+9)), W² = −1 + (2(β₂(√b₁) − 1))^{1/2},
    δ = 1/(ln W)^{1/2} and α = (2/(W² − 1))^{1/2},

        Z = δ · ln(Y/α + ((Y/α)² + 1)^{1/2})     (= δ · asinh(Y/α)).

    Like scipy's ``skewtest``, Y = 0 (exactly symmetric data) is replaced by Y = 1.
    """
    y = b1 * np.sqrt(((n + 1) * (n + 3)) / (6.0 * (n - 2)))
    beta2 = 3.0 * (n**2 + 27 * n - 70) * (n + 1) * (n + 3) / ((n - 2.0) * (n + 5) * (n + 7) * (n + 9))
    w2 = -1 + np.sqrt(2 * (beta2 - 1))
    delta = 1 / np.sqrt(0.5 * np.log(w2))
    alpha = np.sqrt(2.0 / (w2 - 1))
    if y == 0:
        y = np.float64(1.0)
    ya = y / alpha
    return np.float64(delta * np.log(ya + np.sqrt(ya**2 + 1)))


def _kurtosis_z(b2: np.float64, n: np.float64) -> np.float64:
    """Anscombe & Glynn's (1983) normal approximation Z(b₂) of the sample kurtosis b₂ = m₄/m₂².

    Anscombe & Glynn, "Distribution of the kurtosis statistic b₂ for normal samples",
    Biometrika 70 (1983) 227–234, Eqs. 1–5: E b₂ = 3(n−1)/(n+1),
    var b₂ = 24n(n−2)(n−3)/((n+1)²(n+3)(n+5)), x = (b₂ − E b₂)/(var b₂)^{1/2},
    √β₁(b₂) = 6(n²−5n+2)/((n+7)(n+9)) · (6(n+3)(n+5)/(n(n−2)(n−3)))^{1/2},
    A = 6 + (8/√β₁)(2/√β₁ + (1 + 4/β₁)^{1/2}) and

        Z = [(1 − 2/(9A)) − ((1 − 2/A)/(1 + x(2/(A−4))^{1/2}))^{1/3}] / (2/(9A))^{1/2},

    the cube root taken with the sign of its argument; NaN when 1 + x(2/(A−4))^{1/2} = 0.
    """
    mean_b2 = 3.0 * (n - 1) / (n + 1)
    var_b2 = 24.0 * n * (n - 2) * (n - 3) / ((n + 1) * (n + 1.0) * (n + 3) * (n + 5))
    x = (b2 - mean_b2) / var_b2**0.5
    sqrt_beta1 = 6.0 * (n * n - 5 * n + 2) / ((n + 7) * (n + 9)) * (
        (6.0 * (n + 3) * (n + 5)) / (n * (n - 2) * (n - 3))) ** 0.5
    a = 6.0 + 8.0 / sqrt_beta1 * (2.0 / sqrt_beta1 + (1 + 4.0 / (sqrt_beta1**2)) ** 0.5)
    term1 = 1 - 2 / (9.0 * a)
    denom = 1 + x * (2 / (a - 4.0)) ** 0.5
    if denom == 0:
        return np.float64(np.nan)
    term2 = np.sign(denom) * ((1 - 2.0 / a) / np.abs(denom)) ** (1 / 3)
    return np.float64((term1 - term2) / (2 / (9.0 * a)) ** 0.5)


def normaltest(x: ArrayLike) -> TestStatistic:
    """D'Agostino–Pearson omnibus test of normality: K² = Z(√b₁)² + Z(b₂)², p = P(χ²₂ > K²) = exp(−K²/2).

    D'Agostino & Pearson, "Tests for departure from normality. Empirical results for the
    distributions of b₂ and √b₁", Biometrika 60 (1973) 613–622; D'Agostino, Belanger &
    D'Agostino, "A suggestion for using powerful and informative tests of normality",
    The American Statistician 44 (1990) 316–321. Z(√b₁) is :func:`_skew_z` (D'Agostino 1970),
    Z(b₂) is :func:`_kurtosis_z` (Anscombe & Glynn 1983), with the biased moments
    m_k = (1/n) Σ (x_i − x̄)^k.

    Matches ``scipy.stats.normaltest(x)`` (scipy 1.17; bit for bit on float64 data, as the
    tests check) for 1-D data, with its conventions: the data are converted to float64; a NaN
    in the data gives NaN (``nan_policy="propagate"``); NaN when m₂ <= (ε·x̄)² (the data are
    constant up to rounding). Small samples: n < 8 gives (NaN, NaN) — scipy returns the same
    with a ``SmallSampleWarning``; this function does not warn. For 8 <= n < 20 the value is
    computed but the normal approximations are poor (D'Agostino et al. recommend n >= 20;
    the release calls it only with n >= 20).
    """
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"normaltest: expected 1-D data, got shape {a.shape}")
    if a.size < 8:
        return TestStatistic(math.nan, math.nan)
    n = np.float64(a.size)
    mean, m2, m3, m4 = _central_moments(a)
    with np.errstate(all="ignore"):
        degenerate = bool(m2 <= (_EPS * mean) ** 2)
        b1 = np.float64(np.nan) if degenerate else np.float64(m3 / m2**1.5)
        b2 = np.float64(np.nan) if degenerate else np.float64(m4 / m2**2.0)
        zs = _skew_z(b1, n)
        zk = _kurtosis_z(b2, n)
        k2 = zs * zs + zk * zk
    return TestStatistic(float(k2), float(special.chdtrc(2.0, k2)))


def normaltest_pvalue(x: ArrayLike) -> float:
    """p-value of :func:`normaltest` (``scipy.stats.normaltest(x).pvalue``)."""
    return normaltest(x).pvalue


# --------------------------------------------------------------------------- Kolmogorov–Smirnov
def _ks_equal_n_sf(n: int, h: int) -> float:
    """P(D_{n,n} >= h/n) under H₀ (Gnedenko & Korolyuk 1951), 1 <= h <= n.

    Gnedenko & Korolyuk, "On the maximum discrepancy between two empirical distributions",
    Doklady Akad. Nauk SSSR 80 (1951) 525–528 (reflection principle):

        P(D ≥ h/n) = 2 Σ_{k≥1} (−1)^{k+1} C(2n, n − kh) / C(2n, n).

    With the ratios ρ_k = C(2n, n−kh)/C(2n, n−(k−1)h) = Π_{j=0}^{h−1} (n−(k−1)h−j)/(n+(k−1)h+j+1)
    (all in [0, 1), ρ_k = 0 once n − kh < 0) the alternating sum is evaluated as
    2ρ₁(1 − ρ₂(1 − ρ₃(1 − …))), from the innermost factor out: no binomial coefficient is
    formed and there is no cancellation between large terms.
    """
    total = 0.0
    for k in range(n // h + 1, 0, -1):
        base = (k - 1) * h
        rho = 1.0
        for j in range(h):
            rho = rho * (n - base - j) / (n + base + j + 1)
        total = rho * (1.0 - total)
    return 2 * total


def _ks_unequal_n_sf(m: int, n: int, h: int) -> float:
    """P(D_{m,n} >= h/lcm(m, n)) under H₀ by counting lattice paths (Hodges 1958), 1 <= h <= lcm.

    Hodges, "The significance probability of the Smirnov two-sample test", Arkiv för
    Matematik 3 (1958) 469–486. Under H₀ the merged sample's order is a uniformly random
    monotone lattice path from (0, 0) to (m, n) (step +x: the next value is from the first
    sample); D_{m,n} >= h/L (L = lcm(m, n) = m'·n'·g with g = gcd, m' = m/g, n' = n/g) iff the
    path touches a point outside the band |n'·i − m'·j| < h. Let A(i, j) be the share of the
    C(i+j, i) paths from (0, 0) to (i, j) that touch a point outside the band. Then A = 1
    outside the band, A(0, 0) = 0 and, since a share i/(i+j) of those paths arrive from
    (i−1, j),

        A(i, j) = (i·A(i−1, j) + j·A(i, j−1)) / (i + j)

    (the "1 − p" form of the recursion, Viehmann, "Numerically more stable computation of the
    p-values for the two-sample Kolmogorov–Smirnov test", arXiv:2102.08037 (2021)): a convex
    combination, so it stays in [0, 1]; the result is A(m, n). Points on an anti-diagonal
    i + j = s depend only on the previous one, so each diagonal's band (O(h·(m+n)/L) points)
    is one vectorised step: O(m·n·h/L) work, m + n steps. Orientation: i counts the larger
    sample, as scipy does (the recursion's rounding depends on it).
    """
    if m < n:
        m, n = n, m
    g = math.gcd(m, n)
    mg, ng = m // g, n // g
    step = mg + ng  # on diagonal s: n'·i − m'·(s − i) = (m' + n')·i − m'·s
    lo_prev, prev = 0, np.zeros(1)  # diagonal 0: A(0, 0) = 0, inside the band since h >= 1
    for s in range(1, m + n + 1):
        # band: m'·s − h < (m' + n')·i < m'·s + h; grid: max(0, s − n) <= i <= min(s, m)
        lo = max(s - n, 0, (mg * s - h) // step + 1)
        hi = min(s, m, -((-(mg * s + h)) // step) - 1)
        if hi < lo:  # every path leaves the band here
            return 1.0
        # A on diagonal s − 1 at i − 1 (left neighbour) and i (lower neighbour), i in [lo, hi]:
        # 1 where that point is outside the band; off-grid points get weight 0 below.
        ext = np.ones(hi - lo + 2)
        a, b = max(lo - 1, lo_prev), min(hi, lo_prev + prev.size - 1)
        if a <= b:
            ext[a - lo + 1:b - lo + 2] = prev[a - lo_prev:b - lo_prev + 1]
        i = np.arange(lo, hi + 1, dtype=np.float64)
        j = s - i
        prev = (ext[:-1] * i + ext[1:] * j) / (i + j)
        lo_prev = lo
    return float(prev[m - lo_prev])


def _ks_asymptotic_sf(d: float, n1: int, n2: int) -> float:
    """Smirnov's large-sample p-value: P(D_{n_e} >= d) of the one-sample two-sided KS law with
    n_e = round(n₁n₂/(n₁+n₂)) (``scipy.stats.kstwo.sf``; imports ``scipy.stats``)."""
    from scipy import stats  # only here: large samples or a failed exact computation

    m, n = sorted([float(n1), float(n2)], reverse=True)
    en = m * n / (m + n)
    return float(np.clip(stats.kstwo.sf(d, np.round(en)), 0, 1))


def ks_2samp(x: ArrayLike, y: ArrayLike) -> TestStatistic:
    """Two-sided two-sample Kolmogorov–Smirnov test: D = sup_t |F₁(t) − F₂(t)| and P(D_{n₁,n₂} >= D) under H₀.

    F₁, F₂ are the empirical CDFs (right-continuous, so ties between and within the samples are
    handled by counting x_i <= t). With L = lcm(n₁, n₂), D = h/L for an integer h (computed
    exactly from the counts). The p-value is exact for max(n₁, n₂) <= :data:`KS_MAX_EXACT_N`:
    Gnedenko–Korolyuk's closed form when n₁ = n₂ (:func:`_ks_equal_n_sf`), Hodges' lattice-path
    count otherwise (:func:`_ks_unequal_n_sf`); h = 0 gives p = 1. Like
    ``scipy.stats.ks_2samp(x, y)`` (``alternative="two-sided", method="auto"``, scipy 1.17),
    larger samples — or an exact value outside [0, 1] from rounding, in which case a
    ``RuntimeWarning`` is issued — use Smirnov's asymptotic distribution instead (this imports
    ``scipy.stats``). The p-value is clipped to [0, 1]. The data are converted to float64; a
    NaN gives (NaN, NaN); an empty sample raises ``ValueError``.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"ks_2samp: expected 1-D samples, got shapes {a.shape} and {b.shape}")
    a, b = np.sort(a), np.sort(b)
    n1, n2 = a.size, b.size
    if min(n1, n2) == 0:
        raise ValueError("ks_2samp: the samples must not be empty")
    if np.isnan(a[-1]) or np.isnan(b[-1]):  # np.sort puts NaN last
        return TestStatistic(math.nan, math.nan)
    both = np.concatenate([a, b])
    c1 = np.searchsorted(a, both, side="right")
    c2 = np.searchsorted(b, both, side="right")
    g = math.gcd(n1, n2)
    lcm = (n1 // g) * n2
    if max(n1, n2) > KS_MAX_EXACT_N:
        diffs = c1 / n1 - c2 / n2
        d = float(max(np.clip(-diffs.min(), 0, 1), diffs.max()))
        return TestStatistic(d, _ks_asymptotic_sf(d, n1, n2))
    # L·(F₁ − F₂) = c₁·(L/n₁) − c₂·(L/n₂), an integer
    h = int(np.abs(c1.astype(np.int64) * (lcm // n1) - c2.astype(np.int64) * (lcm // n2)).max())
    d = h / lcm
    if h == 0:
        return TestStatistic(d, 1.0)
    p = _ks_equal_n_sf(n1, h) if n1 == n2 else _ks_unequal_n_sf(n1, n2, h)
    if not 0 <= p <= 1:
        warnings.warn("ks_2samp: exact calculation unsuccessful; using the asymptotic p-value",
                      RuntimeWarning, stacklevel=2)
        return TestStatistic(d, _ks_asymptotic_sf(d, n1, n2))
    return TestStatistic(d, p)


def ks_2samp_pvalue(x: ArrayLike, y: ArrayLike) -> float:
    """p-value of :func:`ks_2samp` (``scipy.stats.ks_2samp(x, y).pvalue``)."""
    return ks_2samp(x, y).pvalue


