"""Privacy guarantees returned by every mechanism, and their composition.

A :class:`Guarantee` records what is claimed, for a set of secret pairs Ψ,
together with the calibration rule and every assumption the claim relies on.
It is one of two kinds:

* an **(ε, δ) claim** (``divergence is None``): for every (θ_i, θ_j) ∈ Ψ,
  both orders, and every output set S,
  ``Pr(M ∈ S | θ_i) <= e^ε Pr(M ∈ S | θ_j) + δ`` — (ε, δ)-distribution privacy
  (Chen & Ohrimenko, Definition 3.2), its attribute-privacy (Zhang et al.,
  Definitions 4–5), local (Kawamoto & Murakami, tupling paper Definition 8) and
  differential-privacy forms. It is also the max-divergence claim
  ``D^δ_∞ <= ε`` (divergence paper, Definition 5 and Proposition 1).
* a **divergence claim** (``divergence`` names an f-divergence of
  :data:`distpriv.divergences.F_DIVERGENCES`): ``D(M|θ_i ‖ M|θ_j) <= ε`` for
  every pair of Ψ, both orders — (ε, D)-distribution privacy (divergence paper,
  Definition 11; tupling paper Definition 16). The bound is stored in
  ``epsilon`` (the papers call it ε) and ``delta`` is 0: no δ is part of it.

``framework`` and ``calibration`` are enumerated (:class:`Framework`,
:class:`Calibration`); both are ``str`` subclasses, so code that passes or
compares the plain strings (``"exact"``, ``"distribution-privacy"``) keeps
working. A guarantee is only as good as its assumptions: they are part of the claim.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from .divergences import F_DIVERGENCES
from .errors import AssumptionError, InvalidParameterError, InvalidTypeError

Pair = tuple[Hashable, Hashable]

#: Names accepted by :attr:`Guarantee.divergence` (those of :mod:`distpriv.divergences`).
DIVERGENCES: tuple[str, ...] = tuple(F_DIVERGENCES)

_DIVERGENCE_LABELS = {"kl": "KL", "reverse-kl": "reverse KL", "tv": "TV", "chi2": "χ²", "hellinger": "Hellinger²"}


class _StrEnum(str, Enum):
    """A ``str`` enumeration whose ``str()``/``format()`` is the plain value (as ``enum.StrEnum``, Python >= 3.11)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def coerce(cls, value: Any, name: str) -> Any:
        """The member whose value is ``value`` (a member or its string), else :class:`InvalidParameterError`."""
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            raise InvalidParameterError(
                f"unknown value {value!r}; expected one of {[m.value for m in cls]}", argument=name
            ) from None


class Framework(_StrEnum):
    """The privacy notion a guarantee is stated in."""

    #: Chen & Ohrimenko, Definition 3.2: secrets are pairs of data distributions θ.
    DISTRIBUTION = "distribution-privacy"
    #: Zhang, Ohrimenko & Cummings: dataset / distributional attribute privacy (Pufferfish pairs).
    ATTRIBUTE = "attribute-privacy"
    #: Kawamoto & Murakami: local distribution privacy of a finite mechanism (lifting A#).
    LOCAL = "local-distribution-privacy"
    #: Differential privacy for datasets differing in one record.
    DIFFERENTIAL = "differential-privacy"
    #: Group differential privacy (datasets differing in at most k records).
    GROUP_DIFFERENTIAL = "group-differential-privacy"


class Calibration(_StrEnum):
    """How the mechanism's noise (or the claimed value) was obtained."""

    #: Gaussian noise from the exact privacy profile (Balle & Wang 2018), or exact finite accounting.
    EXACT = "exact"
    #: The papers' Gaussian rule c = sqrt(2 ln(1.25/δ)) (proved for ε < 1 only).
    CLASSIC = "classic"
    #: Laplace noise (one rule: scale = sensitivity / ε).
    LAPLACE = "laplace"
    #: A closed-form bound from a theorem (e.g. coupling Theorem 3, tupling Theorem 3/7), not tight.
    THEOREM = "theorem"
    #: A composition of guarantees with different calibrations (the parts are listed in the notes).
    MIXED = "mixed"


