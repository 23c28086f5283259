"""Certified δ(ε) of 3-D Gaussian ⊛ Laplace outputs whose noise basis does not diagonalise the covariances.

Setting (Chen & Ohrimenko Sec. 5, Laplace mechanisms off their equal-covariance assumption; issue 25): the
release is F + B L with F ~ N(μ, Σ) and L_k ~ Lap(b_k) independent on the orthonormal columns of a 3 × 3 basis
B. In noise coordinates (u = Bᵀy, m = Bᵀμ, S = BᵀΣB, S positive definite) the output density is

    p(u) = ∫ φ_S(x − m) Π_k Lap(u_k − x_k; b_k) dx,

and the Laplace coordinates are independent, so p is three 1-D convolutions in turn (coordinates 0, 1, 2 after a
permutation chosen for the least work):

1. closed form in coordinate 0: X₀ | (X₁, X₂) ~ N(m₀ + β·(x₁₂ − m₁₂), s²), so
   f₁(u₀, x₁, x₂) = φ(x₁₂; m₁₂, S₁₂) · g(u₀ − m₀ − β·(x₁₂ − m₁₂)), g = N(0, s²) ⊛ Lap(b₀)
   (:func:`distpriv.accounting.laplace.gl_logpdf`, read from a table whose chord error is bounded);
2. f₂(u₀, u₁, x₂) = ∫_{W₁} Lap(u₁ − x₁; b₁) f₁(u₀, x₁, x₂) dx₁;
3. p_in(u) = ∫_{W₂} Lap(u₂ − x₂; b₂) f₂(u₀, u₁, x₂) dx₂,

with W_k the window of ±GAUSS_REACH sd of both laws, so p_in <= p <= p_in + τ, τ = P(X ∉ W)/(8 b₀ b₁ b₂).
Every number is a certified bound:

* the integrands of steps 2 and 3 are log-concave along the integrated axis with (ln f)'' >= −(S⁻¹)_kk
  (f₁ is N(m, S) convolved with a law; f₂ is a marginal of f₁ against a log-concave kernel that does not depend
  on x₂: (ln ∫ K e^{V})'' = E[V''] + Var[V'] >= −(S⁻¹)_kk), so between nodes of the x-grid, with node brackets
  lo <= f <= hi, chord(ln lo) <= ln f <= chord(ln hi) + e, e the curvature bound (S⁻¹)_kk w²/8 (:func:`_chord_excess`);
* these piecewise-exponential brackets are integrated against the Laplace kernel exactly (monotone: a positive
  kernel preserves the order), by a two-sided exponential recursion (:func:`_laplace_conv`); the output nodes are
  x-grid edges, so no cell straddles the kink;
* cells of the output grid (:func:`delta_bracket_3d`): ln p is concave, 1/b_k-Lipschitz in u_k and
  ∇² ln p ⪰ −S⁻¹, so ln p lies between the trilinear interpolant of the corner brackets and that plus e, the least
  of the Lipschitz, curvature and (local) secant bounds; P(C), the loss range and ∫_C (p − e^ε q)_+ are bounded as
  in :mod:`distpriv.accounting.laplace_nd` (the 2-D grid), plus the P-mass outside the output window.

The previous estimate of a 3-D grid ("a 2-D Gaussian-weighted cell sum at each node, n⁵") is avoided: the
recursion makes each convolution linear in the number of nodes, so the work is that of a few passes over the
n³ nodes.

Where the error goes (issue 25, second 3-D round): each x-cell adds its chord excess (S⁻¹)_kk w²/8 to every node's
bracket twice, and at ε = 0.1 that was the largest part of the loss's error, so the x-cells are X_STEP·κ·σ_k
(× ε^X_EPS_POW below ε = 1) inside X_FINE_SD sd of both means and X_TAIL times wider beyond (their weight in every
bulk node's integral is below e^{−18}); with a target δ the u-window reaches :func:`reach_for` Laplace scales
(its left-out mass, added to the upper end, is TAIL_SHARE·δ). Every choice only moves the bracket's width and
cost: the bracket is certified for any grid. A calibration runs one κ per phase (:func:`resolution_3d`,
:func:`distpriv.accounting.topup.topup_laplace`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import product

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ..errors import InvalidParameterError
from .laplace import gl_logpdf
from .laplace_nd import BothOrders, ladder_scope

#: Gaussian standard deviations covered by the x- and u-windows (2Φ(−10) ≈ 1.5e-23 per coordinate left outside).
GAUSS_REACH = 10.0
#: Laplace scales covered by the u-window (e^{−40} ≈ 4.2e-18 of mass left outside per coordinate) when no target is
#: given; with a target δ the window reaches ln(3/(TAIL_SHARE δ)) scales instead (at least REACH_MIN): the mass left
#: outside, added to the upper end, is then TAIL_SHARE δ, and ~25 % fewer nodes per axis (each tail node of the
#: geometric growth covers ~1.3× more) make the grid ~2× cheaper (:func:`reach_for`).
LAPLACE_REACH = 40.0
TAIL_SHARE = 1e-4
REACH_MIN = 12.0
#: Core of each output coordinate laid at full resolution: CORE_SD sd and CORE_B Laplace scales around both means.
CORE_SD = 4.0
CORE_B = 4.0
#: Zone around both means (ZONE_SD sd) where the Laplace kinks bend the density: finer cells there.
ZONE_SD = 4.0
#: Geometric growth of the output cells outside the core (the loss is nearly linear there; secant bounds stay tight).
GROWTH = 1.3
#: Most output nodes per coordinate and x-nodes per integrated coordinate (bounded memory; coarser only widens).
MAX_CORE = 80
MAX_X = 600
#: x-cells of the integrations are X_STEP·κ·σ_k wide: their chord excess (S⁻¹)_kk w²/8 adds to every node's bracket
#: twice (steps 2 and 3), and a finer x-grid costs only linearly (issue 25: at κ = 0.5, X_STEP = 0.5 certified a
#: scale 1.11× lower than X_STEP = 1 for 1.6× the CPU, where κ = 0.3 costs 3×).
X_STEP = 0.6
#: ... inside X_FINE_SD sd of both means, and X_TAIL times wider beyond (the Gaussian tail of the window: its cells
#: carry a weight below e^{−X_FINE_SD²/2} of every node's integral in the bulk, so their larger chord excess moves
#: the brackets there by less; the bracket is certified for any cells).
X_FINE_SD = 6.0
X_TAIL = 4.0
#: Power of ε (below 1) scaling the x-cells (:func:`_x_axis`).
X_EPS_POW = 0.3
#: Table nodes of ln g per unit of κ-resolution: the chord error is at most κ²/TABLE_FINE.
TABLE_FINE = 400.0
#: Additive allowance (in the units of the normalised integrands) for terms lost to floating-point underflow.
FLOOR = 1e-300
#: Relative rounding allowance of every bracket.
ROUND = 1e-10
#: Elements per block of the density and cell passes (blocks along u₀ keep the arrays in cache).
CHUNK = 200_000
METHOD = "3-D Gaussian ⊛ Laplace density on a certified cell grid (exact Laplace convolutions of log-concave brackets)"

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Bracket3d(BothOrders):
    """The 3-D grid's certified brackets of δ(ε) in both orders (:class:`~.laplace_nd.BothOrders`)."""


