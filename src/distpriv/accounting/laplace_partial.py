"""The common-Gaussian-factor bound when Laplace noise covers fewer directions than the dimension (issue 25).

Setting. F_a ~ N(μ_a, Σ_a), F_b ~ N(μ_b, Σ_b) in m dimensions, output Y = F + B L with B an m×d orthonormal noise
basis, d < m (e.g. DirM (L): one direction), L_k ~ Lap(b_k) independent; B⊥ completes B. The coupling bound of
:func:`distpriv.accounting.release._composition_bound` splits the loss: δ_{P‖Q}(ε) <= δ_⊥(ε₁) + E_{c~P_⊥}[δ_{B|c}(ε₂)]
(ε₁ + ε₂ = ε; δ_⊥ the exact Gaussian profile of the un-noised coordinates c = B⊥ᵀF, δ_{B|c} the profile of the
noised coordinates' conditional laws given c, each plus the Laplace noise) and bounds the second term by randomised
response of the Laplace shift. Here the second term keeps a common Gaussian factor (:func:`conditional_common_delta`).

The conditional bound. Given c, X = BᵀF is Gaussian under each law: X | c ~ N(m_P(c), S_P) with m_P(c) = μ_BP +
K_P(c − μ_⊥P), K_P = Σ_{B⊥,P} C_P⁻¹ (C_P = B⊥ᵀΣ_P B⊥) and S_P the Schur complement (constant in c); likewise for Q.
Take a diagonal C = diag(c_1..c_d) ⪰ 0 with C ⪯ S_P and C ⪯ S_Q. Then X_P | c = m_P(c) + R_P + G, G ~ N(0, C) and
R_P ~ N(0, S_P − C) independent, and the noised output X + L = V_P + (G + L) is the mixture over V_P = m_P(c) + R_P
of the product K = ⊗_k N(0, c_k) ⊛ Lap(b_k) shifted to V_P.

1. *Joint convexity* (for each c) over the Gaussian optimal-transport coupling of R_P and R_Q:
   δ_{B|c}(ε₂) <= E_u[δ_K(ε₂; D_c)], D_c = m_P(c) − m_Q(c) + R_P − R_Q, δ_K(ε; t) = H_{e^ε}(K ‖ K_t), which depends on
   |t_1|..|t_d| only and is non-decreasing in each (:mod:`.laplace_common` notes, 1.–2.).
2. *Averaging over c ~ P_⊥.* With e = c − μ_⊥P ~ N(0, C_P), m_P(c) − m_Q(c) = Δμ_B − K_QΔμ_⊥ + (K_P − K_Q)e is Gaussian
   and independent of the residuals, so E_c E_u[δ_K(ε₂; D_c)] = E[δ_K(ε₂; D)] with D Gaussian, mean Δμ_B − K_QΔμ_⊥
   and covariance (K_P − K_Q)C_P(K_P − K_Q)ᵀ + TTᵀ (T = (S_P − C)^{1/2} − (S_Q − C)^{1/2}R, R the OT rotation): the law
   :func:`distpriv.accounting.laplace.conditional_shift` returns for the covariances Σ − BCBᵀ (subtracting BCBᵀ
   changes neither K nor C_P, and turns S into S − C), which is how it is computed.
3. *Bounding E[δ_K(ε₂; D)]* as in :mod:`.laplace_common` (3.–4.): nested boxes on D with certified product PLDs at
   their corners, combined with the Laplace-shift bound g(Σ|D_k|/b_k) (:func:`~distpriv.accounting.laplace_common.combined`).

The split ε₁ is searched like the coupling bound's (a grid, then golden-section steps; every split is a certified
bound); :func:`chain_bound` returns the least, and the accounting keeps the smaller of it and the coupling bound.
Candidates for C: :func:`distpriv.accounting.laplace_common.candidates` of (S_P, S_Q) and the fractions FRACTIONS of
the largest diagonal under both (a C near it widens D: the residuals S − C differ relatively more).

Where it stands (Chen & Ohrimenko's Adult Table 3 workload, DirM (L), one direction in 5-D; docs/assumptions.md):
the split is now the main slack — the exact profile of the un-noised marginals alone is δ_⊥(0) = 0.045, so at ε = 0.2
and 1 the bound stays near it while the true δ is 0.024 and 0.014.

A second, joint bound (:func:`partial_common_delta`, not used by the accounting) avoids the split: the un-noised
coordinates enter the product as a pure Gaussian factor. It is certified (tests/accounting/test_laplace_partial.py)
but on Adult it was looser than the split at ε = 0.2 and 1 and than the conditional bound at ε = 5 (the box corners
put all un-noised coordinates at their level at once, and the Gaussian factor's loss is unbounded, so the
Laplace-shift bound cannot cap it). Its notes follow.

The joint bound. With Q = [B, B⊥], the output QᵀY = (X_B + L, X_⊥) with X = QᵀF ~ N(m, S)
(m = Qᵀμ, S = QᵀΣQ): a bijection of Y, δ unchanged; so is the shear (y_B, y_⊥) -> (y_B − K₀y_⊥, y_⊥), K₀ the mean
of the two regressions of X_B on X_⊥, which leaves the noise on the first d coordinates and makes the
cross-covariances nearly vanish.

The bound (no loss-splitting chain rule). Take a block-diagonal C = diag(c_1..c_d) ⊕ C_⊥ ⪰ 0 with C ⪯ S_a and
C ⪯ S_b (C_⊥ any positive definite (m − d)×(m − d) block). Then X_a = m_a + R_a + G, G ~ N(0, C), R_a ~ N(0, S_a − C)
independent, so QᵀY_a = V_a + W with V_a = m_a + R_a and W = (G_B + L, G_⊥) ~ K = ⊗_k [N(0, c_k) ⊛ Lap(b_k)] ⊗
N(0, C_⊥): the output law is the mixture over V_a of K shifted to V_a (likewise for b).

1. *Joint convexity* of the hockey-stick divergence H_γ (γ = e^ε) over any coupling of (V_a, V_b):
   δ(ε) <= E[H_γ(K_{V_a} ‖ K_{V_b})] = E[δ_K(ε; D)], D = V_a − V_b, δ_K(ε; t) = H_γ(K ‖ K_t) (translation
   invariance). The residuals are coupled by the Gaussian optimal-transport map
   (:func:`distpriv.accounting.laplace.coupling_shift` with the identity basis), so D ~ N(m_a − m_b, K_D).
2. *The product K against K_t.* Its ⊥ factor N(0, C_⊥) against N(t_⊥, C_⊥) is, after the bijection C_⊥^{−1/2}
   and a rotation, the 1-D pair N(0, 1) against N(r, 1), r = ||C_⊥^{−1/2} t_⊥|| (a Gaussian shift; its loss is
   Gaussian, :class:`distpriv.accounting.gaussian.GaussCoord`). So δ_K(ε; t) = δ of the product of the d 1-D
   Gauss ⊛ Laplace shifts |t_k| (the cells of :class:`distpriv.accounting.laplace_common.ShiftCoord`) and the
   Gaussian shift r, non-decreasing in each |t_k| and in r (each factor at a smaller shift is a post-processing
   of the same factor at a larger one: :mod:`.laplace_common` notes, 2., and the same for the Gaussian shift,
   whose trade-off curve Φ(Φ⁻¹(1 − α) − r) decreases in r; a post-processing of one factor is one of the product).
3. *Nested boxes.* With Y = U ᵀC_⊥^{−1/2} D_⊥ ~ N(ν, diag(λ)) (U the eigenvectors of C_⊥^{−1/2} K_{D⊥⊥} C_⊥^{−1/2})
   and levels 0 = z_0 < z_1 < ..., the boxes S_j = {|D_k| <= |E D_k| + z_j sd(D_k) (k <= d), |Y_i| <= |ν_i| +
   z_j √λ_i} are nested; on S_j, |t_k| and r are at most the corner values, so δ_K <= u_j (the certified product
   PLD of 2. at the corner, :func:`distpriv.accounting.pld.bracket_at`); T_j >= P(D ∉ S_j) by the union bound
   with exact Gaussian tails (for the r part also Gaussian concentration of r, an L-Lipschitz function of a
   standard normal with L = max √λ_i and E r <= (||ν||² + Σλ)^{1/2}, where smaller). Then
   δ(ε) <= ũ_0 + Σ_j T_{j−1}(ũ_j − ũ_{j−1}) + T_J(1 − ũ_J) (:func:`distpriv.accounting.laplace_common.nested_sum`).
   The Laplace-shift bound of :func:`~distpriv.accounting.laplace_common.combined` is not used: the Gaussian factor's
   loss is unbounded.

Against the chain rule of :func:`distpriv.accounting.release._composition_bound` (δ_⊥(ε₁) plus a bound for the
conditional laws of the noised directions at ε − ε₁): the un-noised directions enter the same product PLD as the
noised ones (their losses compose exactly, no split of ε), and the noised directions keep a Gaussian factor. On the
Adult workload of Chen & Ohrimenko (DirM (L), one noise direction, 5-D statistics) the exact profile of the
un-noised marginals alone is δ_⊥(0) = 0.045, so any split pays for it: docs/assumptions.md gives the numbers.

Choice of C (any feasible C is certified; the least bound over a few candidates is kept): C_⊥ = (1 − κ)λZ with Z
the mean of the two ⊥ blocks and λ the largest factor with λZ ⪯ both, for κ in KAPPAS; given C_⊥, the noised block
may take any diagonal c ⪯ the Schur complements S_BB − S_B⊥(S_⊥⊥ − C_⊥)⁻¹S_⊥B of both laws (the block form of
C ⪯ S), of which the fractions FRACTIONS of the largest feasible one along the diagonal are tried (a c near the
largest makes the residuals' OT coupling spread D; a smaller one smooths less).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import gaussian as gauss
from . import laplace as lap
from . import laplace_common as lc
from . import pld

#: Method name of the joint bound (:func:`partial_common_delta`; not used by the accounting: looser on Adult).
JOINT_METHOD = ("common Gaussian factor over all coordinates (Laplace on fewer directions): δ <= E[δ of the product "
          "N(0, c_k) ⊛ Lap(b_k) ⊗ N(0, C_⊥) shifted by D] for a Gaussian coupling of the residual query laws (joint "
          "convexity; certified product PLD at nested box corners; no loss-splitting chain rule)")
#: Fractions κ of the un-noised block left to the residuals: C_⊥ = (1 − κ)λZ.
KAPPAS: tuple[float, ...] = (0.02, 0.1, 0.3, 0.6)
#: Fractions of the largest feasible diagonal of the noised block tried as c.
FRACTIONS: tuple[float, ...] = (0.5, 0.8, 0.95)
#: Box levels z_j (standard deviations beyond |E D|).
LEVELS = lc.LEVELS
#: The levels stop once the part above ũ_J is at most this fraction of the bound (any J is certified).
STOP_FRACTION = 0.02
#: Decision mode stops a candidate once its bound is at most DECIDED × the target.
DECIDED = 0.5
MEMO_SIZE = 2048


def partial_applies(basis: NDArray[np.float64] | None, dim: int) -> bool:
    """True iff the bound is defined here: an orthonormal noise basis with fewer columns than ``dim`` (at least 1)."""
    return basis is not None and basis.ndim == 2 and basis.shape[0] == dim and 1 <= basis.shape[1] < dim


def partial_common_delta(mu_a: ArrayLike, cov_a: ArrayLike, mu_b: ArrayLike, cov_b: ArrayLike, basis: ArrayLike,
                         scales: ArrayLike, epsilon: float, *, target: float | None = None) -> float:
    """Certified upper bound on δ(ε) of F_a + BL against F_b + BL (module notes), 1.0 where it does not apply
    (positive definite covariances needed). Symmetric in the order of the pair; memoised on the exact input bits.
    ``target`` (decision mode): the candidates of C stop at the first whose bound is at most DECIDED · target."""
    b = np.atleast_2d(np.asarray(basis, dtype=float))
    ma, mb = np.asarray(mu_a, dtype=float).reshape(-1), np.asarray(mu_b, dtype=float).reshape(-1)
    if not partial_applies(b, ma.size):
        return 1.0
    sc = np.asarray(scales, dtype=float).reshape(-1)
    if sc.size != b.shape[1] or not bool(np.all(sc > 0)) or not math.isfinite(float(epsilon)):
        return 1.0
    q = np.hstack([b, lap.complete_basis(b)])
    dm = q.T @ (ma - mb)
    sa = q.T @ np.atleast_2d(np.asarray(cov_a, dtype=float)) @ q
    sb = q.T @ np.atleast_2d(np.asarray(cov_b, dtype=float)) @ q
    d = b.shape[1]
    # the shear (y_B, y_⊥) -> (y_B − K₀y_⊥, y_⊥): a bijection of the output common to both laws (δ unchanged) that
    # leaves the noise BL on the first d coordinates; K₀ the mean of the two regressions of X_B on X_⊥, so that the
    # cross-covariances nearly vanish and a block-diagonal C can be large (module notes, "Choice of C")
    try:
        k0 = 0.5 * sum(np.linalg.solve(s[d:, d:], s[d:, :d]).T for s in (sa, sb))
    except np.linalg.LinAlgError:
        return 1.0
    shear = np.eye(dm.size)
    shear[:d, d:] = -k0
    dm, sa, sb = shear @ dm, shear @ sa @ shear.T, shear @ sb @ shear.T
    sa, sb = 0.5 * (sa + sa.T), 0.5 * (sb + sb.T)
    ka, kb = sa.tobytes(), sb.tobytes()
    if kb < ka:  # symmetric (module notes, 1.): one memo entry for both orders
        sa, sb, dm, ka, kb = sb, sa, -dm, kb, ka
    dm = np.ascontiguousarray(dm + 0.0)
    tgt = -1.0 if target is None else float(target)
    return _bound(dm.tobytes(), ka, kb, np.ascontiguousarray(sc).tobytes(), int(dm.size), int(sc.size),
                  float(epsilon), tgt)


@functools.lru_cache(maxsize=MEMO_SIZE)
def _bound(dm_b: bytes, sa_b: bytes, sb_b: bytes, sc_b: bytes, m: int, d: int, epsilon: float,
           target: float) -> float:
    dm = np.frombuffer(dm_b)
    sa, sb = np.frombuffer(sa_b).reshape(m, m), np.frombuffer(sb_b).reshape(m, m)
    sc = np.frombuffer(sc_b)
    best = 1.0
    for c in candidates(sa, sb, d):
        best = min(best, candidate_bound(dm, sa, sb, c, sc, epsilon))
        if 0 <= target and best <= DECIDED * target:
            break
    return best


def _min_eig(a: NDArray[np.float64]) -> float:
    return float(np.linalg.eigvalsh(0.5 * (a + a.T))[0])


def _inv_sqrt(a: NDArray[np.float64]) -> NDArray[np.float64]:
    w, v = np.linalg.eigh(0.5 * (a + a.T))
    return np.asarray((v / np.sqrt(w)) @ v.T)


def candidates(sa: NDArray[np.float64], sb: NDArray[np.float64], d: int) -> list[NDArray[np.float64]]:
    """Feasible block-diagonal C = diag(c) ⊕ C_⊥ (module notes, "Choice of C"), each checked: C ⪯ S_a, C ⪯ S_b."""
    pa, pb = sa[d:, d:], sb[d:, d:]
    z = 0.5 * (pa + pb)
    if min(_min_eig(pa), _min_eig(pb), _min_eig(sa), _min_eig(sb)) <= 0:
        return []
    zi = _inv_sqrt(z)
    lam = min(_min_eig(zi @ pa @ zi), _min_eig(zi @ pb @ zi))
    out: list[NDArray[np.float64]] = []
    for kappa in KAPPAS:
        cp = (1.0 - kappa) * lam * z
        schur = [s[:d, :d] - s[:d, d:] @ np.linalg.solve(s[d:, d:] - cp, s[d:, :d]) for s in (sa, sb)]
        if min(_min_eig(schur[0]), _min_eig(schur[1])) <= 0:
            continue
        # the largest multiple of the diagonal min(diag) under both Schur complements
        top = np.minimum(np.diag(schur[0]), np.diag(schur[1]))
        ti = np.diag(1.0 / np.sqrt(top))
        g = min(1.0, _min_eig(ti @ schur[0] @ ti), _min_eig(ti @ schur[1] @ ti))
        for f in FRACTIONS:
            c = np.zeros((sa.shape[0],) * 2)
            c[:d, :d] = np.diag(f * g * top)
            c[d:, d:] = cp
            for shrink in (1.0 - 1e-9, 1.0 - 1e-6, 0.999, 0.99):
                x = c * shrink
                if _min_eig(sa - x) >= 0 and _min_eig(sb - x) >= 0:
                    out.append(x)
                    break
    return out


def corner_delta(t: NDArray[np.float64], r: float, c: NDArray[np.float64], scales: NDArray[np.float64],
                 epsilon: float) -> float:
    """Certified upper end of δ_K(ε; t, r): the product of the 1-D pairs N(0, c_k) ⊛ Lap(b_k) against the same shifted
    by t_k, and N(r, 1) against N(0, 1) (module notes, 2.)."""
    kappa = min(lc.KAPPA, lc.KAPPA_EPS * epsilon) if epsilon > 0 else lc.KAPPA
    coords: list[pld.LossCoordinate] = [lc.ShiftCoord(math.sqrt(float(ck)), float(tk), float(bk), kappa)
                                        for tk, ck, bk in zip(t, c, scales, strict=True) if tk > 0]
    if r > 0:
        coords.append(gauss.GaussCoord(float(r), 1.0, 1.0))
    if not coords:
        return 0.0
    reach = math.sqrt(sum((float(tk) / float(bk)) ** 2 for tk, bk in zip(t, scales, strict=True)) + r * r
                      + (r * r / 2.0) ** 2)
    h = max(reach * lc.REL_H / len(coords), 1e-12 * max(1.0, abs(epsilon)))
    return float(pld.bracket_at(coords, 0.0, 0.0, epsilon, h, accept=1.0).upper)


def candidate_bound(dm: NDArray[np.float64], sa: NDArray[np.float64], sb: NDArray[np.float64],
                    cmat: NDArray[np.float64], scales: NDArray[np.float64], epsilon: float) -> float:
    """The nested-box bound of the module notes (3.) for one block-diagonal common factor ``cmat``."""
    d = scales.size
    m = dm.size
    sh = lap.coupling_shift(dm, sa - cmat, np.zeros(m), sb - cmat, np.eye(m))
    mean, cov = sh.mean, 0.5 * (sh.cov + sh.cov.T)
    c = np.diag(cmat)[:d]
    sd_b = np.sqrt(np.clip(np.diag(cov)[:d], 0.0, None))
    base_b = np.abs(mean[:d])
    w = _inv_sqrt(cmat[d:, d:])
    ky = w @ cov[d:, d:] @ w
    lam, u = np.linalg.eigh(0.5 * (ky + ky.T))
    lam = np.clip(lam, 0.0, None)
    nu = u.T @ (w @ mean[d:])
    sd_y = np.sqrt(lam)
    base_y = np.abs(nu)
    er = math.sqrt(float(nu @ nu) + float(lam.sum()))
    lip = math.sqrt(float(lam.max(initial=0.0)))
    us: list[float] = []
    ts: list[float] = []
    val = 1.0
    for z in LEVELS:
        tb = base_b + z * sd_b
        ty = base_y + z * sd_y
        r = float(np.linalg.norm(ty))
        tail_y = lc.box_tail(ty, nu, sd_y)
        if lip > 0 and r > er:
            tail_y = min(tail_y, math.exp(-((r - er) ** 2) / (2.0 * lip * lip)))
        ts.append(min(1.0, lc.box_tail(tb, mean[:d], sd_b) + tail_y))
        us.append(corner_delta(tb, r, c, scales, epsilon))
        val = lc.nested_sum(us, ts)
        rest = ts[-1] * (1.0 - min(1.0, max(us)))  # the part above ũ_J, which further levels could lower
        if rest <= STOP_FRACTION * val or ts[-1] <= 1e-300:
            break
    return val


# --------------------------------------------------------------------------- the conditional bound (used)
#: Method name recorded in profiles proven by the chain rule with the conditional common-factor bound.
METHOD = ("loss-splitting chain rule: exact profile of the un-noised directions + common Gaussian factor of the noised "
          "directions' conditional laws (δ <= E[δ of the product N(0, c_k) ⊛ Lap(b_k) shifted by D], D the "
          "conditional mean difference plus the coupled residuals; certified product PLD at nested box corners)")
#: Fractions of the largest diagonal under both conditional covariances tried as C (besides
#: :func:`distpriv.accounting.laplace_common.candidates`); on Adult 0.9 beat 1.0 and 0.7.
COND_FRACTIONS: tuple[float, ...] = (0.9, 0.7)
#: Splits ε₁/ε of the first grid of :func:`chain_bound` (then golden-section steps around the least).
SPLITS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.4, 0.7)


def _schur(basis: NDArray[np.float64], comp: NDArray[np.float64], cov: NDArray[np.float64]) -> NDArray[np.float64]:
    c = comp.T @ cov @ comp
    k = np.linalg.solve(c, comp.T @ cov @ basis).T
    s = basis.T @ cov @ basis - k @ c @ k.T
    return np.asarray(0.5 * (s + s.T))


def conditional_common_delta(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, basis: ArrayLike,
                             scales: ArrayLike, epsilon: float) -> float:
    """Certified upper bound on E_{c~P_⊥}[δ_{B|c}(ε)] (module notes, 1.–3.): the second term of the chain rule, for
    the order (P, Q). 1.0 where it does not apply (singular covariances of the un-noised coordinates, or no
    positive common factor). Memoised on the exact input bits."""
    b = np.atleast_2d(np.asarray(basis, dtype=float))
    mp = np.ascontiguousarray(np.asarray(mu_p, dtype=float).reshape(-1))
    mq = np.ascontiguousarray(np.asarray(mu_q, dtype=float).reshape(-1))
    sc = np.ascontiguousarray(np.asarray(scales, dtype=float).reshape(-1))
    if (not partial_applies(b, mp.size) or sc.size != b.shape[1] or not bool(np.all(sc > 0))
            or not math.isfinite(float(epsilon))):
        return 1.0
    sp = np.ascontiguousarray(np.atleast_2d(np.asarray(cov_p, dtype=float)))
    sq = np.ascontiguousarray(np.atleast_2d(np.asarray(cov_q, dtype=float)))
    return _cond(mp.tobytes(), sp.tobytes(), mq.tobytes(), sq.tobytes(), np.ascontiguousarray(b).tobytes(),
                 sc.tobytes(), int(mp.size), int(sc.size), max(float(epsilon), 0.0))


@functools.lru_cache(maxsize=MEMO_SIZE)
def _cond(mp_b: bytes, sp_b: bytes, mq_b: bytes, sq_b: bytes, b_b: bytes, sc_b: bytes, m: int, d: int,
          epsilon: float) -> float:
    mp, mq = np.frombuffer(mp_b), np.frombuffer(mq_b)
    sp, sq = np.frombuffer(sp_b).reshape(m, m), np.frombuffer(sq_b).reshape(m, m)
    basis = np.frombuffer(b_b).reshape(m, d)
    sc = np.frombuffer(sc_b)
    comp = lap.complete_basis(basis)
    try:
        s_p, s_q = _schur(basis, comp, sp), _schur(basis, comp, sq)
    except np.linalg.LinAlgError:
        return 1.0
    if min(_min_eig(s_p), _min_eig(s_q)) <= 0:
        return 1.0
    cands = lc.candidates(s_p, s_q)
    top = np.minimum(np.diag(s_p), np.diag(s_q))
    ti = np.diag(1.0 / np.sqrt(top))
    g = min(1.0, _min_eig(ti @ s_p @ ti), _min_eig(ti @ s_q @ ti))
    for f in COND_FRACTIONS:
        x = f * g * top * (1.0 - 1e-9)
        if lc.feasible(x, s_p, s_q):
            cands.append(x)
    best = 1.0
    for c in cands:
        if not bool(np.any(c > 0)):
            continue  # C = 0: the coupling bound's own argument, already computed by the caller
        bcb = basis @ np.diag(c) @ basis.T
        mean, cov = lap.conditional_shift(mp, sp - bcb, mq, sq - bcb, basis)
        best = min(best, mixture_bound(mean, cov, c, sc, epsilon, cap=best))
    return best


def mixture_bound(mean: NDArray[np.float64], cov: NDArray[np.float64], c: NDArray[np.float64],
                  scales: NDArray[np.float64], epsilon: float, *, cap: float = 1.0) -> float:
    """E[δ_K(ε; D)] <= the nested boxes combined with the Laplace-shift bound, D ~ N(``mean``, ``cov``), K =
    ⊗ N(0, c_k) ⊛ Lap(b_k) (:func:`distpriv.accounting.laplace_common.box_bound` for a given law of D). ``cap``: once
    the final part below ũ_J exceeds it, the partial (certified, larger) value is returned."""
    cov = 0.5 * (cov + cov.T)
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    base = np.abs(mean)
    if float(sd.max(initial=0.0)) <= 1e-15 * max(1.0, float(base.max(initial=0.0))):
        return lc.shifted_product_delta(base, c, scales, epsilon)
    us: list[float] = []
    ts: list[float] = []
    val = 1.0
    b_grid = lc.l1_tail(lc.shift_level(lc.V_GRID, epsilon, mean.size), mean, cov, scales)
    for z in LEVELS:
        ts.append(lc.box_tail(base + z * sd, mean, sd))
        us.append(lc.shifted_product_delta(base + z * sd, c, scales, epsilon))
        val, rest = lc.combined(us, ts, mean, cov, scales, epsilon, b_grid)
        if val - rest > cap * (1.0 + 1e-9):
            return val
        if rest <= STOP_FRACTION * val or ts[-1] <= 1e-300:
            break
    return val


def chain_bound(red: gauss.Reduction, mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike,
                basis: ArrayLike, scales: ArrayLike, epsilon: float, *,
                target: float | None = None) -> tuple[float, float]:
    """(min over splits ε₁ of δ_⊥(ε₁) + :func:`conditional_common_delta` at ε − ε₁, the split): the loss-splitting
    chain rule of :func:`distpriv.accounting.release._composition_bound` with the conditional common-factor bound.
    ``red``: the reduced Gaussian pair of the un-noised coordinates (order (P, Q)). Decision mode (``target``):
    stops at the first split whose bound is at most DECIDED · target (every split is certified)."""
    cache: dict[float, float] = {}

    def at(e1: float) -> float:
        if e1 not in cache:
            d1 = gauss.profile_from_reduction(red, e1, rtol=5e-2, atol=1e-6).delta_upper
            cache[e1] = 1.0 if d1 >= 1 else min(1.0, d1 + conditional_common_delta(
                mu_p, cov_p, mu_q, cov_q, basis, scales, epsilon - e1))
        return cache[e1]

    grid = [epsilon * f for f in SPLITS]
    for e1 in grid:
        if target is not None and at(e1) <= DECIDED * target:
            return cache[e1], e1
    best = min(grid, key=at)
    k = grid.index(best)
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    for _ in range(4):  # golden-section refinement around the best grid point (any split is valid)
        m1, m2 = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        if at(m1) <= at(m2):
            hi = m2
        else:
            lo = m1
    best = min(cache, key=cache.__getitem__)
    return cache[best], best
