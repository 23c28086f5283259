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

Assumption tests (:mod:`.assumptions`): translation (two-sample KS distance) and Gaussianity (skewness
and excess kurtosis) are rejected only for a departure beyond an effect-size tolerance that is also far
outside the sampling noise (|Z| > 4.5), so the choice is stable across ``--samples`` and public seeds
(issue 21); equal
covariances (Box's M, level α = 0.05, Bonferroni) is reported only. When translation is rejected but
Gaussianity is not, ExpM/DirM are calibrated on the Gaussian fit with the exact profile (no translation
needed) rather than corrected by Theorem 5.7.

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
assumptions, then registry order). The exact accounting runs only until the winner is certified (issue 26):
a private release without noise (error 0) ends the search (and a closed-form lower bound on its δ rejects it
without the exact profile when δ is far above the target); the candidates accounted exactly are ranked by a
certified lower bound on their error (:func:`candidate_lower_bound`: closed forms for the papers' noise, which
the accounting only raises) and evaluated in that order until the bound exceeds the best error found, and the
Wasserstein mechanism's Δ_W (a bottleneck matching on all samples) is computed only when its lower bound
||Δμ||₁/ε·E||L||₂ does not already exceed it. A skipped candidate is a provable loser (code
``not-evaluated-ranked-out``, its bound in the reason), so the choice is the one full evaluation makes.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import relaxed
from .._validation import RngLike, check_array
from ..accounting.gaussian import marginal_lower_bound, reduce_pair
from ..accounting.topup import SLACK
from ..calibration import classic_warnings_suppressed
from ..errors import (
    AssumptionError,
    DistPrivError,
    InvalidParameterError,
    InvalidTypeError,
)
from ..guarantees import Guarantee
from ..mechanisms import Mechanism, calibrate, check_noiseless
from ..mechanisms._common import as_gaussian, covariance_gap
from ..mechanisms.metadata import CANDIDATES as CANDIDATE_INFO
from ..mechanisms.registry import MECHANISMS, options_of, papers_noise
from ..models import EmpiricalModel, GaussianModel
from ..noise import NoiseLaw
from .assumptions import (
    ALPHA,
    MIN_BINS,
    Diagnostics,
    diagnose_assumptions,
)

#: Which assumptions each candidate relies on ("none" = Thm 5.4, release without noise). The Gaussian-model
#: candidates need Gaussianity only: their δ is computed exactly from the output laws N(μ_θ, Σ_θ + Σ_Z) of
#: the fitted model (:mod:`distpriv.accounting`), so covariances that differ across θ are accounted for
#: (noise topped up), not assumed away; Box's M test is still run and reported.
REQUIREMENTS: dict[str, tuple[str, ...]] = {name: m.assumptions for name, m in CANDIDATE_INFO.items()}
CANDIDATES: tuple[str, ...] = tuple(CANDIDATE_INFO)
_LABELS = {name: m.label for name, m in CANDIDATE_INFO.items()}


# --------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class Relaxation:
    """The parameters of a Theorem 5.6 or 5.7 correction (Chen & Ohrimenko Sec. 5.3).

    ``lam`` is λ (Thm 5.6: the D^η∞ gap; Thm 5.7: the budget spent on the W∞ gap), ``w`` the W∞ gap W
    of Thm 5.7, ``eta`` the η of Thm 5.6.
    """

    lam: float
    w: float | None = None
    eta: float | None = None

    def to_dict(self) -> dict[str, float]:
        """The JSON fields of a corrected candidate: ``lambda`` then ``W`` (Thm 5.7) or ``eta`` (Thm 5.6)."""
        out = {"lambda": self.lam}
        if self.w is not None:
            out["W"] = self.w
        if self.eta is not None:
            out["eta"] = self.eta
        return out


@dataclass(frozen=True)
class NoiselessTest:
    """Theorem 5.4 (Chen & Ohrimenko): the largest Mahalanobis distance over Ψ and the D_max it must not exceed."""

    max_mahalanobis: float
    d_max: float

    def to_dict(self) -> dict[str, float]:
        return {"max_mahalanobis": self.max_mahalanobis, "d_max": self.d_max}


