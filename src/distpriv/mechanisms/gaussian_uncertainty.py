"""Mechanisms exploiting adversarial uncertainty under a Gaussian model (Chen & Ohrimenko Sec. 5.3, App. B).

Assume f_θ = N(μ_θ, Σ_θ) with Σ_θi = Σ_θj on each pair. Adding Z ~ N(0, Σ_Z)
gives N(μ_θ, Σ_θ + Σ_Z); two Gaussians with a common covariance Σ are exactly
a 1-D Gaussian shift of Mahalanobis length D = sqrt((μ_i − μ_j)ᵀ Σ⁻¹ (μ_i − μ_j)),
so (ε, δ) holds iff D <= D_max (Corollary B.1 with the exact profile; the
paper's condition D <= ε/c is the classic case D_max = ε/c).

* :func:`noiseless_release` — Theorem 5.4: release F unchanged when every pair has D <= D_max.
* :func:`eigm` — Algorithm 2 / Thm 5.5: raise every eigenvalue of Σ_θ to at least
  T = (Δ_E,2/D_max)² (Corollary B.2): σ²_k = max_θ max(0, T − v_kᵀ Σ_θ v_k).
* :func:`daum` — Algorithm 3 / Thm B.4: noise σ² v vᵀ along one direction with σ²
  in closed form via Sherman–Morrison instead of the paper's determinant root:
  for Σ' = Σ + s v vᵀ, with Q = dᵀΣ⁻¹d, a = vᵀΣ⁻¹v, b = vᵀΣ⁻¹d,
  dᵀ Σ'⁻¹ d = Q − s b² / (1 + s a), so dᵀ Σ'⁻¹ d <= D² ⟺ s >= (Q − D²)/(b² − a(Q − D²)).
  For d = α v this is s = α²/D² − 1/a, i.e. (αc/ε)² − 1/(vᵀΣ⁻¹v) in the paper's terms.

These builders follow the papers (equal covariances). :func:`distpriv.calibrate` then checks the
noise against the exact privacy profile of the output laws — covariances equal or not — and tops
it up where needed (:mod:`distpriv.mechanisms.exact`); :func:`noiseless_release` decides Thm 5.4
by that exact profile directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array
from ..accounting.profile import Profile
from ..calibration import gaussian_epsilon
from ..errors import InvalidTypeError
from ..guarantees import Calibration, Guarantee
from ..models import GaussianModel, pair_stats
from ..noise import NoiseLaw
from ._common import (
    EQUAL_COV,
    GAUSSIAN,
    MODEL_IS_TRUTH,
    Inputs,
    _pinv_psd,
    as_gaussian,
    covariance_gap,
    d_max,
    direction_basis,
    labels_in,
    max_pair_distance,
)
from .base import Mechanism


def _gaussian_guarantee(inp: Inputs, name: str, theorem: str, g: GaussianModel, extra: tuple[str, ...] = (), notes: tuple[str, ...] = ()) -> Guarantee:
    gap = covariance_gap(g, inp.pairs)
    return Guarantee(
        epsilon=inp.epsilon,
        delta=inp.delta,
        mechanism=name,
        calibration=inp.calibration,
        pairs=inp.pairs,
        assumptions=(GAUSSIAN, f"{EQUAL_COV}; measured max relative difference {gap:.3g}", MODEL_IS_TRUTH, *extra),
        theorem=theorem,
        notes=notes,
    )


def _effective(inp: Inputs, g: GaussianModel, cov: NDArray[np.float64]) -> dict[str, float]:
    dist = max_pair_distance(g, inp.pairs, cov)
    return {
        "max_mahalanobis": dist,
        "exact_epsilon_at_delta": gaussian_epsilon(dist, inp.delta) if np.isfinite(dist) else float("inf"),
    }


@dataclass(frozen=True)
class NoiselessCheck:
    """Outcome of Theorem 5.4's test: may F be released without noise?

    ``ok``: the release without noise meets the requested (ε, δ) (proven by the exact profile);
    ``guarantee``: the claim for releasing F unchanged when the calibration rule's test passes
    (its δ is the proven one, larger than requested when ``ok`` is False), else ``None``;
    ``profile``: the exact δ(ε) bracket of the worst ordered pair.
    """

    ok: bool
    max_mahalanobis: float
    d_max: float
    guarantee: Guarantee | None
    profile: Profile | None = None

    @property
    def proven_delta(self) -> float:
        """The δ the exact profile proves for the noiseless release at ε."""
        return math.nan if self.profile is None else self.profile.delta_upper


def noiseless_release(inp: Inputs) -> NoiselessCheck:
    """Theorem 5.4 through the exact profile of the model's own laws (any covariances).

    exact: ``ok`` iff the proven δ(ε) <= δ. classic: the papers' test (max Mahalanobis
    distance <= ε/c) must pass too; where it passes but the exact profile proves more than δ
    (ε >= 1, where the rule proves nothing, or unequal covariances) the guarantee states the
    proven δ and ``ok`` is False.
    """
    from ..accounting.topup import SLACK
    from .exact import EXACT_PROFILE, GAUSSIAN_FIT, noiseless_profile

    g = as_gaussian(inp.model)
    dist = max_pair_distance(g, inp.pairs, np.zeros((g.dim, g.dim)))
    dm = d_max(inp)
    prof = noiseless_profile(inp)
    proven = prof.delta_upper
    meets = proven <= inp.delta * (1 + SLACK)
    rule = dist <= dm * (1 + 1e-12) if inp.calibration == Calibration.CLASSIC else meets
    guar = None
    if rule:
        gap = covariance_gap(g, inp.pairs)
        notes = [f"accounting: {prof.describe()}"]
        if not meets:
            notes.append(f"the papers' test passes (max Mahalanobis {dist:.4g} <= ε/c = {dm:.4g}) but the exact profile "
                         f"proves only δ = {proven:.3g} > requested {inp.delta:g}"
                         + (" (the classic rule is unproven for ε >= 1)" if inp.epsilon >= 1 else "")
                         + (f"; covariances differ (relative gap {gap:.3g})" if gap > 1e-12 else ""))
        fitted = not isinstance(inp.model, GaussianModel)
        guar = Guarantee(
            epsilon=inp.epsilon,
            delta=inp.delta if meets else min(1.0, proven),
            mechanism="none",
            calibration=inp.calibration,
            pairs=inp.pairs,
            assumptions=(GAUSSIAN_FIT if fitted else GAUSSIAN, MODEL_IS_TRUTH, EXACT_PROFILE),
            theorem="Chen & Ohrimenko Thm 5.4 (exact profile)",
            notes=tuple(notes),
        )
    return NoiselessCheck(ok=bool(rule and meets), max_mahalanobis=dist, d_max=dm, guarantee=guar, profile=prof)


def eigm(inp: Inputs, *, eigenvectors: ArrayLike | None = None, eig_tol: float = 1e-8) -> Mechanism:
    """Algorithm 2 (Eigenvector Gaussian Mechanism), Theorem 5.5.

    The eigenvectors are ``eigenvectors`` (columns) if given, else those of the mean
    of the Σ_θ over Ψ. When some Σ_θ is not diagonal in that basis (relative
    off-diagonal mass > ``eig_tol``) Theorem 5.5 does not apply; the noise is then
    topped up isotropically until Corollary B.2 (λ_min(Σ_θ + Σ_Z) >= T for every θ)
    holds, which needs no common eigenvectors — recorded in the guarantee's notes.
    """
    g = as_gaussian(inp.model)
    st = pair_stats(g, inp.pairs)
    dm = d_max(inp)
    target = (st.l2 / dm) ** 2
    labs = labels_in(inp.pairs)
    if eigenvectors is None:
        avg = sum(g.covariance(lab) for lab in labs) / len(labs)
        _, v = np.linalg.eigh(avg)
    else:
        v = check_array(eigenvectors, "eigenvectors", ndim=2)
        if v.shape != (g.dim, g.dim) or not np.allclose(v.T @ v, np.eye(g.dim), atol=1e-8):
            raise InvalidTypeError(f"eigenvectors: expected an orthonormal {g.dim}x{g.dim} matrix (columns)")
    lam = np.array([np.einsum("ik,ij,jk->k", v, g.covariance(lab), v) for lab in labs])  # (|θ|, m)
    off = 0.0
    for lab in labs:
        rot = v.T @ g.covariance(lab) @ v
        off = max(off, float(np.linalg.norm(rot - np.diag(np.diag(rot))) / max(np.linalg.norm(rot), 1e-300)))
    sig2 = np.clip(target - lam, 0.0, None).max(axis=0)
    cov = (v * sig2) @ v.T
    notes: list[str] = []
    extra: list[str] = []
    common = off <= eig_tol
    if common:
        extra.append(f"the Σ_θ share the eigenvectors v_1..v_m (max relative off-diagonal {off:.3g})")
    else:
        notes.append(
            f"eigenvectors differ across θ (relative off-diagonal {off:.3g} > {eig_tol:g}): Theorem 5.5 does not apply; "
            "noise topped up to satisfy Corollary B.2 directly"
        )
    top = max(float(target - np.linalg.eigvalsh(g.covariance(lab) + cov)[0]) for lab in labs)
    if top > 1e-12 * max(target, 1e-300):
        cov = cov + top * np.eye(g.dim)
        sig2 = sig2 + top
        if common:
            notes.append(f"isotropic top-up {top:.3g} added for numerical safety (Corollary B.2)")
    guar = _gaussian_guarantee(inp, "eigm", "Chen & Ohrimenko Alg 2, Thm 5.5 / Cor B.2", g, tuple(extra), tuple(notes))
    return Mechanism("eigm", "EigM (G)", g.dim, NoiseLaw.gaussian(cov), guar,
                     details={"delta_e2": st.l2, "d_max": dm, "target_eigenvalue": target, "eigenvectors": v,
                              "sigma2": sig2, "common_eigenvectors": common, **_effective(inp, g, cov)})


def daum_variance(diff: NDArray[np.float64], cov: NDArray[np.float64], v: NDArray[np.float64], dmax: float) -> float | None:
    """Least s >= 0 with dᵀ(Σ + s v vᵀ)⁻¹ d <= D_max² (Sherman–Morrison), or ``None`` if no s works.

    Q = dᵀΣ⁻¹d, a = vᵀΣ⁻¹v, b = vᵀΣ⁻¹d; dᵀ(Σ + s v vᵀ)⁻¹d = Q − s b²/(1 + s a) decreases
    to Q − b²/a as s → ∞. Returns 0 when Q <= D², the root s = (Q − D²)/(b² − a(Q − D²))
    when Q − b²/a < D², and ``None`` otherwise. A singular Σ returns the paper's
    always-valid choice s = (||d||/D)² when d ∥ v (Alg 3, remark after Thm B.4).
    """
    # scale-free form: with Σ = cΣ', the condition dᵀ(Σ + s vvᵀ)⁻¹d <= D² is dᵀ(Σ' + (s/c) vvᵀ)⁻¹d <= cD²,
    # so the arithmetic stays in range for covariances of any magnitude (1e-300 or 1e300)
    c = float(np.abs(cov).max(initial=0.0))
    c = c if math.isfinite(c) and c > 0 else 1.0
    inv, singular = _pinv_psd(cov / c)
    d2 = dmax * dmax * c
    if singular:
        nd = float(np.linalg.norm(diff))
        if np.linalg.norm(diff - (diff @ v) * v) <= 1e-9 * max(nd, 1.0):
            return (nd / dmax) ** 2
        return None
    q = float(diff @ inv @ diff)
    if q <= d2:
        return 0.0
    a = float(v @ inv @ v)
    b = float(v @ inv @ diff)
    denom = (b * b - a * q) + a * d2  # b² − aQ <= 0 (Cauchy–Schwarz, 0 when d ∥ v) kept apart from the tiny aD²
    if not denom > 0:  # also NaN: no finite root
        return None
    root = c * (q - d2) / denom
    return root if math.isfinite(root) else None


def daum(inp: Inputs, *, direction: ArrayLike | None = None) -> Mechanism:
    """Algorithm 3 (DauM), Theorem B.4: Z ~ N(0, σ² v vᵀ) with σ² = max over Ψ (and Σ_θi, Σ_θj) of the closed-form root.

    ``direction`` is Alg 3's unit vector v; by default the top left singular vector of the
    mean differences. If some pair cannot be protected by noise along v alone (its mean
    difference has too large a component orthogonal to v) the mechanism falls back to
    the multi-direction DirM (G) noise, which needs only translation — recorded in notes.
    """
    g = as_gaussian(inp.model)
    st = pair_stats(g, inp.pairs)
    dm = d_max(inp)
    if direction is None:
        basis, resid = direction_basis(st.diffs, 0.0, None)
        v = basis[:, 0] if basis.shape[1] else np.eye(g.dim)[:, 0]
    else:
        basis, resid = direction_basis(st.diffs, 0.0, direction)
        v = basis[:, 0]
    s_needed: list[float] = []
    feasible = True
    for (a, b), d in zip(inp.pairs, st.diffs, strict=True):
        for lab in (a, b):
            s = daum_variance(d, g.covariance(lab), v, dm)
            if s is None:
                feasible = False
                break
            s_needed.append(s)
        if not feasible:
            break
    notes: list[str] = []
    if feasible:
        sig2 = max(s_needed)
        cov = sig2 * np.outer(v, v)
        extra = (f"noise along v only; mean differences have relative residual {resid:.3g} off v "
                 "(covered exactly by the Mahalanobis condition of Cor. B.1)",)
        details: dict[str, Any] = {"sigma2": sig2, "direction": v}
    else:
        full, _ = direction_basis(st.diffs, 1e-12, None)
        sigma = st.l2 / dm
        cov = sigma**2 * (full @ full.T)
        extra = ("translation of f_θ within each pair (fallback: DirM (G) noise on the span of the mean differences)",)
        notes.append("noise along a single direction cannot meet D_max for every pair; fell back to multi-direction DirM (G)")
        details = {"sigma2": sigma**2, "direction": full}
    guar = _gaussian_guarantee(inp, "daum", "Chen & Ohrimenko Alg 3, Thm B.4 (closed form via Sherman–Morrison)", g, extra, tuple(notes))
    return Mechanism("daum", "DauM (G)", g.dim, NoiseLaw.gaussian(cov), guar,
                     details={"delta_e2": st.l2, "d_max": dm, "fallback": not feasible, **details, **_effective(inp, g, cov)})