def grid_3d_applies(dim: int, basis: ArrayLike | None, cov_p: ArrayLike, cov_q: ArrayLike) -> bool:
    """True when :func:`delta_bracket_3d` covers the pair: 3-D, a full orthonormal noise basis, both covariances
    positive definite (finite)."""
    if dim != 3 or basis is None:
        return False
    bm = np.asarray(basis, dtype=float)
    if bm.shape != (3, 3) or not np.allclose(bm.T @ bm, np.eye(3), atol=1e-9):
        return False
    for c in (cov_p, cov_q):
        s = np.atleast_2d(np.asarray(c, dtype=float))
        if s.shape != (3, 3) or not np.all(np.isfinite(s)):
            return False
        s = bm.T @ s @ bm
        s = 0.5 * (s + s.T)
        if not float(np.linalg.eigvalsh(s).min()) > 1e-12 * max(float(np.abs(s).max()), 1e-300):
            return False
    return True


# --------------------------------------------------------------------------- grids
def _pieces(a: float, b: float, step: float) -> Array:
    n = min(max(int(math.ceil((b - a) / step)), 1), MAX_CORE)
    return np.linspace(a, b, n + 1)


def _u_axis(ms: list[Array], sds: list[float], conds: list[float], bk: float, k: int, kappa: float,
            reach: float = LAPLACE_REACH) -> Array:
    """Output nodes of coordinate k. Near both means (ZONE_SD sd), where the Laplace kink bends ln p by up to 2/b_k
    over a Gaussian spread, cells of κ·√(max(b_k, σ_k) σ_k) (σ_k the least conditional sd); on the rest of the core
    (CORE_SD sd + CORE_B b_k beyond the means) cells of κ·max(b_k, σ_k); then cells growing geometrically (× GROWTH)
    out to the window (GAUSS_REACH sd + ``reach`` b_k beyond both means)."""
    sig = min(conds)
    unit = max(bk, sig)
    fine = math.sqrt(unit * sig)
    lo = min(float(m[k]) - GAUSS_REACH * sd for m, sd in zip(ms, sds, strict=True)) - reach * bk
    hi = max(float(m[k]) + GAUSS_REACH * sd for m, sd in zip(ms, sds, strict=True)) + reach * bk
    z_lo = min(float(m[k]) - ZONE_SD * sd for m, sd in zip(ms, sds, strict=True))
    z_hi = max(float(m[k]) + ZONE_SD * sd for m, sd in zip(ms, sds, strict=True))
    c_lo = min(float(m[k]) - CORE_SD * sd for m, sd in zip(ms, sds, strict=True)) - CORE_B * bk
    c_hi = max(float(m[k]) + CORE_SD * sd for m, sd in zip(ms, sds, strict=True)) + CORE_B * bk
    zone = _pieces(z_lo, z_hi, kappa * fine)
    core = np.concatenate([_pieces(c_lo, z_lo, kappa * unit)[:-1], zone, _pieces(z_hi, c_hi, kappa * unit)[1:]])
    w0 = kappa * unit
    right, left = [c_hi], [c_lo]
    w = w0
    while right[-1] < hi:
        w *= GROWTH
        right.append(min(right[-1] + w, hi))
    w = w0
    while left[-1] > lo:
        w *= GROWTH
        left.append(max(left[-1] - w, lo))
    return np.concatenate([np.array(left[:0:-1]), core, np.array(right[1:])])


def _x_axis(u: Array, ms: list[Array], sds: list[float], conds: list[float], k: int, kappa: float,
            epsilon: float = 1.0) -> Array:
    """Integration edges of coordinate k: the window W_k (GAUSS_REACH sd of both laws) cut at every output node
    inside it (so no x-cell straddles an output node) and each piece split into cells of at most X_STEP·κ·σ_k
    (times min(1, ε)^X_EPS_POW: below ε = 1 the loss must be resolved to a fraction of ε, and the x-cells' chord
    excess is the largest part of its error there; X_TAIL times wider beyond X_FINE_SD sd of both means)."""
    lo = min(float(m[k]) - GAUSS_REACH * sd for m, sd in zip(ms, sds, strict=True))
    hi = max(float(m[k]) + GAUSS_REACH * sd for m, sd in zip(ms, sds, strict=True))
    inside = u[(u > lo) & (u < hi)]
    f_lo = min(float(m[k]) - X_FINE_SD * sd for m, sd in zip(ms, sds, strict=True))
    f_hi = max(float(m[k]) + X_FINE_SD * sd for m, sd in zip(ms, sds, strict=True))
    cuts = np.unique(np.concatenate([[lo], inside, [hi], [x for x in (f_lo, f_hi) if lo < x < hi]]))
    step = max(X_STEP * min(1.0, epsilon) ** X_EPS_POW * kappa * min(conds), (hi - lo) / MAX_X)
    pieces = [cuts[:1]]
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        wide = step if f_lo <= a and b <= f_hi else step * X_TAIL
        n = max(int(math.ceil((b - a) / wide)), 1)
        pieces.append(np.linspace(a, b, n + 1)[1:])
    out = np.concatenate(pieces)
    out[np.searchsorted(out, inside)] = inside  # the output nodes exactly (no rounding from linspace)
    return out


