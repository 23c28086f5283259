"""OptM: the Gaussian noise of least expected squared error that meets the exact (ε, δ) for every pair of Ψ.

Setting (Chen & Ohrimenko Sec. 5.3 and App. B): f_θ = N(μ_θ, Σ_θ) and the release is F + Z,
Z ~ N(0, Σ_Z). When Σ_θi = Σ_θj = Σ the two output laws N(μ_θi, Σ + Σ_Z), N(μ_θj, Σ + Σ_Z) are a
1-D Gaussian shift of Mahalanobis length D, and (ε, δ) holds iff D <= D*(ε, δ), the analytic
Gaussian threshold (Balle & Wang 2018 Thm 8; :func:`distpriv.calibration.gaussian_max_distance`).
By the Schur complement (Σ + Σ_Z ≻ 0)

    Δμᵀ (Σ + Σ_Z)⁻¹ Δμ <= D*²   ⟺   [[Σ + Σ_Z, Δμ], [Δμᵀ, D*²]] ⪰ 0,

a linear matrix inequality in Σ_Z. So the least noise

    minimise tr(W Σ_Z)  subject to  Σ_Z ⪰ 0  and the LMI for every pair of Ψ

(W = I: E||Z||² = tr Σ_Z; W = diag(weights) or a given positive-definite matrix otherwise) is a
semidefinite program, solved with cvxpy and Clarabel (an interior-point conic solver). The
ExpM (G), DirM (G), EigM and DauM noises of the papers are feasible points of the same program,
so its optimum is never larger than theirs.

Certification. The solver's answer is not trusted:

1. the SDP is solved against D*(1 − 10⁻⁷); the Mahalanobis distance of every pair is then
   recomputed in floating point and, if the solver's tolerance left it above D*, Σ_Z is scaled up
   (post-processing) until it is not — the "padding";
2. the exact privacy profile of the output laws, every pair in both orders
   (:func:`distpriv.mechanisms.exact.account_gaussian`: closed form for equal covariances, a
   certified PLD bracket otherwise), confirms δ(ε) <= δ and tops the noise up where it does not.

With unequal covariances (Σ_θi ≠ Σ_θj) the Mahalanobis condition is no longer exact; the LMI is
imposed under both Σ_θi and Σ_θj (the equal-covariance condition under each, a heuristic
starting point) and step 2, the exact profile of the true output laws, tops the noise up. The
papers' four Gaussian noises go through the same accounting, and OptM returns the one of the
five with the least tr(W Σ_Z) — never worse than the best paper mechanism.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array
from ..calibration import gaussian_max_distance
from ..errors import DistPrivError, InvalidParameterError, InvalidTypeError
from ..guarantees import Calibration, Guarantee
from ..models import EmpiricalModel, GaussianModel, pair_stats
from ..noise import NoiseLaw
from ._common import GAUSSIAN, MODEL_IS_TRUTH, Inputs, as_gaussian, covariance_gap
from .base import Mechanism

#: The papers' Gaussian mechanisms OptM compares itself with (Chen & Ohrimenko Sec. 5, App. B).
PAPER_CANDIDATES: tuple[str, ...] = ("expm-gauss", "dirm-gauss", "eigm", "daum")
#: Relative margin below D* the SDP is solved against (absorbs the solver's tolerance).
MARGIN = 1e-7


def weight_matrix(weights: ArrayLike | None, dim: int) -> NDArray[np.float64]:
    """W of the objective tr(W Σ_Z): I, diag(weights) for a positive vector, or a positive-definite matrix."""
    if weights is None:
        return np.eye(dim)
    w = check_array(weights, "weights")
    if w.ndim == 1:
        if w.shape[0] != dim:
            raise InvalidTypeError(f"expected {dim} weights (one per statistic), got {w.shape[0]}", argument="weights")
        if not np.all(w > 0):
            raise InvalidParameterError("every weight must be > 0", argument="weights")
        return np.diag(w)
    if w.ndim != 2 or w.shape != (dim, dim):
        raise InvalidTypeError(f"expected a vector of length {dim} or a {dim}x{dim} matrix, got shape {w.shape}", argument="weights")
    if not np.allclose(w, w.T, rtol=1e-10, atol=1e-12 * float(np.abs(w).max(initial=1.0))):
        raise InvalidParameterError("the weight matrix must be symmetric", argument="weights")
    sym = 0.5 * (w + w.T)
    if float(np.linalg.eigvalsh(sym)[0]) <= 0:
        raise InvalidParameterError("the weight matrix must be positive definite", argument="weights")
    return sym


def _constraints(g: GaussianModel, inp: Inputs) -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """(Σ, Δμ) of every LMI: each pair of Ψ under Σ_θi and, when it differs, under Σ_θj."""
    out: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []
    for a, b in inp.pairs:
        d = g.mean(a) - g.mean(b)
        if not np.any(d != 0):
            continue
        sa, sb = g.covariance(a), g.covariance(b)
        out.append((sa, d))
        if not np.array_equal(sa, sb):
            out.append((sb, d))
    return out


def _mahalanobis2(cov: NDArray[np.float64], d: NDArray[np.float64]) -> float:
    """dᵀ cov⁻¹ d (pseudo-inverse; ``inf`` when d leaves the range of cov)."""
    w, u = np.linalg.eigh(0.5 * (cov + cov.T))
    tol = 1e-12 * max(float(w.max(initial=0.0)), 1e-300)
    c = u.T @ d
    keep = w > tol
    if np.linalg.norm(c[~keep]) > 1e-9 * max(float(np.linalg.norm(d)), 1e-300):
        return math.inf
    return float(np.sum(c[keep] ** 2 / w[keep]))


def max_distance2(cons: list[tuple[NDArray[np.float64], NDArray[np.float64]]], noise: NDArray[np.float64]) -> float:
    """max over the constraints of Δμᵀ(Σ + Σ_Z)⁻¹Δμ (0 without constraints)."""
    return max((_mahalanobis2(s + noise, d) for s, d in cons), default=0.0)


def solve_sdp(cons: list[tuple[NDArray[np.float64], NDArray[np.float64]]], weight: NDArray[np.float64],
              d_star: float) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """Solve min tr(W Σ_Z) s.t. Σ_Z ⪰ 0, [[Σ + Σ_Z, Δμ], [Δμᵀ, D²]] ⪰ 0 for every (Σ, Δμ) in ``cons``.

    The problem is first put in whitened coordinates x' = T x, T = (Σ̄ + τI)^{-1/2} (Σ̄ the mean
    of the constraint covariances), which leaves every LMI a congruence of itself and the
    objective tr(W' Σ'_Z) with W' = T⁻ᵀ W T⁻¹, so that the solver sees numbers of order one.
    Returns Σ_Z (symmetrised, eigenvalues clipped at 0) and solver statistics.
    """
    import cvxpy as cp  # lazy: ~0.8 s to import

    m = weight.shape[0]
    if not cons:
        return np.zeros((m, m)), {"status": "no constraint (every pair has equal means)", "solver": None}
    sbar = np.mean(np.stack([s for s, _ in cons]), axis=0)
    scale = max(float(np.trace(sbar)) / m, max(float(d @ d) for _, d in cons) / (d_star * d_star) / m, 1e-300)
    w, u = np.linalg.eigh(0.5 * (sbar + sbar.T))
    w = np.clip(w, 0.0, None) + 1e-3 * scale
    t = (u / np.sqrt(w)) @ u.T  # T = (Σ̄ + τI)^{-1/2}
    t_inv = (u * np.sqrt(w)) @ u.T
    w_white = t_inv @ weight @ t_inv  # T⁻ᵀ W T⁻¹ (T symmetric)
    w_white = 0.5 * (w_white + w_white.T)
    w_white /= max(float(np.trace(w_white)) / m, 1e-300)
    x = cp.Variable((m, m), PSD=True)
    d2 = d_star * d_star
    constraints = []
    for s, d in cons:
        sw = t @ s @ t
        sw = 0.5 * (sw + sw.T)
        dw = (t @ d).reshape(m, 1)
        block = cp.bmat([[sw + x, dw], [dw.T, np.array([[d2]])]])
        constraints.append(0.5 * (block + block.T) >> 0)
    prob = cp.Problem(cp.Minimize(cp.trace(w_white @ x)), constraints)
    prob.solve(solver=cp.CLARABEL)
    if x.value is None or prob.status not in ("optimal", "optimal_inaccurate"):
        raise InvalidParameterError(f"model: the OptM semidefinite program was not solved (solver status {prob.status!r})")
    xw = 0.5 * (np.asarray(x.value, dtype=float) + np.asarray(x.value, dtype=float).T)
    ev, ue = np.linalg.eigh(xw)
    xw = (ue * np.clip(ev, 0.0, None)) @ ue.T
    noise = t_inv @ xw @ t_inv
    return 0.5 * (noise + noise.T), {"status": str(prob.status), "solver": "CLARABEL",
                                     "iterations": int(getattr(prob.solver_stats, "num_iters", 0) or 0)}


def _pad(cons: list[tuple[NDArray[np.float64], NDArray[np.float64]]], noise: NDArray[np.float64],
         d_star: float) -> tuple[NDArray[np.float64], float]:
    """Least scaling k >= 1 of Σ_Z (bisection) with every Mahalanobis distance <= D*; returns (k²Σ_Z, k)."""
    goal = d_star * d_star
    if max_distance2(cons, noise) <= goal:
        return noise, 1.0
    hi = 2.0
    while max_distance2(cons, hi * hi * noise) > goal:
        hi *= 2.0
        if hi > 1e8:
            raise InvalidParameterError("model: the OptM solution cannot be padded to meet D* (solver failure)")
    lo = 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if max_distance2(cons, mid * mid * noise) <= goal else (mid, hi)
        if hi - lo <= 1e-12 * hi:
            break
    return hi * hi * noise, hi


def _candidate(inp: Inputs, cov: NDArray[np.float64], source: str, guarantee: Guarantee,
               details: dict[str, Any]) -> Mechanism:
    """An OptM mechanism with noise ``cov``, accounted exactly (and topped up) under the Gaussian (fit) model."""
    from .exact import account_gaussian

    mech = Mechanism("optm", "OptM (G)", cov.shape[0], NoiseLaw.gaussian(0.5 * (cov + cov.T)),
                     replace(guarantee, notes=(*guarantee.notes, f"noise shape: {source}")),
                     details={**details, "source": source})
    return account_gaussian(mech, inp)


def optm(inp: Inputs, *, weights: ArrayLike | None = None) -> Mechanism:
    """OptM (G): the least tr(W Σ_Z) Gaussian noise meeting the exact (ε, δ) on every pair (module docstring).

    ``weights``: W = diag(weights) (positive) or a positive-definite (m, m) matrix; default I, so
    the objective is E||Z||² = tr Σ_Z in the model's units. Calibration must be ``"exact"``.
    An :class:`~distpriv.EmpiricalModel` enters through its Gaussian fit (stated in the guarantee).
    """
    if inp.calibration != Calibration.EXACT:
        raise InvalidParameterError("OptM is calibrated by the exact profile only; use calibration='exact'",
                                    argument="calibration")
    g = as_gaussian(inp.model)
    m = g.dim
    weight = weight_matrix(weights, m)
    d_star = gaussian_max_distance(inp.epsilon, inp.delta)
    cons = _constraints(g, inp)
    raw, stats = solve_sdp(cons, weight, d_star * (1.0 - MARGIN))
    noise, pad = _pad(cons, raw, d_star)
    st = pair_stats(g, inp.pairs)
    base = Guarantee(inp.epsilon, inp.delta, "optm", calibration=inp.calibration, pairs=inp.pairs,
                     assumptions=(GAUSSIAN, MODEL_IS_TRUTH),
                     theorem="the Mahalanobis condition (Chen & Ohrimenko Cor. B.1 with Balle & Wang 2018 Thm 8) "
                             "behind OptM's least-trace semidefinite program; claim certified by the exact profile")
    details: dict[str, Any] = {"d_max": d_star, "delta_e2": st.l2, "weights": weight, "solver": stats,
                               "padding_factor": pad, "objective": "tr(W Σ_Z)"}
    sdp_source = "semidefinite program (cvxpy + Clarabel)"
    sdp: Mechanism | None = None
    if covariance_gap(g, inp.pairs) > 1e-12:
        # unequal covariances: scaling the SDP's (often low-rank) shape can need far more noise than adding a
        # little everywhere. The least isotropic addition is found first; the scaled shape is then accounted
        # only if the scaling that costs as much still meets δ (else it cannot be the cheaper of the two).
        iso = _isotropic_variant(g, inp, noise)
        if iso is not None:
            sdp = _try_candidate(inp, iso, sdp_source + " plus the least isotropic Gaussian noise meeting the exact "
                                 "profile", base, details)
        if sdp is None or _scaling_may_win(g, inp, noise, weight, float(np.trace(weight @ sdp.noise_covariance))):
            scaled = _try_candidate(inp, noise, sdp_source, base, details)
            if scaled is not None and (sdp is None or np.trace(weight @ scaled.noise_covariance)
                                       < np.trace(weight @ sdp.noise_covariance)):
                sdp = scaled
    else:
        sdp = _try_candidate(inp, noise, sdp_source, base, details)
    candidates: dict[str, Mechanism] = {} if sdp is None else {"optm": sdp}
    for name in PAPER_CANDIDATES:
        cand = _paper_noise(name, inp)
        if cand is None:
            continue
        mech = _try_candidate(inp, cand, f"the noise of {name} (papers' shape, exact accounting)", base, details)
        if mech is not None:
            candidates[name] = mech
    if not candidates:
        raise InvalidParameterError("model: no Gaussian noise shape of OptM meets the exact profile after top-up")
    if isinstance(inp.model, EmpiricalModel) and inp.model.claim_scope == "samples":
        candidates = _on_samples(candidates, inp)
    objective = {name: float(np.trace(weight @ mech.noise_covariance)) for name, mech in candidates.items()}
    # the SDP's noise unless a paper noise is strictly cheaper (ties: the SDP)
    chosen = min(objective, key=lambda k: (objective[k] * (1.0 + (1e-12 if k != "optm" else 0.0)), k != "optm"))
    best = candidates[chosen]
    best.details["candidates_objective"] = objective
    best.details["chosen"] = chosen
    return best


def _on_samples(candidates: dict[str, Mechanism], inp: Inputs) -> dict[str, Mechanism]:
    """Each candidate accounted (and topped up) on the samples' law of an EmpiricalModel
    (:func:`distpriv.mechanisms.empirical.account_empirical`), so the least error is chosen *after* the top-ups: a
    shape chosen on the Gaussian fit alone can need far more noise on the samples (review32: a nearly rank-one SDP
    noise scaled 6694× where DirM (G)'s took a little isotropic noise — 1750× DauM's error). Candidates that no
    top-up saves are dropped; none left is an error."""
    from .empirical import account_empirical

    out: dict[str, Mechanism] = {}
    for name, mech in candidates.items():
        try:
            out[name] = account_empirical("optm", mech, inp)
        except DistPrivError:
            continue
    if not out:
        raise InvalidParameterError("model: no Gaussian noise shape of OptM meets (ε, δ) on the samples' law after "
                                    "top-up")
    return out


def _try_candidate(inp: Inputs, cov: NDArray[np.float64], source: str, guarantee: Guarantee,
                   details: dict[str, Any]) -> Mechanism | None:
    """:func:`_candidate`, or ``None`` when no top-up of that noise meets the exact profile."""
    try:
        return _candidate(inp, cov, source, guarantee, details)
    except DistPrivError:
        return None


def _isotropic_variant(g: GaussianModel, inp: Inputs, noise: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Σ_Z + t I with the least t (geometric bisection to 1%) whose proven δ(ε) meets δ (decision mode)."""
    from ..accounting.release import NoiseLaw, proven_delta

    m = noise.shape[0]
    eye = np.eye(m)

    def ok(t: float) -> bool:
        prof = proven_delta(g, inp.pairs, NoiseLaw.gaussian(noise + t * eye), inp.epsilon, rtol=1e-2, target=inp.delta)
        return prof.delta_upper <= inp.delta

    if ok(0.0):
        return noise
    hi = max(float(np.trace(noise)) / m, 1e-3 * max(float(np.trace(g.covariance(x))) / m
                                                    for p in inp.pairs for x in p), 1e-300)
    lo = 0.0
    for _ in range(80):
        if ok(hi):
            break
        lo, hi = hi, hi * 4.0
    else:
        return None
    lo = lo if lo > 0 else hi / 1024.0
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return noise + hi * eye


