"""Certified δ(ε) of 2-D Gaussian ⊛ Laplace outputs whose noise basis does not diagonalise the covariances.

Setting (Chen & Ohrimenko Sec. 5, Laplace mechanisms off their equal-covariance assumption):
the release is F + B L with F ~ N(μ, Σ) and L_k ~ Lap(b_k) independent on the orthonormal
columns of a full-rank 2 × 2 basis B. In noise coordinates u = Bᵀy the output density is

    p(u) = E_{X ~ N(m, S)} [ Lap(u₁ − X₁; b₁) · Lap(u₂ − X₂; b₂) ],   m = Bᵀμ,  S = BᵀΣB,

and, conditioning on X₁ (X₂ | X₁ = x ~ N(m₂ + c(x − m₁), s²), c = S₁₂/S₁₁, s² = S₂₂ − S₁₂²/S₁₁),

    p(u) = ∫ φ(x; m₁, S₁₁) Lap(u₁ − x; b₁) g(u₂ − m₂ − c(x − m₁)) dx,   g = N(0, s²) ⊛ Lap(b₂)

(g in closed form, :func:`distpriv.accounting.laplace.gl_logpdf`). Every number below is a certified
bound, second order in the grid's cell sizes (issue 25: the first-order Lipschitz brackets of the first
round left the calibrated scale up to 1.17× the least; these leave it within 1.04× on the benchmark's models,
docs/mechanisms.md):

* nodes (:func:`_density_bracket`): the x-integral over Gaussian-weighted cells (exact masses, means and
  variances of the restricted normal), each bracketed by Hoeffding's lemma above and Jensen plus the
  curvature bound (ln g)'' >= −1/s² below; the cell holding the Laplace kink x = u₁ is split at it;
* between nodes (:func:`_interp_excess`, :func:`_secant_excess`): ln p is concave (a convolution of
  log-concave densities), so I <= ln p <= I + e with I the bilinear interpolant of the corner values and
  e the least of the Hessian bound (∇² ln p ⪰ −S⁻¹), the Lipschitz bound (|∂_k ln p| <= 1/b_k) and a local
  secant bound (supergradients bounded by the neighbouring nodes);
* cells (:func:`delta_bracket_2d`): P(C) in [vol exp(mean_corners ln p_lo), vol e^e mean_corners p_hi],
  the loss ℓ = ln p − ln q in [ℓ⁻, ℓ⁺] from the corners, and ∫_C (p − e^ε q)_+ equal to P(C) − e^ε Q(C)
  where ℓ⁻ >= ε, 0 where ℓ⁺ <= ε, at most P⁺(C)(1 − e^{ε−ℓ⁺}) where the level set crosses the cell;
  plus (upper end) the P-mass outside the u-window (Gaussian and Laplace tails by a union bound).

Where the Laplace scale is far above the Gaussian spread (small ε or small δ, issue 25) the log-density bends from
slope +1/b to −1/b across each law's Gaussian bulk: the u-grid lays fine bands (cells of κ × the conditional sd)
around each mean (:func:`_axis`), and the x-quadrature's cells are κ/max(λ, √C) wide, so every bound above stays
second order there too. Near that regime δ falls to 0 at a finite scale (the privacy loss is bounded), so the
grid must resolve the loss to a fraction of ε; with both, the calibrated scales at (ε, δ) = (0.1, 1e-4) and
(1, 1e-6) are within 1.03× the least (benchmarks/bench_laplace_tight.py).

This is the numerical counterpart of the coupling bound of :mod:`distpriv.accounting.laplace` (a bound
that can be 2–3× loose in scale, issue 25).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ..errors import InvalidParameterError
from .laplace import gl_logpdf

#: Gaussian standard deviations covered by the x- and u-windows (2Φ(−10) ≈ 1.5e-23 left outside).
GAUSS_REACH = 10.0
#: Laplace scales covered by the u-window (e^{−40} ≈ 4.2e-18 of mass left outside per coordinate).
LAPLACE_REACH = 40.0
#: Most grid points per u-coordinate and per x-quadrature (bounded work; coarser only widens the bracket).
MAX_POINTS = 900
#: Core of each noise coordinate laid at full resolution: CORE_SD sd and CORE_B Laplace scales around both means.
CORE_SD = 4.0
CORE_B = 6.0
#: Half-width, in sd of each law, of the fine band laid around its mean where b_k exceeds the conditional sd (:func:`_axis`).
BAND_SD = 3.0
METHOD = "2-D Gaussian ⊛ Laplace density on a certified cell grid (second-order log-concave brackets)"


@dataclass(frozen=True)
class BothOrders:
    """Certified brackets of δ(ε) in both orders: ``forward`` = δ of P against Q, ``backward`` = δ of Q against P."""

    forward: tuple[float, float]
    backward: tuple[float, float]
    cells: int

    @property
    def upper(self) -> float:
        return max(self.forward[1], self.backward[1])

    @property
    def lower(self) -> float:
        return max(self.forward[0], self.backward[0])


@dataclass(frozen=True)
class NdBracket(BothOrders):
    """The 2-D grid's brackets (:class:`BothOrders`) and the radius of its window."""

    radius: float