#: Why a candidate was kept or not (:attr:`Candidate.code`, beside the sentence in ``reason``).
#: ``not-evaluated-ranked-out``: a provable loser never accounted (its certified least error exceeds the
#: chosen mechanism's; :func:`select_mechanism`).
ReasonCode = Literal["kept", "rejected", "not-evaluated", "record-level-only", "missing-inputs", "misses-target",
                     "calibration-failed", "not-evaluated-ranked-out"]


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
    relaxation: Relaxation | None = None
    noiseless: NoiselessTest | None = None
    notes: list[str] = field(default_factory=list)
    #: the typed twin of ``reason`` (:data:`ReasonCode`); defaults to ``kept`` / ``rejected``
    code: ReasonCode | None = None

    def __post_init__(self) -> None:
        if self.code is None:
            self.code = "kept" if self.kept else "rejected"

    @property
    def assumptions(self) -> tuple[str, ...]:
        return () if self.guarantee is None else self.guarantee.assumptions

    @property
    def noise(self) -> NoiseLaw:
        """The total noise law: the base mechanism's (none without one) plus Theorem 5.7's Lap(b′) per component."""
        base = NoiseLaw.none(self.dim) if self.base is None else self.base.noise
        return base.plus_laplace(self.extra_laplace_scale) if self.extra_laplace_scale > 0 else base

    @property
    def noise_covariance(self) -> NDArray[np.float64]:
        """Covariance of the total noise: base Σ_Z + 2b²I for the Theorem 5.7 Laplace noise (:attr:`noise`)."""
        return self.noise.covariance_matrix

    def sample_noise(self, size: int, rng: RngLike = None) -> NDArray[np.float64]:
        """``size`` draws of the total noise, shape (size, m) (:meth:`NoiseLaw.sample`)."""
        return self.noise.sample(rng, size)

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
            **({} if self.relaxation is None else self.relaxation.to_dict()),
            **({} if self.noiseless is None else self.noiseless.to_dict()),
            **({"notes": list(self.notes)} if self.notes else {}),
        }


def _candidate_delta(name: str, delta: float, *, pure: bool = True) -> float | None:
    """The δ a candidate is calibrated with: the target where the mechanism needs one, else None (a pure claim).

    ``pure=False``: a Laplace mechanism gets the target δ too (its noise is topped up to a proven (ε, δ)).
    Callers calibrate with :func:`~distpriv.mechanisms.calibrate` inside
    :func:`~distpriv.calibration.classic_warnings_suppressed` (no forwarding layer between selection and the registry).
    """
    return delta if (CANDIDATE_INFO[name].needs_delta or not pure) else None


def quiet_check_noiseless(model: Any, pairs: Any, *, epsilon: float, delta: float, calibration: str = "exact") -> Any:
    """Theorem 5.4's test through the exact profile (:func:`distpriv.mechanisms.check_noiseless`).

    ``ok`` already requires the proven δ(ε) of releasing F unchanged to meet δ (under either
    calibration), so the classic rule at ε >= 1 never passes on the strength of ε/c alone.
    """
    with classic_warnings_suppressed():
        return check_noiseless(model, pairs, epsilon=epsilon, delta=delta, calibration=calibration)


def _meets(guarantee: Guarantee, epsilon: float, delta: float) -> bool:
    return guarantee.epsilon <= epsilon * (1 + 1e-9) and guarantee.delta <= delta * (1 + 1e-9)


#: In ``auto`` mode, the candidates whose δ is computed exactly from Gaussian output laws with unequal
#: covariances (None (Thm 5.4), EigM, DauM) are evaluated for at most this many statistics: the exact
#: profile's cost grows quickly with m (tens of seconds each at m = 30). Beyond it they are listed as not
#: evaluated; naming one with ``--mechanism`` still evaluates it.
MAX_EXACT_GAUSSIAN_DIM = 20
_EXACT_GAUSSIAN = tuple(name for name, m in CANDIDATE_INFO.items() if m.exact_gaussian_fit)


def expected_l2(mech: Mechanism) -> float:
    """E||Z||₂ of a mechanism's noise: :meth:`distpriv.noise.NoiseLaw.expected_l2` (the library's one estimator).

    A pure function of the noise law (closed forms where they exist; otherwise Monte Carlo on the normalised
    noise shape at a fixed seed, cached per shape): the argument is not modified.
    """
    return mech.noise.expected_l2()[0]


