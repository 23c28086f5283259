"""Helpers shared by the central mechanisms: inputs, Ψ statistics, assumption texts."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array, check_delta, check_epsilon
from ..calibration import check_calibration, max_distance
from ..errors import InvalidParameterError, InvalidTypeError
from ..guarantees import Assumption, AssumptionCode
from ..models import EmpiricalModel, GaussianModel, Pair, QueryModel, normalize_pairs

TRANSLATION: str = Assumption("f_θi is a translation of f_θj for every (θi, θj) ∈ Ψ (Chen & Ohrimenko Sec. 5.1)",
                         AssumptionCode.TRANSLATION)
GAUSSIAN: str = Assumption("f_θ = N(μ_θ, Σ_θ) for every θ in Ψ (Chen & Ohrimenko Sec. 5.3)", AssumptionCode.GAUSSIAN)
EQUAL_COV: str = Assumption("Σ_θi = Σ_θj for every (θi, θj) ∈ Ψ (Chen & Ohrimenko Sec. 5.3)", AssumptionCode.EQUAL_COVARIANCE)
MODEL_IS_TRUTH: str = Assumption("the supplied f_θ model equals the true query distributions (else see Thm 5.6/5.7, "
                            "distpriv.relaxed)", AssumptionCode.MODEL_IS_TRUTH)


@dataclass(frozen=True)
class Inputs:
    """Validated common arguments of :func:`distpriv.calibrate`."""

    model: QueryModel
    pairs: tuple[Pair, ...]
    epsilon: float
    delta: float
    calibration: str


def validate_inputs(
    model: Any, pairs: Iterable[Sequence[Any]] | None, epsilon: Any, delta: Any, calibration: str, *, need_delta: bool, need_pairs: bool = True
) -> Inputs:
    """Check model type, Ψ labels, ε > 0, δ ∈ (0, 1) when needed (else [0, 1) or None)."""
    if not isinstance(model, QueryModel):
        raise InvalidTypeError(f"model: expected a distpriv GaussianModel or EmpiricalModel, got {type(model).__name__}")
    eps = check_epsilon(epsilon)
    if need_delta:
        if delta is None:
            raise InvalidParameterError("delta: required for this mechanism, must be in (0, 1)")
        dl = check_delta(delta)
    else:
        dl = 0.0 if delta is None else check_delta(delta, allow_zero=True)
    cal = check_calibration(calibration)
    if pairs is None:
        if need_pairs:
            raise InvalidParameterError("pairs: Ψ is required for this mechanism (a list of (θi, θj) label pairs)")
        ps: tuple[Pair, ...] = ()
    else:
        ps = normalize_pairs(pairs, model.labels)
    return Inputs(model=model, pairs=ps, epsilon=eps, delta=dl, calibration=cal)


def as_gaussian(model: QueryModel) -> GaussianModel:
    """A Gaussian view of ``model`` (fits N(μ̂, Σ̂) to an EmpiricalModel)."""
    if isinstance(model, GaussianModel):
        return model
    if isinstance(model, EmpiricalModel):
        return model.to_gaussian()
    raise InvalidTypeError(f"model: cannot form a Gaussian model from {type(model).__name__}")


def d_max(inp: Inputs) -> float:
    """Largest admissible Mahalanobis distance under the chosen calibration (see :mod:`distpriv.calibration`)."""
    return max_distance(inp.epsilon, inp.delta, inp.calibration)


def direction_basis(
    diffs: NDArray[np.float64], rank_tol: float, direction: ArrayLike | None = None
) -> tuple[NDArray[np.float64], float]:
    """Orthonormal basis (m × d) of the span of the mean differences, and the relative residual.

    With ``direction`` given (Alg. 1's unit vector v) the basis is v/||v|| and the
    residual max ||c − (c·v)v|| / ||c|| over Ψ measures how far the mean differences
    are from parallel to v (0 when Theorem 5.3's assumption holds).
    Otherwise the basis is the left singular vectors of [c_1 ... c_|Ψ|] with singular
    value > ``rank_tol`` × the largest; the residual is then the part dropped.
    """
    m = diffs.shape[1]
    norms = np.linalg.norm(diffs, axis=1)
    if direction is not None:
        v = check_array(direction, "direction", ndim=1)
        if v.shape[0] != m:
            raise InvalidTypeError(f"direction: expected a vector of length {m}, got {v.shape[0]}")
        nv = float(np.linalg.norm(v))
        if nv == 0:
            raise InvalidParameterError("direction: must be a non-zero vector")
        basis = (v / nv)[:, None]
    else:
        if not np.any(norms > 0):
            return np.zeros((m, 0)), 0.0
        u, s, _ = np.linalg.svd(diffs.T, full_matrices=False)
        keep = s > rank_tol * s[0]
        basis = u[:, keep]
    resid = diffs - (diffs @ basis) @ basis.T
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(norms > 0, np.linalg.norm(resid, axis=1) / np.where(norms > 0, norms, 1.0), 0.0)
    return basis, float(rel.max(initial=0.0))


def covariance_gap(model: GaussianModel, pairs: Sequence[Pair]) -> float:
    """max over Ψ of ||Σ_θi − Σ_θj||_2 / max(||Σ_θi||_2, ||Σ_θj||_2): 0 when covariances are equal."""
    worst = 0.0
    for a, b in pairs:
        sa, sb = model.covariance(a), model.covariance(b)
        scale = max(np.linalg.norm(sa, 2), np.linalg.norm(sb, 2), 1e-300)
        worst = max(worst, float(np.linalg.norm(sa - sb, 2) / scale))
    return worst


def labels_in(pairs: Sequence[Pair]) -> list[Hashable]:
    """The θ labels appearing in Ψ, in order of first appearance."""
    out: list[Hashable] = []
    for a, b in pairs:
        for x in (a, b):
            if x not in out:
                out.append(x)
    return out


# Mahalanobis distances (here, not in gaussian_uncertainty, so that exact.py and gaussian_uncertainty.py both
# use them without importing each other: issue 24 item 5, no import cycles)
def _pinv_psd(s: NDArray[np.float64]) -> tuple[NDArray[np.float64], bool]:
    """Pseudo-inverse of a PSD matrix and whether it is (numerically) singular."""
    w, u = np.linalg.eigh(s)
    tol = 1e-12 * max(float(w.max(initial=0.0)), 1e-300)
    inv = np.where(w > tol, 1.0 / np.where(w > tol, w, 1.0), 0.0)
    return (u * inv) @ u.T, bool(np.any(w <= tol))


def mahalanobis(diff: NDArray[np.float64], cov: NDArray[np.float64]) -> float:
    """sqrt(dᵀ Σ⁻¹ d); ``inf`` when d has a component in the null space of Σ."""
    inv, singular = _pinv_psd(cov)
    q = float(diff @ inv @ diff)
    if singular:
        resid = diff - cov @ (inv @ diff)
        if np.linalg.norm(resid) > 1e-9 * max(1.0, float(np.linalg.norm(diff))):
            return float("inf")
    return float(np.sqrt(max(q, 0.0)))


def max_pair_distance(model: GaussianModel, pairs: tuple[Pair, ...], noise_cov: NDArray[np.float64]) -> float:
    """max over Ψ and over Σ ∈ {Σ_θi, Σ_θj} of the Mahalanobis distance under Σ + Σ_Z.

    Taking both covariances makes the check independent of which member of the pair is
    used when the fitted covariances differ slightly.
    """
    worst = 0.0
    for a, b in pairs:
        d = model.mean(a) - model.mean(b)
        for lab in (a, b):
            worst = max(worst, mahalanobis(d, model.covariance(lab) + noise_cov))
    return worst