class AssumptionCode(_StrEnum):
    """What kind of fact an assumption states (the typed code beside its sentence, :class:`Assumption`)."""

    #: The supplied f_θ model (or the samples' law) equals the true query distributions.
    MODEL_IS_TRUTH = "model-is-truth"
    #: f_θ is a translation of f_θ' for every pair (Chen & Ohrimenko Sec. 5.1).
    TRANSLATION = "translation"
    #: f_θ is Gaussian (Chen & Ohrimenko Sec. 5.3).
    GAUSSIAN = "gaussian"
    #: Σ_θ = Σ_θ' for every pair.
    EQUAL_COVARIANCE = "equal-covariance"
    #: f_θ is the empirical law of the supplied samples.
    SAMPLES_LAW = "samples-law"
    #: How a profile was computed (exact or a proved bound) on the stated law.
    PROFILE_METHOD = "profile-method"
    #: The published noise is drawn exactly from the ideal law on a grid (float-safe sampler).
    SAMPLER = "sampler"
    #: The inputs of a local mechanism follow the stated distributions λ (Kawamoto & Murakami).
    INPUT_LAWS = "input-laws"
    #: Tupling dummies are drawn i.i.d. from ν.
    DUMMIES = "dummies"
    #: The estimated λ̂_s are within the stated D∞ accuracy of the true λ_s (coupling Theorem 3).
    ACCURACY = "accuracy"
    #: A statistical test did not reject the assumption (consistent at this sample size, not a proof).
    NOT_REJECTED = "not-rejected"
    #: Anything else (a sentence without a code).
    OTHER = "other"


class Assumption(str):
    """An assumption's sentence (a ``str``: published and compared as before) with its typed ``code``.

    ``Assumption("f_θ = N(μ_θ, Σ_θ) ...", AssumptionCode.GAUSSIAN)``; a plain string in
    :attr:`Guarantee.assumptions` has code :attr:`AssumptionCode.OTHER` (:meth:`Guarantee.assumption_codes`).
    """

    code: AssumptionCode

    def __new__(cls, text: str, code: AssumptionCode | str = AssumptionCode.OTHER) -> Assumption:
        obj = super().__new__(cls, text)
        obj.code = AssumptionCode.coerce(code, "code")
        return obj

    @staticmethod
    def code_of(text: str) -> AssumptionCode:
        """The code of an assumption (:attr:`AssumptionCode.OTHER` for a plain sentence)."""
        return text.code if isinstance(text, Assumption) else AssumptionCode.OTHER


def _check_epsilon(value: Any) -> float:
    if isinstance(value, bool):
        raise InvalidTypeError("epsilon: expected a real number, got bool")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"epsilon: expected a real number, got {value!r}") from None
    # +inf is a true (vacuous) claim: exact accounting may find no finite ε at the given δ
    if math.isnan(x) or x < 0:
        raise InvalidParameterError(f"epsilon: must be >= 0 (finite, or inf for a vacuous claim), got {x}")
    return x


def _check_delta(value: Any) -> float:
    if isinstance(value, bool):
        raise InvalidTypeError("delta: expected a real number, got bool")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"delta: expected a real number, got {value!r}") from None
    if not 0.0 <= x <= 1.0:  # also rejects NaN
        raise InvalidParameterError(f"delta: must be in [0, 1], got {x}")
    return x


def _check_pairs(pairs: Any) -> tuple[Pair, ...]:
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
        raise InvalidTypeError(f"pairs: expected a sequence of (θ_i, θ_j) pairs, got {type(pairs).__name__}")
    out: list[Pair] = []
    for p in pairs:
        if isinstance(p, (str, bytes)) or not isinstance(p, Iterable):
            raise InvalidTypeError(f"pairs: expected (θ_i, θ_j) pairs, got {p!r}")
        t = tuple(p)
        if len(t) != 2:
            raise InvalidParameterError(f"pairs: every pair needs exactly two labels, got {p!r}")
        out.append((t[0], t[1]))
    return tuple(out)


