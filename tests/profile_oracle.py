"""An independent oracle for the privacy profile of what a central mechanism outputs.

Written apart from ``distpriv``'s accounting (it imports nothing from ``distpriv``): the
only thing it takes from the library is a mechanism's *noise law*, read by
:func:`noise_law` / :func:`claim` below (the one place that touches mechanism attributes).

Setting (Chen & Ohrimenko, Definition 3.2). Under θ the query value is
F ~ N(μ_θ, Σ_θ) and the mechanism outputs Y = F + Z with Z independent of F. For a
secret pair (a, b) the smallest δ at a given ε is the hockey-stick divergence

    δ_ab(ε) = sup_S P_a(S) − e^ε P_b(S) = ∫ max(0, p_a(y) − e^ε p_b(y)) dy,

and the pair is (ε, δ)-protected iff max(δ_ab, δ_ba) ≤ δ. The oracle evaluates p_a and p_b
on a grid and integrates max(0, p_a − e^ε p_b) with the trapezoid rule, in 1-D and 2-D.
The divergence is invariant under any bijection of the output space, so the grid may be
laid in whatever coordinates make the densities simple (whitened, rotated onto the
noise directions); the Jacobian cancels between p_a and p_b.

Output densities:

* Gaussian noise N(0, Σ_Z) (and no noise, Σ_Z = 0): Y ~ N(μ, Σ + Σ_Z). In 2-D the grid is
  laid after whitening by Σ_a + Σ_Z and rotating onto the eigenvectors of the whitened
  Σ_b + Σ_Z, where both densities are products of 1-D normals. Singular totals are
  handled exactly: supports that differ (different range, or parallel affine subspaces)
  give δ = 1; equal supports reduce to the range.
* Laplace noise in 1-D: N(m, s²) ⊛ Lap(b) has the closed form
  f(y) = (1/4b) e^{s²/2b²} [e^{−y/b} erfc((s/b − y/s)/√2) + e^{y/b} erfc((s/b + y/s)/√2)],
  evaluated in log space with erfcx (:func:`gl_logpdf`).
* Laplace noise along one direction v in 2-D (DirM (L)): with t = vᵀy, u = wᵀy (w ⊥ v),
  p(t, u) = φ(u; m_u, s_uu) · GL(t − m_t − (s_tu/s_uu)(u − m_u); s_t|u, b).
* Laplace noise on two orthonormal directions in 2-D (ExpM (L), Wasserstein): in the noise
  coordinates, q(y1, x2) = φ(x2) GL(y1 − c(x2); s_1|2, b1) is closed form and
  p(y1, y2) = ∫ q(y1, x2) Lap_b2(y2 − x2) dx2 is a numerical convolution: q is interpolated
  piecewise-linearly on a uniform x2 grid and each hat function is integrated exactly
  against the Laplace kernel (:func:`laplace_hat_weights`), so the Laplace kink costs nothing.

Error control. Each grid covers R_GAUSS = 9 standard deviations of every Gaussian part
(mass outside 2Φ(−9) = 2.3e-19) and R_LAP = 32 Laplace scales (mass outside e^{−32} =
1.3e-14); since the integrand is at most p_a, the truncation error is at most the mass
outside, which is added to the tolerance. The integral is computed at resolutions k and
2k (grid spacings halve); the trapezoid and interpolation errors are O(h²), so the error
of the finer value is about a third of their difference once the grids are in the
asymptotic regime (first-order convergence would make it equal to the difference), and
the tolerance reported is SAFETY = 2 times the difference plus truncation plus 1e-13 for
rounding. Against grids three times finer the error of the reported value has been at
most 0.5 of this tolerance on every 2-D sweep model (and 1/6 typically). :meth:`Profile.violates`
flags a claim only when the computed δ exceeds it by more than this tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

R_GAUSS = 9.0
R_LAP = 32.0
ROUNDING = 1e-13
SAFETY = 2.0
MAX_AXIS_POINTS = 400_000
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
SQRT2 = math.sqrt(2.0)
GAUSS_TAIL = float(2.0 * special.ndtr(-R_GAUSS))
LAP_TAIL = math.exp(-R_LAP)

Array = NDArray[np.float64]


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class NoiseLaw:
    """Z added by a mechanism: ``kind`` "gaussian" (N(0, covariance)), "laplace" (basis @ L with
    L_k ~ Lap(scales[k]) independent, basis with orthonormal columns) or "none"."""

    kind: str
    covariance: Array
    basis: Array | None = None
    scales: Array | None = None

    @property
    def dim(self) -> int:
        return int(self.covariance.shape[0])


@dataclass(frozen=True)
class Profile:
    """δ of the outputs at one ε, both orders, with the oracle's numerical error bound."""

    forward: float
    backward: float
    tol: float
    method: str

    @property
    def delta(self) -> float:
        return max(self.forward, self.backward)

    def violates(self, claimed_delta: float) -> bool:
        """True only when δ exceeds the claim by more than the numerical tolerance."""
        return self.delta - self.tol > claimed_delta


def noise_law(mech: Any) -> NoiseLaw:
    """The one accessor of mechanism attributes: its noise law (public API only)."""
    kind = str(mech.kind)
    cov = np.atleast_2d(np.asarray(mech.noise_covariance, dtype=float))
    if kind == "laplace":
        basis = np.asarray(mech.basis, dtype=float).reshape(cov.shape[0], -1)
        scales = np.asarray(mech.scales, dtype=float).reshape(-1)
        gram = basis.T @ basis
        if not np.allclose(gram, np.eye(gram.shape[0]), atol=1e-9):
            raise ValueError("mech.basis: noise directions are not orthonormal")
        return NoiseLaw("laplace", cov, basis, scales)
    if kind not in ("gaussian", "none"):
        raise ValueError(f"mech.kind: unknown noise kind {kind!r}")
    return NoiseLaw(kind, cov if kind == "gaussian" else np.zeros_like(cov))


def claim(mech: Any) -> tuple[float, float]:
    """The (ε, δ) the mechanism's guarantee claims."""
    return float(mech.guarantee.epsilon), float(mech.guarantee.delta)


# --------------------------------------------------------------------------- grids


def piecewise_grid(tiers: Sequence[tuple[float, float, float]]) -> Array:
    """Points covering the union of the intervals [lo, hi] of ``tiers`` (lo, hi, spacing).

    Each elementary segment between interval end points is split uniformly with the finest
    spacing among the tiers covering it (a segment covered by none gets no interior point).
    """
    edges = np.unique(np.array([t[0] for t in tiers] + [t[1] for t in tiers], dtype=float))
    pieces: list[Array] = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        mid = 0.5 * (lo + hi)
        sp = [s for a, b, s in tiers if a <= mid <= b]
        n = 1 if not sp else max(1, math.ceil((hi - lo) / min(sp)))
        pieces.append(lo + (hi - lo) * np.arange(n) / n)
    pieces.append(edges[-1:])
    x = np.concatenate(pieces)
    if x.size > MAX_AXIS_POINTS:
        raise RuntimeError(f"oracle grid too fine: {x.size} points on one axis")
    return x


def gl_tiers(center: float, sd: float, b: float, core_spacing: float, res: int) -> list[tuple[float, float, float]]:
    """Grid tiers for a Gaussian (sd) ⊛ Laplace (b) marginal: the Gaussian core ±R_GAUSS·sd at
    ``core_spacing``/res and, beyond it, R_LAP·b of Laplace tail on each side at max(b, sd)/res
    (for b ≤ sd/2 the mass beyond the core is below 1e-7: P(G + L > 9 sd) ≤
    min_r Φ(r/sd − 9) + e^{−r/b}/2; the two-resolution check covers the rest)."""
    if sd <= 0:
        return [(center - R_LAP * b, center + R_LAP * b, b / res)]
    lo, hi = center - R_GAUSS * sd, center + R_GAUSS * sd
    tail = max(b, sd) / res
    return [(lo, hi, core_spacing / res), (lo - R_LAP * b, lo, tail), (hi, hi + R_LAP * b, tail)]


