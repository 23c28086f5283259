"""Discretised privacy-loss distributions with a certified δ(ε) bracket.

When P and Q are products of independent coordinates, the privacy loss
L = ln dP/dQ is a sum of independent per-coordinate losses ℓ_i, and

    δ(ε) = E_P[(1 − e^{ε − L})_+]

is non-decreasing in L pointwise. Rounding every ℓ_i *up* to the grid hℤ
(mass beyond the grid's top going to +∞) gives L' >= L, hence an upper bound;
rounding *down* (mass below the grid's bottom dropped) gives a lower bound.
The rounded laws live on hℤ, so the law of their sum is the convolution of
the per-coordinate pmfs (Koskela, Jälkö & Honkela 2020, Sec. 3; the
"pessimistic estimate" of Google's dp-accounting PLD library). Both ends are
certified up to floating-point error, which is bounded and added:

* cell masses: relative error r_i per coordinate (from the accuracy of Φ),
  entrywise, so the convolved pmf has relative error <= Π(1 + r_i) − 1;
* FFT convolution: ||ẑ − z||_2 <= c·(log2 N + 2)·u·Π||x_i||_1 (Higham,
  *Accuracy and Stability of Numerical Algorithms*, Thm 24.2, with a safety
  factor 10 on η), turned into a δ error by Cauchy–Schwarz with ||w||_2,
  w_k = (1 − e^{ε − x_k})_+;
* direct convolution of non-negative vectors: relative error <= n·u.

Grid width h is refined adaptively until the bracket is narrower than
``rtol·δ_upper + atol`` or, in decision mode, until it lies on one side of a
target δ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

U = float(np.finfo(float).eps) / 2.0
#: Each coordinate's loss range keeps all but this much P-mass (the rest is rounded to ±∞).
TAIL = 1e-21
#: Standard-normal radius with P(|u| > Z_TAIL) <= 2e-21.
Z_TAIL = 9.6
#: Losses above ε + CAP_MARGIN count as +∞ (costs at most e^{-CAP_MARGIN} of their mass).
CAP_MARGIN = 40.0
MAX_CELLS = 1 << 22
STATS = {"brackets": 0, "cells": 0}
DIRECT_LIMIT = 4_000_000


class LossCoordinate(Protocol):
    """One independent coordinate of a product pair: the law of its privacy loss under P."""

    def loss_range(self, tail: float = TAIL) -> tuple[float, float]:
        """[lo, hi] holding all but <= ``tail`` of the P-mass of ℓ."""
        ...

    def spread(self) -> float:
        """A scale of ℓ under P (e.g. its standard deviation)."""
        ...

    def discretise(self, h: float, k_lo: int, k_hi: int) -> Discretised:
        """Rounded-up and rounded-down pmfs on the indices k_lo..k_hi (see :class:`Discretised`)."""
        ...


@dataclass(frozen=True)
class Discretised:
    """A coordinate's loss on the grid {k·h : k_lo <= k <= k_hi}.

    ``upper[j]`` carries mass that, rounded up, sits at (k_lo + j)·h; ``inf_mass`` the mass
    above k_hi·h (rounded to +∞). ``lower[j]`` carries mass rounded down to (k_lo + j)·h;
    mass below k_lo·h is dropped. ``rel_err`` bounds the relative floating-point error of
    every entry. Masses may over-count (upper) or under-count (lower) — both stay valid.
    """

    upper: NDArray[np.float64]
    inf_mass: float
    lower: NDArray[np.float64]
    rel_err: float


@dataclass(frozen=True)
class Bracket:
    """δ bracket from a PLD computation and how it was obtained."""

    lower: float
    upper: float
    h: float
    cells: int
    refinements: int
    #: The part of ``upper − lower`` that is floating-point allowance (FFT and cell-mass error bounds), which a
    #: finer grid does not reduce (the FFT bound grows with the grid).
    fp_error: float = 0.0


def convolve_all(pmfs: Sequence[NDArray[np.float64]]) -> tuple[NDArray[np.float64], float]:
    """Linear convolution of non-negative vectors with an absolute 2-norm error bound.

    Small problems use direct convolution (non-negative terms: entrywise relative error
    <= k·u, hence 2-norm error <= k·u·Π||x_i||_1); large ones one FFT of each vector at a
    common power-of-two size, a product and one inverse FFT (error <= ((n + 1)·e1 + n·u)·
    Π max(||x_i||_1, 1) with e1 = (log2 N + 2)·10u, Higham Thm 24.2).
    """
    xs = [np.asarray(p, dtype=float) for p in pmfs]
    n_out = sum(x.size for x in xs) - len(xs) + 1
    mass = math.prod(max(float(x.sum()), 1.0) for x in xs)
    if len(xs) == 1:
        return xs[0], 0.0
    ordered = sorted(xs, key=lambda x: x.size)
    work = 0
    size = ordered[0].size
    for x in ordered[1:]:
        work += size * x.size
        size += x.size - 1
    if work <= DIRECT_LIMIT:
        acc = ordered[0]
        err = 0.0
        for x in ordered[1:]:
            k = min(acc.size, x.size)
            acc = np.convolve(acc, x)
            err = err + k * U / (1.0 - k * U)
        return acc, err * mass
    size = 1 << (n_out - 1).bit_length()
    prod = np.fft.rfft(ordered[0], size)
    for x in ordered[1:]:
        prod *= np.fft.rfft(x, size)
    z = np.fft.irfft(prod, size)[:n_out]
    e1 = (math.log2(size) + 2.0) * 10.0 * U
    err = ((len(xs) + 1) * e1 + len(xs) * U) * mass
    return np.maximum(z, 0.0), err


def _dot(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """Σ x_k y_k by numpy's own (pairwise) summation.

    Not ``x @ y`` / ``np.dot``: above ~2·10⁴ entries those go to OpenBLAS's threaded ddot, whose
    worker threads spin for milliseconds of CPU per call on a busy machine (measured 100-500×
    the cost of this sum). For non-negative terms the rounding error is <= n·u relative, inside
    the allowance of :func:`_tilted_delta`.
    """
    return float(np.multiply(x, y).sum())


def _weights(x: NDArray[np.float64], epsilon: float) -> NDArray[np.float64]:
    """w = (1 − e^{ε − x})_+ ."""
    return np.where(x > epsilon, -np.expm1(np.minimum(epsilon - x, 0.0)), 0.0)


def _grid(kl: int, size: int, h: float) -> NDArray[np.float64]:
    return h * (kl + np.arange(size, dtype=float))


def _coarse(p: NDArray[np.float64], kl: int, h: float, bins: int = 1024) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Block sums of a pmf (at most ``bins`` blocks) with their mean positions: enough to choose a tilt."""
    x = _grid(kl, p.size, h)
    if p.size <= bins:
        return p, x
    k = -(-p.size // bins)
    pad = (-p.size) % k
    pp = np.concatenate([p, np.zeros(pad)]).reshape(-1, k)
    xx = np.concatenate([x, np.full(pad, x[-1])]).reshape(-1, k)
    m = pp.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = np.where(m > 0, (pp * xx).sum(axis=1) / np.where(m > 0, m, 1.0), xx.mean(axis=1))
    return m, xm


def _choose_tilt(pmfs: Sequence[NDArray[np.float64]], k_lo: Sequence[int], h: float, goal: float) -> float:
    """λ >= 0 whose exponentially tilted sum has mean ≈ ``goal`` (Newton on block sums; any λ is valid).

    The tilted law of coordinate i is t_i ∝ p_i e^{λx}; the sum's mean and variance are Σ_i E_{t_i}[x] and
    Σ_i Var_{t_i}[x], and Newton's step on the mean is λ += (goal − mean)/var (damped to [λ/2, 2λ + 10], at most
    1e3). Then λ shrinks by 0.7 while any t_i holds more than 1e-6 of its mass in its last 1 % of cells.

    The floats of :func:`_choose_tilt_loop` (the same λ, bit for bit): the coarse pmfs are laid end to end, so
    every elementwise step is one array operation for all coordinates, and each coordinate's sums and dot
    products are taken on its own contiguous slice, as the loop takes them on its own array. The shrinking
    steps are found by bisection over their number (below).
    """
    coarse = [_coarse(p, kl, h) for p, kl in zip(pmfs, k_lo, strict=True)]
    if not coarse or not all(bool(np.any(p > 0)) for p, _ in coarse):
        return _choose_tilt_loop(pmfs, k_lo, h, goal)  # a coordinate without mass: its NaNs as before
    sizes = np.array([p.size for p, _ in coarse])
    ends = np.cumsum(sizes)
    starts = ends - sizes
    cuts = list(zip(starts.tolist(), ends.tolist(), strict=True))
    with np.errstate(divide="ignore"):
        lp = np.log(np.concatenate([p for p, _ in coarse]))
    x = np.concatenate([xi for _, xi in coarse])

    def tilt(lam: float) -> NDArray[np.float64]:
        e = lp + lam * x
        return np.exp(e - np.repeat(np.maximum.reduceat(e, starts), sizes))

    lam = 0.0
    for _ in range(12):
        e = tilt(lam)
        t = e / np.repeat([float(e[i:j].sum()) for i, j in cuts], sizes)
        mus = [float(t[i:j] @ x[i:j]) for i, j in cuts]
        sq = (x - np.repeat(mus, sizes)) ** 2
        mean = var = 0.0
        for (i, j), mu in zip(cuts, mus, strict=True):
            mean += mu
            var += float(t[i:j] @ sq[i:j])
        if mean >= goal and lam == 0.0:
            return 0.0
        if var <= 0 or abs(mean - goal) <= 0.05 * math.sqrt(var) + h:
            break
        lam = min(max(lam + (goal - mean) / var, 0.5 * lam), 2.0 * lam + 10.0, 1e3)
    # heavy right tails (e.g. quadratic losses, whose MGF is finite only for small λ) must not pile the
    # tilted mass at the end of the grid, where the un-tilting would amplify the FFT error: the first of
    # λ, 0.7λ, 0.7²λ, ..., 0.7⁴⁰λ whose tilted laws all hold <= 1e-6 in their last 1 % of cells (the last if none).
    # A coordinate's share there is non-decreasing in λ (its x increase along its cells: the tilted laws have
    # monotone likelihood ratios), so the first is found by bisection over the exponent (<= 7 evaluations, not 40).
    if lam <= 0:
        return max(lam, 0.0)
    lams = [lam]
    for _ in range(40):
        lams.append(lams[-1] * 0.7)
    tails = [(j - max(1, (j - i) // 100), i, j) for i, j in cuts]

    def calm(k: int) -> bool:
        e = tilt(lams[k])
        return max(float(e[m:j].sum() / e[i:j].sum()) for m, i, j in tails) <= 1e-6

    if calm(0):
        return lam
    lo, hi = 0, 40  # calm(lo) fails; hi is calm, or the last candidate
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if calm(mid):
            hi = mid
        else:
            lo = mid
    return lams[hi]


def _choose_tilt_loop(pmfs: Sequence[NDArray[np.float64]], k_lo: Sequence[int], h: float, goal: float) -> float:
    """:func:`_choose_tilt` one pmf at a time (the computation before issue 25's speed-up): the fallback where a
    coarse pmf has no positive mass, and the reference its test compares against."""
    coarse = [_coarse(p, kl, h) for p, kl in zip(pmfs, k_lo, strict=True)]
    lps = []
    for p, _ in coarse:
        with np.errstate(divide="ignore"):
            lps.append(np.log(p))
    lam = 0.0
    for _ in range(12):
        mean = var = 0.0
        for lp, (_, x) in zip(lps, coarse, strict=True):
            e = lp + lam * x
            e = np.exp(e - e.max())
            t = e / e.sum()
            mu = float(t @ x)
            mean += mu
            var += float(t @ (x - mu) ** 2)
        if mean >= goal and lam == 0.0:
            return 0.0
        if var <= 0 or abs(mean - goal) <= 0.05 * math.sqrt(var) + h:
            break
        lam = min(max(lam + (goal - mean) / var, 0.5 * lam), 2.0 * lam + 10.0, 1e3)
    # heavy right tails (e.g. quadratic losses, whose MGF is finite only for small λ) must not pile the
    # tilted mass at the end of the grid, where the un-tilting would amplify the FFT error
    for _ in range(40):
        if lam <= 0:
            break
        edge = 0.0
        for lp, (_, x) in zip(lps, coarse, strict=True):
            e = lp + lam * x
            e = np.exp(e - e.max())
            edge = max(edge, float(e[-max(1, e.size // 100):].sum() / e.sum()))
        if edge <= 1e-6:
            break
        lam *= 0.7
    return max(lam, 0.0)


def _tilted(pmfs: Sequence[NDArray[np.float64]], k_lo: Sequence[int], h: float, lam: float) -> tuple[list[NDArray[np.float64]], float]:
    """Tilted, normalised pmfs p_i e^{λx}/M_i and Σ ln M_i."""
    out = []
    logm = 0.0
    for p, kl in zip(pmfs, k_lo, strict=True):
        with np.errstate(divide="ignore"):
            e = np.log(p) + lam * _grid(kl, p.size, h)
        mx = float(e.max())
        if mx == -math.inf:
            return [np.zeros_like(q) for q in pmfs], -math.inf
        t = np.exp(e - mx)
        tot = float(t.sum())
        out.append(t / tot)
        logm += mx + math.log(tot)
    return out, logm


def _tilted_delta(
    pmfs: Sequence[NDArray[np.float64]], k_lo: Sequence[int], h: float, shift: float, epsilon: float, lam: float
) -> tuple[float, float]:
    """Σ_x p(x) w(x) for the convolution p of ``pmfs`` (computed on tilted pmfs) and its error bound.

    Convolution commutes with exponential tilting: if p̃_i = p_i e^{λx}/M_i then
    p(x) = (Π M_i) e^{−λx} (*p̃_i)(x). The FFT's absolute error is relative to the tilted
    masses, so after un-tilting it is small exactly where w > 0 (x > ε).
    """
    tilted, logm = _tilted(pmfs, k_lo, h, lam)
    if logm == -math.inf:
        return 0.0, 0.0
    conv, err = convolve_all(tilted)
    x0 = h * sum(k_lo)
    # only x > ε carries weight: start at the first such grid point
    start = max(0, int(math.floor((epsilon - shift - x0) / h)))
    if start >= conv.size:
        return 0.0, 0.0
    xr = x0 + h * np.arange(start, conv.size, dtype=float)
    w = _weights(xr + shift, epsilon)
    with np.errstate(over="ignore", under="ignore"):
        fac = np.exp(np.minimum(logm - lam * xr, 700.0))
    g = fac * w
    val = _dot(conv[start:], g)
    bound = math.sqrt(_dot(g, g)) * err
    rel = (4.0 * conv.size + 8.0 * len(pmfs) + 8.0) * U
    return val, bound + rel * val


def _excess(m: NDArray[np.float64], i: NDArray[np.float64]) -> float:
    """Π_k (m_k + i_k) − Π_k m_k for m_k, i_k >= 0, rounded up: the mass of the product of the coordinates' pmfs
    that some coordinate sends to +∞ (or the relative error of a product). Written as Π m_k · expm1(Σ log1p(i_k/m_k))
    when every m_k > 0: the plain difference cancels to 0 once the i_k fall below the rounding of the product
    (review32: a quantizer's 1e-25 of +∞ mass claimed as δ = 0)."""
    if not bool(np.any(i > 0)):
        return 0.0
    if bool(np.all(m > 0)):
        val = float(np.prod(m)) * math.expm1(float(np.sum(np.log1p(i / m))))
    else:
        val = float(np.prod(m + i))  # a factor m_k = 0 makes Π m_k = 0: no cancellation
    if not math.isfinite(val):  # Π m underflowing while expm1 overflows (review32b): the trivial bound
        return 1.0
    return val * (1.0 + 8.0 * (m.size + 2) * U)


def bracket_at(
    coords: Sequence[LossCoordinate], shift_up: float, shift_lo: float, epsilon: float, h: float,
    tail: float = TAIL, accept: float | None = None,
) -> Bracket:
    """Certified [lower, upper] on δ(ε) for L = Σ ℓ_i + s, s ∈ [shift_lo, shift_up], on grid width h.

    ``tail`` only sets where each coordinate's grid ends (mass beyond is rounded to ±∞, which
    keeps both ends valid and widens the bracket by at most ``tail`` per coordinate).
    ``accept``: when the upper end is already <= ``accept`` the lower end is not computed
    (reported as 0, still a valid lower bound) — decision mode of calibration searches.
    """
    if not coords:
        up = float(_weights(np.array([shift_up]), epsilon)[0])
        lo = float(_weights(np.array([shift_lo]), epsilon)[0])
        return Bracket(lo, up, h, 0, 0)
    ranges = [c.loss_range(tail) for c in coords]
    eps_up = epsilon - shift_up
    # upper grid ends, capped where any larger loss already gives w >= 1 − e^{-CAP_MARGIN}
    k_hi = []
    total_lo = sum(lo for lo, _ in ranges)
    for (lo, hi) in ranges:
        cap = eps_up + CAP_MARGIN - (total_lo - lo)
        k_hi.append(math.ceil(min(hi, max(cap, lo + h)) / h))
    sum_hi = sum(k_hi) * h
    k_lo = []
    for (lo, _), kh in zip(ranges, k_hi, strict=True):
        floor_cap = eps_up - (sum_hi - kh * h)  # below it the total finite loss is <= ε: w = 0 either way
        kl = math.floor(max(lo, floor_cap) / h)
        k_lo.append(min(kl, kh))
    ups, lows, infs, masses, rels = [], [], [], [], []
    for c, kl, kh in zip(coords, k_lo, k_hi, strict=True):
        d = c.discretise(h, kl, kh)
        ups.append(d.upper)
        lows.append(d.lower)
        infs.append(d.inf_mass)
        masses.append(float(d.upper.sum()))
        rels.append(d.rel_err)
    cells = int(sum(u.size for u in ups))
    STATS["brackets"] += 1
    STATS["cells"] += cells
    # exponential tilting keeps the FFT error relative to the mass near ε (tiny δ stay accurate)
    lam = _choose_tilt(ups, k_lo, h, eps_up)
    du, eu = _tilted_delta(ups, k_lo, h, shift_up, epsilon, lam)
    rel = _excess(np.ones(len(rels)), np.asarray(rels, dtype=float))
    inf_total = _excess(np.asarray(masses, dtype=float), np.asarray(infs, dtype=float))
    upper = min(1.0, inf_total + du * (1.0 + rel) + eu)
    if accept is not None and upper <= accept:
        return Bracket(0.0, upper, h, cells, 0, du * rel + eu)
    dl, el = _tilted_delta(lows, k_lo, h, shift_lo, epsilon, lam)
    lower = max(0.0, dl * (1.0 - rel) - el)
    return Bracket(min(lower, upper), upper, h, cells, 0, (du + dl) * rel + eu + el)


def pld_bracket(
    coords: Sequence[LossCoordinate],
    epsilon: float,
    *,
    shift_up: float = 0.0,
    shift_lo: float = 0.0,
    rtol: float = 1e-3,
    atol: float = 1e-14,
    target: float | None = None,
    max_cells: int = MAX_CELLS,
) -> Bracket:
    """Adaptive :func:`bracket_at`: refine h until the bracket is tight enough (or decides ``target``).

    Every grid gives a certified bracket, so the result is the intersection of those computed
    (largest lower end, smallest upper end). Refinement stops early when the floating-point
    allowance alone (:attr:`Bracket.fp_error`, which a finer grid does not reduce) exceeds the
    requested width: then no grid can meet it (tiny δ far in a tail) and finer grids only cost time.
    """
    if not coords:
        return bracket_at(coords, shift_up, shift_lo, epsilon, 1.0)
    n = len(coords)
    spread = math.sqrt(sum(c.spread() ** 2 for c in coords))
    width = sum(hi - lo for lo, hi in (c.loss_range() for c in coords))
    h_min = max(width / max_cells, 1e-12 * max(1.0, abs(epsilon)))
    # bracket width ~ n·h·|d ln δ/dε|·δ with |d ln δ/dε| ~ 3/spread for moderate δ: start near the goal
    h = max(spread * max(rtol, 1e-4) / (3.0 * n), h_min)
    refinements = 0
    tail = TAIL
    lo_best, up_best = 0.0, 1.0
    while True:
        b = bracket_at(coords, shift_up, shift_lo, epsilon, h, tail, accept=target)
        lo_best, up_best = max(lo_best, b.lower), min(up_best, b.upper)
        lo_best = min(lo_best, up_best)
        b = Bracket(lo_best, up_best, h, b.cells, refinements, b.fp_error)
        gap = b.upper - b.lower
        done = gap <= rtol * b.upper + atol
        if target is not None and (b.upper <= target or b.lower > target):
            done = True
        futile = b.fp_error > rtol * b.upper + atol and target is None
        if done or futile or h <= h_min * (1 + 1e-12) or refinements >= 6:
            return b
        goal = rtol * b.upper + atol
        if target is not None:
            goal = max(goal, min(abs(b.upper - target), abs(target - b.lower)))
        factor = min(0.5, max(1.0 / 64.0, 0.7 * goal / gap)) if gap > 0 else 0.5
        h = max(h * factor, h_min)
        # truncate the grids where the cut-off mass cannot matter at the requested precision
        tail = min(1e-6, max(TAIL, 0.02 * (rtol * b.lower + atol) / n))
        refinements += 1


