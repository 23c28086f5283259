"""Privacy profiles of Gaussian query values plus Laplace noise.

One dimension: the output law N(μ, s²) ⊛ Lap(b) has the closed-form density

    p(y) = (1/2b) e^{s²/2b²} [e^{−z/b} Φ(z/s − s/b) + e^{z/b} Φ(−z/s − s/b)],   z = y − μ,

evaluated in log space (the erfcx form: ln(e^{−z/b + s²/2b²} Φ(z/s − s/b)) =
−z²/2s² + ln(erfcx(·)/2) where Φ is small). Two facts make every bound below
certified rather than estimated:

* ln p is concave (a convolution of log-concave densities) and 1/b-Lipschitz
  ((ln p)' is a posterior mean of the Laplace score, in [−1/b, 1/b]);
* (ln p)'' >= −1/s² (the Gaussian factor's curvature is the largest possible).

So on a cell of width w, ln p lies between its chord and the chord plus
κ(w) = min(w/b, w²/8s²); the loss ℓ = ln p_P − ln p_Q lies within the chord of
its end values widened by κ_P (above) and κ_Q (below). This gives per-cell
brackets on the P-mass and on ℓ, hence a certified δ(ε) bracket (sum over
cells) and a certified pure ε = sup |ℓ| (the tails beyond the grid are bounded
through ℓ → (s_P² − s_Q²)/2b² ± (μ_P − μ_Q)/b with explicit remainders).

Products (noise on an orthonormal basis in which both Gaussian covariances are
diagonal) compose the 1-D losses: pure ε adds up, δ(ε) goes through the
discretised PLD of :mod:`.pld`.

General covariances: the coupling bound. For any coupling of F_a ~ P_a and
F_b ~ P_b with D = F_a − F_b, Laplace noise of scales b_k on the columns of an
orthonormal basis B gives

    δ(ε) <= P(D ∉ span B) + P(Σ_k |(BᵀD)_k| / b_k > ε)

(conditionally on the coupling, a shift with Σ|(BᵀD)_k|/b_k <= ε costs at most
e^ε pointwise). The coupling used is Gaussian (the optimal-transport coupling,
conditioned on the un-noised coordinates when span B is not everything), so D
is Gaussian and the tail is bounded by an optimised union bound over
coordinates (exact in 1-D) and by Gaussian concentration of the ℓ1 norm.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from . import pld

_LOG2 = math.log(2.0)
#: Largest pure-ε tail window, in multiples of the δ window (beyond it the tails are left uncertified).
MAX_TAIL_WINDOW = 64.0
#: Cell budget of one coordinate (base grid, then after subdivision): bounds work and memory on every
#: input; every cell's bounds hold for any grid, so a coarser grid only widens the certified bracket.
MAX_BASE_CELLS = 250_000
MAX_CELLS = 1_000_000
#: A base cell of the δ grid with at most this mass under both laws is not subdivided (:meth:`GaussLaplaceCoord.delta_cells`).
NEGLIGIBLE_MASS = 1e-30
_LOG_NEGLIGIBLE = math.log(NEGLIGIBLE_MASS)
_SQRT2 = math.sqrt(2.0)


# --------------------------------------------------------------------------- density
def _log_ndtr_scaled(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """ln Φ(x) + x²/2 for x < 0 (via erfcx; exact identity), ln Φ(x) + x²/2 elsewhere.

    Each element's branch is evaluated only where it is selected (erfcx for x < 0, log_ndtr
    elsewhere): the same floats as evaluating both everywhere and choosing, at half the work.
    """
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    neg = flat < 0
    pos = ~neg
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out[neg] = np.log(special.erfcx(-flat[neg] / _SQRT2) / 2.0)
        xp = flat[pos]
        out[pos] = special.log_ndtr(xp) + 0.5 * xp * xp
    return out.reshape(x.shape)


def _gl_term(z: NDArray[np.float64], x: NDArray[np.float64], base: NDArray[np.float64], sign: float,
             half: float, b: float) -> NDArray[np.float64]:
    """ln of one term of the density, e^{±z/b + s²/2b²} Φ(x), for 1-D arrays z, x (x = ±z/s − s/b).

    x < 0: −z²/2s² + ln(erfcx(−x/√2)/2) (the erfcx form, no underflow); elsewhere
    ±z/b + s²/2b² + ln Φ(x). Only the selected branch is evaluated per element (each special
    function once, on its own elements), so the floats equal those of evaluating both and choosing.
    """
    out = np.empty_like(x)
    neg = x < 0
    pos = ~neg
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out[neg] = base[neg] + np.log(special.erfcx(-x[neg] / _SQRT2) / 2.0)
        zp = z[pos]
        lin = -zp / b if sign < 0 else zp / b
        out[pos] = lin + half + special.log_ndtr(x[pos])
    return out


def _gl_terms(y: ArrayLike, mu: float, s: float, b: float) -> tuple[NDArray[np.float64], NDArray[np.float64], tuple[int, ...]]:
    """ln T1, ln T2 (flattened) of p(y) = (1/2b)(T1 + T2), s > 0, and the shape of y."""
    z = np.asarray(y, dtype=float) - mu
    shape = z.shape
    z = z.reshape(-1)
    x1 = z / s - s / b  # term e^{−z/b} Φ(x1) e^{s²/2b²}
    x2 = -z / s - s / b  # term e^{z/b} Φ(x2) e^{s²/2b²}
    base = -0.5 * (z / s) ** 2
    half = s * s / (2 * b * b)
    # both terms in one call (every step is elementwise; the first term's −z/b is (−z)/b, the same float)
    n = z.size
    both = _gl_term(np.concatenate([-z, z]), np.concatenate([x1, x2]), np.concatenate([base, base]), 1.0, half, b)
    return both[:n], both[n:], shape


def _as_shape(v: NDArray[np.float64], shape: tuple[int, ...]) -> NDArray[np.float64]:
    out = v.reshape(shape)
    return out[()] if shape == () else out


def gl_logpdf(y: ArrayLike, mu: float, s: float, b: float) -> NDArray[np.float64]:
    """ln of the density of N(μ, s²) ⊛ Lap(b) at y (s = 0: the Laplace density)."""
    if s <= 0:
        z = np.asarray(y, dtype=float) - mu
        return -math.log(2.0 * b) - np.abs(z) / b
    t1, t2, shape = _gl_terms(y, mu, s, b)
    return _as_shape(-math.log(2.0 * b) + np.logaddexp(t1, t2), shape)


def gl_dlogpdf(y: ArrayLike, mu: float, s: float, b: float) -> NDArray[np.float64]:
    """(ln p)'(y) = (1/b)(T2 − T1)/(T2 + T1) with T1, T2 the two terms of the density (in [−1/b, 1/b])."""
    if s <= 0:
        z = np.asarray(y, dtype=float) - mu
        return -np.sign(z) / b
    t1, t2, shape = _gl_terms(y, mu, s, b)
    return _as_shape(np.tanh((t2 - t1) / 2.0) / b, shape)


def _tail_mass(t: float, s: float, b: float) -> float:
    """P(|G + L| > t) <= P(|G| > t/2) + P(|L| > t/2) for G ~ N(0, s²), L ~ Lap(b)."""
    g = 2.0 * float(special.ndtr(-t / (2.0 * s))) if s > 0 else 0.0
    return min(1.0, g + math.exp(-t / (2.0 * b)))


def _tail_log_range(x: float, s: float, b: float) -> tuple[float, float]:
    """Bounds on ln B(y) beyond the grid, B = Φ(x) + e^{2z/b}Φ(−x − 2s/b) with x = z/s − s/b > 0.

    B ∈ [Φ(x), 1 + φ(x)/(x + 2s/b)] (Mills ratio), both monotone towards 1 as |y| grows.
    """
    if s <= 0:
        return 0.0, 0.0
    lo = float(special.log_ndtr(x))
    hi = math.log1p(math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi) / (x + 2.0 * s / b))
    return lo, hi


