"""Privacy profiles: what a mechanism proves about Ψ, as a map from the budget asked for to the claim (issue 24).

A :class:`PrivacyProfile` is the one object every guarantee is derived from, as OpenDP derives ``d_out``
from a measurement's privacy map: ``profile.guarantee(delta)`` is the least ε proven at δ (an (ε, δ)
claim), ``profile.guarantee(divergence="kl")`` the proven bound on an f-divergence. Each mechanism family
builds its profile from its own exact accounting:

* central mechanisms (:meth:`distpriv.mechanisms.AdditiveNoiseMechanism.privacy_profile`): the calibrated
  claim (ε, δ₀), which also proves (ε, δ) for every δ >= δ₀; with a ``model``, the exact map
  δ ↦ least ε of the output laws F + Z (:func:`distpriv.accounting.release.proven_epsilon`);
* local mechanisms (:func:`distpriv.local.privacy_profile`): exact hockey-stick / f-divergence
  accounting of the lifted channel (Kawamoto & Murakami, tupling paper Definition 8; divergence paper
  Definition 11); :func:`distpriv.local.distp_guarantee` is ``privacy_profile(...).guarantee(delta)``;
* tupling (:meth:`distpriv.local.Tupling.privacy_profile`): the certified convolution accounting;
* coupling (:meth:`distpriv.local.CouplingMechanism.privacy_profile`): the worst case over the
  accuracy balls (or Theorem 3), one value per divergence.

A profile answers with a :class:`Claim` (ε, δ, notes, and the calibration/theorem when they depend on the
question); :meth:`PrivacyProfile.guarantee` wraps it, with the profile's Ψ and assumptions, into a
:class:`~distpriv.guarantees.Guarantee`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import InvalidParameterError
from .guarantees import Calibration, Framework, Guarantee, Pair


@dataclass(frozen=True)
class Claim:
    """One answer of a profile: the proven ε (or divergence bound) at the δ it holds for, with notes.

    ``calibration`` and ``theorem`` override the profile's when they depend on the question (e.g. an exact
    worst case where it is finite, a closed-form theorem otherwise).
    """

    epsilon: float
    delta: float = 0.0
    notes: tuple[str, ...] = ()
    calibration: Calibration | str | None = None
    theorem: str | None = None


@dataclass(frozen=True)
class PrivacyProfile:
    """The privacy map of a mechanism over Ψ (see the module docstring).

    ``at_delta(δ)`` is the least proven ε at δ (``inf``: nothing proven there); ``at_divergence(name)``,
    where available, the proven bound on that f-divergence. ``assumptions`` are part of every claim.
    """

    mechanism: str
    framework: Framework | str
    pairs: tuple[Pair, ...]
    at_delta: Callable[[float], Claim] | None = None
    at_divergence: Callable[[str], Claim] | None = None
    calibration: Calibration | str = Calibration.EXACT
    assumptions: tuple[str, ...] = ()
    theorem: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def epsilon(self, delta: float = 0.0) -> float:
        """Least proven ε at ``delta`` (``inf`` when none is proven)."""
        return self.claim(delta).epsilon

    def claim(self, delta: float = 0.0, *, divergence: str | None = None) -> Claim:
        """The :class:`Claim` at ``delta`` (an (ε, δ) claim) or for ``divergence`` (an f-divergence bound)."""
        if divergence is None:
            if self.at_delta is None:
                raise InvalidParameterError(f"divergence: {self.mechanism} proves divergence bounds only; name one")
            return self.at_delta(delta)
        if self.at_divergence is None:
            raise InvalidParameterError(f"divergence: {self.mechanism} proves no f-divergence bound")
        return self.at_divergence(divergence)

    def guarantee(self, delta: float = 0.0, *, divergence: str | None = None) -> Guarantee:
        """The :class:`~distpriv.guarantees.Guarantee` the profile proves at ``delta`` (or for ``divergence``)."""
        c = self.claim(delta, divergence=divergence)
        return Guarantee(
            epsilon=c.epsilon if not math.isnan(c.epsilon) else math.inf,
            delta=c.delta if divergence is None else 0.0,
            mechanism=self.mechanism,
            framework=self.framework,
            calibration=self.calibration if c.calibration is None else c.calibration,
            pairs=self.pairs,
            assumptions=self.assumptions,
            theorem=self.theorem if c.theorem is None else c.theorem,
            notes=(*self.notes, *c.notes),
            divergence=divergence,
        )