def _scaling_may_win(g: GaussianModel, inp: Inputs, noise: NDArray[np.float64], weight: NDArray[np.float64],
                     budget: float) -> bool:
    """Does k²Σ_Z with tr(W k²Σ_Z) = ``budget`` meet δ (so that the least scaling may cost less than ``budget``)?"""
    from ..accounting.release import NoiseLaw, proven_delta

    own = float(np.trace(weight @ noise))
    if own <= 0:
        return False
    k2 = budget / own
    prof = proven_delta(g, inp.pairs, NoiseLaw.gaussian(k2 * noise), inp.epsilon, rtol=1e-2, target=inp.delta)
    return prof.delta_upper <= inp.delta


def _paper_noise(name: str, inp: Inputs) -> NDArray[np.float64] | None:
    """The noise covariance of a paper mechanism's builder at (ε, δ) (before accounting), ``None`` if it fails."""
    from . import expected_value, gaussian_uncertainty

    builders = {"expm-gauss": expected_value.expm_gauss, "dirm-gauss": expected_value.dirm_gauss,
                "eigm": gaussian_uncertainty.eigm, "daum": gaussian_uncertainty.daum}
    try:
        gin = replace(inp, model=as_gaussian(inp.model))
        mech = builders[name](gin)
    except DistPrivError:
        return None
    cov = np.asarray(mech.noise_covariance, dtype=float)
    return cov if np.all(np.isfinite(cov)) else None
