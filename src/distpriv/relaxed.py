"""Privacy under relaxed assumptions (Chen & Ohrimenko Section 5.4, appendix C.4).

The Expected Value mechanisms assume that the query distributions f_θ are
translations of one another, or Gaussian with equal covariances (Sections
5.1-5.3). In practice the mechanism is calibrated on approximations f̂_θ of the
true f_θ. Two theorems bound what is then lost:

* **Theorem 5.6** — if max(D^η_∞(f̂_θ ‖ f_θ), D^η_∞(f_θ ‖ f̂_θ)) <= λ for every θ
  (Definition 5.1, δ-approximate max-divergence), an (ε, δ) mechanism run on
  the approximations is (ε′, δ′)-distribution private with
  ε′ = ε + 2λ and δ′ = (1 + e^{ε+λ}) η + e^λ δ.
* **Theorem 5.7** — if W = sup_θ W∞(f_θ, f̂_θ) (L1 ground norm, Definition 4.1),
  adding extra noise Z′_k ~ Lap(W/λ) to every component restores
  (ε′, δ′) = (ε + 2λ, e^λ δ).

This module evaluates both theorems, splits a target budget between the base
mechanism and the extra Laplace noise, and *estimates* from samples how far
the empirical f_θ are from the approximations the mechanisms use
(translations, equal covariances, Gaussians). The estimators work on finite
samples and are estimates, not certificates: a finite sample cannot prove a
bound on a divergence or a distance of the underlying distributions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize_scalar
from scipy.special import ndtri

from . import distances
from ._validation import (
    as_rng,
    check_array,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_psd,
)
from .divergences import symmetric_approx_max_divergence
from .errors import InvalidParameterError, InvalidTypeError
from .guarantees import Guarantee
from .models import EmpiricalModel, normalize_pairs

__all__ = [
    "BudgetSplit",
    "PrivacyLoss",
    "Theorem57",
    "apply_theorem_5_6",
    "approx_max_divergence_gap",
    "diagnose",
    "equal_covariance_gap",
    "gaussian_w_infinity_gap",
    "max_equal_covariance_gap",
    "split_budget_theorem_5_7",
    "theorem_5_6",
    "theorem_5_7",
    "translation_gap",
]

FloatArray = NDArray[np.float64]
RngLike = np.random.Generator | int | None


# --------------------------------------------------------------------------- Theorem 5.6
class PrivacyLoss(NamedTuple):
    """An (ε, δ) pair; δ >= 1 means the guarantee is vacuous."""

    epsilon: float
    delta: float


def _check_nonneg(value: Any, name: str) -> float:
    return check_positive(value, name, allow_zero=True)


def theorem_5_6(epsilon: float, delta: float, eta: float, lam: float) -> PrivacyLoss:
    """(ε′, δ′) of an (ε, δ) mechanism calibrated on approximations f̂_θ (Chen & Ohrimenko Theorem 5.6).

    Assumes max(D^η_∞(f̂_θ ‖ f_θ), D^η_∞(f_θ ‖ f̂_θ)) <= λ for every θ and that the
    mechanism's output given F(Data) does not depend on Data. Then

        ε′ = ε + 2λ,    δ′ = (1 + e^{ε+λ}) η + e^λ δ.

    Parameters: ε >= 0, δ ∈ [0, 1), η ∈ [0, 1), λ >= 0. The returned δ′ is not
    clipped; δ′ >= 1 means the bound says nothing.
    """
    eps = _check_nonneg(epsilon, "epsilon")
    d = check_delta(delta, "delta", allow_zero=True)
    e = check_delta(eta, "eta", allow_zero=True)
    lm = _check_nonneg(lam, "lam")
    # (1 + e^{ε+λ})η in log space: e^{ε+λ} overflows for ε >= 710 while η is then tiny
    paid = math.exp(float(np.logaddexp(0.0, eps + lm)) + math.log(e)) if e > 0 else 0.0
    return PrivacyLoss(eps + 2.0 * lm, paid + math.exp(lm) * d)


def apply_theorem_5_6(guarantee: Guarantee, eta: float, lam: float) -> Guarantee:
    """The guarantee of a mechanism run on approximations with divergence gap λ at η (Theorem 5.6)."""
    if not isinstance(guarantee, Guarantee):
        raise InvalidTypeError(
            f"guarantee: expected a distpriv.Guarantee, got {type(guarantee).__name__}"
        )
    if guarantee.divergence is not None:
        raise InvalidParameterError(
            f"guarantee: Theorem 5.6 applies to (ε, δ) claims, got a {guarantee.divergence} divergence claim"
        )
    loss = theorem_5_6(guarantee.epsilon, guarantee.delta, eta, lam)
    return replace(
        guarantee,
        epsilon=loss.epsilon,
        delta=min(loss.delta, 1.0),  # δ′ >= 1 says nothing; a Guarantee's δ lies in [0, 1]
        theorem=f"{guarantee.theorem} + Chen & Ohrimenko Thm 5.6".strip(" +"),
        assumptions=guarantee.assumptions
        + (
            f"max(D^η_∞(f̂_θ‖f_θ), D^η_∞(f_θ‖f̂_θ)) <= λ = {float(lam):.6g} with η = {float(eta):.3g} for every θ",
        ),
    )


# --------------------------------------------------------------------------- Theorem 5.7
@dataclass(frozen=True)
class Theorem57:
    """Extra noise Z′_k ~ Lap(W/λ) and the resulting (ε′, δ′) (Chen & Ohrimenko Theorem 5.7)."""

    extra_laplace_scale: float  # b = W/λ, per component
    epsilon: float  # ε′ = ε + 2λ
    delta: float  # δ′ = e^λ δ
    dim: int  # number of components m receiving Z′

    @property
    def extra_l1_error(self) -> float:
        """E||Z′||_1 = m b."""
        return self.dim * self.extra_laplace_scale

    @property
    def extra_std(self) -> float:
        """Standard deviation of each Z′_k: √2 b."""
        return math.sqrt(2.0) * self.extra_laplace_scale

    def sample(self, rng: RngLike = None) -> FloatArray:
        """Draw Z′ (length m)."""
        if self.extra_laplace_scale == 0.0:
            return np.zeros(self.dim)
        return as_rng(rng).laplace(0.0, self.extra_laplace_scale, size=self.dim)


def theorem_5_7(epsilon: float, delta: float, W: float, lam: float, dim: int = 1) -> Theorem57:  # noqa: N803
    """Extra Laplace noise restoring privacy when f_θ are only W-close to the approximations (Theorem 5.7).

    If M(Data) = F(Data) + Z is (ε, δ)-distribution private when f̂_θ are the
    true distributions and W = sup_θ W∞(f_θ, f̂_θ) (L1 ground norm), then
    M̃(Data) + Z′ with Z′_k ~ Lap(W/λ) i.i.d. on the ``dim`` components is
    (ε′, δ′)-distribution private with ε′ = ε + 2λ, δ′ = e^λ δ.

    W = 0 needs no extra noise (scale 0); otherwise λ > 0.
    """
    eps = _check_nonneg(epsilon, "epsilon")
    d = check_delta(delta, "delta", allow_zero=True)
    w = _check_nonneg(W, "W")
    lm = _check_nonneg(lam, "lam")
    m = check_int(dim, "dim", minimum=1)
    if w > 0 and lm == 0:
        raise InvalidParameterError("lam: must be > 0 when W > 0 (the extra noise is Lap(W/λ))")
    scale = 0.0 if w == 0 else w / lm
    return Theorem57(
        extra_laplace_scale=scale, epsilon=eps + 2.0 * lm, delta=math.exp(lm) * d, dim=m
    )


@dataclass(frozen=True)
class BudgetSplit:
    """How a target (ε_t, δ_t) is split between the base mechanism and Z′ ~ Lap(W/λ)."""

    lam: float
    base_epsilon: float  # ε = ε_t − 2λ
    base_delta: float  # δ = e^{−λ} δ_t
    extra_laplace_scale: float  # W/λ
    rule: str
    total_std: float | None  # per-component std of base + extra noise, when the base noise is known

    @property
    def target(self) -> PrivacyLoss:
        """(ε_t, δ_t) recovered from the split: (ε + 2λ, e^λ δ)."""
        return PrivacyLoss(self.base_epsilon + 2.0 * self.lam, math.exp(self.lam) * self.base_delta)


def split_budget_theorem_5_7(
    epsilon_target: float,
    delta_target: float,
    W: float,  # noqa: N803
    *,
    sensitivity: float | None = None,
    base_std: Callable[[float, float], float] | None = None,
) -> BudgetSplit:
    """Choose λ so that base (ε, δ) + Lap(W/λ) meets a target (ε_t, δ_t) under Theorem 5.7.

    Any λ ∈ (0, ε_t/2) works: the base mechanism is calibrated at
    ε = ε_t − 2λ and δ = e^{−λ} δ_t, and Z′_k ~ Lap(W/λ) is added. The rule for λ:

    * ``sensitivity=Δ`` (a Laplace base mechanism with scale Δ/ε, e.g. ExpM (L)
      with Δ = Δ_E,1): minimise the per-component variance
      2(Δ/(ε_t − 2λ))² + 2(W/λ)². Setting the derivative to zero gives
      (λ/(ε_t − 2λ))³ = W²/(2Δ²), i.e. λ = s ε_t/(1 + 2s) with s = (W²/(2Δ²))^{1/3}
      (the objective is convex on (0, ε_t/2), so this is the minimum);
    * ``base_std=f`` with f(ε, δ) the per-component standard deviation of the
      base mechanism (e.g. a Gaussian mechanism): minimise f(ε, δ)² + 2(W/λ)²
      numerically (bounded Brent search over λ);
    * neither: the simple rule λ = ε_t/4 (half of ε_t goes to the base mechanism).

    W = 0 gives λ = 0 and no extra noise.
    """
    et = check_epsilon(epsilon_target, "epsilon_target")
    dt = check_delta(delta_target, "delta_target", allow_zero=True)
    w = _check_nonneg(W, "W")
    if sensitivity is not None and base_std is not None:
        raise InvalidParameterError("sensitivity, base_std: give at most one of them")
    if w == 0:
        total = None
        if sensitivity is not None:
            total = math.sqrt(2.0) * check_positive(sensitivity, "sensitivity") / et
        elif base_std is not None:
            total = float(base_std(et, dt))
        return BudgetSplit(0.0, et, dt, 0.0, "W = 0: no extra noise", total)
    if sensitivity is not None:
        delta_s = check_positive(sensitivity, "sensitivity")
        s = (w * w / (2.0 * delta_s * delta_s)) ** (1.0 / 3.0)
        lam = s * et / (1.0 + 2.0 * s)
        base_eps = et - 2.0 * lam
        total = math.sqrt(2.0 * (delta_s / base_eps) ** 2 + 2.0 * (w / lam) ** 2)
        rule = "minimum variance, Laplace base: λ = s ε_t/(1 + 2s), s = (W²/(2Δ²))^(1/3)"
    elif base_std is not None:
        if not callable(base_std):
            raise InvalidTypeError("base_std: expected a callable f(epsilon, delta) -> std")

        def objective(lm: float) -> float:
            b = float(base_std(et - 2.0 * lm, math.exp(-lm) * dt))
            return b * b + 2.0 * (w / lm) ** 2

        res = minimize_scalar(
            objective,
            bounds=(1e-9 * et, et / 2.0 * (1.0 - 1e-9)),
            method="bounded",
            options={"xatol": 1e-10 * et},
        )
        lam = float(res.x)
        base_eps = et - 2.0 * lam
        total = math.sqrt(objective(lam))
        rule = "minimum variance, numerical (bounded Brent) over the supplied base_std"
    else:
        lam = et / 4.0
        base_eps = et - 2.0 * lam
        total = None
        rule = "λ = ε_t/4 (half of ε_t to the base mechanism)"
    return BudgetSplit(lam, base_eps, math.exp(-lam) * dt, w / lam, rule, total)


# --------------------------------------------------------------------------- estimators
def _samples(value: ArrayLike, name: str) -> FloatArray:
    arr = check_array(value, name, ndim=(1, 2))
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.shape[0] < 2:
        raise InvalidParameterError(f"{name}: need at least 2 samples, got {arr.shape[0]}")
    return arr


def _subsample(x: FloatArray, max_samples: int | None, rng: np.random.Generator) -> FloatArray:
    if max_samples is None or x.shape[0] <= max_samples:
        return x
    return x[rng.choice(x.shape[0], size=max_samples, replace=False)]


def translation_gap(
    samples_i: ArrayLike,
    samples_j: ArrayLike,
    *,
    delta: float = 0.0,
    norm: Any = 1,
    max_samples: int | None = 2000,
    rng: RngLike = 0,
) -> float:
    """W∞ between f̂_θi and f̂_θj shifted by the mean difference (how far f_θi is from a translate of f_θj).

    gap = W∞(f̂_i, f̂_j + (μ̂_i − μ̂_j)) with the L1 ground norm by default
    (Definition 4.1). With the approximations f̃_θj = f_θj and
    f̃_θi = f_θj + (μ_i − μ_j), which are translations as the Expected Value
    Mechanism assumes (Section 5.1), this is the W of Theorem 5.7 for the pair.
    0 when the samples are exact translates. An estimate: empirical W∞ is
    exact for the samples (bottleneck matching) but is driven by the extreme
    points, so it grows with the sample size for unbounded f_θ; ``delta > 0``
    gives the (W, δ)-closeness radius instead (Section 4.1), which ignores
    mass δ and is much more stable. Samples larger than ``max_samples`` are
    subsampled (without replacement, seed ``rng``).
    """
    x = _samples(samples_i, "samples_i")
    y = _samples(samples_j, "samples_j")
    if x.shape[1] != y.shape[1]:
        raise InvalidParameterError(
            f"samples_j: dimension {y.shape[1]} does not match samples_i dimension {x.shape[1]}"
        )
    d = check_delta(delta, "delta", allow_zero=True)
    shift = x.mean(axis=0) - y.mean(axis=0)
    g = as_rng(rng)
    xs = _subsample(x, max_samples, g)
    ys = _subsample(y, max_samples, g) + shift
    if d == 0.0:
        return distances.w_infinity_samples(xs, ys, norm=norm)
    return distances.closeness_radius_samples(xs, ys, d, norm=norm)


def _fit(
    x: FloatArray, mean: ArrayLike | None, cov: ArrayLike | None
) -> tuple[FloatArray, FloatArray]:
    m = x.shape[1]
    mu = x.mean(axis=0) if mean is None else check_array(mean, "mean", ndim=1)
    if mu.shape[0] != m:
        raise InvalidParameterError(
            f"mean: length {mu.shape[0]} does not match the sample dimension {m}"
        )
    sigma = (
        np.atleast_2d(np.cov(x, rowvar=False))
        if cov is None
        else check_psd(np.atleast_2d(cov), "cov", dim=m)
    )
    return mu, sigma


def _gaussian_quantile_sample(
    mean: FloatArray, cov: FloatArray, n: int, rng: np.random.Generator
) -> FloatArray:
    """n points representing N(mean, cov): quantiles Φ⁻¹((i − ½)/n) in 1-D, a seeded draw otherwise."""
    if mean.shape[0] == 1:
        z = ndtri((np.arange(1, n + 1) - 0.5) / n)
        return (mean[0] + math.sqrt(float(cov[0, 0])) * z)[:, None]
    return rng.multivariate_normal(mean, cov, size=n, method="eigh")


def gaussian_w_infinity_gap(
    samples: ArrayLike,
    mean: ArrayLike | None = None,
    cov: ArrayLike | None = None,
    *,
    delta: float = 0.0,
    norm: Any = 1,
    max_samples: int | None = 2000,
    rng: RngLike = 0,
) -> float:
    """Estimate of W∞ (or the (W, δ)-closeness radius) between f̂_θ (samples) and N(mean, cov).

    The Gaussian is represented by a same-size sample: the quantiles
    μ + σ Φ⁻¹((i − ½)/N) in one dimension (deterministic, so the value is
    the quantile-coupling W∞ of the two), a draw at seed ``rng`` in higher
    dimensions (bottleneck matching). ``mean``/``cov`` default to the sample
    mean and covariance (the Gaussian fit of Section 5.3).

    This is an estimate. The population W∞ between a bounded f_θ and a Gaussian
    is infinite (the Gaussian has unbounded support); use ``delta > 0`` for the
    (W, δ)-closeness radius, which the paper suggests in that case
    (appendix C.5 remark) and which is stable in N.
    """
    x = _samples(samples, "samples")
    d = check_delta(delta, "delta", allow_zero=True)
    g = as_rng(rng)
    x = _subsample(x, max_samples, g)
    mu, sigma = _fit(x, mean, cov)
    ref = _gaussian_quantile_sample(mu, sigma, x.shape[0], g)
    if d == 0.0:
        return distances.w_infinity_samples(x, ref, norm=norm)
    return distances.closeness_radius_samples(x, ref, d, norm=norm)


def _whitener(mu: FloatArray, sigma: FloatArray) -> Callable[[FloatArray], FloatArray]:
    vals, vecs = np.linalg.eigh(sigma)
    if vals[0] <= 1e-12 * max(vals[-1], 1e-300):
        raise InvalidParameterError(
            f"cov: must be positive definite for a density comparison, smallest eigenvalue {vals[0]:.3g}"
        )
    transform = vecs / np.sqrt(vals)  # columns u_k / √λ_k: z = Λ^{-1/2} Uᵀ (x − μ)

    def whiten(x: FloatArray) -> FloatArray:
        return (x - mu) @ transform

    return whiten


def approx_max_divergence_gap(
    samples: ArrayLike,
    mean: ArrayLike | None,
    cov: ArrayLike | None,
    eta: float,
    bins: int | None = None,
) -> float:
    """Histogram estimate of λ = max(D^η_∞(f̂ ‖ f), D^η_∞(f ‖ f̂), 0) for Theorem 5.6.

    f is the empirical distribution of ``samples`` and f̂ = N(mean, cov) (the
    fitted Gaussian when ``mean``/``cov`` are None). Both are reduced to the
    same finite partition: the samples are whitened with the Gaussian,
    z = Λ^{-1/2} Uᵀ (x − μ), so that f̂ becomes N(0, I), and each axis is cut at
    the standard-normal quantiles Φ⁻¹(k/b), k = 1..b−1 (outer cells
    unbounded). Every one of the b^m cells then has probability exactly b^{-m}
    under f̂, and f's cell probabilities are the sample frequencies. The
    δ-approximate max-divergence of the two histograms is computed exactly
    (Definition 5.1; the least ε with hockey-stick Σ max(0, μ − e^ε ν) <= η,
    :func:`distpriv.divergences.approx_max_divergence`).

    ``bins`` (per axis) defaults to max(2, ⌊(N/20)^{1/m}⌋), about 20 samples
    per cell. An estimate: coarse-graining can only lower a divergence (data
    processing), sampling noise raises it; ``inf`` means η is too small to
    cover cells the samples never reach.
    """
    x = _samples(samples, "samples")
    e = check_delta(eta, "eta", allow_zero=True)
    n, m = x.shape
    if bins is None:
        b = max(2, int((n / 20.0) ** (1.0 / m)))
    else:
        b = check_int(bins, "bins", minimum=2)
    if b**m > 5_000_000:
        raise InvalidParameterError(f"bins: {b}^{m} cells is too many; use fewer bins per axis")
    mu, sigma = _fit(x, mean, cov)
    z = _whitener(mu, sigma)(x)
    inner = ndtri(np.arange(1, b) / b)  # b − 1 interior edges per axis
    cell = np.zeros(n, dtype=np.int64)
    for k in range(m):
        cell = cell * b + np.searchsorted(inner, z[:, k], side="right")
    counts = np.bincount(cell, minlength=b**m).astype(float)
    emp = counts / n
    gauss = np.full(b**m, 1.0 / b**m)
    return float(symmetric_approx_max_divergence(emp, gauss, e))


def equal_covariance_gap(cov_i: ArrayLike, cov_j: ArrayLike) -> float:
    """Relative spectral-norm difference ||Σ_i − Σ_j||_2 / max(||Σ_i||_2, ||Σ_j||_2).

    0 exactly when the covariances are equal, as the Gaussian mechanisms of
    Section 5.3 assume within each pair; at most 2. Two zero matrices give 0.
    """
    a = check_psd(np.atleast_2d(cov_i), "cov_i")
    b = check_psd(np.atleast_2d(cov_j), "cov_j", dim=a.shape[0])
    scale = max(np.linalg.norm(a, 2), np.linalg.norm(b, 2))
    if scale == 0:
        return 0.0
    return float(np.linalg.norm(a - b, 2) / scale)


def max_equal_covariance_gap(model: Any, pairs: Iterable[Sequence[Hashable]]) -> float:
    """max over (θ_i, θ_j) ∈ Ψ of :func:`equal_covariance_gap` (model: any f_θ model with ``covariance``)."""
    ps = normalize_pairs(pairs, model.labels)
    return max(equal_covariance_gap(model.covariance(a), model.covariance(b)) for a, b in ps)


# --------------------------------------------------------------------------- diagnostics
def diagnose(
    model: EmpiricalModel,
    pairs: Iterable[Sequence[Hashable]],
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    eta: float | None = None,
    lam: float | None = None,
    closeness_delta: float | None = None,
    bins: int | None = None,
    max_samples: int | None = 2000,
    rng: RngLike = 0,
) -> dict[str, Any]:
    """How far an empirical model is from the Expected Value mechanisms' assumptions, and what it costs.

    Per pair (θ_i, θ_j) ∈ Ψ: ``translation_gap`` (:func:`translation_gap`, also
    relative to ||μ_i − μ_j||_1, and its (W, δ)-closeness version at
    ``closeness_delta``) and ``covariance_gap``
    (:func:`equal_covariance_gap`). Per θ, against N(μ̂_θ, Σ̄) with Σ̄ the average
    covariance over the θ in Ψ (the equal-covariance Gaussians Section 5.3 assumes):
    ``gaussian_w_infinity_gap`` and the (W, δ)-closeness version at
    ``closeness_delta`` (default δ) (:func:`gaussian_w_infinity_gap`), and
    ``max_divergence_gap`` at ``eta`` (default δ/10) (:func:`approx_max_divergence_gap`).

    Corrections for a mechanism calibrated at (ε, δ):

    * ``theorem_5_6``: λ = the largest divergence gap over the θ in Ψ,
      (ε′, δ′) = (ε + 2λ, (1 + e^{ε+λ})η + e^λ δ) for a mechanism that assumes
      Gaussian f_θ (Section 5.3);
    * ``theorem_5_7``: for the translation assumption (W = largest translation
      gap) and the Gaussian assumption (W = largest Gaussian W∞ gap): the extra
      Laplace scale W/λ and (ε + 2λ, e^λ δ) at ``lam`` (default ε/4), and the
      split of (ε, δ) read as a *target*
      (:func:`split_budget_theorem_5_7`, λ = ε/4 rule).

    All gaps are sample estimates (see each estimator). Returns a JSON-friendly dict.
    """
    if not isinstance(model, EmpiricalModel):
        raise InvalidTypeError(f"model: expected an EmpiricalModel, got {type(model).__name__}")
    ps = normalize_pairs(pairs, model.labels)
    eps = check_epsilon(epsilon)
    d = check_delta(delta, "delta", allow_zero=True)
    e = d / 10.0 if eta is None else check_delta(eta, "eta", allow_zero=True)
    cd = (
        d
        if closeness_delta is None
        else check_delta(closeness_delta, "closeness_delta", allow_zero=True)
    )
    lm = eps / 4.0 if lam is None else check_positive(lam, "lam")
    seed = as_rng(rng)

    pair_rows: list[dict[str, Any]] = []  # JSON-friendly rows: "pair" is a label tuple, the rest floats
    for a, b in ps:
        mu_diff = float(np.abs(model.mean(a) - model.mean(b)).sum())
        xa, xb = model.samples(a), model.samples(b)
        tg = translation_gap(xa, xb, max_samples=max_samples, rng=seed)
        tc = translation_gap(xa, xb, delta=cd, max_samples=max_samples, rng=seed)
        pair_rows.append(
            {
                "pair": (a, b),
                "mean_l1": mu_diff,
                "translation_gap": tg,
                "relative_translation_gap": tg / mu_diff if mu_diff > 0 else math.inf,
                "translation_closeness_gap": tc,
                "covariance_gap": equal_covariance_gap(model.covariance(a), model.covariance(b)),
            }
        )

    labels = list(dict.fromkeys(lab for pr in ps for lab in pr))
    # The Section 5.3 mechanisms need Gaussians with *equal* covariances within each pair, so the
    # approximations Theorems 5.6/5.7 compare with are N(μ̂_θ, Σ̄), Σ̄ the average covariance over the θ in Ψ
    # (per-θ fits N(μ̂_θ, Σ̂_θ) with different Σ̂_θ satisfy no Section 5.3 theorem).
    pooled = sum(model.covariance(lab) for lab in labels) / len(labels)
    theta_rows: dict[Hashable, dict[str, float]] = {}
    for lab in labels:
        x = model.samples(lab)
        mu = model.mean(lab)
        theta_rows[lab] = {
            "n_samples": int(x.shape[0]),
            "gaussian_w_infinity_gap": gaussian_w_infinity_gap(
                x, mu, pooled, max_samples=max_samples, rng=seed
            ),
            "gaussian_closeness_gap": gaussian_w_infinity_gap(
                x, mu, pooled, delta=cd, max_samples=max_samples, rng=seed
            ),
            "max_divergence_gap": approx_max_divergence_gap(x, mu, pooled, e, bins),
        }

    max_tg = max(r["translation_gap"] for r in pair_rows)
    max_cg = max(r["covariance_gap"] for r in pair_rows)
    max_gw = max(r["gaussian_w_infinity_gap"] for r in theta_rows.values())
    max_div = max(r["max_divergence_gap"] for r in theta_rows.values())
    m = model.dim

    def thm57(w: float) -> dict[str, Any]:
        t = theorem_5_7(eps, d, w, lm, m)
        s = split_budget_theorem_5_7(eps, d, w)
        return {
            "W": w,
            "lam": lm,
            "extra_laplace_scale": t.extra_laplace_scale,
            "epsilon": t.epsilon,
            "delta": t.delta,
            "target_split": {
                "lam": s.lam,
                "base_epsilon": s.base_epsilon,
                "base_delta": s.base_delta,
                "extra_laplace_scale": s.extra_laplace_scale,
                "rule": s.rule,
            },
        }

    t56 = (
        theorem_5_6(eps, d, e, max_div)
        if math.isfinite(max_div)
        else PrivacyLoss(math.inf, math.inf)
    )
    return {
        "epsilon": eps,
        "delta": d,
        "eta": e,
        "closeness_delta": cd,
        "dim": m,
        "pairs": pair_rows,
        "thetas": theta_rows,
        "max_translation_gap": max_tg,
        "max_translation_closeness_gap": max(r["translation_closeness_gap"] for r in pair_rows),
        "max_covariance_gap": max_cg,
        "max_gaussian_w_infinity_gap": max_gw,
        "max_gaussian_closeness_gap": max(r["gaussian_closeness_gap"] for r in theta_rows.values()),
        "max_divergence_gap": max_div,
        "theorem_5_6": {"lam": max_div, "eta": e, "epsilon": t56.epsilon, "delta": t56.delta},
        "theorem_5_7": {"translation": thm57(max_tg), "gaussian": thm57(max_gw)},
        "note": "all gaps are estimates from finite samples (Chen & Ohrimenko Section 5.4)",
    }
