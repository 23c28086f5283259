"""Privacy guarantees returned by every mechanism.

A :class:`Guarantee` records what is claimed — (ε, δ)-distribution privacy
(Chen & Ohrimenko, Definition 3.2) with respect to a set of secret pairs Ψ —
together with the calibration rule and every assumption the claim relies on.
A guarantee is only as good as its assumptions: they are part of the claim.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

Pair = tuple[Hashable, Hashable]


@dataclass(frozen=True)
class Guarantee:
    """An (ε, δ) privacy claim and the assumptions it rests on.

    Attributes
    ----------
    epsilon, delta:
        The claimed privacy parameters: for every (θ_i, θ_j) ∈ Ψ and every
        output set S, Pr(M ∈ S | θ_i) <= e^ε Pr(M ∈ S | θ_j) + δ, both orders.
    mechanism:
        Name of the mechanism (e.g. ``"expm-gauss"``).
    framework:
        ``"distribution-privacy"`` (Chen & Ohrimenko), ``"attribute-privacy"``
        (Zhang et al.), ``"local-distribution-privacy"`` (Kawamoto & Murakami)
        or ``"differential-privacy"``.
    calibration:
        ``"exact"``, ``"classic"`` or ``"laplace"`` (Laplace noise has a single rule).
    pairs:
        The secret pairs Ψ the claim covers (unordered).
    assumptions:
        Human-readable statements the proof uses (translation, Gaussianity,
        equal covariances, ...). A claim is void where one fails.
    theorem:
        The result that proves the claim, e.g. ``"Chen & Ohrimenko Thm 5.2"``.
    notes:
        Extra facts (fallbacks taken, warnings raised).
    """

    epsilon: float
    delta: float
    mechanism: str
    framework: str = "distribution-privacy"
    calibration: str = "exact"
    pairs: tuple[Pair, ...] = ()
    assumptions: tuple[str, ...] = ()
    theorem: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def with_notes(self, *notes: str) -> Guarantee:
        """Return a copy with extra notes appended."""
        return replace(self, notes=self.notes + tuple(notes))

    def with_assumptions(self, *assumptions: str) -> Guarantee:
        """Return a copy with extra assumptions appended."""
        return replace(self, assumptions=self.assumptions + tuple(assumptions))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "mechanism": self.mechanism,
            "framework": self.framework,
            "calibration": self.calibration,
            "pairs": [[_jsonable(a), _jsonable(b)] for a, b in self.pairs],
            "assumptions": list(self.assumptions),
            "theorem": self.theorem,
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        d = f"{self.delta:.3g}" if self.delta else "0"
        return f"({self.epsilon:.4g}, {d})-{self.framework} [{self.mechanism}, {self.calibration}]"


def _jsonable(x: Any) -> Any:
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def compose(guarantees: Sequence[Guarantee]) -> Guarantee:
    """Basic sequential composition: ε and δ add up.

    Valid for distribution privacy only when the releases use independent
    noise *and* the queried data are independent given θ (Chen & Ohrimenko,
    Proposition A.4), or when the mechanisms are applied to independent
    datasets (Proposition A.5). The caller must check which applies; the
    returned guarantee records it as an assumption.
    """
    if not guarantees:
        from .errors import InvalidParameterError

        raise InvalidParameterError("guarantees: need at least one guarantee to compose")
    eps = sum(g.epsilon for g in guarantees)
    delta = min(1.0, sum(g.delta for g in guarantees))
    assumptions: list[str] = []
    for g in guarantees:
        for a in g.assumptions:
            if a not in assumptions:
                assumptions.append(a)
    assumptions.append(
        "sequential composition (Chen & Ohrimenko Prop. A.4/A.5): releases use independent noise and "
        "the released query values are conditionally independent given θ"
    )
    pairs: list[Pair] = []
    for g in guarantees:
        for p in g.pairs:
            if p not in pairs:
                pairs.append(p)
    return Guarantee(
        epsilon=eps,
        delta=delta,
        mechanism="+".join(g.mechanism for g in guarantees),
        framework=guarantees[0].framework,
        calibration=",".join(sorted({g.calibration for g in guarantees})),
        pairs=tuple(pairs),
        assumptions=tuple(assumptions),
        theorem="Chen & Ohrimenko Prop. A.4/A.5",
    )
