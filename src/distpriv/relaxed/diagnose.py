"""One diagnosis of an empirical model against the Expected Value mechanisms' assumptions (Chen & Ohrimenko Sec. 5.4).

The mechanisms of Sections 5.1–5.3 are calibrated on approximations f̂_θ of the
sampled f_θ: translates of a reference f_θ₀ (f̂_θ = f_θ₀ + μ_θ − μ_θ₀) or the
equal-covariance Gaussians N(μ̂_θ, Σ̄), Σ̄ the average covariance over the θ in Ψ.
:func:`estimate_gaps` measures the distance to those approximations once — the W of
Theorem 5.7 (W∞, L1 ground norm) and the λ of Theorem 5.6 (η-approximate
max-divergence) — and :func:`diagnose` reports it with per-pair rows, (W, δ)-closeness
radii and the Theorem 5.6/5.7 corrections. The release
(:func:`distpriv.release.assumptions.diagnose_assumptions`) adds its hypothesis tests
to the same :func:`estimate_gaps`.

η is an explicit parameter of both: Theorem 5.6 pays (1 + e^{ε+λ})η + e^λ δ, so η is
a share of the δ budget that the caller chooses. :func:`research_eta` (δ/10) is the
default of :func:`diagnose`; the release uses :func:`half_budget_eta`,
η = δ/(2(1 + e^ε)), which spends half of δ on (1 + e^ε)η.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._validation import (
    RngLike,
    as_rng,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
)
from ..errors import DistPrivError, InvalidParameterError, InvalidTypeError
from ..models import EmpiricalModel, normalize_pairs
from .gaps import (
    MAX_CELLS,
    approx_max_divergence_gap,
    equal_covariance_gap,
    gaussian_w_infinity_gap,
    histogram_bins,
    translation_gap,
)
from .theorems import PrivacyLoss, split_budget_theorem_5_7, theorem_5_6, theorem_5_7


# --------------------------------------------------------------------------- η and Σ̄
def research_eta(delta: float) -> float:
    """η = δ/10, the default of :func:`diagnose` (a tenth of δ for the Theorem 5.6 approximation)."""
    return check_delta(delta, "delta", allow_zero=True) / 10.0


def half_budget_eta(epsilon: float, delta: float) -> float:
    """η = δ/(2(1 + e^ε)): (1 + e^ε)η = δ/2 in Theorem 5.6, computed in log space (no overflow for large ε).

    The release's choice (:mod:`distpriv.release.selection`): half of δ pays for the approximation.
    """
    return 0.5 * delta * math.exp(-float(np.logaddexp(0.0, epsilon)))


def pooled_covariance(model: Any, labels: Sequence[Hashable]) -> NDArray[np.float64]:
    """Σ̄ = (1/|Θ_Ψ|) Σ_θ Σ̂_θ, the average covariance over the θ in Ψ.

    The Section 5.3 mechanisms need Gaussians with *equal* covariances within each pair, so the
    approximations Theorems 5.6/5.7 compare with are N(μ̂_θ, Σ̄) (per-θ fits N(μ̂_θ, Σ̂_θ) with different
    Σ̂_θ satisfy no Section 5.3 theorem).
    """
    out: NDArray[np.float64] = sum(model.covariance(lab) for lab in labels) / len(labels)
    return out


# --------------------------------------------------------------------------- the gaps, once
@dataclass(frozen=True)
class Gaps:
    """Sample estimates of the distance from f_θ to the approximations f̂_θ (Chen & Ohrimenko Sec. 5.4)."""

    eta: float  # η at which the divergence gaps are estimated
    reference: Hashable  # θ₀ of the translation approximations f̂_θ = f_θ₀ + μ_θ − μ_θ₀
    pooled_covariance: NDArray[np.float64]  # Σ̄ of the Gaussian approximations N(μ̂_θ, Σ̄)
    translation_w: float  # max_θ W∞(f_θ, f_θ₀ + μ_θ − μ_θ₀), L1 (0 for a single θ)
    wasserstein_w: float  # max over Ψ of W∞(f_θi, f_θj), L1, exact on all samples: Δ_W of Thm 4.1
    gaussian_w: dict[Hashable, float]  # per θ: W∞(f_θ, N(μ̂_θ, Σ̄)) estimate, L1
    divergence: dict[Hashable, float]  # per θ: max(D^η∞(f ‖ f̂), D^η∞(f̂ ‖ f)) to N(μ̂_θ, Σ̄); inf if not estimable

    @property
    def max_gaussian_w(self) -> float:
        """W of Theorem 5.7 for the Gaussian approximations: max_θ of :attr:`gaussian_w`."""
        return max(self.gaussian_w.values())

    @property
    def divergence_lambda(self) -> float:
        """λ of Theorem 5.6: max_θ of :attr:`divergence`."""
        return max(self.divergence.values())


def estimate_gaps(
    model: EmpiricalModel,
    pairs: Iterable[Sequence[Hashable]],
    *,
    eta: float,
    bins: int | None = None,
    min_bins: int = 2,
    max_samples: int | None = 2000,
    rng: RngLike = 0,
    wasserstein: bool = True,
    max_only: bool = False,
) -> Gaps:
    """The Theorem 5.6/5.7 gaps of ``model`` for Ψ = ``pairs`` at an explicit η.

    * translation: θ₀ = the first label of Ψ, W = max_θ :func:`translation_gap` (f_θ, f_θ₀);
    * Δ_W = max over Ψ of W∞(f_θi, f_θj) on all samples (the Wasserstein mechanism, Thm 4.1, uses it
      as is, so it must be the model's exact W∞, not that of subsamples, which can be smaller);
    * Gaussian: per θ, :func:`gaussian_w_infinity_gap` to N(μ̂_θ, Σ̄) (:func:`pooled_covariance`);
    * divergence: per θ, :func:`approx_max_divergence_gap` to N(μ̂_θ, Σ̄) at ``eta`` with ``bins`` cells
      per axis (default :func:`histogram_bins`). With the default bins, when the fewest-sample θ gets
      fewer than ``min_bins`` cells per axis every λ is ``inf``: a coarser grid can only lower D^η∞ (it
      merges cells), so λ would be optimistic and Theorem 5.6 would under-correct. A singular Σ̄ (no
      density comparison) also gives ``inf``.

    W∞ estimates use at most ``max_samples`` samples per θ (a seeded subsample beyond); one generator
    (``rng``) is drawn from in the order above. All values are sample estimates, not certificates.
    ``wasserstein=False`` skips Δ_W (NaN; a bottleneck matching on all samples, the slowest part at
    thousands of samples) for a caller that computes it only when needed (:func:`wasserstein_gap`).

    ``max_only=True`` (what a release needs: only the maxima enter Theorems 4.1 and 5.7): the three maxima
    are the same, computed by :func:`distpriv.relaxed.bottleneck.max_w_infinity` (exact W∞ only where it
    decides the maximum), and :attr:`Gaps.gaussian_w` then maps every label to that maximum (not to its
    own gap).
    """
    if not isinstance(model, EmpiricalModel):
        raise InvalidTypeError(f"model: expected an EmpiricalModel, got {type(model).__name__}")
    ps = normalize_pairs(pairs, model.labels)
    e = check_delta(eta, "eta", allow_zero=True)
    mb = check_int(min_bins, "min_bins", minimum=2)
    if bins is not None and check_int(bins, "bins", minimum=2) ** model.dim > MAX_CELLS:
        raise InvalidParameterError(f"bins: {bins}^{model.dim} cells is too many; use fewer bins per axis")
    g = as_rng(rng)
    labs = list(dict.fromkeys(v for pr in ps for v in pr))
    ref = labs[0]
    if max_only:
        return _max_gaps(model, ps, labs, e, bins, mb, max_samples, g, wasserstein=wasserstein)
    tw = max(
        [translation_gap(model.samples(lab), model.samples(ref), max_samples=max_samples, rng=g) for lab in labs[1:]]
        or [0.0]
    )
    ww = wasserstein_gap(model, ps) if wasserstein else math.nan
    pooled = pooled_covariance(model, labs)
    gw = {lab: float(gaussian_w_infinity_gap(model.samples(lab), model.mean(lab), pooled, max_samples=max_samples,
                                             rng=g))
          for lab in labs}
    div = divergence_gaps(model, labs, pooled, eta=e, bins=bins, min_bins=mb)
    return Gaps(e, ref, pooled, float(tw), float(ww), gw, div)


def wasserstein_gap(model: EmpiricalModel, pairs: Iterable[Sequence[Hashable]]) -> float:
    """Δ_W = max over Ψ of W∞(f_θi, f_θj) (L1) on all samples (Thm 4.1's sensitivity; bottleneck matching).

    Computed by :func:`distpriv.relaxed.bottleneck.max_w_infinity`: exact, with a full matching only for the
    pairs that can decide the maximum.
    """
    from .bottleneck import max_w_infinity

    ps = normalize_pairs(pairs, model.labels)
    return max_w_infinity([(model.samples(a), model.samples(b)) for a, b in ps])


@dataclass(frozen=True)
class LazyGaps:
    """:func:`estimate_gaps` with ``max_only=True`` and the two W∞ maxima computed on first call.

    The subsamples and Gaussian draws are taken at construction (the same draws from the generator, in the
    same order, as :func:`estimate_gaps`), so a later call returns exactly the eager value; each value is
    computed at most once (issue 26: a release whose assumptions hold never pays for the bottleneck
    matchings, which only Theorem 5.7's correction uses).
    """

    eta: float
    reference: Hashable
    pooled_covariance: NDArray[np.float64]
    translation_w: Callable[[], float]  # max_θ W∞(f_θ, f_θ₀ + μ_θ − μ_θ₀), L1
    max_gaussian_w: Callable[[], float]  # max_θ W∞(f_θ, N(μ̂_θ, Σ̄)) estimate, L1
    divergence: dict[Hashable, float]

    @property
    def divergence_lambda(self) -> float:
        """λ of Theorem 5.6: max_θ of :attr:`divergence`."""
        return max(self.divergence.values())


def lazy_max_gaps(model: EmpiricalModel, pairs: Iterable[Sequence[Hashable]], *, eta: float, min_bins: int = 2,
                  max_samples: int | None = 2000, rng: RngLike = 0) -> LazyGaps:
    """:func:`estimate_gaps` (``max_only=True``, ``wasserstein=False``, default bins) with lazy W∞ maxima."""
    ps = normalize_pairs(pairs, model.labels)
    labs = list(dict.fromkeys(v for pr in ps for v in pr))
    return _lazy_gaps(model, labs, check_delta(eta, "eta", allow_zero=True), None,
                      check_int(min_bins, "min_bins", minimum=2), max_samples, as_rng(rng))


def _once(f: Callable[[], float]) -> Callable[[], float]:
    memo: list[float] = []

    def call() -> float:
        if not memo:
            memo.append(float(f()))
        return memo[0]

    return call


def _lazy_gaps(model: EmpiricalModel, labs: list[Hashable], eta: float, bins: int | None, min_bins: int,
               max_samples: int | None, g: np.random.Generator) -> LazyGaps:
    from .gaps import gaussian_gap_inputs, translation_gap_inputs

    ref = labs[0]
    trans = [translation_gap_inputs(model.samples(lab), model.samples(ref), max_samples=max_samples, rng=g)
             for lab in labs[1:]]
    pooled = pooled_covariance(model, labs)
    gauss = [gaussian_gap_inputs(model.samples(lab), model.mean(lab), pooled, max_samples=max_samples, rng=g)
             for lab in labs]
    div = divergence_gaps(model, labs, pooled, eta=eta, bins=bins, min_bins=min_bins)

    def tw() -> float:
        from .bottleneck import max_w_infinity

        return max_w_infinity(trans) if trans else 0.0

    def gw() -> float:
        from .bottleneck import max_w_infinity

        return max_w_infinity(gauss)

    return LazyGaps(eta, ref, pooled, _once(tw), _once(gw), div)


def _max_gaps(model: EmpiricalModel, ps: Sequence[tuple[Hashable, Hashable]], labs: list[Hashable], eta: float,
              bins: int | None, min_bins: int, max_samples: int | None, g: np.random.Generator, *,
              wasserstein: bool = True) -> Gaps:
    """:func:`estimate_gaps` with ``max_only=True``: the same inputs (the same draws from ``g``, in the same
    order), maxima by :func:`~distpriv.relaxed.bottleneck.max_w_infinity`."""
    from .bottleneck import max_w_infinity

    lz = _lazy_gaps(model, labs, eta, bins, min_bins, max_samples, g)
    ww = max_w_infinity([(model.samples(a), model.samples(b)) for a, b in ps]) if wasserstein else math.nan
    return Gaps(eta, lz.reference, lz.pooled_covariance, float(lz.translation_w()), float(ww),
                dict.fromkeys(labs, float(lz.max_gaussian_w())), lz.divergence)


def divergence_gaps(
    model: EmpiricalModel,
    labels: Sequence[Hashable],
    pooled: NDArray[np.float64],
    *,
    eta: float,
    bins: int | None = None,
    min_bins: int = 2,
) -> dict[Hashable, float]:
    """Per θ, the Theorem 5.6 gap λ_θ = D^η∞ between f_θ and N(μ̂_θ, Σ̄) (:func:`approx_max_divergence_gap`).

    With the default ``bins`` (:func:`histogram_bins`), λ is ``inf`` for every θ when the fewest-sample θ
    gets fewer than ``min_bins`` cells per axis (a coarser grid can only lower D^η∞, so λ would be
    optimistic); a singular Σ̄ also gives ``inf``. The one implementation behind :func:`estimate_gaps`
    and the release's error curves (which re-evaluate λ at other η).
    """
    n_min = min(model.samples(lab).shape[0] for lab in labels)
    if bins is None and histogram_bins(n_min, model.dim) < min_bins:
        return dict.fromkeys(labels, math.inf)
    try:
        return {lab: float(approx_max_divergence_gap(model.samples(lab), model.mean(lab), pooled, eta, bins))
                for lab in labels}
    except DistPrivError:  # singular pooled covariance: no density comparison possible
        return dict.fromkeys(labels, math.inf)


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
    ``max_divergence_gap`` at ``eta`` (:func:`approx_max_divergence_gap`). These per-θ gaps, the
    translation gap against the reference θ₀ (``reference_translation_gap``) and Δ_W
    (``wasserstein_delta_W``) are :func:`estimate_gaps`, the computation the release shares.

    ``eta`` is the η of Theorem 5.6, a share of the δ budget chosen by the caller: ``None`` means
    :func:`research_eta` (δ/10); the release passes :func:`half_budget_eta` (δ/(2(1 + e^ε))).
    λ is ``inf`` when Σ̄ is singular (no density comparison).

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
    e = research_eta(d) if eta is None else check_delta(eta, "eta", allow_zero=True)
    cd = (
        d
        if closeness_delta is None
        else check_delta(closeness_delta, "closeness_delta", allow_zero=True)
    )
    lm = eps / 4.0 if lam is None else check_positive(lam, "lam")
    seed = as_rng(rng)
    gaps = estimate_gaps(model, ps, eta=e, bins=bins, max_samples=max_samples, rng=seed)

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

    theta_rows: dict[Hashable, dict[str, float]] = {}
    for lab in gaps.gaussian_w:
        x = model.samples(lab)
        theta_rows[lab] = {
            "n_samples": int(x.shape[0]),
            "gaussian_w_infinity_gap": gaps.gaussian_w[lab],
            "gaussian_closeness_gap": gaussian_w_infinity_gap(
                x, model.mean(lab), gaps.pooled_covariance, delta=cd, max_samples=max_samples, rng=seed
            ),
            "max_divergence_gap": gaps.divergence[lab],
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
        "reference_theta": gaps.reference,
        "reference_translation_gap": gaps.translation_w,
        "wasserstein_delta_W": gaps.wasserstein_w,
        "theorem_5_6": {"lam": max_div, "eta": e, "epsilon": t56.epsilon, "delta": t56.delta},
        "theorem_5_7": {"translation": thm57(max_tg), "gaussian": thm57(max_gw)},
        "note": "all gaps are estimates from finite samples (Chen & Ohrimenko Section 5.4)",
    }
