"""Exact accounting of the tupling mechanism (the library's addition to Kawamoto & Murakami, the tupling paper, Section 6).

The law of a tuple of ``Q^tp_{k,ν,A}`` (:class:`~distpriv.local.Tupling`) is
``Q#(λ)[ȳ] = 1/(k+1) Π_j ν[y_j] · Σ_i w_λ(y_i)`` with ``w_λ = A#(λ)/ν``
(proof of Proposition 12). Write ``a_b = A#(λ_b)``. For γ = e^ε the hockey-stick divergence is

    δ(ε) = Σ_ȳ (Q#(λ0)[ȳ] − γ Q#(λ1)[ȳ])^+ = 1/(k+1) · E[(Σ_{i=1}^{k+1} Z_i)^+],

with ``Z_i = (a_0 − γ a_1)(y_i)/ν(y_i)`` and ``y_i ~ ν`` i.i.d. (for the
uniform ν of Theorem 3, ``Z = |Y| (a_0 − γ a_1)(y)`` with ``y`` uniform). So δ(ε)
is an expectation over a sum of k+1 i.i.d. terms: the law of one term is put
on a grid of width h by splitting each atom between its two neighbouring grid
points so as to preserve its mean, and the (k+1)-fold convolution is done by
FFT. Since ``s ↦ s^+`` is convex and the split is a mean-preserving spread,
the grid value is a rigorous **upper** bound; the same spread moves the sum by
at most ``(k+1)h``, which gives the rigorous **lower** bound
``upper − (k+1) h · P(|S'| < 2(k+1)h)`` — an O(h²) gap. The least ε for a δ is
found by bisection on these certified bounds, refining the grid only near the
answer. For δ = 0 the value is closed-form: ``max_y ln(a_0[y]/a_1[y])`` (the
ratio of two sums is at most the largest term ratio, Proposition 12).

The KL divergence of the tuple distributions is computed by the Laplace transform of the dummies' sum
(:mod:`distpriv.local.tupling_laplace`: a one-dimensional integral of closed forms, certified trapezoidal
rule, bracket ~1e-12 wide for any ν and |Y|; issue 25). The convolution bounds below remain the fallback.
χ² and the squared Hellinger distance beyond the enumeration of the tuple's multiset laws come from the
same module (:func:`~distpriv.local.tupling_laplace.divergence_brackets`: integrals over θ ∈ [0, 1] of
``J(θ) = E[D²/(θS0 + (1−θ)S1)]/(k+1)``, certified, ~1e-12 wide; they were capped by the base channel's
divergence before). At large k the KL bracket of the difference of two transforms widens (~k ulp); it is
then intersected with the same route's KL (:meth:`TuplingAccountant.kl_bounds`). Both Laplace routes
normalise their inputs first: ν accepted with a sum off 1 by up to 1e-8 is accounted as ν/Σν (the law
the sampler draws), and a sum off by a few ulp no longer moves the KL by ~k ulp at k >= 1e6. So do the
enumeration of the multiset laws (:meth:`TuplingAccountant.multiset_laws`,
:func:`~distpriv.local.tupling_laplace.enumerated_upper`, every term rounded up) and the data-processing caps
(:func:`~distpriv.local.tupling_laplace.base_caps`, rounded up): every χ², Hellinger and KL claim is for the
normalised laws, and where the quadrature cannot certify (wide or undefined bracket) the claim is the cap.
It decomposes likewise
(``ln Σ`` over one slot and an independent sum over the other k):

    D_KL(Q#λ0 ‖ Q#λ1) = Σ_y a_0[y] (E ln(w_0(y) + U') − E ln(w_1(y) + V')),

``U' = Σ_{i=1}^k w_0(y_i)``, ``V' = Σ_{i=1}^k w_1(y_i)``; the same
mean-preserving grid gives a lower bound on each ``E ln`` (Jensen) and a
second-order upper bound.

Non-uniform dummies. With ν far from uniform the values ``(a_0 − γa_1)/ν`` span many orders of
magnitude (an output ν rarely draws has a huge value) and one grid of the whole range is too coarse:
it gave δ up to 46× the exact value and KL = ∞ where it is finite. For non-uniform ν the sums go
through :class:`~distpriv.local.iid_sums.IidSum` instead: every multiset of draws is enumerated when
there are at most 50,000 (exact up to rounding), else the rare far-out outputs are enumerated and
only the bulk is gridded (same certified bounds, now at the bulk's resolution; issue 25).

Theorem 3 / Theorem 7 bounds and membership in ``Λ_{β,η,A}`` are provided for
comparison (:meth:`Tupling.theorem3`, :meth:`Tupling.theorem7`). They follow the
proof of Proposition 13 rather than the statement: η is the ``A#(λ)``-mass of the
outputs above β (the real output is drawn from ``A#(λ)``), and Hoeffding's range
for the dummy terms is ``max(β, max_y A#(λ)[y])``. Seeded Monte Carlo estimates
cover arbitrary ν.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import fft as sfft
from scipy import optimize, special

from .. import divergences as dv
from .._validation import RngLike, as_rng, check_choice, check_delta, check_int, check_real
from ..errors import AssumptionError, InvalidParameterError
from ..guarantees import Assumption, AssumptionCode, Calibration, Guarantee
from ..privacy_profile import Claim, PrivacyProfile
from . import iid_sums, tupling_laplace
from .iid_sums import IidSum, _split_grid
from .mechanism import check_distribution

if TYPE_CHECKING:
    from .tupling import Tupling

_EPS_MACHINE = float(np.finfo(float).eps)
#: Finest bulk grid of the KL bounds with non-uniform dummies.
KL_MAX_BINS = 1 << 14
#: Largest number of logarithms one refinement of the non-uniform KL bounds may evaluate.
KL_MAX_WORK = 20_000_000


@dataclass(frozen=True)
class EpsilonResult:
    """Certified bracket of the exact ε: the true least ε lies in ``[lower, upper]``."""

    lower: float
    upper: float
    delta: float
    bins: int

    @property
    def epsilon(self) -> float:
        """The sound value (an upper bound on the exact ε within the tolerance)."""
        return self.upper


@dataclass(frozen=True)
class Theorem3Bound:
    """Parameters and value of the Theorem 3 bound (ε_α, δ_α) for ``Λ_{β,η,A}``.

    ``eta`` is the ``A#(λ)``-mass above β (max over the pair), ``hoeffding_range``
    the bound r on the dummy terms used in ``δ_α = 2 exp(−2α²/(k r²)) + η``
    (see :meth:`Tupling.theorem3`).
    """

    epsilon: float
    delta: float
    alpha: float
    beta: float
    eta: float
    hoeffding_range: float = math.nan


def _sum_pmf(pmf: NDArray[np.float64], terms: int) -> tuple[NDArray[np.float64], float]:
    """``terms``-fold self-convolution of a pmf by FFT; returns (pmf, noise floor)."""
    n = pmf.size
    out_len = terms * (n - 1) + 1
    size = sfft.next_fast_len(out_len, real=True)
    f = sfft.rfft(pmf, size)
    acc: NDArray[np.complex128] | None = None
    e = terms
    while e:  # binary exponentiation by multiplication (faster and more accurate than complex pow)
        if e & 1:
            acc = f.copy() if acc is None else acc * f
        e >>= 1
        if e:
            f = f * f
    res = sfft.irfft(acc, size)[:out_len]
    noise = max(float(-res.min()), 0.0) + 4.0 * _EPS_MACHINE * max(float(res.max()), 0.0) * math.log2(size + 1)
    return np.clip(res, 0.0, None), noise


class TuplingAccountant:
    """Exact and bounded (ε, δ) / KL distribution privacy of one :class:`~distpriv.local.Tupling` (module docstring).

    Every method of the mechanism's accounting (:meth:`Tupling.epsilon_bounds`,
    :meth:`Tupling.theorem3`, ...) delegates here; ``mechanism`` supplies the
    base ``A``, ``k``, the dummy law ν, the lifting ``A#`` and the sampler.
    """

    def __init__(self, mechanism: Tupling) -> None:
        self.mechanism = mechanism
        self._elog_work = 0

    # ------------------------------------------------------ exact accounting
    def _weights(self, lam0: ArrayLike, lam1: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        a0 = self.mechanism.lift(lam0)
        a1 = self.mechanism.lift(lam1)
        if np.any(self.mechanism.dummy <= 0):
            raise InvalidParameterError(
                "dummy: the exact convolution method needs ν[y] > 0 for every y; "
                "use monte_carlo_delta / monte_carlo_epsilon for dummies without full support"
            )
        return a0, a1

    def _divergence_weights(
        self, lam0: ArrayLike, lam1: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        """``(a0, a1, rel)``: ``λ_b A`` without the lift's float division by its sum (the divergence routes
        normalise exactly enough themselves), and a bound ``rel`` on each entry's relative rounding error:
        ``u`` for a point mass (a stored row of A, which the base mechanism normalised entry by entry, each
        within ½ ulp of the given row's exact normalisation), ``(n_inputs + 3)u`` for the float product of a
        mixture. (Dividing each entry by a float sum moves laws that differ by less than an ulp of their
        entries, e.g. rows 1e-16 apart on 1e-16 entries, by ~1e-9 relatively: the claim must cover the given
        rows, not only their rounded copy; issue 25 review.)"""
        self._weights(lam0, lam1)  # validation (distributions, ν with full support)
        matrix = self.mechanism.base.matrix
        out = []
        rel = 2.0**-53
        for lam in (lam0, lam1):
            lv = np.asarray(lam, dtype=float)
            nz = np.flatnonzero(lv)
            if nz.size == 1 and lv[nz[0]] == 1.0:
                out.append(np.array(matrix[nz[0]], dtype=float))
            else:
                out.append(np.clip(lv @ matrix, 0.0, None))
                rel = (matrix.shape[0] + 3) * 2.0**-53
        return out[0], out[1], rel

    def _delta_bounds_dir(
        self, a0: NDArray[np.float64], a1: NDArray[np.float64], epsilon: float, bins: int
    ) -> tuple[float, float]:
        """Certified (lower, upper) bounds of ``E_{e^ε}(Q#λ0 ‖ Q#λ1)``."""
        nu = self.mechanism.dummy
        kk = self.mechanism.k + 1
        gamma = math.exp(epsilon)
        z = (a0 - gamma * a1) / nu
        zmax = float(z.max())
        if zmax <= 0:
            return 0.0, 0.0
        if float(z.min()) >= 0:
            exact = max(0.0, float(np.sum(a0 - gamma * a1)))
            return exact, exact
        if not self.mechanism.uniform:
            # values (a0 − γa1)/ν spread over many orders of magnitude: rare/bulk split (local/iid_sums.py)
            lo_s, up_s = IidSum(z, nu, kk, bins=bins).hinge()
            return min(lo_s / kk, 1.0), min(up_s / kk, 1.0)
        pmf, zmin, h = _split_grid(z, nu, bins)
        sum_pmf, noise = _sum_pmf(pmf, kk)
        vals = kk * zmin + h * np.arange(sum_pmf.size)
        pos = vals > 0
        upper_e = float(np.dot(sum_pmf[pos], vals[pos]))
        near = np.abs(vals) < 2 * kk * h
        p_near = float(sum_pmf[near].sum()) + noise * int(near.sum())
        fl = noise * float(vals[pos].sum())
        upper = (upper_e + fl) / kk
        lower = max(0.0, (upper_e - fl - kk * h * p_near) / kk)
        return min(lower, 1.0), min(upper, 1.0)

    def _delta_limit(self, a0: NDArray[np.float64], a1: NDArray[np.float64]) -> float:
        """``lim_{ε→∞} E_{e^ε}``: the mass ``Q#λ0`` puts on tuples that ``Q#λ1`` never outputs."""
        zero = a1 <= 0
        if not np.any(zero & (a0 > 0)):
            return 0.0
        nu_zero = float(self.mechanism.dummy[zero].sum())
        return float(a0[zero].sum() * nu_zero**self.mechanism.k)

    def _epsilon_dir(
        self,
        a0: NDArray[np.float64],
        a1: NDArray[np.float64],
        delta: float,
        tol: float,
        bins: int,
        max_bins: int,
        stop_below: float = -math.inf,
    ) -> tuple[float, float, int]:
        """Certified bracket ``[lo, hi]`` of the least ε >= 0 with ``E_{e^ε}(Q#λ0‖Q#λ1) <= δ``.

        ``hi`` always satisfies ``upper(hi) <= δ`` (ε = hi is certified feasible) and
        ``lo`` satisfies ``lower(lo) > δ`` or ``lo = 0`` (certified infeasible). At a
        grid of ``n`` intervals Brent's method finds the roots of ``log upper − log δ``
        and ``log lower − log δ``; the grid is then refined by the factor that the
        O(h²) gap predicts, re-using the bracket (grids with 2^j intervals are
        nested, so a coarser bound stays valid). Stops early when ``hi < stop_below``.
        """
        if delta == 0.0:
            d = dv.max_divergence(a0, a1)
            return max(0.0, d), max(0.0, d), 0
        n = bins
        cache: dict[tuple[float, int], tuple[float, float]] = {}

        def ev(e: float) -> tuple[float, float]:
            key = (e, n)
            if key not in cache:
                cache[key] = self._delta_bounds_dir(a0, a1, e, n)
            return cache[key]

        log_d = math.log(delta)
        if ev(0.0)[1] <= delta:
            return 0.0, 0.0, n
        d_inf = dv.max_divergence(a0, a1)
        if math.isinf(d_inf):
            if self._delta_limit(a0, a1) > delta:
                return math.inf, math.inf, n
            hi = 1.0
            while ev(hi)[1] > delta:
                hi *= 2.0
                if hi > 1e4:  # pragma: no cover - δ within 1e-4000 of the limit
                    return math.inf, math.inf, n
        else:
            hi = max(d_inf, 0.0)
        lo = 0.0
        step = tol / 16

        def g_up(e: float) -> float:
            return math.log(max(ev(e)[1], 1e-300)) - log_d

        def g_low(e: float) -> float:
            return math.log(max(ev(e)[0], 1e-300)) - log_d

        r_up = r_low = math.nan  # root estimates of the previous grid
        while True:
            if hi < stop_below:
                break
            done = False
            if math.isfinite(r_up) and math.isfinite(r_low) and r_up - r_low > step:
                # finer grid: both bound curves are near-linear on the small bracket; two
                # evaluations give secant roots, two more certify them
                x0, x1 = r_low, r_up
                (l0, u0), (l1, u1) = ev(x0), ev(x1)
                if u0 != u1 and l0 != l1:
                    cu = x0 + (u0 - delta) * (x1 - x0) / (u0 - u1)
                    cl = x0 + (l0 - delta) * (x1 - x0) / (l0 - l1)
                    xu, xl = cu + step, cl - step
                    ok_u = lo < xu < hi and ev(xu)[1] <= delta
                    ok_l = lo < xl < hi and ev(xl)[0] > delta
                    if ok_u:
                        hi = xu
                    if ok_l:
                        lo = xl
                    r_up, r_low = cu, cl
                    done = ok_u and ok_l
            if not done:
                # at a finer grid the FFT round-off allowance can push upper(hi) back above δ;
                # hi stays certified by the coarser grid, so only bracket a sign change
                if g_up(lo) > 0 and g_up(hi) <= 0 and hi - lo > tol:
                    r = optimize.brentq(g_up, lo, hi, xtol=step, rtol=4 * _EPS_MACHINE)
                    r_up = r
                    for x in (r, r + step, r + 4 * step):
                        if lo < x < hi and ev(x)[1] <= delta:
                            hi = x
                            break
                if g_low(lo) > 0 and g_low(hi) <= 0 and hi - lo > tol:
                    r = optimize.brentq(g_low, lo, hi, xtol=step, rtol=4 * _EPS_MACHINE)
                    r_low = r
                    for x in (r, r - step, r - 4 * step):
                        if lo < x < hi and ev(x)[0] > delta:
                            lo = x
                            break
                else:
                    r_low = lo
            if hi - lo <= tol or n >= max_bins:
                break
            factor = max(2.0, 1.2 * math.sqrt((hi - lo) / (0.5 * tol)))
            n = int(min(max_bins, 2 ** math.ceil(math.log2(n * factor))))
        return lo, hi, n

    def epsilon_bounds(
        self,
        lam0: ArrayLike,
        lam1: ArrayLike,
        delta: float,
        *,
        tol: float = 1e-5,
        bins: int = 1024,
        max_bins: int = 1 << 17,
    ) -> EpsilonResult:
        """Certified bracket of the least ε with (ε, δ)-DistP for the pair, both orders.

        Bisection on ε using the certified grid bounds of δ(ε) (module docstring);
        the bracket width is at most ``tol`` unless the grid resolution
        ``max_bins`` is reached first. Requires ν[y] > 0 for all y.
        """
        d = check_delta(delta, "delta", allow_zero=True)
        t = check_real(tol, "tol")
        if t <= 0:
            raise InvalidParameterError(f"tol: must be > 0, got {t}")
        b = check_int(bins, "bins", minimum=16)
        mb = max(b, check_int(max_bins, "max_bins", minimum=16))
        a0, a1 = self._weights(lam0, lam1)
        # a coarse pass in both orders; only the dominating order is refined fully
        c1 = self._epsilon_dir(a0, a1, d, 64 * t, b, b)
        c2 = self._epsilon_dir(a1, a0, d, 64 * t, b, b)
        first, second = ((a0, a1), (a1, a0)) if c1[1] >= c2[1] else ((a1, a0), (a0, a1))
        lo1, hi1, n1 = self._epsilon_dir(*first, d, t, b, mb)
        lo2, hi2, n2 = self._epsilon_dir(*second, d, t, b, mb, stop_below=lo1)
        return EpsilonResult(lower=max(lo1, lo2), upper=max(hi1, hi2), delta=d, bins=max(n1, n2))

    def distp_epsilon(self, lam0: ArrayLike, lam1: ArrayLike, delta: float = 0.0, *, tol: float = 1e-5) -> float:
        """Least ε with (ε, δ)-DistP for the pair (upper end of the certified bracket, width <= tol)."""
        return self.epsilon_bounds(lam0, lam1, delta, tol=tol).upper

    def delta_bounds(
        self, lam0: ArrayLike, lam1: ArrayLike, epsilon: float, *, rtol: float = 1e-6, max_bins: int = 1 << 18
    ) -> tuple[float, float]:
        """Certified (lower, upper) bounds of the least δ for (ε, δ)-DistP, both orders."""
        eps = check_real(epsilon, "epsilon")
        if eps < 0:
            raise InvalidParameterError(f"epsilon: must be >= 0, got {eps}")
        a0, a1 = self._weights(lam0, lam1)
        out = []
        for p, q in ((a0, a1), (a1, a0)):
            n = 1024
            while True:
                lb, ub = self._delta_bounds_dir(p, q, eps, n)
                if ub - lb <= rtol * max(ub, 1e-300) or n >= max_bins:
                    break
                n *= 4
            out.append((lb, ub))
        return max(o[0] for o in out), max(o[1] for o in out)

    def distp_delta(self, lam0: ArrayLike, lam1: ArrayLike, epsilon: float) -> float:
        """Least δ for (ε, δ)-DistP of the pair (certified upper bound, relative gap <= 1e-6)."""
        return self.delta_bounds(lam0, lam1, epsilon)[1]

    # ------------------------------------------------------------------ KL
    def _elog_bounds(
        self, c: NDArray[np.float64], w: NDArray[np.float64], bins: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Bounds of ``E ln(c_j + W)`` with ``W = Σ_{i=1}^k w(y_i)``, ``y_i ~ ν`` (for each j)."""
        if not self.mechanism.uniform:
            summed = IidSum(w, self.mechanism.dummy, self.mechanism.k, bins=bins)
            work = summed.elog_work(c.size)
            if summed.exact or work <= KL_MAX_WORK:
                self._elog_work = work
                return summed.elog(c)
            # too many rare-count vectors × grid points: one grid of the whole range (certified, coarser)
            self._elog_work = KL_MAX_WORK
        pmf, wmin, h = _split_grid(w, self.mechanism.dummy, bins)
        spmf, noise = _sum_pmf(pmf, self.mechanism.k)
        keep = spmf > noise
        vals = self.mechanism.k * wmin + h * np.arange(spmf.size)
        vals, probs = vals[keep], spmf[keep]
        probs = probs / probs.sum()
        arg = c[:, None] + vals[None, :]
        with np.errstate(divide="ignore"):
            lower = np.log(arg) @ probs  # Jensen: mean-preserving spread lowers E of a concave function
            shifted = np.maximum(arg - self.mechanism.k * h, 0.0)
            inv2 = np.where(shifted > 0, 1.0 / np.where(shifted > 0, shifted, 1.0) ** 2, np.inf)
        corr = 0.5 * (self.mechanism.k * h) ** 2 * (inv2 @ probs) if h > 0 else np.zeros(c.size)
        upper = lower + corr
        return lower, upper

    def kl_bounds(
        self, lam0: ArrayLike, lam1: ArrayLike, *, bins: int = 1024
    ) -> tuple[float, float]:
        """Certified bounds of ``D_KL(Q#λ0 ‖ Q#λ1)`` (one order), typically 1e-12 apart.

        Computed by the Laplace transform of the dummies' sum (:func:`~distpriv.local.tupling_laplace.kl_bracket`:
        ``D_KL = ∫_0^∞ (ψ φ_1^k − χ φ_0^k) dt/t`` by the trapezoidal rule in ``ln t`` with its certified error
        bound), for any ν with full support and any |Y|: no grid of ``A#λ/ν`` and no sum over tuples. Where
        that is infinite or undefined the convolution bounds of the module docstring are used. ``bins``: grid
        size of that fallback. The upper end is also capped by ``D_KL(A#λ0 ‖ A#λ1)`` (data processing: the
        tuple is a post-processing of the real output by a channel that does not depend on λ).
        """
        b = check_int(bins, "bins", minimum=16)
        a0, a1 = self._weights(lam0, lam1)
        r0, r1, rel = self._divergence_weights(lam0, lam1)
        base_kl = tupling_laplace.base_caps(r0, r1, rel)["kl"]  # rounded up (a float KL can fall below the exact)
        nu, k = self.mechanism.dummy, self.mechanism.k
        lo_l, up_l = tupling_laplace.kl_bracket(a0, a1, nu, k)
        if not math.isinf(lo_l) and not (math.isfinite(up_l) and up_l - lo_l <= 1e-9 * up_l):
            # large k: the difference of the two transforms loses ~k ulp; the non-negative J(θ) route does not.
            # Also where that bracket is infinite or undefined (ratios of wide magnitude, issue 25 review)
            lo_j, up_j = tupling_laplace.divergence_brackets(r0, r1, nu, k, ("kl",), rel)["kl"]
            if math.isfinite(up_j):
                if not math.isfinite(up_l):
                    lo_l, up_l = lo_j, up_j
                elif max(lo_l, lo_j) <= min(up_l, up_j):  # both certified: intersect
                    lo_l, up_l = max(lo_l, lo_j), min(up_l, up_j)
        if math.isfinite(up_l) or math.isinf(lo_l):
            return max(0.0, min(lo_l, base_kl)), max(0.0, min(up_l, base_kl))
        lo_g, up_g = self._kl_bounds_grid(a0, a1, b, base_kl)
        # the grid route's float sums: widened by a relative 1e-12 (>> their (m + 2)u rounding)
        return max(0.0, lo_g * (1.0 - 1e-12)), min(up_g * (1.0 + 1e-12) + 1e-300, base_kl)

    def f_divergence_bounds(self, lam0: ArrayLike, lam1: ArrayLike, divergence: str) -> tuple[float, float]:
        """Certified ``(lower, upper)`` of ``χ²(Q#λ0 ‖ Q#λ1)`` or the squared Hellinger distance of the tuple laws.

        By :func:`~distpriv.local.tupling_laplace.divergence_brackets` (``χ² = E[D²/S1]/(k+1)``,
        ``H² = (1/π) ∫_0^1 √(θ(1−θ)) E[D²/(θS0 + (1−θ)S1)] dθ/(k+1)``, inner integrals by ``1/x = ∫ e^{−tx} dt``;
        certified trapezoidal rules, bracket ~1e-12 wide; issue 25), for any ν with full support and any |Y|
        and k. The upper end is also capped by the base channel's divergence (data processing); where the
        quadrature is undefined (ratios beyond float64's range) the cap alone is returned as the upper end.
        """
        name = check_choice(divergence, "divergence", ("chi2", "hellinger"))
        a0, a1, rel = self._divergence_weights(lam0, lam1)
        cap = tupling_laplace.base_caps(a0, a1, rel)[name]  # of the normalised laws, rounded up
        got = tupling_laplace.divergence_brackets(a0, a1, self.mechanism.dummy, self.mechanism.k, (name,),
                                                  rel)[name]
        if math.isnan(got[1]):
            return 0.0, cap
        return max(0.0, min(got[0], cap)), max(0.0, min(got[1], cap))

    def _kl_bounds_grid(
        self, a0: NDArray[np.float64], a1: NDArray[np.float64], b: int, base_kl: float
    ) -> tuple[float, float]:
        """The convolution bounds of ``D_KL`` (module docstring), capped by the base channel's KL."""
        nu = self.mechanism.dummy
        w0, w1 = a0 / nu, a1 / nu
        support = a0 > 0
        if np.any(support & (a1 <= 0)) and self._delta_limit(a0, a1) > 0:
            return math.inf, math.inf
        wts = a0[support]
        while True:
            lu, uu = self._elog_bounds(w0[support], w0, b)
            lv, uv = self._elog_bounds(w1[support], w1, b)
            with np.errstate(invalid="ignore"):
                lower = float(np.dot(wts, lu - uv))
                upper = float(np.dot(wts, uu - lv))
            if math.isnan(upper) or math.isinf(upper):
                upper = math.inf
            # non-uniform ν: refine the bulk grid until the bracket is within 1e-4 relative, or 2^14 bins, or
            # the next grid would cost more than KL_MAX_WORK logarithms (the bracket stays certified)
            if (self.mechanism.uniform or upper - lower <= 1e-4 * max(upper, 1e-12) or b >= KL_MAX_BINS
                    or 4 * self._elog_work > KL_MAX_WORK):
                break
            b *= 4
        return max(0.0, min(lower, base_kl)), max(0.0, min(upper, base_kl))

    def _multiset_counts(self) -> NDArray[np.int64] | None:
        """Every multiset of the k+1 slots as a count vector, or ``None`` beyond :data:`iid_sums.EXACT_LIMIT`."""
        m, n = self.mechanism.n_outputs, self.mechanism.k + 1
        count = math.comb(n + m - 1, m - 1)
        if count > iid_sums.EXACT_LIMIT or count * m > 50 * iid_sums.EXACT_LIMIT:
            return None
        return iid_sums._compositions(n, m)

    def multiset_laws(self, lam0: ArrayLike, lam1: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        """The exact laws of the tuple's multiset under λ0 and λ1, or ``None`` beyond :data:`iid_sums.EXACT_LIMIT`.

        The tuple law is symmetric in its entries and its likelihood ratio depends on the tuple only through
        its multiset (counts c, Σ c = k+1), so every f-divergence of the tuple laws equals that of the multiset
        laws (a sufficient statistic). ``P_λ(c) = (k+1)!/Π c_z! · 1/(k+1) Σ_y c_y A#λ[y] Π_z ν_z^{c_z − [z = y]}``.
        """
        a0, a1 = self._weights(lam0, lam1)
        c = self._multiset_counts()
        if c is None:
            return None
        m, n = self.mechanism.n_outputs, self.mechanism.k + 1
        # the laws of the *normalised* inputs (issue 25 review: the validators accept |Σ − 1| <= 1e-8; the
        # quadrature and the sampler use the normalised laws, and so do these)
        a0, a1 = a0 / math.fsum(a0), a1 / math.fsum(a1)
        nu = self.mechanism.dummy / math.fsum(self.mechanism.dummy)
        log_coef = special.gammaln(n + 1) - special.gammaln(c + 1).sum(axis=1) - math.log(n)
        out = []
        for a in (a0, a1):
            total = np.zeros(c.shape[0])
            for y in range(m):
                has = c[:, y] > 0
                if not np.any(has) or a[y] == 0:
                    continue
                expo = c[has].copy()
                expo[:, y] -= 1
                total[has] += c[has, y] * a[y] * np.prod(np.power(nu[None, :], expo), axis=1)
            out.append(np.exp(log_coef) * total)
        return out[0], out[1]

    def distp_divergence(self, lam0: ArrayLike, lam1: ArrayLike, divergence: str = "kl") -> float:
        """(ε, D)-DistP of the pair (both orders) for ``"max"`` (closed form), KL / reverse KL (certified
        Laplace-transform quadrature, a certified bracket ~1e-12 wide), ``"tv"`` (= δ at ε = 0) and
        ``"chi2"`` / ``"hellinger"`` (exact on the multiset laws of :meth:`multiset_laws`, every term rounded
        up by :func:`~distpriv.local.tupling_laplace.enumerated_upper`; beyond their enumeration the upper end
        of the certified bracket of :meth:`f_divergence_bounds`, ~1e-12 wide, issue 25 — before, the
        data-processing cap ``D_f(A#λ0 ‖ A#λ1)``, which stays the fallback where the quadrature cannot certify).
        All for the normalised laws ``A#λ/Σ``, ``ν/Σν`` (the validators accept sums off 1 by up to 1e-8)."""
        name = check_choice(divergence, "divergence", ("kl", "reverse-kl", "max", "tv", "chi2", "hellinger"))
        if name == "max":
            return self.distp_epsilon(lam0, lam1, 0.0)
        if name in ("kl", "reverse-kl"):
            return max(self.kl_bounds(lam0, lam1)[1], self.kl_bounds(lam1, lam0)[1])
        if name == "tv":
            return self.distp_delta(lam0, lam1, 0.0)
        a0, a1, rel = self._divergence_weights(lam0, lam1)
        keys = ("chi2", "reverse-chi2") if name == "chi2" else ("hellinger",)
        nu, k = self.mechanism.dummy, self.mechanism.k
        caps = tupling_laplace.base_caps(a0, a1, rel)
        counts = self._multiset_counts()
        if counts is not None:  # enumeration of the multisets, every term rounded up (normalised laws)
            got_e = tupling_laplace.enumerated_upper(a0, a1, nu, k, counts, keys, rel)
            return max(min(got_e[key], caps[key]) for key in keys)
        # certified quadrature (tupling_laplace.divergence_brackets): the upper ends, both orders
        got = tupling_laplace.divergence_brackets(a0, a1, nu, k, keys, rel)
        # each order capped by the base channel's divergence (data processing; alone where the quadrature is nan)
        return max(max(0.0, min(math.inf if math.isnan(got[key][1]) else got[key][1], caps[key])) for key in keys)

    # ---------------------------------------------------------- Monte Carlo
    def _log_ratio(self, tuples: NDArray[np.int64], a0: NDArray[np.float64], a1: NDArray[np.float64]) -> NDArray[np.float64]:
        """``ln(Q#λ0[ȳ]/Q#λ1[ȳ])`` per tuple, via ``Σ_i a_b[y_i] Π_{j≠i} ν[y_j]``."""
        nu = self.mechanism.dummy[tuples]
        s0 = np.zeros(tuples.shape[0])
        s1 = np.zeros(tuples.shape[0])
        for i in range(self.mechanism.k + 1):
            others = np.prod(np.delete(nu, i, axis=1), axis=1)
            s0 += a0[tuples[:, i]] * others
            s1 += a1[tuples[:, i]] * others
        with np.errstate(divide="ignore"):
            return np.log(s0) - np.log(s1)

    def _sample_from(self, lam: NDArray[np.float64], n: int, gen: np.random.Generator) -> NDArray[np.int64]:
        xs = gen.choice(self.mechanism.n_inputs, size=n, p=lam)
        return self.mechanism.sample(xs, gen)

    def monte_carlo_delta(
        self, lam0: ArrayLike, lam1: ArrayLike, epsilon: float, *, n_samples: int = 100_000, rng: RngLike = None
    ) -> tuple[float, float]:
        """Seeded Monte Carlo estimate ``(δ̂, standard error)`` of the least δ for (ε, δ)-DistP (any ν).

        ``E_{e^ε}(P‖Q) = E_{ȳ~P}[(1 − e^{ε − L(ȳ)})^+]`` with ``L = ln(P/Q)``, estimated
        in both orders; returns the larger estimate and its standard error.
        """
        eps = check_real(epsilon, "epsilon")
        n = check_int(n_samples, "n_samples", minimum=2)
        gen = as_rng(rng)
        l0 = check_distribution(lam0, self.mechanism.n_inputs, "lam0")
        l1 = check_distribution(lam1, self.mechanism.n_inputs, "lam1")
        a0, a1 = self.mechanism.lift(l0), self.mechanism.lift(l1)
        best = (0.0, 0.0)
        for lam, p, q in ((l0, a0, a1), (l1, a1, a0)):
            t = self._sample_from(lam, n, gen)
            loss = self._log_ratio(t, p, q)
            vals = np.maximum(1.0 - np.exp(np.minimum(eps - loss, 700.0)), 0.0)
            est = (float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(n)))
            if est[0] > best[0]:
                best = est
        return best

    def monte_carlo_epsilon(
        self, lam0: ArrayLike, lam1: ArrayLike, delta: float, *, n_samples: int = 100_000, rng: RngLike = None
    ) -> float:
        """Seeded Monte Carlo estimate of the least ε with (ε, δ)-DistP (any ν, e.g. non-uniform dummies).

        Samples privacy losses in both orders once, then solves ``δ̂(ε) = δ`` by
        root finding on the (monotone) empirical profile.
        """
        d = check_delta(delta, "delta", allow_zero=True)
        n = check_int(n_samples, "n_samples", minimum=2)
        gen = as_rng(rng)
        l0 = check_distribution(lam0, self.mechanism.n_inputs, "lam0")
        l1 = check_distribution(lam1, self.mechanism.n_inputs, "lam1")
        a0, a1 = self.mechanism.lift(l0), self.mechanism.lift(l1)
        eps_best = 0.0
        for lam, p, q in ((l0, a0, a1), (l1, a1, a0)):
            loss = self._log_ratio(self._sample_from(lam, n, gen), p, q)
            if d == 0.0:
                eps_best = max(eps_best, float(loss.max()))
                continue

            def prof(e: float, loss: NDArray[np.float64] = loss) -> float:
                return float(np.maximum(1.0 - np.exp(np.minimum(e - loss, 700.0)), 0.0).mean()) - d

            if prof(0.0) <= 0:
                continue
            # tuples the other distribution never outputs (loss = +inf) count fully at every ε
            if float(np.mean(np.isposinf(loss))) > d:
                eps_best = math.inf
                continue
            finite = loss[np.isfinite(loss)]
            top = float(finite.max()) if finite.size else 0.0
            eps_best = max(eps_best, optimize.brentq(prof, 0.0, max(top, 1e-12), xtol=1e-10))
        return eps_best

    def monte_carlo_divergence(
        self, lam0: ArrayLike, lam1: ArrayLike, divergence: str = "kl", *, n_samples: int = 100_000,
        rng: RngLike = None,
    ) -> tuple[float, float]:
        """Seeded Monte Carlo ``(estimate, standard error)`` of ``D(Q#λ0 ‖ Q#λ1)`` for an f-divergence
        of Table I: ``D_f(P‖Q) = E_{ȳ~Q}[f(P(ȳ)/Q(ȳ))]`` (one order)."""
        name = check_choice(divergence, "divergence", tuple(dv.F_DIVERGENCES))
        n = check_int(n_samples, "n_samples", minimum=2)
        gen = as_rng(rng)
        l0 = check_distribution(lam0, self.mechanism.n_inputs, "lam0")
        l1 = check_distribution(lam1, self.mechanism.n_inputs, "lam1")
        a0, a1 = self.mechanism.lift(l0), self.mechanism.lift(l1)
        t = self._sample_from(l1, n, gen)
        with np.errstate(over="ignore"):
            r = np.exp(self._log_ratio(t, a0, a1))
        f = {
            "kl": lambda x: np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0),
            "reverse-kl": lambda x: -np.log(x),
            "tv": lambda x: 0.5 * np.abs(x - 1.0),
            "chi2": lambda x: (x - 1.0) ** 2,
            "hellinger": lambda x: 0.5 * (np.sqrt(x) - 1.0) ** 2,
        }[name]
        vals = f(r)
        return float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(n))

    # ------------------------------------------------------ Theorems 3 and 7
    def _require_uniform(self, what: str) -> None:
        if not self.mechanism.uniform:
            raise AssumptionError(
                f"dummy: {what} assumes uniform dummies ν (tupling paper Theorem 3); "
                "use epsilon_bounds or monte_carlo_epsilon for this ν"
            )

    def lambda_eta(self, lam: ArrayLike, beta: float) -> float:
        """Least η with ``λ ∈ Λ_{β,η,A}``: the ``A#(λ)``-mass of the outputs above β,

            ``η = Pr_{y ~ A#(λ)}[A#(λ)[y] > β] = Σ_{y : A#(λ)[y] > β} A#(λ)[y]``.

        This is the event the proof of Proposition 13 (tupling paper) charges to η:
        the real output ``y_i`` is drawn from ``A#(λ)``, not uniformly (the paper's
        definition of ``Λ_{β,η,A}`` in Section 6.2 draws y uniformly, which the proof
        does not support).
        """
        b = check_real(beta, "beta")
        if not 0.0 <= b <= 1.0:
            raise InvalidParameterError(f"beta: must be in [0, 1], got {b}")
        a = self.mechanism.lift(lam)
        return min(1.0, math.fsum(a[a > b]))

    def in_lambda(self, lam: ArrayLike, beta: float, eta: float) -> bool:
        """Membership ``λ ∈ Λ_{β,η,A} = {λ : Pr_{y ~ A#(λ)}[A#(λ)[y] <= β] >= 1 − η}`` (see :meth:`lambda_eta`)."""
        e = check_real(eta, "eta")
        if not 0.0 <= e <= 1.0:
            raise InvalidParameterError(f"eta: must be in [0, 1], got {e}")
        return self.lambda_eta(lam, beta) <= e

    def theorem3_params(
        self, alpha: float, beta: float, eta: float, *, hoeffding_range: float | None = None
    ) -> tuple[float, float]:
        """Theorem 3's ``(ε_α, δ_α)``: ``ε_α = ln((k + (α+β)|Y|)/(k − α|Y|))``,
        ``δ_α = 2 exp(−2α²/(k r²)) + η``, for ``0 < α < k/|Y|``.

        ``r`` (``hoeffding_range``, default β as in the paper) bounds every dummy
        term ``A#(λ_b)[y_j]`` of Hoeffding's inequality in Proposition 13's proof, so
        it must be at least ``max_y A#(λ_b)[y]`` for both λ_b; with ``r = β`` that
        forces η = 0. ``r`` must lie in ``[β, 1]``.
        """
        a = check_real(alpha, "alpha")
        b = check_real(beta, "beta")
        e = check_real(eta, "eta")
        m, k = self.mechanism.n_outputs, self.mechanism.k
        if not 0 < a < k / m:
            raise InvalidParameterError(f"alpha: must be in (0, k/|Y|) = (0, {k / m:.6g}), got {a}")
        if not 0 < b <= 1:
            raise InvalidParameterError(f"beta: must be in (0, 1], got {b}")
        if not 0 <= e <= 1:
            raise InvalidParameterError(f"eta: must be in [0, 1], got {e}")
        r = b if hoeffding_range is None else check_real(hoeffding_range, "hoeffding_range")
        if not b <= r <= 1:
            raise InvalidParameterError(f"hoeffding_range: must be in [beta, 1] = [{b:.6g}, 1], got {r}")
        eps = math.log((k + (a + b) * m) / (k - a * m))
        dlt = 2.0 * math.exp(-2.0 * a * a / (k * r * r)) + e
        return eps, dlt

    def _beta_candidates(
        self, lams: list[NDArray[np.float64]]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Candidate β, the least η for each (max over both λ_b) and the Hoeffding range ``max(β, max A#(λ_b))``.

        η(β) and the range are step / nondecreasing functions of β while ε_α increases
        with β, so the best β lies among the distinct positive values of ``A#(λ_b)``.
        """
        lifts = [self.mechanism.lift(lam) for lam in lams]
        vals = np.unique(np.concatenate(lifts))
        betas = vals[vals > 0]
        etas = np.zeros(betas.size)
        for a in lifts:
            srt = np.sort(a)
            tails = np.append(np.cumsum(srt[::-1])[::-1], 0.0)  # tails[i] = Σ_{j >= i} srt[j]
            etas = np.maximum(etas, tails[np.searchsorted(srt, betas, side="right")])
        top = max(float(a.max()) for a in lifts)
        return betas, np.minimum(etas, 1.0), np.maximum(betas, top)

    def _given_beta(
        self, lams: list[NDArray[np.float64]], beta: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        b = check_real(beta, "beta")
        if not 0.0 < b <= 1.0:
            raise InvalidParameterError(f"beta: must be in (0, 1], got {b}")
        top = max(float(self.mechanism.lift(lam).max()) for lam in lams)
        return np.array([b]), np.array([max(self.lambda_eta(lam, b) for lam in lams)]), np.array([max(b, top)])

    def theorem3(
        self, lam0: ArrayLike, lam1: ArrayLike, delta: float, *, beta: float | None = None
    ) -> Theorem3Bound:
        """The smallest Theorem 3 ε_α with δ_α <= δ for the pair, α optimised (tupling paper Prop. 13).

        Proof of Proposition 13, with ``a_b = A#(λ_b)``, ``m = |Y|``: the likelihood
        ratio of a tuple is ``Σ_j a_0[y_j] / Σ_j a_1[y_j]`` (equation (6)); it is below
        ``e^{ε_α}`` unless (i) the real output has ``a_0[y_i] > β`` (probability η,
        the ``A#(λ_0)``-mass of :meth:`lambda_eta`), or (ii) the k uniform dummies
        give ``Σ a_0 >= k/m + α`` or ``Σ a_1 <= k/m − α`` (Hoeffding, each
        ``exp(−2α²/(k r²))``). Hoeffding needs every dummy term in ``[0, r]``, so
        ``r = max(β, max_y a_b[y])``: the paper's ``r = β`` holds exactly when η = 0.
        Hence ``P[L >= ε_α] <= δ_α`` in both orders ((ε_α, δ_α)-PDistP, which implies
        (ε_α, δ_α)-DistP by Proposition 7).

        ε_α increases with α and δ_α decreases, so the best α solves δ_α = δ:
        ``α = r √(k ln(2/(δ − η)) / 2)`` (needs ``η < δ`` and ``α < k/|Y|``).
        ``β`` is optimised over the values of ``A#(λ_b)`` unless given. Returns
        ``epsilon = inf`` if no admissible α exists. Requires uniform dummies.
        """
        self._require_uniform("theorem3")
        d = check_delta(delta, "delta")
        lams = [check_distribution(lam0, self.mechanism.n_inputs, "lam0"), check_distribution(lam1, self.mechanism.n_inputs, "lam1")]
        betas, etas, ranges = self._beta_candidates(lams) if beta is None else self._given_beta(lams, beta)
        m, k = self.mechanism.n_outputs, self.mechanism.k
        best = Theorem3Bound(math.inf, d, math.nan, math.nan, math.nan, math.nan)
        for b, eta_b, r_b in zip(betas, etas, ranges, strict=True):
            eta, r = float(eta_b), float(r_b)
            if eta >= d:
                continue
            alpha = r * math.sqrt(k * math.log(2.0 / (d - eta)) / 2.0)
            for _ in range(4):  # round-off: make sure δ_α <= δ
                if alpha >= k / m:
                    break
                eps, dl = self.theorem3_params(alpha, float(b), eta, hoeffding_range=r)
                if dl <= d:
                    if eps < best.epsilon:
                        best = Theorem3Bound(eps, dl, alpha, float(b), eta, r)
                    break
                alpha *= 1.0 + 4.0 * _EPS_MACHINE
        return best

    def theorem7(
        self, lam0: ArrayLike, lam1: ArrayLike, *, epsilon_a: float | None = None, beta: float | None = None
    ) -> float:
        """Theorem 7 KL bound ``min_α ε_α + ε_A min(δ_α, 1)`` for the pair (tupling paper Prop. 9 and 13).

        ``(ε_α, δ_α)`` are those of :meth:`theorem3` (η as ``A#(λ_b)``-mass, Hoeffding
        range ``max(β, max_y A#(λ_b)[y])``). ``ε_A`` defaults to the exact ``D_∞``
        DistP of the base mechanism for this pair, which is what Proposition 12's
        proof uses (for a DP base it is at most the DP ε_A); a given ``epsilon_a``
        below that value means the pair is not in Φ# and is refused
        (:class:`AssumptionError`). ``β`` is optimised as in :meth:`theorem3`.
        Requires uniform dummies.
        """
        self._require_uniform("theorem7")
        lams = [check_distribution(lam0, self.mechanism.n_inputs, "lam0"), check_distribution(lam1, self.mechanism.n_inputs, "lam1")]
        a0, a1 = self.mechanism.lift(lams[0]), self.mechanism.lift(lams[1])
        exact_a = dv.symmetric_approx_max_divergence(a0, a1, 0.0)
        if epsilon_a is None:
            e_a = exact_a
        else:
            e_a = check_real(epsilon_a, "epsilon_a")
            if e_a < exact_a * (1.0 - 1e-12):
                raise AssumptionError(
                    f"epsilon_a: {e_a:g} is below D∞(A#λ0, A#λ1) = {exact_a:.6g} for this pair, so the pair is "
                    "not in Φ# of an ε_A-DP base (Theorem 7's premise)"
                )
        if math.isinf(e_a):
            return math.inf
        betas, etas, ranges = self._beta_candidates(lams) if beta is None else self._given_beta(lams, beta)
        if betas.size > 64:  # any β gives a valid bound; optimise over 64 quantile-spaced candidates
            pick = np.unique(np.round(np.linspace(0, betas.size - 1, 64)).astype(int))
            betas, etas, ranges = betas[pick], etas[pick], ranges[pick]
        m, k = self.mechanism.n_outputs, self.mechanism.k
        hi = k / m
        best = math.inf
        for b_v, eta_v, r_v in zip(betas, etas, ranges, strict=True):
            b, eta, r = float(b_v), float(eta_v), float(r_v)
            if eta >= 1.0:
                continue

            def obj(a: float, b: float = b, eta: float = eta, r: float = r) -> float:
                eps, dl = self.theorem3_params(a, b, eta, hoeffding_range=r)
                return eps + e_a * min(dl, 1.0)

            res = optimize.minimize_scalar(obj, bounds=(hi * 1e-9, hi * (1 - 1e-9)), method="bounded",
                                           options={"xatol": hi * 1e-10})
            best = min(best, obj(float(res.x)), obj(hi * 1e-9))
        return best


    # ---------------------------------------------------------- guarantees
    def privacy_profile(self, lam0: ArrayLike, lam1: ArrayLike, *,
                        labels: tuple[Any, Any] = ("lam0", "lam1")) -> PrivacyProfile:
        """The exact privacy map of the pair (:class:`~distpriv.privacy_profile.PrivacyProfile`).

        δ ↦ the certified upper end of the least ε (:meth:`epsilon_bounds`, exact convolution accounting;
        Kawamoto & Murakami tupling paper Algorithm 1 / Definition 8), with Theorem 3's bound as a note
        for uniform dummies.
        """
        def at_delta(delta: float) -> Claim:
            res = self.epsilon_bounds(lam0, lam1, delta)
            th3 = self.theorem3(lam0, lam1, delta) if delta > 0 and self.mechanism.uniform else None
            notes = [f"certified bracket [{res.lower:.6g}, {res.upper:.6g}] at grid size {res.bins}"]
            if th3 is not None:
                notes.append(f"Theorem 3 bound: eps={th3.epsilon:.6g} (alpha={th3.alpha:.4g}, beta={th3.beta:.4g})")
            return Claim(res.upper, res.delta, tuple(notes))

        def at_divergence(name: str) -> Claim:
            if name in ("kl", "reverse-kl"):
                how = "exact within a certified bracket ~1e-12 wide (Laplace-transform quadrature, tupling_laplace); the upper end"
            elif name == "max" or self.multiset_laws(lam0, lam1) is not None:
                how = ("exact (closed form / enumeration of the tuple's multiset laws of the normalised inputs, "
                       "every term rounded up)")
            elif name in ("chi2", "hellinger"):
                how = ("exact within a certified bracket ~1e-12 wide (Laplace-transform quadrature, "
                       "tupling_laplace.divergence_brackets); the upper end")
            elif name == "tv":
                how = "certified upper bound: δ at ε = 0 (convolution / rare-bulk bounds, relative gap <= 1e-6 or the finest grid)"
            else:  # pragma: no cover - every divergence name is routed above
                how = "certified upper bound"
            return Claim(self.distp_divergence(lam0, lam1, name), 0.0, (f"{name}: {how}",))

        return PrivacyProfile(
            mechanism=self.mechanism.name,
            framework="local-distribution-privacy",
            pairs=(labels,),
            at_delta=at_delta,
            at_divergence=at_divergence,
            calibration=Calibration.EXACT,
            assumptions=(Assumption("inputs follow exactly the given λ0, λ1", AssumptionCode.INPUT_LAWS),
                         Assumption("dummies drawn i.i.d. from ν", AssumptionCode.DUMMIES)),
            theorem="Kawamoto & Murakami (tupling) Algorithm 1 / Definition 8; exact convolution accounting",
        )

    def guarantee(
        self, lam0: ArrayLike, lam1: ArrayLike, delta: float, *, labels: tuple[Any, Any] = ("lam0", "lam1")
    ) -> Guarantee:
        """Exact (ε, δ)-DistP of the pair as a :class:`Guarantee`: ``privacy_profile(lam0, lam1).guarantee(delta)``."""
        return self.privacy_profile(lam0, lam1, labels=labels).guarantee(delta)