def wasserstein_error_lower_bound(model: Any, pairs: Sequence[tuple[Hashable, Hashable]], epsilon: float) -> float:
    """A lower bound on the Wasserstein mechanism's E||Z||₂ without computing Δ_W (issue 26: selection speed).

    Z = Δ_W/ε · (L_1 … L_m), L_k ~ Lap(1) i.i.d., and Δ_W = max_Ψ W∞(f_θi, f_θj) >= max_Ψ W₁ >= max_Ψ ||μ_i − μ_j||₁
    (L1 ground norm; Jensen), so E||Z||₂ >= max_Ψ ||μ_i − μ_j||₁/ε · E||L||₂. E||L||₂ is the Monte Carlo estimate of
    :meth:`~distpriv.noise.NoiseLaw.expected_l2` (200,000 draws) times 0.99, far below its relative error (~0.1%).
    """
    gap = max(float(np.abs(np.asarray(model.mean(a)) - np.asarray(model.mean(b))).sum()) for a, b in pairs)
    dim = int(model.dim)
    unit = 1.0 if dim == 1 else 0.99 * NoiseLaw.laplace(np.eye(dim), np.ones(dim)).expected_l2()[0]  # E|L| = 1 exactly
    return gap / epsilon * unit


#: Relative allowance for the Monte Carlo estimate of E||Z||₂ (:meth:`NoiseLaw.expected_l2`, >= 50,000 draws at a
#: fixed seed, relative standard error < 0.4%) that a candidate would publish: a ranked-out candidate's certified
#: least error, reduced by this fraction, still exceeds the chosen one's estimate.
MC_ALLOWANCE = 0.02


def expected_l2_lower_bound(noise: NoiseLaw) -> float:
    """A certified lower bound on E||Z||₂ in closed form (no Monte Carlo): release selection's ranking (issue 26).

    * Gaussian Z ~ N(0, Σ), eigenvalues λ_i, T = tr Σ: E||Z||₂ >= √(2T/π) (Jensen for the norm of |Z| in the
      eigenbasis: E||Z|| >= ||E|Z|||₂ and E|Z_i| = √(2λ_i/π)) and E||Z||₂ >= √(T − max λ) (Gaussian Poincaré
      inequality: Var||Z|| <= max λ for the √(max λ)-Lipschitz map of a standard normal, and E||Z||² = T);
    * Laplace Z = Σ_k b_k L_k B_k (L_k ~ Lap(1) i.i.d.): E||Z||₂ >= max_k b_k ||B_k|| (symmetrisation: adding an
      independent symmetric term cannot lower E||·||), and >= ||b||₂ when the columns B_k are orthonormal
      (then E||Z|| = E||b ⊙ L||₂ >= ||b ⊙ E|L|||₂, E|L_k| = 1);
    * Theorem 5.7's extra Lap(b′) on each of the m components: E||Z + Z′|| >= max(E||Z||, b′√m) by the same
      symmetrisation; no noise: 0.
    """
    def gaussian(cov: NDArray[np.float64]) -> float:
        w = np.clip(np.linalg.eigvalsh(0.5 * (cov + cov.T)), 0.0, None)
        t = float(w.sum())
        return max(math.sqrt(2.0 * t / math.pi), math.sqrt(max(0.0, t - float(w.max(initial=0.0)))))

    def laplace(basis: NDArray[np.float64], scales: NDArray[np.float64]) -> float:
        b = np.abs(np.asarray(scales, float).ravel())
        cols = np.linalg.norm(basis, axis=0)
        out = float((b * cols).max(initial=0.0))
        gram = basis.T @ basis
        if np.allclose(gram, np.eye(gram.shape[0]), rtol=0.0, atol=1e-9):
            out = max(out, float(np.linalg.norm(b)) * (1.0 - 1e-9))
        return out

    base = noise.match(gaussian=gaussian, laplace=laplace, none=lambda: 0.0)
    return max(base, noise.extra_laplace * math.sqrt(noise.dim))


def noiseless_delta_lower_bound(model: EmpiricalModel | GaussianModel, pairs: Sequence[tuple[Hashable, Hashable]],
                                epsilon: float) -> float:
    """A certified lower bound on δ(ε) of releasing F without noise (Thm 5.4) under the Gaussian (fit) model.

    The largest closed-form δ of one reduced coordinate over the pairs in both orders
    (:func:`distpriv.accounting.gaussian.marginal_lower_bound`: a 1-D marginal is a post-processing), the
    profile that :func:`quiet_check_noiseless` computes exactly bounded from below at the cost of one
    eigen-decomposition per pair: enough to reject the noiseless release when δ is far above the target.
    """
    g = as_gaussian(model)
    best = 0.0
    for a, b in pairs:
        red = reduce_pair(g.mean(a), g.covariance(a), g.mean(b), g.covariance(b))
        best = max(best, marginal_lower_bound(red, epsilon), marginal_lower_bound(red, epsilon, reverse=True))
    return best


