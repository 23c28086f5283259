"""The noise law Z of an additive mechanism M(Data) = F(Data) + Z: the one owner of the noise (issue 24).

A :class:`NoiseLaw` is immutable and describes Z completely:

* **Gaussian** Z ~ N(0, Σ_Z) (``NoiseLaw.gaussian(cov)``; Chen & Ohrimenko Sec. 5.1–5.3, Zhang et al. APGM);
* **Laplace** Z = B·L, L_k ~ Lap(b_k) independent, B an m × d matrix of noise directions
  (``NoiseLaw.laplace(basis, scales)``; B = I for per-component noise, B = v for DirM (L));
* **none** Z = 0 (``NoiseLaw.none(m)``; Theorem 5.4's release without noise);

plus, optionally, independent Z′_k ~ Lap(b′) on every component (``law.plus_laplace(b′)``: Theorem 5.7's
correction). Everything the library needs from the noise is here — drawing it (:meth:`NoiseLaw.sample`,
the only place noise of a research mechanism is drawn), its covariance, per-statistic marginals
(:meth:`NoiseLaw.marginal_std`, :meth:`NoiseLaw.coordinates` for the exact float-safe sampler and the
intervals), E||Z||₂ (:meth:`NoiseLaw.expected_l2`, the one estimator), and the family-specific branches
of the exact accounting (:meth:`NoiseLaw.match`, the hook :mod:`distpriv.accounting.release` and the audit
dispatch on). No other module compares noise kinds.

Constructing a law for a new mechanism::

    from distpriv.noise import NoiseLaw
    noise = NoiseLaw.gaussian(sigma**2 * np.eye(m))            # or NoiseLaw.laplace(np.eye(m), np.full(m, b))
    Mechanism(name, label, m, noise, guarantee, details={...})
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ._validation import RngLike, as_rng, check_int
from .errors import AssumptionError, InvalidParameterError, InvalidTypeError

NoiseKind = Literal["gaussian", "laplace", "none"]
#: 1-D law of one independent noise coordinate (the exact sampler's :data:`distpriv.release.sampler.Law`).
CoordinateLaw = Literal["gaussian", "laplace", "none"]
T = TypeVar("T")

#: Seed of the Monte Carlo estimates of E||Z||₂ (a pure function of the noise law).
L2_SEED = 20240229
#: Draws for the shape-normalised estimate (base noise only) and for Theorem 5.7 sums.
_L2_DRAWS = 200_000
_SUM_DRAWS = 50_000
#: Monte Carlo draws are generated in blocks of at most this many numbers (memory bound for many statistics).
_BLOCK = 5_000_000
_L2_CACHE: dict[tuple[Any, ...], float] = {}


def _draws_for(dim: int, draws: int) -> int:
    """Monte Carlo draws for E||Z||₂ in ``dim`` dimensions: all up to 25 statistics, then ~5·10⁶/m (>= 5,000).

    ||Z||₂ concentrates as m grows (its relative spread is O(1/√m)), so fewer draws keep the same accuracy.
    """
    return draws if dim <= 25 else max(5_000, min(draws, _BLOCK // dim))


def _chunks(n: int, dim: int) -> list[int]:
    """Row counts of the blocks of an (n, dim) draw, each at most :data:`_BLOCK` numbers (one block if it fits)."""
    rows = max(1, _BLOCK // max(dim, 1))
    return [min(rows, n - i) for i in range(0, n, rows)]


@dataclass(frozen=True)
class NoiseCoordinates:
    """Z in an orthonormal basis V = [v_1 … v_m] where its coordinates are independent (base noise only).

    Gaussian Σ_Z = V diag(σ²) Vᵀ (V = I when Σ_Z is diagonal); Laplace Z = B·L with orthonormal B,
    completed to an orthonormal basis whose extra coordinates carry no noise. ``laws[k]`` and
    ``scales[k]`` are the 1-D law of coordinate k (σ for Gaussian, b for Laplace, 0 for none);
    ``rotated`` is False when V = I.
    """

    basis: NDArray[np.float64]
    laws: tuple[CoordinateLaw, ...]
    scales: NDArray[np.float64]
    rotated: bool

    @property
    def stds(self) -> NDArray[np.float64]:
        """Standard deviation of each coordinate (σ, or √2·b for Laplace)."""
        return np.where(np.array(self.laws) == "gaussian", self.scales, np.sqrt(2.0) * self.scales)


def _complete_basis(b: NDArray[np.float64]) -> NDArray[np.float64]:
    """[B | C] with C an orthonormal basis of the orthogonal complement of B's columns."""
    m, d = b.shape
    if d == m:
        return b
    _, _, vt = np.linalg.svd(b.T, full_matrices=True)
    return np.hstack([b, vt[d:].T])