def trapezoid_weights(x: Array) -> Array:
    """Weights w with Σ w f(x) the trapezoid rule on the (nonuniform) grid x."""
    d = np.diff(x)
    w = np.zeros_like(x)
    w[:-1] += d / 2.0
    w[1:] += d / 2.0
    return w


def positive_part_integral(f: Array, x: Array) -> Array:
    """∫ max(0, f̂) along the last axis, f̂ the piecewise-linear interpolant of f on the grid x.

    Exact for f̂, so a sign change inside a cell costs no kink error: a cell with f0 > 0 > f1
    contributes h f0² / (2 (f0 − f1)) instead of the trapezoid's h f0 / 2.
    """
    h = np.diff(x)
    pos = f > 0.0
    out = np.maximum(f, 0.0) @ trapezoid_weights(x)
    idx = np.nonzero(pos[..., :-1] != pos[..., 1:])
    if idx[-1].size:
        nxt = idx[:-1] + (idx[-1] + 1,)
        f0, f1 = f[idx], f[nxt]
        hi, lo = np.maximum(f0, f1), np.minimum(f0, f1)
        corr = 0.5 * hi * lo / (hi - lo) * h[idx[-1]]  # exact minus trapezoid, <= 0
        if f.ndim == 1:
            out = out + corr.sum()
        else:
            out = out + np.bincount(idx[0], weights=corr, minlength=f.shape[0])
    return out


def hockey_1d(pa: Array, pb: Array, x: Array, epsilon: float) -> tuple[float, float]:
    """(∫ max(0, p_a − e^ε p_b), ∫ max(0, p_b − e^ε p_a)) on the grid x."""
    e = math.exp(epsilon)
    return float(positive_part_integral(pa - e * pb, x)), float(positive_part_integral(pb - e * pa, x))


def hockey_2d(pa: Array, pb: Array, x1: Array, x2: Array, epsilon: float) -> tuple[float, float]:
    """Tensor-grid version of :func:`hockey_1d` (pa, pb of shape (len(x1), len(x2))): the
    positive part is integrated exactly along x2 row by row, then by the trapezoid rule along x1."""
    e = math.exp(epsilon)
    w1 = trapezoid_weights(x1)
    fwd = float(w1 @ positive_part_integral(pa - e * pb, x2))
    bwd = float(w1 @ positive_part_integral(pb - e * pa, x2))
    return fwd, bwd


def converged(fn: Callable[[int], tuple[float, float]], k: int, truncation: float, method: str) -> Profile:
    """Evaluate ``fn`` at resolutions k and 2k; tolerance = SAFETY·|difference| + truncation + rounding."""
    f1, b1 = fn(k)
    f2, b2 = fn(2 * k)
    tol = SAFETY * max(abs(f2 - f1), abs(b2 - b1)) + truncation + ROUNDING
    return Profile(min(max(f2, 0.0), 1.0), min(max(b2, 0.0), 1.0), tol, method)


# --------------------------------------------------------------------------- densities


def gauss_logpdf(x: ArrayLike, mean: float, sd: float) -> Array:
    """log N(x; mean, sd²)."""
    z = (np.asarray(x, dtype=float) - mean) / sd
    return -0.5 * z * z - LOG_SQRT_2PI - math.log(sd)


def gl_logpdf(y: ArrayLike, s: ArrayLike, b: float) -> Array:
    """log density of N(0, s²) ⊛ Lap(b) at y (s may be 0: pure Laplace), in log space.

    f(y) = (1/4b) [T(y) + T(−y)], T(y) = e^{s²/2b² − y/b} erfc(u), u = (s/b − y/s)/√2;
    for u ≥ 0, T(y) = e^{−y²/2s²} erfcx(u) (no overflow), else erfc(u) ∈ [1, 2].
    """
    y = np.asarray(y, dtype=float)
    s = np.broadcast_to(np.asarray(s, dtype=float), np.broadcast_shapes(np.shape(s), y.shape))
    y = np.broadcast_to(y, s.shape)
    pure = s <= 0.0
    ss = np.where(pure, 1.0, s)
    r = ss / b
    terms = []
    for sign in (1.0, -1.0):
        z = sign * y / ss
        u = (r - z) * (1.0 / SQRT2)
        t = np.empty(u.shape)
        big = u >= 0.0
        ub, zb = u[big], z[big]
        t[big] = -0.5 * zb * zb + np.log(special.erfcx(ub))
        sm = ~big
        rs = r[sm] if r.ndim else r
        t[sm] = 0.5 * rs * rs - sign * y[sm] / b + np.log(special.erfc(u[sm]))
        terms.append(t)
    out = np.logaddexp(terms[0], terms[1]) - math.log(4.0 * b)
    if pure.any():
        out = np.where(pure, -np.abs(y) / b - math.log(2.0 * b), out)
    return out


def laplace_hat_weights(y: ArrayLike, x: Array, b: float) -> Array:
    """W[i, j] = ∫ hat_j(t) Lap_b(y_i − t) dt for the hat functions of a uniform grid x.

    Exact: with H(z) = (b/2) e^{−|z|/b} + |z|/2 (H'' = Lap_b), W = [H(z+h) − 2H(z) + H(z−h)]/h,
    z = y − x_j, which is (2b/h) sinh²(h/2b) e^{−|z|/b} for |z| ≥ h. End nodes get weight 0
    (the interpolated function is taken to vanish there).
    """
    yv = np.asarray(y, dtype=float).reshape(-1)
    h = float(x[1] - x[0])
    z = np.abs(yv[:, None] - x[None, :])
    ez = np.exp(-z / b)
    w = (2.0 * b / h) * math.sinh(h / (2.0 * b)) ** 2 * ez
    near = z < h
    zn, en = z[near], ez[near]
    w[near] = ((b / 2.0) * en * (math.expm1(-h / b) + np.expm1((2.0 * zn - h) / b)) + (h - zn)) / h
    w[:, 0] = 0.0
    w[:, -1] = 0.0
    return w


# --------------------------------------------------------------------------- Gaussian outputs


def _rank_basis(c: Array, scale: float) -> Array:
    """Orthonormal basis (columns) of the range of the PSD matrix c."""
    w, v = np.linalg.eigh(c)
    return v[:, w > 1e-12 * scale]


