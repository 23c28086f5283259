"""Sample estimates of how far f_θ is from the Expected Value mechanisms' approximations (Chen & Ohrimenko Sec. 5.4).

The W of Theorem 5.7 (W∞ to translates, :func:`translation_gap`; to Gaussians,
:func:`gaussian_w_infinity_gap`), the λ of Theorem 5.6 at η (:func:`approx_max_divergence_gap`)
and the equal-covariance gap of Section 5.3 (:func:`equal_covariance_gap`). They work on
finite samples and are estimates, not certificates: a finite sample cannot prove a bound on
a divergence or a distance of the underlying distributions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import distances
from .._validation import (
    RngLike,
    as_rng,
    check_array,
    check_delta,
    check_int,
    check_psd,
)
from ..divergences import symmetric_approx_max_divergence
from ..errors import InvalidParameterError
from ..models import normalize_pairs

FloatArray = NDArray[np.float64]


# --------------------------------------------------------------------------- estimators
def _samples(value: ArrayLike, name: str) -> FloatArray:
    arr = check_array(value, name, ndim=(1, 2))
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.shape[0] < 2:
        raise InvalidParameterError(f"need at least 2 samples, got {arr.shape[0]}", argument=name)
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
    xs, ys = translation_gap_inputs(x, y, max_samples=max_samples, rng=as_rng(rng))
    if d == 0.0:
        return distances.w_infinity_samples(xs, ys, norm=norm)
    return distances.closeness_radius_samples(xs, ys, d, norm=norm)


def translation_gap_inputs(x: FloatArray, y: FloatArray, *, max_samples: int | None,
                           rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    """The two samples :func:`translation_gap` compares: (subsampled x, subsampled y + (x̄ − ȳ)); draws from ``rng``."""
    shift = x.mean(axis=0) - y.mean(axis=0)
    xs = _subsample(x, max_samples, rng)
    return xs, _subsample(y, max_samples, rng) + shift


def gaussian_gap_inputs(x: FloatArray, mean: ArrayLike | None, cov: ArrayLike | None, *, max_samples: int | None,
                        rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    """The two samples :func:`gaussian_w_infinity_gap` compares: (subsampled x, its Gaussian reference sample)."""
    xs = _subsample(x, max_samples, rng)
    mu, sigma = _fit(xs, mean, cov)
    return xs, _gaussian_quantile_sample(mu, sigma, xs.shape[0], rng)


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
        from scipy.special import ndtri  # lazy (issue 26): scipy.special costs ~0.3 s to import

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
    x, ref = gaussian_gap_inputs(x, mean, cov, max_samples=max_samples, rng=as_rng(rng))
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


#: Most histogram cells :func:`approx_max_divergence_gap` builds (b^m).
MAX_CELLS = 5_000_000


def histogram_bins(n_samples: int, dim: int) -> int:
    """Default cells per axis of :func:`approx_max_divergence_gap`: max(2, ⌊(N/20)^{1/m}⌋), about 20 samples per cell."""
    return max(2, int((n_samples / 20.0) ** (1.0 / dim)))


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
        b = histogram_bins(n, m)
    else:
        b = check_int(bins, "bins", minimum=2)
    if b**m > MAX_CELLS:
        raise InvalidParameterError(f"bins: {b}^{m} cells is too many; use fewer bins per axis")
    mu, sigma = _fit(x, mean, cov)
    z = _whitener(mu, sigma)(x)
    from scipy.special import ndtri  # lazy (issue 26): scipy.special costs ~0.3 s to import

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