def _mc_error(base: Mechanism | None, extra: float, dim: int) -> float:
    """E||Z + Z′||₂ of the base noise plus Theorem 5.7's Lap(``extra``) per component (:func:`expected_l2`)."""
    law = NoiseLaw.none(dim) if base is None else base.noise
    return (law.plus_laplace(extra) if extra > 0 else law).expected_l2()[0]


def _test_text(diag: Diagnostics, assumption: str) -> str:
    t = diag.tests[assumption]
    if t.code == "declared":  # known exactly for a declared model (distpriv.release.declared)
        return f"{assumption.replace('_', ' ')} holds ({t.detail})"
    return f"{assumption.replace('_', ' ')} not rejected ({t.detail})"


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
            with classic_warnings_suppressed():
                m = calibrate(name, model, pairs, epsilon=eps - 2 * lam,
                              delta=_candidate_delta(name, math.exp(-lam) * delta), calibration=calibration, **opts)
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
    with classic_warnings_suppressed():
        base = calibrate(name, model, pairs, epsilon=eps - 2 * lam, delta=_candidate_delta(name, math.exp(-lam) * delta),
                         calibration=calibration, **opts)
    t = relaxed.theorem_5_7(base.guarantee.epsilon, base.guarantee.delta, w, lam, dim)
    return base, lam, t.extra_laplace_scale, t.epsilon, t.delta


@dataclass
class _Plan:
    """How :func:`evaluate_candidate` will calibrate a candidate: options, assumption outcome, model to calibrate on."""

    opts: dict[str, Any]
    failed: list[str]
    passed: list[str]
    cal_model: EmpiricalModel | GaussianModel