def gaussian_outputs(mu_a: Array, ca: Array, mu_b: Array, cb: Array, epsilon: float, k: int = 12) -> Profile:
    """δ between N(μ_a, C_a) and N(μ_b, C_b) in 1 or 2 dimensions (C may be singular)."""
    mu_a, mu_b = np.atleast_1d(mu_a).astype(float), np.atleast_1d(mu_b).astype(float)
    ca, cb = np.atleast_2d(ca).astype(float), np.atleast_2d(cb).astype(float)
    m = mu_a.size
    scale = max(float(np.abs(ca).max()), float(np.abs(cb).max()), 1e-300)
    va, vb = _rank_basis(ca, scale), _rank_basis(cb, scale)
    if va.shape[1] < m or vb.shape[1] < m:
        same = va.shape[1] == vb.shape[1] and np.allclose(va @ va.T, vb @ vb.T, atol=1e-9)
        diff = mu_b - mu_a
        off = diff - va @ (va.T @ diff) if va.shape[1] else diff
        if not same or np.linalg.norm(off) > 1e-9 * (np.linalg.norm(diff) + math.sqrt(scale)):
            return Profile(1.0, 1.0, 0.0, "mutually singular supports")
        if va.shape[1] == 0:
            return Profile(0.0, 0.0, 0.0, "identical point masses")
        return gaussian_outputs(va.T @ mu_a, va.T @ ca @ va, va.T @ mu_b, va.T @ cb @ va, epsilon, k)
    # whiten by C_a, then rotate onto the eigenvectors of the whitened C_b: both are products.
    lc = np.linalg.cholesky(ca)
    mw = np.linalg.solve(lc, mu_b - mu_a)
    cw = np.linalg.solve(lc, np.linalg.solve(lc, cb).T)
    lam, q = np.linalg.eigh(0.5 * (cw + cw.T))
    shift = q.T @ mw
    sd = np.sqrt(lam)
    kk = k * (6 if m == 1 else 1)

    def at(res: int) -> tuple[float, float]:
        axes = []
        for i in range(m):
            x = piecewise_grid([(-R_GAUSS, R_GAUSS, 1.0 / res),
                                (shift[i] - R_GAUSS * sd[i], shift[i] + R_GAUSS * sd[i], sd[i] / res)])
            axes.append((x, trapezoid_weights(x), np.exp(gauss_logpdf(x, 0.0, 1.0)),
                         np.exp(gauss_logpdf(x, shift[i], sd[i]))))
        if m == 1:
            x, w, pa, pb = axes[0]
            return hockey_1d(pa, pb, x, epsilon)
        (x1, _, a1, b1), (x2, _, a2, b2) = axes
        return hockey_2d(np.outer(a1, a2), np.outer(b1, b2), x1, x2, epsilon)

    return converged(at, kk, m * GAUSS_TAIL, f"gaussian {m}-D grid")


# --------------------------------------------------------------------------- Laplace outputs


def laplace_1d(mu_a: float, var_a: float, mu_b: float, var_b: float, b: float, epsilon: float, k: int = 64) -> Profile:
    """δ between N(μ_a, s_a²) ⊛ Lap(b) and N(μ_b, s_b²) ⊛ Lap(b) (closed-form densities)."""
    sa, sb = math.sqrt(max(var_a, 0.0)), math.sqrt(max(var_b, 0.0))

    def at(res: int) -> tuple[float, float]:
        x = piecewise_grid(gl_tiers(mu_a, sa, b, sa, res) + gl_tiers(mu_b, sb, b, sb, res))
        pa = np.exp(gl_logpdf(x - mu_a, sa, b))
        pb = np.exp(gl_logpdf(x - mu_b, sb, b))
        return hockey_1d(pa, pb, x, epsilon)

    return converged(at, k, GAUSS_TAIL + LAP_TAIL, "gauss*laplace 1-D closed form")


def _in_basis(mu: Array, cov: Array, rot: Array) -> tuple[Array, Array]:
    return rot.T @ mu, rot.T @ cov @ rot


@dataclass(frozen=True)
class _DirPart:
    """Gaussian part in (t, u) = (along v, across v) coordinates, conditional form."""

    mt: float
    mu: float
    stt: float
    suu: float
    slope: float  # s_tu / s_uu
    sc: float  # conditional sd of t given u

    @classmethod
    def of(cls, m: Array, s: Array) -> _DirPart:
        slope = s[0, 1] / s[1, 1]
        sc = math.sqrt(max(s[0, 0] - s[0, 1] ** 2 / s[1, 1], 0.0))
        return cls(float(m[0]), float(m[1]), float(s[0, 0]), float(s[1, 1]), float(slope), sc)

    def logpdf(self, t: Array, u: Array, b: float, shear: float = 0.0) -> Array:
        """log p at (t' = t − shear·u, u) on the tensor grid u × t' (the shear has Jacobian 1)."""
        c = self.mt + self.slope * (u - self.mu) - shear * u
        return gauss_logpdf(u, self.mu, math.sqrt(self.suu))[:, None] + gl_logpdf(t[None, :] - c[:, None], self.sc, b)

    def sheared(self, shear: float) -> tuple[float, float]:
        """Mean and sd of the Gaussian part of t' = t − shear·u."""
        var = self.stt - 2 * shear * self.slope * self.suu + shear**2 * self.suu
        return self.mt - shear * self.mu, math.sqrt(max(var, self.sc**2))


def directional_laplace_2d(mu_a: Array, cov_a: Array, mu_b: Array, cov_b: Array, v: Array, b: float,
                           epsilon: float, k: int = 8) -> Profile:
    """δ of F + v·L, L ~ Lap(b), F ~ N(μ_θ, Σ_θ) in 2-D (DirM (L)); closed-form conditional densities.

    The grid is laid in (t − κu, u) with κ the mean of the two regression slopes of t on u,
    so that thin correlated ridges run along the grid; u is spaced to follow how fast the
    ridges move relative to the grid (|slope − κ|), t' to resolve max(s_t|u, b).
    """
    v = np.asarray(v, dtype=float).reshape(-1)
    v = v / np.linalg.norm(v)
    rot = np.column_stack([v, [-v[1], v[0]]])
    (ma, sa), (mb, sb) = _in_basis(mu_a, cov_a, rot), _in_basis(mu_b, cov_b, rot)
    scale = max(float(np.abs(sa).max()), float(np.abs(sb).max()), 1e-300)
    da, db = sa[1, 1] <= 1e-12 * scale, sb[1, 1] <= 1e-12 * scale
    if da or db:  # u = wᵀF is (a.s.) constant under at least one θ
        if da and db and abs(ma[1] - mb[1]) <= 1e-9 * (abs(ma[1]) + abs(mb[1]) + math.sqrt(scale)):
            return laplace_1d(ma[0], sa[0, 0], mb[0], sb[0, 0], b, epsilon)
        return Profile(1.0, 1.0, 0.0, "orthogonal coordinate singular under one θ")
    parts = (_DirPart.of(ma, sa), _DirPart.of(mb, sb))
    shear = 0.5 * (parts[0].slope + parts[1].slope)

    def at(res: int) -> tuple[float, float]:
        ut, tt = [], []
        for p in parts:
            su = math.sqrt(p.suu)
            feat = max(p.sc, b)
            drift = abs(p.slope - shear)
            ut.append((p.mu - R_GAUSS * su, p.mu + R_GAUSS * su, min(su, feat / drift if drift else su) / res))
            center, sd = p.sheared(shear)
            tt += gl_tiers(center, sd, b, feat, res)
        u, t = piecewise_grid(ut), piecewise_grid(tt)
        pa, pb = (np.exp(p.logpdf(t, u, b, shear)) for p in parts)
        return hockey_2d(pa, pb, u, t, epsilon)

    return converged(at, k, 2 * GAUSS_TAIL + LAP_TAIL, "directional laplace 2-D closed form")


