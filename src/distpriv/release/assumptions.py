"""Assumption tests of the automatic mechanism choice, and the gaps Theorems 5.6/5.7 pay for.

The Expected Value mechanisms of Chen & Ohrimenko assume translated or Gaussian f_θ
(Sections 5.1–5.3). :func:`diagnose_assumptions` tests them on the samples of an
:class:`~distpriv.EmpiricalModel` (level α = 0.05 each, Bonferroni within a test):

* **translation** — the centred samples of every θ against those of a reference
  θ₀: two-sample Kolmogorov–Smirnov per component and along the mean-difference
  direction;
* **Gaussianity** — D'Agostino–Pearson ``normaltest`` per θ, per component and
  along the mean-difference direction (marginal checks: necessary conditions);
* **equal covariances** — Box's M test per pair (χ² approximation).

**Stable decisions (issue 21).** A 5%-level test rejects 5% of exactly Gaussian models
by design, and at 5,000 samples it rejects departures far too small to matter; either
way the choice would flip to a many times noisier mechanism with the public seed or
``--samples``. So translation and Gaussianity are *rejected* only on a departure that is
both beyond a fixed effect-size tolerance and far outside the sampling noise of the
statistic at this sample count N (a function of the public inputs, at a documented power):

* Gaussianity, per projection: (|g₁| > :data:`SKEW_TOL` and |Z(√b₁)| > :data:`Z_CRIT`) or
  (|g₂| > :data:`KURT_TOL` and |Z(b₂)| > Z_CRIT) — g₁ the sample skewness, g₂ the sample
  excess kurtosis, Z(√b₁) D'Agostino's and Z(b₂) Anscombe & Glynn's normalising transforms
  (accurate normal approximations of their null laws even at N = 200, where the kurtosis is
  far from normal; :mod:`distpriv.stattests`);
* translation, per projection: the KS distance D > :data:`KS_TOL` + c·√((N₁ + N₂)/(N₁N₂)),
  c = :data:`KS_C` (Smirnov's limit: P(D > c√(·)) <= 2e^{−2c²} ≈ 6·10⁻⁵ under the null).

Under the null each projection is flagged with probability < 10⁻⁵ (|Z| > 4.5) or 6·10⁻⁵
(KS), so a model whose f_θ are Gaussian (translates) keeps the same decision for practically
every seed and N. Power: a projection whose true skewness s exceeds SKEW_TOL is flagged once
N is large enough that s is 4.5 + 2 standard errors away from 0 (≈ 6.5·√(6/N)), with
probability >= 97.7% (likewise for g₂ and D); at small N only large departures are seen. The
classical adjusted p-values are still computed and reported. A test that does not
reject means "no departure beyond the tolerance at this sample size", not a proof; the
guarantee lists it as an assumption. It also estimates the gaps to the closest approximations
f̂_θ satisfying the assumptions (Section 5.4, :mod:`distpriv.relaxed`), which
:mod:`.selection` pays for with Theorem 5.6 or 5.7 when a test rejects.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from .. import relaxed, stattests
from .._validation import RngLike
from ..models import EmpiricalModel, GaussianModel
from ..relaxed.diagnose import lazy_max_gaps
from ..relaxed.gaps import (
    histogram_bins as histogram_bins,  # re-exported: release.assumptions.histogram_bins
)

#: Level of each assumption test.
ALPHA = 0.05
#: Effect-size tolerances of the stable decisions (module docstring): |skewness|, |excess kurtosis|, KS distance.
SKEW_TOL = 0.3
KURT_TOL = 0.6
KS_TOL = 0.1
#: Significance of the stable decisions: |Z| of D'Agostino's / Anscombe–Glynn's transforms; c for KS.
Z_CRIT = 4.5
KS_C = 2.3


def moment_departure(u: NDArray[np.float64]) -> float:
    """How far one projection departs from normality, relative to the stable decision (>1: rejected).

    max over skewness and kurtosis of min(|Z|/Z_CRIT, |g|/tolerance): a moment counts only when it is both
    significant (|Z| > Z_CRIT) and beyond its tolerance. ∞ for a degenerate projection.
    """
    n = np.float64(u.size)
    d = u - u.mean()
    m2 = float(np.mean(d * d))
    if not m2 > 0:
        return math.inf
    b1 = float(np.mean(d**3)) / m2**1.5
    b2 = float(np.mean(d**4)) / m2**2
    with np.errstate(all="ignore"):
        z1 = float(stattests._skew_z(np.float64(b1), n))
        z2 = float(stattests._kurtosis_z(np.float64(b2), n))
    if not all(math.isfinite(v) for v in (b1, b2, z1, z2)):
        return math.inf
    return max(min(abs(z1) / Z_CRIT, abs(b1) / SKEW_TOL), min(abs(z2) / Z_CRIT, abs(b2 - 3.0) / KURT_TOL))


def ks_threshold(n1: int, n2: int) -> float:
    """KS distance above which two centred samples are not translates: KS_TOL + c·√((n₁ + n₂)/(n₁n₂))."""
    return KS_TOL + KS_C * math.sqrt((n1 + n2) / (n1 * n2))

# --------------------------------------------------------------------------- diagnostics
#: How an assumption "test" was decided (:attr:`TestResult.code`).
TestCode = Literal["tested", "declared"]


@dataclass(frozen=True)
class TestResult:
    """One assumption test: smallest Bonferroni-adjusted p-value and whether the assumption stands at level α."""

    name: str
    p_value: float
    holds: bool
    detail: str
    #: the largest effect relative to its threshold (>1: beyond it), for the stable decisions; None if not computed
    effect: float | None = None
    #: how the result was obtained: ``tested`` on samples, or ``declared`` (known exactly for a declared model,
    #: :mod:`distpriv.release.declared`); the typed twin of ``detail``
    code: TestCode = "tested"

    def to_dict(self) -> dict[str, Any]:
        out = {"test": self.name, "p_value": self.p_value, "holds": self.holds, "detail": self.detail}
        if self.effect is not None:
            out["effect_ratio"] = self.effect
        return out


#: Fewest histogram cells per axis for which the Theorem 5.6 divergence gap is estimated.
MIN_BINS = 3


#: η = δ/(2(1 + e^ε)) of Theorem 5.6 (half of δ pays for the approximation): :func:`distpriv.relaxed.half_budget_eta`.
eta_for = relaxed.half_budget_eta


@dataclass
class Diagnostics:
    """Assumption tests and the gaps Theorems 5.6/5.7 pay for."""

    tests: dict[str, TestResult]
    #: max_θ W∞(f_θ, f_ref + μ_θ − μ_ref), L1, or a function computing it on demand (:attr:`translation_w`)
    _translation: float | Callable[[], float]
    #: max over Ψ of W∞(f_θi, f_θj), L1: Δ_W of the Wasserstein mechanism, or a function computing it on demand
    _wasserstein: float | Callable[[], float]
    #: max_θ W∞(f_θ, N(μ̂_θ, Σ̄)) estimate, L1, or a function computing it on demand (:attr:`gaussian_w`)
    _gaussian: float | Callable[[], float]
    divergence_lambda: float  # max_θ D^η_∞ gap to N(μ̂_θ, Σ̄)
    eta: float
    pooled_model: GaussianModel  # f̂_θ = N(μ̂_θ, Σ̄)
    reference: Hashable
    alpha: float = ALPHA

    @property
    def wasserstein_w(self) -> float:
        """Δ_W, computed on first use (a bottleneck matching on all samples: skipped when Wasserstein cannot win)."""
        if callable(self._wasserstein):
            self._wasserstein = float(self._wasserstein())
        return self._wasserstein

    @property
    def wasserstein_computed(self) -> bool:
        return not callable(self._wasserstein)

    @property
    def translation_w(self) -> float:
        """W of Theorem 5.7 for the translates, computed on first use (only a rejected assumption needs it)."""
        if callable(self._translation):
            self._translation = float(self._translation())
        return self._translation

    @property
    def gaussian_w(self) -> float:
        """W of Theorem 5.7 for N(μ̂_θ, Σ̄), computed on first use (only a rejected assumption needs it)."""
        if callable(self._gaussian):
            self._gaussian = float(self._gaussian())
        return self._gaussian

    def holds(self, assumption: str) -> bool:
        return self.tests[assumption].holds if assumption in self.tests else True

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "tests": {k: v.to_dict() for k, v in self.tests.items()},
            "translation_gap_W": None if callable(self._translation) else self._translation,
            "wasserstein_delta_W": self.wasserstein_w if self.wasserstein_computed else None,
            "gaussian_gap_W": None if callable(self._gaussian) else self._gaussian,
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
    labs = _labels(pairs)
    ref = model.samples(labs[0]) - model.mean(labs[0])
    dirs = _directions(model, pairs)
    pvals: list[float] = []
    ratio = 0.0
    for lab in labs[1:]:
        x = model.samples(lab) - model.mean(lab)
        projections = [(x[:, k], ref[:, k]) for k in range(model.dim)] + [(x @ v, ref @ v) for v in dirs]
        for u, w in projections:
            if _const(u) and _const(w):
                pvals.append(1.0)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    t = stattests.ks_2samp(u, w)
                pvals.append(t.pvalue)
                d = t.statistic if math.isfinite(t.statistic) else 1.0
                ratio = max(ratio, d / ks_threshold(u.size, w.size))
    if not pvals:
        return TestResult("translation", 1.0, True, "single θ")
    adj = min(1.0, min(pvals) * len(pvals))
    return TestResult(
        "translation", adj, ratio <= 1.0,
        f"two-sample KS of centred samples against θ₀ = {labs[0]!r} on {len(pvals)} projections: largest KS distance "
        f"{ratio:.2f}× its threshold {KS_TOL:g} + {KS_C:g}·√((N₁+N₂)/(N₁N₂)) (Bonferroni-adjusted p = {adj:.3g})",
        ratio,
    )


def _test_gaussian(model: EmpiricalModel, pairs: Sequence[tuple[Hashable, Hashable]], alpha: float) -> TestResult:
    dirs = _directions(model, pairs)
    pvals: list[float] = []
    ratio = 0.0
    for lab in _labels(pairs):
        x = model.samples(lab)
        for u in [x[:, k] for k in range(model.dim)] + [x @ v for v in dirs]:
            if _const(u):
                continue  # a point mass is a degenerate Gaussian
            if u.size < 20:
                pvals.append(0.0)
                ratio = math.inf
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p = stattests.normaltest_pvalue(u)
            pvals.append(p if math.isfinite(p) else 0.0)
            ratio = max(ratio, moment_departure(u))
    if not pvals:
        return TestResult("gaussian", 1.0, True, "every component is constant (degenerate Gaussian)")
    adj = min(1.0, min(pvals) * len(pvals))
    return TestResult(
        "gaussian", adj, ratio <= 1.0,
        f"skewness and excess kurtosis per θ on {len(pvals)} marginals/projections: largest departure {ratio:.2f}× "
        f"its threshold (beyond |g₁| {SKEW_TOL:g} or |g₂| {KURT_TOL:g} and |Z| > {Z_CRIT:g}); D'Agostino-Pearson "
        f"Bonferroni-adjusted p = {adj:.3g}",
        ratio,
    )


def box_m_test(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """p-value of Box's M test of equal covariances for two samples (χ² approximation).

    Works on the subspace where the pooled covariance is non-singular; directions
    where both samples are constant are equal (zero) variances and are dropped.
    """
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
    return stattests.chi2_sf(big_m * (1 - c), df)


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

    The gaps are :func:`distpriv.relaxed.estimate_gaps` — the computation behind
    :func:`distpriv.relaxed.diagnose` — at the release's η = :func:`eta_for` (ε, δ) = δ/(2(1 + e^ε))
    and with at least :data:`MIN_BINS` histogram cells: the translation gap against the reference θ₀
    (first label), and the W∞ / η-approximate max-divergence gaps between every
    θ's samples and N(μ̂_θ, Σ̄), Σ̄ the average covariance over the θ in Ψ. Also
    Δ_W = max over Ψ of W∞(f_θi, f_θj) for the Wasserstein mechanism (Thm 4.1), exact on all samples,
    computed on first use of :attr:`Diagnostics.wasserstein_w` (the selection skips it when Wasserstein
    cannot win).
    The gap estimates are computed on at most ``max_samples`` samples per θ (all of them
    at the default 1,000 samples; a seeded subsample beyond, since bottleneck matching
    grows quickly with the sample size). The divergence gap λ is only estimated when the
    whitened histogram has at least :data:`MIN_BINS` cells per axis: a coarser grid can
    only lower D^η∞ (it merges cells), so λ would be optimistic and Theorem 5.6 would
    under-correct; λ is then ``inf`` and Theorem 5.6 is not used.
    """
    tests = {
        "translation": _test_translation(model, pairs, alpha),
        "gaussian": _test_gaussian(model, pairs, alpha),
        "equal_covariance": _test_equal_cov(model, pairs, alpha),
    }
    # the W∞ gaps (bottleneck matchings) are computed only when a correction uses them (issue 26); the
    # subsamples are drawn now, so their values are those of relaxed.estimate_gaps(max_only=True)
    gaps = lazy_max_gaps(model, pairs, eta=eta_for(epsilon, delta), min_bins=MIN_BINS, max_samples=max_samples,
                         rng=rng)
    labs = _labels(pairs)
    gauss = GaussianModel({lab: model.mean(lab) for lab in labs}, {lab: gaps.pooled_covariance for lab in labs})
    def delta_w() -> float:
        return relaxed.wasserstein_gap(model, pairs)

    return Diagnostics(tests, gaps.translation_w, delta_w, gaps.max_gaussian_w, gaps.divergence_lambda,
                       gaps.eta, gauss, gaps.reference, alpha)


