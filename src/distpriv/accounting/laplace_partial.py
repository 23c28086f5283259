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
Candidates for C: the fractions COND_FRACTIONS of the largest diagonal under both conditional covariances (a C near
it widens D: the residuals S − C differ relatively more; a small one smooths less).

The joint-law bound (one noised direction, :func:`joint_law_delta`). The chain rule's split is its main slack: the
exact profile of the un-noised marginals alone is δ_⊥(0) = 0.045 on Adult, while the true δ at ε = 1 is 0.014 — the
un-noised loss L_⊥(c) and the conditional mean difference are correlated through c. With d = 1 the exact identity
δ(ε) = E_c[H_{e^{ε − L_⊥(c)}}(P_{B|c} ‖ Q_{B|c})] and the same common factor leave a function of L_⊥ (a quadratic in
standard normals), the 1-D projection αᵀv of c that moves D and the residual w: their joint law is computed on a
2-D grid (every rounding upward; :func:`joint_law_delta`). :func:`distpriv.accounting.release._composition_bound`
with ``tight`` keeps the least of the coupling bound, :func:`chain_bound` and (d = 1) :func:`joint_bound`.

Where it stands (Chen & Ohrimenko's Adult Table 3 workload, DirM (L), one direction in 5-D, compare's income model;
docs/assumptions.md): claimed δ′ at ε = 0.2, 1, 5: coupling 0.0483, 0.0601, 0.116; chain + conditional factor
0.0483, 0.0520, 0.00424; joint law 0.0301, 0.0314, 0.00141; Monte Carlo truth ~0.024, 0.0141, 5.5e-4.

Alternatives measured on Adult (and not used). (a) No split at all: a block-diagonal common factor over all
coordinates, the un-noised ones as a pure Gaussian factor N(0, C_⊥) of K (its shift r = ||C_⊥^{−1/2}t_⊥|| composes
with the Laplace shifts in one product PLD), after the shear y_B − K₀y_⊥ that removes most cross-covariance: certified
(above the Monte Carlo truth on random 3-D models) but 0.151, 0.123, 0.0128 at ε = 0.2, 1, 5 — the box corners put
the four un-noised coordinates at their level at once, and the Gaussian factor's loss is unbounded, so the
Laplace-shift bound cannot cap it. (b) The exact identity δ(ε) = E_c[H_{e^{ε − L_⊥(c)}}(P_{B|c} ‖ Q_{B|c})] with the
same common factor, treating L_⊥ and D through nested boxes without their joint law (telescoping increments of the
product PLD of the un-noised Gaussian pair and the Laplace shift): 0.066, 0.096, 0.018 and ~40 s CPU. The true δ
(0.024, 0.014, 5.5e-4) lies below δ_⊥(0) at ε ≤ 1 because L_⊥ and the conditional mean difference are correlated
through c: the joint-law bound keeps that correlation.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import gaussian as gauss
from . import laplace as lap
from . import laplace_common as lc

#: Box levels z_j (standard deviations beyond |E D|).
LEVELS = lc.LEVELS
#: The levels stop once the part above ũ_J is at most this fraction of the bound (any J is certified).
STOP_FRACTION = 0.02
#: Decision mode (:func:`chain_bound`) stops at the first split whose bound is at most DECIDED × the target.
DECIDED = 0.5
MEMO_SIZE = 2048


def partial_applies(basis: NDArray[np.float64] | None, dim: int) -> bool:
    """True iff the bound is defined here: an orthonormal noise basis with fewer columns than ``dim`` (at least 1)."""
    return basis is not None and basis.ndim == 2 and basis.shape[0] == dim and 1 <= basis.shape[1] < dim


def _min_eig(a: NDArray[np.float64]) -> float:
    return float(np.linalg.eigvalsh(0.5 * (a + a.T))[0])


#: Method name recorded in profiles proven by the chain rule with the conditional common-factor bound.
METHOD = ("loss-splitting chain rule: exact profile of the un-noised directions + common Gaussian factor of the noised "
          "directions' conditional laws (δ <= E[δ of the product N(0, c_k) ⊛ Lap(b_k) shifted by D], D the "
          "conditional mean difference plus the coupled residuals; certified product PLD at nested box corners)")
