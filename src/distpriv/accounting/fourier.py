"""Certified δ(ε) of a Gaussian pair with unequal covariances by Fourier inversion of the loss law.

After the reduction of :mod:`.gaussian`, the privacy loss under P is a generalised
chi-square: L = Σ_i ℓ_i with ℓ_i = a_i u_i² + b_i u_i + c_i, u_i iid N(0, 1). Its
moment generating function is known in closed form for complex z with
Re(1 − 2a_i z) > 0 (principal branches):

    M(z) = E[e^{zL}] = Π_i (1 − 2a_i z)^{−1/2} exp(z c_i + z² b_i² / (2(1 − 2a_i z))).

For c > 0 in that strip, f(x) = (1 − e^{ε−x})_+ has the two-sided Laplace transform
F(z) = ∫ f(x) e^{−zx} dx = e^{−zε} / (z(z + 1)) on Re z = c, so (Fourier inversion on
the line z = c + iω)

    δ(ε) = E[f(L)] = (1/π) ∫_0^∞ Re g(ω) dω,   g(ω) = F(c + iω) M(c + iω).

The trapezoidal rule with step Δ (period P = 2π/Δ) is, by the Poisson summation
formula applied to ψ(y) = e^{−cy} δ(ε − y) (whose Fourier transform is g),

    T = (Δ/π) [½ Re g(0) + Σ_{k>=1} Re g(kΔ)] = Σ_j e^{−cjP} δ(ε − jP) = δ(ε) + A,

with every aliasing term non-negative: T >= δ, and A <= 1/(e^{cP} − 1) +
M(c′) e^{−c′ε} / (e^{(c′−c)P} − 1) for any c′ ∈ (c, strip) (δ <= 1 and the Chernoff
bound δ(x) <= P(L > x) <= M(c′) e^{−c′x}). The sum is truncated at K terms; its
tail is bounded by ∫_{KΔ}^∞ B(ω) dω for a non-increasing majorant B of |g| built
from the exact modulus of each factor (Re of the exponent is a Möbius function of
ω², bounded by its larger end). Floating-point error of each term is bounded from
the magnitudes of the exponent's parts (a few ulp each, safety factor 4) and of the
summation by (K + 4)·u·Σ|g_k|. Hence the certified bracket

    T_K − tail − A − fp <= δ(ε) <= T_K + tail + fp.

c is the minimiser of ln|g(0)| = ln M(c) − cε − ln(c(c + 1)) (a saddle point: the
terms then have the size of δ, so the error bounds are relative to δ), capped inside
the strip. This is the inversion approach of Imhof (1961) and Davies (1973, 1980) for
quadratic forms in normal variables, applied to the hockey-stick functional (Koskela
et al. 2020 Sec. 2; Balle & Wang 2018 Thm 5 for δ = E_P[(1 − e^{ε−L})_+]).

:func:`fourier_bracket` returns ``None`` when the number of terms needed exceeds
``max_terms`` (very unequal variances make the strip narrow): the caller then uses
the discretised privacy-loss distribution of :mod:`.pld`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

U = float(np.finfo(float).eps) / 2.0
#: Most trapezoid terms one bracket may use before the caller falls back to the FFT grid.
MAX_TERMS = 200_000
#: Statistics for benchmarks (number of brackets and of terms summed).
STATS = {"brackets": 0, "terms": 0}


@dataclass(frozen=True)
class FourierBracket:
    """[lower, upper] on δ(ε) and how it was obtained (``c``: abscissa, ``step``: Δ, ``terms``: K)."""

    lower: float
    upper: float
    c: float
    step: float
    terms: int


def _strip(a: Sequence[float]) -> float:
    """sup of the real z with 1 − 2a_i z > 0 for every i (∞ when no a_i > 0)."""
    pos = [x for x in a if x > 0]
    return 1.0 / (2.0 * max(pos)) if pos else math.inf


def _cumulant(z: float, a: Sequence[float], b2: Sequence[float], c: Sequence[float]) -> tuple[float, float, float]:
    """(ln M(z), d/dz ln M(z), d²/dz² ln M(z)) at real z inside the strip.

    Per coordinate, with w = 1 − 2az: −½ ln w + zc + z²b²/(2w); derivative a/w + c + b² z(1 − az)/w²;
    second derivative 2a²/w² + b²/w³.
    """
    k = dk = d2k = 0.0
    for ai, bi, ci in zip(a, b2, c, strict=True):
        w = 1.0 - 2.0 * ai * z
        k += -0.5 * math.log(w) + z * ci + z * z * bi / (2.0 * w)
        dk += ai / w + ci + bi * z * (1.0 - ai * z) / (w * w)
        d2k += 2.0 * ai * ai / (w * w) + bi / (w * w * w)
    return k, dk, d2k


def _saddle(a: Sequence[float], b2: Sequence[float], c: Sequence[float], epsilon: float, zmax: float) -> float:
    """Approximate minimiser over (0, zmax) of the strictly convex φ(z) = ln M(z) − zε − ln z − ln(z + 1).

    Newton steps on φ′ safeguarded by a bracket [lo, hi] of its root (bisection when a step leaves it);
    any z in the strip gives a valid bracket, the saddle point only makes it cheap.
    """
    lo, hi = 0.0, min(zmax, 1e6)  # all a_i <= 0: φ may decrease for ever (δ far in the tail); any z is valid
    z = min(1.0, 0.5 * hi)
    for _ in range(60):
        _, dk, d2k = _cumulant(z, a, b2, c)
        d1 = dk - epsilon - 1.0 / z - 1.0 / (z + 1.0)
        if d1 < 0:
            lo = z
        else:
            hi = z
        d2 = d2k + 1.0 / (z * z) + 1.0 / ((z + 1.0) * (z + 1.0))
        nz = z - d1 / d2
        if not (lo < nz < hi):
            nz = 0.5 * (lo + hi)
        if abs(nz - z) <= 1e-4 * z:
            return nz
        z = nz
    return z


def _log_expm1(x: float) -> float:
    """ln(e^x − 1) for x > 0 without overflow."""
    return x + math.log1p(-math.exp(-x)) if x > 30.0 else math.log(math.expm1(x))


def _log_modulus_bound(omega: float, c: float, a: Sequence[float], b2: Sequence[float], cc: Sequence[float],
                       epsilon: float) -> tuple[float, list[float]]:
    """For ω >= ``omega``: (ln C, [|a_i|-weights]) with |g(ω′)| <= C·ω′^{−2}·Π_{i∈S}(2|a_i|ω′)^{−1/2}.

    Each factor of |g| is bounded by its value at ``omega`` (non-increasing parts) or by the
    larger end of a monotone function of ω² (the Gaussian exponent); coordinates whose
    quadratic factor is already in its power-law regime at ``omega`` (2|a_i|ω >= 1 − 2a_i c) keep
    the decay (2|a_i|ω)^{−1/2}, which is then integrated exactly.
    """
    logc = -c * epsilon
    decay: list[float] = []
    for ai, bi, ci in zip(a, b2, cc, strict=True):
        p = 1.0 - 2.0 * ai * c
        q = 2.0 * abs(ai)
        if q * omega >= p and q > 0:
            decay.append(q)  # (p² + q²ω²)^{-1/4} <= (qω)^{-1/2}
        else:
            logc += -0.25 * math.log(p * p + q * q * omega * omega)
        logc += c * ci
        if bi > 0:
            # Re(z²/(1 − 2az)) = (p c² − ω²(1 + 2ac)) / (p² + 4a²ω²): monotone in ω², bounded by its larger end
            num0, num1 = p * c * c, -(1.0 + 2.0 * ai * c)
            at = (num0 + num1 * omega * omega) / (p * p + q * q * omega * omega)
            lim = num1 / (q * q) if q > 0 else -math.inf
            logc += 0.5 * bi * max(at, lim)
    # |z(z + 1)| >= ω²
    return logc, decay


def _tail_bound(omega: float, c: float, a: Sequence[float], b2: Sequence[float], cc: Sequence[float],
                epsilon: float) -> float:
    """Upper bound on (1/π) ∫_ω^∞ |g| (which bounds (Δ/π) Σ_{kΔ > ω} |g(kΔ)| too: |g|'s majorant is non-increasing)."""
    logc, decay = _log_modulus_bound(omega, c, a, b2, cc, epsilon)
    gamma = 2.0 + 0.5 * len(decay)
    # ∫_ω^∞ C t^{−2} Π (q_i t)^{−1/2} dt = C Π q_i^{−1/2} ω^{1−γ} / (γ − 1)
    logv = logc - 0.5 * sum(math.log(q) for q in decay) + (1.0 - gamma) * math.log(omega) - math.log(gamma - 1.0)
    return math.exp(min(logv, 700.0)) / math.pi


def fourier_bracket(quads: Sequence[tuple[float, float, float]], epsilon: float, *, rtol: float = 1e-3,
                    atol: float = 1e-14, max_terms: int | None = None) -> FourierBracket | None:
    """Certified [lower, upper] on δ(ε) = E[(1 − e^{ε−L})_+] for L = Σ a_i u_i² + b_i u_i + c_i (see module docstring).

    The bracket is narrower than ``rtol·upper + atol`` (it is usually far narrower); ``None``
    if that needs more than ``max_terms`` (default :data:`MAX_TERMS`) trapezoid terms.
    """
    limit = MAX_TERMS if max_terms is None else max_terms
    a = [float(q[0]) for q in quads]
    b2 = [float(q[1]) ** 2 for q in quads]
    cc = [float(q[2]) for q in quads]
    zmax = _strip(a)
    c = _saddle(a, b2, cc, epsilon, zmax)
    if math.isfinite(zmax):
        c = min(c, 0.75 * zmax)
        c2 = c + 0.5 * (zmax - c)
    else:
        c2 = 2.0 * c + 1.0
    if not (c > 0 and math.isfinite(c)):
        return None
    k0 = _cumulant(c, a, b2, cc)[0]
    log_scale = k0 - c * epsilon - math.log(c) - math.log1p(c)  # ln |g(0)|: a Chernoff-type scale of δ
    k2 = _cumulant(c2, a, b2, cc)[0]
    # first pass: an absolute error a fraction of rtol times a tenth of the Chernoff-type scale (δ is usually
    # within a small factor of it); if δ is much smaller, later passes aim at the width δ's lower end needs
    goal = 0.1 * (rtol * 0.1 * math.exp(max(log_scale, -700.0)) + atol)
    for _ in range(4):
        res = _bracket_at(a, b2, cc, epsilon, c, c2, k2, goal, limit)
        if res is None:
            return None
        if res.upper - res.lower <= rtol * res.upper + atol:
            return res
        goal = min(0.01 * goal, 0.1 * (rtol * max(res.lower, 0.0) + atol))
    return None


def _bracket_at(a: list[float], b2: list[float], cc: list[float], epsilon: float, c: float, c2: float, k2: float,
                goal: float, max_terms: int) -> FourierBracket | None:
    log_goal = math.log(goal)
    # aliasing: 1/(e^{cP} − 1) <= goal/4 and M(c2) e^{−c2 ε} / (e^{(c2−c)P} − 1) <= goal/4
    need1 = (math.log(4.0) - log_goal) / c
    need2 = (k2 - c2 * epsilon + math.log(4.0) - log_goal) / (c2 - c)
    period = max(need1, need2, 1e-300) * 1.05 + 1.0 / c
    alias = math.exp(-_log_expm1(c * period)) + math.exp(min(k2 - c2 * epsilon - _log_expm1((c2 - c) * period), 700.0))
    step = 2.0 * math.pi / period
    # truncation: smallest Ω (doubling, then bisection) with tail(Ω) <= goal/4
    omega = step
    while _tail_bound(omega, c, a, b2, cc, epsilon) > goal / 4.0:
        omega *= 2.0
        if omega / step > max_terms:
            return None
    lo_w, hi_w = omega / 2.0, omega
    for _ in range(6):
        mid = 0.5 * (lo_w + hi_w)
        if mid > step and _tail_bound(mid, c, a, b2, cc, epsilon) <= goal / 4.0:
            hi_w = mid
        else:
            lo_w = mid
    terms = int(math.ceil(hi_w / step))
    if terms > max_terms:
        return None
    tail = _tail_bound(terms * step, c, a, b2, cc, epsilon)
    w = np.arange(terms + 1, dtype=float) * step
    z = c + 1j * w
    expo = np.zeros(terms + 1, dtype=complex)
    mag = np.zeros(terms + 1)  # Σ |parts| of the exponent: its floating-point error is a few ulp of this
    for ai, bi, ci in zip(a, b2, cc, strict=True):
        wv = 1.0 - 2.0 * ai * z
        t1 = -0.5 * np.log(wv)
        t2 = z * ci
        t3 = (z * z) * (bi / 2.0) / wv
        expo += t1 + t2 + t3
        mag += np.abs(t1) + np.abs(t2) + np.abs(t3)
    t4 = -z * epsilon - np.log(z) - np.log1p(z)
    expo += t4
    mag += np.abs(z * epsilon) + np.abs(np.log(z)) + np.abs(np.log1p(z))
    shift = float(expo[0].real)
    with np.errstate(under="ignore"):
        g = np.exp(expo - shift)
    absg = np.abs(g)
    eta = 4.0 * (8.0 * U * (mag + abs(shift)) + 8.0 * U)
    weights = np.ones(terms + 1)
    weights[0] = 0.5
    s = float(np.sum(weights * g.real))
    fp_rel = float(np.sum(weights * absg * (np.expm1(eta) + (terms + 4) * U)))
    scale = step / math.pi
    if shift > 700.0:
        return None
    factor = math.exp(shift) * scale
    total = s * factor
    fp = fp_rel * factor * (1.0 + 1e-10) + 4.0 * U * abs(total)
    if not all(math.isfinite(v) for v in (total, fp, tail, alias)):
        return None  # overflow somewhere: let the caller use the grid
    upper = total + tail + fp
    lower = total - tail - alias - fp
    STATS["brackets"] += 1
    STATS["terms"] += terms + 1
    upper = min(1.0, max(upper, 0.0))
    if upper < 1e-300:
        upper = 1e-300  # below the normal range: keep a positive (valid) upper end
    return FourierBracket(max(0.0, min(lower, upper)), upper, c, step, terms + 1)


