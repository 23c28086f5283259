"""The float-safe noise of a release: the chosen mechanism's ideal noise, drawn exactly on a grid.

A chosen candidate (:class:`~distpriv.release.selection.Candidate`) adds noise
Z to F(Data) (stage 1), and with a Theorem 5.7 correction also Z′_k ~ Lap(b′)
on every component (stage 2). :func:`plan_noise` turns it into a
:class:`NoisePlan` whose :meth:`NoisePlan.apply` publishes a post-processing of
that ideal continuous mechanism, drawn with the exact sampler of
:mod:`distpriv.release.sampler` (Mironov 2012-safe):

* **Stage 1.** An orthonormal basis V = [v_1 … v_m] in which Z has independent
  coordinates: the eigenvectors of a Gaussian Σ_Z = V diag(σ²) Vᵀ; for Laplace
  noise Z = B·L along orthonormal directions B (the identity for per-component
  noise), B completed to an orthonormal basis whose extra coordinates carry no
  noise. With y = Vᵀx (exact rational arithmetic), K_k = round((y_k + Z_k)/g)
  is drawn exactly from its law, and s = V·(K g) is the stage-1 output: a
  deterministic function of K, i.e. a post-processing of y + Vᵀ Z, which is
  a bijective image of the ideal release x + Z. The guarantee is unchanged.
* **Stage 2** (Theorem 5.7 only). K′_j = round((s_j + Z′_j)/g) drawn exactly,
  published as K′_j·g. The stage-1 rounding moves the stage-1 output by
  ||V e||₁ <= √m ||e||₂ <= m g/2 in L1 (|e_k| <= g/2). In Theorem 5.7's proof
  (Chen & Ohrimenko App. C.4) the approximate and true mechanisms are coupled
  through F with ||F − F̂||₁ <= W; with the rounding on both sides their
  outputs are then within W + m g, so Z′ ~ Lap((W + m g)/λ) restores
  (ε + 2λ, e^λ δ) — the plan uses that scale instead of W/λ.
* **Output.** Without stage 2, s is rounded to the grid in the standard basis
  (post-processing); every published value is an integer multiple of g.

The grid step g is the largest power of two <= (the smallest noise standard
deviation among the coordinates with noise) / 2^10, so the grid is a function
of the noise law only (public whenever f_θ is modelled from public inputs).
Coordinates whose standard deviation is below 10⁻⁹ of the largest are still
sampled exactly but do not set g. A release without any noise (Theorem 5.4)
publishes F(Data) as is: no grid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import AssumptionError, InvalidTypeError
from ..guarantees import Assumption, AssumptionCode, Guarantee
from ..noise import NoiseLaw
from .sampler import START_PRECISION, BitSource, Law, sample_rounded_many

#: g <= min noise std / 2^GRID_DIVISOR_BITS.
GRID_DIVISOR_BITS = 10
#: Coordinates with std below this fraction of the largest do not set the grid.
_NEGLIGIBLE = 1e-9

SAMPLER_ASSUMPTION: str = Assumption(
    "the noise is drawn exactly from the ideal law rounded to the grid (inverse-CDF sampling of the discrete law "
    f"with mpmath at >= {START_PRECISION}-bit precision; mpmath's erfc/exp assumed accurate to 2^(8 − p) at working "
    "precision p, and, for the comparisons decided first in double precision (2^-30 or more from the CDF value), the C "
    "library's erfc/exp to 2^-31; the operating system's entropy assumed uniform); the published values are a "
    "post-processing of the ideal continuous mechanism",
    AssumptionCode.SAMPLER,
)


def noise_grid(stds: ArrayLike) -> float | None:
    """Largest power of two <= min(std)/2^10 over the non-negligible positive stds; ``None`` without noise."""
    s = np.asarray(stds, dtype=float).ravel()
    s = s[np.isfinite(s) & (s > 0)]
    if s.size == 0:
        return None
    s = s[s >= _NEGLIGIBLE * s.max()]
    target = float(s.min()) / 2.0**GRID_DIVISOR_BITS
    e = math.floor(math.log2(target))
    while 2.0**e > target:  # pragma: no cover - log2 rounding guard
        e -= 1
    while 2.0 ** (e + 1) <= target:  # pragma: no cover - log2 rounding guard
        e += 1
    return 2.0**e


def exact_rotate(basis: NDArray[np.float64], x: NDArray[np.float64]) -> list[Fraction]:
    """y = Vᵀ x in exact rational arithmetic (V and x taken as their exact binary values).

    Every float is M·2^(E−53) with an integer |M| < 2^53 (:func:`numpy.frexp`), so each product
    V_jk x_j is an integer times a power of two; the sums are taken over Python integers on a common
    power of two (numpy object arrays), and one :class:`~fractions.Fraction` is formed per coordinate.
    """
    v = np.asarray(basis, dtype=float)
    xx = np.asarray(x, dtype=float)
    mv, ev = np.frexp(v)
    mx, ex = np.frexp(xx)
    iv = np.ldexp(mv, 53).astype(np.int64).astype(object)
    ix = np.ldexp(mx, 53).astype(np.int64).astype(object)
    e = ev.astype(np.int64) + ex.astype(np.int64)[:, None]
    emin = int(e.min()) if e.size else 0
    prods = (iv * ix[:, None]) << (e - emin).astype(object)
    sums = prods.sum(axis=0) if prods.size else np.zeros(v.shape[1], dtype=object)
    scale = Fraction(2) ** (emin - 106)
    return [Fraction(int(t)) * scale for t in np.atleast_1d(sums)]


def _round_to_grid(values: Sequence[Fraction | float], grid: float) -> list[int]:
    g = Fraction(grid)
    return [math.floor(Fraction(v) / g + Fraction(1, 2)) for v in values]


@dataclass(frozen=True)
class NoisePlan:
    """How a release's noise is drawn (see the module docstring).

    Attributes
    ----------
    basis: (m, m) orthonormal V; ``rotated`` is False when V = I.
    laws, scales: per coordinate of V, the law (``gaussian``: σ, ``laplace``: b, ``none``: 0).
    extra_laplace_scale: stage-2 Laplace scale b′ per component (0 without Theorem 5.7).
    ideal_extra_laplace_scale: the selection's W/λ before the grid correction.
    grid: g, or ``None`` for a noiseless release.
    guarantee: the claim for what :meth:`apply` outputs.
    """

    dim: int
    basis: NDArray[np.float64]
    laws: tuple[Law, ...]
    scales: NDArray[np.float64]
    extra_laplace_scale: float
    ideal_extra_laplace_scale: float
    grid: float | None
    rotated: bool
    guarantee: Guarantee
    theorem_5_7: dict[str, float] = field(default_factory=dict)

    @property
    def noiseless(self) -> bool:
        return self.grid is None

    @property
    def has_stage1(self) -> bool:
        """True when the base mechanism adds noise (stage 1 is then drawn and rounded on the grid)."""
        return any(law != "none" and s > 0 for law, s in zip(self.laws, self.scales, strict=True))

    @property
    def noise_covariance(self) -> NDArray[np.float64]:
        """Covariance of the ideal noise: V diag(var) Vᵀ + 2b′² I (var = σ² or 2b²)."""
        var = np.array([s**2 if law == "gaussian" else 2 * s**2 if law == "laplace" else 0.0
                        for law, s in zip(self.laws, self.scales, strict=True)])
        return (self.basis * var) @ self.basis.T + 2.0 * self.extra_laplace_scale**2 * np.eye(self.dim)

    @property
    def noise_std(self) -> NDArray[np.float64]:
        """Per-statistic standard deviation of the ideal noise."""
        return np.sqrt(np.clip(np.diag(self.noise_covariance), 0.0, None))

    @property
    def kind(self) -> str:
        """``gaussian``, ``laplace``, ``none``, or ``<stage 1>+laplace`` with a Theorem 5.7 stage."""
        used = sorted({law for law, s in zip(self.laws, self.scales, strict=True) if law != "none" and s > 0})
        base = "+".join(used) if used else "none"
        if self.extra_laplace_scale > 0:
            return "laplace" if base == "none" else f"{base}+laplace"
        return base

    def apply(self, x: ArrayLike, source: BitSource) -> NDArray[np.float64]:
        """Publish M(x): the values on the grid (or x itself when noiseless)."""
        arr = np.asarray(x, dtype=float)
        if arr.shape != (self.dim,):
            raise InvalidTypeError(f"x: expected a query value of length {self.dim}, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise InvalidTypeError("x: the statistics must be finite")
        if self.grid is None:
            return arr.copy()
        g = self.grid
        if not self.has_stage1:
            ys: list[Fraction] = []
        elif self.rotated:
            ys = exact_rotate(self.basis, arr)
        else:
            ys = [Fraction(float(v)) for v in arr]
        if self.has_stage1:
            ks = sample_rounded_many(ys, g, list(self.laws), [float(s) for s in self.scales], source)
            kg = np.asarray(ks, dtype=float) * g
            stage1: NDArray[np.float64] = self.basis @ kg if self.rotated else kg
        else:  # Theorem 5.7 noise only: stage 1 is F(Data) itself, not rounded
            stage1 = arr
        if self.extra_laplace_scale > 0:
            out = sample_rounded_many([float(v) for v in stage1], g, ["laplace"] * self.dim,
                                      [self.extra_laplace_scale] * self.dim, source)
        else:
            out = _round_to_grid([float(v) for v in stage1], g)
        return np.asarray(out, dtype=float) * g

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description of the noise law (no data)."""
        d: dict[str, Any] = {
            "kind": self.kind,
            "basis": "rotated" if self.rotated else "standard",
            "grid": self.grid,
            "grid_log2": None if self.grid is None else int(round(math.log2(self.grid))),
            "noise_std": [float(s) for s in self.noise_std],
            "extra_laplace_scale": self.extra_laplace_scale,
            "sampler": ("none: the statistics are released as they are (Theorem 5.4)" if self.grid is None else
                        "exact inverse-CDF sampling of round((y + Z)/g) (mpmath, lazily drawn uniform bits)"),
        }
        d["coordinates"] = [{"law": law, "scale": float(s)} for law, s in zip(self.laws, self.scales, strict=True)]
        if self.theorem_5_7:
            d["theorem_5_7"] = dict(self.theorem_5_7)
        return d


