"""Common interface of calibrated additive-noise mechanisms M(Data) = F(Data) + Z.

Every mechanism is created already calibrated (see :func:`distpriv.calibrate`)
and exposes the noise law it adds, its expected error and its
:class:`~distpriv.guarantees.Guarantee`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._validation import RngLike, as_rng, check_array, check_int
from ..errors import InvalidTypeError
from ..guarantees import Guarantee

NoiseKind = Literal["gaussian", "laplace", "none"]


@dataclass
class AdditiveNoiseMechanism:
    """A calibrated mechanism adding noise Z to a query value F(Data) in R^m.

    Also importable as ``distpriv.Mechanism`` / ``distpriv.mechanisms.Mechanism`` (its name before
    issue 13, kept as an alias). It satisfies :class:`distpriv.protocol.CalibratedMechanism`.

    Gaussian noise: Z ~ N(0, ``noise_covariance``).
    Laplace noise: Z = B · L, where the columns of ``basis`` (m × d) are the
    noise directions and L has independent Lap(``laplace_scale[k]``) entries
    (B = I for per-component noise, B = v for directional noise).

    Attributes
    ----------
    name: registry name (``"expm-gauss"``); label: the papers' table label (``"ExpM (G)"``).
    guarantee: the (ε, δ) claim with its assumptions.
    details: calibration quantities (sensitivities, D_max, per-direction variances, ...).
    """

    name: str
    label: str
    dim: int
    kind: NoiseKind
    guarantee: Guarantee
    covariance: NDArray[np.float64] | None = None
    basis: NDArray[np.float64] | None = None
    scales: NDArray[np.float64] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ noise law
    @property
    def noise_covariance(self) -> NDArray[np.float64]:
        """Covariance of Z: Σ_Z for Gaussian noise, B diag(2b²) Bᵀ for Laplace noise, 0 for none."""
        if self.kind == "gaussian":
            assert self.covariance is not None
            return self.covariance
        if self.kind == "laplace":
            assert self.basis is not None and self.scales is not None
            return (self.basis * (2.0 * self.scales**2)) @ self.basis.T
        return np.zeros((self.dim, self.dim))

    @property
    def laplace_scale(self) -> float | NDArray[np.float64] | None:
        """Laplace scale b (a float when all directions share it); ``None`` for non-Laplace noise."""
        if self.kind != "laplace" or self.scales is None:
            return None
        if np.allclose(self.scales, self.scales[0]):
            return float(self.scales[0])
        return self.scales

    @property
    def noise_std(self) -> NDArray[np.float64]:
        """Per-component standard deviation of Z."""
        return np.sqrt(np.clip(np.diag(self.noise_covariance), 0.0, None))

    # ------------------------------------------------------------------ sampling
    def sample_noise(self, size: int, rng: RngLike = None) -> NDArray[np.float64]:
        """Draw ``size`` noise vectors, shape (size, m), in one vectorised step."""
        n = check_int(size, "size", minimum=1)
        g = as_rng(rng)
        if self.kind == "none":
            return np.zeros((n, self.dim))
        if self.kind == "laplace":
            assert self.basis is not None and self.scales is not None
            lap = g.laplace(0.0, 1.0, size=(n, self.scales.size)) * self.scales
            return lap @ self.basis.T
        cov = self.noise_covariance
        w, v = np.linalg.eigh(cov)
        w = np.clip(w, 0.0, None)
        z = g.standard_normal((n, self.dim)) * np.sqrt(w)
        return z @ v.T

    def release(self, x: ArrayLike, rng: RngLike = None) -> NDArray[np.float64]:
        """Return F(Data) + Z for one query value ``x`` of length m."""
        arr = check_array(x, "x", ndim=1)
        if arr.shape[0] != self.dim:
            raise InvalidTypeError(f"x: expected a query value of length {self.dim}, got {arr.shape[0]}")
        return arr + self.sample_noise(1, rng)[0]

    def release_batch(self, xs: ArrayLike, rng: RngLike = None) -> NDArray[np.float64]:
        """Vectorised release for N query values, shape (N, m) -> (N, m)."""
        arr = check_array(xs, "xs", ndim=2)
        if arr.shape[1] != self.dim:
            raise InvalidTypeError(f"xs: expected rows of length {self.dim}, got {arr.shape[1]}")
        return arr + self.sample_noise(arr.shape[0], rng)

    # ------------------------------------------------------------------ utility
    @property
    def expected_squared_error(self) -> float:
        """E||Z||²_2 = tr(Cov Z) (closed form for every noise law)."""
        return float(np.trace(self.noise_covariance))

    @property
    def expected_l2_error(self) -> float:
        """E||Z||_2.

        Closed forms: isotropic Gaussian σ√2 Γ((r+1)/2)/Γ(r/2) on its rank r; a
        single Gaussian direction σ√(2/π); a single Laplace direction b. Otherwise
        a Monte Carlo estimate from 200,000 draws at a fixed seed (relative
        standard error < 0.3%), recorded in ``details["expected_l2_error_method"]``.
        """
        if self.kind == "none":
            return 0.0
        if self.kind == "laplace":
            assert self.scales is not None
            if self.scales.size == 1:
                return float(self.scales[0])
        else:
            w = np.linalg.eigvalsh(self.noise_covariance)
            tol = 1e-12 * max(1.0, float(w.max(initial=0.0)))
            pos = w[w > tol]
            if pos.size == 0:
                return 0.0
            if np.allclose(pos, pos[0], rtol=1e-9):
                r = pos.size
                return float(math.sqrt(2.0 * pos[0]) * math.exp(special.gammaln((r + 1) / 2) - special.gammaln(r / 2)))
        if "_mc_l2" not in self.details:
            z = self.sample_noise(200_000, np.random.default_rng(20240229))
            self.details["_mc_l2"] = float(np.linalg.norm(z, axis=1).mean())
            self.details["expected_l2_error_method"] = "monte-carlo (200,000 draws, seed 20240229)"
        return float(self.details["_mc_l2"])

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly description (noise law, error, guarantee)."""
        return {
            "mechanism": self.name,
            "label": self.label,
            "noise": self.kind,
            "noise_std": [float(s) for s in self.noise_std],
            "laplace_scale": (
                None
                if self.laplace_scale is None
                else (self.laplace_scale if isinstance(self.laplace_scale, float) else [float(s) for s in self.laplace_scale])
            ),
            "expected_l2_error": self.expected_l2_error,
            "expected_squared_error": self.expected_squared_error,
            "guarantee": self.guarantee.to_dict(),
        }


#: The pre-issue-13 name of :class:`AdditiveNoiseMechanism`, kept as an alias.
Mechanism = AdditiveNoiseMechanism