def _strings(values: Any, name: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidTypeError(f"expected a sequence of strings, got {type(values).__name__}", argument=name)
    return tuple(v if isinstance(v, Assumption) else str(v) for v in values)


@dataclass(frozen=True)
class Guarantee:
    """A privacy claim — (ε, δ) or a divergence bound — and the assumptions it rests on.

    Attributes
    ----------
    epsilon:
        For an (ε, δ) claim, ε >= 0. For a divergence claim, the bound ε on
        ``D(M|θ_i ‖ M|θ_j)`` (both orders). ``inf`` is allowed and says nothing
        (a vacuous but true claim); NaN and negative values are rejected.
    delta:
        δ ∈ [0, 1] of an (ε, δ) claim; must be 0 for a divergence claim.
    mechanism:
        Name of the mechanism (e.g. ``"expm-gauss"``).
    framework:
        A :class:`Framework` (or its string value).
    calibration:
        A :class:`Calibration` (or its string value).
    pairs:
        The secret pairs Ψ the claim covers (unordered).
    assumptions:
        Human-readable statements the proof uses (translation, Gaussianity,
        equal covariances, ...). A claim is void where one fails.
    theorem:
        The result that proves the claim, e.g. ``"Chen & Ohrimenko Thm 5.2"``.
    notes:
        Extra facts (fallbacks taken, warnings raised).
    divergence:
        ``None`` for an (ε, δ) claim; for a divergence claim the name of the
        f-divergence (one of :data:`DIVERGENCES`: ``"kl"``, ``"reverse-kl"``,
        ``"tv"``, ``"chi2"``, ``"hellinger"`` — the squared Hellinger distance
        ½Σ(√p − √q)² of :func:`distpriv.divergences.hellinger`).
    """

    epsilon: float
    delta: float
    mechanism: str
    framework: Framework | str = Framework.DISTRIBUTION
    calibration: Calibration | str = Calibration.EXACT
    pairs: tuple[Pair, ...] = ()
    assumptions: tuple[str, ...] = ()
    theorem: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    divergence: str | None = None

    def __post_init__(self) -> None:
        div = self.divergence
        if div is not None:
            if not isinstance(div, str):
                raise InvalidTypeError(f"divergence: expected None or a divergence name, got {type(div).__name__}")
            if div in ("max", "approx-max"):
                raise InvalidParameterError(
                    f"divergence: {div!r} is an (ε, δ) claim; use divergence=None for max-divergence claims"
                )
            if div not in DIVERGENCES:
                raise InvalidParameterError(
                    f"divergence: unknown value {div!r}; expected None or one of {list(DIVERGENCES)}"
                )
        eps = _check_epsilon(self.epsilon)
        delta = _check_delta(self.delta)
        if div is not None and delta != 0.0:
            raise InvalidParameterError(
                f"delta: a divergence claim ({div}) has no δ; must be 0, got {delta}"
            )
        if not isinstance(self.mechanism, str):
            raise InvalidTypeError(f"mechanism: expected a string, got {type(self.mechanism).__name__}")
        set_ = object.__setattr__
        set_(self, "epsilon", eps)
        set_(self, "delta", delta)
        set_(self, "framework", Framework.coerce(self.framework, "framework"))
        set_(self, "calibration", Calibration.coerce(self.calibration, "calibration"))
        set_(self, "pairs", _check_pairs(self.pairs))
        set_(self, "assumptions", _strings(self.assumptions, "assumptions"))
        set_(self, "notes", _strings(self.notes, "notes"))
        set_(self, "theorem", str(self.theorem))

    @property
    def is_divergence(self) -> bool:
        """True for a divergence claim, False for an (ε, δ) claim."""
        return self.divergence is not None

    def with_notes(self, *notes: str) -> Guarantee:
        """Return a copy with extra notes appended."""
        return replace(self, notes=self.notes + tuple(notes))

    @property
    def assumption_codes(self) -> tuple[AssumptionCode, ...]:
        """The typed code of each assumption (:class:`AssumptionCode`; ``OTHER`` for a plain sentence)."""
        return tuple(Assumption.code_of(a) for a in self.assumptions)

    def with_assumptions(self, *assumptions: str) -> Guarantee:
        """Return a copy with extra assumptions appended."""
        return replace(self, assumptions=self.assumptions + tuple(assumptions))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view (``framework``/``calibration`` as their string values)."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "divergence": self.divergence,
            "mechanism": self.mechanism,
            "framework": str(self.framework),
            "calibration": str(self.calibration),
            "pairs": [[_jsonable(a), _jsonable(b)] for a, b in self.pairs],
            "assumptions": list(self.assumptions),
            "theorem": self.theorem,
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        tail = f"{str(self.framework)} [{self.mechanism}, {str(self.calibration)}]"
        if self.divergence is not None:
            return f"{_DIVERGENCE_LABELS[self.divergence]} ≤ {self.epsilon:.4g} {tail}"
        d = f"{self.delta:.3g}" if self.delta else "0"
        return f"({self.epsilon:.4g}, {d})-{tail}"


def _jsonable(x: Any) -> Any:
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


# --------------------------------------------------------------------------- composition
_COMPOSITION: dict[Framework, tuple[str, str]] = {
    Framework.DISTRIBUTION: (
        "Chen & Ohrimenko Prop. A.4/A.5",
        "sequential composition (Chen & Ohrimenko Prop. A.4/A.5): releases use independent noise and "
        "the released query values are conditionally independent given θ",
    ),
    Framework.ATTRIBUTE: (
        "product composition (the argument of Chen & Ohrimenko Prop. A.4/A.5) for Zhang et al. attribute privacy",
        "sequential composition: releases use independent noise and the released values are conditionally "
        "independent given each secret hypothesis (s, θ) (the argument of Chen & Ohrimenko Prop. A.4/A.5)",
    ),
    Framework.LOCAL: (
        "Kawamoto & Murakami (tupling) Table 6, composition • with independent inputs",
        "sequential composition • (Kawamoto & Murakami, tupling paper Table 6 and Appendix D.2): each "
        "mechanism receives its own input, drawn independently, and uses independent randomness; the composed "
        "claim is for Ψ ⋄ Ψ (pairs of product distributions)",
    ),
    Framework.DIFFERENTIAL: (
        "Dwork & Roth Thm 3.16",
        "basic sequential composition (Dwork & Roth Thm 3.16): each release uses independent randomness",
    ),
    Framework.GROUP_DIFFERENTIAL: (
        "Dwork & Roth Thm 3.16 (group privacy)",
        "basic sequential composition (Dwork & Roth Thm 3.16) for the same group size: each release uses "
        "independent randomness",
    ),
}

# How a divergence bound of a product of independent outputs follows from the parts' bounds
# (all exact identities for products, monotone in each part's bound).
_DIVERGENCE_RULES: dict[str, str] = {
    "kl": "KL of independent outputs adds up: D(⊗P_i ‖ ⊗Q_i) = Σ D(P_i ‖ Q_i) (divergence paper Table II)",
    "reverse-kl": "reverse KL of independent outputs adds up (KL with the arguments swapped)",
    "tv": "TV is subadditive over independent outputs: TV(⊗P_i, ⊗Q_i) <= min(1, Σ TV(P_i, Q_i))",
    "hellinger": "squared Hellinger of independent outputs: 1 − H²(⊗P_i, ⊗Q_i) = Π (1 − H²(P_i, Q_i))",
    "chi2": "χ² of independent outputs: 1 + χ²(⊗P_i ‖ ⊗Q_i) = Π (1 + χ²(P_i ‖ Q_i))",
}


def _compose_values(div: str | None, eps: list[float]) -> float:
    if div in (None, "kl", "reverse-kl"):
        return math.fsum(eps)
    if div == "tv":
        return min(1.0, math.fsum(eps))
    if div == "hellinger":
        return 1.0 - math.prod(1.0 - min(e, 1.0) for e in eps)
    # chi2
    return math.prod(1.0 + e for e in eps) - 1.0


def _psi_key(g: Guarantee) -> frozenset[frozenset[Hashable]]:
    return frozenset(frozenset(p) for p in g.pairs)


def _kind(g: Guarantee) -> str:
    return "(ε, δ)" if g.divergence is None else _DIVERGENCE_LABELS[g.divergence]


#: Frameworks whose basic composition holds for releases of the same data (with independent noise only).
SAME_DATA_FRAMEWORKS = (Framework.DIFFERENTIAL, Framework.GROUP_DIFFERENTIAL)

#: Recorded in the assumptions of a composition declared independent by the caller.
INDEPENDENCE_DECLARED = (
    "declared by the caller (independent=True), not checked: the released outputs are independent given each "
    "secret hypothesis — the releases used independently sampled datasets (Prop. A.5) or each secret fixes the "
    "released query values (Prop. A.4) — and independent noise"
)

#: What to do instead when releases of the same data cannot be declared independent.
JOINT_ALTERNATIVE = (
    "release the statistics together instead: calibrate one mechanism for the joint vector (dp.calibrate on the "
    "model of all statistics; its exact privacy profile covers their correlation under each θ)"
)


def compose(guarantees: Sequence[Guarantee], *, independent: bool = False) -> Guarantee:
    """Sequential composition of guarantees of independent releases, or a one-line refusal.

    ``independent`` — the caller's declaration that the released outputs are
    independent given each secret (independently sampled datasets, or each θ
    fixing the released values, and independent noise). It cannot be checked
    from the guarantees, and it fails for two releases of the *same* data:
    two statistics with identical marginals under both θ but correlation
    +0.9 under one and −0.9 under the other are each truthfully (0.5, 1e-5)
    private, yet together they reveal θ (true joint δ ≈ 0.6 at ε = 1, not the
    composed 2e-5). So for distribution, attribute and local distribution
    privacy a composition is **refused** (:class:`AssumptionError`) unless
    ``independent=True``, and the declaration is then listed in the
    assumptions (:data:`INDEPENDENCE_DECLARED`). The exact alternative for
    releases of one dataset (:data:`JOINT_ALTERNATIVE`): calibrate a single
    mechanism for the joint vector of statistics, whose exact privacy profile
    (:mod:`distpriv.accounting`) accounts for their correlation. Differential
    privacy (and group DP) composes on the same data (Dwork & Roth Thm 3.16:
    only the noise must be independent), so ``independent`` is not required
    there.

    All guarantees must be of one :class:`Framework`, one kind (all (ε, δ), or
    all bounds on the same divergence) and for the same Ψ (as unordered pairs);
    otherwise :class:`InvalidParameterError` (framework, kind) or
    :class:`AssumptionError` (Ψ) says why.

    The composition theorems need the released outputs to be independent under
    each secret hypothesis (so the output law is a product ``⊗P_i``):

    * distribution privacy: releases with independent noise whose query values
      are conditionally independent given θ (Chen & Ohrimenko Prop. A.4), or
      mechanisms applied to independently sampled datasets (Prop. A.5, then the
      claim is for Ψ ⋄ Ψ); attribute privacy: the same argument given (s, θ);
    * local distribution privacy: composition • with independent inputs
      (Kawamoto & Murakami, tupling paper Table 6);
    * differential privacy: basic composition (Dwork & Roth Thm 3.16).

    The caller must check which applies and say so with ``independent=True``;
    the returned guarantee records it as an assumption. Values combine as follows:

    * (ε, δ): ``ε = Σ ε_i``, ``δ = min(1, Σ δ_i)``;
    * KL, reverse KL: ``Σ ε_i`` (KL tensorises; divergence paper Table II);
    * TV: ``min(1, Σ ε_i)`` (subadditivity over products);
    * squared Hellinger: ``1 − Π (1 − ε_i)`` (the Bhattacharyya coefficient
      multiplies over products);
    * χ²: ``Π (1 + ε_i) − 1`` (``1 + χ²`` multiplies over products).

    The divergence rules are exact identities for products and increase in
    each ε_i, so bounds on the parts give a bound on the whole. They need the
    outputs to be independent (non-adaptive composition); the divergence paper
    proves KL also for adaptive composition, the others only non-adaptively.

    Parameters
    ----------
    guarantees : sequence of Guarantee
        The guarantees of the releases, all of one framework and kind and for the same Ψ.

    Returns
    -------
    Guarantee
        The composed guarantee, recording the independence it assumes.

    Examples
    --------
    >>> import distpriv as dp
    >>> g = dp.Guarantee(epsilon=0.5, delta=1e-4, mechanism="expm-gauss", pairs=((0.4, 0.5),))
    >>> total = dp.compose([g, g], independent=True)
    >>> (total.epsilon, total.delta)
    (1.0, 0.0002)
    """
    if isinstance(guarantees, Guarantee) or not isinstance(guarantees, Iterable):
        raise InvalidTypeError("guarantees: expected a sequence of distpriv.Guarantee")
    gs = list(guarantees)
    if not gs:
        raise InvalidParameterError("guarantees: need at least one guarantee to compose")
    for g in gs:
        if not isinstance(g, Guarantee):
            raise InvalidTypeError(f"guarantees: expected distpriv.Guarantee items, got {type(g).__name__}")
    first = gs[0]
    for g in gs[1:]:
        if g.framework != first.framework:
            raise InvalidParameterError(
                f"guarantees: cannot compose different frameworks, {first.framework} ({first.mechanism}) "
                f"and {g.framework} ({g.mechanism}); each composition theorem covers one notion"
            )
        if g.divergence != first.divergence:
            raise InvalidParameterError(
                f"guarantees: cannot compose a {_kind(first)} claim ({first.mechanism}) with a {_kind(g)} claim "
                f"({g.mechanism}); compose claims of one kind"
            )
        if _psi_key(g) != _psi_key(first):
            raise AssumptionError(
                f"guarantees: composition needs the same secret pairs Ψ; {first.mechanism} covers "
                f"{list(first.pairs)} but {g.mechanism} covers {list(g.pairs)}"
            )
    if not isinstance(independent, bool):
        raise InvalidTypeError(f"independent: expected True or False, got {type(independent).__name__}")
    framework = Framework(first.framework)
    if len(gs) > 1 and not independent and framework not in SAME_DATA_FRAMEWORKS:
        raise AssumptionError(
            f"independent: composing {framework} claims needs outputs independent given the secret, which "
            "releases of the same data are not (their statistics are correlated through the data); pass "
            f"independent=True to declare independently sampled datasets and noise, or {JOINT_ALTERNATIVE}"
        )
    div = first.divergence
    eps = _compose_values(div, [g.epsilon for g in gs])
    delta = min(1.0, math.fsum(g.delta for g in gs)) if div is None else 0.0
    theorem, rule = _COMPOSITION[framework]
    assumptions: list[str] = []
    for g in gs:
        for a in g.assumptions:
            if a not in assumptions:
                assumptions.append(a)
    assumptions.append(rule)
    if independent and framework not in SAME_DATA_FRAMEWORKS:
        assumptions.append(INDEPENDENCE_DECLARED)
    if div is not None:
        assumptions.append(_DIVERGENCE_RULES[div] + "; needs non-adaptive releases with independent outputs")
    cals = {g.calibration for g in gs}
    notes: tuple[str, ...] = ()
    if len(cals) == 1:
        calibration = first.calibration
    else:
        calibration = Calibration.MIXED
        notes = ("parts calibrated as: " + ", ".join(f"{g.mechanism}: {g.calibration}" for g in gs),)
    return Guarantee(
        epsilon=eps,
        delta=delta,
        mechanism="+".join(g.mechanism for g in gs),
        framework=first.framework,
        calibration=calibration,
        pairs=first.pairs,
        assumptions=tuple(assumptions),
        theorem=theorem,
        notes=notes,
        divergence=div,
    )
