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

A test that does not reject means "consistent with the assumption at this
sample size", not a proof. It also estimates the gaps to the closest approximations
f̂_θ satisfying the assumptions (Section 5.4, :mod:`distpriv.relaxed`), which
:mod:`.selection` pays for with Theorem 5.6 or 5.7 when a test rejects.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import relaxed, stattests
from .._validation import RngLike
from ..models import EmpiricalModel, GaussianModel
from ..relaxed.gaps import histogram_bins

#: Level of each assumption test.
ALPHA = 0.05

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


#: η = δ/(2(1 + e^ε)) of Theorem 5.6 (half of δ pays for the approximation): :func:`distpriv.relaxed.half_budget_eta`.
eta_for = relaxed.half_budget_eta


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
                    pvals.append(stattests.ks_2samp_pvalue(u, w))
    if not pvals:
        return TestResult("translation", 1.0, True, "single θ")
    adj = min(1.0, min(pvals) * len(pvals))
    return TestResult(
        "translation", adj, adj >= alpha,
        f"two-sample KS of centred samples against θ₀ = {labs[0]!r} on {len(pvals)} projections, Bonferroni",
    )


def _test_gaussian(model: EmpiricalModel, pairs: Sequence[tuple[Hashable, Hashable]], alpha: float) -> TestResult:
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
                p = stattests.normaltest_pvalue(u)
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
    Δ_W = max over Ψ of W∞(f_θi, f_θj) for the Wasserstein mechanism (Thm 4.1), exact on all samples.
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
    gaps = relaxed.estimate_gaps(model, pairs, eta=eta_for(epsilon, delta), min_bins=MIN_BINS,
                                 max_samples=max_samples, rng=rng, max_only=True)
    labs = _labels(pairs)
    gauss = GaussianModel({lab: model.mean(lab) for lab in labs}, {lab: gaps.pooled_covariance for lab in labs})
    return Diagnostics(tests, gaps.translation_w, gaps.wasserstein_w, gaps.max_gaussian_w, gaps.divergence_lambda,
                       gaps.eta, gauss, gaps.reference, alpha)


__all__ = [
    "ALPHA",
    "MIN_BINS",
    "Diagnostics",
    "TestResult",
    "box_m_test",
    "diagnose_assumptions",
    "eta_for",
    "histogram_bins",
]
