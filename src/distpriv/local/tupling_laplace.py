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
elementary functions (a few ulp), and is typically 1e−12 wide.
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
        err = et * (e_d * np.exp(e_d) + r * (np.expm1(e_top) + 6.0 * _U))
        vals[i:i + step] = g
        errs[i:i + step] = _FP_SAFETY * err + 1e-300
    return vals, errs


def kl_bracket(a0: Array, a1: Array, nu: Array, k: int) -> tuple[float, float]:
    """Certified ``(lower, upper)`` of ``D_KL(Q#λ0 ‖ Q#λ1)`` for the (k, ν, A)-tupling mechanism.

    ``a_b = A#(λ_b)``; ν must have full support. Infinite when ``a_0`` charges an output ``a_1`` misses
    (then ``Q#λ1`` never yields the tuples of k dummies on ``{a_1 = 0}`` plus that output). ``(nan, nan)``
    when the ratios ``a_b/ν`` span more than float64's exponent range (the caller then uses another bound).
    """
    a0 = np.asarray(a0, dtype=float)
    a1 = np.asarray(a1, dtype=float)
    nu = np.asarray(nu, dtype=float)
    supp = a0 > 0
    if np.any(supp & (a1 <= 0)):
        return math.inf, math.inf
    w0, w1 = a0 / nu, a1 / nu
    big_c = float(np.dot(a0, w0) + np.dot(a0, w1)) + 2.0 * k
    m = float(min(w0[supp].min(), w1[supp].min()))
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
