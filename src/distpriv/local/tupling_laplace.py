"""KL divergence of the tupling mechanism's output laws by the Laplace transform (issue 25).

The tuple law of ``Q^tp_{k,ν,A}`` (Kawamoto & Murakami, the tupling paper, Section 6, proof of
Proposition 12) is ``Q#(λ_b)[ȳ] = Π_j ν[y_j] · S_b(ȳ)/(k+1)`` with ``S_b = Σ_{i=1}^{k+1} w_b(y_i)`` and
``w_b = A#(λ_b)/ν``. Under ``Q#(λ_0)`` one slot is drawn from ``a_0 = A#(λ_0)`` and the other k from ν, so

    D_KL(Q#λ0 ‖ Q#λ1) = Σ_y a_0[y] (E ln(w_0(y) + W_0) − E ln(w_1(y) + W_1)),   W_b = Σ_{i=1}^k w_b(y_i), y_i ~ ν.

Frullani's integral ``ln x = ∫_0^∞ (e^{−t} − e^{−tx}) dt / t`` (x > 0) and the independence of the k dummies
turn each expectation into a one-dimensional integral of closed forms, with no sum over the |Y|^(k+1)
tuples and no grid of the values ``w``:

    D_KL = ∫_0^∞ g(t) dt/t,   g(t) = ψ(t) φ_1(t)^k − χ(t) φ_0(t)^k,

``φ_b(t) = Σ_y ν[y] e^{−t w_b(y)}`` (the Laplace transform of one dummy's term), ``ψ(t) = Σ_y a_0[y] e^{−t w_1(y)}``
and ``χ(t) = Σ_y a_0[y] e^{−t w_0(y)}``. With ``t = e^s`` the integrand ``f(s) = g(e^s)`` is entire and
decays at both ends, and the trapezoidal rule with step h is certified by Trefethen & Weideman's bound
(SIAM Review 56, 2014, Theorem 5.1): for f analytic in the strip ``|Im s| < d`` with
``∫ |f(σ + iτ)| dσ <= M`` for every ``|τ| < d``, ``|h Σ_j f(s_0 + jh) − ∫ f| <= 2M / (e^{2πd/h} − 1)``.
Here ``d = π/3``: for ``Re t >= 0`` every ``|e^{−t w}| <= 1``, so ``|f| <= 2``; ``|g(t)| <= C |t|`` with
``C = Σ a_0 (w_0 + w_1) + 2k`` (``Σ_y ν w_b = 1`` bounds the derivatives of ``φ_b``); and
``|f| <= 2 e^{−m Re t}``, ``m`` the least ``w_b(y)`` on the support of ``a_0``, ``Re t >= e^σ cos d``.
Integrating the three bounds gives ``M <= 2 + 2 max(0, ln(2 / (C m cos d))) + 2 E_1(1)``.
The infinite sum is cut where ``C e^s`` and ``2 e^{−m e^s}`` make the tails below 1e−17, each term is
evaluated with a forward error bound (sums of same-sign terms, ``log1p`` / ``logsumexp``, ``expm1`` of the
difference of the two logarithms so that nothing cancels near t = 0), and every error term is added to
the upper end and subtracted from the lower end: the bracket is certified up to the accuracy of the
elementary functions (a few ulp), and is typically 1e−12 wide. The inputs are normalised first (``a_b/Σa_b``,
``ν/Σν``): the formula holds for laws of mass exactly 1, and at k >= 1e6 a mass off by a few ulp moved the
value by ~k ulp (below the exact value of the normalised laws).

The second half of the module (:func:`divergence_brackets`) gives χ², squared Hellinger and KL (both orders)
as integrals over θ ∈ [0, 1] of ``J(θ) = E[D²/(θ S0 + (1−θ) S1)]/(k+1)``, ``D = S0 − S1``, each ``J`` one
Laplace integral ``∫_0^∞ (γ φ^k + k δ² φ^{k−1}) dt`` of closed forms: every integrand is non-negative, so the
brackets are ~1e−12 wide *relatively* at any k (the KL formula above loses ~k ulp to the difference
``ψφ_1^k − χφ_0^k``, ~1e−7 relative at k = 1e6). Needs ν with full support.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy import special

Array = NDArray[np.float64]

#: Half-width of the strip of analyticity used by the trapezoidal error bound.
STRIP = math.pi / 3
#: Target of each truncation / discretisation error term.
TARGET = 1e-17
#: Rounding unit of float64.
_U = 2.0**-53
#: Safety factor on the forward error bound of each evaluation (ulp accuracy of exp/log/expm1/log1p).
_FP_SAFETY = 8.0
#: Evaluations per chunk of the (points × |Y|) matrices.
_CHUNK = 1 << 20


def _log_transform(p: Array, w: Array, t: Array) -> tuple[Array, Array, Array]:
    """``L = ln Σ_y p_y e^{−t w_y}`` for each t (Σ p = 1), with ``x = e^L − 1`` and a forward error bound on L.

    ``x = Σ p expm1(−t w)`` is a sum of non-positive terms (relative error <= (n + 2)u); where ``x > −1/2``
    ``L = log1p(x)`` (absolute error <= 2(n + 3)u|x|), else ``L`` is a ``logsumexp`` (absolute error
    <= (n + 4)u(1 + |L|)). Both are covered by ``err = 2(n + 4)u(2|x| + |L|)``.
    """
    n = p.size
    tw = -np.outer(t, w)
    x = np.expm1(tw) @ p
    with np.errstate(divide="ignore"):
        logp = np.log(p)
    near = x > -0.5
    lval = np.empty_like(x)
    lval[near] = np.log1p(x[near])
    if np.any(~near):
        lval[~near] = special.logsumexp(tw[~near] + logp[None, :], axis=1)
    err = 2.0 * (n + 4) * _U * (2.0 * np.abs(x) + np.abs(lval))
    return lval, x, err


def _integrand(a0: Array, w0: Array, w1: Array, nu: Array, k: int, t: Array) -> tuple[Array, Array]:
    """``g(t) = ψ φ_1^k − χ φ_0^k`` at each t and a forward error bound (module docstring)."""
    supp = a0 > 0
    pa, w1s, w0s = a0[supp] / a0[supp].sum(), w1[supp], w0[supp]
    vals = np.empty(t.size)
    errs = np.empty(t.size)
    step = max(1, _CHUNK // max(nu.size, 1))
    for i in range(0, t.size, step):
        tc = t[i:i + step]
        l_psi, _, e_psi = _log_transform(pa, w1s, tc)
        l_chi, _, e_chi = _log_transform(pa, w0s, tc)
        l_phi1, _, e_phi1 = _log_transform(nu, w1, tc)
        l_phi0, _, e_phi0 = _log_transform(nu, w0, tc)
        a = l_psi + k * l_phi1
        b = l_chi + k * l_phi0
        e_a = e_psi + k * e_phi1 + 2.0 * _U * (np.abs(l_psi) + k * np.abs(l_phi1))
        e_b = e_chi + k * e_phi0 + 2.0 * _U * (np.abs(l_chi) + k * np.abs(l_phi0))
        diff = a - b
        e_d = e_a + e_b + _U * np.abs(diff)
        # g = e^A − e^B = ± e^{max(A,B)} (1 − e^{−|A−B|}): perturbing |A − B| by e_D moves the bracket by
        # <= e_D e^{e_D}, the larger exponent by e_X moves e^X by <= e^X (e^{e_X} − 1); plus the rounding of
        # exp, expm1 and the product (a few u)
        top = np.maximum(a, b)
        e_top = np.where(a >= b, e_a, e_b)
        r = -np.expm1(-np.abs(diff))
        et = np.exp(top)
        g = np.where(a >= b, 1.0, -1.0) * et * r
        with np.errstate(over="ignore", invalid="ignore"):  # an infinite / nan bound makes the bracket (0, inf)
            err = et * (e_d * np.exp(e_d) + r * (np.expm1(e_top) + 6.0 * _U))
        err = np.where(np.isnan(err), np.inf, err)
        vals[i:i + step] = g
        errs[i:i + step] = _FP_SAFETY * err + 1e-300
    return vals, errs


def kl_bracket(a0: Array, a1: Array, nu: Array, k: int) -> tuple[float, float]:
    """Certified ``(lower, upper)`` of ``D_KL(Q#λ0 ‖ Q#λ1)`` for the (k, ν, A)-tupling mechanism.

    ``a_b = A#(λ_b)``; ν must have full support. Infinite when ``a_0`` charges an output ``a_1`` misses
    (then ``Q#λ1`` never yields the tuples of k dummies on ``{a_1 = 0}`` plus that output). ``(nan, nan)``
    when the ratios ``a_b/ν`` span more than float64's exponent range (the caller then uses another bound).
    """
    # normalise first (issue 25): the formulas hold for laws of total mass 1 exactly, and at large k a mass
    # off by a few ulp moved the value by ~k·ulp — below the exact KL of the normalised laws at k >= 1e6.
    # The normalised vectors are within a few ulp of the exact ones per entry; that relative error of each
    # term of x = Σ p expm1(−t w) is inside the per-node bound of _log_transform (times _FP_SAFETY).
    a0 = np.asarray(a0, dtype=float)
    a1 = np.asarray(a1, dtype=float)
    nu = np.asarray(nu, dtype=float)
    supp = a0 > 0
    if np.any(supp & (a1 <= 0)):
        return math.inf, math.inf
    a0, a1, nu = a0 / math.fsum(a0), a1 / math.fsum(a1), nu / math.fsum(nu)
    w0, w1 = a0 / nu, a1 / nu
    big_c = (float(np.dot(a0, w0) + np.dot(a0, w1)) + 2.0 * k) * (1.0 + 1e-12)
    m = float(min(w0[supp].min(), w1[supp].min())) * (1.0 - 1e-12)
    if not m > 1e-250 or not math.isfinite(big_c):  # range beyond float64's exponents: the caller falls back
        return math.nan, math.nan
    cosd = math.cos(STRIP)
    # M: ∫ min(C e^σ, 2, 2 e^{−m cos d e^σ}) dσ <= 2 + 2 (σ2 − σ1)^+ + 2 E_1(1)
    s1, s2 = math.log(2.0 / big_c), math.log(1.0 / (m * cosd))
    big_m = 2.0 + 2.0 * max(0.0, s2 - s1) + 2.0 * float(special.exp1(1.0))
    h = 2.0 * math.pi * STRIP / math.log1p(2.0 * big_m / TARGET)
    s_lo = math.log(TARGET * (1.0 - math.exp(-h)) / (h * big_c))
    s_hi = math.log(60.0 / m)
    count = int(math.ceil((s_hi - s_lo) / h)) + 1
    s = s_lo + h * np.arange(count)
    g, err = _integrand(a0, w0, w1, nu, k, np.exp(s))
    total = h * math.fsum(g)
    quad = 2.0 * big_m / math.expm1(2.0 * math.pi * STRIP / h)
    # tails of the infinite trapezoidal sum: |f| <= C e^s below s_lo, <= 2 e^{−m e^s} above the last node
    low_tail = h * big_c * math.exp(s_lo) / math.expm1(h)
    x_top = m * math.exp(float(s[-1]) + h)
    high_tail = h * 2.0 * math.exp(-x_top) / (-math.expm1(-x_top * math.expm1(h)))
    fp = h * math.fsum(err) + count * 4.0 * _U * abs(total)
    slack = quad + low_tail + high_tail + fp
    return max(0.0, total - slack), total + slack


# --------------------------------------------------------------------------------------------------------
# χ², Hellinger and KL through one family of inner integrals (issue 25)
# --------------------------------------------------------------------------------------------------------
#: Strip half-widths of the inner (t) and outer (θ) trapezoidal rules.
INNER_STRIP = 1.5
OUTER_STRIP = 2.9
#: Relative targets of the quadrature and truncation errors.
REL_TARGET = 1e-15
#: Safety factor on the first-order forward error bounds of the node values.
_SAFETY = 4.0
#: Most outer (θ) nodes on each side of θ = ½; the tails beyond are bounded, not summed.
_MAX_NODES = 4000


def _normalised(a0: Array, a1: Array, nu: Array, input_rel: float = 0.0) -> tuple[Array, Array, Array, Array]:
    """``(ŵ0, ŵ1, ν̂, e_d)``: the ratios ``â_b/ν̂`` of the *normalised* inputs (``â = a/Σa``, ``ν̂ = ν/Σν``,
    sums by ``math.fsum``), each within relative ``6u`` of its exact value, and an absolute bound ``e_d`` on
    the error of ``d = ŵ0 − ŵ1`` computed from them. Every formula below is exact for the normalised laws;
    the rounding of the inputs' normalisation enters the error bounds only. ``input_rel``: a relative error of
    each input entry itself (e.g. the rounding of a mixture ``λA``), added to ``e_d`` as ``input_rel (ŵ0 + ŵ1)``."""
    nu_h = nu / math.fsum(nu)
    w0 = (a0 / math.fsum(a0)) / nu_h
    w1 = (a1 / math.fsum(a1)) / nu_h
    d = w0 - w1
    e_d = (6.0 * _U + 1.01 * input_rel) * (w0 + w1) + _U * np.abs(d)
    return w0, w1, nu_h, e_d


def _grid_step(raw: float) -> float:
    """A step <= ``raw`` with at most 12 significant bits, so that the nodes ``j h`` are exact floats."""
    e = math.floor(math.log2(raw)) - 11
    return math.floor(raw / 2.0**e) * 2.0**e


def _inner_values(v: Array, d: Array, e_d: Array, nu: Array, k: int, eps_v: float,
                  t: Array) -> tuple[Array, Array]:
    """``f(t) = t (γ φ^k + k δ² φ^{k−1})`` at each t and a forward error bound (see :func:`inner_bracket`).

    ``γ = Σ ν d² e^{−tv}``, ``δ = Σ ν d expm1(−tv)`` (``Σ ν d = 0``), ``ln φ = log1p(Σ ν expm1(−tv))``. Relative
    errors: ``e^{−tv}`` ``(eps_v + 2u) t v + 2u``; ``expm1(−tv)`` ``eps_v + 3u`` (``x e^{−x} <= 1 − e^{−x}``: a
    relative change of the argument moves expm1 by at most as much, relatively); ν̂ ``3u``; each sum of n
    terms ``(n + 2)u`` of the sum of the terms' moduli.
    """
    n = nu.size
    tv = np.outer(t, v)
    x_exp = np.exp(-tv)
    x_em1 = np.expm1(-tv)
    nd2 = nu * d * d
    gam = x_exp @ nd2
    dlt = x_em1 @ (nu * d)
    x = x_em1 @ nu
    sum_u = (n + 2) * _U
    eps_e = eps_v + 3.0 * _U + 3.0 * _U + sum_u
    e_gam = (x_exp @ (nu * (2.0 * np.abs(d) * e_d + e_d * e_d))
             + (x_exp * ((eps_v + 2.0 * _U) * tv + 2.0 * _U)) @ nd2 + (sum_u + 3.0 * _U) * gam)
    e_dlt = np.abs(x_em1) @ (nu * (e_d + np.abs(d) * eps_e))
    near = x > -0.5
    lval = np.empty_like(x)
    e_l = np.empty_like(x)
    lval[near] = np.log1p(x[near])
    e_l[near] = 2.2 * eps_e * np.abs(x[near]) + 2.0 * _U * np.abs(lval[near])
    if np.any(~near):
        phi = x_exp[~near] @ nu
        # relative error of φ: the terms' relative errors weighted by the terms
        with np.errstate(invalid="ignore", divide="ignore"):
            eps_x = ((x_exp[~near] * tv[~near]) @ nu) / phi * (eps_v + 2.0 * _U) + 2.0 * _U
        eps_x = np.where(np.isfinite(eps_x), eps_x, np.inf)
        with np.errstate(divide="ignore"):
            lval[~near] = np.log(phi)
        e_l[~near] = 1.01 * (eps_x + 3.0 * _U + sum_u) + 2.0 * _U * np.abs(lval[~near])
    with np.errstate(invalid="ignore"):
        pk = np.exp(k * lval)
        pk1 = np.exp((k - 1) * lval)
        ek = np.expm1(k * e_l + 2.0 * _U * k * np.abs(lval)) + 2.0 * _U
        ek1 = np.expm1((k - 1) * e_l + 2.0 * _U * (k - 1) * np.abs(lval)) + 2.0 * _U
    if k == 1:  # φ^0 = 1 exactly
        pk1, ek1 = np.ones_like(lval), np.zeros_like(lval)
    ek = np.where(np.isfinite(ek), ek, np.inf)
    ek1 = np.where(np.isfinite(ek1), ek1, np.inf)
    first = gam * pk
    second = k * dlt * dlt * pk1
    f = t * (first + second)
    with np.errstate(invalid="ignore"):
        err1 = e_gam * pk * (1.0 + ek) + first * ek
        err2 = k * pk1 * ((2.0 * np.abs(dlt) * e_dlt + e_dlt * e_dlt) * (1.0 + ek1) + dlt * dlt * ek1)
    # φ^k (φ^{k−1}) underflowed: ln φ < −708/k, so the true power is below 1e-290 (e_L <= 1 there)
    err1 = np.where(pk == 0.0, (gam + e_gam) * 1e-290, err1)
    err2 = np.where(pk1 == 0.0, k * (np.abs(dlt) + e_dlt) ** 2 * 1e-290, err2)
    err = t * (err1 + err2 + 4.0 * _U * (first + second))
    return f, _SAFETY * np.nan_to_num(err, nan=np.inf) + 1e-300


def inner_bracket(v: Array, d: Array, e_d: Array, nu: Array, k: int, eps_v: float) -> tuple[float, float]:
    """Certified ``(lower, upper)`` of ``J = E[D²/V]/(k+1)`` for ``D = Σ_i d(y_i)``, ``V = Σ_i v(y_i)``, k+1 draws of ν.

    By ``1/x = ∫_0^∞ e^{−tx} dt`` and the independence of the k+1 draws,
    ``E[D² e^{−tV}] = (k+1)(γ φ^k + k δ² φ^{k−1})`` with ``φ = Σ ν e^{−tv}``, ``γ = Σ ν d² e^{−tv}``,
    ``δ = Σ ν d e^{−tv}``, so ``J = ∫_0^∞ (γ φ^k + k δ² φ^{k−1}) dt`` — a non-negative integrand. In ``s = ln t``
    the trapezoidal rule of step h is certified *relatively* (Trefethen & Weideman, SIAM Rev. 2014, Thm 5.1):
    for ``Re t = r > 0`` each ``|e^{−tv}| = e^{−rv}``, so ``|γ(t)| <= γ(r)``, ``|φ(t)| <= φ(r)`` and, by
    Cauchy–Schwarz, ``|δ(t)|² <= γ(r) φ(r)``; hence on the strip ``|Im s| < d``
    ``∫|f| dσ <= (k+1)/cos d · ∫ γ φ^k dr <= (k+1) J / cos d`` and the rule's error is at most ``ρ J`` with
    ``ρ = 2(k+1)/(cos d (e^{2πd/h} − 1))``. Tails: ``f <= t γ(0) + k t³ (Σ ν|d|v)²`` (``|expm1(−x)| <= x``) below
    the first node, ``f <= (k+1) γ(0) t e^{−m t}`` above the last (m = least v where d ≠ 0). ``inf`` when some
    ``d ≠ 0`` has ``v = 0``. ``eps_v``: relative error bound of ``v``.
    """
    on = d != 0
    if not np.any(on):
        return 0.0, 0.0
    if np.any(on & (v <= 0)):
        return math.inf, math.inf
    # m, γ(0), Σν|d|v enter the tail bounds: rounded outwards (relative 1e-12 >> their few-ulp error)
    m = float(v[on].min()) * (1.0 - 1e-12)
    g0 = float(np.dot(nu, (np.abs(d) + e_d) ** 2)) * (1.0 + 1e-12)
    big_b = float(np.dot(nu, (np.abs(d) + e_d) * v)) * (1.0 + 1e-12)
    vbar = float(np.dot(nu, v))
    vg = float(np.dot(nu * d * d, v)) / g0
    if not (m > 1e-250 and math.isfinite(g0) and math.isfinite(big_b) and g0 > 1e-280):
        return math.nan, math.nan
    j_low = g0 / (vg + k * vbar)  # Jensen: γ(t) >= γ(0) e^{−t v̄_γ}, φ(t) >= e^{−t v̄}
    cosd = math.cos(INNER_STRIP)
    h = _grid_step(2.0 * math.pi * INNER_STRIP / math.log1p(2.0 * (k + 1) / (cosd * REL_TARGET)))
    eta = 1e-3 * REL_TARGET * j_low
    t_lo = min(eta / g0, (eta / (k * big_b * big_b + 1e-300)) ** (1.0 / 3.0))
    x_hi = 2.0 * math.log(max((k + 1) * g0 / (m * eta), 2.0)) + 4.0
    j_lo = math.floor(math.log(t_lo) / h)
    j_hi = math.ceil(math.log(x_hi / m) / h)
    s = h * np.arange(j_lo, j_hi + 1, dtype=float)
    t = np.exp(s)
    vals = np.empty(t.size)
    errs = np.empty(t.size)
    step = max(1, _CHUNK // max(nu.size, 1))
    for i in range(0, t.size, step):
        vals[i:i + step], errs[i:i + step] = _inner_values(v, d, e_d, nu, k, eps_v, t[i:i + step])
    t_first, x_last = float(t[0]) * (1.0 + 2.0 * _U), m * float(t[-1]) * (1.0 - 2.0 * _U)
    low_tail = h * (g0 * t_first * math.exp(-h) / -math.expm1(-h)
                    + k * big_b ** 2 * t_first ** 3 * math.exp(-3.0 * h) / -math.expm1(-3.0 * h))
    x1 = x_last * math.exp(h)
    high_tail = h * (k + 1) * g0 / m * (2.0 / math.e) * math.exp(-x1 / 2.0) / -math.expm1(-x1 * math.expm1(h) / 2.0)
    lower = h * math.fsum(np.maximum(vals - errs, 0.0)) * (1.0 - 4.0 * _U)
    upper = h * math.fsum(vals + errs) * (1.0 + 4.0 * _U) + (low_tail + high_tail) * (1.0 + 1e-12)
    rho = 2.0 * (k + 1) / (cosd * math.expm1(2.0 * math.pi * INNER_STRIP / h))
    return lower / (1.0 + rho), upper / (1.0 - rho)


#: Outer weights ``w(θ) = θ^a (1 − θ)^b`` in ``σ = logit θ`` (``dθ = θ(1 − θ) dσ``), and their constants.
_OUTER = {"kl": (1.0, 2.0, 1.0), "reverse-kl": (2.0, 1.0, 1.0), "hellinger": (1.5, 1.5, 1.0 / math.pi)}


def divergence_brackets(a0: Array, a1: Array, nu: Array, k: int,
                        names: tuple[str, ...] = ("chi2", "reverse-chi2", "kl", "reverse-kl", "hellinger"),
                        input_rel: float = 0.0) -> dict[str, tuple[float, float]]:
    """Certified ``(lower, upper)`` of f-divergences between the tuple laws ``P = Q#λ0``, ``Q = Q#λ1`` (issue 25).

    With ``S_b = Σ_i w_b(y_i)`` over the k+1 slots drawn i.i.d. from ν (tupling paper, proof of Prop. 12),
    ``P/Q = S0/S1`` and ``E_Q g(P/Q) = E[S1 g(S0/S1)]/(k+1)``. With ``D = S0 − S1`` (``E D = 0``) and
    ``J(θ) = E[D²/(θ S0 + (1 − θ) S1)]/(k+1)`` (:func:`inner_bracket` at ``v = θ w0 + (1 − θ) w1``):

    * ``χ²(P‖Q) = J(0)``, ``χ²(Q‖P) = J(1)``;
    * ``KL(P‖Q) = ∫_0^1 (1 − θ) J(θ) dθ`` (Taylor's remainder: ``x ln(x/y) − x + y = (x−y)² ∫_0^1 (1−θ)/(θx + (1−θ)y) dθ``),
      ``KL(Q‖P) = ∫_0^1 θ J(θ) dθ``;
    * squared Hellinger ``½ Σ(√P − √Q)² = E[D²/(√S0 + √S1)²]/(2(k+1)) = (1/π) ∫_0^1 √(θ(1−θ)) J(θ) dθ``, from
      the Stieltjes representation ``1/(1 + √x)² = (2/π) ∫_0^∞ √λ/(1+λ)² dλ/(x + λ)``.

    Every integrand is non-negative, so nothing cancels at any k. The θ-integrals are taken by the
    trapezoidal rule in ``σ = logit θ``: with ``λ = e^{−σ}``, ``θ(1−θ) J = λ E[D²/(S0 + λ S1)]/((k+1)(1+λ))`` and
    ``|x + λ y| >= (x + |λ| y) cos(Im σ/2)`` for x, y >= 0, so each weighted integrand is bounded on the strip
    ``|Im σ| < d`` by ``1/cos³(d/2)`` times its real value: the rule's relative error is at most
    ``2/(cos³(d/2)(e^{2πd/h} − 1))``. Tails use ``J(θ) <= min(J(0)/(1−θ), J(1)/θ, 1/(θ(1−θ)))``. All inputs are
    normalised first (:func:`_normalised`); rounding enters the per-node error bounds. ``(nan, nan)`` when the
    ratios span more than float64's range (the caller keeps another bound). ``input_rel``: relative error of
    each entry of ``a0``, ``a1`` (:func:`_normalised`).
    """
    a0 = np.asarray(a0, dtype=float)
    a1 = np.asarray(a1, dtype=float)
    nu = np.asarray(nu, dtype=float)
    w0, w1, nu_h, e_d = _normalised(a0, a1, nu, input_rel)
    d = w0 - w1
    eps_w = 6.0 * _U + 1.01 * input_rel
    out: dict[str, tuple[float, float]] = {}
    j0 = inner_bracket(w1, d, e_d, nu_h, k, eps_w)  # θ = 0: V = S1
    j1 = inner_bracket(w0, d, e_d, nu_h, k, eps_w)
    out["chi2"], out["reverse-chi2"] = j0, j1
    wanted = [n for n in names if n in _OUTER]
    if not wanted:
        return {n: out[n] for n in names}
    if math.isnan(j0[1]) or math.isnan(j1[1]):
        return {**{n: out[n] for n in names if n in out}, **{n: (math.nan, math.nan) for n in wanted}}
    if not np.any(d != 0):
        return {**{n: out[n] for n in names if n in out}, **{n: (0.0, 0.0) for n in wanted}}
    inf_kl = {"kl": math.isinf(j0[1]), "reverse-kl": math.isinf(j1[1]), "hellinger": False}
    live = [n for n in wanted if not inf_kl[n]]
    for n in wanted:
        if inf_kl[n]:
            out[n] = (math.inf, math.inf)
    if not live:
        return {n: out[n] for n in names}
    c3 = math.cos(OUTER_STRIP / 2.0) ** 3
    h = _grid_step(2.0 * math.pi * OUTER_STRIP / math.log1p(2.0 / (c3 * REL_TARGET)))
    rho = 2.0 / (c3 * math.expm1(2.0 * math.pi * OUTER_STRIP / h))
    cache: dict[int, tuple[float, float, float, float]] = {}  # j -> (θ, 1 − θ, J_lo, J_hi)

    def node(j: int) -> tuple[float, float, float, float]:
        if j not in cache:
            sig = j * h
            th, om = float(special.expit(sig)), float(special.expit(-sig))
            lo_j, hi_j = inner_bracket(th * w0 + om * w1, d, e_d, nu_h, k, eps_w + 6.0 * _U)
            cache[j] = (th, om, lo_j, hi_j)
        return cache[j]

    def sums(n: str, lo_j: int, hi_j: int) -> tuple[float, float]:
        a, b, c = _OUTER[n]
        lows, highs = [], []
        for j in range(lo_j, hi_j + 1):
            th, om, jl, jh = node(j)
            wt = th ** a * om ** b
            lows.append(wt * jl)
            highs.append(wt * jh)
        fac = (a + b + 2.0) * 6.0 * _U
        return c * h * math.fsum(lows) * (1.0 - fac), c * h * math.fsum(highs) * (1.0 + fac)

    def envelope(n: str, side: str) -> list[tuple[float, float]]:
        """``G(σ) <= c e^{−α|σ|}`` beyond the ends (θ <= e^σ, 1 − θ <= e^{−σ}; J <= 2J(0) for θ <= ½ etc.)."""
        a, b, c = _OUTER[n]
        p, j_end = (a, j0[1]) if side == "left" else (b, j1[1])
        opts = [(2.0 * c, p - 1.0)]
        if math.isfinite(j_end):
            opts.append((2.0 * c * j_end, p))
        return [(cc, al) for cc, al in opts if al > 0]

    def tail(n: str, side: str, sig_end: float) -> float:
        best = math.inf
        for cc, al in envelope(n, side):
            best = min(best, h * cc * math.exp(-al * sig_end) * math.exp(-al * h) / -math.expm1(-al * h))
        return best

    def needed(n: str, side: str, target: float) -> float:
        """Least ``|σ_end|`` whose tail is below ``target``, in logarithms (no overflow for tiny targets),
        capped at ``_MAX_NODES · h``: beyond the cap the tail bound is simply added to the upper end."""
        best = _MAX_NODES * h
        for cc, al in envelope(n, side):
            geo = h * math.exp(-al * h) / -math.expm1(-al * h)
            best = min(best, max(math.log(cc) + math.log(geo) - math.log(target), 0.0) / al)
        return best

    core = math.ceil(10.0 / h)
    lo_j, hi_j = -core, core
    for _ in range(3):
        new_lo, new_hi = lo_j, hi_j
        for n in live:
            low_n, high_n = sums(n, lo_j, hi_j)
            # the lower sum is 0 where every node's bracket reaches 0 (values near float64's floor): the
            # scale is then taken from the upper sum (issue 25: a target of 1e-316 overflowed ``needed``)
            target = 0.1 * REL_TARGET * max(low_n, 1e-3 * high_n, 1e-300)
            new_lo = min(new_lo, -math.ceil(needed(n, "left", target) / h))
            new_hi = max(new_hi, math.ceil(needed(n, "right", target) / h))
        if (new_lo, new_hi) == (lo_j, hi_j):
            break
        lo_j, hi_j = max(new_lo, -_MAX_NODES), min(new_hi, _MAX_NODES)
    for n in live:
        s_lo, s_hi = sums(n, lo_j, hi_j)
        tails = tail(n, "left", -lo_j * h) + tail(n, "right", hi_j * h)
        out[n] = (s_lo / (1.0 + rho), (s_hi + tails) / (1.0 - rho))
    return {n: out[n] for n in names}


# --------------------------------------------------------------------------------------------------------
# Rounded-up evaluations: base-channel caps and the enumeration of the tuple's multiset (issue 25 review)
# --------------------------------------------------------------------------------------------------------
def base_caps(a0: Array, a1: Array, input_rel: float = 0.0) -> dict[str, float]:
    """Upper bounds, rounded outwards, of ``χ²`` (both orders), squared Hellinger and KL (both orders) between
    the *normalised* base laws ``â_b = a_b/Σa_b`` (the data-processing caps of the tuple laws' divergences).

    Each ``d_y = â0_y − â1_y`` is computed as ``(a0_y − a1_y)/σ0 + a1_y (σ1 − σ0)/(σ0 σ1)`` (``σ1 − σ0`` by one
    correctly rounded ``fsum``), within ``e_y = 6u`` times the sum of the two pieces' moduli, plus
    ``input_rel (â0_y + â1_y)`` for a relative error ``input_rel`` of each input entry itself; then
    ``χ² <= Σ (|d̂| + e)²/(â1(1 − 4u))``, ``H² <= ½ Σ (|d̂| + e)²/((√â0 + √â1)²(1 − 4u))`` (no cancellation), and
    ``KL <= min(χ², KL̂ + slack)``: ``KL <= ln(1 + χ²) <= χ²``, and the float sum ``KL̂ = Σ â0 ln(â0/â1)`` is within
    ``(m + 4)u Σ|terms| + 3u Σ â0(1 + |ln r|) + 2.01u Σ â0(|ln r| + 2)`` of the value at the normalised laws (``r = â0/â1``). A float
    ``KL(a0‖a1)`` alone could fall below the exact value by cancellation (``a1 = a0(1 + 1e-7)`` on entries
    of 1e-27 gave 0 for an exact 5e-42).
    """
    a0 = np.asarray(a0, dtype=float)
    a1 = np.asarray(a1, dtype=float)
    s0, s1 = math.fsum(a0), math.fsum(a1)
    p, q = a0 / s0, a1 / s1
    # d = a0/σ0 − a1/σ1 (σ the exact sums) = (a0 − a1)/σ0 + a1 (σ1 − σ0)/(σ0 σ1): each piece within a few u
    # relatively (σ1 − σ0 by one correctly rounded fsum), so e bounds the error even where the sums differ
    # from 1 by less than an ulp (fsum rounds) and the laws differ by less than an ulp of their entries
    ds = math.fsum(np.concatenate([a1, -a0]).tolist())
    piece1 = (a0 - a1) / s0
    piece2 = a1 * (ds / (s0 * s1))
    d = piece1 + piece2
    e = 6.0 * _U * (np.abs(piece1) + np.abs(piece2)) + 1.01 * input_rel * (p + q)
    norm_err = 2.01 * _U + 1.01 * input_rel
    dd = np.abs(d) + e
    num = dd * dd * (1.0 + 8.0 * _U)
    m = a0.size
    out: dict[str, float] = {}
    for key, den in (("chi2", q), ("reverse-chi2", p)):
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(dd > 0, num / (den * (1.0 - 4.0 * _U)), 0.0)
        out[key] = math.fsum(terms) * (1.0 + 4.0 * _U)  # fsum is correctly rounded
    root = (np.sqrt(p) + np.sqrt(q)) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(dd > 0, 0.5 * num / (root * (1.0 - 8.0 * _U)), 0.0)
    out["hellinger"] = math.fsum(terms) * (1.0 + 4.0 * _U)
    for key, x, y, chi in (("kl", p, q, out["chi2"]), ("reverse-kl", q, p, out["reverse-chi2"])):
        on = x > 0
        if np.any(on & (y <= 0)):
            out[key] = math.inf
            continue
        lr = np.log(x[on] / y[on])
        t = x[on] * lr
        # ln of a rounded quotient: absolute error <= ~u(1 + |ln r|); the sum: (m + 4)u Σ|t|; the inputs'
        # normalisation: 2.01u Σ x(|ln r| + 2)
        slack = ((m + 4) * _U * float(np.sum(np.abs(t))) + 3.0 * _U * float(np.sum(x[on] * (1.0 + np.abs(lr))))
                 + norm_err * float(np.sum(x[on] * (np.abs(lr) + 2.0))))
        out[key] = min(chi, max(0.0, math.fsum(t)) + slack * 1.01)
    return out


def enumerated_upper(a0: Array, a1: Array, nu: Array, k: int, counts: NDArray[np.int64],
                     names: tuple[str, ...] = ("chi2", "reverse-chi2", "hellinger"),
                     input_rel: float = 0.0) -> dict[str, float]:
    """Upper bounds of ``χ²`` (both orders) and squared Hellinger of the tuple laws by the enumeration of every
    multiset ``c`` of the ``n = k + 1`` slots (``counts``: all compositions of n into |Y| parts).

    With the inputs normalised (:func:`_normalised`), the multiset law under ``λ_b`` is ``π(c) S_b(c)/n``,
    ``π(c) = n!/Π c_y! Π ν̂_y^{c_y}`` (multinomial) and ``S_b(c) = Σ_y c_y ŵ_b(y)``, so with ``D = S0 − S1``
    ``χ²(P‖Q) = Σ π D²/(n S1)`` and ``H² = Σ π D²/(2n (√S0 + √S1)²)``: non-negative terms, no cancellation.
    Each term is rounded up: ``S_b`` within relative ``ε_S = (m + 8)u``, ``D`` within ``c·e_d + (m + 2)u c·|d̂|``,
    and ``π`` below ``exp(ln π̂ + L_c)(1 + 2u) + 2^−1073`` with
    ``L_c = 32u (|ln n!| + Σ|ln c_y!| + Σ c_y (|ln ν̂_y| + 1) + m + 1)`` (``gammaln`` and ``log`` within a few ulp
    of their argument's magnitude, the normalised ν̂ within 2.01u). The claim is for the normalised laws
    (issue 25: with Σν = 1 − 9e-9 the unnormalised sums were 9e-9 relative below the exact value, and beyond
    k = 50 rejected by the weight check; float sums were up to 6e-14 relative below at k = 1000).
    """
    w0, w1, nu_h, e_d = _normalised(np.asarray(a0, float), np.asarray(a1, float), np.asarray(nu, float), input_rel)
    d = w0 - w1
    n = k + 1
    m = nu_h.size
    c = counts.astype(float)
    with np.errstate(divide="ignore"):
        lognu = np.log(nu_h)
    g_c = special.gammaln(c + 1.0)
    g_n = float(special.gammaln(n + 1.0))
    cl = np.where(c > 0, c * lognu[None, :], 0.0)
    logpi = g_n - g_c.sum(axis=1) + cl.sum(axis=1)
    big_l = 32.0 * _U * (abs(g_n) + np.abs(g_c).sum(axis=1) + (c * (np.abs(lognu) + 1.0)[None, :]).sum(axis=1)
                         + m + 1.0)
    pi_up = np.exp(logpi + big_l) * (1.0 + 2.0 * _U) + 2.0**-1073
    eps_s = (m + 8) * _U + 1.01 * input_rel
    s0, s1 = c @ w0, c @ w1
    dhat = c @ d
    dd = np.abs(dhat) + (c @ e_d + (m + 2) * _U * (c @ np.abs(d))) * (1.0 + 1e-9)
    num = pi_up * dd * dd * (1.0 + 8.0 * _U) / n
    out: dict[str, float] = {}
    for key, den, other in (("chi2", s1, s0), ("reverse-chi2", s0, s1)):
        if key not in names:
            continue
        if np.any((den == 0) & (other > 0)):  # a multiset charged under one law and not the other
            out[key] = math.inf
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(den > 0, num / (den * (1.0 - eps_s)), 0.0)
        out[key] = math.fsum(terms) * (1.0 + 4.0 * _U)  # fsum is correctly rounded
    if "hellinger" in names:
        root = (np.sqrt(s0) + np.sqrt(s1)) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(root > 0, 0.5 * num / (root * (1.0 - eps_s - 8.0 * _U)), 0.0)
        out["hellinger"] = math.fsum(terms) * (1.0 + 4.0 * _U)
    return out
