"""Typed results of the accounting engine: a certified δ(ε) bracket and an ε bound.

A privacy profile of an ordered pair of output laws (P, Q) is

    δ_{P‖Q}(ε) = sup_S P(S) − e^ε Q(S) = E_P[(1 − e^{ε − L})_+],   L = ln dP/dQ

(hockey-stick divergence; Balle & Wang 2018 Thm 5, Koskela et al. 2020 Sec. 2).
Every computation of :mod:`distpriv.accounting` returns a bracket
``delta_lower <= δ <= delta_upper`` that is *certified*: the lower and upper
ends come from pessimistic / optimistic roundings or closed forms, never from
an estimate. Claims use ``delta_upper``; ``error_bound`` is the bracket width.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from typing import Any

#: Names of the accounting methods (recorded in guarantees).
CLOSED_FORM = "closed form (equal covariances: analytic Gaussian, Balle & Wang 2018 Thm 8)"
CLOSED_FORM_1D = "closed form (1-D Gaussian pair: the loss is quadratic, S = {L > ε} is <= 2 intervals)"
PLD = "discretised privacy-loss distribution with pessimistic/optimistic rounding (certified bracket)"
FOURIER = ("Fourier inversion of the generalised chi-square loss law (trapezoidal rule with certified aliasing, "
           "truncation and floating-point bounds)")
CELLS = "Gaussian ⊛ Laplace density on a certified cell grid (log-concavity + curvature bounds)"
COUPLING = ("coupling bound: δ <= E[δ of a Laplace shift by D] for a Gaussian coupling D = F_a − F_b "
            "(joint convexity of the hockey-stick divergence)")
TRANSLATION = "translation: the output laws are shifts of one another (exact Laplace loss)"
DISJOINT = "mutually singular output laws (different supports): δ = 1"
IDENTICAL = "identical output laws: δ = 0"


@dataclass(frozen=True)
class Profile:
    """A certified bracket on δ(ε) for the worst ordered pair of output laws.

    Attributes
    ----------
    epsilon:
        The ε at which δ is evaluated.
    delta_upper, delta_lower:
        ``delta_lower <= δ(ε) <= delta_upper`` (both in [0, 1]).
    method:
        How the bracket was obtained (one of the constants of this module).
    pair:
        The ordered pair (θ_i, θ_j) attaining ``delta_upper`` (δ of P_θi against P_θj), if known.
    details:
        Method-specific numbers (grid width, number of cells, coordinates, ...), for reports only:
        code reads the typed fields below.
    decided_above_target:
        Set by the decision mode of :func:`~distpriv.accounting.release.proven_delta` when it stopped
        early: the target some ordered pair is proven to exceed (``delta_lower`` > it). The upper end
        is then the trivially valid 1, not a computed value.
    pure_epsilon:
        The pure ε (sup |L|) behind a zero-δ profile of a translation or a top-up step, when known.
    """

    epsilon: float
    delta_upper: float
    delta_lower: float
    method: str
    pair: tuple[Hashable, Hashable] | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)
    decided_above_target: float | None = field(default=None, compare=False)
    pure_epsilon: float | None = field(default=None, compare=False)

    @property
    def delta(self) -> float:
        """The proven δ: the upper end of the bracket."""
        return self.delta_upper

    @property
    def decided_only(self) -> bool:
        """True iff the profile only decides δ(ε) > target (early stop; ``delta_upper`` is the trivial 1)."""
        return self.decided_above_target is not None

    @property
    def reported_delta(self) -> float:
        """δ to report for this profile: the upper end, or for a decided-only profile the lower end proving it too large."""
        return self.delta_lower if self.decided_only else self.delta_upper

    @property
    def error_bound(self) -> float:
        """Width of the bracket: the true δ is within this of ``delta_upper``."""
        return max(0.0, self.delta_upper - self.delta_lower)

    def describe(self) -> str:
        """One line for a guarantee's notes."""
        where = f" (worst ordered pair {self.pair[0]!r} vs {self.pair[1]!r})" if self.pair else ""
        if self.error_bound == 0.0:
            return f"δ({self.epsilon:g}) = {self.delta_upper:.6g} by {self.method}{where}"
        return (f"δ({self.epsilon:g}) ∈ [{self.delta_lower:.6g}, {self.delta_upper:.6g}] by {self.method}{where}; "
                f"error bound {self.error_bound:.3g}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly view (no private data: only the bracket and the method)."""
        return {"epsilon": self.epsilon, "delta_upper": self.delta_upper, "delta_lower": self.delta_lower,
                "error_bound": self.error_bound, "method": self.method}


@dataclass(frozen=True)
class EpsilonBound:
    """A certified bracket on the least ε with δ(ε) <= ``delta`` (``delta = 0``: the pure ε = sup |L|).

    ``epsilon_upper`` is proven (δ(epsilon_upper) <= delta); ``epsilon_lower`` is
    a value at which δ is proven to exceed ``delta`` (or the largest |L| seen), so
    the true least ε lies in [epsilon_lower, epsilon_upper].
    """

    epsilon_upper: float
    epsilon_lower: float
    delta: float
    method: str
    pair: tuple[Hashable, Hashable] | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def epsilon(self) -> float:
        """The proven ε: the upper end of the bracket."""
        return self.epsilon_upper

    @property
    def error_bound(self) -> float:
        return max(0.0, self.epsilon_upper - self.epsilon_lower)

    def describe(self) -> str:
        kind = "pure ε" if self.delta == 0 else f"least ε at δ = {self.delta:g}"
        return (f"{kind} ∈ [{self.epsilon_lower:.6g}, {self.epsilon_upper:.6g}] by {self.method}")


def worst(profiles: list[Profile]) -> Profile:
    """The profile with the largest upper end; its lower end is the largest lower end (a valid lower bound)."""
    if not profiles:
        raise ValueError("worst: no profiles")
    top = max(profiles, key=lambda p: p.delta_upper)
    lo = max(p.delta_lower for p in profiles)
    return replace(top, delta_lower=min(lo, top.delta_upper))


