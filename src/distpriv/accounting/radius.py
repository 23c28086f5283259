"""Radii c with P(||F − E F||_1 > c) <= p that provably hold (Chen & Ohrimenko Prop. 4.1's premise).

Gaussian F ~ N(μ, Σ), m coordinates with standard deviations σ_k:

* m = 1: exact, c = σ z_{1 − p/2} (P(|G| > c) = 2Φ(−c/σ) = p);
* union bound per coordinate with an optimised split: minimise Σ_k σ_k z_k subject to
  Σ_k 2Φ(−z_k) = p — a linear objective over a convex set, solved exactly by its KKT
  condition φ(z_k) = σ_k/(2λ) (bisection on λ); the equal split σ_k z_{1 − p/(2m)} is one
  feasible point;
* Gaussian concentration (Tsirelson–Ibragimov–Sudakov): u ↦ ||Σ^{1/2} u||_1 is L-Lipschitz
  with L = ||Σ^{1/2}||_{2→1} = max_{s ∈ {±1}^m} √(sᵀΣs) (enumerated for m <= 16, else the
  bound min(Σσ_k, √m ||Σ||^{1/2})), so c = Σ_k σ_k √(2/π) + L √(2 ln(1/p)).

The smaller of the two is returned (both are proven).

Samples (an :class:`~distpriv.EmpiricalModel`): an order statistic. If X_(j) is the j-th
smallest of N i.i.d. draws of R = ||F − a||_1 and q is R's (1 − p)-quantile, then
P(X_(j) < q) = P(Bin(N, P(R < q)) >= j) <= P(Bin(N, 1 − p) >= j); the least j with that
probability <= γ gives c = X_(j) >= q with confidence >= 1 − γ. It exists iff (1 − p)^N <= γ.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from ..errors import InvalidParameterError
from ..stattests import binom_sf


def _z(p: float) -> float:
    """Upper p-quantile of N(0, 1): Φ(−z) = p."""
    return float(-special.ndtri(p))


def _union_radius(sd: np.ndarray, p: float) -> float:
    sd = sd[sd > 0]
    if sd.size == 0:
        return 0.0
    if sd.size == 1:
        return float(sd[0] * _z(p / 2.0))

    def zs(loglam: float) -> np.ndarray:
        # φ(z) = σ/(2λ)  ⇔  z = sqrt(2 ln(2λ/(σ√(2π))))
        arg = loglam + math.log(2.0) - np.log(sd * math.sqrt(2 * math.pi))
        return np.sqrt(2.0 * np.maximum(arg, 0.0))

    def excess(loglam: float) -> float:
        return float(np.sum(2.0 * special.ndtr(-zs(loglam)))) - p

    lo, hi = math.log(float(sd.max())), math.log(float(sd.max())) + 1.0
    while excess(hi) > 0:
        hi += 2.0
    while excess(lo) < 0:
        lo -= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    best = float(sd @ zs(hi))  # feasible end (Σ 2Φ(−z_k) <= p)
    equal = float(sd.sum() * _z(p / (2.0 * sd.size)))
    return min(best, equal)


def lipschitz_2_to_1(cov: np.ndarray) -> float:
    """||Σ^{1/2}||_{2→1} = max_s √(sᵀΣs) over sign vectors (exact for m <= 16, else an upper bound)."""
    m = cov.shape[0]
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    bound = min(float(sd.sum()), math.sqrt(m) * math.sqrt(max(float(np.linalg.eigvalsh(cov)[-1]), 0.0)))
    if m <= 16:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=m - 1)))
        signs = np.hstack([np.ones((signs.shape[0], 1)), signs]) if m > 1 else np.ones((1, 1))
        q = np.einsum("ij,jk,ik->i", signs, cov, signs)
        return min(bound, math.sqrt(max(float(q.max()), 0.0)))
    return bound


def gaussian_l1_radius(cov: ArrayLike, p: float) -> tuple[float, str]:
    """Least proven c with P(||G||_1 > c) <= p for G ~ N(0, Σ), and which bound gave it."""
    c = np.atleast_2d(np.asarray(cov, dtype=float))
    if not 0 < p < 1:
        raise InvalidParameterError(f"p: must be in (0, 1), got {p}")
    sd = np.sqrt(np.clip(np.diag(c), 0.0, None))
    if sd.size == 1 or np.count_nonzero(sd) <= 1:
        return float(sd.max(initial=0.0) * _z(p / 2.0)), "exact (one coordinate): c = σ z_{1 − p/2}"
    u = _union_radius(sd, p)
    lip = lipschitz_2_to_1(c)
    conc = float(sd.sum() * math.sqrt(2 / math.pi)) + lip * math.sqrt(2.0 * math.log(1.0 / p))
    if conc < u:
        return conc, "Gaussian concentration of ||G||_1 (Tsirelson–Ibragimov–Sudakov)"
    return u, "union bound over coordinates with the optimal split"


@dataclass(frozen=True)
class SampleRadius:
    """An order-statistic radius: c = X_(index) of ``n`` deviations, >= the (1 − p)-quantile w.p. >= 1 − γ."""

    c: float
    index: int
    n: int
    p: float
    gamma: float


def min_samples(p: float, gamma: float) -> int:
    """Least N with (1 − p)^N <= γ: fewer samples cannot certify the (1 − p)-quantile at confidence 1 − γ.

    Capped at 10^30 (a lower bound on the true N then): for p below ~1e-16 (e.g. δ = 5e-324)
    ln(1 − p) rounds to 0 and no realistic sample size certifies the quantile.
    """
    if not 0.0 < p < 1.0 or not 0.0 < gamma < 1.0:
        raise InvalidParameterError(f"p, gamma: must be in (0, 1), got p = {p:g}, gamma = {gamma:g}")
    q = math.log1p(-p)
    ratio = math.log(gamma) / q if q < 0.0 else math.inf
    return int(math.ceil(ratio)) if ratio < 1e30 else 10**30


def _binom_quantile_guess(y: float, n: int, q: float) -> int:
    """Starting point ⌈k⌉ with P(Bin(n, q) <= k) = y (``scipy.special.bdtrik``, k continuous), else ⌈nq⌉.

    Only a start: :func:`sample_l1_radius` then steps to the least k with P(Bin(n, q) > k) <= γ,
    which does not depend on where it starts (the tail is decreasing in k).
    """
    k = float(special.bdtrik(y, n, q))
    if not math.isfinite(k):
        k = n * q
    return min(max(int(math.ceil(k)), 0), n)


def sample_l1_radius(deviations: ArrayLike, p: float, gamma: float) -> SampleRadius:
    """Order statistic bounding the (1 − p)-quantile of the deviations from above with confidence >= 1 − γ."""
    x = np.sort(np.asarray(deviations, dtype=float).ravel())
    n = x.size
    need = min_samples(p, gamma)
    if n < need:
        raise InvalidParameterError(
            f"samples: {n} per θ cannot certify the (1 − {p:g}) quantile of ||F − E F||_1 with confidence "
            f"{1 - gamma:g}; at least {need if need < 10**12 else f'{float(need):.3g}'} samples per θ are needed "
            "(or pass c=)")
    k = _binom_quantile_guess(1.0 - gamma, n, 1.0 - p)  # ~ least k with P(Bin <= k) >= 1 − γ
    while k >= 1 and binom_sf(k - 1, n, 1.0 - p) <= gamma:
        k -= 1
    while binom_sf(k, n, 1.0 - p) > gamma:
        k += 1
    j = k + 1  # P(Bin(n, 1 − p) >= j) <= γ, j least
    if j > n:  # pragma: no cover - excluded by min_samples
        raise InvalidParameterError(f"samples: need at least {need} samples per θ")
    return SampleRadius(float(x[j - 1]), j, n, p, gamma)