def _plan(
    name: str, model: EmpiricalModel | GaussianModel, pairs: Sequence[tuple[Hashable, Hashable]], diag: Diagnostics,
    sensitivities: ArrayLike | None, n: int | None,
) -> _Plan | Candidate:
    """The part of :func:`evaluate_candidate` that needs no calibration: a final :class:`Candidate` when the
    candidate is decided without one (record-level DP, missing inputs), else its :class:`_Plan`. Δ_W is not
    touched (the Wasserstein option is set by the caller)."""
    meta = CANDIDATE_INFO[name]
    label = meta.label
    dim = model.dim
    if meta.baseline == "dp":
        return Candidate(name, label, False, "protects single records (group size k = 1 < n), not the property: "
                         "no distribution-privacy guarantee for Ψ", dim, code="record-level-only")
    opts: dict[str, Any] = {}
    if meta.baseline == "groupdp":
        if sensitivities is None or n is None:
            return Candidate(name, label, False, "needs per-record sensitivities and n", dim, code="missing-inputs")
        opts = {"sensitivities": np.asarray(sensitivities, float), "n": int(n)}
    if name in MECHANISMS and "tight" in options_of(name):
        # issue 25: the Laplace mechanisms' default certifies 2-D claims on a grid that may scale the noise *below*
        # the papers' one; the ranking above (candidate_lower_bound: the papers' noise, "which the accounting only
        # raises") and release's speed floor assume the coupling bound, so release keeps tight=False
        opts["tight"] = False
    needs = REQUIREMENTS[name]
    failed = [a for a in needs if a in diag.tests and not diag.holds(a)]
    passed = [_test_text(diag, a) for a in needs if a in diag.tests and diag.holds(a)]
    cal_model: EmpiricalModel | GaussianModel = model
    if "translation" in needs and failed == ["translation"] and isinstance(model, EmpiricalModel) \
            and "gaussian" in diag.tests and diag.holds("gaussian"):
        # Translation rejected but Gaussianity not: the exact profile of the Gaussian fit needs no translation
        # (unequal covariances are accounted for, mechanisms/exact.py), so the claim rests on Gaussianity alone
        # instead of a Thm 5.7 correction many times noisier (issue 21: no cliff on one test).
        cal_model = model.to_gaussian()
        failed = []
        passed = [_test_text(diag, "gaussian"), "translation rejected "
                  f"({diag.tests['translation'].detail}): the claim rests on the exact profile of the Gaussian fit"]
    elif "translation" in needs and not failed and isinstance(model, EmpiricalModel):
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
    return _Plan(opts, failed, passed, cal_model)


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
    meta = CANDIDATE_INFO[name]
    label = meta.label
    dim = model.dim
    plan = _plan(name, model, pairs, diag, sensitivities, n)
    if isinstance(plan, Candidate):
        return plan
    opts, failed, passed, cal_model = plan.opts, plan.failed, plan.passed, plan.cal_model
    needs = REQUIREMENTS[name]
    if name == "wasserstein":
        opts = {"w_infinity": diag.wasserstein_w}
    try:
        if not failed:
            if name == "none":
                low = noiseless_delta_lower_bound(model, pairs, epsilon)
                if low > delta * (1 + SLACK):  # decided without the exact profile (issue 26)
                    return Candidate(name, label, False, f"Thm 5.4 fails: the noiseless release has δ >= {low:.3g} > "
                                     f"{delta:g} (certified lower bound from one reduced coordinate; the exact profile "
                                     "was not needed)", dim)
                chk = quiet_check_noiseless(model, pairs, epsilon=epsilon, delta=delta, calibration=calibration)
                if not chk.ok or chk.guarantee is None:
                    why = (f"the exact profile of the noiseless release gives δ = {chk.proven_delta:.3g} > {delta:g}"
                           if chk.proven_delta > delta else
                           f"max Mahalanobis distance {chk.max_mahalanobis:.3g} > D_max = {chk.d_max:.3g}")
                    return Candidate(name, label, False, f"Thm 5.4 fails: {why}", dim)
                g = _finalise(chk.guarantee, epsilon, delta, passed, None)
                return Candidate(name, label, True, "assumptions not rejected; release without noise is private (Thm 5.4)",
                                 dim, None, 0.0, None, g, 0.0,
                                 noiseless=NoiselessTest(chk.max_mahalanobis, chk.d_max))
            with classic_warnings_suppressed():
                mech = calibrate(name, cal_model, pairs, epsilon=epsilon,
                                 delta=_candidate_delta(name, delta, pure=cal_model is model), calibration=calibration,
                                 **opts)
            if not _meets(mech.guarantee, epsilon, delta):  # e.g. the classic rule weakened to its proven δ
                return Candidate(name, label, False, f"proven guarantee (ε, δ) = ({mech.guarantee.epsilon:.4g}, "
                                 f"{mech.guarantee.delta:.3g}) misses the target ({epsilon:g}, {delta:g})", dim,
                                 code="misses-target")
            g = _finalise(mech.guarantee, mech.guarantee.epsilon, mech.guarantee.delta, passed, None)
            reason = "no shape assumption on f_θ" if not needs else (
                "values assumed within the observed ranges" if needs == ("bounded",) else "assumptions not rejected")
            return Candidate(name, label, True, reason, dim, mech, 0.0, None, g, expected_l2(mech))
        if not isinstance(model, EmpiricalModel):
            return Candidate(name, label, False, "assumptions rejected, and the Theorem 5.6/5.7 corrections need "
                             "samples of F (an EmpiricalModel)", dim)
        return _corrected(name, label, model, pairs, diag, failed, passed, epsilon, delta, calibration, opts)
    except DistPrivError as exc:
        return Candidate(name, label, False, f"calibration failed: {exc}", dim, code="calibration-failed")


#: The fields of :class:`Diagnostics` that may hold a function computing them on first use.
_LAZY_FIELDS = ("_translation", "_wasserstein", "_gaussian")


def _lazy_gaps(diag: Diagnostics) -> list[Any]:
    """The functions of ``diag`` that compute a gap on first use (shared by the memo's copies: their identity is
    part of :func:`diagnostics_key`)."""
    return [v for f in _LAZY_FIELDS if callable(v := getattr(diag, f))]


def diagnostics_key(diag: Diagnostics) -> tuple[Any, ...]:
    """What a memo key holds of ``diag``: every field, a not yet computed gap as the identity of the function that
    computes it (:func:`distpriv.release.memo.token`; copies made with ``dataclasses.replace`` share it)."""
    from .memo import token

    return tuple((f, token(v) if callable(v) else v) for f, v in vars(diag).items())


