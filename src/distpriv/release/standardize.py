"""Unit-free noise: calibrate on statistics standardised by their spread under the model, map back.

Mechanisms whose noise is measured across statistics — the Wasserstein mechanism's
W∞ and the Theorem 5.7 corrections (L1 distances), ExpM (L)'s ||Δμ||₁, the expected
L2 error that :func:`~distpriv.release.selection.select_mechanism` minimises — add up
numbers in the statistics' units. Left alone, the statistic with the largest unit sets
everyone's noise (grams → milligrams multiplies the other statistics' noise ~1,000×).

So a release is calibrated on the standardised statistics F′ = D⁻¹F, with the public
diagonal D = diag(d₁ … d_m) of :func:`standardization`:

    d_k = the standard deviation of F_k under the model, θ drawn uniformly from the θ in Ψ
        = sqrt( mean_θ Var_θ(F_k) + Var_θ(E_θ[F_k]) )          (law of total variance)

(``|mean of F_k|``, else 1, for a statistic that is constant under the model). d_k is a
function of the model of f_θ only: public whenever f_θ is (``--population``, ``--model``),
and listed as data-dependent with ``--model-from-data`` like every other calibration
output. It is homogeneous in statistic k alone — rescaling F_k by c > 0 rescales d_k by c
and leaves F′, hence the mechanism choice and every other statistic's noise, unchanged.

The model (:func:`standardize_modelling`), the sampler, the per-record sensitivities of
GroupDP and everything computed from them (assumption tests, W∞ gaps, the mechanism
choice, audits and attack simulations) are in standardised units. :class:`StandardizedPlan`
releases y = fl(x_k / d_k) with the float-safe plan of the chosen mechanism
(:mod:`distpriv.release.noise`) and publishes d_k·y′_k rounded to the power-of-two grid
g_k <= d_k·g (g the plan's grid): a deterministic function of the plan's output, i.e.
post-processing, so the guarantee of the standardised release is the guarantee of the
published values. The division is the same floating-point map fl(·/d_k) that produced the
standardised samples of an empirical model, so the model is of exactly the input the noise
is added to.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidTypeError
from ..models import EmpiricalModel, GaussianModel
from .sampler import BitSource


@dataclass(frozen=True)
class Standardization:
    """The public diagonal D of a release: ``scale`` = (d_k), ``spread`` = the std of F_k under the model."""

    scale: NDArray[np.float64]
    spread: NDArray[np.float64]

    def to_dict(self) -> dict[str, Any]:
        return {"scale": [float(v) for v in self.scale], "spread": [float(v) for v in self.spread],
                "definition": "d_k = standard deviation of statistic k under the model of f_θ, θ uniform over Ψ"}


def _labels(pairs: Sequence[tuple[Hashable, Hashable]]) -> list[Hashable]:
    return list(dict.fromkeys(v for pr in pairs for v in pr))


def model_spread(model: EmpiricalModel | GaussianModel, pairs: Sequence[tuple[Hashable, Hashable]]) -> NDArray[np.float64]:
    """sqrt(mean_θ Var_θ(F_k) + Var_θ(E_θ F_k)) per statistic, θ over the labels of Ψ (module docstring)."""
    labs = _labels(pairs)
    means = np.array([np.asarray(model.mean(lab), dtype=float) for lab in labs])
    if isinstance(model, EmpiricalModel):
        within = np.array([np.var(model.samples(lab), axis=0, ddof=1) if model.samples(lab).shape[0] > 1
                           else np.zeros(model.dim) for lab in labs])
    else:
        within = np.array([np.clip(np.diag(model.covariance(lab)), 0.0, None) for lab in labs])
    total = within.mean(axis=0) + means.var(axis=0)
    return np.sqrt(np.clip(total, 0.0, None))


def standardization(model: EmpiricalModel | GaussianModel, pairs: Sequence[tuple[Hashable, Hashable]]) -> Standardization:
    """D for ``model``: the spread, or |mean| (else 1) for a statistic constant under the model."""
    spread = model_spread(model, pairs)
    labs = _labels(pairs)
    centre = np.abs(np.mean([np.asarray(model.mean(lab), dtype=float) for lab in labs], axis=0))
    tiny = spread <= 1e-12 * np.maximum(centre, np.finfo(float).tiny)
    scale = np.where(tiny, np.where(centre > 0, centre, 1.0), spread)
    return Standardization(np.asarray(scale, dtype=float), np.asarray(spread, dtype=float))


def standardize_model(model: EmpiricalModel | GaussianModel, scale: ArrayLike) -> EmpiricalModel | GaussianModel:
    """The model of D⁻¹F: samples divided by d (empirical) or N(D⁻¹μ, D⁻¹ΣD⁻¹) (Gaussian)."""
    d = np.asarray(scale, dtype=float)
    if isinstance(model, EmpiricalModel):
        return EmpiricalModel({lab: model.samples(lab) / d for lab in model.labels}, claim_scope=model.claim_scope)
    return GaussianModel({lab: model.mean(lab) / d for lab in model.labels},
                         {lab: model.covariance(lab) / np.outer(d, d) for lab in model.labels})


class ScaledSampler:
    """Draws of D⁻¹F from a sampler of F; ``base`` and ``scale`` keep the original sampler and d reachable."""

    def __init__(self, base: Any, scale: NDArray[np.float64]) -> None:
        self.base = base
        self.scale = scale

    def __call__(self, p: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        return np.asarray(self.base(p, size, rng), dtype=float) / self.scale


def _scaled_sampler(sampler: Any, d: NDArray[np.float64]) -> Any:
    return ScaledSampler(sampler, d)


def standardize_modelling(modelling: Any, scale: ArrayLike) -> Any:
    """A :class:`~distpriv.release.data.Modelling` of D⁻¹F (model and sampler divided by d)."""
    d = np.asarray(scale, dtype=float)
    return replace(modelling, model=standardize_model(modelling.model, d), sampler=_scaled_sampler(modelling.sampler, d))


def grid_step(value: float) -> float:
    """Largest power of two <= ``value`` (> 0)."""
    e = math.floor(math.log2(value))
    while 2.0**e > value:  # pragma: no cover - log2 rounding guard
        e -= 1
    while 2.0 ** (e + 1) <= value:  # pragma: no cover - log2 rounding guard
        e += 1
    return math.ldexp(1.0, e)


class StandardizedPlan:
    """A float-safe :class:`~distpriv.release.noise.NoisePlan` on D⁻¹F, published in the statistics' units.

    ``noise_std``/``noise_covariance`` are D·(the plan's); ``grids`` the per-statistic power-of-two grids
    g_k <= d_k·g; every other attribute (``guarantee``, ``kind``, ``laws`` …) is the plan's.
    """

    def __init__(self, plan: Any, scale: ArrayLike) -> None:
        self.plan = plan
        self.scale = np.asarray(scale, dtype=float)
        if self.scale.shape != (plan.dim,) or not np.all(np.isfinite(self.scale) & (self.scale > 0)):
            raise InvalidTypeError(f"scale: expected {plan.dim} positive finite spreads")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.plan, name)

    @property
    def grids(self) -> list[float] | None:
        """Per-statistic grids (``None`` for a noiseless release)."""
        if self.plan.grid is None:
            return None
        return [grid_step(float(d) * self.plan.grid) for d in self.scale]

    @property
    def noise_covariance(self) -> NDArray[np.float64]:
        return np.asarray(self.plan.noise_covariance) * np.outer(self.scale, self.scale)

    @property
    def noise_std(self) -> NDArray[np.float64]:
        return np.asarray(self.plan.noise_std) * self.scale

    @property
    def standardized_noise_std(self) -> NDArray[np.float64]:
        return np.asarray(self.plan.noise_std)

    def apply(self, x: ArrayLike, source: BitSource) -> NDArray[np.float64]:
        """Publish D·M(D⁻¹x) on the per-statistic grids (x itself for a noiseless release)."""
        arr = np.asarray(x, dtype=float)
        if arr.shape != (self.plan.dim,):
            raise InvalidTypeError(f"x: expected a query value of length {self.plan.dim}, got shape {arr.shape}")
        if self.plan.grid is None:
            return self.plan.apply(arr, source)  # noiseless: F(Data) itself (Theorem 5.4)
        y = self.plan.apply(arr / self.scale, source)
        grids = np.asarray(self.grids, dtype=float)
        return np.floor(y * self.scale / grids + 0.5) * grids

    def describe(self) -> dict[str, Any]:
        d = dict(self.plan.describe())
        d["noise_std"] = [float(s) for s in self.noise_std]
        d["standardized"] = {
            "scale": [float(v) for v in self.scale],
            "noise_std": [float(s) for s in self.standardized_noise_std],
            "note": "calibrated on F_k / d_k, d_k the standard deviation of statistic k under the model of f_θ "
                    "(θ uniform over Ψ); published as d_k times the standardised release, rounded to a "
                    "power-of-two grid g_k <= d_k·g (post-processing)",
        }
        d["grids"] = self.grids  # per statistic; "grid" stays the standardised sampler's grid g
        return d
