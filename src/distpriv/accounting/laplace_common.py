"""The common-Gaussian-factor bound: δ(ε) of Gaussian query values plus Laplace noise in any dimension (issue 25).

Setting. F_a ~ N(μ_a, Σ_a), F_b ~ N(μ_b, Σ_b) in d dimensions, output Y = F + B L with B an orthonormal d×d basis
(full rank) and L_k ~ Lap(b_k) independent. In the basis coordinates X = BᵀF ~ N(m, S) (m = Bᵀμ, S = BᵀΣB) and
the output BᵀY = X + L (a bijection of Y: δ is unchanged).

The bound. Take C = diag(c_1..c_d) ⪰ 0 with C ⪯ S_a and C ⪯ S_b. Then X_a = m_a + R_a + G with G ~ N(0, C) and
R_a ~ N(0, S_a − C) independent, so BᵀY_a = V_a + (G + L) with V_a = m_a + R_a and (G + L)_k ~ K_k = N(0, c_k) ⊛
Lap(b_k) independent: the output law is the mixture over V_a of the product law K shifted to V_a (likewise for b).

1. *Joint convexity.* For any coupling of (V_a, V_b), P_out = E[K_{V_a}], Q_out = E[K_{V_b}], and the hockey-stick
   divergence H_γ (γ = e^ε) is jointly convex, so δ(ε) <= E[H_γ(K_{V_a} ‖ K_{V_b})] = E[δ_K(ε; V_b − V_a)], where
   δ_K(ε; t) = H_γ(K ‖ K_t) is the profile of the product pair "K at 0 against K at t" (translation invariance).
   Each K_k is symmetric, so δ_K(ε; t) depends on |t_1|, ..., |t_d| only (reflect coordinate k) and the bound is
   the same for both orders of the pair. The coupling of the residuals is the Gaussian optimal-transport one
   (:func:`distpriv.accounting.laplace.coupling_shift` with B = I): D = V_a − V_b ~ N(m_a − m_b, K_D).
2. *Monotonicity in each |t_k|.* K_k is log-concave (a convolution of log-concave densities) and symmetric, so for
   0 <= s <= t the likelihood ratio k(x)/k(x − s) is non-increasing in x and every optimal test of K_k against
   K_k(· − s) is a half-line: H_γ(K_k ‖ K_k(· − s)) = sup_x F(x) − γF(x − s) <= sup_x F(x) − γF(x − t) <=
   H_γ(K_k ‖ K_k(· − t)) for every γ > 0 (F the CDF; the same in the other order by symmetry). So the trade-off
   curve of the pair at s lies above the one at t, and by Blackwell's theorem (Dong, Roth & Su 2022, Thm 2.10) the
   pair at s is a post-processing of the pair at t; applied to coordinate k alone it is a post-processing of the
   d-dimensional product too, so δ_K(ε; t) is non-decreasing in each |t_k|.
3. *Nested boxes.* With boxes S_j = {|D_k| <= t_jk = |E D_k| + z_j sd(D_k)} (0 = z_0 < z_1 < ... < z_J), an upper
   bound u_j >= δ_K(ε; t_j) at each corner (monotonicity: the corner bounds the box), ũ_j = max_{i <= j} u_i
   (non-decreasing, still an upper bound at corner j, and fixed once level j is computed) and T_j >= P(D ∉ S_j)
   (a union bound over coordinates with exact Gaussian tails),

       δ(ε) <= Σ_j P(D ∈ S_j \\ S_{j−1}) ũ_j + P(D ∉ S_J) <= ũ_0 + Σ_{j=1..J} T_{j−1}(ũ_j − ũ_{j−1}) + T_J(1 − ũ_J)

   (summation by parts; every coefficient of a T is >= 0). Each u_j is the certified upper end of the discretised
   PLD (:func:`distpriv.accounting.pld.bracket_at`) over the exact 1-D Gauss ⊛ Laplace cells of
   :class:`distpriv.accounting.laplace.GaussLaplaceCoord` ("N(0, c_k) ⊛ Lap(b_k) against N(t_k, c_k) ⊛ Lap(b_k)"),
   the same machinery as the product profiles (noise basis diagonalising both covariances), on the window where
   the loss moves, with two tail cells beyond it (:class:`ShiftCoord`: the loss is monotone by 2.).
4. *Combined with the Laplace-shift bound.* The loss of K against K_t is at most Σ_k |t_k|/b_k (each 1-D
   Gauss ⊛ Laplace log-density is 1/b_k-Lipschitz), so δ_K(ε; D) <= g(M), M = Σ_k |D_k|/b_k, g the randomised-
   response bound of the coupling bound (:func:`shift_level`). With U(D) the box step of 3. (ũ_j on the ring
   S_j \\ S_{j−1}, 1 outside S_J), E[δ_K] <= E[min(U, g(M))] <= ∫₀¹ min(A(v), B(v)) dv, A(v) >= P(U > v) the box
   tails and B(v) >= P(g(M) > v) union and Gaussian-concentration bounds on the tail of M (:func:`combined`):
   never above the sum of 3., and, with the boxes left out, the coupling bound's own argument applied to D.

When Σ_a = Σ_b the residuals are coupled identically (K_D = 0) and the bound is δ_K at the mean shift, exact when
S = C; when B diagonalises both covariances, C = the smaller diagonal leaves one residual 0.

Choice of C. Any feasible C gives a certified bound, so several candidates are tried and the least bound kept (a
minimum of certified upper bounds is one): the maximisers of the log-barrier problem
max Σ log c_k + μ(log det(S_a − C) + log det(S_b − C)) for a few μ (Newton steps from C = λI/2, λ the least
eigenvalue of S_a and S_b; large μ gives a small, balanced C), C = f·λI for f in FRACTIONS, C = 0 (the exact
product of Laplace shifts) when λ = 0, and the largest diagonal min(diag S_a, diag S_b) where it is feasible (B
diagonalises both). A larger C smooths more but widens D (the residuals differ relatively more), and on random
2-D and 4-D models the least bound came from a small C (μ = 30 or 10). In decision mode (a calibration's search)
the candidates stop at the first that proves the target. Only the bound's tightness depends on the choice.

Where it stands. The coupling bound of :mod:`.laplace` bounds a Laplace shift by D through randomised response
(Kairouz et al.) and ignores the query's own spread; this bound computes the shifted product exactly and keeps a
Gaussian factor, but pays for the box corners (all coordinates at their level at once) and the union bound (on a
2-D model the Monte Carlo mean of δ_K(ε; D) was 7× below the bound). It is
used where it is the smaller (full-rank B, at least MIN_DIM = 4 dimensions: :func:`improve`, called by
:func:`distpriv.accounting.release._composition_bound`); pure-ε claims are unaffected (δ only).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from . import laplace as lap
from . import pld
from .laplace_l1 import sign_union_tail

#: Method name recorded in profiles proven by this bound.
METHOD = ("common Gaussian factor: δ <= E[δ of the product N(0, c_k) ⊛ Lap(b_k) shifted by D] for a Gaussian coupling "
          "of the residual query laws (joint convexity; certified product PLD at nested box corners)")
#: Box levels z_j (in standard deviations of D beyond |E D|) of the nested-box bound.
LEVELS: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 7.0, 8.0, 9.5)
#: The levels stop at the first J where the part of the bound above ũ_J is at most STOP_FRACTION of the bound.
STOP_FRACTION = 0.02
#: Relative grid width of the product PLD: h = REL_H · ||t/b||₂ / d (the loss's reach; cf. the first grid of
#: :func:`pld.pld_bracket`, which reads the loss's spread).
REL_H = 3e-3
#: Cell resolution κ of each 1-D Gauss ⊛ Laplace coordinate: min(KAPPA, KAPPA_EPS · ε) (the loss is resolved to a
#: fraction of ε: at ε = 0.1 the upper end with κ = 1e-2 was 1.8× the one with κ = 3e-3 on a 4-D benchmark model).
KAPPA = 1e-2
KAPPA_EPS = 0.03
#: Barrier weights μ of the log-det candidates of C, in the order tried (on random 2-D and 4-D models at (1, 1e-3),
#: (0.1, 1e-4), (1, 1e-6) the least bound came from μ = 30 or 10: a small common factor; larger ones widen D).
BARRIER_MUS: tuple[float, ...] = (30.0, 10.0)
#: Fractions f of the largest multiple λ·I of the identity under both covariances tried as C = f·λ·I (none by default:
#: λ/4 and μ = 100 were within a few % of μ = 30 on the benchmark's models, never much below it).
FRACTIONS: tuple[float, ...] = ()
#: Least dimension where :func:`improve` computes the bound. In 2-D and 3-D the certified grids of :mod:`.laplace_nd`
#: and :mod:`.laplace_3d` are far tighter (the 2-D grid's ExpM (L) scale is a median 0.62–0.69× this bound's), and
#: this bound moved the coupling bound's scale by a median 0.98× (2-D) and 0.96× (3-D) at (1, 1e-3) and by nothing
#: at (0.1, 1e-4) and (1, 1e-6), for 5–25× its CPU (benchmarks/bench_laplace_common.py); from 4-D on nothing else
#: exists.
MIN_DIM = 4
_LN2 = math.log(2.0)
#: Decision mode stops a candidate's levels once its bound is at most DECIDED × the target (the candidates of C stop
#: at the first that proves the target): not at the target itself, since a calibration's search reads the value as
#: its guide and stops within 5 % of the target (a value left loose near the target stops it at more noise: 0.968×
#: instead of 0.953× the coupling scale in 4-D).
DECIDED = 0.5
#: Decision mode abandons a candidate (returning the trivially valid 1) once the final part of its bound exceeds
#: ABANDON × the target; nearer the target it is computed in full, since the calibration's search interpolates on the
#: value (a 1 there, read as the coupling bound's value, made it creep: 18 steps instead of ~8 in 5-D).
ABANDON = 3.0
#: Bounds remembered (a few floats each).
MEMO_SIZE = 4096


def common_applies(basis: NDArray[np.float64] | None) -> bool:
    """True iff the bound is defined: a full-rank (square) orthonormal noise basis."""
    return basis is not None and basis.ndim == 2 and basis.shape[0] == basis.shape[1] and basis.shape[0] >= 1


def common_factor_delta(mu_a: ArrayLike, cov_a: ArrayLike, mu_b: ArrayLike, cov_b: ArrayLike, basis: ArrayLike,
                        scales: ArrayLike, epsilon: float, *, target: float | None = None) -> float:
    """Certified upper bound on δ(ε) of F_a + BL against F_b + BL (module notes), 1.0 where it does not apply.

    Symmetric in the order of the pair. ``target`` (decision mode): the candidates of C stop at the first whose
    bound proves the target (any candidate's bound is certified), and each stops early (:func:`box_bound`). Memoised on the exact bits of the
    inputs in the basis coordinates (m_a − m_b, S_a, S_b, b, ε, target).
    """
    b = np.atleast_2d(np.asarray(basis, dtype=float))
    if not common_applies(b):
        return 1.0
    sc = np.asarray(scales, dtype=float).reshape(-1)
    if sc.size != b.shape[1] or not bool(np.all(sc > 0)) or not math.isfinite(float(epsilon)):
        return 1.0
    dm = b.T @ (np.asarray(mu_a, dtype=float) - np.asarray(mu_b, dtype=float))
    sa = b.T @ np.atleast_2d(np.asarray(cov_a, dtype=float)) @ b
    sb = b.T @ np.atleast_2d(np.asarray(cov_b, dtype=float)) @ b
    sa, sb = 0.5 * (sa + sa.T), 0.5 * (sb + sb.T)
    # the bound is symmetric in the pair (module notes, 1.): one memo entry for both orders
    ka, kb = sa.tobytes(), sb.tobytes()
    if kb < ka:
        sa, sb, dm, ka, kb = sb, sa, -dm, kb, ka
    dm = np.ascontiguousarray(np.abs(dm) + 0.0)  # δ_K and the tails depend on |E D| only; +0.0 folds −0.0
    tgt = -1.0 if target is None else float(target)
    return _bound(dm.tobytes(), ka, kb, np.ascontiguousarray(sc).tobytes(), int(dm.size), float(epsilon), tgt)


def improve(upper: float, mu_a: ArrayLike, cov_a: ArrayLike, mu_b: ArrayLike, cov_b: ArrayLike, basis: ArrayLike,
            scales: ArrayLike, epsilon: float, *, target: float | None = None,
            early_stop: float = 0.5) -> tuple[float, bool]:
    """(min(``upper``, common-factor bound), whether the common-factor bound is the smaller): the hook of the coupling
    bound (:func:`distpriv.accounting.release._composition_bound`).

    Skipped (``upper`` kept) below MIN_DIM dimensions, where ``upper`` is 0, and in decision mode where ``upper``
    <= ``early_stop`` · ``target`` already decides the target with room to spare. Decision mode proves the target
    whenever the full computation's value is at most it (:func:`box_bound`), so a claim made without a target is
    confirmed by a recheck with it.
    """
    b = np.atleast_2d(np.asarray(basis, dtype=float))
    if b.shape[0] < MIN_DIM or upper <= 0.0:
        return upper, False
    if target is not None and upper <= early_stop * target:
        return upper, False
    val = common_factor_delta(mu_a, cov_a, mu_b, cov_b, basis, scales, epsilon, target=target)
    return (val, True) if val < upper else (upper, False)


@functools.lru_cache(maxsize=MEMO_SIZE)
def _bound(dm_b: bytes, sa_b: bytes, sb_b: bytes, sc_b: bytes, d: int, epsilon: float, target: float) -> float:
    """:func:`common_factor_delta` on the basis coordinates (float64 bytes; ``target`` < 0: none)."""
    dm = np.frombuffer(dm_b)
    sa, sb = np.frombuffer(sa_b).reshape(d, d), np.frombuffer(sb_b).reshape(d, d)
    sc = np.frombuffer(sc_b)
    best = 1.0
    # the candidates in the order of their first corner (z = 0: a lower bound on their final values' part below ũ_0,
    # and a good guide to the least): the first ones' bounds cap the others' levels (:func:`box_bound`)
    firsts = [(shifted_product_delta(np.abs(shift_law(dm, sa, sb, c)[0]), c, sc, epsilon), i, c)
              for i, c in enumerate(_candidates_of(sa_b, sb_b, d, BARRIER_MUS, FRACTIONS))]
    for u0, _, c in sorted(firsts, key=lambda x: (x[0], x[1])):
        best = min(best, box_bound(dm, sa, sb, c, sc, epsilon, None if target < 0 else target, cap=best, first=u0))
        if 0 <= target and best <= target:  # decided (this candidate's levels ran as without a target, or to DECIDED)
            break
    return best


# --------------------------------------------------------------------------- the common factor C
def _min_eig(a: NDArray[np.float64]) -> float:
    return float(np.linalg.eigvalsh(0.5 * (a + a.T))[0])


def feasible(c: NDArray[np.float64], sa: NDArray[np.float64], sb: NDArray[np.float64]) -> bool:
    """diag(c) ⪯ S_a and diag(c) ⪯ S_b and c >= 0 (numerically: least eigenvalues >= 0)."""
    return bool(np.all(c >= 0)) and _min_eig(sa - np.diag(c)) >= 0 and _min_eig(sb - np.diag(c)) >= 0


def _shrink(c: NDArray[np.float64], sa: NDArray[np.float64], sb: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """c scaled down by 1 − 1e-9 steps until feasible (guards the rounding of the closed forms); None if it is not."""
    for f in (1.0 - 1e-9, 1.0 - 1e-6, 1.0 - 1e-3, 0.99, 0.9):
        x = np.maximum(c, 0.0) * f
        if feasible(x, sa, sb):
            return x
    return None


def _barrier(c0: NDArray[np.float64], sa: NDArray[np.float64], sb: NDArray[np.float64], mu: float,
             steps: int = 30) -> NDArray[np.float64]:
    """Newton ascent (with backtracking inside the feasible set) on Σ log c_k + μ(log det(S_a − C) + log det(S_b − C))
    from a strictly feasible c0; a concave objective, so the steps converge to its maximiser."""
    c = c0.copy()

    def value(x: NDArray[np.float64]) -> float:
        if bool(np.any(x <= 0)):
            return -math.inf
        out = float(np.log(x).sum())
        for s in (sa, sb):
            sign, ld = np.linalg.slogdet(s - np.diag(x))
            if sign <= 0 or _min_eig(s - np.diag(x)) <= 0:
                return -math.inf
            out += mu * ld
        return out

    f = value(c)
    for _ in range(steps):
        ia, ib = np.linalg.inv(sa - np.diag(c)), np.linalg.inv(sb - np.diag(c))
        grad = 1.0 / c - mu * (np.diag(ia) + np.diag(ib))
        hess = -np.diag(1.0 / c ** 2) - mu * (ia * ia + ib * ib)
        step = np.linalg.solve(hess, -grad)
        if float(grad @ step) < 1e-12:
            break
        t = 1.0
        while t > 1e-8:
            x = c + t * step
            fx = value(x)
            if fx >= f + 0.25 * t * float(grad @ step):
                c, f = x, fx
                break
            t *= 0.5
        else:
            break
    return c


def candidates(sa: NDArray[np.float64], sb: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """Feasible diagonals c (module notes, "Choice of C"), distinct (tried in the order of their first corner): the log-barrier points for
    each μ of BARRIER_MUS (from half the largest multiple of I), FRACTIONS of the largest multiple λ·I, 0 (the
    exact product of Laplace shifts) when no positive multiple of I fits, and min(diag S_a, diag S_b) if feasible
    (up to a 1e-9 rounding shrink)."""
    d = sa.shape[0]
    lam = max(0.0, min(_min_eig(sa), _min_eig(sb)))
    out: list[NDArray[np.float64]] = []
    if lam > 0:
        start = np.full(d, 0.5 * lam)
        out += [_barrier(start, sa, sb, mu) for mu in BARRIER_MUS]
        out += [np.full(d, f * lam) for f in FRACTIONS]
    else:
        out.append(np.zeros(d))
    out.append(np.minimum(np.diag(sa), np.diag(sb)))  # the largest diagonal, feasible when B diagonalises S_a, S_b
    seen: dict[bytes, NDArray[np.float64]] = {}
    for c in out:
        x = _shrink(c, sa, sb)
        if x is not None:
            seen.setdefault(np.round(x, 12).tobytes(), x)
    return list(seen.values())


@functools.lru_cache(maxsize=MEMO_SIZE)
def _candidates_of(sa_b: bytes, sb_b: bytes, d: int, mus: tuple[float, ...],
                  fractions: tuple[float, ...]) -> tuple[NDArray[np.float64], ...]:
    """:func:`candidates` on float64 bytes, memoised (read-only arrays): they depend on the covariances in the basis
    coordinates only (and on the constants ``mus`` = BARRIER_MUS, ``fractions`` = FRACTIONS, part of the key), which a
    calibration's search keeps while it scales the noise."""
    out = tuple(candidates(np.frombuffer(sa_b).reshape(d, d), np.frombuffer(sb_b).reshape(d, d)))
    for c in out:
        c.flags.writeable = False
    return out


# --------------------------------------------------------------------------- the bound for one C
def shift_law(dm: NDArray[np.float64], sa: NDArray[np.float64], sb: NDArray[np.float64],
              c: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(E D, Cov D) of D = V_a − V_b under the optimal-transport coupling of N(0, S_a − C) and N(0, S_b − C).

    Memoised on the exact bits of (E(V_a − V_b), S_a, S_b, c) (read-only arrays): a calibration's search scales the
    noise only, so every step asks for the same laws."""
    key = tuple(np.ascontiguousarray(v, dtype=float).tobytes() for v in (dm, sa, sb, c))
    return _shift_law(*key, int(np.asarray(dm).size))


@functools.lru_cache(maxsize=MEMO_SIZE)
def _shift_law(dm_b: bytes, sa_b: bytes, sb_b: bytes, c_b: bytes, d: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`shift_law` on float64 bytes."""
    dm, c = np.frombuffer(dm_b), np.frombuffer(c_b)
    sa, sb = np.frombuffer(sa_b).reshape(d, d), np.frombuffer(sb_b).reshape(d, d)
    sh = lap.coupling_shift(dm, sa - np.diag(c), np.zeros(d), sb - np.diag(c), np.eye(d))
    mean, cov = np.array(sh.mean, dtype=float), np.array(sh.cov, dtype=float)
    mean.flags.writeable = False
    cov.flags.writeable = False
    return mean, cov


def l1_tail(s: NDArray[np.float64], mean: NDArray[np.float64], cov: NDArray[np.float64],
            scales: NDArray[np.float64]) -> NDArray[np.float64]:
    """Upper bounds on P(M > s) for every s, M = Σ_k |D_k|/b_k, D ~ N(mean, cov): the least of union bounds
    Σ_k P(|D_k|/b_k > π_k s) over a few splits π, Gaussian concentration P(M > E M + r) <= exp(−r²/2L²)
    (M is L-Lipschitz in the standard normal vector behind D: L = min(Σ_k σ_k/b_k, √d ||Cov(D/b)||^{1/2})) and the
    sign-vector union bound Σ_σ P(σᵀ(D/b) > s) (:func:`distpriv.accounting.laplace_l1.sign_union_tail`)."""
    mu = mean / scales
    k = cov / np.outer(scales, scales)
    sd = np.sqrt(np.clip(np.diag(k), 0.0, None))
    am = np.abs(mu)
    d = mu.size
    out = np.ones_like(s)
    for w in (am + sd, sd, np.ones(d)):
        if float(w.sum()) <= 0:
            continue
        tk = s[:, None] * (w / w.sum())[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            pos = sd > 0
            sdv = np.where(pos, sd, 1.0)
            z = lap._ndtr((-tk - mu) / sdv) + lap._ndtr((mu - tk) / sdv)  # Φ, evaluated only where not saturated
            z = np.where(pos, z, (tk < am).astype(float))
        out = np.minimum(out, z.sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(sd > 0, mu / np.where(sd > 0, sd, 1.0), 0.0)
        folded = np.where(sd > 0, sd * math.sqrt(2 / math.pi) * np.exp(-0.5 * r * r) + mu * (1 - 2 * special.ndtr(-r)), am)
    em = float(folded.sum())
    lip = min(float(sd.sum()), math.sqrt(d * max(float(np.linalg.eigvalsh(0.5 * (k + k.T))[-1]), 0.0)))
    if lip > 0:
        out = np.minimum(out, np.where(s > em, np.exp(-np.maximum(s - em, 0.0) ** 2 / (2.0 * lip * lip)), 1.0))
    # and the sign-vector union bound Σ_σ P(σᵀD/b > s) (M is the largest of the 2^d signed sums; gap32): where
    # |E D_k| is several σ_k it reads M's one dominant linear form, up to √d sharper than the Lipschitz constant
    out = np.minimum(out, sign_union_tail(s, mean, cov, scales))
    return np.minimum(out, 1.0)


def shift_level(v: NDArray[np.float64], epsilon: float, d: int) -> NDArray[np.float64]:
    """g⁻¹(v): the scaled ℓ1 shift μ at which the Laplace-shift bound g(μ) reaches v ∈ [0, 1) (g(μ) = 0 for μ <= ε).

    Any pair whose privacy loss is bounded by μ (here: the product pair K at 0 against K at t, with |ℓ| <= Σ|t_k|/b_k
    since each 1-D Gauss ⊛ Laplace log-density is 1/b_k-Lipschitz) has δ(ε) <= g(μ) = (e^μ − e^ε)_+/(e^μ + 1)
    (randomised response dominates it, Kairouz, Oh & Viswanath 2015); one coordinate: g(μ) = 1 − e^{−(μ − ε)/2}
    (the Laplace shift, and adding the Gaussian factor is post-processing). Inverting: μ = ε − 2 ln(1 − v), resp.
    μ = ε + ln(1 + v e^{−ε}) − ln(1 − v)."""
    v = np.clip(v, 0.0, 1.0 - 1e-16)
    if d == 1:
        return np.asarray(epsilon - 2.0 * np.log1p(-v), dtype=float)
    return np.asarray(epsilon + np.log1p(v * math.exp(-epsilon)) - np.log1p(-v), dtype=float)


#: The v grid of :func:`combined` (besides the corner values ũ_j): 0 and a geometric grid from 1e-18 to 1.
V_GRID = np.concatenate([[0.0], np.logspace(-18.0, 0.0, 1500)[:-1]])


def combined(us: list[float], ts: list[float], mean: NDArray[np.float64], cov: NDArray[np.float64],
             scales: NDArray[np.float64], epsilon: float,
             b_grid: NDArray[np.float64] | None = None) -> tuple[float, float]:
    r"""(∫_0^1 min(A(v), B(v)) dv, its part over [ũ_J, 1]): the nested boxes combined with the Laplace-shift bound.

    δ_K(ε; D) <= U(D) (ũ_j on the ring S_j \ S_{j−1}, 1 outside S_J) and δ_K(ε; D) <= G(D) = g(Σ_k |D_k|/b_k)
    (:func:`shift_level`), so E[δ_K(ε; D)] <= E[min(U, G)] = ∫_0^1 P(U > v, G > v) dv <= ∫_0^1 min(A(v), B(v)) dv with
    A(v) >= P(U > v) (1 below ũ_0, T_{j−1} on [ũ_{j−1}, ũ_j), T_J above ũ_J) and B(v) = T_M(g⁻¹(v)) >= P(G > v)
    (:func:`l1_tail`). Both are non-increasing in v, so the left-point Riemann sum on a grid holding every ũ_j is an
    upper bound. Without the boxes (A = 1) this is the coupling bound's argument applied to D; without B, the
    nested-box sum of :func:`nested_sum`. ``b_grid``: B on V_GRID if already computed (it does not depend on the
    levels; :func:`l1_tail` is elementwise, so only the ũ_j off V_GRID are evaluated, to the same floats)."""
    u = np.minimum(np.maximum.accumulate(np.asarray(us, dtype=float)), 1.0)
    t = np.asarray(ts, dtype=float)
    grid = np.unique(np.concatenate([V_GRID, u[u < 1.0]]))
    j = np.searchsorted(u, grid, side="right")
    a = np.where(j == 0, 1.0, t[np.maximum(j - 1, 0)])
    if b_grid is None:
        b = l1_tail(shift_level(grid, epsilon, mean.size), mean, cov, scales)
    else:
        b = np.empty(grid.size)
        pos = np.searchsorted(V_GRID, grid)
        on = (pos < V_GRID.size) & (V_GRID[np.minimum(pos, V_GRID.size - 1)] == grid)
        b[on] = b_grid[pos[on]]
        if not bool(on.all()):
            b[~on] = l1_tail(shift_level(grid[~on], epsilon, mean.size), mean, cov, scales)
    f = np.minimum(a, b) * np.diff(np.append(grid, 1.0))
    return min(1.0, float(f.sum())), float(f[grid >= u[-1]].sum())


def box_tail(t: NDArray[np.float64], mean: NDArray[np.float64], sd: NDArray[np.float64]) -> float:
    """min(1, Σ_k P(|D_k| > t_k)), D_k ~ N(mean_k, sd_k²) (exact tails; sd_k = 0: 0 when t_k >= |mean_k|)."""
    tot = 0.0
    for tk, mk, sk in zip(t, mean, sd, strict=True):
        if sk > 0:
            tot += float(special.ndtr((-tk - mk) / sk) + special.ndtr((mk - tk) / sk))
        elif tk < abs(mk):
            tot += 1.0
    return min(1.0, tot)


def shifted_product_delta(t: NDArray[np.float64], c: NDArray[np.float64], scales: NDArray[np.float64],
                          epsilon: float) -> float:
    """Certified upper end of δ_K(ε; t): Π_k N(0, c_k) ⊛ Lap(b_k) against the same shifted by t (coordinates with
    t_k = 0 have zero loss and are left out).

    Memoised on the exact bits of (t, c, b, ε) and of the module constants it reads (a pure function of them): a
    calibration's search meets the same corners again (the claim at the accepted scale recomputes the last step's
    corners without a target; 14 % of the corners of ``distpriv reproduce compare``)."""
    key = tuple(np.ascontiguousarray(v, dtype=float).tobytes() for v in (t, c, scales))
    return _corner(*key, float(epsilon), (TAIL_CELLS, KAPPA, KAPPA_EPS, REL_H, TAIL_ETA))


#: Corner values remembered by :func:`shifted_product_delta` (a float each).
CORNER_MEMO_SIZE = 1 << 15


@functools.lru_cache(maxsize=CORNER_MEMO_SIZE)
def _corner(t_b: bytes, c_b: bytes, sc_b: bytes, epsilon: float, consts: tuple[object, ...]) -> float:
    """:func:`shifted_product_delta` on float64 bytes (``consts``: the constants in force, part of the key only)."""
    return _shifted_product_delta(np.frombuffer(t_b), np.frombuffer(c_b), np.frombuffer(sc_b), epsilon)


def _shifted_product_delta(t: NDArray[np.float64], c: NDArray[np.float64], scales: NDArray[np.float64],
                           epsilon: float) -> float:
    """:func:`shifted_product_delta`, computed."""
    kappa = min(KAPPA, KAPPA_EPS * epsilon) if epsilon > 0 else KAPPA
    coords: list[pld.LossCoordinate]
    if TAIL_CELLS:
        coords = [ShiftCoord(math.sqrt(float(ck)), float(tk), float(bk), kappa)
                  for tk, ck, bk in zip(t, c, scales, strict=True) if tk > 0]
    else:
        coords = [lap.GaussLaplaceCoord(0.0, math.sqrt(float(ck)), float(tk), math.sqrt(float(ck)), float(bk),
                                        kappa=kappa) for tk, ck, bk in zip(t, c, scales, strict=True) if tk > 0]
    if not coords:
        return 0.0
    # the grid width from the loss's range (|ℓ_k| <= t_k/b_k, the Laplace factor's Lipschitz constant): the cells'
    # own spread would read their far tails, whose subnormal masses are slow to multiply
    reach = math.sqrt(sum((float(tk) / float(bk)) ** 2 for tk, bk in zip(t, scales, strict=True)))
    h = max(reach * REL_H / len(coords), 1e-12 * max(1.0, abs(epsilon)))
    return float(pld.bracket_at(coords, 0.0, 0.0, epsilon, h, accept=1.0).upper)


#: Whether the 1-D profiles of :func:`shifted_product_delta` end their window in two tail cells (:class:`ShiftCoord`,
#: the default) or lay the full window of :meth:`distpriv.accounting.laplace.GaussLaplaceCoord.delta_cells` (the
#: reference the faster cells are compared against: tests/accounting/test_laplace_common.py, the benchmark).
TAIL_CELLS = True
#: The window of :class:`ShiftCoord` grows until the loss at its ends is within TAIL_ETA · κ of its limits ±t/b.
TAIL_ETA = 0.05


def gl_tail_upper(r: float, s: float, b: float) -> float:
    """P(G + L > r) <= Φ(−r/s) + ½ e^{−r/b + s²/2b²} for G ~ N(0, s²), L ~ Lap(b), r >= 0: P(L > r − G) =
    ½e^{−(r − G)/b} where G < r and <= 1 elsewhere, and E e^{G/b} = e^{s²/2b²}."""
    g = float(special.ndtr(-r / s)) if s > 0 else 0.0
    expo = -r / b + 0.5 * (s / b) ** 2
    if expo >= _LN2:  # the Laplace term alone is >= 1 (and e^expo may overflow, review31b): the trivial bound
        return 1.0
    return min(1.0, g + 0.5 * math.exp(expo))


@dataclass
class ShiftCoord:
    """The 1-D pair of :func:`shifted_product_delta`: P = N(0, s²) ⊛ Lap(b) against Q = N(t, s²) ⊛ Lap(b), t > 0.

    The cells of :class:`distpriv.accounting.laplace.GaussLaplaceCoord` (the same grid and per-cell brackets) on a
    window [lo, hi] around the loss's transition, and two tail cells beyond it. The loss ℓ(y) = ln p(y) − ln p(y − t)
    is non-increasing (p log-concave: (ln p)' is non-increasing) from t/b at −∞ to −t/b at +∞ (module notes, 2.), so
    on (−∞, lo] it lies in [ℓ(lo), t/b] and on [hi, ∞) in [−t/b, ℓ(hi)]; their P-masses are at most
    :func:`gl_tail_upper` (p symmetric). Certified for any window: it only sets the width of the tail cells' loss
    brackets, and it grows (from s²/b + 10s beyond 0 and t: the tail bound's Gaussian term is then Φ(−10)) until the
    loss at its ends is within TAIL_ETA · κ of ±t/b (finer than the κ resolution of the inner cells). The full
    window of ``delta_cells`` reaches max(19s, 92b) beyond both means at the same resolution: ~180/κ cells where
    b >> s, against ~(t + 20s)/κb here; and its cells in the flat tails carry a loss widening of ~κ each, which the
    tail cells (loss at most t/b) do not: on the Adult workload of chen-ohrimenko the bound came out 0.34–1.0× the
    full window's (tests/accounting/test_laplace_common.py compares both with the oracles).
    Only the upper end is certified (``lower`` is 0: a valid lower bound, unused by ``bracket_at(accept=1)``).
    """

    s: float
    t: float
    b: float
    kappa: float
    _c: dict[str, NDArray[np.float64]] | None = field(default=None, repr=False)
    _inf: float = field(default=0.0, repr=False)

    def _losses(self, y1: float, y2: float) -> tuple[float, float]:
        """(ℓ(y1), ℓ(y2)), ℓ(y) = ln p(y) − ln p(y − t), in one density call (elementwise: the floats of one call per
        point)."""
        g = lap.gl_logpdf(np.array([y1, y1 - self.t, y2, y2 - self.t]), 0.0, self.s, self.b)
        return float(g[0] - g[1]), float(g[2] - g[3])

    def cells(self) -> dict[str, NDArray[np.float64]]:
        """mass_hi, lmax, lmin of the inner cells and the two tail cells (memoised on the instance)."""
        if self._c is not None:
            return self._c
        s, t, b, kappa = self.s, self.t, self.b, self.kappa
        lim = t / b
        eta = TAIL_ETA * kappa
        off = s * s / b + 10.0 * s
        for _ in range(40):
            left, right = self._losses(-off, t + off)
            if lim - left <= eta and right + lim <= eta:
                break
            off *= 1.5
        lo, hi = -off, t + off
        coord = lap.GaussLaplaceCoord(0.0, s, t, s, b, kappa=kappa)
        w = coord._window(True)[2]
        y, fp, fq = coord._grid(lo, hi, w, skip_negligible=True)
        wv = np.diff(y)
        _, mass_hi, lmin, lmax = lap._cell_bounds(wv, fp[:-1], fp[1:], fq[:-1], fq[1:], b, s, s)
        ell_lo, ell_hi = float(fp[0] - fq[0]), float(fp[-1] - fq[-1])
        if not (math.isfinite(ell_lo) and math.isfinite(ell_hi) and bool(np.all(np.isfinite(lmax)))):
            # not expected (the log-density is computed in log space); the full window of the reference then
            ref = coord.delta_cells()
            self._c = {k: np.asarray(ref[k]) for k in ("mass_hi", "lmax", "lmin")}
            self._inf = float(ref["tail"])
            return self._c
        slack = 1e-12 * (1.0 + lim)
        tail_l = gl_tail_upper(-lo, s, b) * (1.0 + 1e-12)
        tail_r = gl_tail_upper(hi, s, b) * (1.0 + 1e-12)
        self._c = {"mass_hi": np.concatenate([[tail_l], mass_hi, [tail_r]]),
                   "lmax": np.concatenate([[lim + slack], lmax, [ell_hi + slack]]),
                   "lmin": np.concatenate([[ell_lo - slack], lmin, [-lim - slack]])}
        return self._c

    def loss_range(self, tail: float = pld.TAIL) -> tuple[float, float]:
        c = self.cells()
        return float(c["lmin"].min()), float(c["lmax"].max())

    def spread(self) -> float:
        c = self.cells()
        mid, m = 0.5 * (c["lmin"] + c["lmax"]), c["mass_hi"]
        mean = float(m @ mid) / float(m.sum())
        return max(math.sqrt(max(float(m @ (mid - mean) ** 2) / float(m.sum()), 0.0)), 1e-12)

    def discretise(self, h: float, k_lo: int, k_hi: int) -> pld.Discretised:
        """The upper pmf (each cell's mass rounded up to the grid point at or above its loss's upper end; mass
        above k_hi·h to +∞); the lower pmf is 0."""
        c = self.cells()
        size = k_hi - k_lo + 1
        ku = np.ceil(c["lmax"] / h).astype(np.int64) - k_lo
        keep = ku < size
        inf = float(c["mass_hi"][~keep].sum()) + self._inf
        upper = np.bincount(np.clip(ku[keep], 0, size - 1), weights=c["mass_hi"][keep], minlength=size)
        return pld.Discretised(upper=upper.astype(np.float64, copy=False), inf_mass=inf, lower=np.zeros(size),
                               rel_err=1e-12)


def box_bound(dm: NDArray[np.float64], sa: NDArray[np.float64], sb: NDArray[np.float64], c: NDArray[np.float64],
              scales: NDArray[np.float64], epsilon: float, target: float | None = None, *, cap: float = 1.0,
              first: float | None = None) -> float:
    """The bound of the module notes (3.) for the common factor diag(c): nested boxes combined with the Laplace-shift
    bound of D (:func:`combined`).

    ``cap`` (the least bound of the candidates of C tried before): once the final part below ũ_J (see below)
    exceeds it, this candidate cannot beat it and its partial value (certified, above ``cap``) is returned without
    the remaining levels: the minimum over the candidates is the one of the full computation. ``first``: the
    corner value at the first level (z = 0), if already computed.

    The levels stop at the first J where the part of the integral above ũ_J (which further levels could lower) is at
    most STOP_FRACTION of the whole: any J gives a certified bound. Decision mode (``target``): the levels also stop
    once the value is at most DECIDED · target; and once the part below ũ_J exceeds ABANDON · target, 1 (trivially
    valid) is returned without the remaining levels: that part is final (ũ_j depends on the levels up to j only), so the full
    computation's value exceeds the target too. Otherwise the levels are those of the full computation, so decision
    mode proves the target whenever the full value is at most it.
    """
    mean, cov = shift_law(dm, sa, sb, c)
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    base = np.abs(mean)
    if float(sd.max(initial=0.0)) <= 1e-15 * max(1.0, float(base.max(initial=0.0))):
        # D is deterministic: the bound is δ_K at E D
        return first if first is not None else shifted_product_delta(base, c, scales, epsilon)
    us: list[float] = []
    ts: list[float] = []
    val = 1.0
    b_grid = l1_tail(shift_level(V_GRID, epsilon, mean.size), mean, cov, scales)
    for z in LEVELS:
        ts.append(box_tail(base + z * sd, mean, sd))
        us.append(first if first is not None and z == 0.0 and not us
                  else shifted_product_delta(base + z * sd, c, scales, epsilon))
        val, rest = combined(us, ts, mean, cov, scales, epsilon, b_grid)
        if val - rest > cap * (1.0 + 1e-9):
            return val
        if target is not None and (val <= DECIDED * target or val - rest > ABANDON * target):
            return val if val <= target else 1.0
        if rest <= STOP_FRACTION * val or ts[-1] <= 1e-300:
            break
    return val


def _parts(us: list[float], ts: list[float]) -> tuple[float, float]:
    """(ũ_0 + Σ_{j>=1} T_{j−1}(ũ_j − ũ_{j−1}), T_J(1 − ũ_J)) with ũ_j = min(1, max_{i<=j} u_i) (module notes, 3.)."""
    u = np.minimum(np.maximum.accumulate(np.asarray(us, dtype=float)), 1.0)
    t = np.asarray(ts, dtype=float)
    return float(u[0]) + float(t[:-1] @ np.diff(u)), float(t[-1]) * (1.0 - float(u[-1]))


def nested_sum(us: list[float], ts: list[float]) -> float:
    """The nested-box bound from certified corner values u_j >= δ_K(ε; t_j) and tails T_j >= P(D ∉ S_j) of nested
    boxes (module notes, 3.), or the least single-box bound T_j + u_j if smaller (each is certified)."""
    body, tail = _parts(us, ts)
    single = float(np.min(np.asarray(ts, dtype=float) + np.asarray(us, dtype=float)))
    return min(1.0, body + tail, single)