@dataclass(frozen=True)
class _ConvPart:
    """Gaussian part in the noise coordinates (y1, y2) with independent Laplace b1, b2."""

    m: Array
    s: Array
    b: Array

    @property
    def degenerate2(self) -> bool:
        return bool(self.s[1, 1] <= 1e-12 * max(float(np.abs(self.s).max()), 1e-300))

    def cond_sd(self, i: int) -> float:
        j = 1 - i
        if self.s[j, j] <= 0:
            return math.sqrt(max(self.s[i, i], 0.0))
        return math.sqrt(max(self.s[i, i] - self.s[0, 1] ** 2 / self.s[j, j], 0.0))

    def conv_grid(self, res: int) -> Array:
        """Uniform x2 grid for the numerical convolution over the Gaussian mass of F2."""
        s2 = math.sqrt(self.s[1, 1])
        slope = self.s[0, 1] / self.s[1, 1]
        feat = max(self.cond_sd(0), float(self.b[0]))
        h = min(s2, feat / abs(slope)) / res if slope else s2 / res
        n = max(4, math.ceil(2 * R_GAUSS * s2 / h))
        if n > MAX_AXIS_POINTS:
            raise RuntimeError(f"oracle convolution grid too fine: {n} points")
        return self.m[1] + np.linspace(-R_GAUSS * s2, R_GAUSS * s2, n + 1)

    def q(self, y1: Array, x2: Array) -> Array:
        """q(y1, x2) = φ(x2; m2, s22) GL(y1 − c(x2); s_1|2, b1), shape (len(y1), len(x2))."""
        slope = self.s[0, 1] / self.s[1, 1]
        c = self.m[0] + slope * (x2 - self.m[1])
        lg = gauss_logpdf(x2, self.m[1], math.sqrt(self.s[1, 1]))
        return np.exp(lg[None, :] + gl_logpdf(y1[:, None] - c[None, :], self.cond_sd(0), float(self.b[0])))

    def density(self, y1: Array, y2: Array, res: int) -> Array:
        """p on the tensor grid y1 × y2."""
        b1, b2 = float(self.b[0]), float(self.b[1])
        if self.degenerate2:
            g1 = np.exp(gl_logpdf(y1 - self.m[0], math.sqrt(max(self.s[0, 0], 0.0)), b1))
            return np.outer(g1, np.exp(gl_logpdf(y2 - self.m[1], 0.0, b2)))
        x2 = self.conv_grid(res)
        return self.q(y1, x2) @ laplace_hat_weights(y2, x2, b2).T

    def density_at(self, y: Array, res: int, chunk: int = 20_000) -> Array:
        """p at points y (N, 2) in noise coordinates (for Monte Carlo checks)."""
        b1, b2 = float(self.b[0]), float(self.b[1])
        if self.degenerate2:
            return np.exp(gl_logpdf(y[:, 0] - self.m[0], math.sqrt(max(self.s[0, 0], 0.0)), b1)
                          + gl_logpdf(y[:, 1] - self.m[1], 0.0, b2))
        x2 = self.conv_grid(res)
        out = np.empty(y.shape[0])
        for i in range(0, y.shape[0], chunk):
            yy = y[i:i + chunk]
            out[i:i + chunk] = np.einsum("ij,ij->i", self.q(yy[:, 0], x2), laplace_hat_weights(yy[:, 1], x2, b2))
        return out


def _conv_parts(mu_a: Array, cov_a: Array, mu_b: Array, cov_b: Array, basis: Array,
                scales: Array) -> tuple[_ConvPart, _ConvPart, bool]:
    """Both θ in the noise coordinates, axes ordered so the convolution variable is the cheaper one
    (the flag says whether the two noise axes were swapped)."""
    rot = np.asarray(basis, dtype=float)
    b = np.asarray(scales, dtype=float)
    parts = [_ConvPart(*_in_basis(np.asarray(m, float), np.asarray(s, float), rot), b) for m, s in ((mu_a, cov_a), (mu_b, cov_b))]

    def cost(p: _ConvPart) -> float:  # points of the x2 grid per unit resolution
        if p.degenerate2:
            return 0.0
        slope = p.s[0, 1] / p.s[1, 1]
        return 2 * R_GAUSS * max(1.0, math.sqrt(p.s[1, 1]) * abs(slope) / max(p.cond_sd(0), float(p.b[0])))

    swapped = [_ConvPart(p.m[::-1].copy(), p.s[::-1, ::-1].copy(), p.b[::-1].copy()) for p in parts]
    if sum(map(cost, swapped)) < sum(map(cost, parts)):
        return swapped[0], swapped[1], True
    return parts[0], parts[1], False


def product_laplace_2d(mu_a: Array, cov_a: Array, mu_b: Array, cov_b: Array, basis: Array, scales: Array,
                       epsilon: float, k: int = 8) -> Profile:
    """δ of F + B·L with L_i ~ Lap(b_i) independent on two orthonormal directions (ExpM (L)).

    Densities by closed form along noise axis 1 and exact-kernel numerical convolution along
    axis 2. The positive part is integrated exactly along y2 (resolving max(s_2|1, b2)); along
    y1 the row integrals change on the scale of the marginal and of how fast the two ridges
    y2 ≈ m2 + ρ_θ (y1 − m1) (ρ = s12/s11) move apart, which sets the y1 spacing.
    """
    pa, pb, _ = _conv_parts(mu_a, cov_a, mu_b, cov_b, basis, scales)

    def ridge(p: _ConvPart) -> float:
        return float(p.s[0, 1] / p.s[0, 0]) if p.s[0, 0] > 0 else 0.0

    apart = abs(ridge(pa) - ridge(pb))
    width2 = min(max(p.cond_sd(1), float(p.b[1])) for p in (pa, pb))

    def at(res: int) -> tuple[float, float]:
        t1, t2 = [], []
        for p in (pa, pb):
            b1, b2 = float(p.b[0]), float(p.b[1])
            s1, s2 = math.sqrt(max(p.s[0, 0], 0.0)), math.sqrt(max(p.s[1, 1], 0.0))
            outer = max(s1, b1)
            if apart > 0:
                outer = min(outer, width2 / apart)
            t1 += gl_tiers(float(p.m[0]), s1, b1, outer, res)
            t2 += gl_tiers(float(p.m[1]), s2, b2, max(p.cond_sd(1), b2), res)
        y1, y2 = piecewise_grid(t1), piecewise_grid(t2)
        return hockey_2d(pa.density(y1, y2, res), pb.density(y1, y2, res), y1, y2, epsilon)

    return converged(at, k, 2 * (GAUSS_TAIL + LAP_TAIL) + GAUSS_TAIL, "laplace-product 2-D numerical convolution")


# --------------------------------------------------------------------------- dispatch


def output_delta(mu_a: ArrayLike, cov_a: ArrayLike, mu_b: ArrayLike, cov_b: ArrayLike, law: NoiseLaw,
                 epsilon: float) -> Profile:
    """True δ(ε) of the outputs F + Z for F ~ N(μ_a, Σ_a) vs N(μ_b, Σ_b), both orders."""
    ma, mb = np.atleast_1d(np.asarray(mu_a, dtype=float)), np.atleast_1d(np.asarray(mu_b, dtype=float))
    sa, sb = np.atleast_2d(np.asarray(cov_a, dtype=float)), np.atleast_2d(np.asarray(cov_b, dtype=float))
    m = ma.size
    if m > 2:
        raise NotImplementedError("the oracle integrates on 1-D and 2-D grids only")
    if law.kind in ("gaussian", "none"):
        return gaussian_outputs(ma, sa + law.covariance, mb, sb + law.covariance, epsilon)
    assert law.basis is not None and law.scales is not None
    keep = law.scales > 0
    basis, scales = law.basis[:, keep], law.scales[keep]
    if basis.shape[1] == 0:
        return gaussian_outputs(ma, sa, mb, sb, epsilon)
    if m == 1:
        return laplace_1d(float(ma[0]), float(sa[0, 0]), float(mb[0]), float(sb[0, 0]), float(scales[0]), epsilon)
    if basis.shape[1] == 1:
        return directional_laplace_2d(ma, sa, mb, sb, basis[:, 0], float(scales[0]), epsilon)
    return product_laplace_2d(ma, sa, mb, sb, basis, scales, epsilon)


