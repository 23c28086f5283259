"""Expected Value Mechanism and its directional variant (Chen & Ohrimenko Sections 5.1–5.2).

Under the translation assumption (f_θi(t) = f_θj(t + c) for each pair):

* ExpM (L), Thm 5.1: Z_k ~ Lap(Δ_E,1/ε), Δ_E,1 = max_Ψ ||μ_i − μ_j||_1 — (ε, 0).
* ExpM (G), Thm 5.2: Z_k ~ N(0, σ²), σ = Δ_E,2/D_max — (ε, δ). D_max = ε/c
  (classic, c = sqrt(2 ln(1.25/δ))) or D*(ε, δ) (exact analytic Gaussian;
  valid for any translation family because the output is a mixture, over the
  coupling F_i = F_j + c, of Gaussian shifts of L2 length <= Δ_E,2).
* DirM (L), Alg 1 / Thm 5.3: noise Y·v along the unit vector v parallel to all
  mean differences, Y ~ Lap(Δ_E,2/ε). When the differences span d > 1
  directions (Sec. 5.2, last paragraph) the noise is Σ_k Y_k v_k over an
  orthonormal basis of their span with Y_k ~ Lap(b), b = max_Ψ ||Vᵀc||_1/ε —
  the L1 norm of the shift in basis coordinates (which equals Δ_E,2 when d = 1).
* DirM (G): N(0, σ² V Vᵀ), σ = Δ_E,2/D_max (the L2 norm is basis independent).

A user-given ``direction`` that misses part of the mean differences gets noise on the residual
span too (never a claim for v alone). On a :class:`~distpriv.GaussianModel` the translation
assumption is not taken on trust: :func:`distpriv.calibrate` verifies the claim against the exact
profile of the output laws and tops the noise up (:mod:`distpriv.mechanisms.exact`); on an
:class:`~distpriv.EmpiricalModel` the claim rests on translation (which the release tests).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..accounting import laplace_common as lc
from ..errors import AssumptionError, AssumptionWarning, InvalidTypeError
from ..formatting import check_flag
from ..guarantees import Calibration, Guarantee
from ..models import GaussianModel, QueryModel, pair_stats
from ..noise import NoiseLaw
from ._common import MODEL_IS_TRUTH, TRANSLATION, Inputs, covariance_gap, d_max, direction_basis
from .base import Mechanism

IDENTICAL_LAWS = ("every mean difference is zero and (GaussianModel) every pair's covariances are equal: f_θi = f_θj "
                  "for every pair, so F's law does not depend on θ and releasing it without noise is (ε, 0)-DistP")


def _no_mean_shift(inp: Inputs, label: str) -> None:
    """Refuse a Laplace mechanism whose noise, scaled to the mean differences, would be zero while f_θ differs.

    Theorems 5.1/5.3 scale the Laplace noise to Δ_E (the mean shift). When every μ_θi − μ_θj is zero
    the noise is zero, which is (ε, 0)-DistP only if the laws are equal. On a GaussianModel whose
    covariances differ across a pair the noiseless output laws N(μ, Σ_θi) and N(μ, Σ_θj) differ (the
    secret changes only the spread): δ(ε) can be far above 0, so no Laplace claim of this form holds.
    """
    if isinstance(inp.model, GaussianModel) and covariance_gap(inp.model, inp.pairs) > 1e-12:
        raise AssumptionError(
            f"model: every mean difference of Ψ is zero, so {label}'s Laplace noise (scaled to them) would be zero, "
            "but the covariances differ across θ: the secret changes the spread, not the mean, and releasing F without "
            "noise would leak it. Use a Gaussian mechanism (expm-gauss, eigm, daum or optm), whose noise the exact "
            "accounting tops up to the requested (ε, δ)")


#: Model dimensions where the Laplace mechanisms' ``tight=None`` (the default, "auto") resolves to True: the
#: certified 2-D Gauss ⊛ Laplace grid (:mod:`distpriv.accounting.laplace_nd`) costs a fraction of a second per
#: calibration (docs/mechanisms.md); the 3-D grid (:mod:`distpriv.accounting.laplace_3d`) a median 1.6 s CPU at
#: (1, 1e-3) on the benchmark's models, and at most a deterministic work budget
#: (:data:`distpriv.accounting.topup.WORK_BUDGET_3D` grid elements, ≲ 7 s CPU on a reviewer's hard models) after which
#: the coupling bound's result (or the least scale certified within the budget) is kept, with a note saying so; a coarse
#: probe at the coupling bound's scale / 1.05 ends it at once where the grid cannot gain. Its no-target δ′ is exactly
#: what the engine's decision at that δ′ proves (:func:`distpriv.accounting.topup.proven_claim`).
TIGHT_BY_DEFAULT_DIMS: frozenset[int] = frozenset({2, 3})


def tight_by_default(model: QueryModel) -> bool:
    """What ``tight=None`` resolves to: True for a :class:`~distpriv.GaussianModel` (whose exact accounting the
    certified bounds serve) of a dimension in :data:`TIGHT_BY_DEFAULT_DIMS` (the 2-D and 3-D grids) or of
    :data:`distpriv.accounting.laplace_common.MIN_DIM` dimensions and more (the common-Gaussian-factor bound: with a
    δ target a median 0.87–0.98× the coupling bound's scale for 1.3–4.5× its CPU, 0.4–0.7 s per calibration on the
    benchmark's 4-D/5-D models; without one a δ′ up to 17× smaller on Adult's 5-D models)."""
    return isinstance(model, GaussianModel) and (model.dim in TIGHT_BY_DEFAULT_DIMS or model.dim >= lc.MIN_DIM)


def _tight_option(tight: object, model: QueryModel) -> bool:
    """The Laplace mechanisms' ``tight`` option (issue 25): certify off-assumption claims (covariances that differ
    across θ and are not diagonal in the noise basis) with the certified Gauss ⊛ Laplace grid and search the least
    scale, also below the papers' one (:func:`distpriv.accounting.topup.topup_laplace`); ``tight=False``: the
    Gaussian-coupling bound only (fast, more noise); ``None`` (default): :func:`tight_by_default` (True for a
    GaussianModel of 2 dimensions or more).
    The builders record the resolved flag in ``details["tight"]`` for the exact accounting."""
    if tight is None:
        return tight_by_default(model)
    if isinstance(tight, (bool, np.bool_)):
        flag = check_flag(tight, "tight")
        if flag and not isinstance(model, GaussianModel):  # review30a: was recorded True and silently unused
            import warnings

            from ..calibration import _external_stacklevel

            warnings.warn(f"tight=True serves a GaussianModel's exact accounting only; a {type(model).__name__} is "
                          "accounted on its own law, so it is ignored (details['tight'] is False)", UserWarning,
                          stacklevel=_external_stacklevel())
            return False
        return flag
    raise InvalidTypeError(f"expected True, False or None (auto), got {tight!r}", argument="tight")


def expm_laplace(inp: Inputs, *, tight: bool | None = None) -> Mechanism:
    """Theorem 5.1: Lap(Δ_E,1/ε) on every component (``tight``: see :func:`_tight_option`)."""
    flag = _tight_option(tight, inp.model)
    st = pair_stats(inp.model, inp.pairs)
    b = st.l1 / inp.epsilon
    if b <= 0.0:
        _no_mean_shift(inp, "ExpM (L)")
        g0 = Guarantee(inp.epsilon, 0.0, "expm-laplace", calibration=Calibration.LAPLACE, pairs=inp.pairs,
                       assumptions=(TRANSLATION, MODEL_IS_TRUTH), theorem="Chen & Ohrimenko Thm 5.1",
                       notes=(IDENTICAL_LAWS,))
        return Mechanism("expm-laplace", "ExpM (L)", inp.model.dim, NoiseLaw.none(inp.model.dim), g0,
                         details={"delta_e1": st.l1, "laplace_scale": 0.0})
    m = inp.model.dim
    g = Guarantee(inp.epsilon, 0.0, "expm-laplace", calibration=Calibration.LAPLACE, pairs=inp.pairs,
                  assumptions=(TRANSLATION, MODEL_IS_TRUTH), theorem="Chen & Ohrimenko Thm 5.1")
    return Mechanism("expm-laplace", "ExpM (L)", m, NoiseLaw.laplace(np.eye(m), np.full(m, b)), g,
                     details={"delta_e1": st.l1, "laplace_scale": b, "tight": flag})


def expm_gauss(inp: Inputs) -> Mechanism:
    """Theorem 5.2 (classic) / analytic Gaussian (exact): N(0, (Δ_E,2/D_max)² I)."""
    st = pair_stats(inp.model, inp.pairs)
    dm = d_max(inp)
    sigma = st.l2 / dm
    m = inp.model.dim
    g = Guarantee(inp.epsilon, inp.delta, "expm-gauss", calibration=inp.calibration, pairs=inp.pairs,
                  assumptions=(TRANSLATION, MODEL_IS_TRUTH),
                  theorem="Chen & Ohrimenko Thm 5.2" + ("" if inp.calibration == Calibration.CLASSIC else " with Balle & Wang (2018) Thm 8"))
    return Mechanism("expm-gauss", "ExpM (G)", m, NoiseLaw.gaussian(sigma**2 * np.eye(m)), g,
                     details={"delta_e2": st.l2, "d_max": dm, "sigma": sigma})


def _directional(inp: Inputs, direction: ArrayLike | None, rank_tol: float) -> tuple[np.ndarray, float, list[str], list[str]]:
    st = pair_stats(inp.model, inp.pairs)
    basis, resid = direction_basis(st.diffs, rank_tol, direction)
    assumptions = [TRANSLATION, MODEL_IS_TRUTH]
    notes: list[str] = []
    if direction is not None:
        if resid > 1e-9:
            # Theorem 5.3 needs every mean difference parallel to v; the un-noised remainder would be
            # released in the clear (δ up to 1). Top up: noise also on the span of the residuals.
            extra = st.diffs - (st.diffs @ basis) @ basis.T
            u, sv, _ = np.linalg.svd(extra.T, full_matrices=False)
            add = u[:, sv > rank_tol * max(float(sv[0]), 1e-300)]
            add = add - basis @ (basis.T @ add)
            add, _ = np.linalg.qr(add)
            basis = np.hstack([basis, add])
            msg = (f"direction: the mean differences deviate from v by a relative residual of {resid:.3g}, which "
                   f"Theorem 5.3 does not cover; noise added on the {add.shape[1]} residual direction(s) as well "
                   "(multi-direction form of Sec. 5.2) instead of claiming a guarantee for v alone")
            import warnings

            from ..calibration import _external_stacklevel

            warnings.warn(msg, AssumptionWarning, stacklevel=_external_stacklevel())
            notes.append(msg)
            assumptions.append("every μ_θi − μ_θj lies in the span of v and the added residual directions")
        else:
            assumptions.append(f"every μ_θi − μ_θj is parallel to the given direction v (measured relative residual {resid:.3g})")
    else:
        assumptions.append(
            f"every μ_θi − μ_θj lies in the span of the {basis.shape[1]} noise direction(s) "
            f"(singular values below {rank_tol:g}× the largest dropped; relative residual {resid:.3g})"
        )
        if basis.shape[1] > 1:
            notes.append(f"mean differences span {basis.shape[1]} directions: multi-direction form of Sec. 5.2")
    return basis, resid, assumptions, notes


def dirm_laplace(inp: Inputs, *, direction: ArrayLike | None = None, rank_tol: float = 1e-6,
                 tight: bool | None = None) -> Mechanism:
    """Algorithm 1 / Thm 5.3 (and its multi-direction form): Laplace noise along the span of the mean differences
    (``tight``: see :func:`_tight_option`)."""
    flag = _tight_option(tight, inp.model)
    st = pair_stats(inp.model, inp.pairs)
    basis, resid, assumptions, notes = _directional(inp, direction, rank_tol)
    if not basis.shape[1]:
        _no_mean_shift(inp, "DirM (L)")
        notes.append(IDENTICAL_LAWS)
    coords = np.abs(st.diffs @ basis).sum(axis=1) if basis.shape[1] else np.zeros(1)
    sens = float(coords.max(initial=0.0))
    b = sens / inp.epsilon
    g = Guarantee(inp.epsilon, 0.0, "dirm-laplace", calibration=Calibration.LAPLACE, pairs=inp.pairs,
                  assumptions=tuple(assumptions), theorem="Chen & Ohrimenko Alg 1, Thm 5.3", notes=tuple(notes))
    d = basis.shape[1]
    return Mechanism("dirm-laplace", "DirM (L)", inp.model.dim,
                     NoiseLaw.laplace(basis, np.full(d, b)) if d else NoiseLaw.none(inp.model.dim), g,
                     details={"delta_e2": st.l2, "sensitivity": sens, "directions": basis, "residual": resid, "laplace_scale": b,
                              "tight": flag})


def dirm_gauss(inp: Inputs, *, direction: ArrayLike | None = None, rank_tol: float = 1e-6) -> Mechanism:
    """Gaussian Algorithm 1: N(0, σ² V Vᵀ), σ = Δ_E,2/D_max, V an orthonormal basis of the mean-difference span."""
    st = pair_stats(inp.model, inp.pairs)
    basis, resid, assumptions, notes = _directional(inp, direction, rank_tol)
    dm = d_max(inp)
    proj = np.linalg.norm(st.diffs @ basis, axis=1).max(initial=0.0) if basis.shape[1] else 0.0
    sigma = float(proj) / dm
    g = Guarantee(inp.epsilon, inp.delta, "dirm-gauss", calibration=inp.calibration, pairs=inp.pairs,
                  assumptions=tuple(assumptions), theorem="Chen & Ohrimenko Alg 1 (Gaussian variant), Thm 5.3", notes=tuple(notes))
    return Mechanism("dirm-gauss", "DirM (G)", inp.model.dim, NoiseLaw.gaussian(sigma**2 * (basis @ basis.T)), g,
                     details={"delta_e2": st.l2, "d_max": dm, "sigma": sigma, "directions": basis, "residual": resid})