def _gauss_cell_weights(edges: NDArray[np.float64]) -> NDArray[np.float64]:
    """Standard-normal mass of the cells between consecutive ``edges`` (accurate in both tails)."""
    lo, hi = edges[:-1], edges[1:]
    right = lo >= 0
    w = np.where(right, special.ndtr(-lo) - special.ndtr(-hi), special.ndtr(hi) - special.ndtr(lo))
    return np.clip(w, 0.0, None)


def _restricted_moments(za: NDArray[np.float64], zb: NDArray[np.float64]
                        ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Mass W, mean z̄ and variance of the standard normal restricted to [za, zb] (elementwise).

    W = Φ(zb) − Φ(za) (accurate in both tails), z̄ = (φ(za) − φ(zb))/W (clipped into the interval),
    Var = 1 + (za φ(za) − zb φ(zb))/W − z̄² (plus a rounding allowance of 1e-9, and never above the
    (zb − za)²/4 of any law on the interval).
    """
    right = za >= 0
    wts = np.clip(np.where(right, special.ndtr(-za) - special.ndtr(-zb), special.ndtr(zb) - special.ndtr(za)), 0.0, None)
    pa, pb = np.exp(-0.5 * za ** 2) / math.sqrt(2.0 * math.pi), np.exp(-0.5 * zb ** 2) / math.sqrt(2.0 * math.pi)
    mid = 0.5 * (za + zb)
    half = 0.25 * (zb - za) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        zbar = np.where(wts > 0, (pa - pb) / wts, mid)
        zbar = np.clip(zbar, za, zb)
        var = np.where(wts > 0, 1.0 + (za * pa - zb * pb) / wts - zbar ** 2, half)
    var = np.minimum(np.clip(var, 0.0, None) + 1e-9, half)
    return wts, zbar, var


def _density_bracket(u1: NDArray[np.float64], u2: NDArray[np.float64], m: NDArray[np.float64],
                     s: NDArray[np.float64], b: NDArray[np.float64], kappa: float
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Certified [p_lo, p_hi] of the output density on the grid u1 × u2 (noise coordinates).

    p(u) = Σ_j W_j E_j[k(X)], with W_j the exact Gaussian mass of x-cell j, E_j the mean under the
    Gaussian restricted to it (mean x̄_j, width w) and k(x) = Lap(u₁ − x; b₁) g(u₂ − m₂ − c(x − m₁)).
    ln k is concave with slopes in [−λ, λ], λ = 1/b₁ + |c|/b₂, and (off the Laplace kink x = u₁)
    (ln k)'' >= −C, C = c²/s² ((ln g)'' >= −1/s²). Hence, second order in w:

    * upper (Hoeffding's lemma on a supergradient s, |s| <= λ): E_j k <= k(x̄_j) e^{λ² w²/8};
    * lower (Jensen, then the curvature bound; Var <= w²/4): E_j k >= k(x̄_j) e^{−min(C w²/8, λ w/2)},
      and e^{−λ w/2} (Lipschitz) on the one cell holding the kink (Var: the restricted normal's, exact).
    """
    s11 = float(s[0, 0])
    c = float(s[0, 1]) / s11
    sc = math.sqrt(max(float(s[1, 1]) - float(s[0, 1]) ** 2 / s11, 0.0))
    sd1 = math.sqrt(s11)
    lip = 1.0 / b[0] + abs(c) / b[1]
    # cells of width κ/max(λ, √C): the upper factor e^{λ²w²/8} and the lower e^{−C Var/2} are then both <= e^{κ²/8}
    # (κ/λ alone, ~κ b, left the lower end first order, e^{−λ√Var}, where b is far above the Gaussian spread)
    curv = (c * c / (sc * sc)) if sc > 0 else math.inf
    w = kappa / max(lip, min(math.sqrt(curv), 1e300))
    n = min(int(math.ceil(2.0 * GAUSS_REACH * sd1 / w)), 3 * MAX_POINTS)
    z_edges = np.linspace(-GAUSS_REACH, GAUSS_REACH, n + 1)
    wts, zbar, zv = _restricted_moments(z_edges[:-1], z_edges[1:])
    width = float(z_edges[1] - z_edges[0]) * sd1
    xc = m[0] + sd1 * zbar
    # one ln g table for every x of the window (the cells' means and the kink halves' means below)
    ends = [float(u2.min()) - m[1] - c * sd1 * z for z in (-GAUSS_REACH, GAUSS_REACH)] + \
        [float(u2.max()) - m[1] - c * sd1 * z for z in (-GAUSS_REACH, GAUSS_REACH)]
    span = (min(ends) - 1e-9 * (1.0 + abs(min(ends))), max(ends) + 1e-9 * (1.0 + abs(max(ends))))
    lg, err = _concave_table(u2[None, :] - m[1] - c * (xc[:, None] - m[0]), sc, float(b[1]), kappa * kappa, span)
    gmax = float(lg.max())
    eg = np.exp(lg - gmax)
    lap = np.exp(-np.abs(u1[:, None] - xc[None, :]) / b[0]) / (2.0 * b[0])
    lw = lap * wts[None, :]

    def shrink(var: NDArray[np.float64]) -> NDArray[np.float64]:
        """e^{−f}: E ln k >= ln k(x̄) − C Var/2 (curvature), or − λ E|X − x̄| >= − λ √Var (Lipschitz)."""
        var = var * s11
        return np.exp(-np.minimum(curv * var / 2.0, lip * np.sqrt(var)))

    low = shrink(zv)
    core_hi = lw @ eg  # Σ_j W_j k(x̄_j) / e^{gmax}
    core_lo = (lw * low[None, :]) @ eg
    # the x-cell holding the Laplace kink u₁ (at most one per row; a kink on an edge leaves both cells smooth) is
    # replaced by its two halves on either side of the kink, each smooth (second order again)
    zk = (u1 - m[0]) / sd1
    jk = np.searchsorted(z_edges, zk, side="right") - 1
    inside = (jk >= 0) & (jk < n)
    rows = np.flatnonzero(inside)
    if rows.size:
        j = jk[rows]
        kink = lw[rows, j][:, None] * eg[j, :]
        core_hi[rows] -= kink
        core_lo[rows] -= low[j][:, None] * kink
        for za, zb in ((z_edges[j], zk[rows]), (zk[rows], z_edges[j + 1])):
            wh, zh, vh = _restricted_moments(za, zb)
            xh = m[0] + sd1 * zh
            lgh, _ = _concave_table(u2[None, :] - m[1] - c * (xh[:, None] - m[0]), sc, float(b[1]), kappa * kappa, span)
            part = (wh * np.exp(-np.abs(u1[rows] - xh) / b[0]) / (2.0 * b[0]))[:, None] * np.exp(lgh - gmax)
            core_hi[rows] += part
            core_lo[rows] += shrink(vh)[:, None] * part
    # allowance for the rounding of x̄_j (|Δx̄| <= 1e-9 sd₁ moves ln k by <= λ·1e-9 sd₁)
    slack = lip * sd1 * 1e-9
    tail = 2.0 * float(special.ndtr(-GAUSS_REACH)) / (4.0 * b[0] * b[1])
    scale = math.exp(gmax)
    lo = np.clip(core_lo, 0.0, None) * scale * math.exp(-slack) * (1.0 - 1e-9)
    hi = np.clip(core_hi, 0.0, None) * scale * math.exp(lip * lip * width * width / 8.0 + err + slack) * (1.0 + 1e-9) + tail
    return lo, hi


#: Mass bound below which a cell keeps the global interpolation excess (:func:`delta_bracket_2d`).
NEGLIGIBLE = 1e-22


#: Table nodes of ln g per unit of κ-resolution (:func:`_concave_table`): the chord error is at most κ/TABLE_FINE.
TABLE_FINE = 20.0
#: Most nodes of one ln g table (bounded memory; a coarser table only widens the certified bracket).
MAX_TABLE = 200_000


def _concave_table(t: NDArray[np.float64], s: float, b: float, kappa: float,
                   span: tuple[float, float] | None = None) -> tuple[NDArray[np.float64], float]:
    """Lower bounds ln g_lo(t) <= ln g(t) <= ln g_lo(t) + err of g = N(0, s²) ⊛ Lap(b), evaluated cheaply.

    ln g is concave (a convolution of log-concave densities), 1/b-Lipschitz and has (ln g)'' >= −1/s²
    (:mod:`distpriv.accounting.laplace`), so on a table cell of width η its chord lies below it by at
    most min(η/b, η²/(8 s²)): linear interpolation of exact node values (``np.interp``) is a lower bound
    and ``err`` = that gap (plus a rounding allowance of 1e-12 (1 + max |ln g|)). The table (≤ MAX_TABLE
    nodes) replaces one special-function evaluation per (x-cell, u₂) point by one per node. ``span``: the
    table's range (it must contain every t; the same span gives the same table and ``err``).
    """
    tlo, thi = (float(t.min()), float(t.max())) if span is None else span
    if s <= 0 or thi - tlo <= 0:
        exact = gl_logpdf(t, 0.0, s, b)
        return exact, 1e-12 * (1.0 + float(np.abs(exact).max(initial=0.0)))
    gap = kappa / TABLE_FINE
    eta = max(gap * b, s * math.sqrt(8.0 * gap))  # either bound of the chord error alone gives <= gap
    n = min(max(int(math.ceil((thi - tlo) / eta)), 1), MAX_TABLE)
    nodes = np.linspace(tlo, thi, n + 1)
    eta = float(nodes[1] - nodes[0])
    vals = gl_logpdf(nodes, 0.0, s, b)
    err = min(eta / b, eta * eta / (8.0 * s * s)) + 1e-12 * (1.0 + float(np.abs(vals).max(initial=0.0)))
    return np.interp(t, nodes, vals), err


def _segment_edges(breaks: list[float], widths: list[float]) -> NDArray[np.float64]:
    """Edges covering [breaks[0], breaks[-1]]: segment i = [breaks[i], breaks[i+1]] cut into equal cells of width
    at most widths[i]."""
    parts = [np.array([breaks[0]])]
    for a, b, w in zip(breaks[:-1], breaks[1:], widths, strict=True):
        if b > a:
            n = max(int(math.ceil((b - a) / w)), 1)
            parts.append(np.linspace(a, b, n + 1)[1:])
    return np.concatenate(parts)


def _axis(ms: list[NDArray[np.float64]], ss: list[NDArray[np.float64]], b: NDArray[np.float64], k: int,
          kappa: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Cell centres and widths of noise coordinate k: width κ·max(b_k, σ_k) on the core (both laws' bulk),
    σ_k = min over the laws of 1/√(S⁻¹)_kk (the conditional sd: the interpolation bound of
    :func:`_interp_excess` is then <= κ²/8 per axis even where b_k is far below the Gaussian spread), then
    widths growing geometrically (×1.06) out to the window, which holds all but a certified tail.

    Where b_k > σ_k (much noise: small ε or small δ) the density's log bends from slope +1/b_k to −1/b_k across
    each law's Gaussian bulk in u_k (the Laplace kink smoothed over ±sd_k): a cell of width κ b_k there would
    leave an interpolation excess of order κ/2 (first order, issue 25's loose small-ε scales). These bands,
    m_k ± BAND_SD sd_k for each law, are laid at width κ σ_k instead (the Hessian bound κ²/8 again).
    """
    sds = [math.sqrt(float(s[k, k])) for s in ss]
    bk = float(b[k])
    cond = []
    for s in ss:
        det = float(s[0, 0] * s[1, 1] - s[0, 1] ** 2)
        cond.append(math.sqrt(det / float(s[1 - k, 1 - k])) if det > 0 and float(s[1 - k, 1 - k]) > 0 else 0.0)
    unit = max(bk, min(cond))
    lo = min(float(m[k]) - GAUSS_REACH * sd for m, sd in zip(ms, sds, strict=True)) - LAPLACE_REACH * bk
    hi = max(float(m[k]) + GAUSS_REACH * sd for m, sd in zip(ms, sds, strict=True)) + LAPLACE_REACH * bk
    c_lo = min(float(m[k]) - CORE_SD * sd for m, sd in zip(ms, sds, strict=True)) - CORE_B * bk
    c_hi = max(float(m[k]) + CORE_SD * sd for m, sd in zip(ms, sds, strict=True)) + CORE_B * bk
    w0 = kappa * unit
    fine = kappa * min(cond)
    breaks, widths = [c_lo, c_hi], [w0]
    if BAND_SD > 0 and 0 < fine < w0:
        bands = sorted((max(c_lo, float(m[k]) - BAND_SD * sd), min(c_hi, float(m[k]) + BAND_SD * sd))
                       for m, sd in zip(ms, sds, strict=True))
        merged: list[list[float]] = []
        for a, z in bands:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], z)
            else:
                merged.append([a, z])
        breaks, widths = [c_lo], []
        for a, z in merged:
            breaks += [a, z]
            widths += [w0, fine]
        breaks.append(c_hi)
        widths.append(w0)
        # bounded work: coarsen the bands (never the core) when the axis would exceed MAX_POINTS
        n_core = (c_hi - c_lo) / w0
        n_band = sum(z - a for a, z in merged) / fine
        if n_core + n_band > MAX_POINTS:
            fine = min(w0, sum(z - a for a, z in merged) / max(MAX_POINTS - n_core, 1.0))
            widths = [fine if i % 2 else w0 for i in range(len(widths))]
    if (c_hi - c_lo) / w0 > MAX_POINTS:
        w0 = (c_hi - c_lo) / MAX_POINTS
        widths = [max(w, w0) if i % 2 == 0 else w for i, w in enumerate(widths)]
    core = _segment_edges(breaks, widths)
    w0 = float(core[1] - core[0])
    w_hi = float(core[-1] - core[-2])
    right = [c_hi]
    w = w_hi
    while right[-1] < hi:
        w *= 1.06
        right.append(min(right[-1] + w, hi))
    left = [c_lo]
    w = w0
    while left[-1] > lo:
        w *= 1.06
        left.append(max(left[-1] - w, lo))
    edges = np.concatenate([np.array(left[:0:-1]), core, np.array(right[1:])])
    return 0.5 * (edges[:-1] + edges[1:]), np.diff(edges)


def _mean4(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.25 * ((a[:-1, :-1] + a[1:, 1:]) + (a[1:, :-1] + a[:-1, 1:]))


def _max4(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.maximum(np.maximum(a[:-1, :-1], a[1:, :-1]), np.maximum(a[:-1, 1:], a[1:, 1:]))


def _min4(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.minimum(np.minimum(a[:-1, :-1], a[1:, :-1]), np.minimum(a[:-1, 1:], a[1:, 1:]))


def _interp_excess(s: NDArray[np.float64], b: NDArray[np.float64], w1: NDArray[np.float64],
                   w2: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per cell, e with 0 <= ln p − I(ln p) <= e, I the bilinear interpolant of the corner values.

    ln p is concave, so ln p >= I (I(u) is a convex combination of corner values at corners averaging
    to u). Above it, two bounds: (i) ∇² ln p ⪰ −S⁻¹ (p is N(·, S) ⊛ a law, so ∇² ln p = −S⁻¹ +
    S⁻¹ Cov(·|u) S⁻¹), and the tensor-product error f − I_x I_y f = (f − I_x f) + I_x(f − I_y f) gives
    e = (w₁² (S⁻¹)₁₁ + w₂² (S⁻¹)₂₂)/8; (ii) ln p is (1/b_k)-Lipschitz in u_k, so
    e = Σ_k w_k/(2 b_k) (the bilinear weights put mass 2t(1 − t) w <= w/2 at distance along each axis).
    """
    lip = w1[:, None] / (2.0 * float(b[0])) + w2[None, :] / (2.0 * float(b[1]))
    det = float(s[0, 0] * s[1, 1] - s[0, 1] ** 2)
    if not det > 1e-300:
        return lip
    i11, i22 = float(s[1, 1]) / det, float(s[0, 0]) / det
    hess = (w1[:, None] ** 2 * i11 + w2[None, :] ** 2 * i22) / 8.0
    return np.minimum(lip, hess)


def _secant_excess(lo: NDArray[np.float64], hi: NDArray[np.float64], w1: NDArray[np.float64],
                   w2: NDArray[np.float64],
                   cells: tuple[NDArray[np.intp], NDArray[np.intp]] | None = None) -> NDArray[np.float64]:
    """Per cell, e with f <= I(hi) + e on the cell, from the node brackets lo <= f <= hi of a concave f alone.

    For a corner v of the cell and the directions σ_k pointing into it, every supergradient g of f at v has
    σ_k g_k <= (f(v) − f(v − σ_k h_k e_k))/h_k <= (hi(v) − lo(v − σ_k h_k e_k))/h_k =: ĝ_k (concavity along
    the axis, the neighbour node behind v), so f(u) <= T_v(u) := hi(v) + Σ_k ĝ_k |u_k − v_k| on the cell.
    T_v − I(hi) is bilinear, so its maximum over the cell is at a corner: e = min_v max_corners(T_v − hi).
    Second order in the cell size where f is smooth, and local (the actual curvature, not a global bound);
    +inf on the border cells (no node behind) and where a bracket is not finite. ``cells``: (rows, columns) of
    the cells wanted (a 1-D result in that order; default every cell, shape (n₁, n₂)).
    """
    n1, n2 = lo.shape[0] - 1, lo.shape[1] - 1
    if cells is None:
        ii, jj = (a.ravel() for a in np.indices((n1, n2)))
    else:
        ii, jj = cells
    pad_lo = np.full((n1 + 3, n2 + 3), -np.inf)
    pad_lo[1:-1, 1:-1] = lo
    inf1 = np.array([np.inf])
    # ratio of the cell width to the width behind corner v (0 where there is no node behind: then g·0 = nan, dropped)
    r1 = {0: (w1 / np.concatenate([inf1, w1[:-1]]))[ii], 1: (w1 / np.concatenate([w1[1:], inf1]))[ii]}
    r2 = {0: (w2 / np.concatenate([inf1, w2[:-1]]))[jj], 1: (w2 / np.concatenate([w2[1:], inf1]))[jj]}
    corner = {(di, dj): hi[ii + di, jj + dj] for di in (0, 1) for dj in (0, 1)}
    best = np.full(ii.shape, np.inf)
    with np.errstate(invalid="ignore", over="ignore"):
        for (di, dj), hv in corner.items():
            s1, s2 = 1 - 2 * di, 1 - 2 * dj  # directions into the cell
            back1 = pad_lo[1 + di - s1 + ii, 1 + dj + jj]
            back2 = pad_lo[1 + di + ii, 1 + dj - s2 + jj]
            a1 = (hv - back1) * r1[di]  # ĝ₁ w₁
            a2 = (hv - back2) * r2[dj]
            t1 = hv + a1
            worst = np.maximum(np.maximum(t1 - corner[(1 - di, dj)], hv + a2 - corner[(di, 1 - dj)]),
                               t1 + a2 - corner[(1 - di, 1 - dj)])
            best = np.fmin(best, np.maximum(worst, 0.0))
    return best if cells is not None else best.reshape(n1, n2)


def delta_bracket_2d(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, basis: ArrayLike,
                     scales: ArrayLike, epsilon: float, *, kappa: float = 0.05) -> NdBracket:
    """Certified δ(ε) brackets (both orders) of N(μ_p, Σ_p) ⊛ B·Lap(b) against N(μ_q, Σ_q) ⊛ B·Lap(b) in 2-D.

    ``basis``: orthonormal 2 × 2; ``scales``: b₁, b₂ > 0; ``kappa``: grid resolution (cells of κ b_k on
    the core; the bracket holds for any value; smaller is tighter and slower). Covariances must be
    positive definite in the noise basis' first coordinate (S₁₁ > 0).

    Per cell C (corners' density brackets from :func:`_density_bracket`; I the bilinear interpolant;
    e_P from :func:`_interp_excess`), every bound second order in the cell size except on the cells
    the level set {ℓ = ε} crosses (a curve of cells, each contributing O(w) of its own small mass):

    * P(C) <= vol e^{e_P} mean_corners p_hi (e^{I} is convex along each axis: trapezoid over-estimates);
      P(C) >= vol exp(mean_corners ln p_lo) (Jensen; I averages to the corners' mean);
    * ℓ = ln p − ln q <= max_corners(ln p_hi − ln q_lo) + e_P =: ℓ⁺, ℓ >= min_corners(ln p_lo − ln q_hi) − e_Q =: ℓ⁻;
    * ∫_C (p − e^ε q)_+ is 0 if ℓ⁺ <= ε; <= P⁺(C)(1 − e^{ε−ℓ⁺}); and = P(C) − e^ε Q(C) <= P⁺ − e^ε Q⁻ if
      ℓ⁻ >= ε; >= max(P⁻ − e^ε Q⁺, P⁻ (1 − e^{ε−ℓ⁻})_+, 0).
    """
    bm = np.asarray(basis, dtype=float)
    b = np.asarray(scales, dtype=float).reshape(2)
    ms = [bm.T @ np.asarray(mu_p, dtype=float), bm.T @ np.asarray(mu_q, dtype=float)]
    ss = [bm.T @ np.atleast_2d(np.asarray(cov_p, dtype=float)) @ bm, bm.T @ np.atleast_2d(np.asarray(cov_q, dtype=float)) @ bm]
    if bm.shape != (2, 2) or not np.allclose(bm.T @ bm, np.eye(2), atol=1e-9):
        raise ValueError("basis must be an orthonormal 2 × 2 matrix")
    if min(float(s[0, 0]) for s in ss) <= 0:
        raise ValueError("the covariances must be positive on the first noise coordinate")
    nodes, widths = [], []
    for k in range(2):
        centres, wk = _axis(ms, ss, b, k, kappa)
        nodes.append(np.concatenate([centres - wk / 2.0, centres[-1:] + wk[-1:] / 2.0]))
        widths.append(wk)
    r = widths[0][:, None] / (2.0 * float(b[0])) + widths[1][None, :] / (2.0 * float(b[1]))
    vol = widths[0][:, None] * widths[1][None, :]
    logs = []
    for m, s in zip(ms, ss, strict=True):
        lo, hi = _density_bracket(nodes[0], nodes[1], m, s, b, kappa)
        with np.errstate(divide="ignore"):
            logs.append((np.log(lo), np.log(hi), hi, _interp_excess(s, b, widths[0], widths[1])))
    # The local secant bound (the costliest) only matters on the cells where the global bound e₀ leaves the loss
    # possibly above ε: for law X, l⁺ of (X against Y) with e₀ > ε, or min_corners(ln y_lo − ln x_hi) > ε (l⁻ of Y
    # against X). Elsewhere those cells contribute 0 with either excess, so e = e₀ there changes no sum; nor is it
    # refined on cells whose mass bound with e₀ is below NEGLIGIBLE (e₀ is valid there, only looser: at most
    # NEGLIGIBLE per cell, ~1e-17 in all).
    laws = []
    for x in (0, 1):
        (llo, lhi, hi, e), olo = logs[x], logs[1 - x][0]
        with np.errstate(invalid="ignore"):
            need = (_max4(lhi - olo) + e > epsilon) | (_min4(olo - lhi) > epsilon)
        with np.errstate(over="ignore"):
            mean_hi = _mean4(hi)
            need &= vol * np.exp(e) * mean_hi > NEGLIGIBLE
        rows, cols = np.nonzero(need)
        if rows.size:
            e = e.copy()
            e[rows, cols] = np.minimum(e[rows, cols], _secant_excess(llo, lhi, widths[0], widths[1], (rows, cols)))
        with np.errstate(over="ignore"):
            m_hi = vol * np.exp(e) * mean_hi * (1.0 + 1e-12)
        m_lo = vol * np.exp(_mean4(llo)) * (1.0 - 1e-12)
        laws.append((llo, lhi, e, m_lo, m_hi))
    # P-mass outside the window: per coordinate, Gaussian beyond GAUSS_REACH sd or Laplace beyond the rest
    out = 2.0 * (2.0 * float(special.ndtr(-GAUSS_REACH)) + math.exp(-LAPLACE_REACH))
    ee = math.exp(epsilon)
    res = []
    for i, j in ((0, 1), (1, 0)):
        (plo, phi, ep, pm_lo, pm_hi), (qlo, qhi, eq, qm_lo, qm_hi) = laws[i], laws[j]
        with np.errstate(invalid="ignore"):
            l_up = np.where(np.isfinite(_min4(qlo)), _max4(phi - qlo) + ep, np.inf)
            l_dn = _min4(np.where(np.isfinite(plo), plo - qhi, -np.inf)) - eq
        with np.errstate(over="ignore", invalid="ignore"):
            cross = pm_hi * -np.expm1(np.minimum(epsilon - l_up, 0.0))
            full = np.maximum(pm_hi - ee * qm_lo, 0.0)
            up = np.where(l_up <= epsilon, 0.0, np.where(l_dn >= epsilon, np.minimum(cross, full), cross))
            low = np.maximum(np.maximum(pm_lo - ee * qm_hi, 0.0),
                             pm_lo * -np.expm1(np.minimum(epsilon - l_dn, 0.0)))
        res.append((max(0.0, float(np.sum(low))), min(1.0, float(np.sum(up)) + out)))
    return NdBracket(res[0], res[1], vol.size, float(r.max()))


def applies(dim: int, basis: ArrayLike | None, cov_p: ArrayLike, cov_q: ArrayLike) -> bool:
    """True when :func:`delta_bracket_2d` covers the pair: 2-D, a full orthonormal noise basis, S₁₁ > 0."""
    if dim != 2 or basis is None:
        return False
    bm = np.asarray(basis, dtype=float)
    if bm.shape != (2, 2) or not np.allclose(bm.T @ bm, np.eye(2), atol=1e-9):
        return False
    for c in (cov_p, cov_q):
        s = bm.T @ np.atleast_2d(np.asarray(c, dtype=float)) @ bm
        if not float(s[0, 0]) > 0 or not np.all(np.isfinite(s)):
            return False
    return True


#: Grid resolutions tried in turn by :func:`pair_bracket` (coarse first: each step costs ~κ⁻²); a calibration may
#: narrow them for a phase of its search (:func:`resolution`).
LADDER = (0.2, 0.1, 0.07)
#: Decay of the grid's upper end with κ assumed when predicting the finest grid's (upper ∝ κ^SHRINK), deliberately
#: optimistic: the bracket's width falls like κ², but near the pure regime (δ → 0 at a finite scale, small ε or δ)
#: the upper end falls from 2e-3 to 6e-5 between κ = 0.2 and 0.07 (κ^3.3), or from 1e-2 to 1e-17; abandoning on κ²
#: (the first round) left the calibrated scale at the coupling bound's (issue 25, ε = 0.1, δ = 1e-4).
SHRINK = 6.0

_LADDER: ContextVar[tuple[float, ...]] = ContextVar("distpriv_laplace_nd_ladder", default=LADDER)


@contextmanager
def ladder_scope(var: ContextVar[tuple[float, ...]], ladder: tuple[float, ...]) -> Iterator[None]:
    """Within the block, ``var`` (a grid module's ladder of resolutions κ) holds ``ladder``: the 2-D grid's
    :func:`resolution` and the 3-D grid's :func:`distpriv.accounting.laplace_3d.resolution_3d`."""
    if not ladder or any(not 0 < k <= 1 for k in ladder):
        raise InvalidParameterError(f"grid resolutions must lie in (0, 1], got {ladder!r}", argument="ladder")
    token = var.set(tuple(ladder))
    try:
        yield
    finally:
        var.reset(token)


def resolution(ladder: tuple[float, ...]) -> contextlib.AbstractContextManager[None]:
    """Within the block, :func:`pair_bracket` refines along ``ladder`` instead of :data:`LADDER` (every κ gives a
    certified bracket: this changes only how tight, never whether a claim holds)."""
    return ladder_scope(_LADDER, ladder)

#: Relative width of the bracket at which :func:`pair_bracket` stops refining.
RTOL = 0.05

_CACHE: dict[tuple[bytes, float, float], NdBracket] = {}
_CACHE_SIZE = 64


def _cached_bracket(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, basis: ArrayLike,
                    scales: ArrayLike, epsilon: float, kappa: float) -> tuple[float, float]:
    """δ of P against Q from one grid computing both orders (memoised: the reverse order is then free)."""
    parts = [np.asarray(x, dtype=float) for x in (mu_p, cov_p, mu_q, cov_q)]
    key = (b"".join(x.tobytes() for x in (*parts, np.asarray(basis, dtype=float), np.asarray(scales, dtype=float))),
           float(epsilon), float(kappa))
    rkey = (b"".join(x.tobytes() for x in (parts[2], parts[3], parts[0], parts[1], np.asarray(basis, dtype=float),
                                           np.asarray(scales, dtype=float))), float(epsilon), float(kappa))
    if key in _CACHE:
        return _CACHE[key].forward
    if rkey in _CACHE:
        return _CACHE[rkey].backward
    br = delta_bracket_2d(parts[0], parts[1], parts[2], parts[3], basis, scales, epsilon, kappa=kappa)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = br
    return br.forward


def pair_bracket(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, basis: ArrayLike,
                 scales: ArrayLike, epsilon: float, *, target: float | None = None,
                 beat: float = math.inf) -> tuple[float, float, float]:
    """(lower, upper, κ used) of δ of P against Q, refined along :data:`LADDER` (κ = 0.2 → 0.1 → 0.07; cells
    grow ~κ⁻²) until the bracket is within :data:`RTOL` or, with ``target``, decides δ <= target (every κ
    gives a certified bracket, so stopping at a coarse one is exact). A calibration's search steps far from
    the least scale are decided on the coarse grids (:func:`distpriv.accounting.topup.topup_laplace` runs its
    search on κ = 0.2 alone, then refines on κ = 0.07 alone, through :func:`resolution`).

    ``beat``: the bound already proven (the coupling bound). The ladder is abandoned when even the finest
    grid is not expected to decide the target (or, without one, to beat ``beat``): the finest grid's upper end
    is predicted (optimistically) as up·(κ_min/κ)^SHRINK. Stopping early leaves a valid, looser bracket; it
    only saves work where the grid cannot help.
    """
    ladder = _LADDER.get()
    lo, up, kap = 0.0, 1.0, ladder[0]
    goal = min(target, beat) if target is not None else beat
    for kap in ladder:
        lo, up = _cached_bracket(mu_p, cov_p, mu_q, cov_q, basis, scales, epsilon, kap)
        if up - lo <= RTOL * up + 1e-15 or (target is not None and (up <= target or lo > target)):
            break
        if up * (ladder[-1] / kap) ** SHRINK > goal and lo <= goal:
            break
    return lo, up, kap