def output_logpdf(mu: ArrayLike, cov: ArrayLike, law: NoiseLaw, y: ArrayLike, res: int = 12) -> Array:
    """log density of F + Z at points y (N, m) — the same densities the grids use (for Monte Carlo)."""
    mu = np.atleast_1d(np.asarray(mu, dtype=float))
    cov = np.atleast_2d(np.asarray(cov, dtype=float))
    y = np.asarray(y, dtype=float).reshape(-1, mu.size)
    if law.kind in ("gaussian", "none"):
        c = cov + law.covariance
        d = y - mu
        sign, logdet = np.linalg.slogdet(c)
        if sign <= 0:
            raise ValueError("singular output covariance")
        quad = np.einsum("ij,ij->i", d, np.linalg.solve(c, d.T).T)
        return -0.5 * quad - 0.5 * logdet - mu.size * LOG_SQRT_2PI
    assert law.basis is not None and law.scales is not None
    if mu.size == 1:
        return gl_logpdf(y[:, 0] - mu[0], math.sqrt(cov[0, 0]), float(law.scales[0]))
    if law.basis.shape[1] == 1:
        v = law.basis[:, 0] / np.linalg.norm(law.basis[:, 0])
        rot = np.column_stack([v, [-v[1], v[0]]])
        m, s = _in_basis(mu, cov, rot)
        p = _DirPart.of(m, s)
        tu = y @ rot
        c = p.mt + p.slope * (tu[:, 1] - p.mu)
        return gauss_logpdf(tu[:, 1], p.mu, math.sqrt(p.suu)) + gl_logpdf(tu[:, 0] - c, p.sc, float(law.scales[0]))
    part, _, swapped = _conv_parts(mu, cov, mu, cov, law.basis, law.scales)
    yy = y @ law.basis
    if swapped:
        yy = yy[:, ::-1]
    with np.errstate(divide="ignore"):
        return np.log(part.density_at(yy, res))


def sample_outputs(mu: ArrayLike, cov: ArrayLike, law: NoiseLaw, n: int, rng: np.random.Generator) -> Array:
    """n draws of F + Z (own sampler, not the library's)."""
    mu = np.atleast_1d(np.asarray(mu, dtype=float))
    cov = np.atleast_2d(np.asarray(cov, dtype=float))
    w, v = np.linalg.eigh(cov)
    f = mu + (rng.standard_normal((n, mu.size)) * np.sqrt(np.clip(w, 0, None))) @ v.T
    if law.kind == "gaussian":
        w, v = np.linalg.eigh(law.covariance)
        f = f + (rng.standard_normal((n, mu.size)) * np.sqrt(np.clip(w, 0, None))) @ v.T
    elif law.kind == "laplace":
        assert law.basis is not None and law.scales is not None
        f = f + (rng.laplace(0.0, 1.0, (n, law.scales.size)) * law.scales) @ law.basis.T
    return f


def monte_carlo_delta(mu_a: ArrayLike, cov_a: ArrayLike, mu_b: ArrayLike, cov_b: ArrayLike, law: NoiseLaw,
                      epsilon: float, n: int, rng: np.random.Generator) -> tuple[float, float]:
    """δ_ab(ε) = E_a[(1 − e^{ε − L})_+], L = ln p_a(Y)/p_b(Y), Y ~ P_a: (estimate, standard error)."""
    y = sample_outputs(mu_a, cov_a, law, n, rng)
    loss = output_logpdf(mu_a, cov_a, law, y) - output_logpdf(mu_b, cov_b, law, y)
    vals = np.where(loss > epsilon, -np.expm1(np.minimum(epsilon - loss, 0.0)), 0.0)
    return float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(n))


# --------------------------------------------------------------------------- empirical (finite) f_θ
#
# With f_θ the empirical law of samples (atoms x_i, weights w_i) the output is the finite mixture
# Σ_i w_i f_Z(y − x_i). The oracle evaluates both mixture densities on grids laid around every atom
# (atoms are grid points, so the Laplace kinks fall on nodes) and integrates max(0, p_a − e^ε p_b) as
# above, at two resolutions. Noise that is rank-deficient (a Gaussian of rank 1 or Laplace noise on
# one direction in 2-D) makes components whose atoms differ off the noise range mutually singular: the
# atoms are grouped by their coordinate on the null space and δ is the sum over groups of the 1-D
# hockey-stick integrals of the sub-mixtures (unnormalised), computed in the range coordinate.


def finite_law(samples: ArrayLike) -> tuple[Array, Array]:
    """Distinct rows of ``samples`` (N × m, or N) and their frequencies."""
    s = np.asarray(samples, dtype=float)
    s = s[:, None] if s.ndim == 1 else s
    x, c = np.unique(s, axis=0, return_counts=True)
    return x, c / c.sum()


def _mixture_1d(y: Array, x: Array, w: Array, kind: str, scale: float) -> Array:
    out = np.zeros(y.size)
    for xi, wi in zip(x, w, strict=True):
        if kind == "laplace":
            out += wi * np.exp(-np.abs(y - xi) / scale) / (2.0 * scale)
        else:
            out += wi * np.exp(gauss_logpdf(y, xi, scale))
    return out


def _mixture_delta_1d(xa: Array, wa: Array, xb: Array, wb: Array, kind: str, scale: float,
                      epsilon: float, k: int = 16) -> tuple[float, float, float]:
    """(δ_ab, δ_ba, tol) of two 1-D mixtures of one noise density (Laplace scale b or Gaussian sd)."""
    reach = (R_LAP if kind == "laplace" else R_GAUSS) * scale
    centres = np.unique(np.concatenate([xa, xb]))

    def at(res: int) -> tuple[float, float]:
        tiers = [(c - reach, c + reach, scale / res) for c in centres]
        y = np.unique(np.concatenate([piecewise_grid(tiers), centres]))
        return hockey_1d(_mixture_1d(y, xa, wa, kind, scale), _mixture_1d(y, xb, wb, kind, scale), y, epsilon)

    trunc = LAP_TAIL if kind == "laplace" else GAUSS_TAIL
    pr = converged(at, k, trunc, "mixture")
    return pr.forward, pr.backward, pr.tol