@dataclass(frozen=True, eq=False)
class NoiseLaw:
    """The law of the noise Z a mechanism adds (see the module docstring).

    Build it with :meth:`gaussian`, :meth:`laplace` or :meth:`none` (and :meth:`plus_laplace` for
    Theorem 5.7's extra noise); the fields are the law's parameters: ``covariance`` Σ_Z (Gaussian),
    ``basis`` B and ``scales`` b (Laplace), ``extra_laplace`` b′ (0 without Theorem 5.7).
    """

    kind: NoiseKind
    dim: int
    covariance: NDArray[np.float64] | None = None
    basis: NDArray[np.float64] | None = None
    scales: NDArray[np.float64] | None = None
    extra_laplace: float = 0.0

    # ------------------------------------------------------------------ construction
    @classmethod
    def gaussian(cls, covariance: ArrayLike) -> NoiseLaw:
        """Z ~ N(0, covariance) (an m × m positive semi-definite matrix, stored as given)."""
        c = np.atleast_2d(np.asarray(covariance, dtype=float))
        if c.ndim != 2 or c.shape[0] != c.shape[1]:
            raise InvalidTypeError(f"covariance: expected a square matrix, got shape {c.shape}")
        return cls("gaussian", c.shape[0], covariance=c)

    @classmethod
    def laplace(cls, basis: ArrayLike, scales: ArrayLike) -> NoiseLaw:
        """Z = B·L with L_k ~ Lap(scales[k]) independent; ``basis`` is m × d (one column per scale)."""
        b = np.atleast_2d(np.asarray(basis, dtype=float))
        s = np.atleast_1d(np.asarray(scales, dtype=float))
        if b.shape[1] != s.size:
            raise InvalidTypeError(f"scales: expected {b.shape[1]} Laplace scales (one per basis column), got {s.size}")
        if np.any(s < 0) or not np.all(np.isfinite(s)):
            raise InvalidParameterError("scales: Laplace scales must be finite and >= 0", argument="scales")
        return cls("laplace", b.shape[0], basis=b, scales=s)

    @classmethod
    def none(cls, dim: int) -> NoiseLaw:
        """No noise: Z = 0 in R^dim."""
        return cls("none", int(dim))

    def plus_laplace(self, scale: float) -> NoiseLaw:
        """This law plus independent Lap(``scale``) on every component (Theorem 5.7's Z′)."""
        return replace(self, extra_laplace=float(scale))

    @classmethod
    def of(cls, mechanism: Any) -> NoiseLaw:
        """The noise law of a mechanism: its ``noise``; for a duck-typed object of the pre-issue-24 shape, the law
        of its ``kind`` with ``noise_covariance`` (Gaussian), ``basis`` and ``scales`` (Laplace) or ``dim`` (none)."""
        law = getattr(mechanism, "noise", None)
        if isinstance(law, NoiseLaw):
            return law
        kind = getattr(mechanism, "kind", None)
        if kind == "gaussian":
            return cls.gaussian(mechanism.noise_covariance)
        if kind == "laplace":
            return cls.laplace(mechanism.basis, mechanism.scales)
        if kind == "none":
            return cls.none(mechanism.dim)
        raise InvalidTypeError(f"mechanism: expected a mechanism with a NoiseLaw, got {type(mechanism).__name__}")

    def accountable(self) -> NoiseLaw:
        """This law, checked for the exact accounting: Laplace scales > 0 and no Theorem 5.7 noise.

        A zero Laplace scale adds no noise along its direction (a pure or (ε, δ) loss is then
        unbounded or undefined there); Theorem 5.7's sum is accounted for by the theorem instead.
        """
        if self.kind == "laplace" and np.any(np.asarray(self.scales) <= 0):
            raise InvalidParameterError("scales: Laplace scales must be > 0")
        if self.extra_laplace > 0:
            raise InvalidTypeError("noise: Theorem 5.7's extra Laplace noise is accounted for by the theorem, "
                                   "not by an exact profile")
        return self

    @property
    def base(self) -> NoiseLaw:
        """The law without Theorem 5.7's extra Laplace noise."""
        return replace(self, extra_laplace=0.0) if self.extra_laplace else self

    # ------------------------------------------------------------------ the family hook
    def match(self, *, gaussian: Callable[[NDArray[np.float64]], T],
              laplace: Callable[[NDArray[np.float64], NDArray[np.float64]], T],
              none: Callable[[], T] | None = None) -> T:
        """Dispatch on the noise family: ``gaussian(Σ_Z)``, ``laplace(B, b)`` or ``none()``.

        Without ``none``, no noise is the Gaussian N(0, 0) (``gaussian`` gets the zero matrix). This is
        the one place code chooses by noise family (exact profiles, audit scorers); Theorem 5.7's extra
        noise is not part of the dispatch (its privacy follows from the theorem, not from a profile).
        """
        if self.kind == "laplace":
            assert self.basis is not None and self.scales is not None
            return laplace(self.basis, self.scales)
        if self.kind == "gaussian":
            assert self.covariance is not None
            return gaussian(self.covariance)
        return none() if none is not None else gaussian(np.zeros((self.dim, self.dim)))

    @property
    def noiseless(self) -> bool:
        """True iff no noise is added at all (Z = 0: Theorem 5.4's release)."""
        return self.kind == "none" and self.extra_laplace == 0.0

    @property
    def adds_gaussian(self) -> bool:
        """True iff Z is Gaussian N(0, Σ_Z) (a law of that family that is not the no-noise law)."""
        return self.kind == "gaussian" and self.extra_laplace == 0.0

    @property
    def pure(self) -> bool:
        """True iff the law can support a pure-ε claim (Laplace noise; a Gaussian has no pure ε)."""
        return self.kind == "laplace"

    @property
    def gaussian_family(self) -> bool:
        """True iff Z is Gaussian, possibly degenerate (N(0, 0) for no noise): profiles are Gaussian."""
        return self.kind != "laplace" and self.extra_laplace == 0.0

    @property
    def label(self) -> str:
        """``gaussian``, ``laplace``, ``none``, or ``<base>+laplace`` with Theorem 5.7's noise."""
        if self.extra_laplace > 0:
            return "laplace" if self.kind == "none" else f"{self.kind}+laplace"
        return self.kind

    # ------------------------------------------------------------------ second moments
    @property
    def gaussian_covariance(self) -> NDArray[np.float64]:
        """Σ_Z of the Gaussian part, symmetrised (the zero matrix without Gaussian noise)."""
        if self.kind == "gaussian" and self.covariance is not None:
            return 0.5 * (self.covariance + self.covariance.T)
        return np.zeros((self.dim, self.dim))

    @property
    def covariance_matrix(self) -> NDArray[np.float64]:
        """Cov Z: Σ_Z for Gaussian noise, B diag(2b²) Bᵀ for Laplace noise, 0 for none (+ 2b′²I with Thm 5.7)."""
        if self.kind == "gaussian":
            assert self.covariance is not None
            cov = self.covariance
        elif self.kind == "laplace":
            assert self.basis is not None and self.scales is not None
            cov = (self.basis * (2.0 * self.scales**2)) @ self.basis.T
        else:
            cov = np.zeros((self.dim, self.dim))
        if self.extra_laplace > 0:
            cov = cov + 2.0 * self.extra_laplace**2 * np.eye(self.dim)
        return cov

    @property
    def laplace_scale(self) -> float | NDArray[np.float64] | None:
        """Laplace scale b (a float when all directions share it); ``None`` for non-Laplace noise."""
        if self.kind != "laplace" or self.scales is None:
            return None
        if np.allclose(self.scales, self.scales[0]):
            return float(self.scales[0])
        return self.scales

    def marginal_std(self) -> NDArray[np.float64]:
        """Per-statistic standard deviation of Z: sqrt(diag Cov Z)."""
        return np.sqrt(np.clip(np.diag(self.covariance_matrix), 0.0, None))

    @property
    def expected_squared_error(self) -> float:
        """E||Z||²₂ = tr Cov Z (closed form for every law)."""
        return float(np.trace(self.covariance_matrix))

    # ------------------------------------------------------------------ transformations
    def scaled(self, factor: float) -> NoiseLaw:
        """Every noise coordinate multiplied by ``factor`` (covariance × factor²; base noise)."""
        if self.kind == "gaussian":
            return NoiseLaw.gaussian(self.gaussian_covariance * factor * factor)
        if self.kind == "laplace":
            assert self.basis is not None and self.scales is not None
            return NoiseLaw.laplace(self.basis, self.scales * factor)
        return self

    def plus_isotropic(self, variance: float) -> NoiseLaw:
        """Add independent N(0, variance·I) (Gaussian and no-noise laws)."""
        if not self.gaussian_family:
            raise InvalidTypeError("noise: isotropic Gaussian top-up applies to Gaussian noise only")
        return NoiseLaw.gaussian(self.gaussian_covariance + variance * np.eye(self.dim))

    def coordinates(self, name: str = "noise") -> NoiseCoordinates:
        """The base noise in an orthonormal basis of independent coordinates (:class:`NoiseCoordinates`).

        Raises :class:`~distpriv.errors.AssumptionError` for Laplace directions that are not orthonormal
        (``name`` names the mechanism in the message).
        """
        dim = self.dim
        eye = np.eye(dim)
        one: tuple[CoordinateLaw, ...] = ("gaussian",)
        gauss = one * dim
        if self.kind == "gaussian":
            cov = np.asarray(self.covariance, dtype=float)
            if not np.any(cov - np.diag(np.diag(cov))):
                return NoiseCoordinates(eye, gauss, np.sqrt(np.clip(np.diag(cov), 0.0, None)), False)
            w, v = np.linalg.eigh(cov)
            return NoiseCoordinates(v, gauss, np.sqrt(np.clip(w, 0.0, None)), True)
        if self.kind == "laplace":
            b = np.asarray(self.basis, dtype=float)
            scales = np.asarray(self.scales, dtype=float).ravel()
            if b.shape == (dim, dim) and np.array_equal(b, eye):
                lap1: tuple[CoordinateLaw, ...] = ("laplace",)
                return NoiseCoordinates(eye, lap1 * dim, scales, False)
            if np.abs(b.T @ b - np.eye(b.shape[1])).max() > 1e-9:
                raise AssumptionError(
                    f"{name}: the Laplace noise directions are not orthonormal; float-safe sampling needs "
                    "independent noise coordinates in an orthonormal basis"
                )
            lap: tuple[CoordinateLaw, ...] = ("laplace",)
            none: tuple[CoordinateLaw, ...] = ("none",)
            laws = lap * b.shape[1] + none * (dim - b.shape[1])
            return NoiseCoordinates(_complete_basis(b), laws, np.concatenate([scales, np.zeros(dim - b.shape[1])]),
                                    True)
        nothing: tuple[CoordinateLaw, ...] = ("none",)
        return NoiseCoordinates(eye, nothing * dim, np.zeros(dim), False)

    def density_transform(self) -> tuple[NDArray[np.float64] | None, str]:
        """(T, metric) with noise density ∝ exp(−½|Tᵀz|²) (``l2``) or exp(−|Tᵀz|₁) (``l1``), for the audit's scorers.

        Gaussian: T = V diag(w)^(−1/2) from Σ_Z = V diag(w) Vᵀ, ``None`` when Σ_Z is singular. Laplace
        z = B L with invertible square B: L = B⁻¹z, density ∝ exp(−Σ_k |(B⁻¹z)_k|/b_k), T = B⁻ᵀ/b
        (metric ``l1``), ``None`` when B is not invertible. No noise: (``None``, ``l2``).
        """
        def gauss(cov: NDArray[np.float64]) -> tuple[NDArray[np.float64] | None, str]:
            w, v = np.linalg.eigh(np.asarray(cov, dtype=float))
            if w.min() <= 1e-12 * max(float(w.max()), 1e-300):
                return None, "l2"
            return v / np.sqrt(w), "l2"

        def lap(basis: NDArray[np.float64], scales: NDArray[np.float64]) -> tuple[NDArray[np.float64] | None, str]:
            m = self.dim
            if basis.shape != (m, m) or abs(np.linalg.det(basis)) < 1e-12:
                return None, "l1"
            return (np.linalg.inv(basis).T / scales[None, :]), "l1"

        return self.match(gaussian=gauss, laplace=lap)

    # ------------------------------------------------------------------ sampling
    def sample(self, rng: RngLike, size: int) -> NDArray[np.float64]:
        """Draw ``size`` noise vectors, shape (size, m), in one vectorised step.

        Gaussian: Σ_Z = V diag(w) Vᵀ, Z = (N ⊙ √w) Vᵀ; Laplace: Z = (Lap(1) ⊙ b) Bᵀ; then
        Theorem 5.7's Lap(b′) per component when present (drawn after the base noise).
        """
        n = check_int(size, "size", minimum=1)
        g = as_rng(rng)
        if self.kind == "none":
            z = np.zeros((n, self.dim))
        elif self.kind == "laplace":
            assert self.basis is not None and self.scales is not None
            z = (g.laplace(0.0, 1.0, size=(n, self.scales.size)) * self.scales) @ self.basis.T
        else:
            assert self.covariance is not None
            w, v = np.linalg.eigh(self.covariance)
            w = np.clip(w, 0.0, None)
            z = (g.standard_normal((n, self.dim)) * np.sqrt(w)) @ v.T
        if self.extra_laplace > 0:
            z = z + g.laplace(0.0, self.extra_laplace, size=(n, self.dim))
        return z

    # ------------------------------------------------------------------ E||Z||₂
    def expected_l2(self) -> tuple[float, str | None]:
        """(E||Z||₂, how it was estimated): ``None`` for a closed form, else the Monte Carlo method.

        Closed forms: no noise 0; one Laplace direction b; isotropic Gaussian on its rank r,
        σ√2 Γ((r+1)/2)/Γ(r/2) (σ√(2/π) for one direction). Otherwise E||Z||₂ is homogeneous
        (E||cZ|| = c E||Z||) and depends on a Gaussian Z only through the eigenvalues of Σ_Z, on a
        Laplace Z = B(L ⊙ b) (orthonormal B) only through b, so it is c·E||Z₀|| for the shape
        Z₀ = Z/c (c the largest std or scale), E||Z₀|| estimated from 200,000 draws at seed
        :data:`L2_SEED` and cached per shape: a pure function of the law. With Theorem 5.7's noise
        the sum is estimated directly from 50,000 draws at the same seed. Nothing is mutated.
        """
        if self.extra_laplace > 0:
            g = np.random.default_rng(L2_SEED)
            n = _draws_for(self.dim, _SUM_DRAWS)
            total = 0.0
            for rows in _chunks(n, self.dim):
                total += float(np.linalg.norm(self.sample(g, rows), axis=1).sum())
            return total / n, f"monte-carlo ({n:,} draws, seed {L2_SEED})"
        if self.kind == "none":
            return 0.0, None
        if self.kind == "laplace":
            assert self.scales is not None
            sc = np.abs(self.scales.ravel())
            if sc.size <= 1:
                return (float(self.scales[0]) if sc.size else 0.0), None
            if not sc.max(initial=0.0) > 0:
                return 0.0, None
            top = float(sc.max())
            shape = np.round(np.sort(sc / top), 12)
            key: tuple[Any, ...] = ("laplace", *shape.tolist())
        else:
            w = np.linalg.eigvalsh(self.covariance_matrix)
            tol = 1e-12 * max(1.0, float(w.max(initial=0.0)))
            pos = w[w > tol]
            if pos.size == 0:
                return 0.0, None
            if np.allclose(pos, pos[0], rtol=1e-9):
                r = pos.size
                return float(math.sqrt(2.0 * pos[0]) * math.exp(special.gammaln((r + 1) / 2) - special.gammaln(r / 2))), None
            top = float(math.sqrt(pos.max()))
            shape = np.round(np.sort(np.sqrt(pos) / top), 12)
            key = ("gaussian", *shape.tolist())
        n_draws = _draws_for(shape.size, _L2_DRAWS)
        if key not in _L2_CACHE:
            g = np.random.default_rng(L2_SEED)
            total = 0.0
            for rows in _chunks(n_draws, shape.size):
                draws = (g.laplace(0.0, 1.0, size=(rows, shape.size)) if key[0] == "laplace"
                         else g.standard_normal((rows, shape.size))) * shape
                total += float(np.linalg.norm(draws, axis=1).sum())
            _L2_CACHE[key] = total / n_draws
        return top * _L2_CACHE[key], f"monte-carlo on the normalised noise shape ({n_draws:,} draws, seed {L2_SEED}), scaled"

    def short_text(self) -> str:
        """One short line for tables: ``Lap(b=…)`` (``along v`` for fewer directions than m), ``N(0, Σ_Z) rank r, tr=…``."""
        def gauss(cov: NDArray[np.float64]) -> str:
            w = np.clip(np.linalg.eigvalsh(cov), 0, None)
            rank = int((w > 1e-12 * max(w.max(), 1e-300)).sum())
            return f"N(0, Σ_Z) rank {rank}, tr={w.sum():.3g}"

        def lap(basis: NDArray[np.float64], scales: NDArray[np.float64]) -> str:
            return f"Lap(b={self.laplace_scale:.3g})" + (" along v" if basis.shape[1] < self.dim else "")

        return self.match(gaussian=gauss, laplace=lap, none=lambda: "none")

    def describe(self) -> dict[str, Any]:
        """JSON-friendly summary of the law (no data)."""
        ls = self.laplace_scale
        return {
            "kind": self.label,
            "noise_std": [float(s) for s in self.marginal_std()],
            "laplace_scale": None if ls is None else (ls if isinstance(ls, float) else [float(s) for s in ls]),
            "extra_laplace_scale": self.extra_laplace,
        }