# --------------------------------------------------------------------------- 1-D building blocks
def _gl_table(span: tuple[float, float], s: float, b: float, kappa: float) -> tuple[Array, Array, float]:
    """Nodes and exact values of ln g, g = N(0, s²) ⊛ Lap(b), over ``span``, and ``err`` such that the linear
    interpolant I of the table satisfies I <= ln g <= I + err on the span: ln g is concave, so its chord lies below
    it by at most min(η/b, η²/(8 s²)) on a table cell of width η; plus a rounding allowance of 1e-12 (1 + max |ln g|)."""
    tlo, thi = span
    gap = kappa * kappa / TABLE_FINE
    eta = max(gap * b, s * math.sqrt(8.0 * gap))
    n = min(max(int(math.ceil((thi - tlo) / eta)), 1), 400_000)
    nodes = np.linspace(tlo, thi, n + 1)
    eta = float(nodes[1] - nodes[0])
    vals = gl_logpdf(nodes, 0.0, s, b)
    err = min(eta / b, eta * eta / (8.0 * s * s)) + 1e-12 * (1.0 + float(np.abs(vals).max(initial=0.0)))
    return nodes, vals, err


def _chord_excess(w: Array, ndim: int, curv: float) -> Array:
    """Per x-cell along axis 0, e >= 0 with ln f <= chord(ln f) + e on the cell, for f log-concave along the axis with
    (ln f)'' >= −curv: e = curv w²/8 (the x-cells are at most κ σ_k wide, so e <= κ²/8 there; a secant bound from
    the neighbouring nodes, as in :func:`_secant_excess`, never improved a bracket on these cells and was dropped)."""
    return curv * w.reshape((w.shape[0],) + (1,) * (ndim - 1)) ** 2 / 8.0