def mixture_delta(samples_a: ArrayLike, samples_b: ArrayLike, law: NoiseLaw, epsilon: float, k: int = 16) -> Profile:
    """True δ(ε) (both orders) of F + Z with F the empirical law of the samples, 1-D or 2-D.

    Supported noise: Gaussian N(0, Σ_Z) of any rank (2-D full rank by a tensor grid in whitened
    coordinates; rank 1 by the group decomposition above) and Laplace noise with per-direction
    scales on an orthonormal basis (1-D; 2-D on two directions as a product density on a tensor grid
    in the basis coordinates; one direction by the group decomposition).
    """
    xa, wa = finite_law(samples_a)
    xb, wb = finite_law(samples_b)
    m = xa.shape[1]
    if law.kind == "laplace":
        assert law.basis is not None and law.scales is not None
        basis, scales = law.basis, law.scales
    else:
        vals, vecs = np.linalg.eigh(law.covariance)
        keep = vals > 1e-12 * max(float(vals.max(initial=0.0)), 1e-300)
        basis, scales = vecs[:, keep], np.sqrt(vals[keep])
    kind = "laplace" if law.kind == "laplace" else "gaussian"
    d = basis.shape[1]
    if d < m:  # group decomposition on the null-space coordinate (1-D range, or no noise at all)
        null = _rank_basis(np.eye(m) - basis @ basis.T, 1.0) if d else np.eye(m)
        ka = np.round(xa @ null, 9)
        kb = np.round(xb @ null, 9)
        keys = {tuple(r) for r in ka} | {tuple(r) for r in kb}
        fwd = bwd = tol = 0.0
        for key in keys:
            ia = np.all(ka == np.array(key), axis=1)
            ib = np.all(kb == np.array(key), axis=1)
            ma, mb = float(wa[ia].sum()), float(wb[ib].sum())
            if d == 0 or not ia.any() or not ib.any():  # point masses (no noise) or a group one side lacks
                fwd += max(0.0, ma - math.exp(epsilon) * mb)
                bwd += max(0.0, mb - math.exp(epsilon) * ma)
                continue
            f, b, t = _mixture_delta_1d((xa[ia] @ basis)[:, 0], wa[ia], (xb[ib] @ basis)[:, 0], wb[ib], kind,
                                        float(scales[0]), epsilon, k)
            fwd, bwd, tol = fwd + f, bwd + b, tol + t
        return Profile(min(fwd, 1.0), min(bwd, 1.0), tol + ROUNDING, "mixture (groups on the noise null space)")
    if m == 1:
        f, b, t = _mixture_delta_1d(xa[:, 0] * basis[0, 0], wa, xb[:, 0] * basis[0, 0], wb, kind, float(scales[0]),
                                    epsilon, k)
        return Profile(f, b, t, "mixture 1-D")
    # 2-D, noise of full rank: coordinates z = Bᵀy in which the noise has independent coordinates
    za, zb = xa @ basis, xb @ basis
    reach = (R_LAP if kind == "laplace" else R_GAUSS)

    def dens(g1: Array, g2: Array, z: Array, w: Array) -> Array:
        out = np.zeros((g1.size, g2.size))
        for zi, wi in zip(z, w, strict=True):
            if kind == "laplace":
                f1 = np.exp(-np.abs(g1 - zi[0]) / scales[0]) / (2 * scales[0])
                f2 = np.exp(-np.abs(g2 - zi[1]) / scales[1]) / (2 * scales[1])
            else:
                f1 = np.exp(gauss_logpdf(g1, zi[0], scales[0]))
                f2 = np.exp(gauss_logpdf(g2, zi[1], scales[1]))
            out += wi * np.outer(f1, f2)
        return out

    def at(res: int) -> tuple[float, float]:
        axes = []
        for j in range(2):
            cj = np.unique(np.concatenate([za[:, j], zb[:, j]]))
            tiers = [(c - reach * scales[j], c + reach * scales[j], scales[j] / res) for c in cj]
            axes.append(np.unique(np.concatenate([piecewise_grid(tiers), cj])))
        return hockey_2d(dens(axes[0], axes[1], za, wa), dens(axes[0], axes[1], zb, wb), axes[0], axes[1], epsilon)

    trunc = 2 * (LAP_TAIL if kind == "laplace" else GAUSS_TAIL)
    return converged(at, k, trunc, "mixture 2-D")


def mixture_pure_epsilon_1d_laplace(samples_a: ArrayLike, samples_b: ArrayLike, b: float) -> float:
    """sup_y |ln p_a(y)/p_b(y)| for 1-D Laplace mixtures, by brute force on a fine grid around the atoms."""
    xa, wa = finite_law(samples_a)
    xb, wb = finite_law(samples_b)
    c = np.unique(np.concatenate([xa[:, 0], xb[:, 0]]))
    y = np.unique(np.concatenate([np.linspace(c.min() - 5 * b, c.max() + 5 * b, 200_001), c]))
    return float(np.max(np.abs(np.log(_mixture_1d(y, xa[:, 0], wa, "laplace", b))
                               - np.log(_mixture_1d(y, xb[:, 0], wb, "laplace", b)))))


# --------------------------------------------------------------------------- quantiles and W∞ (issue 22)


def enumerated_quantile_law(values_p: Sequence[float], values_q: Sequence[float], k: int, n: int,
                            q: float) -> dict[float, float]:
    """Law of the lower q-quantile (the r-th smallest, r = max(1, ceil(q n))) of a dataset of k records drawn
    without replacement from ``values_p`` and n − k from ``values_q``, by enumerating every pair of subsets
    (tiny populations only): each pair is equally likely."""
    from itertools import combinations

    r = max(1, math.ceil(round(q * n, 12)))
    out: dict[float, float] = {}
    subsets_p = [sorted(c) for c in combinations(values_p, k)]
    subsets_q = [sorted(c) for c in combinations(values_q, n - k)]
    weight = 1.0 / (len(subsets_p) * len(subsets_q))
    for a in subsets_p:
        for b in subsets_q:
            v = float(sorted(a + b)[r - 1])
            out[v] = out.get(v, 0.0) + weight
    return out


def weighted_delta_1d(xa: ArrayLike, wa: ArrayLike, xb: ArrayLike, wb: ArrayLike, law: NoiseLaw,
                      epsilon: float, k: int = 16) -> Profile:
    """True δ(ε) (both orders) of F + Z for 1-D finite laws F (atoms x, weights w) and 1-D noise."""
    xa_, xb_ = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
    wa_, wb_ = np.asarray(wa, dtype=float), np.asarray(wb, dtype=float)
    if law.kind == "laplace":
        assert law.basis is not None and law.scales is not None
        kind, scale, sign = "laplace", float(law.scales[0]), float(law.basis[0, 0])
    else:
        kind, scale, sign = "gaussian", float(np.sqrt(law.covariance[0, 0])), 1.0
    f, b, t = _mixture_delta_1d(xa_ * sign, wa_, xb_ * sign, wb_, kind, scale, epsilon, k)
    return Profile(f, b, t, "weighted mixture 1-D")


def bottleneck_l1(samples_a: ArrayLike, samples_b: ArrayLike) -> float:
    """W∞ between two equal-size empirical laws in the L1 norm: the least t such that a perfect matching uses only
    pairs at distance <= t (binary search over the distinct distances, each tested by a maximum matching)."""
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    a, b = np.atleast_2d(np.asarray(samples_a, dtype=float)), np.atleast_2d(np.asarray(samples_b, dtype=float))
    d = cdist(a, b, metric="cityblock")
    cand = np.unique(d)
    lo, hi = 0, cand.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        cost = (d > cand[mid]).astype(float)
        rows, cols = linear_sum_assignment(cost)
        if cost[rows, cols].sum() == 0:
            hi = mid
        else:
            lo = mid + 1
    return float(cand[lo])


def sampled_set_delta(mp: Array, cp: Array, mq: Array, cq: Array, basis: Array, scales: Array, epsilon: float, n: int,
                      seed: int) -> tuple[float, float]:
    """P(S) − e^ε Q(S) for F + B·Lap(scales) under N(mp, cp) and N(mq, cq), by sampling both output laws (n draws each,
    ``multivariate_normal`` then the Laplace coordinates), S = {the loss of the moment-matched Gaussians > ε}: any S
    gives a lower bound on δ(ε). Returns (estimate, standard error)."""
    rng = np.random.default_rng(seed)
    extra = basis @ np.diag(2.0 * scales ** 2) @ basis.T

    def draw(mu: Array, cov: Array) -> Array:
        return rng.multivariate_normal(mu, cov, n) + (rng.laplace(0.0, 1.0, (n, scales.size)) * scales) @ basis.T

    def logpdf(y: Array, mu: Array, cov: Array) -> Array:
        c = cov + extra
        d = y - mu
        return -0.5 * np.einsum("ij,ij->i", d @ np.linalg.inv(c), d) - 0.5 * math.log(np.linalg.det(c))

    def in_s(y: Array) -> Array:
        return (logpdf(y, mp, cp) - logpdf(y, mq, cq)) > epsilon

    sp = in_s(draw(mp, cp)).astype(float)
    sq = in_s(draw(mq, cq)).astype(float)
    ee = math.exp(epsilon)
    return float(sp.mean() - ee * sq.mean()), math.sqrt(sp.var(ddof=1) / n + ee * ee * sq.var(ddof=1) / n)


