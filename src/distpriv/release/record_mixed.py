"""Laplace distribution privacy plus Gaussian record-level DP in one release (:mod:`distpriv.release.record`).

When the distribution-private mechanism of least error adds Laplace noise along orthonormal directions B
(ExpM (L): B = I, DirM (L): B = the direction of Δμ), no Gaussian covariance gives the same error, and a
Laplace law alone gives no record-level guarantee in the directions it leaves noiseless. The release is
then, in the orthonormal basis V = [B | C] (C completing B) and y = Vᵀx:

    K_k = round((y_k + L_k)/g),   L_k ~ Lap(b_k)                 k <= d  (the Laplace candidate's noise)
    K′_k = round((K_k g + G_k)/g) for k <= d,  round((y_k + G_k)/g) for k > d,   G_k ~ N(0, σ_k²)
    published: V·K′g rounded to the grid g in the standard basis,

every K drawn exactly from its law (:mod:`distpriv.release.sampler`).

* **Distribution privacy**: the output is a function of (y_{<=d} + L, y_{>d}) — the ideal Laplace
  mechanism's output — and of independent randomness: post-processing, the Laplace candidate's claim holds.
* **Record DP**: for neighbours x, x′ = x + v couple L; given L the output is the Gaussian mechanism
  z ↦ z + V diag(σ) N applied to z = (K_{<=d} g, y_{>d}), and z − z′ differs from Vᵀv by at most g on each
  coordinate k <= d (two roundings). The hockey-stick divergence is jointly convex, so the mixture over L
  is (E, D)-DP when the Gaussian mechanism is for every shift Vᵀv + r, |r_k| <= g (k <= d):
  μ <= max_v ‖diag(σ)⁻¹Vᵀv‖ + g (Σ_{k<=d} σ_k⁻²)^{1/2} (+ the floating-point term of the record module).
  σ is the least Σσ_k² meeting μ <= D*(E, D) (a convex program: Σ_k c_k²/s_k <= μ² per vertex c = Vᵀv),
  scaled up until the rounding term fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidParameterError, InvalidTypeError
from ..guarantees import Guarantee
from ..noise import _complete_basis
from .noise import SAMPLER_ASSUMPTION, _round_to_grid, exact_rotate, noise_grid
from .sampler import BitSource, sample_rounded_many
from .selection import Candidate

_MC_DRAWS = 200_000
_MC_SEED = 20240229


@dataclass
class MixedCandidate(Candidate):
    """A Laplace candidate plus Gaussian record noise diagonal in V (module docstring)."""

    basis_v: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    lap_scales: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    sigma: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))

    @property
    def noise_covariance(self) -> NDArray[np.float64]:
        d = len(self.lap_scales)
        var = self.sigma**2
        var[:d] += 2.0 * self.lap_scales**2
        return np.asarray((self.basis_v * var) @ self.basis_v.T, dtype=float)

    def sample_noise(self, size: int, rng: Any = None) -> NDArray[np.float64]:
        g = np.random.default_rng(rng)
        d = len(self.lap_scales)
        z = g.standard_normal((size, self.dim)) * self.sigma
        z[:, :d] += g.laplace(0.0, 1.0, size=(size, d)) * self.lap_scales
        return np.asarray(z @ self.basis_v.T, dtype=float)


def _grid(lap: NDArray[np.float64], sigma: NDArray[np.float64]) -> float:
    g = noise_grid(np.concatenate([math.sqrt(2.0) * lap, sigma]))
    assert g is not None
    return g


def mixed_mu(v: NDArray[np.float64], lap: NDArray[np.float64], sigma: NDArray[np.float64], sens: Any) -> float:
    """The μ of the record claim (module docstring), with the grid the plan will use."""
    d = len(lap)
    c = sens.vertices() @ v
    q = float(np.max(np.sum((c / sigma) ** 2, axis=1)))
    g = _grid(lap, sigma)
    rounding = g * math.sqrt(float(np.sum(sigma[:d] ** -2.0)))
    floating = 2.0 * float(np.linalg.norm(sens.slack)) / float(sigma.min())
    return math.sqrt(q) + rounding + floating


def _solve_sigma(v: NDArray[np.float64], sens: Any, mu: float) -> NDArray[np.float64]:
    import cvxpy as cp

    c2 = np.unique((sens.vertices() @ v) ** 2, axis=0)  # one row per distinct constraint
    m = v.shape[0]
    s = cp.Variable(m, pos=True)
    cons = [c2 @ cp.inv_pos(s) <= mu * mu]  # Σ_i c_i²/s_i <= μ² per vertex, one vectorised constraint
    prob = cp.Problem(cp.Minimize(cp.sum(s)), cons)
    prob.solve(solver=cp.CLARABEL)
    if s.value is None or prob.status not in ("optimal", "optimal_inaccurate"):
        raise InvalidParameterError(f"the record-DP program was not solved (status {prob.status!r})",
                                    argument="record_epsilon")
    return np.sqrt(np.clip(np.asarray(s.value, dtype=float), 1e-300, None))


def mixed_candidate(cand: Candidate, sens: Any, mu_star: float) -> MixedCandidate:
    """``cand`` (Laplace noise along orthonormal directions, no Theorem 5.7 stage) plus the least Gaussian record noise."""
    base = cand.base
    if base is None or not base.noise.pure or cand.extra_laplace_scale > 0:
        raise InvalidParameterError(f"{cand.name}: not a plain Laplace mechanism", argument="record_epsilon")
    b = np.asarray(base.basis, dtype=float)
    lap = np.asarray(base.scales, dtype=float).ravel()
    if b.ndim != 2 or np.abs(b.T @ b - np.eye(b.shape[1])).max() > 1e-9:
        raise InvalidParameterError(f"{cand.name}: Laplace directions not orthonormal", argument="record_epsilon")
    v = _complete_basis(b)
    sigma = _solve_sigma(v, sens, mu_star * (1 - 1e-3))
    k_lo, k_hi = 1.0, 1.0
    while mixed_mu(v, lap, k_hi * sigma, sens) > mu_star:
        k_hi *= 1.01
        if k_hi > 1e6:  # pragma: no cover - the rounding term shrinks with σ
            raise InvalidParameterError("record noise cannot be padded", argument="record_epsilon")
    if k_hi > 1.0:
        k_lo = k_hi / 1.01
        for _ in range(40):
            mid = 0.5 * (k_lo + k_hi)
            k_lo, k_hi = (k_lo, mid) if mixed_mu(v, lap, mid * sigma, sens) <= mu_star else (mid, k_hi)
    sigma = k_hi * sigma
    g = np.random.default_rng(_MC_SEED)
    z = g.standard_normal((_MC_DRAWS, v.shape[0])) * sigma
    z[:, : len(lap)] += g.laplace(0.0, 1.0, size=(_MC_DRAWS, len(lap))) * lap
    err = float(np.linalg.norm(z, axis=1).mean())
    guarantee = cand.guarantee
    assert guarantee is not None
    guarantee = guarantee.with_assumptions(
        "record-DP Gaussian noise added to the Laplace release in its own basis (post-processing of the ideal "
        "Laplace mechanism's output: the distribution-privacy claim is unchanged)")
    return MixedCandidate(cand.name, f"{cand.label} + record DP (G)", True,
                          f"{cand.reason}; plus the least Gaussian noise meeting record DP", cand.dim, base, 0.0,
                          cand.correction, guarantee, err, cand.relaxation, None, list(cand.notes),
                          basis_v=v, lap_scales=lap, sigma=sigma)


class MixedPlan:
    """The float-safe plan of a :class:`MixedCandidate` (module docstring); the NoisePlan interface.

    ``basis`` is [B | V] (m × (d + m)) with ``laws`` Laplace × d then Gaussian × m, so the marginal laws, the
    covariance and the rounding bounds of :mod:`distpriv.release.intervals` read it as they read a NoisePlan.
    """

    def __init__(self, cand: MixedCandidate) -> None:
        v = np.asarray(cand.basis_v, dtype=float)
        d = len(cand.lap_scales)
        self.dim = int(cand.dim)
        self.v = v
        self.d = d
        self.basis = np.hstack([v[:, :d], v])
        self.laws = tuple(["laplace"] * d + ["gaussian"] * self.dim)
        self.scales = np.concatenate([cand.lap_scales, cand.sigma])
        self.extra_laplace_scale = 0.0
        self.ideal_extra_laplace_scale = 0.0
        self.grid: float | None = _grid(cand.lap_scales, cand.sigma)
        self.rotated = True
        self.theorem_5_7: dict[str, float] = {}
        assert cand.guarantee is not None
        self.guarantee: Guarantee = cand.guarantee.with_assumptions(SAMPLER_ASSUMPTION)

    noiseless = False
    has_stage1 = True
    kind = "gaussian+laplace"

    @property
    def noise_covariance(self) -> NDArray[np.float64]:
        var = np.array([s**2 if law == "gaussian" else 2 * s**2 for law, s in zip(self.laws, self.scales, strict=True)])
        return np.asarray((self.basis * var) @ self.basis.T, dtype=float)

    @property
    def noise_std(self) -> NDArray[np.float64]:
        return np.sqrt(np.clip(np.diag(self.noise_covariance), 0.0, None))

    def apply(self, x: ArrayLike, source: BitSource) -> NDArray[np.float64]:
        """Publish the mixed release of x (module docstring)."""
        arr = np.asarray(x, dtype=float)
        if arr.shape != (self.dim,) or not np.all(np.isfinite(arr)):
            raise InvalidTypeError(f"x: expected {self.dim} finite statistics, got shape {arr.shape}")
        assert self.grid is not None
        g = self.grid
        ys = exact_rotate(self.v, arr)
        d = self.d
        k1 = sample_rounded_many(ys[:d], g, ["laplace"] * d, [float(s) for s in self.scales[:d]], source)
        y2: list[Fraction] = [Fraction(k) * Fraction(g) for k in k1] + list(ys[d:])
        k2 = sample_rounded_many(y2, g, ["gaussian"] * self.dim, [float(s) for s in self.scales[d:]], source)
        stage = self.v @ (np.asarray(k2, dtype=float) * g)
        return np.asarray(_round_to_grid([float(t) for t in stage], g), dtype=float) * g

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "basis": "rotated", "grid": self.grid,
            "grid_log2": None if self.grid is None else int(round(math.log2(self.grid))),
            "noise_std": [float(s) for s in self.noise_std], "extra_laplace_scale": 0.0,
            "sampler": "exact inverse-CDF sampling: Laplace stage round((y + L)/g) on the distribution-privacy "
                       "directions, then Gaussian stage round((K g + G)/g) on every coordinate (record DP)",
            "coordinates": [{"law": law, "scale": float(s)} for law, s in zip(self.laws, self.scales, strict=True)],
        }
