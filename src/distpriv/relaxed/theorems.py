"""Theorems 5.6 and 5.7 of Chen & Ohrimenko (Section 5.4, appendix C.4) and the Theorem 5.7 budget split.

* **Theorem 5.6** — if max(D^η_∞(f̂_θ ‖ f_θ), D^η_∞(f_θ ‖ f̂_θ)) <= λ for every θ
  (Definition 5.1, δ-approximate max-divergence), an (ε, δ) mechanism run on
  the approximations is (ε′, δ′)-distribution private with
  ε′ = ε + 2λ and δ′ = (1 + e^{ε+λ}) η + e^λ δ.
* **Theorem 5.7** — if W = sup_θ W∞(f_θ, f̂_θ) (L1 ground norm, Definition 4.1),
  adding extra noise Z′_k ~ Lap(W/λ) to every component restores
  (ε′, δ′) = (ε + 2λ, e^λ δ); :func:`split_budget_theorem_5_7` chooses λ for a target (ε_t, δ_t).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

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
from ..errors import InvalidParameterError, InvalidTypeError
from ..guarantees import Guarantee
from ..noise import NoiseLaw

FloatArray = NDArray[np.float64]


# --------------------------------------------------------------------------- Theorem 5.6
class PrivacyLoss(NamedTuple):
    """An (ε, δ) pair; δ >= 1 means the guarantee is vacuous."""

    epsilon: float
    delta: float


def _check_nonneg(value: Any, name: str) -> float:
    return check_positive(value, name, allow_zero=True)


def theorem_5_6(epsilon: float, delta: float, eta: float, lam: float) -> PrivacyLoss:
    """(ε′, δ′) of an (ε, δ) mechanism calibrated on approximations f̂_θ (Chen & Ohrimenko Theorem 5.6).

    Assumes max(D^η_∞(f̂_θ ‖ f_θ), D^η_∞(f_θ ‖ f̂_θ)) <= λ for every θ and that the
    mechanism's output given F(Data) does not depend on Data. Then

        ε′ = ε + 2λ,    δ′ = (1 + e^{ε+λ}) η + e^λ δ.

    Parameters: ε >= 0, δ ∈ [0, 1), η ∈ [0, 1), λ >= 0. The returned δ′ is not
    clipped; δ′ >= 1 means the bound says nothing.
    """
    eps = _check_nonneg(epsilon, "epsilon")
    d = check_delta(delta, "delta", allow_zero=True)
    e = check_delta(eta, "eta", allow_zero=True)
    lm = _check_nonneg(lam, "lam")
    # (1 + e^{ε+λ})η in log space: e^{ε+λ} overflows for ε >= 710 while η is then tiny
    paid = math.exp(float(np.logaddexp(0.0, eps + lm)) + math.log(e)) if e > 0 else 0.0
    return PrivacyLoss(eps + 2.0 * lm, paid + math.exp(lm) * d)


def apply_theorem_5_6(guarantee: Guarantee, eta: float, lam: float) -> Guarantee:
    """The guarantee of a mechanism run on approximations with divergence gap λ at η (Theorem 5.6)."""
    if not isinstance(guarantee, Guarantee):
        raise InvalidTypeError(
            f"guarantee: expected a distpriv.Guarantee, got {type(guarantee).__name__}"
        )
    if guarantee.divergence is not None:
        raise InvalidParameterError(
            f"guarantee: Theorem 5.6 applies to (ε, δ) claims, got a {guarantee.divergence} divergence claim"
        )
    loss = theorem_5_6(guarantee.epsilon, guarantee.delta, eta, lam)
    return replace(
        guarantee,
        epsilon=loss.epsilon,
        delta=min(loss.delta, 1.0),  # δ′ >= 1 says nothing; a Guarantee's δ lies in [0, 1]
        theorem=f"{guarantee.theorem} + Chen & Ohrimenko Thm 5.6".strip(" +"),
        assumptions=guarantee.assumptions
        + (
            f"max(D^η_∞(f̂_θ‖f_θ), D^η_∞(f_θ‖f̂_θ)) <= λ = {float(lam):.6g} with η = {float(eta):.3g} for every θ",
        ),
    )


# --------------------------------------------------------------------------- Theorem 5.7
@dataclass(frozen=True)
class Theorem57:
    """Extra noise Z′_k ~ Lap(W/λ) and the resulting (ε′, δ′) (Chen & Ohrimenko Theorem 5.7)."""

    extra_laplace_scale: float  # b = W/λ, per component
    epsilon: float  # ε′ = ε + 2λ
    delta: float  # δ′ = e^λ δ
    dim: int  # number of components m receiving Z′

    @property
    def extra_l1_error(self) -> float:
        """E||Z′||_1 = m b."""
        return self.dim * self.extra_laplace_scale

    @property
    def extra_std(self) -> float:
        """Standard deviation of each Z′_k: √2 b."""
        return math.sqrt(2.0) * self.extra_laplace_scale

    @property
    def noise(self) -> NoiseLaw:
        """Z′ as a :class:`~distpriv.noise.NoiseLaw`: Lap(b) on each of the m components (no noise for b = 0)."""
        law = NoiseLaw.none(self.dim)
        return law.plus_laplace(self.extra_laplace_scale) if self.extra_laplace_scale > 0 else law

    def sample(self, rng: RngLike = None) -> FloatArray:
        """Draw Z′ (length m) from :attr:`noise`."""
        if self.extra_laplace_scale == 0.0:
            return np.zeros(self.dim)
        return self.noise.sample(as_rng(rng), 1)[0]


def theorem_5_7(epsilon: float, delta: float, W: float, lam: float, dim: int = 1) -> Theorem57:  # noqa: N803
    """Extra Laplace noise restoring privacy when f_θ are only W-close to the approximations (Theorem 5.7).

    If M(Data) = F(Data) + Z is (ε, δ)-distribution private when f̂_θ are the
    true distributions and W = sup_θ W∞(f_θ, f̂_θ) (L1 ground norm), then
    M̃(Data) + Z′ with Z′_k ~ Lap(W/λ) i.i.d. on the ``dim`` components is
    (ε′, δ′)-distribution private with ε′ = ε + 2λ, δ′ = e^λ δ.

    W = 0 needs no extra noise (scale 0); otherwise λ > 0.
    """
    eps = _check_nonneg(epsilon, "epsilon")
    d = check_delta(delta, "delta", allow_zero=True)
    w = _check_nonneg(W, "W")
    lm = _check_nonneg(lam, "lam")
    m = check_int(dim, "dim", minimum=1)
    if w > 0 and lm == 0:
        raise InvalidParameterError("lam: must be > 0 when W > 0 (the extra noise is Lap(W/λ))")
    scale = 0.0 if w == 0 else w / lm
    return Theorem57(
        extra_laplace_scale=scale, epsilon=eps + 2.0 * lm, delta=math.exp(lm) * d, dim=m
    )


@dataclass(frozen=True)
class BudgetSplit:
    """How a target (ε_t, δ_t) is split between the base mechanism and Z′ ~ Lap(W/λ)."""

    lam: float
    base_epsilon: float  # ε = ε_t − 2λ
    base_delta: float  # δ = e^{−λ} δ_t
    extra_laplace_scale: float  # W/λ
    rule: str
    total_std: float | None  # per-component std of base + extra noise, when the base noise is known

    @property
    def target(self) -> PrivacyLoss:
        """(ε_t, δ_t) recovered from the split: (ε + 2λ, e^λ δ)."""
        return PrivacyLoss(self.base_epsilon + 2.0 * self.lam, math.exp(self.lam) * self.base_delta)


def split_budget_theorem_5_7(
    epsilon_target: float,
    delta_target: float,
    W: float,  # noqa: N803
    *,
    sensitivity: float | None = None,
    base_std: Callable[[float, float], float] | None = None,
) -> BudgetSplit:
    """Choose λ so that base (ε, δ) + Lap(W/λ) meets a target (ε_t, δ_t) under Theorem 5.7.

    Any λ ∈ (0, ε_t/2) works: the base mechanism is calibrated at
    ε = ε_t − 2λ and δ = e^{−λ} δ_t, and Z′_k ~ Lap(W/λ) is added. The rule for λ:

    * ``sensitivity=Δ`` (a Laplace base mechanism with scale Δ/ε, e.g. ExpM (L)
      with Δ = Δ_E,1): minimise the per-component variance
      2(Δ/(ε_t − 2λ))² + 2(W/λ)². Setting the derivative to zero gives
      (λ/(ε_t − 2λ))³ = W²/(2Δ²), i.e. λ = s ε_t/(1 + 2s) with s = (W²/(2Δ²))^{1/3}
      (the objective is convex on (0, ε_t/2), so this is the minimum);
    * ``base_std=f`` with f(ε, δ) the per-component standard deviation of the
      base mechanism (e.g. a Gaussian mechanism): minimise f(ε, δ)² + 2(W/λ)²
      numerically (bounded Brent search over λ);
    * neither: the simple rule λ = ε_t/4 (half of ε_t goes to the base mechanism).

    W = 0 gives λ = 0 and no extra noise.
    """
    et = check_epsilon(epsilon_target, "epsilon_target")
    dt = check_delta(delta_target, "delta_target", allow_zero=True)
    w = _check_nonneg(W, "W")
    if sensitivity is not None and base_std is not None:
        raise InvalidParameterError("sensitivity, base_std: give at most one of them")
    if w == 0:
        total = None
        if sensitivity is not None:
            total = math.sqrt(2.0) * check_positive(sensitivity, "sensitivity") / et
        elif base_std is not None:
            total = float(base_std(et, dt))
        return BudgetSplit(0.0, et, dt, 0.0, "W = 0: no extra noise", total)
    if sensitivity is not None:
        delta_s = check_positive(sensitivity, "sensitivity")
        s = (w * w / (2.0 * delta_s * delta_s)) ** (1.0 / 3.0)
        lam = s * et / (1.0 + 2.0 * s)
        base_eps = et - 2.0 * lam
        total = math.sqrt(2.0 * (delta_s / base_eps) ** 2 + 2.0 * (w / lam) ** 2)
        rule = "minimum variance, Laplace base: λ = s ε_t/(1 + 2s), s = (W²/(2Δ²))^(1/3)"
    elif base_std is not None:
        if not callable(base_std):
            raise InvalidTypeError("base_std: expected a callable f(epsilon, delta) -> std")

        def objective(lm: float) -> float:
            b = float(base_std(et - 2.0 * lm, math.exp(-lm) * dt))
            return b * b + 2.0 * (w / lm) ** 2

        from scipy.optimize import minimize_scalar  # lazy: scipy.optimize costs ~0.4 s to import

        res = minimize_scalar(
            objective,
            bounds=(1e-9 * et, et / 2.0 * (1.0 - 1e-9)),
            method="bounded",
            options={"xatol": 1e-10 * et},
        )
        lam = float(res.x)
        base_eps = et - 2.0 * lam
        total = math.sqrt(objective(lam))
        rule = "minimum variance, numerical (bounded Brent) over the supplied base_std"
    else:
        lam = et / 4.0
        base_eps = et - 2.0 * lam
        total = None
        rule = "λ = ε_t/4 (half of ε_t to the base mechanism)"
    return BudgetSplit(lam, base_eps, math.exp(-lam) * dt, w / lam, rule, total)