def plan_noise(candidate: Any) -> NoisePlan:
    """The float-safe :class:`NoisePlan` of a chosen candidate (grid, basis, Theorem 5.7 scale with W + m·g).

    The plan reads the candidate's :class:`~distpriv.noise.NoiseLaw` (``candidate.noise``): the base law's
    independent coordinates (:meth:`~distpriv.noise.NoiseLaw.coordinates`) for stage 1, its Theorem 5.7 scale
    for stage 2.
    """
    if candidate.guarantee is None:
        raise AssumptionError(f"{candidate.name}: a rejected candidate cannot be released")
    dim = int(candidate.dim)
    law: NoiseLaw = candidate.noise
    if law.dim != dim:
        raise InvalidTypeError(f"candidate: noise of dimension {law.dim} for {dim} statistics")
    coords = law.base.coordinates(candidate.name if candidate.base is None else candidate.base.name)
    v, laws, scales, rotated = coords.basis, list(coords.laws), coords.scales, coords.rotated
    stage1_std = coords.stds
    extra = float(law.extra_laplace)
    grid = noise_grid(np.concatenate([stage1_std, [math.sqrt(2.0) * extra]]))
    guarantee: Guarantee = candidate.guarantee
    t57: dict[str, float] = {}
    new_extra = extra
    if extra > 0 and grid is not None and any(law != "none" and s > 0 for law, s in zip(laws, scales, strict=True)):
        # the stage-1 rounding is paid for in Theorem 5.7's W (module docstring)
        rel = candidate.relaxation
        w, lam = (None, None) if rel is None else (rel.w, rel.lam)
        if w is None or lam is None or not lam > 0:
            raise AssumptionError(
                f"{candidate.name}: Theorem 5.7 noise without its W and λ; the grid rounding cannot be accounted for"
            )
        w_eff = float(w) + dim * grid
        new_extra = w_eff / float(lam)
        t57 = {"W": float(w), "lambda": float(lam), "W_with_grid": w_eff}
        guarantee = guarantee.with_assumptions(
            f"stage-1 output rounded to the grid g = {grid:.6g} in the noise basis moves it by at most m·g/2 in L1, so "
            f"Theorem 5.7 is applied with W + m·g = {w_eff:.6g}: extra noise Lap({new_extra:.6g}) instead of "
            f"Lap({extra:.6g})"
        )
    if grid is not None:
        guarantee = guarantee.with_assumptions(SAMPLER_ASSUMPTION)
    return NoisePlan(dim, v, tuple(laws), scales, new_extra, extra, grid, rotated, guarantee, t57)
