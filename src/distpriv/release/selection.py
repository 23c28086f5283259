"""Automatic mechanism choice: calibrate every applicable mechanism, check its assumptions, keep the valid ones.

For a target (ε, δ) and Ψ, every mechanism of Chen & Ohrimenko is calibrated on
the estimated f_θ (an :class:`~distpriv.EmpiricalModel`) and its assumptions are
checked against the samples:

=====================  ==========================================  =====================================
mechanism              assumption on f_θ                           correction when it is rejected
=====================  ==========================================  =====================================
Wasserstein (Thm 4.1)  none (f_θ = the empirical model)            –
Approx. W. (Thm 4.2)   none (c from empirical quantiles)           –
ExpM / DirM (L, G)     translation (Sec. 5.1–5.2)                  Thm 5.7 with W = translation gap
EigM, DauM (Sec. 5.3)  Gaussian (unequal Σ_θ: exact profile)       Thm 5.6 (divergence gap λ) or Thm 5.7
None (Thm 5.4)         Gaussian (unequal Σ_θ: exact profile)       Thm 5.6 or Thm 5.7
GDP (L, G), k = n      values within the observed column ranges    –
DP (L, G), k = 1       –                                           rejected: protects records, not Ψ
=====================  ==========================================  =====================================

Assumption tests (level α = 0.05 each, Bonferroni within a test):

* **translation** — the centred samples of every θ against those of a reference
  θ₀: two-sample Kolmogorov–Smirnov per component and along the mean-difference
  direction;
* **Gaussianity** — D'Agostino–Pearson ``normaltest`` per θ, per component and
  along the mean-difference direction (marginal checks: necessary conditions);
* **equal covariances** — Box's M test per pair (χ² approximation).

A test that does not reject means "consistent with the assumption at this
sample size", not a proof; the guarantee lists it as an assumption. When a test
rejects, the mechanism is calibrated on the closest approximations f̂_θ that do
satisfy the assumption (translates of a reference θ, or N(μ̂_θ, Σ̄) with a pooled
Σ̄) and the gap between f̂_θ and the samples is paid for:

* Theorem 5.7: extra Z′_k ~ Lap(W/λ), W = max_θ W∞(f_θ, f̂_θ) (L1); the base
  mechanism runs at (ε − 2λ, e^{−λ}δ), λ chosen to minimise the expected squared
  error tr Σ_Z + 2m(W/λ)²;
* Theorem 5.6: the base mechanism runs at (ε − 2λ, δ_b) with
  (1 + e^{ε−λ})η + e^λ δ_b = δ, λ the estimated η-approximate max-divergence
  gap (:func:`distpriv.relaxed.approx_max_divergence_gap`, η = δ/(2(1 + e^ε))).

Among the kept candidates the smallest expected L2 error E||Z||₂ wins (ties: fewer
assumptions, then registry order).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import distances, relaxed
from .._validation import RngLike, as_rng, check_array
from ..calibration import classic_warnings_suppressed
from ..errors import (
    AssumptionError,
    DistPrivError,
    InvalidParameterError,
    InvalidTypeError,
)
from ..guarantees import Guarantee
from ..mechanisms import Mechanism, calibrate
from ..mechanisms import check_noiseless as _check_noiseless
from ..mechanisms._common import covariance_gap
from ..mechanisms.metadata import CANDIDATES as CANDIDATE_INFO
from ..models import EmpiricalModel, GaussianModel

__all__ = [
    "ALPHA",
    "REQUIREMENTS",
    "Candidate",
    "Diagnostics",
    "Selection",
    "TestResult",
    "diagnose_assumptions",
    "evaluate_candidate",
    "select_mechanism",
]

#: Level of each assumption test.
ALPHA = 0.05

#: Which assumptions each candidate relies on ("none" = Thm 5.4, release without noise). The Gaussian-model
#: candidates need Gaussianity only: their δ is computed exactly from the output laws N(μ_θ, Σ_θ + Σ_Z) of
#: the fitted model (:mod:`distpriv.accounting`), so covariances that differ across θ are accounted for
#: (noise topped up), not assumed away; Box's M test is still run and reported.
REQUIREMENTS: dict[str, tuple[str, ...]] = {name: m.assumptions for name, m in CANDIDATE_INFO.items()}
CANDIDATES: tuple[str, ...] = tuple(CANDIDATE_INFO)
_LABELS = {name: m.label for name, m in CANDIDATE_INFO.items()}
_MC_DRAWS = 50_000
_MC_SEED = 20240229


# --------------------------------------------------------------------------- diagnostics
@dataclass(frozen=True)
class TestResult:
    """One assumption test: smallest Bonferroni-adjusted p-value and whether the assumption stands at level α."""

    name: str
    p_value: float
    holds: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.name, "p_value": self.p_value, "holds": self.holds, "detail": self.detail}


#: Fewest histogram cells per axis for which the Theorem 5.6 divergence gap is estimated.
MIN_BINS = 3


def eta_for(epsilon: float, delta: float) -> float:
    """η = δ / (2(1 + e^ε)) of Theorem 5.6, in log space (no overflow for ε up to 1e6 and beyond)."""
    return 0.5 * delta * math.exp(-float(np.logaddexp(0.0, epsilon)))


def histogram_bins(n_samples: int, dim: int) -> int:
    """Cells per axis used by :func:`distpriv.relaxed.approx_max_divergence_gap`: max(2, ⌊(N/20)^{1/m}⌋)."""
    return max(2, int((n_samples / 20.0) ** (1.0 / dim)))


@dataclass
class Diagnostics:
    """Assumption tests and the gaps Theorems 5.6/5.7 pay for."""

    tests: dict[str, TestResult]
    translation_w: float  # max_θ W∞(f_θ, f_ref + μ_θ − μ_ref), L1
    wasserstein_w: float  # max over Ψ of W∞(f_θi, f_θj), L1: Δ_W of the Wasserstein mechanism
    gaussian_w: float  # max_θ W∞(f_θ, N(μ̂_θ, Σ̄)) estimate, L1
    divergence_lambda: float  # max_θ D^η_∞ gap to N(μ̂_θ, Σ̄)
    eta: float
    pooled_model: GaussianModel  # f̂_θ = N(μ̂_θ, Σ̄)
    reference: Hashable
    alpha: float = ALPHA

    def holds(self, assumption: str) -> bool:
        return self.tests[assumption].holds if assumption in self.tests else True

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "tests": {k: v.to_dict() for k, v in self.tests.items()},
            "translation_gap_W": self.translation_w,
            "wasserstein_delta_W": self.wasserstein_w,
            "gaussian_gap_W": self.gaussian_w,
            "divergence_gap_lambda": self.divergence_lambda,
            "eta": self.eta,
            "reference_theta": self.reference,
        }


def _labels(pairs: Sequence[tuple[Hashable, Hashable]]) -> list[Hashable]:
    return list(dict.fromkeys(v for pr in pairs for v in pr))


def _directions(model: EmpiricalModel, pairs: Sequence[tuple[Hashable, Hashable]]) -> list[NDArray[np.float64]]:
    out = []
    for a, b in pairs:
        d = model.mean(a) - model.mean(b)
        nd = float(np.linalg.norm(d))
        if nd > 0:
            out.append(d / nd)
    return out


def _const(x: NDArray[np.float64]) -> bool:
    return bool(np.ptp(x) <= 1e-12 * max(1.0, float(np.abs(x).max(initial=0.0))))


def _test_translation(model: EmpiricalModel, pairs: Sequence[tuple[Hashable, Hashable]], alpha: float) -> TestResult:
    from scipy import stats

    labs = _labels(pairs)
    ref = model.samples(labs[0]) - model.mean(labs[0])
    dirs = _directions(model, pairs)
    pvals: list[float] = []
    for lab in labs[1:]:
        x = model.samples(lab) - model.mean(lab)
        projections = [(x[:, k], ref[:, k]) for k in range(model.dim)] + [(x @ v, ref @ v) for v in dirs]
        for u, w in projections:
            if _const(u) and _const(w):
                pvals.append(1.0)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    pvals.append(float(stats.ks_2samp(u, w).pvalue))
    if not pvals:
        return TestResult("translation", 1.0, True, "single θ")
    adj = min(1.0, min(pvals) * len(pvals))
    return TestResult(
        "translation", adj, adj >= alpha,
        f"two-sample KS of centred samples against θ₀ = {labs[0]!r} on {len(pvals)} projections, Bonferroni",
    )


def _test_gaussian(model: EmpiricalModel, pairs: Sequence[tuple[Hashable, Hashable]], alpha: float) -> TestResult:
    from scipy import stats

    dirs = _directions(model, pairs)
    pvals: list[float] = []
    for lab in _labels(pairs):
        x = model.samples(lab)
        for u in [x[:, k] for k in range(model.dim)] + [x @ v for v in dirs]:
            if _const(u):
                continue  # a point mass is a degenerate Gaussian
            if u.size < 20:
                pvals.append(0.0)
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p = float(stats.normaltest(u).pvalue)
            pvals.append(p if math.isfinite(p) else 0.0)
    if not pvals:
        return TestResult("gaussian", 1.0, True, "every component is constant (degenerate Gaussian)")
    adj = min(1.0, min(pvals) * len(pvals))
    return TestResult(
        "gaussian", adj, adj >= alpha,
        f"D'Agostino-Pearson normaltest per θ on {len(pvals)} marginals/projections, Bonferroni",
    )


def box_m_test(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """p-value of Box's M test of equal covariances for two samples (χ² approximation).

    Works on the subspace where the pooled covariance is non-singular; directions
    where both samples are constant are equal (zero) variances and are dropped.
    """
    from scipy import stats

    n1, n2 = x.shape[0], y.shape[0]
    s1 = np.atleast_2d(np.cov(x, rowvar=False))
    s2 = np.atleast_2d(np.cov(y, rowvar=False))
    sp = ((n1 - 1) * s1 + (n2 - 1) * s2) / (n1 + n2 - 2)
    w, v = np.linalg.eigh(sp)
    keep = w > 1e-10 * max(float(w.max(initial=0.0)), 1e-300)
    if not keep.any():
        return 1.0
    basis = v[:, keep]
    s1, s2, sp = (basis.T @ s @ basis for s in (s1, s2, sp))
    m = basis.shape[1]
    logdets = []
    for s in (s1, s2, sp):
        sign, ld = np.linalg.slogdet(s)
        if sign <= 0:
            return 0.0  # one sample is degenerate where the other is not
        logdets.append(ld)
    big_m = (n1 + n2 - 2) * logdets[2] - (n1 - 1) * logdets[0] - (n2 - 1) * logdets[1]
    c = (2 * m * m + 3 * m - 1) / (6.0 * (m + 1)) * (1 / (n1 - 1) + 1 / (n2 - 1) - 1 / (n1 + n2 - 2))
    df = m * (m + 1) / 2.0
    return float(stats.chi2.sf(big_m * (1 - c), df))


def _test_equal_cov(model: EmpiricalModel, pairs: Sequence[tuple[Hashable, Hashable]], alpha: float) -> TestResult:
    pvals = [box_m_test(model.samples(a), model.samples(b)) for a, b in pairs]
    adj = min(1.0, min(pvals) * len(pvals))
    return TestResult("equal_covariance", adj, adj >= alpha, f"Box's M test on {len(pvals)} pair(s), Bonferroni")


def diagnose_assumptions(
    model: EmpiricalModel,
    pairs: Sequence[tuple[Hashable, Hashable]],
    *,
    epsilon: float,
    delta: float,
    alpha: float = ALPHA,
    max_samples: int = 2000,
    rng: RngLike = 0,
) -> Diagnostics:
    """Run the three assumption tests and estimate the Theorem 5.6/5.7 gaps (Chen & Ohrimenko Sec. 5.4).

    Gaps use :mod:`distpriv.relaxed`: the translation gap against the reference θ₀
    (first label), and the W∞ / η-approximate max-divergence gaps between every
    θ's samples and N(μ̂_θ, Σ̄), Σ̄ the average covariance over the θ in Ψ. Also
    Δ_W = max over Ψ of W∞(f_θi, f_θj) for the Wasserstein mechanism (Thm 4.1), exact on all samples.
    The gap estimates are computed on at most ``max_samples`` samples per θ (all of them
    at the default 1,000 samples; a seeded subsample beyond, since bottleneck matching
    grows quickly with the sample size). The divergence gap λ is only estimated when the
    whitened histogram has at least :data:`MIN_BINS` cells per axis: a coarser grid can
    only lower D^η∞ (it merges cells), so λ would be optimistic and Theorem 5.6 would
    under-correct; λ is then ``inf`` and Theorem 5.6 is not used.
    """
    g = as_rng(rng)
    ms = max_samples
    labs = _labels(pairs)
    ref = labs[0]
    tests = {
        "translation": _test_translation(model, pairs, alpha),
        "gaussian": _test_gaussian(model, pairs, alpha),
        "equal_covariance": _test_equal_cov(model, pairs, alpha),
    }
    tw = max(
        [relaxed.translation_gap(model.samples(lab), model.samples(ref), max_samples=ms, rng=g) for lab in labs[1:]]
        or [0.0]
    )
    # Δ_W is used as is by the Wasserstein mechanism (Thm 4.1 with f_θ = the empirical model): it must be the
    # model's exact W∞, not that of subsamples (which can be smaller and would under-noise the release)
    ww = max(float(distances.w_infinity_samples(model.samples(a), model.samples(b), norm=1)) for a, b in pairs)
    pooled = sum(model.covariance(lab) for lab in labs) / len(labs)
    gauss = GaussianModel({lab: model.mean(lab) for lab in labs}, {lab: pooled for lab in labs})
    gw = max(relaxed.gaussian_w_infinity_gap(model.samples(lab), model.mean(lab), pooled, max_samples=ms, rng=g)
             for lab in labs)
    eta = eta_for(epsilon, delta)
    n_min = min(model.samples(lab).shape[0] for lab in labs)
    if histogram_bins(n_min, model.dim) < MIN_BINS:
        lam = math.inf
    else:
        try:
            lam = max(relaxed.approx_max_divergence_gap(model.samples(lab), model.mean(lab), pooled, eta) for lab in labs)
        except DistPrivError:  # singular pooled covariance: no density comparison possible
            lam = math.inf
    return Diagnostics(tests, float(tw), float(ww), float(gw), float(lam), eta, gauss, ref, alpha)


# --------------------------------------------------------------------------- candidates
@dataclass
class Candidate:
    """One mechanism as evaluated by :func:`select_mechanism`.

    ``base`` is the calibrated mechanism (``None`` for the noiseless release and for
    rejected candidates); ``extra_laplace_scale`` the Theorem 5.7 noise added on every
    component; ``guarantee`` the final claim at the target (ε, δ).
    """

    name: str
    label: str
    kept: bool
    reason: str
    dim: int
    base: Mechanism | None = None
    extra_laplace_scale: float = 0.0
    correction: str | None = None
    guarantee: Guarantee | None = None
    expected_l2_error: float = math.inf
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def assumptions(self) -> tuple[str, ...]:
        return () if self.guarantee is None else self.guarantee.assumptions

    @property
    def noise_covariance(self) -> NDArray[np.float64]:
        """Covariance of the total noise: base Σ_Z + 2b²I for the Theorem 5.7 Laplace noise."""
        base = np.zeros((self.dim, self.dim)) if self.base is None else self.base.noise_covariance
        return base + 2.0 * self.extra_laplace_scale**2 * np.eye(self.dim)

    def sample_noise(self, size: int, rng: RngLike = None) -> NDArray[np.float64]:
        """``size`` draws of the total noise, shape (size, m)."""
        g = as_rng(rng)
        z = np.zeros((size, self.dim)) if self.base is None else self.base.sample_noise(size, g)
        if self.extra_laplace_scale > 0:
            z = z + g.laplace(0.0, self.extra_laplace_scale, size=(size, self.dim))
        return z

    def release(self, x: ArrayLike, rng: RngLike = None) -> NDArray[np.float64]:
        """F(Data) + Z (+ Z′)."""
        arr = check_array(x, "x", ndim=1)
        return arr + self.sample_noise(1, rng)[0]

    def release_batch(self, xs: ArrayLike, rng: RngLike = None) -> NDArray[np.float64]:
        """Vectorised release of an (N, m) array (used by the attacks)."""
        arr = check_array(xs, "xs", ndim=2)
        return arr + self.sample_noise(arr.shape[0], rng)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.name,
            "label": self.label,
            "kept": self.kept,
            "reason": self.reason,
            "correction": self.correction,
            "expected_l2_error": self.expected_l2_error if self.kept else None,
            "noise_std": [float(s) for s in np.sqrt(np.clip(np.diag(self.noise_covariance), 0, None))] if self.kept else None,
            "extra_laplace_scale": self.extra_laplace_scale,
            "guarantee": None if self.guarantee is None else self.guarantee.to_dict(),
            **{k: v for k, v in self.details.items() if not k.startswith("_")},
        }


def _calibrate(name: str, model: Any, pairs: Any, eps: float, delta: float, calibration: str, opts: dict[str, Any],
               *, pure: bool = True) -> Mechanism:
    """``pure=False``: a Laplace mechanism gets the target δ too (its noise is topped up to a proven (ε, δ))."""
    d = delta if (CANDIDATE_INFO[name].needs_delta or not pure) else None
    with classic_warnings_suppressed():
        return calibrate(name, model, pairs, epsilon=eps, delta=d, calibration=calibration, **opts)


def check_noiseless(model: Any, pairs: Any, *, epsilon: float, delta: float, calibration: str = "exact") -> Any:
    """Theorem 5.4's test through the exact profile (:func:`distpriv.mechanisms.check_noiseless`).

    ``ok`` already requires the proven δ(ε) of releasing F unchanged to meet δ (under either
    calibration), so the classic rule at ε >= 1 never passes on the strength of ε/c alone.
    """
    with classic_warnings_suppressed():
        return _check_noiseless(model, pairs, epsilon=epsilon, delta=delta, calibration=calibration)


def _meets(guarantee: Guarantee, epsilon: float, delta: float) -> bool:
    return guarantee.epsilon <= epsilon * (1 + 1e-9) and guarantee.delta <= delta * (1 + 1e-9)


_L2_DRAWS = 200_000
_L2_CACHE: dict[tuple[Any, ...], float] = {}
#: Monte Carlo draws are generated in blocks of at most this many numbers (memory bound for many statistics).
_BLOCK = 5_000_000
#: In ``auto`` mode, the candidates whose δ is computed exactly from Gaussian output laws with unequal
#: covariances (None (Thm 5.4), EigM, DauM) are evaluated for at most this many statistics: the exact
#: profile's cost grows quickly with m (tens of seconds each at m = 30). Beyond it they are listed as not
#: evaluated; naming one with ``--mechanism`` still evaluates it.
MAX_EXACT_GAUSSIAN_DIM = 20
_EXACT_GAUSSIAN = tuple(name for name, m in CANDIDATE_INFO.items() if m.exact_gaussian_fit)


def _draws_for(dim: int, draws: int) -> int:
    """Monte Carlo draws for E||Z||₂ in ``dim`` dimensions: all up to 25 statistics, then ~5·10⁶/m (>= 5,000).

    ||Z||₂ concentrates as m grows (its relative spread is O(1/√m)), so fewer draws keep the same accuracy.
    """
    return draws if dim <= 25 else max(5_000, min(draws, _BLOCK // dim))


def _chunks(n: int, dim: int) -> list[int]:
    """Row counts of the blocks of an (n, dim) draw, each at most :data:`_BLOCK` numbers (one block if it fits)."""
    rows = max(1, _BLOCK // max(dim, 1))
    return [min(rows, n - i) for i in range(0, n, rows)]


def expected_l2(mech: Mechanism) -> float:
    """E||Z||₂ of a mechanism's noise, Monte Carlo computed once per normalised noise shape.

    E||Z||₂ is homogeneous (E||cZ|| = c E||Z||) and depends on a Gaussian Z only through the eigenvalues
    of its covariance, on a Laplace Z = B(L ⊙ s) (orthonormal B) only through the scales s. So the estimate
    is c·E||Z₀|| for the shape Z₀ = Z/c (c the largest std or scale), with E||Z₀|| estimated from 200,000
    draws at a fixed seed and cached: a pure function of the shape (the same value whatever was evaluated
    before), computed once per shape instead of once per calibration (the ε sweep of the report reuses it).
    Closed forms (one direction, isotropic Gaussian) are the mechanism's own.
    """
    if mech.kind == "none":
        return 0.0
    if mech.kind == "laplace":
        sc = np.abs(np.asarray(mech.scales, dtype=float).ravel())
        if sc.size <= 1 or not sc.max(initial=0.0) > 0:
            return mech.expected_l2_error
        top = float(sc.max())
        shape = np.round(np.sort(sc / top), 12)
        key: tuple[Any, ...] = ("laplace", *shape.tolist())
    else:
        w = np.clip(np.linalg.eigvalsh(np.asarray(mech.noise_covariance, dtype=float)), 0.0, None)
        tol = 1e-12 * max(1.0, float(w.max(initial=0.0)))
        pos = w[w > tol]
        if pos.size == 0 or np.allclose(pos, pos[0], rtol=1e-9):
            return mech.expected_l2_error  # closed form
        top = float(math.sqrt(pos.max()))
        shape = np.round(np.sort(np.sqrt(pos) / top), 12)
        key = ("gaussian", *shape.tolist())
    n_draws = _draws_for(shape.size, _L2_DRAWS)
    if key not in _L2_CACHE:
        g = np.random.default_rng(_MC_SEED)
        total = 0.0
        for rows in _chunks(n_draws, shape.size):
            draws = (g.laplace(0.0, 1.0, size=(rows, shape.size)) if key[0] == "laplace"
                     else g.standard_normal((rows, shape.size))) * shape
            total += float(np.linalg.norm(draws, axis=1).sum())
        _L2_CACHE[key] = total / n_draws
    value = top * _L2_CACHE[key]
    mech.details["_mc_l2"] = value
    mech.details["expected_l2_error_method"] = (f"monte-carlo on the normalised noise shape ({n_draws:,} draws, "
                                                f"seed {_MC_SEED}), scaled")
    return value


def _mc_error(base: Mechanism | None, extra: float, dim: int) -> float:
    if extra == 0.0:
        return 0.0 if base is None else expected_l2(base)
    g = np.random.default_rng(_MC_SEED)
    n = _draws_for(dim, _MC_DRAWS)
    total = 0.0
    for rows in _chunks(n, dim):
        z = np.zeros((rows, dim)) if base is None else base.sample_noise(rows, g)
        z = z + g.laplace(0.0, extra, size=(rows, dim))
        total += float(np.linalg.norm(z, axis=1).sum())
    return total / n


def _test_text(diag: Diagnostics, assumption: str) -> str:
    t = diag.tests[assumption]
    if t.detail.startswith("declared"):  # known exactly for a declared model (distpriv.release.declared)
        return f"{assumption.replace('_', ' ')} holds ({t.detail})"
    return f"{assumption.replace('_', ' ')} not rejected ({t.detail}; adjusted p = {t.p_value:.3g} >= {diag.alpha})"


def _finalise(guarantee: Guarantee, epsilon: float, delta: float, extra_assumptions: Sequence[str], theorem: str | None) -> Guarantee:
    g = replace(guarantee, epsilon=epsilon, delta=delta)
    if theorem:
        g = replace(g, theorem=f"{g.theorem} + {theorem}")
    return g.with_assumptions(*extra_assumptions)


def _theorem_5_7(
    name: str, model: Any, pairs: Any, eps: float, delta: float, calibration: str, opts: dict[str, Any], w: float, dim: int
) -> tuple[Mechanism, float, float, float, float]:
    """Best λ for Theorem 5.7: minimise tr Σ_Z(ε − 2λ, e^{−λ}δ) + 2m(W/λ)². Returns (base, λ, scale, ε′, δ′)."""
    from scipy import optimize

    def objective(lam: float) -> float:
        try:
            m = _calibrate(name, model, pairs, eps - 2 * lam, math.exp(-lam) * delta, calibration, opts)
        except DistPrivError:
            return math.inf
        if not _meets(m.guarantee, eps - 2 * lam, math.exp(-lam) * delta):
            return math.inf
        return m.expected_squared_error + 2.0 * dim * (w / lam) ** 2

    # λ <= ln δ + 700 keeps e^{−λ}δ a positive double (δ down to 1e-300 with ε up to 1e6)
    hi = min(eps / 2 * (1 - 1e-6), max(math.log(delta) + 700.0, 2e-6 * eps))
    res = optimize.minimize_scalar(objective, bounds=(1e-6 * eps, hi), method="bounded",
                                   options={"xatol": 1e-4 * min(eps, hi)})
    lam = float(res.x)
    base = _calibrate(name, model, pairs, eps - 2 * lam, math.exp(-lam) * delta, calibration, opts)
    t = relaxed.theorem_5_7(base.guarantee.epsilon, base.guarantee.delta, w, lam, dim)
    return base, lam, t.extra_laplace_scale, t.epsilon, t.delta


def evaluate_candidate(
    name: str,
    model: EmpiricalModel | GaussianModel,
    pairs: Sequence[tuple[Hashable, Hashable]],
    diag: Diagnostics,
    *,
    epsilon: float,
    delta: float,
    calibration: str = "exact",
    sensitivities: ArrayLike | None = None,
    n: int | None = None,
) -> Candidate:
    """Calibrate ``name`` for the target (ε, δ), check its assumptions, apply Thm 5.6/5.7 where they fail."""
    label = _LABELS[name]
    dim = model.dim
    if name in ("dp-laplace", "dp-gauss"):
        return Candidate(name, label, False, "protects single records (group size k = 1 < n), not the property: "
                         "no distribution-privacy guarantee for Ψ", dim)
    opts: dict[str, Any] = {}
    if name.startswith("groupdp"):
        if sensitivities is None or n is None:
            return Candidate(name, label, False, "needs per-record sensitivities and n", dim)
        opts = {"sensitivities": np.asarray(sensitivities, float), "n": int(n)}
    if name == "wasserstein":
        opts = {"w_infinity": diag.wasserstein_w}
    needs = REQUIREMENTS[name]
    failed = [a for a in needs if a in diag.tests and not diag.holds(a)]
    passed = [_test_text(diag, a) for a in needs if a in diag.tests and diag.holds(a)]
    cal_model: EmpiricalModel | GaussianModel = model
    if "translation" in needs and not failed and isinstance(model, EmpiricalModel):
        # A two-sample test cannot see a small variance gap, but the model's covariances are exact (closed-form
        # moments, release/data.py): unequal covariances mean f_θ is not a translation, whatever the test says.
        # Then the claim rests on the exact accounting of the Gaussian fit where Gaussianity is not rejected
        # (mechanisms/exact.py tops the noise up), else on the Thm 5.6/5.7 corrections.
        fit = model.to_gaussian()
        if covariance_gap(fit, pairs) > 1e-9:
            if "gaussian" in diag.tests and diag.holds("gaussian"):
                cal_model = fit
                passed = [_test_text(diag, "gaussian"), "covariances differ across θ (exact moments), so f_θ is not a "
                          "translation: the claim rests on the exact profile of the Gaussian fit"]
            else:
                failed = ["translation"]
                passed = []
    try:
        if not failed:
            if name == "none":
                chk = check_noiseless(model, pairs, epsilon=epsilon, delta=delta, calibration=calibration)
                if not chk.ok or chk.guarantee is None:
                    why = (f"the exact profile of the noiseless release gives δ = {chk.proven_delta:.3g} > {delta:g}"
                           if chk.proven_delta > delta else
                           f"max Mahalanobis distance {chk.max_mahalanobis:.3g} > D_max = {chk.d_max:.3g}")
                    return Candidate(name, label, False, f"Thm 5.4 fails: {why}", dim)
                g = _finalise(chk.guarantee, epsilon, delta, passed, None)
                return Candidate(name, label, True, "assumptions not rejected; release without noise is private (Thm 5.4)",
                                 dim, None, 0.0, None, g, 0.0, {"max_mahalanobis": chk.max_mahalanobis, "d_max": chk.d_max})
            mech = _calibrate(name, cal_model, pairs, epsilon, delta, calibration, opts, pure=cal_model is model)
            if not _meets(mech.guarantee, epsilon, delta):  # e.g. the classic rule weakened to its proven δ
                return Candidate(name, label, False, f"proven guarantee (ε, δ) = ({mech.guarantee.epsilon:.4g}, "
                                 f"{mech.guarantee.delta:.3g}) misses the target ({epsilon:g}, {delta:g})", dim)
            g = _finalise(mech.guarantee, mech.guarantee.epsilon, mech.guarantee.delta, passed, None)
            reason = "no shape assumption on f_θ" if not needs else (
                "values assumed within the observed ranges" if needs == ("bounded",) else "assumptions not rejected")
            return Candidate(name, label, True, reason, dim, mech, 0.0, None, g, expected_l2(mech))
        if not isinstance(model, EmpiricalModel):
            return Candidate(name, label, False, "assumptions rejected, and the Theorem 5.6/5.7 corrections need "
                             "samples of F (an EmpiricalModel)", dim)
        return _corrected(name, label, model, pairs, diag, failed, passed, epsilon, delta, calibration, opts)
    except DistPrivError as exc:
        return Candidate(name, label, False, f"calibration failed: {exc}", dim)


def _corrected(
    name: str, label: str, model: EmpiricalModel, pairs: Sequence[tuple[Hashable, Hashable]], diag: Diagnostics,
    failed: list[str], passed: list[str], eps: float, delta: float, calibration: str, opts: dict[str, Any],
) -> Candidate:
    dim = model.dim
    rejected = ", ".join(f"{a.replace('_', ' ')} (adjusted p = {diag.tests[a].p_value:.2g})" for a in failed)
    options: list[Candidate] = []
    notes: list[str] = []
    gaussian_family = REQUIREMENTS[name] == ("gaussian",)
    approx_model: Any = diag.pooled_model if gaussian_family else model
    w = diag.gaussian_w if gaussian_family else diag.translation_w
    what = ("N(μ̂_θ, Σ̄) with pooled Σ̄" if gaussian_family
            else f"translates of f at θ₀ = {diag.reference!r}")
    # Theorem 5.7 -----------------------------------------------------------
    if math.isfinite(w):
        try:
            if name == "none":
                base_none, lam, scale, e2, d2 = _noiseless_5_7(diag.pooled_model, pairs, eps, delta, calibration, w, dim)
                base_g = base_none
                err = _mc_error(None, scale, dim)
                mech = None
            else:
                mech, lam, scale, e2, d2 = _theorem_5_7(name, approx_model, pairs, eps, delta, calibration, opts, w, dim)
                base_g = mech.guarantee
                err = _mc_error(mech, scale, dim)
            text = (f"Thm 5.7: f_θ approximated by {what}; W = {w:.4g} (L1 W∞ estimate), λ = {lam:.4g}: base at "
                    f"ε = {eps - 2 * lam:.4g}, plus Lap({scale:.4g}) on every component")
            g = _finalise(base_g, e2, d2, [*passed, f"the shape assumptions above are made of the approximations f̂_θ = {what}, "
                                           "not of the true f_θ",
                                           f"sup_θ W∞(f_θ, f̂_θ) <= W = {w:.6g} (sample estimate; Chen & Ohrimenko Thm 5.7)"],
                          "Chen & Ohrimenko Thm 5.7")
            options.append(Candidate(name, label, True, f"{rejected} rejected; corrected by Thm 5.7", dim, mech, scale, text,
                                     g, err, {"lambda": lam, "W": w}))
        except DistPrivError as exc:
            notes.append(f"Thm 5.7 not applicable: {exc}")
    else:
        notes.append("Thm 5.7 not applicable: W∞ gap is infinite")
    # Theorem 5.6 (Gaussian family only) -------------------------------------
    if gaussian_family:
        lam = diag.divergence_lambda
        eta = diag.eta
        if math.isfinite(lam) and eps - 2 * lam > 0:
            e_b = eps - 2 * lam
            # (δ − (1 + e^{ε_b+λ})η) e^{−λ}, with (1 + e^{ε_b+λ})η = (δ/2)·e^{log(1+e^{ε_b+λ}) − log(1+e^ε)}
            paid = 0.5 * delta * math.exp(float(np.logaddexp(0.0, e_b + lam) - np.logaddexp(0.0, eps)))
            d_b = (delta - paid) * math.exp(-lam)
            if d_b > 0:
                try:
                    if name == "none":
                        chk = check_noiseless(diag.pooled_model, pairs, epsilon=e_b, delta=d_b, calibration=calibration)
                        if chk.ok and chk.guarantee is not None:
                            g = relaxed.apply_theorem_5_6(replace(chk.guarantee, epsilon=e_b, delta=d_b), eta, lam)
                            g = g.with_assumptions(*passed)
                            options.append(Candidate(name, label, True, f"{rejected} rejected; corrected by Thm 5.6", dim,
                                                     None, 0.0, f"Thm 5.6: λ = {lam:.4g} at η = {eta:.3g}", g, 0.0,
                                                     {"lambda": lam, "eta": eta}))
                        else:
                            notes.append(f"Thm 5.6: Thm 5.4 fails at base ε = {e_b:.3g}")
                    else:
                        mech = _calibrate(name, diag.pooled_model, pairs, e_b, d_b, calibration, opts)
                        g = relaxed.apply_theorem_5_6(mech.guarantee, eta, lam).with_assumptions(
                            *passed, f"the shape assumptions above are made of the approximations f̂_θ = {what}, "
                            "not of the true f_θ")
                        options.append(Candidate(name, label, True, f"{rejected} rejected; corrected by Thm 5.6", dim, mech,
                                                 0.0, f"Thm 5.6: f_θ approximated by {what}; λ = {lam:.4g} at η = {eta:.3g}, "
                                                 f"base at (ε, δ) = ({e_b:.4g}, {d_b:.3g})", g, expected_l2(mech),
                                                 {"lambda": lam, "eta": eta}))
                except DistPrivError as exc:
                    notes.append(f"Thm 5.6 not applicable: {exc}")
            else:
                notes.append(f"Thm 5.6 not applicable: δ budget exhausted by η = {eta:.3g}")
        else:
            if math.isfinite(lam):
                notes.append(f"Thm 5.6 not applicable: divergence gap λ = {lam:.3g} leaves no ε for the base mechanism")
            else:
                notes.append(f"Thm 5.6 not applicable: D^η∞ gap not estimable (fewer than {MIN_BINS} histogram cells per "
                             "axis with these samples; use more --samples or fewer statistics)")
    valid = [c for c in options if c.guarantee is not None and c.guarantee.epsilon <= eps * (1 + 1e-9)
             and c.guarantee.delta <= delta * (1 + 1e-9)]
    if not valid:
        return Candidate(name, label, False, f"{rejected} rejected and no correction applies ({'; '.join(notes) or 'none'})", dim)
    best = min(valid, key=lambda c: c.expected_l2_error)
    if notes:
        best.details["notes"] = notes
    return best


def _noiseless_5_7(
    model: GaussianModel, pairs: Any, eps: float, delta: float, calibration: str, w: float, dim: int
) -> tuple[Guarantee, float, float, float, float]:
    """Thm 5.4 at (ε − 2λ, e^{−λ}δ) + Lap(W/λ): the largest λ for which the noiseless test still passes."""

    def ok(lam: float) -> bool:
        try:
            return check_noiseless(model, pairs, epsilon=eps - 2 * lam, delta=math.exp(-lam) * delta,
                                   calibration=calibration).ok
        except DistPrivError:
            return False

    lo, hi = 0.0, min(eps / 2 * (1 - 1e-9), max(math.log(delta) + 700.0, 2e-9 * eps))  # e^{−λ}δ stays > 0
    if not ok(1e-9 * eps):
        chk = check_noiseless(model, pairs, epsilon=eps, delta=delta, calibration=calibration)
        raise InvalidParameterError(
            f"Thm 5.4 fails for N(μ̂_θ, Σ̄): the exact profile gives δ = {chk.proven_delta:.3g} > {delta:g} "
            f"(max Mahalanobis distance {chk.max_mahalanobis:.3g}, D_max = {chk.d_max:.3g})"
        )
    if ok(hi):
        lo = hi
    else:
        lo = 1e-9 * eps
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    chk = check_noiseless(model, pairs, epsilon=eps - 2 * lo, delta=math.exp(-lo) * delta, calibration=calibration)
    assert chk.guarantee is not None
    t = relaxed.theorem_5_7(eps - 2 * lo, math.exp(-lo) * delta, w, lo, dim)
    return chk.guarantee, lo, t.extra_laplace_scale, t.epsilon, t.delta


# --------------------------------------------------------------------------- selection
@dataclass
class Selection:
    """Outcome of :func:`select_mechanism`: the chosen candidate, all candidates, the diagnostics."""

    chosen: Candidate
    candidates: list[Candidate]
    diagnostics: Diagnostics

    def to_dict(self) -> dict[str, Any]:
        return {
            "chosen": self.chosen.name,
            "candidates": [c.to_dict() for c in self.candidates],
            "diagnostics": self.diagnostics.to_dict(),
        }


def select_mechanism(
    model: EmpiricalModel | GaussianModel,
    pairs: Sequence[tuple[Hashable, Hashable]],
    *,
    epsilon: float,
    delta: float,
    calibration: str = "exact",
    sensitivities: ArrayLike | None = None,
    n: int | None = None,
    mechanism: str = "auto",
    alpha: float = ALPHA,
    rng: RngLike = 0,
    diagnostics: Diagnostics | None = None,
) -> Selection:
    """Evaluate every candidate (``mechanism="auto"``) or one, and choose the smallest expected L2 error.

    ``diagnostics``: assumptions known without testing (a declared Gaussian model,
    :func:`distpriv.release.declared.declared_diagnostics`); by default they are tested on
    the samples of ``model``. Raises :class:`~distpriv.AssumptionError` when the requested
    mechanism (or every candidate) is rejected; the message gives the reason.
    """
    if diagnostics is not None:
        diag = diagnostics
    elif isinstance(model, EmpiricalModel):
        diag = diagnose_assumptions(model, pairs, epsilon=epsilon, delta=delta, alpha=alpha, rng=rng)
    else:
        raise InvalidTypeError("model: testing the assumptions needs an EmpiricalModel (samples of F); "
                               "pass diagnostics= for a declared GaussianModel")
    names = CANDIDATES if mechanism == "auto" else (mechanism,)
    cands = [
        Candidate(nm, _LABELS[nm], False, f"not evaluated: the exact δ of Gaussian output laws is computed for at most "
                  f"{MAX_EXACT_GAUSSIAN_DIM} statistics in auto mode (m = {model.dim}); name it with --mechanism to "
                  "try", model.dim)
        if mechanism == "auto" and nm in _EXACT_GAUSSIAN and model.dim > MAX_EXACT_GAUSSIAN_DIM else
        evaluate_candidate(nm, model, pairs, diag, epsilon=epsilon, delta=delta, calibration=calibration,
                           sensitivities=sensitivities, n=n)
        for nm in names
    ]
    kept = [c for c in cands if c.kept]
    if not kept:
        if mechanism != "auto":
            raise AssumptionError(f"--mechanism {mechanism}: {cands[0].reason}")
        raise AssumptionError("--mechanism auto: no mechanism has a valid guarantee: "
                              + "; ".join(f"{c.label}: {c.reason}" for c in cands))
    order = {nm: i for i, nm in enumerate(CANDIDATES)}
    chosen = min(kept, key=lambda c: (round(c.expected_l2_error, 12), len(REQUIREMENTS[c.name]), order[c.name]))
    return Selection(chosen, cands, diag)