# --------------------------------------------------------------------------- certified sampled lower bound, any dimension
#
# Gauss ⊛ product Laplace in d dimensions (issue 25, the remaining factor of the common-factor bound): in the noise
# basis B (square, orthonormal) X ~ N(m, S) with m = Bᵀμ, S = BᵀΣB, and the output is X + L, L_k ~ Lap(b_k)
# independent (a bijection of F + BL: δ is unchanged). For every event S (and every fixed test),
# δ_ab(ε) >= P_a(S) − e^ε P_b(S). Both laws are sampled exactly; P_a(S) is bounded below and P_b(S) above by one-sided
# Clopper–Pearson bounds, so the difference is a lower bound on δ with probability >= 1 − β. S = {r(y) > τ} for a
# surrogate r of the log-likelihood ratio, chosen (surrogate, order of the pair, τ) on a *pilot* sample independent of
# the evaluation sample: given the pilot the test is fixed and the evaluation counts are binomial. Only the quality of
# S depends on the surrogate, never the validity.
#
# Surrogates. Lap(b) = N(0, V) with V ~ Exp(mean 2b²) (Laplace is a Gaussian scale mixture), so
# p(y) = E_V[N(y; m, S + diag V)]; with M fixed nodes V_j = −2b² ln U_j (U_j a scrambled Sobol point set, fixed seed)
# the average of the M Gaussian densities is a deterministic surrogate of p ("mixture"); "gaussian" is the
# moment-matched N(m, S + 2 diag b²) (the set of :func:`sampled_set_delta`).


@dataclass(frozen=True)
class BasisPair:
    """The pair in the noise basis coordinates: N(ma, sa) and N(mb, sb) plus ⊗ Lap(scales_k)."""

    ma: Array
    sa: Array
    mb: Array
    sb: Array
    scales: Array

    def with_scales(self, scales: Array) -> BasisPair:
        return BasisPair(self.ma, self.sa, self.mb, self.sb, np.asarray(scales, dtype=float))


def basis_pair(mu_a: ArrayLike, cov_a: ArrayLike, mu_b: ArrayLike, cov_b: ArrayLike, basis: ArrayLike,
               scales: ArrayLike) -> BasisPair:
    """The pair in the coordinates of a square orthonormal noise basis (columns = noise directions)."""
    b = np.atleast_2d(np.asarray(basis, dtype=float))
    if b.shape[0] != b.shape[1] or not np.allclose(b.T @ b, np.eye(b.shape[0]), atol=1e-9):
        raise ValueError("basis: a square orthonormal noise basis is needed")

    def rot(mu: ArrayLike, cov: ArrayLike) -> tuple[Array, Array]:
        s = b.T @ np.atleast_2d(np.asarray(cov, dtype=float)) @ b
        return b.T @ np.atleast_1d(np.asarray(mu, dtype=float)), 0.5 * (s + s.T)

    ma, sa = rot(mu_a, cov_a)
    mb, sb = rot(mu_b, cov_b)
    return BasisPair(ma, sa, mb, sb, np.asarray(scales, dtype=float).reshape(-1))