def evaluate_public(
    name: str,
    model: EmpiricalModel | GaussianModel,
    pairs: Sequence[tuple[Hashable, Hashable]],
    diag: Diagnostics,
    *,
    memo: bool = True,
    **kwargs: Any,
) -> Candidate:
    """:func:`evaluate_candidate`, memoised in this process (:func:`distpriv.release.memo.memoized`) when ``memo``:
    only for a model of public inputs (a population or a declared model), never one modelled from the data.

    An evaluation may compute a gap of ``diag`` on first use (e.g. Δ_W for Wasserstein); a memo hit sets the same
    value on ``diag`` (the key holds the function computing it, which returns it again), so ``diag`` ends as
    the evaluation would leave it.
    """
    if not memo:
        return evaluate_candidate(name, model, pairs, diag, **kwargs)
    from .memo import memoized

    lazy = [f for f in _LAZY_FIELDS if callable(getattr(diag, f))]

    def compute() -> tuple[Candidate, dict[str, float]]:
        c = evaluate_candidate(name, model, pairs, diag, **kwargs)
        return c, {f: getattr(diag, f) for f in lazy if not callable(getattr(diag, f))}

    c, forced = memoized("evaluate_candidate", (name, model, list(pairs), diagnostics_key(diag), kwargs), compute)
    for f, v in forced.items():
        setattr(diag, f, v)
    return replace(c, notes=list(c.notes))


#: Candidates ranked before accounting (issue 26): those whose evaluation runs the exact accounting of the
#: Gaussian (fit) model or of the samples' law (:mod:`distpriv.mechanisms.exact`, :mod:`~distpriv.mechanisms.empirical`).
RANKED: tuple[str, ...] = tuple(name for name, m in CANDIDATE_INFO.items() if m.exact_gaussian_model)


def candidate_lower_bound(
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
) -> float | None:
    """A certified lower bound on the E||Z||₂ that :func:`evaluate_candidate` would find, without accounting.

    For a candidate calibrated as is (its assumptions not rejected): :func:`expected_l2_lower_bound` of the
    papers' noise (:func:`distpriv.mechanisms.registry.papers_noise`, the same model, ε, δ and options as
    :func:`evaluate_candidate`), which the exact accounting only scales up or adds to. ``None`` when no bound is
    offered: the candidate is decided without calibration, needs a Theorem 5.6/5.7 correction, or its closed-form
    calibration fails (the evaluation then says why).
    """
    plan = _plan(name, model, pairs, diag, sensitivities, n)
    if isinstance(plan, Candidate) or plan.failed or name == "none":
        return None
    pure = plan.cal_model is model
    d = delta if (CANDIDATE_INFO[name].needs_delta or not pure) else None
    try:
        with classic_warnings_suppressed():
            noise = papers_noise(name, plan.cal_model, pairs, epsilon=epsilon, delta=d, calibration=calibration,
                                 **plan.opts)
    except DistPrivError:
        return None
    return expected_l2_lower_bound(noise)


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
                                     g, err, Relaxation(lam, w=w)))
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
                        chk = quiet_check_noiseless(diag.pooled_model, pairs, epsilon=e_b, delta=d_b, calibration=calibration)
                        if chk.ok and chk.guarantee is not None:
                            g = relaxed.apply_theorem_5_6(replace(chk.guarantee, epsilon=e_b, delta=d_b), eta, lam)
                            g = g.with_assumptions(*passed)
                            options.append(Candidate(name, label, True, f"{rejected} rejected; corrected by Thm 5.6", dim,
                                                     None, 0.0, f"Thm 5.6: λ = {lam:.4g} at η = {eta:.3g}", g, 0.0,
                                                     Relaxation(lam, eta=eta)))
                        else:
                            notes.append(f"Thm 5.6: Thm 5.4 fails at base ε = {e_b:.3g}")
                    else:
                        with classic_warnings_suppressed():
                            mech = calibrate(name, diag.pooled_model, pairs, epsilon=e_b, delta=_candidate_delta(name, d_b),
                                             calibration=calibration, **opts)
                        g = relaxed.apply_theorem_5_6(mech.guarantee, eta, lam).with_assumptions(
                            *passed, f"the shape assumptions above are made of the approximations f̂_θ = {what}, "
                            "not of the true f_θ")
                        options.append(Candidate(name, label, True, f"{rejected} rejected; corrected by Thm 5.6", dim, mech,
                                                 0.0, f"Thm 5.6: f_θ approximated by {what}; λ = {lam:.4g} at η = {eta:.3g}, "
                                                 f"base at (ε, δ) = ({e_b:.4g}, {d_b:.3g})", g, expected_l2(mech),
                                                 Relaxation(lam, eta=eta)))
                except DistPrivError as exc:
                    notes.append(f"Thm 5.6 not applicable: {exc}")
            else:
                notes.append(f"Thm 5.6 not applicable: δ budget exhausted by η = {eta:.3g}")
        else:
            if math.isfinite(lam):
                notes.append(f"Thm 5.6 not applicable: divergence gap λ = {lam:.3g} leaves no ε for the base mechanism")
            else:
                notes.append(f"Thm 5.6 not applicable: D^η∞ gap not estimable (fewer than {MIN_BINS} histogram cells per "
                             "axis with these samples; draw more samples per θ or release fewer statistics)")
    valid = [c for c in options if c.guarantee is not None and c.guarantee.epsilon <= eps * (1 + 1e-9)
             and c.guarantee.delta <= delta * (1 + 1e-9)]
    if not valid:
        return Candidate(name, label, False, f"{rejected} rejected and no correction applies ({'; '.join(notes) or 'none'})", dim)
    best = min(valid, key=lambda c: c.expected_l2_error)
    if notes:
        best.notes = notes
    return best