def _phi(d: Array) -> Array:
    """(1 − e^{−|d|})/|d| (1 at d = 0, 0 at |d| = inf or nan): the mean of e^{−|d| t} over t in [0, 1], computed as
    expm1(−|d|)/(−|d|) (accurate for small |d|). Overwrites ``d`` (a temporary of the caller)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        neg = np.abs(d, out=d)
        np.negative(neg, out=neg)
        out = np.expm1(neg)
        out /= neg
    bad = np.isnan(out)
    if bad.any():
        out[bad] = np.where(neg[bad] == 0.0, 1.0, 0.0)
    return out


def _cell_terms(a: Array, wc: Array, b: float) -> tuple[Array, Array]:
    """R_j = (w_j/2b) E(a_j − w_j/b, a_{j+1}) and L_j = (w_j/2b) E(a_j, a_{j+1} − w_j/b), E(x, y) the mean of
    exp over the segment from x to y = e^{max(x, y)} φ(y − x) (:func:`_phi`), from one exponential per node."""
    c = wc / b
    c2b = 0.5 * c
    with np.errstate(under="ignore"):
        ea = np.exp(a)
        ec = np.exp(-c)
    left, right = ea[:-1], ea[1:]
    with np.errstate(invalid="ignore"):
        d = a[1:] - a[:-1]
        rr = _phi(d + c)
        ll = _phi(np.subtract(d, c, out=d))
    top = left * ec
    np.maximum(top, right, out=top)
    top *= c2b
    rr *= top
    np.multiply(right, ec, out=top)
    np.maximum(top, left, out=top)
    top *= c2b
    ll *= top
    return rr, ll


def _laplace_conv(llo: Array, lhi: Array, xe: Array, u: Array, b: float, curv: float,
                  gap: float | None = None) -> tuple[Array, Array]:
    """Brackets of ∫_{x₀}^{x_M} Lap(u − x; b) f(x) dx at the nodes ``u`` (axis 0 of the arrays; the other axes are
    independent lines), from log-brackets ``llo``, ``lhi`` of a log-concave f at the edges ``xe`` with
    (ln f)'' >= −curv. Every ``u`` inside [x₀, x_M] must be an edge.

    f is bracketed on each cell by exp(chord(llo)) and exp(chord(lhi) + e) (ln f is concave; :func:`_chord_excess`);
    both are integrated exactly: cell j contributes e^{−(u − x_{j+1})/b} R_j to u >= x_{j+1} and e^{−(x_j − u)/b} L_j to
    u <= x_j, with R_j = (w_j/2b) E(a_j − w_j/b, a_{j+1}), L_j = (w_j/2b) E(a_j, a_{j+1} − w_j/b), E the mean of the
    exponential of the linear interpolant (:func:`_cell_terms`); the sums are two exponential recursions over the
    merged sorted nodes. Returned in log units (natural log), with the integrands' maximum factored out and a
    rounding/underflow allowance on the upper end. ``gap``: lhi = llo + gap exactly (then the upper cell terms are
    the lower ones times e^{gap + e_j}, as E(A + c, B + c) = e^c E(A, B)); without it the cell terms are computed
    once, from ``lhi``, and the lower ones bounded through the node gaps (one pass fewer, issue 25).
    """
    w = np.diff(xe)
    e = _chord_excess(w, llo.ndim, curv)
    shift = float(np.max(lhi))
    a_lo, a_hi = llo - shift, lhi - shift
    wc = w.reshape((w.shape[0],) + (1,) * (llo.ndim - 1))
    if gap is not None:
        rr, ll = _cell_terms(a_lo, wc, b)
        lo = _two_pass(rr, ll, xe, u, b)
        up = np.exp(e + gap)
    else:
        # one set of cell terms, from the upper bracket: chord(llo) >= chord(lhi) − G_j on cell j, G_j the larger
        # node gap lhi − llo at its ends (the chord of the gap is at most its larger end), so the lower cell terms
        # are at least the upper ones times e^{−G_j} (0 where llo = −inf)
        rr, ll = _cell_terms(a_hi, wc, b)
        with np.errstate(invalid="ignore"):
            g = a_hi - a_lo
            np.maximum(g[:-1], g[1:], out=g[:-1])
            g = g[:-1]
            g[np.isnan(g)] = np.inf
            np.negative(g, out=g)
            with np.errstate(under="ignore"):
                np.exp(g, out=g)
        lo = _two_pass(rr * g, ll * g, xe, u, b)
        up = np.exp(e)
    hi = _two_pass(rr * up, ll * up, xe, u, b)
    with np.errstate(divide="ignore"):
        return (np.log(lo * (1.0 - ROUND)) + shift,
                np.log(hi * (1.0 + ROUND) + FLOOR) + shift)


def _two_pass(rr: Array, ll: Array, xe: Array, u: Array, b: float) -> Array:
    """Σ_{j: x_{j+1} <= u} e^{−(u − x_{j+1})/b} R_j + Σ_{j: x_j >= u} e^{−(x_j − u)/b} L_j at every u (axis 0)."""
    pts = np.union1d(xe, u)
    x_idx = {float(x): i for i, x in enumerate(xe)}
    u_idx = {float(v): i for i, v in enumerate(u)}
    out = np.zeros((u.shape[0],) + rr.shape[1:])
    acc = np.zeros(rr.shape[1:])
    prev = float(pts[0])
    for t in pts:  # forward: cells wholly to the left
        t = float(t)
        acc *= math.exp(-(t - prev) / b)
        prev = t
        j = x_idx.get(t)
        if j is not None and j >= 1:
            acc += rr[j - 1]
        i = u_idx.get(t)
        if i is not None:
            out[i] = acc
    acc = np.zeros(rr.shape[1:])
    prev = float(pts[-1])
    for t in pts[::-1]:  # backward: cells wholly to the right
        t = float(t)
        acc *= math.exp(-(prev - t) / b)
        prev = t
        j = x_idx.get(t)
        if j is not None and j <= xe.shape[0] - 2:
            acc += ll[j]
        i = u_idx.get(t)
        if i is not None:
            out[i] += acc
    return out


# --------------------------------------------------------------------------- the density on the output grid
def _density_bracket(us: list[Array], xs: list[Array], m: Array, s: Array, b: Array, kappa: float
                     ) -> tuple[Array, Array]:
    """Certified [ln p_lo, ln p_hi] at the output nodes us[0] × us[1] × us[2] (noise coordinates, permuted)."""
    s12 = s[1:, 1:]
    beta = np.linalg.solve(s12, s[1:, 0])
    cond = math.sqrt(max(float(s[0, 0] - beta @ s[1:, 0]), 0.0))
    prec = np.linalg.inv(s)
    p12 = np.linalg.inv(s12)
    d1, d2 = xs[1] - m[1], xs[2] - m[2]
    quad = (p12[0, 0] * d1[:, None] ** 2 + 2.0 * p12[0, 1] * d1[:, None] * d2[None, :] + p12[1, 1] * d2[None, :] ** 2)
    lphi = -0.5 * quad - math.log(2.0 * math.pi) - 0.5 * math.log(float(np.linalg.det(s12)))
    rnd = 1e-12 * (1.0 + float(np.abs(lphi).max()))
    shift = beta[0] * d1[:, None] + beta[1] * d2[None, :]
    span = (float(us[0].min()) - float(m[0]) - float(shift.max()), float(us[0].max()) - float(m[0]) - float(shift.min()))
    pad = 1e-9 * (1.0 + abs(span[0]) + abs(span[1]))
    nodes, vals, err = _gl_table((span[0] - pad, span[1] + pad), cond, float(b[0]), kappa)
    n0 = us[0].size
    lo2 = np.empty((us[1].size, n0, xs[2].size))
    hi2 = np.empty_like(lo2)
    chunk = max(1, CHUNK // (xs[1].size * xs[2].size))
    for c0 in range(0, n0, chunk):  # steps 1 and 2 are independent along u₀: chunks bound the memory
        rows = us[0][c0:c0 + chunk]
        t = rows[:, None, None] - m[0] - shift[None, :, :]
        f_lo = np.interp(t, nodes, vals) + lphi[None, :, :]
        f_lo -= rnd
        f_hi = f_lo + (err + 2.0 * rnd)
        # step 2: integrate x₁ (axis 1), output at us[1]
        lo2[:, c0:c0 + chunk], hi2[:, c0:c0 + chunk] = _laplace_conv(
            np.moveaxis(f_lo, 1, 0), np.moveaxis(f_hi, 1, 0), xs[1], us[1], float(b[1]), float(prec[1, 1]),
            gap=err + 2.0 * rnd)
    # step 3: integrate x₂ (axis 2 of (u₀, u₁, x₂)), output at us[2]
    lo3, hi3 = _laplace_conv(np.moveaxis(np.moveaxis(lo2, 0, 1), 2, 0), np.moveaxis(np.moveaxis(hi2, 0, 1), 2, 0),
                             xs[2], us[2], float(b[2]), float(prec[2, 2]))
    llo, lhi = np.moveaxis(lo3, 0, 2), np.moveaxis(hi3, 0, 2)
    # the x-window: p <= p_in + τ, τ = P(X ∉ W₁ × W₂)/(8 b₀ b₁ b₂) (g <= 1/2b₀)
    tau = 2.0 * 2.0 * float(special.ndtr(-GAUSS_REACH)) / (8.0 * float(np.prod(b)))
    return llo, np.logaddexp(lhi, math.log(tau))


# --------------------------------------------------------------------------- cells
def _secant_excess(lo: Array, hi: Array, ws: list[Array]) -> Array:
    """Per cell, e with ln p <= I(hi) + e on the cell, from node brackets lo <= ln p <= hi of a concave ln p alone.

    For a corner v and the directions into the cell, every supergradient component is bounded by the chord to the
    node behind v: σ_k g_k <= (hi(v) − lo(v − σ_k h_k e_k))/h_k =: ĝ_k^v, so ln p <= T_v(u) := hi(v) + Σ_k ĝ_k^v |u_k − v_k|.
    Hence ln p <= Σ_v ω_v(u) T_v(u) with ω_v the trilinear weights (a convex combination of upper bounds), and as
    I(hi) = Σ_v ω_v hi(v) and ω_v |u_k − v_k| = w_k t_k(1 − t_k) Π_{j≠k} ω_j,
    ln p − I(hi) <= Σ_k t_k(1 − t_k) (A_k⁰ + A_k¹) <= Σ_k (A_k⁰ + A_k¹)_+/4, with A_k^s the largest ĝ_k^v w_k over the
    four corners of the face v_k = s. Second order in the cell size where ln p is smooth (the slopes of the two faces
    cancel), local (the actual curvature), +inf on border cells and where a bracket is not finite.
    """
    n = [w.shape[0] for w in ws]
    pad = np.full((n[0] + 3, n[1] + 3, n[2] + 3), -np.inf)
    pad[1:-1, 1:-1, 1:-1] = lo
    inf = np.array([np.inf])
    total = np.zeros(tuple(n))
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(3):
            o = [i for i in range(3) if i != k]
            faces = []
            for side, step in ((0, -1), (1, 1)):
                sl = [slice(1, 2 + n[i]) for i in range(3)]
                sl[k] = slice(1 + step, 2 + step + n[k])
                d = hi - pad[tuple(sl)]  # hi(node) − lo(node behind it), at every node
                cut = [slice(0, n[i] + 1) for i in range(3)]
                cut[k] = slice(side, side + n[k])
                d = d[tuple(cut)]
                quad = []
                for a, c in product((0, 1), repeat=2):
                    s2 = [slice(None)] * 3
                    s2[o[0]] = slice(a, a + n[o[0]])
                    s2[o[1]] = slice(c, c + n[o[1]])
                    quad.append(d[tuple(s2)])
                m = np.maximum(np.maximum(quad[0], quad[1]), np.maximum(quad[2], quad[3]))
                w = ws[k]
                behind = np.concatenate([inf, w[:-1]]) if side == 0 else np.concatenate([w[1:], inf])
                shp = [1, 1, 1]
                shp[k] = n[k]
                m = m * (w / behind).reshape(shp)
                faces.append(np.where(np.isnan(m), np.inf, m))
            total = total + np.maximum(faces[0] + faces[1], 0.0) / 4.0
    return np.where(np.isnan(total), np.inf, total)


def _interp_excess(prec: Array, b: Array, ws: list[Array]) -> Array:
    """Per cell, e with ln p − I(ln p) <= e: the least of Σ_k w_k/(2 b_k) (Lipschitz) and Σ_k w_k² (S⁻¹)_kk/8
    (∇² ln p ⪰ −S⁻¹; f − I₀I₁I₂f = (f − I₀f) + I₀(f − I₁f) + I₀I₁(f − I₂f))."""
    g = np.meshgrid(*ws, indexing="ij")
    lip = sum(g[k] / (2.0 * float(b[k])) for k in range(3))
    hess = sum(g[k] ** 2 * float(prec[k, k]) / 8.0 for k in range(3))
    return np.minimum(lip, hess)


def delta_bracket_3d(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, basis: ArrayLike,
                     scales: ArrayLike, epsilon: float, *, kappa: float = 0.25,
                     reach: float = LAPLACE_REACH) -> Bracket3d:
    """Certified δ(ε) brackets (both orders) of N(μ_p, Σ_p) ⊛ B·Lap(b) against N(μ_q, Σ_q) ⊛ B·Lap(b) in 3-D.

    ``basis``: orthonormal 3 × 3; ``scales``: b₀, b₁, b₂ > 0; covariances positive definite; ``kappa``: grid
    resolution (cells of κ·max(b_k, σ_k) on the core; the bracket holds for any value; smaller is tighter and
    slower, ~κ⁻³). Per output cell C (corner brackets from :func:`_density_bracket`, e from :func:`_interp_excess`
    and :func:`_secant_excess`, I the trilinear interpolant):

    * P(C) <= vol e^{e_P} mean_corners p_hi (e^{I} is convex along each axis), P(C) >= vol exp(mean_corners ln p_lo);
    * ℓ⁺ = max_corners(ln p_hi − ln q_lo) + e_P, ℓ⁻ = min_corners(ln p_lo − ln q_hi) − e_Q;
    * ∫_C (p − e^ε q)_+ is 0 if ℓ⁺ <= ε, <= P⁺(1 − e^{ε−ℓ⁺}), <= P⁺ − e^ε Q⁻ if ℓ⁻ >= ε, and
      >= max(P⁻ − e^ε Q⁺, P⁻(1 − e^{ε−ℓ⁻})_+, 0);

    plus (upper end) the P-mass outside the output window, 3 (2Φ(−GAUSS_REACH) + e^{−reach}) (``reach``: Laplace
    scales of the window beyond the Gaussian reach, :data:`LAPLACE_REACH` by default, :func:`reach_for`).
    """
    bm = np.asarray(basis, dtype=float)
    b = np.asarray(scales, dtype=float).reshape(-1)
    if bm.shape != (3, 3) or not np.allclose(bm.T @ bm, np.eye(3), atol=1e-9):
        raise ValueError("basis must be an orthonormal 3 × 3 matrix")
    if b.shape != (3,) or not np.all(b > 0) or not np.all(np.isfinite(b)):
        raise ValueError("scales must be three positive numbers")
    if not grid_3d_applies(3, bm, cov_p, cov_q):
        raise ValueError("the covariances must be positive definite")
    plan = _plan(bm, mu_p, cov_p, mu_q, cov_q, b, epsilon, kappa, reach)
    _charge(plan.work, None)
    return _run(plan, epsilon, kappa, reach)


@dataclass(frozen=True)
class _Plan:
    """The grid of :func:`delta_bracket_3d` before any density is computed: both laws in noise coordinates (permuted
    for the least work), the output nodes ``us``, the integration edges ``xs``, and ``work`` (:func:`grid_work`)."""

    ms: list[Array]
    ss: list[Array]
    b: Array
    us: list[Array]
    xs: list[Array]
    work: int


def grid_work(us: list[Array], xs: list[Array]) -> int:
    """The work of one grid in elements: the two laws' passes of steps 1–2 (N₀·M₁·M₂ elements) and step 3
    (N₀·N₁·M₂), plus the cell pass (N₀·N₁·N₂ cells), with N_k output nodes and M_k integration edges of coordinate k
    (after the permutation). A count of array elements, not a time: :class:`WorkBudget` spends it."""
    n0, n1, n2 = (u.size for u in us)
    m1, m2 = xs[1].size, xs[2].size
    return int(2 * (n0 * m1 * m2 + n0 * n1 * m2) + (n0 - 1) * (n1 - 1) * (n2 - 1))


def _plan(bm: Array, mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, b: Array, epsilon: float,
          kappa: float, reach: float) -> _Plan:
    ms = [bm.T @ np.asarray(mu_p, dtype=float).reshape(3), bm.T @ np.asarray(mu_q, dtype=float).reshape(3)]
    ss = [bm.T @ np.asarray(c, dtype=float) @ bm for c in (cov_p, cov_q)]
    ss = [0.5 * (s + s.T) for s in ss]
    sds = [[math.sqrt(float(s[k, k])) for s in ss] for k in range(3)]
    conds = [[1.0 / math.sqrt(float(np.linalg.inv(s)[k, k])) for s in ss] for k in range(3)]
    if not reach > 0:
        raise ValueError("reach must be positive")
    us = [_u_axis(ms, sds[k], conds[k], float(b[k]), k, kappa, reach) for k in range(3)]
    xs = [_x_axis(us[k], ms, sds[k], conds[k], k, kappa, epsilon) for k in range(3)]
    # the closed-form coordinate and the order of the two convolutions: least work N₀M₁M₂ + N₀N₁M₂
    perm = min(((i, j, k) for i, j, k in product(range(3), repeat=3) if len({i, j, k}) == 3),
               key=lambda p: us[p[0]].size * xs[p[1]].size * xs[p[2]].size + us[p[0]].size * us[p[1]].size * xs[p[2]].size)
    pr = list(perm)
    us = [us[k] for k in pr]
    xs = [xs[k] for k in pr]
    return _Plan([m[pr] for m in ms], [s[np.ix_(pr, pr)] for s in ss], b[pr], us, xs, grid_work(us, xs))


def _run(plan: _Plan, epsilon: float, kappa: float, reach: float) -> Bracket3d:
    """The brackets of :func:`delta_bracket_3d` on a planned grid."""
    ms, ss, b, us, xs = plan.ms, plan.ss, plan.b, plan.us, plan.xs
    ws = [np.diff(x) for x in us]
    nodes = [_density_bracket(us, xs, m, s, b, kappa) for m, s in zip(ms, ss, strict=True)]
    precs: list[Array] = [np.asarray(np.linalg.inv(s), dtype=np.float64) for s in ss]
    n0 = ws[0].size
    slab = max(1, CHUNK // (ws[1].size * ws[2].size))
    sums = np.zeros((2, 2))
    for i0 in range(0, n0, slab):  # slabs of cells along u₀ (arrays stay small; the secant needs one node more)
        sums += _slab_sums(nodes, precs, b, ws, i0, min(i0 + slab, n0), epsilon)
    out = 3.0 * (2.0 * float(special.ndtr(-GAUSS_REACH)) + math.exp(-reach))
    res = [(max(0.0, float(sums[k, 0])), min(1.0, float(sums[k, 1]) + out)) for k in range(2)]
    return Bracket3d(res[0], res[1], int(n0 * ws[1].size * ws[2].size))


def _cell_reduce(a: Array, op: np.ufunc) -> Array:
    """``op`` (maximum, minimum or add) over the 8 corners of every cell, one axis at a time (3 passes, not 7)."""
    m = op(a[:-1], a[1:])
    m = op(m[:, :-1], m[:, 1:])
    return op(m[:, :, :-1], m[:, :, 1:])


def _slab_sums(nodes: list[tuple[Array, Array]], precs: list[Array], b: Array, ws: list[Array], i0: int, i1: int,
               epsilon: float) -> Array:
    """[[lower, upper] of ∫ (p − e^ε q)_+, [lower, upper] of ∫ (q − e^ε p)_+] over the cells i0 <= i < i1 along u₀
    (the per-cell bounds of :func:`delta_bracket_3d`). The secant excess is computed only on the box of cells whose
    loss could exceed ε under the cheaper interpolation excess (elsewhere both upper ends are 0 either way, and the
    larger excess only lowers the lower ends). Corner maxima, minima and sums are taken of node arrays
    (:func:`_cell_reduce`: each node's difference and exponential once, not once per cell it is a corner of)."""
    wcut = [ws[0][i0:i1], ws[1], ws[2]]
    vol = wcut[0][:, None, None] * wcut[1][None, :, None] * wcut[2][None, None, :]
    cut = [(llo[i0:i1 + 1], lhi[i0:i1 + 1]) for llo, lhi in nodes]
    es = [_interp_excess(prec, b, wcut) for prec in precs]
    with np.errstate(invalid="ignore"):
        dmax = [_cell_reduce(cut[i][1] - cut[j][0], np.maximum) for i, j in ((0, 1), (1, 0))]
        dmax = [np.where(np.isnan(d), np.inf, d) for d in dmax]
        active = (dmax[0] + es[0] > epsilon) | (dmax[1] + es[1] > epsilon)
    if active.any():
        box = []
        for ax in range(3):
            other = tuple(x for x in range(3) if x != ax)
            idx = np.flatnonzero(active.any(axis=other))
            box.append((int(idx[0]), int(idx[-1]) + 1))
        lo_c = [box[0][0] + i0, box[1][0], box[2][0]]  # global cell ranges of the box
        hi_c = [box[0][1] + i0, box[1][1], box[2][1]]
        nb = [slice(max(lo_c[k] - 1, 0), min(hi_c[k] + 2, ws[k].size + 1)) for k in range(3)]
        wsb = [ws[k][nb[k].start:nb[k].stop - 1] for k in range(3)]
        crop = tuple(slice(lo_c[k] - nb[k].start, hi_c[k] - nb[k].start) for k in range(3))
        local = tuple(slice(box[k][0], box[k][1]) for k in range(3))
        for (llo, lhi), e in zip(nodes, es, strict=True):
            sec = _secant_excess(llo[nb[0], nb[1], nb[2]], lhi[nb[0], nb[1], nb[2]], wsb)[crop]
            e[local] = np.minimum(e[local], sec)
    laws = []
    for (n_lo, n_hi), e in zip(cut, es, strict=True):
        with np.errstate(over="ignore", under="ignore"):
            m_hi = vol * np.exp(e) * (_cell_reduce(np.exp(n_hi), np.add) / 8.0) * (1.0 + 1e-12)
            m_lo = vol * np.exp(_cell_reduce(n_lo, np.add) / 8.0) * (1.0 - 1e-12)
        laws.append((e, m_lo, m_hi))
    ee = math.exp(epsilon)
    res = np.zeros((2, 2))
    for k, (i, j) in enumerate(((0, 1), (1, 0))):
        (ep, pm_lo, pm_hi), (eq, qm_lo, qm_hi) = laws[i], laws[j]
        l_up = dmax[k] + ep
        with np.errstate(invalid="ignore"):
            plo, qhi = cut[i][0], cut[j][1]
            l_dn = _cell_reduce(np.where(np.isfinite(plo), plo - qhi, -np.inf), np.minimum) - eq
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            cross = pm_hi * -np.expm1(np.minimum(epsilon - l_up, 0.0))
            full = np.maximum(pm_hi - ee * qm_lo, 0.0)
            up = np.where(l_up <= epsilon, 0.0, np.where(l_dn >= epsilon, np.minimum(cross, full), cross))
            low = np.maximum(np.maximum(pm_lo - ee * qm_hi, 0.0), pm_lo * -np.expm1(np.minimum(epsilon - l_dn, 0.0)))
        res[k] = (float(np.sum(low)), float(np.sum(up)))
    return res


#: Grid resolutions tried in turn by :func:`pair_bracket_3d` (coarse first: each step costs ~κ⁻³); a calibration
#: narrows them for each phase of its search (:func:`resolution_3d`). Since the grid became the 3-D default (issue 25,
#: lap3d31) the ladder stops at κ = 0.3: a no-target δ′ (the mechanisms' claim without a δ target) then costs ~0.3–0.7 s
#: CPU instead of ~1–2 s (κ = 0.2) or ~5 s (κ = 0.14, the first two 3-D rounds), and is 2–4× the κ = 0.2 one but still
#: 20–3e7× below the coupling bound's on tests/mechanisms/test_mechanisms_exact.py's 3-D model (ε = 0.2 … 10).
#: A finer ladder is one :func:`resolution_3d` away.
LADDER = (0.5, 0.3)
#: Decay of the upper end with κ assumed when predicting the finest grid's (upper ∝ κ^SHRINK), deliberately
#: optimistic (as :data:`distpriv.accounting.laplace_nd.SHRINK`): near the least scale δ falls to ~0 within a few %
#: of the scale (a bounded loss), and the upper end falls from 1.3e-2 at κ = 0.5 to 1.2e-4 at κ = 0.3 (κ^9); with
#: κ² (the first 3-D round) the ladder was abandoned at κ = 0.5 on points the next grid certified.
SHRINK = 6.0
#: Relative width of the bracket at which :func:`pair_bracket_3d` stops refining.
RTOL = 0.05

_LADDER: ContextVar[tuple[float, ...]] = ContextVar("distpriv_laplace_3d_ladder", default=LADDER)
#: True inside :func:`resolution_3d`: decisions use the shorter window of :func:`reach_for` (a calibration's search).
_SHORT: ContextVar[bool] = ContextVar("distpriv_laplace_3d_short", default=False)


@contextlib.contextmanager
def resolution_3d(ladder: tuple[float, ...]) -> Iterator[None]:
    """Within the block, :func:`pair_bracket_3d` refines along ``ladder`` instead of :data:`LADDER`, and its decisions
    use the shorter window of :func:`reach_for` (every κ and window give a certified bracket: this changes only how
    tight and how fast, never whether a claim holds)."""
    with ladder_scope(_LADDER, ladder):
        token = _SHORT.set(True)
        try:
            yield
        finally:
            _SHORT.reset(token)


_CACHE: dict[tuple[bytes, float, float, float], tuple[Bracket3d, int]] = {}
_CACHE_SIZE = 32


class BudgetExhausted(Exception):
    """Raised inside this module when a grid would take the :class:`WorkBudget` in force past its limit (caught by
    :func:`pair_bracket_3d`, which then keeps the bracket it has, or none)."""


@dataclass
class WorkBudget:
    """A deterministic allowance of 3-D grid work for one calibration or claim (issue 25): ``limit`` elements of
    :func:`grid_work`, charged once per grid (a grid read back from the memo costs as much as a computed one, so the
    outcome never depends on what earlier calls left in the memo, nor on the machine's speed or load). The first
    grid the remainder cannot pay is refused (:attr:`hit`), and so is every later one."""

    limit: int
    spent: int = 0
    grids: int = 0
    refused: int = 0
    paid: set[tuple[bytes, float, float, float]] = field(default_factory=set)

    @property
    def hit(self) -> bool:
        """True once a grid was refused."""
        return self.refused > 0


_BUDGET: ContextVar[WorkBudget | None] = ContextVar("distpriv_laplace_3d_budget", default=None)


@contextlib.contextmanager
def work_budget(limit: int) -> Iterator[WorkBudget]:
    """Within the block, the 3-D grids share a :class:`WorkBudget` of ``limit`` elements (yielded, to read what was
    spent and whether it was reached). Outside any such block the grids are not limited."""
    if not (isinstance(limit, int) and limit >= 0):
        raise InvalidParameterError(f"a work budget is a count of grid elements >= 0, got {limit!r}", argument="limit")
    budget = WorkBudget(limit)
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def _charge(work: int, key: tuple[bytes, float, float, float] | None) -> None:
    """Pay ``work`` from the budget in force (once per ``key``), or raise :class:`BudgetExhausted`."""
    budget = _BUDGET.get()
    if budget is None or (key is not None and key in budget.paid):
        return
    if budget.refused or budget.spent + work > budget.limit:
        budget.refused += 1
        raise BudgetExhausted
    budget.spent += work
    budget.grids += 1
    if key is not None:
        budget.paid.add(key)


def reach_for(target: float | None) -> float:
    """Laplace scales of the u-window for a decision at ``target`` (:data:`LAPLACE_REACH` without one): the mass the
    window leaves outside, 3 e^{−reach}, added to the upper end, is TAIL_SHARE · target (never less than REACH_MIN
    scales, never more than LAPLACE_REACH)."""
    if target is None or not target > 0:
        return LAPLACE_REACH
    return min(LAPLACE_REACH, max(REACH_MIN, math.log(3.0 / (TAIL_SHARE * target))))


def _key(parts: list[Array], epsilon: float, kappa: float, reach: float) -> tuple[bytes, float, float, float]:
    return b"".join(np.ascontiguousarray(x).tobytes() for x in parts), float(epsilon), float(kappa), float(reach)


def _cached(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, basis: ArrayLike,
            scales: ArrayLike, epsilon: float, kappa: float, reach: float = LAPLACE_REACH) -> tuple[float, float]:
    """δ of P against Q from one grid computing both orders (memoised: the reverse order is then free)."""
    parts = [np.asarray(x, dtype=float) for x in (mu_p, cov_p, mu_q, cov_q, basis, scales)]
    key = _key(parts, epsilon, kappa, reach)
    rkey = _key([parts[2], parts[3], parts[0], parts[1], parts[4], parts[5]], epsilon, kappa, reach)
    paid = min(key, rkey)  # one grid gives both orders: paid once
    if key in _CACHE:
        _charge(_CACHE[key][1], paid)
        return _CACHE[key][0].forward
    if rkey in _CACHE:
        _charge(_CACHE[rkey][1], paid)
        return _CACHE[rkey][0].backward
    bm = np.asarray(parts[4], dtype=float)
    b = np.asarray(parts[5], dtype=float).reshape(-1)
    if (bm.shape != (3, 3) or b.shape != (3,) or not np.all(b > 0) or not np.all(np.isfinite(b))
            or not grid_3d_applies(3, bm, parts[1], parts[3])):
        raise ValueError("the 3-D grid needs an orthonormal 3 × 3 basis, three positive scales and positive "
                         "definite covariances")
    plan = _plan(bm, parts[0], parts[1], parts[2], parts[3], b, epsilon, kappa, reach)
    _charge(plan.work, paid)
    br = _run(plan, epsilon, kappa, reach)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = (br, plan.work)
    return br.forward


def pair_bracket_3d(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, basis: ArrayLike,
                 scales: ArrayLike, epsilon: float, *, target: float | None = None,
                 beat: float = math.inf) -> tuple[float, float, float]:
    """(lower, upper, κ used) of δ of P against Q, refined along :data:`LADDER` (or the :func:`resolution_3d` in force)
    until the bracket is within :data:`RTOL` or, with ``target``, decides δ <= target (every κ gives a certified
    bracket; with ``target``, inside a calibration's :func:`resolution_3d`, the window reaches :func:`reach_for`
    Laplace scales; elsewhere :data:`LAPLACE_REACH`, so that a decision at a no-target bracket's upper end reads that
    bracket's grids and proves it: the engine certifies what a no-target δ′ claims, topup.proven_claim). ``beat``: the bound already proven
    (the coupling bound); the ladder stops when even the finest grid, predicted optimistically as
    up·(κ_min/κ)^SHRINK, cannot beat ``beat`` (with or without a target, so that a decision at a no-target bracket's
    upper end refines as far as that bracket did; a calibration runs one κ per phase, where this never applies).
    Under a
    :func:`work_budget`, the ladder stops at the first grid the budget cannot pay (the bracket so far stands; the
    trivial [0, 1] if none)."""
    ladder = _LADDER.get()
    lo, up, kap = 0.0, 1.0, ladder[0]
    goal = beat  # not the target: a decision runs the ladder as far as a no-target bracket (topup.proven_claim)
    reach = reach_for(target) if _SHORT.get() else LAPLACE_REACH
    done = kap
    for kap in ladder:
        try:
            lo, up = _cached(mu_p, cov_p, mu_q, cov_q, basis, scales, epsilon, kap, reach)
        except BudgetExhausted:  # the budget in force is spent: the last bracket (or the trivial one) stands
            return lo, up, done
        done = kap
        if up - lo <= RTOL * up + 1e-15 or (target is not None and (up <= target or lo > target)):
            break
        if up * (ladder[-1] / kap) ** SHRINK > goal and lo <= goal:
            break
    return lo, up, kap
