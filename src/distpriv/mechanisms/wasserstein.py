"""Wasserstein and Approximate Wasserstein mechanisms (Chen & Ohrimenko Section 4).

* Wasserstein Mechanism (Thm 4.1): Z_k ~ Lap(Δ_W/ε) on every component, with
  Δ_W = max over Ψ of W∞(f_θi, f_θj) under the L1 ground norm (Definition 4.1).
  (ε, 0)-distribution privacy, no assumption on the shape of f_θ.
* Approximate Wasserstein Mechanism (Thm 4.2): Z_k ~ Lap(W/ε) when every pair
  is (W, δ)-close, giving (ε, δ). Two ways to obtain W:
  - ``method="bounded"`` (Prop 4.1): W = Δ_E,1 + 2c, where c bounds
    ||F − E F||_1 with probability >= 1 − δ/2 under every θ; c is proven for a
    Gaussian model and certified by an order statistic (confidence 1 − γ) from
    samples (or supplied);
  - ``method="closeness"``: W = max over Ψ of the least (W, δ)-closeness radius
    of the empirical samples (:func:`distpriv.distances.closeness_radius`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from .. import distances
from .._validation import check_choice, check_positive
from ..errors import AssumptionError, InvalidParameterError
from ..guarantees import Calibration, Guarantee
from ..models import EmpiricalModel, GaussianModel, QueryModel, pair_stats
from ..noise import NoiseLaw
from ._common import MODEL_IS_TRUTH, Inputs, as_gaussian, covariance_gap, labels_in
from .base import Mechanism


def _laplace(name: str, label: str, inp: Inputs, scale: float, guarantee: Guarantee, **details: Any) -> Mechanism:
    m = inp.model.dim
    return Mechanism(
        name=name,
        label=label,
        dim=m,
        noise=NoiseLaw.laplace(np.eye(m), np.full(m, scale)),
        guarantee=guarantee,
        details=dict(details, laplace_scale=scale),
    )


def pair_w_infinity(model: QueryModel, a: Hashable, b: Hashable) -> float:
    """W∞ (L1) between f_a and f_b: exact on empirical samples; ||μ_a − μ_b||_1 for equal-covariance Gaussians."""
    if isinstance(model, EmpiricalModel):
        return float(distances.w_infinity_samples(model.samples(a), model.samples(b), norm=1))
    g = as_gaussian(model)
    if covariance_gap(g, [(a, b)]) > 1e-12:
        raise AssumptionError(
            "model: W∞ between Gaussians with different covariances is infinite; use an EmpiricalModel "
            "or an Expected Value mechanism"
        )
    return float(np.abs(g.mean(a) - g.mean(b)).sum())


def wasserstein_mechanism(inp: Inputs, *, w_infinity: float | None = None) -> Mechanism:
    """Theorem 4.1: Lap(Δ_W/ε) per component, Δ_W = max_Ψ W∞(f_θi, f_θj).

    ``w_infinity`` lets a caller supply Δ_W computed elsewhere.
    """
    if w_infinity is None:
        per_pair = [pair_w_infinity(inp.model, a, b) for a, b in inp.pairs]
        dw = max(per_pair)
    else:
        dw = check_positive(w_infinity, "w_infinity", allow_zero=True)
        per_pair = []
    assumptions = [MODEL_IS_TRUTH]
    if isinstance(inp.model, GaussianModel):
        assumptions.append("f_θ Gaussian with equal covariances within each pair, so W∞ = ||μ_i − μ_j||_1")
    g = Guarantee(
        epsilon=inp.epsilon,
        delta=0.0,
        mechanism="wasserstein",
        calibration=Calibration.LAPLACE,
        pairs=inp.pairs,
        assumptions=tuple(assumptions),
        theorem="Chen & Ohrimenko Thm 4.1",
    )
    return _laplace("wasserstein", "Wasserstein", inp, dw / inp.epsilon, g, w_infinity=dw, w_infinity_per_pair=per_pair)


def approx_wasserstein_mechanism(
    inp: Inputs, *, method: str = "bounded", c: float | None = None, closeness: float | None = None,
    gamma: float = 0.05,
) -> Mechanism:
    """Theorem 4.2 with W from Prop 4.1 (``method="bounded"``) or from exact (W, δ)-closeness radii.

    bounded: W = Δ_E,1 + 2c where ||F − E F||_1 <= c with probability >= 1 − δ/2 under every θ of Ψ
    (Prop 4.1 needs nothing else: no translation, no equal covariances). c is

    * GaussianModel: proven from N(0, Σ_θ) (:func:`distpriv.accounting.radius.gaussian_l1_radius`:
      exact in 1-D, optimised union bound or Gaussian concentration in m-D);
    * EmpiricalModel: an order statistic of ||x − x̄_θ||_1 that is >= the true (1 − δ/2) quantile
      with confidence >= 1 − γ/|θ| per θ (so >= 1 − ``gamma`` jointly; binomial argument); too few
      samples raise an error naming the number needed;
    * or the caller's ``c``.
    """
    from ..accounting.radius import gaussian_l1_radius, sample_l1_radius

    if inp.delta <= 0:
        raise InvalidParameterError("delta: the Approximate Wasserstein mechanism needs delta in (0, 1)")
    meth = check_choice(method, "method", ("bounded", "closeness"))
    stats = pair_stats(inp.model, inp.pairs)
    details: dict[str, Any] = {"method": meth}
    assumptions = [MODEL_IS_TRUTH]
    notes: list[str] = []
    if meth == "bounded":
        p = inp.delta / 2.0
        if c is None:
            labs = labels_in(inp.pairs)
            cs = []
            if isinstance(inp.model, EmpiricalModel):
                gam = check_positive(gamma, "gamma")
                if not gam < 1:
                    raise InvalidParameterError(f"gamma: must be in (0, 1), got {gam}")
                per = gam / len(labs)
                for lab in labs:
                    x = inp.model.samples(lab)
                    r = sample_l1_radius(np.abs(x - x.mean(axis=0)).sum(axis=1), p, per)
                    cs.append(r.c)
                    details.setdefault("order_statistic", {})[str(lab)] = {"index": r.index, "n": r.n}
                c_val = max(cs)
                assumptions.append(
                    f"the samples of each θ are i.i.d. draws of f_θ; ||F − μ̂_θ||_1 <= c = {c_val:.6g} with probability "
                    f">= 1 − δ/2 (μ̂_θ the sample mean, treated as fixed) — certified by an order statistic with "
                    f"confidence >= 1 − γ = {1 - gam:g} over the sampling (Chen & Ohrimenko Prop 4.1)")
                notes.append(f"the (ε, δ) claim holds with probability >= {1 - gam:g} over the samples that fixed c")
                details["gamma"] = gam
            else:
                g = as_gaussian(inp.model)
                how = ""
                for lab in labs:
                    val, how = gaussian_l1_radius(g.covariance(lab), p)
                    cs.append(val)
                c_val = max(cs)
                assumptions.append(
                    f"f_θ = N(μ_θ, Σ_θ): P(||F − μ_θ||_1 > c) <= δ/2 with c = {c_val:.6g} proven under every θ "
                    f"({how}; Chen & Ohrimenko Prop 4.1, which needs no translation or equal covariances)")
        else:
            c_val = check_positive(c, "c", allow_zero=True)
            assumptions.append(f"||F − E F||_1 <= c = {c_val:.6g} with probability >= 1 − δ/2 (caller-supplied; Prop 4.1)")
        w = stats.l1 + 2.0 * c_val
        details.update(c=c_val, delta_e1=stats.l1)
        theorem = "Chen & Ohrimenko Thm 4.2 + Prop 4.1"
    else:
        if closeness is not None:
            w = check_positive(closeness, "closeness", allow_zero=True)
        else:
            if not isinstance(inp.model, EmpiricalModel):
                raise InvalidParameterError("method: 'closeness' needs an EmpiricalModel (or pass closeness=W)")
            w = max(
                float(distances.closeness_radius_samples(inp.model.samples(a), inp.model.samples(b), inp.delta, norm=1))
                for a, b in inp.pairs
            )
        assumptions.append("f_θi and f_θj are (W, δ)-close for every pair (W from the empirical samples)")
        theorem = "Chen & Ohrimenko Thm 4.2"
    details["W"] = w
    guarantee = Guarantee(
        epsilon=inp.epsilon,
        delta=inp.delta,
        mechanism="approx-wasserstein",
        calibration=Calibration.LAPLACE,
        pairs=inp.pairs,
        assumptions=tuple(assumptions),
        theorem=theorem,
        notes=tuple(notes),
    )
    return _laplace("approx-wasserstein", "Approx. Wasserstein", inp, w / inp.epsilon, guarantee, **details)