def _noiseless_5_7(
    model: GaussianModel, pairs: Any, eps: float, delta: float, calibration: str, w: float, dim: int
) -> tuple[Guarantee, float, float, float, float]:
    """Thm 5.4 at (ε − 2λ, e^{−λ}δ) + Lap(W/λ): the largest λ for which the noiseless test still passes."""

    def ok(lam: float) -> bool:
        try:
            return quiet_check_noiseless(model, pairs, epsilon=eps - 2 * lam, delta=math.exp(-lam) * delta,
                                   calibration=calibration).ok
        except DistPrivError:
            return False

    lo, hi = 0.0, min(eps / 2 * (1 - 1e-9), max(math.log(delta) + 700.0, 2e-9 * eps))  # e^{−λ}δ stays > 0
    if not ok(1e-9 * eps):
        chk = quiet_check_noiseless(model, pairs, epsilon=eps, delta=delta, calibration=calibration)
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
    chk = quiet_check_noiseless(model, pairs, epsilon=eps - 2 * lo, delta=math.exp(-lo) * delta, calibration=calibration)
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
    #: the record-level DP claim (:class:`distpriv.release.record.RecordClaim`) when the release asks for it
    record: Any = None

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
    rank: bool = True,
    memo: bool = False,
) -> Selection:
    """Evaluate every candidate (``mechanism="auto"``) or one, and choose the smallest expected L2 error.

    ``diagnostics``: assumptions known without testing (a declared Gaussian model,
    :func:`distpriv.release.declared.declared_diagnostics`); by default they are tested on
    the samples of ``model``. Raises :class:`~distpriv.AssumptionError` when the requested
    mechanism (or every candidate) is rejected; the message gives the reason.

    ``rank`` (auto mode, issue 26): evaluate the candidates in increasing order of a certified lower bound on
    the error they would publish and stop accounting once that bound exceeds the best error found; the skipped
    ones are listed with code ``not-evaluated-ranked-out`` and their bound. The chosen candidate is the one
    ``rank=False`` (every candidate evaluated) chooses.

    ``memo``: each candidate evaluated once per process for the same inputs (:func:`evaluate_public`); only for a
    model of public inputs.
    """
    if diagnostics is not None:
        diag = diagnostics
    elif isinstance(model, EmpiricalModel) and memo and isinstance(rng, (int, np.random.Generator)):
        # once per process for the same public inputs and seeded stream (a copy each)
        from .memo import memoized

        diag = memoized("diagnose_assumptions", (model, list(pairs), epsilon, delta, alpha, rng),
                        lambda: diagnose_assumptions(model, pairs, epsilon=epsilon, delta=delta, alpha=alpha, rng=rng),
                        shared=_lazy_gaps)  # the functions computing a gap on first use: their identity keys
    elif isinstance(model, EmpiricalModel):
        diag = diagnose_assumptions(model, pairs, epsilon=epsilon, delta=delta, alpha=alpha, rng=rng)
    else:
        raise InvalidTypeError("testing the assumptions needs an EmpiricalModel (samples of F); "
                               "pass diagnostics= for a declared GaussianModel", argument="model")
    names = tuple(nm for nm in CANDIDATES if CANDIDATE_INFO[nm].automatic) if mechanism == "auto" else (mechanism,)
    lazy = ("wasserstein",) if mechanism == "auto" and not diag.wasserstein_computed else ()
    done: dict[str, Candidate] = {}
    if mechanism == "auto" and "none" in names and not (
            "none" in _EXACT_GAUSSIAN and model.dim > MAX_EXACT_GAUSSIAN_DIM):
        # certified winner first (issue 26): a private release without noise has error 0, which no mechanism beats
        first = evaluate_public("none", model, pairs, diag, memo=memo, epsilon=epsilon, delta=delta,
                                calibration=calibration, sensitivities=sensitivities, n=n)
        if first.kept:
            rest = [Candidate(nm, _LABELS[nm], False, "not evaluated: the release without noise (Thm 5.4) is private "
                              "and no mechanism has a smaller expected error than 0", model.dim, code="not-evaluated")
                    for nm in names if nm != "none"]
            return Selection(first, [first, *rest], diag)
        done["none"] = first
    for nm in names:
        if mechanism == "auto" and nm in _EXACT_GAUSSIAN and model.dim > MAX_EXACT_GAUSSIAN_DIM:
            done[nm] = Candidate(nm, _LABELS[nm], False, f"not evaluated: the exact δ of Gaussian output laws is computed "
                                 f"for at most {MAX_EXACT_GAUSSIAN_DIM} statistics in auto mode (m = {model.dim}); name it "
                                 "as the mechanism to try", model.dim, code="not-evaluated")
    kwargs: dict[str, Any] = {"epsilon": epsilon, "delta": delta, "calibration": calibration,
                              "sensitivities": sensitivities, "n": n}
    # Ranking (issue 26): each candidate gets a bound below which the error it would publish cannot fall —
    # Wasserstein's from ||Δμ||₁ (wasserstein_error_lower_bound, against the same Monte Carlo constant), an
    # accounted candidate's from its papers' noise (candidate_lower_bound, less the Monte Carlo allowance), none
    # for the cheap ones — and they are evaluated in increasing order of it until the bound exceeds the best
    # error found: the skipped ones are provable losers, so the winner is the one full evaluation would choose.
    # Every input of a bound is public wherever the model is (the model, Ψ, ε, δ, the spec).
    bounds: dict[str, float] = {}
    if mechanism == "auto" and rank:
        for nm in names:
            if nm in done:
                continue
            if nm in lazy:
                bounds[nm] = wasserstein_error_lower_bound(model, pairs, epsilon)
            elif nm in RANKED:
                low = candidate_lower_bound(nm, model, pairs, diag, **kwargs)
                if low is not None:
                    bounds[nm] = low * (1.0 - MC_ALLOWANCE)
    elif lazy:  # without ranking, Δ_W (a bottleneck matching on all samples) still waits for the others
        bounds[lazy[0]] = wasserstein_error_lower_bound(model, pairs, epsilon)
    order = {nm: i for i, nm in enumerate(CANDIDATES)}
    todo = sorted((nm for nm in names if nm not in done),
                  key=lambda nm: (bounds.get(nm, -1.0) if rank else (nm in lazy), order[nm]))
    skipped: dict[str, float] = {}
    for nm in todo:
        best = min((c.expected_l2_error for c in done.values() if c.kept), default=math.inf)
        if nm in bounds and bounds[nm] > best:
            skipped[nm] = bounds[nm]
            continue
        done[nm] = evaluate_public(nm, model, pairs, diag, memo=memo, **kwargs)
    best = min((c.expected_l2_error for c in done.values() if c.kept), default=math.inf)
    for nm, low in skipped.items():
        if nm in lazy:
            done[nm] = Candidate(nm, _LABELS[nm], False, f"not evaluated: its expected L2 error is at least "
                                 f"{low:.4g} (Δ_W >= max over Ψ of ||μ_i − μ_j||₁) > {best:.4g}, the best "
                                 "candidate's", model.dim, code="not-evaluated")
        else:
            done[nm] = Candidate(nm, _LABELS[nm], False, f"not evaluated: its least possible expected L2 error "
                                 f"{low / (1.0 - MC_ALLOWANCE):.4g} (a certified bound for the papers' noise, which the "
                                 f"exact accounting only raises) exceeds the chosen mechanism's {best:.4g}", model.dim,
                                 code="not-evaluated-ranked-out")
    cands = [done[nm] for nm in names]
    kept = [c for c in cands if c.kept]
    if not kept:
        if mechanism != "auto":
            raise AssumptionError(f"{mechanism}: {cands[0].reason}", argument="mechanism")
        raise AssumptionError("auto: no mechanism has a valid guarantee: "
                              + "; ".join(f"{c.label}: {c.reason}" for c in cands), argument="mechanism")
    chosen = min(kept, key=lambda c: (round(c.expected_l2_error, 12), len(REQUIREMENTS[c.name]), order[c.name]))
    return Selection(chosen, cands, diag)