@dataclass
class UnitDraws:
    """Standard normal and unit-Laplace draws (n × d each) for both laws: outputs at any scales by common random
    numbers (:meth:`outputs`, X = m + S^{1/2} z + b·l with the symmetric root); fresh draws give independent samples.
    ``paired``: both laws from the same (z, l) (row i of the two outputs is a coupling of the laws; the rows are
    still independent across i)."""

    za: Array
    la: Array
    zb: Array
    lb: Array
    paired: bool = False

    @classmethod
    def draw(cls, n: int, d: int, rng: np.random.Generator, paired: bool = False) -> UnitDraws:
        za, la = rng.standard_normal((n, d)), rng.laplace(0.0, 1.0, (n, d))
        if paired:
            return cls(za, la, za, la, True)
        return cls(za, la, rng.standard_normal((n, d)), rng.laplace(0.0, 1.0, (n, d)))

    def outputs(self, pair: BasisPair) -> tuple[Array, Array]:
        def one(z: Array, lap_: Array, m: Array, s: Array) -> Array:
            w, v = np.linalg.eigh(s)
            root = (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T
            return m + z @ root + lap_ * pair.scales

        return one(self.za, self.la, pair.ma, pair.sa), one(self.zb, self.lb, pair.mb, pair.sb)


#: Nodes of the scale-mixture surrogate, and the seed of their (scrambled Sobol) point set.
MIXTURE_NODES = 128
MIXTURE_SEED = 2025


def mixture_nodes(d: int, m: int = MIXTURE_NODES, seed: int = MIXTURE_SEED) -> Array:
    """M × d fixed Exp(1) nodes E_j = −ln U_j (U_j scrambled Sobol points): V_j = 2b²E_j."""
    from scipy.stats import qmc

    u = qmc.Sobol(d, scramble=True, seed=seed).random(m)
    return np.asarray(-np.log(np.clip(u, 1e-300, 1.0)), dtype=float)


def _gauss_logpdf_nodes(y: Array, mean: Array, covs: Array) -> Array:
    """log N(y; mean, covs[j]) for every row of y and every j: n × M (one GEMM per chunk)."""
    m, d = covs.shape[0], mean.size
    chol = np.linalg.cholesky(covs)
    inv = np.linalg.inv(chol)  # M × d × d, lower triangular: z = L⁻¹(y − mean)
    logdet = 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
    flat = inv.reshape(m * d, d).T
    out = np.empty((y.shape[0], m))
    step = max(1, 400_000 // max(1, m * d))
    for i in range(0, y.shape[0], step):
        z = ((y[i:i + step] - mean) @ flat).reshape(-1, m, d)
        out[i:i + step] = -0.5 * np.einsum("nmk,nmk->nm", z, z)
    return out - 0.5 * logdet - d * LOG_SQRT_2PI


def surrogate_scores(pair: BasisPair, y: Array, nodes: Array) -> dict[str, Array]:
    """Surrogates of ln p_a(y) − ln p_b(y) on the rows of y: "mixture" (the scale mixture on ``nodes``) and
    "gaussian" (moment-matched)."""
    v = 2.0 * pair.scales ** 2 * nodes  # M × d variances of the mixture components
    d = pair.ma.size
    eye = np.eye(d)

    def mix(m: Array, s: Array) -> Array:
        covs = s[None, :, :] + v[:, :, None] * eye[None, :, :]
        lp = _gauss_logpdf_nodes(y, m, covs)
        return np.asarray(special.logsumexp(lp, axis=1), dtype=float)

    gm = np.diag(2.0 * pair.scales ** 2)
    return {"mixture": mix(pair.ma, pair.sa) - mix(pair.mb, pair.sb),
            "gaussian": (_gauss_logpdf_nodes(y, pair.ma, (pair.sa + gm)[None])
                         - _gauss_logpdf_nodes(y, pair.mb, (pair.sb + gm)[None]))[:, 0]}


def cp_lower(k: ArrayLike, n: int, beta: float) -> Array:
    """One-sided Clopper–Pearson lower bound: P(p < bound) <= β (0 for k = 0)."""
    from scipy import stats

    k = np.asarray(k, dtype=float)
    return np.where(k > 0, stats.beta.ppf(beta, np.maximum(k, 1.0), n - k + 1.0), 0.0)


def cp_upper(k: ArrayLike, n: int, beta: float) -> Array:
    """One-sided Clopper–Pearson upper bound: P(p > bound) <= β (1 for k = n)."""
    from scipy import stats

    k = np.asarray(k, dtype=float)
    return np.where(k < n, stats.beta.ppf(1.0 - beta, k + 1.0, np.maximum(n - k, 1.0)), 1.0)


#: Thresholds τ of the sets {r > τ} tried on the pilot: ε + TAU_OFFSETS.
TAU_OFFSETS = np.arange(-1.0, 4.0 + 1e-9, 0.05)


@dataclass(frozen=True)
class SetTest:
    """A fixed test: surrogate name, order ("ab": P = a, Q = b; "ba": the reverse) and threshold τ."""

    surrogate: str
    order: str
    tau: float


def _indicators(scores_a: dict[str, Array], scores_b: dict[str, Array], test: SetTest) -> tuple[Array, Array]:
    """(1_S on the draws of P, 1_S on the draws of Q) of the test (P = a for order "ab", b for "ba")."""
    ra, rb = scores_a[test.surrogate], scores_b[test.surrogate]
    if test.order == "ab":
        return ra > test.tau, rb > test.tau
    return -rb > test.tau, -ra > test.tau


def lower_paired(mean: ArrayLike, var: ArrayLike, n: int, epsilon: float, beta: float) -> Array:
    """Empirical-Bernstein lower bound on E X from n i.i.d. X_i ∈ [−e^ε, 1] with sample mean and (unbiased) sample
    variance: X̄ − √(2V ln(2/β)/n) − 7R ln(2/β)/(3(n − 1)), R = 1 + e^ε (Maurer & Pontil 2009, Thm 4, rescaled to
    [0, 1]); fails with probability <= β. For paired draws X_i = 1_S(Y_a,i) − e^ε 1_S(Y_b,i), E X = P_a(S) − e^ε P_b(S)."""
    lg = math.log(2.0 / beta)
    r = 1.0 + math.exp(epsilon)
    return np.asarray(np.asarray(mean, dtype=float) - np.sqrt(2.0 * np.maximum(np.asarray(var, dtype=float), 0.0) * lg / n)
                      - 7.0 * r * lg / (3.0 * (n - 1)), dtype=float)


def _paired_moments(pa: ArrayLike, pb: ArrayLike, pab: ArrayLike, n: int, epsilon: float) -> tuple[Array, Array]:
    """(mean, unbiased variance) of X = 1_A − e^ε 1_B from the frequencies of A, B and A∩B over n pairs."""
    e = math.exp(epsilon)
    pa, pb, pab = (np.asarray(x, dtype=float) for x in (pa, pb, pab))
    mean = pa - e * pb
    second = pa + e * e * pb - 2.0 * e * pab
    return mean, np.maximum(second - mean * mean, 0.0) * n / max(n - 1, 1)


def lower_from_counts(kp: ArrayLike, kq: ArrayLike, n: int, epsilon: float, beta: float) -> Array:
    """CP_lower(k_P; β/2) − e^ε CP_upper(k_Q; β/2): a lower bound on δ with probability >= 1 − β (for a fixed test)."""
    return np.asarray(cp_lower(kp, n, beta / 2) - math.exp(epsilon) * cp_upper(kq, n, beta / 2), dtype=float)


def choose_test(pair: BasisPair, epsilon: float, draws: UnitDraws, nodes: Array, beta: float,
                n_eval: int) -> tuple[SetTest, float, float]:
    """The test with the largest *projected* lower bound on the pilot ``draws``: CP bounds at β with frequencies
    scaled to n_eval draws (a guide only; the certificate comes from fresh draws). The test is chosen on the first half
    of the pilot and its projection computed from the frequencies on the second half (no selection bias). Returns
    (test, projected bound, the projection's standard error from the second half's frequencies)."""
    ya, yb = draws.outputs(pair)
    sa, sb = surrogate_scores(pair, ya, nodes), surrogate_scores(pair, yb, nodes)
    half = ya.shape[0] // 2
    n = half
    taus = epsilon + TAU_OFFSETS
    best: tuple[SetTest, float] = (SetTest("gaussian", "ab", epsilon), -math.inf)
    for name in sa:
        for order, rp, rq in (("ab", sa[name], sb[name]), ("ba", -sb[name], -sa[name])):
            rp_s, rq_s = np.sort(rp[:half]), np.sort(rq[:half])
            kp = n - np.searchsorted(rp_s, taus, side="right")
            kq = n - np.searchsorted(rq_s, taus, side="right")
            if draws.paired:  # both in S iff the smaller score of the pair is above τ
                kpq = n - np.searchsorted(np.sort(np.minimum(rp[:half], rq[:half])), taus, side="right")
                mean, var = _paired_moments(kp / n, kq / n, kpq / n, n, epsilon)
                lb = lower_paired(mean, var, n_eval, epsilon, beta)
            else:
                lb = lower_from_counts(np.round(kp * n_eval / n), np.round(kq * n_eval / n), n_eval, epsilon, beta)
            i = int(np.argmax(lb))
            if lb[i] > best[1]:
                best = (SetTest(name, order, float(taus[i])), float(lb[i]))
    test = best[0]
    rest = ya.shape[0] - half
    ia, ib = _indicators({k: v[half:] for k, v in sa.items()}, {k: v[half:] for k, v in sb.items()}, test)
    fp, fq = float(ia.mean()), float(ib.mean())
    if draws.paired:
        mean, var = _paired_moments(fp, fq, float((ia & ib).mean()), rest, epsilon)
        return test, float(lower_paired(mean, var, n_eval, epsilon, beta)), math.sqrt(float(var) / rest)
    proj = lower_from_counts(round(fp * n_eval), round(fq * n_eval), n_eval, epsilon, beta)
    se = math.sqrt((fp * (1 - fp) + math.exp(2 * epsilon) * fq * (1 - fq)) / rest)
    return test, float(proj), se


@dataclass(frozen=True)
class SampledBound:
    """A lower bound on max(δ_ab, δ_ba)(ε) holding with probability >= 1 − β, and the point estimate of the same
    test's P(S) − e^ε Q(S)."""

    lower: float
    estimate: float
    test: SetTest
    n: int
    beta: float


def evaluate_test(pair: BasisPair, epsilon: float, test: SetTest, n: int, beta: float, rng: np.random.Generator,
                  nodes: Array, paired: bool = False) -> SampledBound:
    """The certificate of one fixed test on n fresh draws per law (chunks of 250,000): Clopper–Pearson on independent
    draws, or the empirical-Bernstein bound on n paired draws (:func:`lower_paired`)."""
    kp = kq = kpq = 0
    done = 0
    while done < n:
        m = min(250_000, n - done)
        ya, yb = UnitDraws.draw(m, pair.ma.size, rng, paired).outputs(pair)
        ia, ib = _indicators(surrogate_scores(pair, ya, nodes), surrogate_scores(pair, yb, nodes), test)
        kp, kq, kpq = kp + int(ia.sum()), kq + int(ib.sum()), kpq + int((ia & ib).sum())
        done += m
    if paired:
        mean, var = _paired_moments(kp / n, kq / n, kpq / n, n, epsilon)
        lower = float(lower_paired(mean, var, n, epsilon, beta))
    else:
        lower = float(lower_from_counts(kp, kq, n, epsilon, beta))
    return SampledBound(max(0.0, lower), (kp - math.exp(epsilon) * kq) / n, test, n, beta)  # δ >= 0 anyway


def sampled_lower_bound(pair: BasisPair, epsilon: float, *, n: int = 1_000_000, pilot: int = 200_000,
                        beta: float = 1e-6, seed: int = 0, nodes: Array | None = None,
                        paired: bool = False) -> SampledBound:
    """Certified (probability >= 1 − β) lower bound on δ(ε) of the pair: the test chosen on ``pilot`` draws, evaluated
    on ``n`` fresh draws per law (``paired``: n coupled pairs and the empirical-Bernstein bound, less variance at small
    ε where S holds much of both laws)."""
    rng = np.random.default_rng(seed)
    nodes = mixture_nodes(pair.ma.size) if nodes is None else nodes
    test = choose_test(pair, epsilon, UnitDraws.draw(pilot, pair.ma.size, rng, paired), nodes, beta, n)[0]
    return evaluate_test(pair, epsilon, test, n, beta, rng, nodes, paired)
