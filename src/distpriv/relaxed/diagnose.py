"""One diagnosis of an empirical model against the Expected Value mechanisms' assumptions (Chen & Ohrimenko Sec. 5.4)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from .._validation import (
    as_rng,
    check_delta,
    check_epsilon,
    check_positive,
)
from ..errors import InvalidTypeError
from ..models import EmpiricalModel, normalize_pairs
from .gaps import (
    RngLike,
    approx_max_divergence_gap,
    equal_covariance_gap,
    gaussian_w_infinity_gap,
    translation_gap,
)
from .theorems import PrivacyLoss, split_budget_theorem_5_7, theorem_5_6, theorem_5_7


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
    ``max_divergence_gap`` at ``eta`` (default δ/10) (:func:`approx_max_divergence_gap`).

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
    e = d / 10.0 if eta is None else check_delta(eta, "eta", allow_zero=True)
    cd = (
        d
        if closeness_delta is None
        else check_delta(closeness_delta, "closeness_delta", allow_zero=True)
    )
    lm = eps / 4.0 if lam is None else check_positive(lam, "lam")
    seed = as_rng(rng)

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

    labels = list(dict.fromkeys(lab for pr in ps for lab in pr))
    # The Section 5.3 mechanisms need Gaussians with *equal* covariances within each pair, so the
    # approximations Theorems 5.6/5.7 compare with are N(μ̂_θ, Σ̄), Σ̄ the average covariance over the θ in Ψ
    # (per-θ fits N(μ̂_θ, Σ̂_θ) with different Σ̂_θ satisfy no Section 5.3 theorem).
    pooled = sum(model.covariance(lab) for lab in labels) / len(labels)
    theta_rows: dict[Hashable, dict[str, float]] = {}
    for lab in labels:
        x = model.samples(lab)
        mu = model.mean(lab)
        theta_rows[lab] = {
            "n_samples": int(x.shape[0]),
            "gaussian_w_infinity_gap": gaussian_w_infinity_gap(
                x, mu, pooled, max_samples=max_samples, rng=seed
            ),
            "gaussian_closeness_gap": gaussian_w_infinity_gap(
                x, mu, pooled, delta=cd, max_samples=max_samples, rng=seed
            ),
            "max_divergence_gap": approx_max_divergence_gap(x, mu, pooled, e, bins),
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
        "theorem_5_6": {"lam": max_div, "eta": e, "epsilon": t56.epsilon, "delta": t56.delta},
        "theorem_5_7": {"translation": thm57(max_tg), "gaussian": thm57(max_gw)},
        "note": "all gaps are estimates from finite samples (Chen & Ohrimenko Section 5.4)",
    }