def _cell_bounds(wv: NDArray[np.float64], fpl: NDArray[np.float64], fpr: NDArray[np.float64], fql: NDArray[np.float64],
                 fqr: NDArray[np.float64], b: float, sp: float,
                 sq: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(P-mass lower, P-mass upper, ℓ lower, ℓ upper) of cells of widths wv from ln p, ln q at their ends (module
    notes): ln p between its chord and the chord + κ_P(w), κ(w) = min(w/b, w²/8s²); rounding allowances 1e-12."""
    kp = wv / b if sp <= 0 else np.minimum(wv / b, wv * wv / (8.0 * sp * sp))
    kq = wv / b if sq <= 0 else np.minimum(wv / b, wv * wv / (8.0 * sq * sq))
    dfp = np.abs(fpr - fpl)
    with np.errstate(divide="ignore", invalid="ignore"):
        lm = np.where(dfp > 1e-12, np.log(-np.expm1(-dfp) / dfp), np.log1p(-dfp / 2.0))
    log_mass_lo = np.log(wv) + np.maximum(fpl, fpr) + lm
    mass_lo = np.exp(log_mass_lo) * (1.0 - 1e-12)
    mass_hi = np.exp(log_mass_lo + kp) * (1.0 + 1e-12)
    el, er = fpl - fql, fpr - fqr
    lmax = np.maximum(el, er) + kp + 1e-12 * (1.0 + np.abs(er))
    lmin = np.minimum(el, er) - kq - 1e-12 * (1.0 + np.abs(er))
    return mass_lo, mass_hi, lmin, lmax


# --------------------------------------------------------------------------- 1-D pair
@dataclass
class GaussLaplaceCoord:
    """P = N(μ_p, s_p²) ⊛ Lap(b), Q = N(μ_q, s_q²) ⊛ Lap(b) on one coordinate.

    ``kappa`` sets the certified resolution (per-cell widening of ln p); cells are
    built lazily and cached.
    """

    mu_p: float
    s_p: float
    mu_q: float
    s_q: float
    b: float
    kappa: float = 1e-3
    _cells: dict[str, Any] | None = field(default=None, repr=False)
    _dcells: dict[str, Any] | None = field(default=None, repr=False)

    def reverse(self) -> GaussLaplaceCoord:
        return GaussLaplaceCoord(self.mu_q, self.s_q, self.mu_p, self.s_p, self.b, self.kappa)

    def refined(self, kappa: float) -> GaussLaplaceCoord:
        return GaussLaplaceCoord(self.mu_p, self.s_p, self.mu_q, self.s_q, self.b, kappa)

    @property
    def limits(self) -> tuple[float, float]:
        """ℓ(y) as y → −∞ and y → +∞."""
        base = 0.5 * ((self.s_p / self.b) ** 2 - (self.s_q / self.b) ** 2)  # no b² (overflows for b > 1e154)
        shift = (self.mu_p - self.mu_q) / self.b
        return base - shift, base + shift

    # -------------------------------------------------------------- cells
    def _key(self, reverse: bool = False, delta: bool = False) -> bytes:
        """The exact bits of (μ_p, s_p, μ_q, s_q, b, κ) (or of the reversed pair): the cells' only inputs; the
        δ cells (:meth:`delta_cells`) are keyed apart from the pure-ε cells (:meth:`cells`)."""
        kind = b"D" if delta else b"S"
        if reverse:
            return kind + np.array([self.mu_q, self.s_q, self.mu_p, self.s_p, self.b, self.kappa], dtype=float).tobytes()
        return kind + np.array([self.mu_p, self.s_p, self.mu_q, self.s_q, self.b, self.kappa], dtype=float).tobytes()

    def cells(self) -> dict[str, Any]:
        """Per-cell mass and loss brackets (see the module notes) on the pure-ε window, memoised on the exact inputs.

        A pure function of (μ_p, s_p, μ_q, s_q, b, κ): a repeat (another step of a search) returns the very
        arrays of the first computation, and the reversed pair reuses its grid and densities (the grid depends
        on the two laws symmetrically; p and q swap). The window reaches far enough for the pure-ε tail
        remainders (``sup_tail``, ``inf_tail``); δ(ε) uses the smaller :meth:`delta_cells`.
        """
        if self._cells is None:
            self._cells = self._memo_cells(delta=False)
        return self._cells

    def delta_cells(self) -> dict[str, Any]:
        """The cells δ(ε) needs (issue 26): the window of P- and Q-mass (tails beyond it <= 1e-20, counted in
        ``tail``), without the pure-ε tail window, and cells of negligible mass (<= NEGLIGIBLE_MASS under either
        law) not subdivided. Every cell's bounds hold for any grid (module notes), so this is as certified as
        :meth:`cells`; the skipped subdivisions widen the δ bracket by at most MAX_BASE_CELLS·NEGLIGIBLE_MASS
        = 2.5e-25. ``sup_tail``/``inf_tail`` are infinite here (no pure ε is read from these cells)."""
        if self._dcells is None:
            self._dcells = self._memo_cells(delta=True)
        return self._dcells

    def _memo_cells(self, delta: bool) -> dict[str, Any]:
        key = self._key(delta=delta)
        with _CELLS_LOCK:
            hit = _CELLS_MEMO.get(key)
            if hit is not None:
                _CELLS_MEMO.move_to_end(key)
            rev = _CELLS_MEMO.get(self._key(reverse=True, delta=delta)) if hit is None else None
        if hit is not None:
            return hit
        out = self._compute_cells(rev, delta)
        with _CELLS_LOCK:
            _remember(key, out)
        return out

    def _window(self, delta: bool, kappa: float | None = None) -> tuple[float, float, float, bool]:
        """(lo, hi, base width w at resolution κ, whether the pure-ε tails are certified) of the grid."""
        b, sp, sq = self.b, self.s_p, self.s_q
        kappa = self.kappa if kappa is None else kappa
        smax = max(sp, sq)
        smin = min(sp, sq)
        w = kappa * b
        if smin > 0:
            w = max(w, math.sqrt(8.0 * kappa) * smin)
        # window: P-tail <= 1e-20 beyond it, and the pure-ε remainders are ~1e-15 (x >= 8)
        reach = max(19.0 * smax, 92.0 * b)
        ext = [self.mu_p, self.mu_q]
        lo = min(ext) - reach
        hi = max(ext) + reach
        # the pure-ε tail remainders need x = z/s − s/b >= 8 at the edges, i.e. a window of s(8 + s/b):
        # when the Laplace scale is tiny against s (huge ε) that window is unbounded work, so it is
        # not laid and the tails are left uncertified (sup ℓ = +∞: no pure ε is claimed; δ is unaffected)
        certified_tails = not delta
        for mu, s in ((self.mu_p, sp), (self.mu_q, sq)):
            if s > 0 and not delta:
                if s * (8.0 + s / b) > MAX_TAIL_WINDOW * reach:
                    certified_tails = False
                    continue
                lo = min(lo, mu - s * (8.0 + s / b))
                hi = max(hi, mu + s * (8.0 + s / b))
        return lo, hi, w, certified_tails

    def _compute_cells(self, rev: dict[str, Any] | None, delta: bool = False) -> dict[str, Any]:
        lo, hi, w, certified_tails = self._window(delta)
        if rev is not None:  # the reversed pair's grid is this one's (every step above is symmetric in p, q)
            y, fp, fq = rev["y"], rev["fq"], rev["fp"]
        else:
            y, fp, fq = self._grid(lo, hi, w, skip_negligible=delta)
        return self._bracket_cells(y, fp, fq, lo, hi, certified_tails)

    def _grid(self, lo: float, hi: float, w: float,
              skip_negligible: bool = False) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Base grid of width w on [lo, hi], subdivided where ℓ moves by more than κ; ln p, ln q at its points.

        ``skip_negligible``: a base cell whose mass is at most NEGLIGIBLE_MASS under both laws is not subdivided
        (its mass under P is <= w·exp(max ln p at its ends + w/b), ln p being within w/b of its chord; the
        criterion is symmetric in p, q, so the reversed pair's grid is the same)."""
        b = self.b
        n = int(math.ceil((hi - lo) / w))
        if n > MAX_BASE_CELLS:
            n = MAX_BASE_CELLS
            w = (hi - lo) / n
        y0 = lo + w * np.arange(n + 1, dtype=float)
        fp0, fq0 = self._logpdfs(y0)
        ell0 = fp0 - fq0
        # subdivide cells where the loss moves by more than κ (a refinement only: every cell's bounds
        # below are computed from its own end values, so they hold for any grid)
        cnt = np.clip(np.ceil(np.abs(np.diff(ell0)) / self.kappa), 1, 4096).astype(np.int64)
        if skip_negligible:
            top = np.maximum(np.maximum(fp0[:-1], fp0[1:]), np.maximum(fq0[:-1], fq0[1:]))
            cnt[math.log(w) + w / b + top < _LOG_NEGLIGIBLE] = 1
        budget = MAX_CELLS
        if int(cnt.sum()) > budget:
            cnt = np.maximum(1, (cnt * (budget / cnt.sum())).astype(np.int64))
        starts = np.repeat(y0[:-1], cnt)
        first = np.cumsum(cnt) - cnt
        frac = (np.arange(int(cnt.sum())) - np.repeat(first, cnt)) / np.repeat(cnt, cnt)
        y = np.concatenate([starts + w * frac, y0[-1:]])
        # the first point of every cell and the last point are the base grid's (frac = 0: the same floats),
        # so the densities there are the ones already computed; only the added points are evaluated
        new_pt = np.ones(y.size, dtype=bool)
        new_pt[first] = False
        new_pt[-1] = False
        fp = np.empty(y.size)
        fq = np.empty(y.size)
        fp[first], fp[-1], fq[first], fq[-1] = fp0[:-1], fp0[-1], fq0[:-1], fq0[-1]
        if bool(new_pt.any()):
            fp[new_pt], fq[new_pt] = self._logpdfs(y[new_pt])
        return y, fp, fq

    def _logpdfs(self, y: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(ln p(y), ln q(y)). With s_p = s_q > 0 one :func:`gl_logpdf` call on y − μ_p and y − μ_q laid end to end
        (centred at 0): every step of the density is elementwise and gl_logpdf's first is z = y − μ, so the floats
        are those of the two calls (z − 0 = z), at half the calls' fixed cost."""
        b, sp, sq = self.b, self.s_p, self.s_q
        if sp == sq and sp > 0:
            both = gl_logpdf(np.concatenate([y - self.mu_p, y - self.mu_q]), 0.0, sp, b)
            return both[: y.size], both[y.size:]
        return gl_logpdf(y, self.mu_p, sp, b), gl_logpdf(y, self.mu_q, sq, b)

    def _bracket_cells(self, y: NDArray[np.float64], fp: NDArray[np.float64], fq: NDArray[np.float64], lo: float,
                       hi: float, certified_tails: bool) -> dict[str, Any]:
        """The per-cell brackets from the grid y and ln p, ln q at its points (module notes)."""
        b, sp, sq = self.b, self.s_p, self.s_q
        ell = fp - fq
        wv = np.diff(y)
        mass_lo, mass_hi, lmin, lmax = _cell_bounds(wv, fp[:-1], fp[1:], fq[:-1], fq[1:], b, sp, sq)
        tail = _tail_mass(self.mu_p - lo, sp, b) + _tail_mass(hi - self.mu_p, sp, b)
        sup_t, inf_t = self._tail_bounds(lo, hi, certified_tails)
        cells = {"y": y, "w": wv, "mass_lo": mass_lo, "mass_hi": mass_hi, "lmin": lmin, "lmax": lmax,
                 "ell": ell, "tail": min(tail, 1.0), "sup_tail": sup_t, "inf_tail": inf_t, "fp": fp, "fq": fq}
        for v in cells.values():
            if isinstance(v, np.ndarray):
                v.flags.writeable = False  # shared through the memo
        return cells

    def _tail_bounds(self, lo: float, hi: float, certified_tails: bool) -> tuple[float, float]:
        """(upper bound on sup ℓ, lower bound on inf ℓ) beyond the window [lo, hi]: limit ± remainders."""
        b, sp, sq = self.b, self.s_p, self.s_q
        lft, rgt = self.limits
        sup_t, inf_t = -math.inf, math.inf
        for side, lim, edge in (("left", lft, lo), ("right", rgt, hi)):
            rp = _tail_log_range(((self.mu_p - edge) if side == "left" else (edge - self.mu_p)) / sp - sp / b, sp, b) if sp > 0 else (0.0, 0.0)
            rq = _tail_log_range(((self.mu_q - edge) if side == "left" else (edge - self.mu_q)) / sq - sq / b, sq, b) if sq > 0 else (0.0, 0.0)
            sup_t = max(sup_t, lim + rp[1] - rq[0])
            inf_t = min(inf_t, lim + rp[0] - rq[1])
        if not certified_tails:
            sup_t, inf_t = math.inf, -math.inf
        return sup_t, inf_t

    # -------------------------------------------------------------- pure ε
    def sup_bracket(self) -> tuple[float, float, float, float]:
        """(sup ℓ lower, sup ℓ upper, inf ℓ lower, inf ℓ upper): certified bounds on sup ℓ and inf ℓ, each end
        within ~κ of the other (:func:`_sup_search`, memoised on the exact inputs)."""
        return _sup_search(self.mu_p, self.s_p, self.mu_q, self.s_q, self.b, self.kappa)

    def grid_sup_bracket(self) -> tuple[float, float, float, float]:
        """:meth:`sup_bracket` from the full grid of :meth:`cells` (the computation before issue 26's branch and
        bound; kept as the reference its tests compare against)."""
        c = self.cells()
        lft, rgt = self.limits
        sup_lo = max(float(c["ell"].max()), lft, rgt)
        sup_up = max(float(c["lmax"].max()), c["sup_tail"])
        inf_up = min(float(c["ell"].min()), lft, rgt)
        inf_lo = min(float(c["lmin"].min()), c["inf_tail"])
        return sup_lo, max(sup_up, sup_lo), min(inf_lo, inf_up), inf_up

    # -------------------------------------------------------------- δ(ε) for this coordinate alone
    def delta_bracket(self, epsilon: float) -> tuple[float, float]:
        c = self.delta_cells()
        wu = pld._weights(c["lmax"], epsilon)
        wl = pld._weights(c["lmin"], epsilon)
        up = float(c["mass_hi"] @ wu) + c["tail"]
        lo = float(c["mass_lo"] @ wl)
        return max(0.0, lo), min(1.0, up)

    # -------------------------------------------------------------- PLD interface
    def spread(self) -> float:
        c = self.delta_cells()
        mid = 0.5 * (c["lmin"] + c["lmax"])
        m = c["mass_lo"]
        tot = float(m.sum())
        mean = float(m @ mid) / tot
        return max(math.sqrt(max(float(m @ (mid - mean) ** 2) / tot, 0.0)), 1e-12)

    def loss_range(self, tail: float = pld.TAIL) -> tuple[float, float]:
        c = self.delta_cells()
        return float(c["lmin"].min()), float(c["lmax"].max())

    def discretise(self, h: float, k_lo: int, k_hi: int) -> pld.Discretised:
        c = self.delta_cells()
        size = k_hi - k_lo + 1
        ku = np.ceil(c["lmax"] / h).astype(np.int64) - k_lo
        inf = float(c["mass_hi"][ku >= size].sum()) + c["tail"]
        keep = ku < size
        upper = np.bincount(np.clip(ku[keep], 0, size - 1), weights=c["mass_hi"][keep], minlength=size)
        kl = np.floor(c["lmin"] / h).astype(np.int64) - k_lo
        keep = kl >= 0
        lower = np.bincount(np.minimum(kl[keep], size - 1), weights=c["mass_lo"][keep], minlength=size)
        return pld.Discretised(upper=upper.astype(np.float64, copy=False), inf_mass=inf,
                               lower=lower.astype(np.float64, copy=False), rel_err=1e-12)


#: Coarsest start of :func:`_sup_search` (the base width of κ = 0.1), its least split factor and most passes.
SUP_START_KAPPA, SUP_SPLIT, SUP_PASSES = 0.1, 8, 60
#: Pure-ε brackets remembered by :func:`_sup_search` (four floats each).
SUP_MEMO_SIZE = 4096


@functools.lru_cache(maxsize=SUP_MEMO_SIZE)
def _sup_search(mu_p: float, s_p: float, mu_q: float, s_q: float, b: float,
                kappa: float) -> tuple[float, float, float, float]:
    """Certified (sup ℓ lower, sup ℓ upper, inf ℓ lower, inf ℓ upper) by branch and bound (issue 26).

    The same window, tail remainders and per-cell bounds as :meth:`GaussLaplaceCoord.cells` (ℓ on a cell of
    width w lies in [min of its end values − κ_Q(w), max of its end values + κ_P(w)], κ(w) = min(w/b, w²/8s²),
    module notes), but the grid starts coarse (the base width of κ = 0.1) and only the cells that can still
    hold the supremum (upper end above the best value seen + κ) or the infimum (lower end below the least
    value seen − κ) are split (into parts whose widening κ(w) is at most half the cell's margin to that bound,
    at least SUP_SPLIT), until none is left. A cell set aside is final: its bound is
    within κ of a value ℓ takes, so sup ℓ <= max(best value seen + κ, bounds of the cells left, tail bound)
    — certified at every pass; the work is where ℓ is near its extremes, not on the whole window. A pass that
    would exceed MAX_CELLS splits only the cells of largest margin that fit and keeps the others whole for the
    next pass (freezing them all left the coarse κ = 0.1 bounds when b >> s, review29c).
    """
    c = GaussLaplaceCoord(mu_p, s_p, mu_q, s_q, b, kappa)
    lo, hi, w, certified = c._window(delta=False, kappa=max(kappa, SUP_START_KAPPA))
    n = min(max(int(math.ceil((hi - lo) / w)), 1), MAX_BASE_CELLS)
    y = lo + (hi - lo) / n * np.arange(n + 1, dtype=float)
    y[-1] = hi
    ell = gl_logpdf(y, mu_p, s_p, b) - gl_logpdf(y, mu_q, s_q, b)
    lft, rgt = c.limits
    sup_lo = max(float(ell.max()), lft, rgt)
    inf_up = min(float(ell.min()), lft, rgt)
    sup_t, inf_t = c._tail_bounds(lo, hi, certified)
    done_max, done_min = -math.inf, math.inf  # bounds of the cells set aside
    left, right, el, er = y[:-1], y[1:], ell[:-1], ell[1:]
    for _ in range(SUP_PASSES):
        wv = right - left
        kp = wv / b if s_p <= 0 else np.minimum(wv / b, wv * wv / (8.0 * s_p * s_p))
        kq = wv / b if s_q <= 0 else np.minimum(wv / b, wv * wv / (8.0 * s_q * s_q))
        slack = 1e-12 * (1.0 + np.maximum(np.abs(el), np.abs(er)))
        lmax = np.maximum(el, er) + kp + slack
        lmin = np.minimum(el, er) - kq - slack
        hi_c = lmax > sup_lo + kappa
        lo_c = lmin < inf_up - kappa
        split = hi_c | lo_c
        keep = ~split
        if bool(keep.any()):
            done_max = max(done_max, float(lmax[keep].max()))
            done_min = min(done_min, float(lmin[keep].min()))
        if not bool(split.any()):
            break
        # each cell is split into as many parts as make its widening at most half its margin to the bound
        # (κ(w') <= m/2 for w' = max(b m/2, 2 s √m)), at least SUP_SPLIT
        with np.errstate(divide="ignore", invalid="ignore"):
            m_hi = np.where(hi_c, sup_lo + kappa - np.maximum(el, er), np.inf)
            m_lo = np.where(lo_c, np.minimum(el, er) - (inf_up - kappa), np.inf)
            need_p = np.maximum(0.5 * m_hi * b, 0.0 if s_p <= 0 else 2.0 * s_p * np.sqrt(m_hi))
            need_q = np.maximum(0.5 * m_lo * b, 0.0 if s_q <= 0 else 2.0 * s_q * np.sqrt(m_lo))
            parts = np.ceil(wv / np.minimum(need_p, need_q))
        parts = np.clip(np.nan_to_num(parts, nan=SUP_SPLIT, posinf=4096.0), SUP_SPLIT, 4096.0)[split].astype(np.int64)
        total = int(parts.sum())
        if total > MAX_CELLS:  # over the work budget: split the cells of largest margin that fit, keep the rest whole
            margin = np.maximum(lmax - (sup_lo + kappa), (inf_up - kappa) - lmin)[split]
            order = np.argsort(-margin, kind="stable")
            fits = np.cumsum(parts[order] - 1) <= MAX_CELLS - parts.size
            if not bool(fits[0]):  # not even one cell fits: the cells left stay as they are (still certified)
                done_max = max(done_max, float(lmax[split].max()))
                done_min = min(done_min, float(lmin[split].min()))
                break
            parts[order[~fits]] = 1  # kept whole this pass (a later pass may split them)
            total = int(parts.sum())
        left, right, el, er = left[split], right[split], el[split], er[split]
        first = np.cumsum(parts) - parts
        frac = (np.arange(total) - np.repeat(first, parts)) / np.repeat(parts, parts)
        ys = np.repeat(left, parts) + np.repeat(right - left, parts) * frac  # frac = 0: the cell's own left end
        ev = np.empty(total)
        inner = frac > 0
        ev[first] = el
        pts = ys[inner]
        ev[inner] = gl_logpdf(pts, mu_p, s_p, b) - gl_logpdf(pts, mu_q, s_q, b)
        if pts.size:
            sup_lo = max(sup_lo, float(ev[inner].max()))
            inf_up = min(inf_up, float(ev[inner].min()))
        last = first + parts - 1  # each cell's last part ends at the cell's right end
        nxt = np.empty(total)
        nxt[:-1] = ys[1:]
        nxt[last] = right
        enx = np.empty(total)
        enx[:-1] = ev[1:]
        enx[last] = er
        left, right, el, er = ys, nxt, ev, enx
    else:  # passes exhausted: the cells left count with their bounds
        wv = right - left
        kp = wv / b if s_p <= 0 else np.minimum(wv / b, wv * wv / (8.0 * s_p * s_p))
        kq = wv / b if s_q <= 0 else np.minimum(wv / b, wv * wv / (8.0 * s_q * s_q))
        slack = 1e-12 * (1.0 + np.maximum(np.abs(el), np.abs(er)))
        done_max = max(done_max, float((np.maximum(el, er) + kp + slack).max(initial=-math.inf)))
        done_min = min(done_min, float((np.minimum(el, er) - kq - slack).min(initial=math.inf)))
    sup_up = max(done_max, sup_t)
    inf_lo = min(done_min, inf_t)
    return sup_lo, max(sup_up, sup_lo), min(inf_lo, inf_up), inf_up


#: Cells remembered by :meth:`GaussLaplaceCoord.cells` (least recently used first), and the most grid points they may hold
#: in all (~72 bytes a point: ~72 MB at most); the lock guards the memo when accounting runs in threads.
_CELLS_MEMO: OrderedDict[bytes, dict[str, Any]] = OrderedDict()
CELLS_MEMO_POINTS = 1_000_000
_CELLS_LOCK = threading.Lock()
_CELLS_MEMO_POINTS = [0]  # the points the memo holds now


def _remember(key: bytes, cells: dict[str, Any]) -> None:
    """Store ``cells`` under ``key``, evicting the least recently used entries beyond CELLS_MEMO_POINTS points."""
    size = int(cells["y"].size)
    if size > CELLS_MEMO_POINTS:
        return
    prev = _CELLS_MEMO.pop(key, None)
    if prev is not None:
        _CELLS_MEMO_POINTS[0] -= int(prev["y"].size)
    _CELLS_MEMO[key] = cells
    _CELLS_MEMO_POINTS[0] += size
    while _CELLS_MEMO_POINTS[0] > CELLS_MEMO_POINTS:
        _, old = _CELLS_MEMO.popitem(last=False)
        _CELLS_MEMO_POINTS[0] -= int(old["y"].size)


def gl_delta_bracket(mu_p: float, s_p: float, mu_q: float, s_q: float, b: float, epsilon: float, *,
                     rtol: float = 1e-3, target: float | None = None) -> tuple[float, float, GaussLaplaceCoord]:
    """Certified δ(ε) bracket of N(μ_p, s_p²) ⊛ Lap(b) against N(μ_q, s_q²) ⊛ Lap(b), refined to ``rtol``."""
    # Every cell's bounds hold for any grid, so the grid starts coarse and is refined (κ/8 per step,
    # down to κ ≈ 2e-6 either way) only while the bracket is wider than ``rtol`` or, in decision mode
    # (``target``), while it does not decide δ <= target.
    coord = GaussLaplaceCoord(mu_p, s_p, mu_q, s_q, b, kappa=0.1 if target is not None else 1e-2)
    for _ in range(6 if target is not None else 5):
        lo, up = coord.delta_bracket(epsilon)
        if up - lo <= rtol * up + 1e-15 or (target is not None and (up <= target or lo > target)):
            break
        coord = coord.refined(coord.kappa / 8.0)
    return lo, up, coord


#: Split factor and most passes of :func:`gl_delta_adaptive`.
DELTA_SPLIT, DELTA_PASSES = 8, 12
#: δ brackets remembered by :func:`gl_delta_adaptive` (a few floats each).
DELTA_MEMO_SIZE = 8192


@functools.lru_cache(maxsize=DELTA_MEMO_SIZE)
def gl_delta_adaptive(mu_p: float, s_p: float, mu_q: float, s_q: float, b: float, epsilon: float, *,
                      rtol: float = 1e-3, target: float | None = None) -> tuple[float, float, float, int]:
    """Certified δ(ε) bracket of N(μ_p, s_p²) ⊛ Lap(b) against N(μ_q, s_q²) ⊛ Lap(b) by local refinement (issue 26):
    (lower, upper, starting κ, cells at the end).

    The same per-cell bounds as :func:`gl_delta_bracket` (module notes; they hold for any grid), but instead of
    rebuilding the whole grid at κ/8 it splits, DELTA_SPLIT ways, only the cells of the δ grid
    (:meth:`GaussLaplaceCoord.delta_cells` at κ = 1e-2, or 0.1 in decision mode) whose share of the bracket's
    width m_hi·w(ℓ_max) − m_lo·w(ℓ_min) (w(x) = (1 − e^{ε−x})_+) is largest, leaving those of least share while
    they hold at most half the allowed width (at most MAX_CELLS cells in all); it stops under the same rule (width <= ``rtol``·upper + 1e-15, or ``target`` decided).
    If it ends still too wide (over the cell budget or the passes), the bracket is intersected with
    :func:`gl_delta_bracket`'s (both are certified), so it is never looser than the full-grid refinement (review29c).
    Memoised on its arguments (a pure function; the top-up search and both calibration rules repeat them).
    """
    coord = GaussLaplaceCoord(mu_p, s_p, mu_q, s_q, b, kappa=0.1 if target is not None else 1e-2)
    c = coord.delta_cells()
    y, fp, fq = c["y"], c["fp"], c["fq"]
    left, right = y[:-1], y[1:]
    fpl, fpr, fql, fqr = fp[:-1], fp[1:], fq[:-1], fq[1:]
    mlo, mhi, lmin, lmax = c["mass_lo"], c["mass_hi"], c["lmin"], c["lmax"]
    tail = float(c["tail"])
    frac = np.arange(1, DELTA_SPLIT, dtype=float) / DELTA_SPLIT
    lo = up = 0.0
    for step in range(DELTA_PASSES + 1):
        cu = mhi * pld._weights(lmax, epsilon)
        cl = mlo * pld._weights(lmin, epsilon)
        lo = max(0.0, float(cl.sum()))
        up = min(1.0, float(cu.sum()) + tail)
        if up - lo <= rtol * up + 1e-15 or (target is not None and (up <= target or lo > target)) or step == DELTA_PASSES:
            break
        # split the cells of largest share, leaving unsplit those of least share while they sum to <= half the
        # allowed width (every cell stays in the sum: a later, smaller upper end may ask for them to be split)
        gap = cu - cl
        order = np.argsort(gap)
        small = np.cumsum(gap[order]) <= 0.5 * rtol * up
        room = (MAX_CELLS - order.size) // (DELTA_SPLIT - 1)
        nsplit = min(int(order.size - int(small.sum())), room)
        if nsplit <= 0:
            break
        pick = np.zeros(order.size, dtype=bool)
        pick[order[order.size - nsplit:]] = True
        rest = ~pick
        sl, sr = left[pick], right[pick]
        pts = (sl[:, None] + (sr - sl)[:, None] * frac[None, :]).reshape(-1)
        np_ = gl_logpdf(pts, mu_p, s_p, b).reshape(nsplit, -1)
        nq = gl_logpdf(pts, mu_q, s_q, b).reshape(nsplit, -1)
        ys = np.concatenate([sl[:, None], pts.reshape(nsplit, -1), sr[:, None]], axis=1)
        ps = np.concatenate([fpl[pick][:, None], np_, fpr[pick][:, None]], axis=1)
        qs = np.concatenate([fql[pick][:, None], nq, fqr[pick][:, None]], axis=1)
        nl, nr = ys[:, :-1].reshape(-1), ys[:, 1:].reshape(-1)
        npl, npr, nql, nqr = ps[:, :-1].reshape(-1), ps[:, 1:].reshape(-1), qs[:, :-1].reshape(-1), qs[:, 1:].reshape(-1)
        bl, bh, bmin, bmax = _cell_bounds(nr - nl, npl, npr, nql, nqr, b, s_p, s_q)
        left, right = np.concatenate([left[rest], nl]), np.concatenate([right[rest], nr])
        fpl, fpr = np.concatenate([fpl[rest], npl]), np.concatenate([fpr[rest], npr])
        fql, fqr = np.concatenate([fql[rest], nql]), np.concatenate([fqr[rest], nqr])
        mlo, mhi = np.concatenate([mlo[rest], bl]), np.concatenate([mhi[rest], bh])
        lmin, lmax = np.concatenate([lmin[rest], bmin]), np.concatenate([lmax[rest], bmax])
    if not (up - lo <= rtol * up + 1e-15 or (target is not None and (up <= target or lo > target))):
        # ended over the cell budget or the passes, still too wide (e.g. s_q/s_p ~ 100 with b << s_p: the base grid's
        # κ subdivision fills MAX_CELLS over Q's window, review29c): intersect with the full-grid refinement
        # (both brackets are certified, so their intersection is)
        flo, fup, fc = gl_delta_bracket(mu_p, s_p, mu_q, s_q, b, epsilon, rtol=rtol, target=target)
        lo, up = max(lo, flo), min(up, fup)
        return min(lo, up), up, fc.kappa, int(fc.delta_cells()["y"].size - 1)
    return lo, up, coord.kappa, int(left.size)


def gl_pure_epsilon(coords: list[GaussLaplaceCoord], *, rtol: float = 1e-4,
                    target: float | None = None) -> tuple[float, float]:
    """Certified bracket on the pure ε = sup_y |Σ_i ℓ_i(y_i)| of a product of 1-D pairs.

    sup of a separable sum is the sum of sups (and likewise for inf), so
    ε = max(Σ sup ℓ_i, −Σ inf ℓ_i). With ``target`` (decision mode) the grids start coarse and
    are refined only until the bracket decides ε <= target (the bracket is certified at any
    resolution, so the answer is exact; its ends are then less tight).
    """
    if target is not None:
        coords = [c.refined(0.1) for c in coords]
    lower, upper = 0.0, math.inf
    for _ in range(6 if target is not None else 4):
        brs = [c.sup_bracket() for c in coords]
        sup_lo = sum(x[0] for x in brs)
        sup_up = sum(x[1] for x in brs)
        inf_lo = sum(x[2] for x in brs)
        inf_up = sum(x[3] for x in brs)
        # every refinement's bracket is certified, so their intersection is: keep the best ends seen
        # (a finer κ may end over the work budget with a looser upper end than a coarser one, review29c)
        lower = max(lower, sup_lo, -inf_up, 0.0)
        upper = min(upper, max(sup_up, -inf_lo, 0.0))
        if upper - lower <= rtol * max(upper, 1e-12) or (target is not None and (upper <= target or lower > target)):
            break
        coords = [c.refined(c.kappa / 8.0) for c in coords]
    return lower, max(upper, lower)


# --------------------------------------------------------------------------- coupling bound
def _psd_sqrt(a: NDArray[np.float64]) -> NDArray[np.float64]:
    w, v = np.linalg.eigh(0.5 * (a + a.T))
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def complete_basis(basis: NDArray[np.float64]) -> NDArray[np.float64]:
    """Orthonormal columns spanning the orthogonal complement of span(basis)."""
    m, d = basis.shape
    if d == 0:
        return np.eye(m)
    q, _ = np.linalg.qr(np.hstack([basis, np.eye(m)]))
    return q[:, d:m]


@dataclass(frozen=True)
class CouplingShift:
    """D = F_a − F_b in the noise basis under the Gaussian coupling: N(mean, cov), and whether it stays in span B."""

    mean: NDArray[np.float64]
    cov: NDArray[np.float64]
    inside: bool
    reason: str = ""


def coupling_shift(mu_a: ArrayLike, cov_a: ArrayLike, mu_b: ArrayLike, cov_b: ArrayLike,
                   basis: ArrayLike, *, tol: float = 1e-10) -> CouplingShift:
    """Law of BᵀD for the optimal-transport coupling, conditioned on the un-noised coordinates.

    With B⊥ completing B, the coupling keeps B⊥ᵀF_a = B⊥ᵀF_b + B⊥ᵀ(μ_a − μ_b) (possible only when the
    two laws agree on span B⊥: equal means and covariances there, else D leaves span B a.s.), and
    couples the conditional laws of BᵀF given B⊥ᵀF = c by the OT map: F_B | c ~ N(μ_B + K(c − μ_⊥), S)
    with K = Σ_{B⊥} C⁺, S the Schur complement. Then BᵀD ~ N(Bᵀ(μ_a − μ_b), (K_a − K_b) C (K_a − K_b)ᵀ
    + (S_a^{1/2} − S_b^{1/2} R)(S_a^{1/2} − S_b^{1/2} R)ᵀ), R = V Uᵀ from the SVD S_a^{1/2} S_b^{1/2} = U Σ Vᵀ
    (the orthogonal R maximising E⟨S_a^{1/2}u, S_b^{1/2}Ru⟩, i.e. the OT coupling of the two Gaussians).
    """
    b = np.atleast_2d(np.asarray(basis, dtype=float))
    ma, mb = np.asarray(mu_a, float), np.asarray(mu_b, float)
    sa, sb = np.atleast_2d(np.asarray(cov_a, float)), np.atleast_2d(np.asarray(cov_b, float))
    comp = complete_basis(b)
    diff = ma - mb
    scale = max(float(np.linalg.norm(sa, 2)), float(np.linalg.norm(sb, 2)), 1e-300)
    if comp.shape[1]:
        ca = comp.T @ sa @ comp
        cb = comp.T @ sb @ comp
        dmu = comp.T @ diff
        dscale = math.sqrt(scale) + float(np.linalg.norm(ma)) + float(np.linalg.norm(mb))
        if float(np.linalg.norm(dmu)) > tol * dscale:
            return CouplingShift(b.T @ diff, np.zeros((b.shape[1],) * 2), False,
                                 "the mean difference has a component outside the noise span")
        if float(np.linalg.norm(ca - cb, 2)) > tol * scale:
            return CouplingShift(b.T @ diff, np.zeros((b.shape[1],) * 2), False,
                                 "the covariances differ on the un-noised directions")
        c = 0.5 * (ca + cb)
        w, v = np.linalg.eigh(c)
        keep = w > 1e-12 * max(float(w.max(initial=0.0)), 1e-300)
        cinv = (v[:, keep] / w[keep]) @ v[:, keep].T
        xa = b.T @ sa @ comp
        xb = b.T @ sb @ comp
        ka, kb = xa @ cinv, xb @ cinv
        schur_a = b.T @ sa @ b - ka @ c @ ka.T
        schur_b = b.T @ sb @ b - kb @ c @ kb.T
        cross = (ka - kb) @ c @ (ka - kb).T
    else:
        schur_a = b.T @ sa @ b
        schur_b = b.T @ sb @ b
        cross = np.zeros((b.shape[1],) * 2)
    ra, rb = _psd_sqrt(schur_a), _psd_sqrt(schur_b)
    u, _, vt = np.linalg.svd(ra @ rb)
    rot = vt.T @ u.T
    t = ra - rb @ rot
    cov = cross + t @ t.T
    return CouplingShift(b.T @ diff, 0.5 * (cov + cov.T), True)


def conditional_shift(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike,
                      basis: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Law N(mean, cov) of BᵀD when the un-noised coordinates c = B⊥ᵀF are drawn from P and shared.

    Given c, F_B | c ~ N(μ_B + K(c − μ_⊥), S) under each law (K = Σ_{B,⊥} C⁺, S the Schur
    complement); the conditional laws are coupled by the OT map (orthogonal R from the SVD of
    S_P^{1/2} S_Q^{1/2}). With e = c − μ_⊥P ~ N(0, C_P):

        D = (μ_BP − μ_BQ) − K_Q (μ_⊥P − μ_⊥Q) + (K_P − K_Q) e + (S_P^{1/2} − S_Q^{1/2} R) u,

    Gaussian with mean Δμ_B − K_Q Δμ_⊥ and covariance (K_P − K_Q) C_P (K_P − K_Q)ᵀ + T Tᵀ.
    Equals :func:`coupling_shift` when the laws agree on the un-noised coordinates.
    """
    b = np.atleast_2d(np.asarray(basis, dtype=float))
    comp = complete_basis(b)
    mp, mq = np.asarray(mu_p, float), np.asarray(mu_q, float)
    sp, sq = np.atleast_2d(np.asarray(cov_p, float)), np.atleast_2d(np.asarray(cov_q, float))
    d = b.shape[1]
    if comp.shape[1] == 0:
        sh = coupling_shift(mp, sp, mq, sq, b)
        return sh.mean, sh.cov

    def parts(mu: NDArray[np.float64], cov: NDArray[np.float64]) -> tuple[Any, ...]:
        c = comp.T @ cov @ comp
        w, v = np.linalg.eigh(0.5 * (c + c.T))
        keep = w > 1e-12 * max(float(w.max(initial=0.0)), 1e-300)
        cinv = (v[:, keep] / w[keep]) @ v[:, keep].T
        k = (b.T @ cov @ comp) @ cinv
        schur = b.T @ cov @ b - k @ c @ k.T
        return b.T @ mu, comp.T @ mu, k, schur, c

    bp, cp_mu, kp, schur_p, cp = parts(mp, sp)
    bq, cq_mu, kq, schur_q, _ = parts(mq, sq)
    ra, rb = _psd_sqrt(schur_p), _psd_sqrt(schur_q)
    u, _, vt = np.linalg.svd(ra @ rb)
    t = ra - rb @ (vt.T @ u.T)
    mean = (bp - bq) - kq @ (cp_mu - cq_mu)
    cov = (kp - kq) @ cp @ (kp - kq).T + t @ t.T
    return mean.reshape(d), 0.5 * (cov + cov.T)


def _folded_mean(mu: NDArray[np.float64], sd: NDArray[np.float64]) -> NDArray[np.float64]:
    """E|X| for X ~ N(μ, σ²)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(sd > 0, mu / np.where(sd > 0, sd, 1.0), 0.0)
        val = sd * math.sqrt(2 / math.pi) * np.exp(-0.5 * r * r) + mu * (1 - 2 * special.ndtr(-r))
    return np.where(sd > 0, val, np.abs(mu))


def _laplace_shift_delta(mu: NDArray[np.float64], epsilon: float, d: int) -> NDArray[np.float64]:
    """δ(ε) bound for Laplace noise shifted by a total scaled ℓ1 length μ = Σ_k |D_k|/b_k.

    d = 1: exact, 1 − e^{−(μ − ε)/2} for μ > ε (the 1-D Laplace shift). d > 1: any pair with
    |L| <= μ is a post-processing of randomised response with parameter μ (Kairouz, Oh &
    Viswanath 2015), so δ(ε) <= (e^μ − e^ε)_+ / (e^μ + 1).
    """
    mu = np.asarray(mu, dtype=float)
    if d == 1:
        return np.where(mu > epsilon, -np.expm1(-(np.maximum(mu, epsilon) - epsilon) / 2.0), 0.0)
    with np.errstate(over="ignore"):
        val = np.where(mu > epsilon, -np.expm1(epsilon - np.maximum(mu, epsilon)) / (1.0 + np.exp(-mu)), 0.0)
    return val


def coupling_delta_bound(mean: ArrayLike, cov: ArrayLike, scales: ArrayLike, epsilon: float, *,
                         points: int = 2000) -> float:
    """Upper bound on E[g(M)], M = Σ_k |Y_k|/b_k, Y ~ N(mean, cov), g the Laplace-shift δ of :func:`_laplace_shift_delta`.

    Joint convexity of the hockey-stick divergence over the coupling gives δ(ε) <= E[δ_shift(D)(ε)].
    With T(t) >= P(M > t) non-increasing (exact in 1-D; otherwise the least of union bounds
    Σ_k P(|Y_k| > t π_k) over a few splits π and Gaussian concentration of M, which is
    L-Lipschitz with L = min(Σ_k σ_k, √d ||C||^{1/2})), E[g(M)] = ∫_ε^∞ g'(t) P(M > t) dt
    <= Σ_j T(t_j) (g(t_{j+1}) − g(t_j)) + T(t_n): an upper Riemann sum.

    The bound depends on the inputs only through the reduced shift μ = mean/b and covariance
    C = cov/(b bᵀ) (M = Σ_k |Y_k/b_k|), so it is memoised on the bytes of (μ, C, ε, points): a hit
    returns the very float a fresh computation gives (issue 21: the pairs of a uniform grid and the
    steps of a top-up search repeat reduced inputs).
    """
    sc = np.asarray(scales, dtype=float)
    mu = np.ascontiguousarray(np.asarray(mean, dtype=float) / sc)
    c = np.ascontiguousarray(np.atleast_2d(np.asarray(cov, dtype=float)) / np.outer(sc, sc))
    return _coupling_reduced(mu.tobytes(), c.tobytes(), mu.size, float(epsilon), int(points))


#: Reduced inputs remembered by :func:`coupling_delta_bound` and by its split search (bounded memory).
COUPLING_MEMO_SIZE = 8192


#: Φ(z) rounds to exactly 0.0 below _NDTR_LO (Φ(−40) ≈ 4e−350, under the least subnormal) and to exactly 1.0
#: from _NDTR_HI on (1 − Φ(9) ≈ 1.1e−19 < 2⁻⁵⁴, half an ulp of 1): there the value is known without evaluating it.
_NDTR_LO, _NDTR_HI = -40.0, 9.0


def _ndtr(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``special.ndtr(z)``, evaluated only where it is not saturated (the same floats, fewer evaluations)."""
    out = (z >= _NDTR_HI).astype(float)
    live = (z > _NDTR_LO) & (z < _NDTR_HI)
    out[live] = special.ndtr(z[live])
    return out


def _union_tail(t: NDArray[np.float64], splits: NDArray[np.float64], mu: NDArray[np.float64],
                sd: NDArray[np.float64]) -> NDArray[np.float64]:
    """min(1, Σ_k P(|Y_k| > t π_k)) for every t (rows) and split π (columns of the result), Y_k ~ N(μ_k, σ_k²).

    Every σ_k > 0: P(|Y_k| > s) = Φ((−s − μ_k)/σ_k) + Φ((μ_k − s)/σ_k). Shape (len(t), len(splits)).
    """
    tk = t[:, None, None] * splits[None, :, :]
    z1 = (-tk - mu) / sd
    z2 = (mu - tk) / sd
    return np.minimum(1.0, (_ndtr(z1) + _ndtr(z2)).sum(axis=2))


def _tail_for(t: NDArray[np.float64], pi: NDArray[np.float64], mu: NDArray[np.float64],
              sd: NDArray[np.float64]) -> NDArray[np.float64]:
    """min(1, Σ_k P(|Y_k| > t π_k)) for one split π; σ_k = 0 allowed (then |Y_k| = |μ_k| surely)."""
    if bool(np.all(sd > 0)):
        return _union_tail(t, pi[None, :], mu, sd)[:, 0]
    tk = t[:, None] * pi[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        z1 = np.where(sd > 0, (-tk - mu) / np.where(sd > 0, sd, 1.0), np.where(-tk > mu, np.inf, -np.inf))
        z2 = np.where(sd > 0, (mu - tk) / np.where(sd > 0, sd, 1.0), np.where(mu > tk, np.inf, -np.inf))
    return np.minimum(1.0, (special.ndtr(z1) + special.ndtr(z2)).sum(axis=1))


@functools.lru_cache(maxsize=COUPLING_MEMO_SIZE)
def _best_split(mu_b: bytes, sd_b: bytes, t0: float) -> NDArray[np.float64]:
    """The split π minimising the union bound Σ_k P(|Y_k| > t0 π_k) at t0; a pure function of (μ, σ, t0).

    Two coordinates (σ > 0): :func:`_best_split_2`'s grid; otherwise :func:`_level_split`'s equal-density
    solution, kept when it beats the start split π ∝ |μ| + σ at t0. Any π on the simplex gives a valid bound,
    so the search only sets the tightness; memoised because a search over ε (the loss split of
    :mod:`.release`) asks for the same t0 many times.
    """
    return _best_splits(mu_b, sd_b, (t0,))[0]


@functools.lru_cache(maxsize=COUPLING_MEMO_SIZE)
def _best_splits(mu_b: bytes, sd_b: bytes, t0s: tuple[float, ...]) -> tuple[NDArray[np.float64], ...]:
    """:func:`_best_split` at each of ``t0s``, the level splits of all in one :func:`_level_splits` call (its
    steps are elementwise over the levels: the floats of one call per t0, at its fixed cost once)."""
    mu, sd = np.frombuffer(mu_b), np.frombuffer(sd_b)
    if mu.size == 2 and bool(np.all(sd > 0)):
        return tuple(_best_split_2(mu, sd, t0) for t0 in t0s)
    out = []
    for t0, pi in zip(t0s, _level_splits(mu, sd, t0s), strict=True):
        wv = np.abs(mu) + sd
        best = wv / wv.sum()
        t0a = np.array([t0])
        if pi is not None and float(_tail_for(t0a, pi, mu, sd)[0]) <= float(_tail_for(t0a, best, mu, sd)[0]):
            best = pi
        best.flags.writeable = False
        out.append(best)
    return tuple(out)


#: Levels of each refinement pass of :func:`_level_split`, bisection steps of each coordinate's
#: inversion, and passes (the common level is bracketed to ~1/SPLIT_LEVELS**SPLIT_PASSES of its range, then
#: interpolated).
SPLIT_LEVELS, SPLIT_INNER, SPLIT_PASSES = 48, 34, 3


def _level_split(mu: NDArray[np.float64], sd: NDArray[np.float64], t0: float) -> NDArray[np.float64] | None:
    """The split minimising Σ_k f_k(s_k), f_k(s) = P(|Y_k| > s), over s_k ≥ m_k = |μ_k| with Σ_k s_k = t0
    (π = s / t0) (:func:`_level_splits` at one t0)."""
    return _level_splits(mu, sd, (t0,))[0]


def _level_splits(mu: NDArray[np.float64], sd: NDArray[np.float64],
                  t0s: tuple[float, ...]) -> list[NDArray[np.float64] | None]:
    """For each t0 of ``t0s``: the split minimising Σ_k f_k(s_k), f_k(s) = P(|Y_k| > s), over s_k ≥ m_k = |μ_k| with
    Σ_k s_k = t0 (π = s / t0), vectorised; ``None`` when t0 leaves no room above Σ_k m_k.

    On s ≥ m_k the density p_k(s) = −f_k'(s) = [φ((s − m_k)/σ_k) + φ((s + m_k)/σ_k)]/σ_k decreases, so each
    f_k is convex there and the KKT conditions of this convex problem, p_k(s_k) = λ for s_k > m_k and
    p_k(m_k) ≤ λ otherwise, give its minimum. That region holds the global minimum whenever the bound is
    below 1/2: a coordinate with s_k < m_k alone contributes f_k(s_k) ≥ Φ(0) = 1/2. With u = (s − m)/σ and
    a = m/σ, log p(s) = −u²/2 − log(σ√(2π)) + log(1 + e^{−2a(a+u)}), decreasing in u: for a level ℓ each
    u_k(ℓ) is found by bisection between √(2(−c_k − ℓ)) and √(2(log 2 − c_k − ℓ)) (c_k = log(σ_k√(2π))),
    all levels and coordinates at once; Σ_k s_k(ℓ) decreases in ℓ, so ℓ = top − v² is bracketed by grid
    passes over v and the two bracketing solutions interpolated to sum to t0. A coordinate with σ_k = 0
    (|Y_k| = m_k surely) gets s_k = m_k(1 + 10⁻¹²). The levels of every t0 are bisected in one array (each step is
    elementwise per level and coordinate, so the floats are those of one t0 at a time).
    """
    m = np.abs(mu)
    pos = sd > 0
    fixed = np.where(pos, 0.0, m * (1.0 + 1e-12))
    result: list[NDArray[np.float64] | None] = [None] * len(t0s)
    if not bool(pos.any()):
        return result
    budgets = {i: t0 - float(fixed.sum()) for i, t0 in enumerate(t0s)}
    todo = [i for i, budget in budgets.items() if budget > float(m[pos].sum())]
    if not todo:
        return result
    mp, sp = m[pos], sd[pos]
    a = mp / sp
    c = np.log(sp * math.sqrt(2.0 * math.pi))
    h0 = -c + np.logaddexp(0.0, -2.0 * a * a)  # log p_k(m_k)
    top = float(h0.max())
    log2 = math.log(2.0)

    def s_at(v: NDArray[np.float64]) -> NDArray[np.float64]:
        lev = top - v[:, None] ** 2
        live = h0 > lev
        lo = np.where(live, np.sqrt(np.maximum(0.0, 2.0 * (-c - lev))), 0.0)
        hi = np.where(live, np.sqrt(np.maximum(0.0, 2.0 * (log2 - c - lev))), 0.0)
        for _ in range(SPLIT_INNER):
            mid = 0.5 * (lo + hi)
            above = -0.5 * mid * mid - c + np.logaddexp(0.0, -2.0 * a * (a + mid)) > lev
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        return np.asarray(mp + sp * (0.5 * (lo + hi)), dtype=float)

    lo_v: dict[int, float] = {}
    hi_v: dict[int, float] = {}
    s_lo: dict[int, NDArray[np.float64]] = {}
    s_hi: dict[int, NDArray[np.float64]] = {}
    t_lo: dict[int, float] = {}
    t_hi: dict[int, float] = {}
    for i in todo:
        bottom = float(np.max(-c - 0.5 * (budgets[i] / sp) ** 2))  # there every s_k ≥ m_k + budget: Σ s_k > budget
        lo_v[i], hi_v[i] = 0.0, math.sqrt(max(top - bottom, 0.0))
        s_lo[i] = s_hi[i] = mp
        t_lo[i] = t_hi[i] = float(mp.sum())
    for _ in range(SPLIT_PASSES):
        vs = {i: np.linspace(lo_v[i], hi_v[i], SPLIT_LEVELS) for i in todo}
        s_all = s_at(np.concatenate([vs[i] for i in todo]))
        for n, i in enumerate(todo):
            v, s = vs[i], s_all[n * SPLIT_LEVELS:(n + 1) * SPLIT_LEVELS]
            tot = s.sum(axis=1)
            j = min(max(int(np.searchsorted(tot, budgets[i])), 1), SPLIT_LEVELS - 1)
            lo_v[i], hi_v[i] = float(v[j - 1]), float(v[j])
            s_lo[i], s_hi[i], t_lo[i], t_hi[i] = s[j - 1], s[j], float(tot[j - 1]), float(tot[j])
    for i in todo:
        budget = budgets[i]
        w = 0.0 if t_hi[i] == t_lo[i] else min(1.0, max(0.0, (budget - t_lo[i]) / (t_hi[i] - t_lo[i])))
        star = (1.0 - w) * s_lo[i] + w * s_hi[i]
        out = fixed.copy()
        out[pos] = star * (budget / float(star.sum()))
        result[i] = np.asarray(out / float(out.sum()), dtype=float)
    return result


#: Points of each of the two grid passes of :func:`_best_split_2` (the split's resolution is ~1/SPLIT_POINTS²).
SPLIT_POINTS = 129


def _best_split_2(mu: NDArray[np.float64], sd: NDArray[np.float64], t0: float) -> NDArray[np.float64]:
    """Two coordinates (σ > 0): π = (p, 1 − p) minimising the union bound at t0 by two vectorised grid passes.

    The split is one number, so a grid over p ∈ [0, 1] (then a finer grid around its best point) replaces the
    Nelder-Mead search at a fraction of its cost (all points in one call of :func:`_union_tail`); any p gives
    a valid bound, so the grids only set the tightness. The best point of both passes is kept.
    """
    t0a = np.array([t0])
    p = np.linspace(0.0, 1.0, SPLIT_POINTS)
    best, best_val = 0.5, math.inf
    for _ in range(2):
        vals = _union_tail(t0a, np.stack([p, 1.0 - p], axis=1), mu, sd)[0]
        k = int(np.argmin(vals))
        if float(vals[k]) < best_val:
            best, best_val = float(p[k]), float(vals[k])
        step = float(p[1] - p[0])
        p = np.clip(np.linspace(best - step, best + step, SPLIT_POINTS), 0.0, 1.0)
    out = np.array([best, 1.0 - best])
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=COUPLING_MEMO_SIZE)
def _coupling_reduced(mu_b: bytes, c_b: bytes, d: int, epsilon: float, points: int) -> float:
    """:func:`coupling_delta_bound` on the reduced inputs μ = mean/b, C = cov/(b bᵀ) (d×d), given as float64 bytes
    (memoised here, on the real function: a pure function of its arguments)."""
    mu, c = np.frombuffer(mu_b), np.frombuffer(c_b).reshape(d, d)
    sd = np.sqrt(np.clip(np.diag(c), 0.0, None))
    total = float(np.abs(mu).sum())
    if float(sd.max(initial=0.0)) <= 1e-15 * max(1.0, total):
        return float(_laplace_shift_delta(np.array([total]), epsilon, d)[0])
    amu = np.abs(mu)
    cands = [np.ones(d) / d]
    for wv in (sd, amu + sd, amu + 3.0 * sd, amu):
        if float(wv.sum()) > 0:
            cands.append(wv / wv.sum())
    if d > 1:
        t0 = max(epsilon, 1.05 * total)
        mu_b, sd_b = np.ascontiguousarray(mu).tobytes(), np.ascontiguousarray(sd).tobytes()
        if d > 2:  # the tail beyond t0 weighs too: the split that is best one spread Σσ_k further out
            cands.extend(_best_splits(mu_b, sd_b, (t0, t0 + float(sd.sum()))))
        else:
            cands.append(_best_split(mu_b, sd_b, t0))
    ef = float(_folded_mean(mu, sd).sum())
    lip = min(float(sd.sum()), math.sqrt(d) * math.sqrt(max(float(np.linalg.eigvalsh(c)[-1]), 0.0)))

    # equal splits give equal bounds (in 1-D all five are π = 1): each distinct one is evaluated once
    splits = np.stack(list({pi.tobytes(): pi for pi in cands}.values()))

    t_hi = max(epsilon, total) + 12.0 * float(sd.sum()) + 1e-12
    ts = epsilon + (t_hi - epsilon) * np.linspace(0.0, 1.0, points + 1)
    # the tail bound T(t) at every grid point: the least union bound over the splits, and concentration
    if bool(np.all(sd > 0)):  # every distinct split at once
        tv = np.min(_union_tail(ts, splits, mu, sd), axis=1)
    else:
        tv = np.min(np.stack([_tail_for(ts, pi, mu, sd) for pi in cands]), axis=0)
    if d > 1 and lip > 0:
        conc = np.where(ts > ef, np.exp(-np.maximum(ts - ef, 0.0) ** 2 / (2.0 * lip * lip)), 1.0)
        tv = np.minimum(tv, conc)
    gv = _laplace_shift_delta(ts, epsilon, d)
    bound = float(tv[:-1] @ np.diff(gv)) + float(tv[-1])
    return min(1.0, bound)