#: Fractions f of the largest multiple g·diag(min(diag S_P, diag S_Q)) under both conditional covariances tried as C
#: (the least bound is kept). On Adult (DirM (L)) the best was 0.9 at the paper's scale at ε = 5, 0.7 at ε = 1, 0.6
#: at a (5, 1e-3) scale; 1.0 (D widest) and the log-barrier points of :func:`~distpriv.accounting.laplace_common.
#: candidates` (~0.02–0.05 here) were never the least where it mattered.
COND_FRACTIONS: tuple[float, ...] = (0.9, 0.7, 0.5)
#: Splits ε₁/ε of the first grid of :func:`chain_bound` (then golden-section steps around the least).
SPLITS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.4, 0.7, 0.9)
#: Golden-section steps of :func:`chain_bound` around the best split of SPLITS.
GOLDEN_STEPS = 4


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
    cands: list[NDArray[np.float64]] = []
    top = np.minimum(np.diag(s_p), np.diag(s_q))
    ti = np.diag(1.0 / np.sqrt(top))
    g = min(1.0, _min_eig(ti @ s_p @ ti), _min_eig(ti @ s_q @ ti))
    for f in COND_FRACTIONS:
        x = f * g * top * (1.0 - 1e-9)
        if lc.feasible(x, s_p, s_q):
            cands.append(x)
    best = 1.0
    for c in cands:
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
    ``red``: the reduced Gaussian pair of the un-noised coordinates (order (P, Q)). Every split is certified.

    Decision mode (``target``): the search stops at the first split whose bound is at most DECIDED · target;
    otherwise it evaluates the same splits as without a target, in the same order, so it proves the target
    whenever the no-target value is at most it (the claim of a no-target δ′ is what the engine's decision at that
    δ′ proves: ci36 found a 2-D DirM (L) claim of 6.2e-6 that a decision which skipped the splits with
    δ_⊥(ε₁) >= target, and so took another golden-section path, could not prove)."""
    cache: dict[float, float] = {}

    def at(e1: float) -> float:
        if e1 not in cache:
            d1 = gauss.profile_from_reduction(red, e1, rtol=5e-2, atol=1e-6).delta_upper
            if d1 >= 1:
                cache[e1] = 1.0
            else:
                cache[e1] = min(1.0, d1 + conditional_common_delta(mu_p, cov_p, mu_q, cov_q, basis, scales,
                                                                   epsilon - e1))
        return cache[e1]

    grid = [epsilon * f for f in SPLITS]
    for e1 in grid:
        if target is not None and at(e1) <= DECIDED * target:
            return cache[e1], e1
    best = min(grid, key=at)
    k = grid.index(best)
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    for _ in range(GOLDEN_STEPS):  # golden-section refinement around the best grid point (any split is valid)
        m1, m2 = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        if at(m1) <= at(m2):
            hi = m2
        else:
            lo = m1
        if target is not None and min(cache[m1], cache[m2]) <= DECIDED * target:
            break  # decided (the no-target search would go on to a value at most this)
    best = min(cache, key=cache.__getitem__)
    return cache[best], best


# --------------------------------------------------------------------------- the joint-law bound (one direction)
#: Method name of :func:`joint_law_delta`.
JOINT_METHOD = ("exact composition with the un-noised directions' loss (δ = E_c[H_{e^{ε − L_⊥(c)}} of the noised "
                "direction's conditional laws]) + common Gaussian factor of those laws; the joint law of (L_⊥, D) on a "
                "certified 2-D grid (no split of ε)")
#: Grid of :func:`joint_law_delta`: cells per unit of each standard normal coordinate, its reach, the loss grid width
#: relative to ε (at most), the number of shift-table points and of residual cells.
U_CELLS = 40
U_REACH = 8.5
T_POINTS = 120
W_CELLS = 64
#: At most ~L_POINTS loss grid points (the width grows beyond ε/40 where the loss spreads wider).
L_POINTS = 4000
#: Work limit (table points × cells × loss grid points) beyond which :func:`joint_law_delta` returns 1.0 (~1 s CPU).
WORK_LIMIT = 3e8
#: Fractions of the largest common factor tried by :func:`joint_bound` (0.9 was the least on Adult at ε = 1 and 5).
JOINT_FRACTIONS: tuple[float, ...] = (0.9, 0.7)
#: Per-entry pad covering the FFT convolution's round-off (masses sum to at most 1).
FFT_PAD = 1e-13


def _sqrtm(a: NDArray[np.float64]) -> NDArray[np.float64]:
    w, v = np.linalg.eigh(0.5 * (a + a.T))
    return np.asarray((v * np.sqrt(np.clip(w, 0.0, None))) @ v.T)


def joint_law_delta(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, basis: ArrayLike,
                    scales: ArrayLike, epsilon: float, *, c_fraction: float = 0.7) -> float:
    """Certified upper bound on δ_{P‖Q}(ε) for noise on ONE direction (d = 1), keeping the joint law of the
    un-noised loss L_⊥ and the conditional shift D (1.0 where it does not apply).

    δ(ε) = E_{c~P_⊥}[H_{γ(c)}(P_{B|c} ‖ Q_{B|c})], γ(c) = e^{ε − L_⊥(c)} (exact: p = p_⊥ p_{B|c}); for each c joint
    convexity over the coupled residuals gives H_γ <= E_w[δ_K(ε − L_⊥(c); |D|)], D = μ₀ + αᵀv + τw (v, w iid N(0, 1):
    c = μ_⊥P + C_P^{1/2}Rv with R diagonalising the loss, so L_⊥ = Σ_i a_i v_i² + β_i v_i + κ₀). So
    δ(ε) <= E[f(L_⊥, αᵀv, w)], f(ℓ, s, w) = δ_K(ε − ℓ; |μ₀ + s + τw|), non-increasing in ε − ℓ and non-decreasing in
    the shift. Each v_i is cut into cells (mass Φ(b) − Φ(a)); on a cell its loss term is at most its maximum there
    (rounded up to the grid width h) and α_i v_i lies within e_i of the cell's rounded centre; beyond ±U_REACH the
    mass counts as f = 1. The 2-D convolution over the coordinates gives masses of (L̄, S̃) with L_⊥ <= L̄ and
    |αᵀv − S̃| <= Σ e_i; w is cut likewise (shift at the cell's far end); δ_K(ε′; t) is read from the upper pmf of
    the 1-D pair N(0, c) ⊛ Lap(b) against its shift by t (:class:`distpriv.accounting.laplace_common.ShiftCoord`)
    at the next table point t_k >= t (monotone), for all ε′ at once. Every rounding is upward, so the sum is a
    certified upper bound (the floating-point sums aside)."""
    b = np.atleast_2d(np.asarray(basis, dtype=float))
    mp, mq = np.asarray(mu_p, dtype=float).reshape(-1), np.asarray(mu_q, dtype=float).reshape(-1)
    sc = np.asarray(scales, dtype=float).reshape(-1)
    if not partial_applies(b, mp.size) or b.shape[1] != 1 or sc.size != 1 or not sc[0] > 0:
        return 1.0
    sp, sq = np.atleast_2d(np.asarray(cov_p, dtype=float)), np.atleast_2d(np.asarray(cov_q, dtype=float))
    comp = lap.complete_basis(b)
    cp, cq = comp.T @ sp @ comp, comp.T @ sq @ comp
    if min(_min_eig(cp), _min_eig(cq)) <= 0:
        return 1.0
    s_p, s_q = _schur(b, comp, sp), _schur(b, comp, sq)
    c = c_fraction * min(float(s_p[0, 0]), float(s_q[0, 0])) * (1.0 - 1e-9)
    if not c > 0:
        return 1.0
    kp = np.linalg.solve(cp, comp.T @ sp @ b).T  # 1 × (m − 1)
    kq = np.linalg.solve(cq, comp.T @ sq @ b).T
    dperp = comp.T @ (mp - mq)
    mu0 = float((b.T @ (mp - mq))[0] - (kq @ dperp)[0])
    tau = abs(math.sqrt(float(s_p[0, 0]) - c) - math.sqrt(float(s_q[0, 0]) - c))
    half = _sqrtm(cp)
    mmat = half @ np.linalg.solve(cq, half)
    lam, rot = np.linalg.eigh(0.5 * (mmat + mmat.T))
    qa = 0.5 * (lam - 1.0)
    qb = rot.T @ half @ np.linalg.solve(cq, dperp)
    k0 = 0.5 * float(dperp @ np.linalg.solve(cq, dperp)) + 0.5 * (np.linalg.slogdet(cq)[1] - np.linalg.slogdet(cp)[1])
    alpha = rot.T @ half @ (kp - kq).reshape(-1)
    return _joint(qa, qb, k0, alpha, mu0, tau, c, float(sc[0]), float(epsilon))


def _hockey(x: NDArray[np.float64], m: NDArray[np.float64], eps: NDArray[np.float64]) -> NDArray[np.float64]:
    """Σ_i m_i (1 − e^{ε′ − x_i})_+ for every ε′ of ``eps``, by sorted suffix sums: A(ε′) = Σ_{x_i > ε′} m_i and
    B(ε′) = Σ_{x_i > ε′} m_i e^{x_top − x_i} (x_top = max x), value A − e^{ε′ − x_top} B, plus 1e-12·A covering the
    round-off of the difference (each term lies in [0, m_i]); O((n + k) log n) instead of n·k. Where the losses span
    more than 600 (e^{x_top − x} could overflow) the direct n·k sum."""
    if float(x.max() - x.min()) > 600.0:
        return np.asarray(m @ -np.expm1(np.minimum(eps[None, :] - x[:, None], 0.0)))
    order = np.argsort(x)
    xs, ms = x[order], m[order]
    top = float(xs[-1])
    suf_a = np.concatenate([np.cumsum(ms[::-1])[::-1], [0.0]])
    suf_b = np.concatenate([np.cumsum((ms * np.exp(top - xs))[::-1])[::-1], [0.0]])
    k = np.searchsorted(xs, eps, side="right")  # the first x_i > ε′
    a, bsum = suf_a[k], suf_b[k]
    return np.asarray(np.maximum(a - np.exp(eps - top) * bsum, 0.0) + 1e-12 * a)


def _fftconv2(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Full 2-D linear convolution by real FFTs on zero-padded 5-smooth lengths (scipy.fft; scipy.signal's import
    alone costs ~1.8 s): the padding only adds zeros, so the cropped result is the same linear convolution."""
    from scipy import fft as sfft

    shape = (a.shape[0] + b.shape[0] - 1, a.shape[1] + b.shape[1] - 1)
    fast = (sfft.next_fast_len(shape[0], real=True), sfft.next_fast_len(shape[1], real=True))  # 5-smooth lengths
    out = sfft.irfft2(sfft.rfft2(a, s=fast) * sfft.rfft2(b, s=fast), s=fast)
    return np.asarray(out[:shape[0], :shape[1]])


def _joint(qa: NDArray[np.float64], qb: NDArray[np.float64], k0: float, alpha: NDArray[np.float64], mu0: float,
           tau: float, c: float, b: float, epsilon: float) -> float:
    from scipy import special

    n = qa.size
    edges = np.linspace(-U_REACH, U_REACH, int(2 * U_REACH * U_CELLS) + 1)
    cdf = special.ndtr(edges)
    mass = np.diff(cdf)
    out_mass = float(n * 2.0 * special.ndtr(-U_REACH))  # union bound: some |v_i| beyond the reach (f <= 1 there)
    lo, hi = edges[:-1], edges[1:]
    lmax = []
    for i in range(n):
        f_lo, f_hi = qa[i] * lo ** 2 + qb[i] * lo, qa[i] * hi ** 2 + qb[i] * hi
        top = np.maximum(f_lo, f_hi)
        if qa[i] < 0:
            vx = -qb[i] / (2 * qa[i])
            inside = (lo <= vx) & (vx <= hi)
            top = np.where(inside, qb[i] * vx + qa[i] * vx * vx, top)
        lmax.append(top)
    span = max(float(np.ptp(x)) for x in lmax) * n + 1e-12
    h = max(min(max(epsilon, 0.05) / 40.0, span / 400.0), span / L_POINTS)
    smax = float(np.sum(np.abs(alpha))) * U_REACH
    hs = max(smax / 150.0, 1e-9)
    # the 2-D pmf of (L̄, S̃): per coordinate, cells at (ceil(lmax/h), round(α v_mid/hs))
    pmf = np.ones((1, 1))
    kl0 = 0
    ks0 = 0
    err = 0.0
    for i in range(n):
        kl = np.ceil(lmax[i] / h).astype(np.int64)
        mid = 0.5 * (lo + hi)
        ks = np.rint(alpha[i] * mid / hs).astype(np.int64)
        err += abs(alpha[i]) * float(np.max(hi - lo)) / 2.0 + hs / 2.0
        a_l, a_s = int(kl.min()), int(ks.min())
        grid = np.zeros((int(kl.max()) - a_l + 1, int(ks.max()) - a_s + 1))
        np.add.at(grid, (kl - a_l, ks - a_s), mass)
        # FFT round-off (absolute, ~1e-16 × the total mass per entry) is covered by FFT_PAD per entry: a padded
        # array convolved with exact non-negative masses stays above the exact convolution
        pmf = np.clip(_fftconv2(pmf, grid), 0.0, None) + FFT_PAD
        kl0 += a_l
        ks0 += a_s
    ell = (kl0 + np.arange(pmf.shape[0])) * h + k0
    s_vals = (ks0 + np.arange(pmf.shape[1])) * hs
    # w cells: far-end shift per cell
    wedges = np.linspace(-U_REACH, U_REACH, W_CELLS + 1)
    wmass = np.diff(special.ndtr(wedges))
    w_out = float(2.0 * special.ndtr(-U_REACH))
    # the shift table: t_k on [0, t_max]; δ_K(ε′; t_k) for every ε′ = ε − ℓ
    t_max = abs(mu0) + smax + err + tau * U_REACH
    t_grid = np.linspace(0.0, t_max, T_POINTS)
    eps_vals = epsilon - ell
    kappa = min(lc.KAPPA, lc.KAPPA_EPS * max(epsilon, 1e-3))
    if T_POINTS * (t_max + 20.0 * math.sqrt(c)) / (kappa * b) * eps_vals.size > WORK_LIMIT:
        return 1.0  # the shift table would be too costly (small ε or a Laplace scale far below the spread)
    table = np.empty((T_POINTS, eps_vals.size))
    for j, t in enumerate(t_grid):
        if t <= 0:
            table[j] = np.where(eps_vals < 0, -np.expm1(eps_vals), 0.0)  # identical laws: (1 − e^{ε′})_+
            continue
        coord = lc.ShiftCoord(math.sqrt(c), float(t), b, kappa)
        cells = coord.cells()
        x, m_hi = cells["lmax"], cells["mass_hi"]
        table[j] = np.minimum(1.0, _hockey(x, m_hi, np.asarray(eps_vals, dtype=np.float64)) + coord._inf)  # noqa: SLF001 — left-out mass
    # E_w over cells at each s: the shift at the cell's far end, |μ₀ + s ± err + τw| (linear in w: an end point)
    best_t = np.zeros((s_vals.size, W_CELLS))
    for k in range(W_CELLS):
        wl, wh = wedges[k], wedges[k + 1]
        best_t[:, k] = np.max(np.abs(np.stack([mu0 + s_vals - err + tau * wl, mu0 + s_vals - err + tau * wh,
                                                mu0 + s_vals + err + tau * wl, mu0 + s_vals + err + tau * wh])), axis=0)
    # the next table point at or above the shift (δ_K is non-decreasing in it); beyond the table: 1
    idx = np.searchsorted(t_grid, best_t, side="left")
    table1 = np.vstack([table, np.ones((1, eps_vals.size))])
    g = np.einsum("k,ske->se", wmass, table1[np.minimum(idx, T_POINTS)])
    val = float(np.einsum("ls,sl->", pmf, g)) + out_mass + w_out
    return min(1.0, val)


def joint_bound(mu_p: ArrayLike, cov_p: ArrayLike, mu_q: ArrayLike, cov_q: ArrayLike, basis: ArrayLike,
                scales: ArrayLike, epsilon: float, *, target: float | None = None) -> float:
    """The least :func:`joint_law_delta` over JOINT_FRACTIONS (each certified); in decision mode (``target``) the
    fractions stop at the first that proves the target."""
    best = 1.0
    for f in JOINT_FRACTIONS:
        best = min(best, joint_law_delta(mu_p, cov_p, mu_q, cov_q, basis, scales, epsilon, c_fraction=f))
        if target is not None and best <= target:
            break
    return best
