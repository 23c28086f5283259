"""Pufferfish instantiations of attribute privacy and their distribution-privacy form.

Zhang, Ohrimenko & Cummings (Section 3) instantiate Pufferfish privacy
(Definition 1: for all θ ∈ Θ and (s_a, s_b) ∈ Q with P(s_a|θ), P(s_b|θ) > 0,
P(M(X) ∈ T | s_a, θ) <= e^ε P(M(X) ∈ T | s_b, θ) + δ) in two ways:

* dataset attribute privacy (Definition 4): secrets s^i_a = 1[g_i(X_i) ∈ U^i_a]
  about a function g_i of the column X_i of a sensitive attribute i ∈ C;
* distributional attribute privacy (Definition 5): secrets s^i_a = 1[φ_i ∈ Φ^i_a]
  about the parameter φ_i governing attribute i.

In both, Q holds pairs of secrets on the *same* attribute and Θ is a class of
data distributions. :class:`PufferfishFramework` records (S, Q, Θ).

Chen & Ohrimenko Theorem 3.1 (appendix A.1) makes Pufferfish and distribution
privacy interchangeable:

* Pufferfish ⇒ DistP: Θ' = {θ_s = θ conditioned on s : P(s|θ) ≠ 0},
  Ψ = {(θ_{s_a}, θ_{s_b}) : (s_a, s_b) ∈ Q, θ ∈ Θ} — :func:`to_distribution_privacy`,
  whose output ``(GaussianModel, pairs)`` is accepted by :func:`distpriv.calibrate`.
* DistP ⇒ Pufferfish: secrets s_θ = "Data ~ θ", pairs from Ψ, and data
  distributions the uniform mixtures φ_{θi,θj} — :func:`from_distribution_privacy`.

A secret whose value set U_a holds several points is expanded into its points:
θ conditioned on g ∈ U_a is a mixture of the θ conditioned on g = a, a ∈ U_a,
and the hockey-stick divergence is jointly convex, so privacy for every point
pair (a, b) ∈ U_a × U_b implies privacy for (s_a, s_b) under every prior on the
points. The expansion is therefore sufficient (and exact for singleton secrets).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_int, check_positive, check_real
from ..errors import InvalidParameterError, InvalidTypeError, UnknownLabelError
from ..models import GaussianModel, normalize_pairs

SecretKind = Literal["dataset", "distributional"]
SecretLabel = tuple[Hashable, str, float]  # (θ, attribute, value) label of f_θ in the converted model
KINDS: tuple[str, ...] = ("dataset", "distributional")


# --------------------------------------------------------------------------- value sets
@dataclass(frozen=True)
class Interval:
    """A real interval with open or closed ends, e.g. the paper's a ∈ (.25, .5).

    ``low > high`` (or an empty open interval) raises :class:`InvalidParameterError`.
    Suprema over open ends are taken on the closure and flagged as not attained.
    """

    low: float
    high: float
    closed_low: bool = False
    closed_high: bool = False

    def __post_init__(self) -> None:
        lo = float(self.low) if self.low == -math.inf else check_real(self.low, "low")
        hi = float(self.high) if self.high == math.inf else check_real(self.high, "high")
        if lo > hi:
            raise InvalidParameterError(f"range: low must be <= high, got low={lo:g} > high={hi:g}")
        if lo == hi and not (self.closed_low and self.closed_high):
            raise InvalidParameterError(f"range: ({lo:g}, {hi:g}) is empty; use Interval.point({lo:g}) for a fixed value")
        object.__setattr__(self, "low", lo)
        object.__setattr__(self, "high", hi)

    @classmethod
    def point(cls, value: float) -> Interval:
        """The degenerate closed interval [v, v] (a fixed parameter)."""
        v = check_real(value, "value")
        return cls(v, v, True, True)

    @classmethod
    def closed(cls, low: float, high: float) -> Interval:
        """[low, high]."""
        return cls(low, high, True, True)

    @classmethod
    def open(cls, low: float, high: float) -> Interval:
        """(low, high)."""
        return cls(low, high, False, False)

    @property
    def is_point(self) -> bool:
        return self.low == self.high

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def contains(self, x: float) -> bool:
        """x ∈ interval (respecting open/closed ends)."""
        lo_ok = x > self.low or (self.closed_low and x == self.low)
        hi_ok = x < self.high or (self.closed_high and x == self.high)
        return bool(lo_ok and hi_ok)

    def attained(self, x: float, tol: float = 1e-12) -> bool:
        """False when x sits on an open end (a supremum approached but not attained)."""
        scale = max(1.0, abs(self.low), abs(self.high)) if self.bounded else 1.0
        if not self.closed_low and abs(x - self.low) <= tol * scale:
            return False
        return self.closed_high or abs(x - self.high) > tol * scale

    def __str__(self) -> str:
        if self.is_point:
            return f"{{{self.low:g}}}"
        return f"{'[' if self.closed_low else '('}{self.low:g}, {self.high:g}{']' if self.closed_high else ')'}"


@dataclass(frozen=True)
class Lattice:
    """The codomain {offset + k·step} ∩ [low, high]; e.g. fractions k/n of n records (step = 1/n)."""

    step: float
    low: float = 0.0
    high: float = 1.0
    offset: float = 0.0

    def __post_init__(self) -> None:
        check_positive(self.step, "step")
        if check_real(self.low, "low") > check_real(self.high, "high"):
            raise InvalidParameterError(f"range: low must be <= high, got low={self.low:g} > high={self.high:g}")

    @classmethod
    def fractions(cls, n: int) -> Lattice:
        """{0, 1/n, ..., 1}: the codomain of a proportion over n records."""
        k = check_int(n, "n", minimum=1)
        return cls(1.0 / k, 0.0, 1.0)

    def points_in(self, iv: Interval) -> NDArray[np.float64]:
        """All lattice points inside ``iv`` (and [low, high]); exact integer arithmetic on k."""
        lo, hi = max(iv.low, self.low), min(iv.high, self.high)
        k0 = math.floor((lo - self.offset) / self.step) - 1
        k1 = math.ceil((hi - self.offset) / self.step) + 1
        ks = np.arange(k0, k1 + 1)
        pts = self.offset + ks * self.step
        tol = 1e-9 * self.step
        keep = [
            p for p in pts
            if self.low - tol <= p <= self.high + tol and _contains_tol(iv, float(p), tol)
        ]
        return np.array(keep, dtype=float)


def _contains_tol(iv: Interval, x: float, tol: float) -> bool:
    lo_ok = x > iv.low + tol or (iv.closed_low and x >= iv.low - tol)
    hi_ok = x < iv.high - tol or (iv.closed_high and x <= iv.high + tol)
    return bool(lo_ok and hi_ok)


Codomain = Interval | Lattice | None
Values = Interval | tuple[Any, ...]


# --------------------------------------------------------------------------- secrets
@dataclass(frozen=True)
class Secret:
    """A secret s^i_a: g_i(X_i) ∈ U_a (dataset, Def. 4) or φ_i ∈ Φ_a (distributional, Def. 5).

    ``values`` is an :class:`Interval` or a finite tuple of values (numbers, or any
    hashable parameter values for distributional secrets).
    """

    attribute: str
    values: Values
    kind: SecretKind = "dataset"
    label: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.attribute, str) or not self.attribute:
            raise InvalidTypeError(f"attribute: expected a non-empty attribute name, got {self.attribute!r}")
        if self.kind not in KINDS:
            raise UnknownLabelError(f"kind: unknown secret kind {self.kind!r}; expected one of {list(KINDS)}")
        vals = self.values
        if not isinstance(vals, Interval):
            if isinstance(vals, (str, bytes)) or not isinstance(vals, Iterable):
                vals = (vals,)
            vals = tuple(vals)
            if not vals:
                raise InvalidParameterError(f"values: secret on {self.attribute!r} has an empty value set")
            object.__setattr__(self, "values", vals)
        if not self.label:
            lhs = f"g({self.attribute})" if self.kind == "dataset" else f"φ_{self.attribute}"
            rhs = str(vals) if isinstance(vals, Interval) else "{" + ", ".join(map(_fmt, vals)) + "}"
            object.__setattr__(self, "label", f"{lhs} ∈ {rhs}")

    def points(self, codomain: Codomain = None) -> NDArray[np.float64] | None:
        """The finite value set of the secret, or ``None`` when it is a continuous interval.

        An interval secret on a :class:`Lattice` codomain becomes its lattice points
        (e.g. a ∈ (.25, .5) with fractions of 50 records -> 0.26, ..., 0.48).
        """
        if isinstance(self.values, Interval):
            if isinstance(codomain, Lattice):
                pts = codomain.points_in(self.values)
                if pts.size == 0:
                    raise InvalidParameterError(f"values: secret {self.label!r} contains no point of the codomain")
                return pts
            if self.values.is_point:
                return np.array([self.values.low])
            return None
        try:
            return np.array([float(v) for v in self.values], dtype=float)
        except (TypeError, ValueError):
            return None

    def __str__(self) -> str:
        return self.label


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool) else str(v)


@dataclass(frozen=True)
class SecretPair:
    """A discriminative pair (s^i_a, s^i_b) ∈ Q: both secrets concern the same attribute i."""

    first: Secret
    second: Secret

    def __post_init__(self) -> None:
        if not isinstance(self.first, Secret) or not isinstance(self.second, Secret):
            raise InvalidTypeError("pairs: each secret pair must hold two Secret objects")
        if self.first.attribute != self.second.attribute:
            raise InvalidParameterError(
                f"pairs: a secret pair must concern one attribute (Q ⊆ S_i × S_i), got "
                f"{self.first.attribute!r} and {self.second.attribute!r}"
            )
        if self.first.kind != self.second.kind:
            raise InvalidParameterError("pairs: both secrets of a pair must be of the same kind")
        if self.first.values == self.second.values:
            raise InvalidParameterError(f"pairs: the two secrets of a pair are identical ({self.first.label})")

    @property
    def attribute(self) -> str:
        return self.first.attribute

    def separation(self, codomain: Codomain = None) -> tuple[float, bool]:
        """sup |a − b| over a ∈ U_a, b ∈ U_b, and whether the supremum is attained.

        Computed from the value sets (lattice points when the codomain is a lattice).
        """
        pa, pb = self.first.points(codomain), self.second.points(codomain)
        ends: list[tuple[float, bool]] = []
        for p, s in ((pa, self.first), (pb, self.second)):
            if p is not None:
                ends.append((float(p.min()), True))
                ends.append((float(p.max()), True))
            else:
                iv = s.values
                if not isinstance(iv, Interval):
                    raise InvalidParameterError(f"pairs: secret {s.label!r} has non-numeric values; |a − b| is undefined")
                ends.append((iv.low, iv.closed_low))
                ends.append((iv.high, iv.closed_high))
        (a_lo, a_lo_c), (a_hi, a_hi_c), (b_lo, b_lo_c), (b_hi, b_hi_c) = ends
        c1 = (abs(b_hi - a_lo), a_lo_c and b_hi_c)
        c2 = (abs(a_hi - b_lo), a_hi_c and b_lo_c)
        best = max(c1, c2, key=lambda t: (t[0], t[1]))
        return best

    def __str__(self) -> str:
        return f"({self.first.label}, {self.second.label})"


# --------------------------------------------------------------------------- framework
@dataclass(frozen=True)
class PufferfishFramework:
    """(S, Q, Θ) of dataset (Def. 4) or distributional (Def. 5) attribute privacy.

    Parameters
    ----------
    attributes:
        Names of all m attributes (columns) of a record.
    pairs:
        Q: secret pairs; each names an attribute that must be in ``attributes``.
        The sensitive set C is the set of attributes named by the pairs.
    thetas:
        Labels of the data distributions θ ∈ Θ (empty when Θ is described by a
        continuous model, e.g. a parameter box).
    codomains:
        Optional codomain U^i of g_i per sensitive attribute (a :class:`Lattice` for
        proportions over n records); the secrets' value sets are intersected with it.
    """

    attributes: tuple[str, ...]
    pairs: tuple[SecretPair, ...]
    thetas: tuple[Hashable, ...] = ()
    codomains: Mapping[str, Interval | Lattice] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.attributes, str) or not isinstance(self.attributes, Iterable):
            raise InvalidTypeError("attributes: expected a sequence of attribute names")
        attrs = tuple(self.attributes)
        if not attrs or len(set(attrs)) != len(attrs):
            raise InvalidParameterError("attributes: need at least one attribute and no duplicates")
        object.__setattr__(self, "attributes", attrs)
        prs = tuple(self.pairs) if isinstance(self.pairs, Iterable) else ()
        if not prs:
            raise InvalidParameterError("pairs: Q must contain at least one secret pair")
        for p in prs:
            if not isinstance(p, SecretPair):
                raise InvalidTypeError(f"pairs: expected SecretPair objects, got {type(p).__name__}")
            if p.attribute not in attrs:
                raise UnknownLabelError(
                    f"pairs: secret on attribute {p.attribute!r}, which does not exist; attributes are {list(attrs)}"
                )
        kinds = {p.first.kind for p in prs}
        if len(kinds) != 1:
            raise InvalidParameterError("pairs: mix of dataset and distributional secrets; use one framework per kind")
        object.__setattr__(self, "pairs", prs)
        object.__setattr__(self, "thetas", tuple(self.thetas))
        cods = dict(self.codomains)
        for a in cods:
            if a not in attrs:
                raise UnknownLabelError(f"codomains: attribute {a!r} does not exist; attributes are {list(attrs)}")
        object.__setattr__(self, "codomains", cods)

    @property
    def kind(self) -> str:
        return self.pairs[0].first.kind

    @property
    def sensitive(self) -> tuple[str, ...]:
        """C: the sensitive attributes (in order of first appearance in Q)."""
        out: list[str] = []
        for p in self.pairs:
            if p.attribute not in out:
                out.append(p.attribute)
        return tuple(out)

    @property
    def secrets(self) -> tuple[Secret, ...]:
        """S: every secret that appears in Q."""
        out: list[Secret] = []
        for p in self.pairs:
            for s in (p.first, p.second):
                if s not in out:
                    out.append(s)
        return tuple(out)

    def pairs_for(self, attribute: str) -> tuple[SecretPair, ...]:
        """Q restricted to attribute i."""
        if attribute not in self.attributes:
            raise UnknownLabelError(f"attribute: {attribute!r} does not exist; attributes are {list(self.attributes)}")
        return tuple(p for p in self.pairs if p.attribute == attribute)

    def codomain(self, attribute: str) -> Interval | Lattice | None:
        return self.codomains.get(attribute)

    def point_pairs(self) -> list[tuple[str, float, float]]:
        """Q expanded to point secrets: (attribute, a, b) for a ∈ U_a, b ∈ U_b (module docstring)."""
        out: list[tuple[str, float, float]] = []
        for p in self.pairs:
            cod = self.codomain(p.attribute)
            pa, pb = p.first.points(cod), p.second.points(cod)
            if pa is None or pb is None:
                raise InvalidParameterError(
                    f"pairs: secret pair {p} has a continuous value range; give a Lattice codomain or finite values"
                )
            for a in pa:
                for b in pb:
                    if a != b:
                        out.append((p.attribute, float(a), float(b)))
        return out

    def describe(self) -> dict[str, Any]:
        """JSON-friendly summary of (S, Q, Θ)."""
        return {
            "kind": self.kind,
            "attributes": list(self.attributes),
            "sensitive": list(self.sensitive),
            "secrets": [s.label for s in self.secrets],
            "pairs": [[p.first.label, p.second.label] for p in self.pairs],
            "thetas": [str(t) for t in self.thetas],
        }


def dataset_attribute_privacy(
    attributes: Sequence[str],
    pairs: Iterable[tuple[tuple[str, Values] | Secret, tuple[str, Values] | Secret]],
    thetas: Iterable[Hashable] = (),
    codomains: Mapping[str, Interval | Lattice] | None = None,
) -> PufferfishFramework:
    """Definition 4: secrets g_i(X_i) ∈ U_a given as ``(attribute, values)`` tuples or :class:`Secret`."""
    return _framework(attributes, pairs, thetas, codomains, "dataset")


def distributional_attribute_privacy(
    attributes: Sequence[str],
    pairs: Iterable[tuple[tuple[str, Values] | Secret, tuple[str, Values] | Secret]],
    thetas: Iterable[Hashable] = (),
) -> PufferfishFramework:
    """Definition 5: secrets φ_i ∈ Φ_a given as ``(attribute, values)`` tuples or :class:`Secret`."""
    return _framework(attributes, pairs, thetas, None, "distributional")


def _framework(attributes: Sequence[str], pairs: Iterable[Any], thetas: Iterable[Hashable],
               codomains: Mapping[str, Interval | Lattice] | None, kind: SecretKind) -> PufferfishFramework:
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
        raise InvalidTypeError("pairs: expected a list of (secret, secret) pairs")
    out: list[SecretPair] = []
    for item in pairs:
        try:
            a, b = item
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(f"pairs: each entry must be a pair of secrets, got {item!r}") from exc
        out.append(SecretPair(_secret(a, kind), _secret(b, kind)))
    return PufferfishFramework(tuple(attributes), tuple(out), tuple(thetas), dict(codomains or {}))


def _secret(x: Any, kind: SecretKind) -> Secret:
    if isinstance(x, Secret):
        return x
    try:
        attr, values = x
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"pairs: a secret is a Secret or an (attribute, values) tuple, got {x!r}") from exc
    return Secret(attr, values, kind)


# --------------------------------------------------------------------------- Theorem 3.1
Moments = Callable[[Hashable, str, float], tuple[ArrayLike, ArrayLike] | None]


def to_distribution_privacy(
    framework: PufferfishFramework,
    moments: Moments | Mapping[tuple[Hashable, str, float], tuple[ArrayLike, ArrayLike]],
) -> tuple[GaussianModel, tuple[tuple[SecretLabel, SecretLabel], ...]]:
    """Pufferfish ⇒ distribution privacy (Chen & Ohrimenko Thm 3.1, second direction).

    Θ' = {θ_s : θ ∈ Θ, P(s | θ) ≠ 0}, Ψ = {(θ_{s_a}, θ_{s_b}) : (s_a, s_b) ∈ Q, θ ∈ Θ}.
    Each conditioned distribution is described by the mean and covariance of F(X)
    given the (point) secret, ``moments(θ, attribute, a) -> (mean, cov)`` (return
    ``None`` when P(s | θ) = 0). Labels of the returned model are ``(θ, attribute, a)``.
    The result plugs into :func:`distpriv.calibrate` (e.g. ``"eigm"``, ``"expm-gauss"``).
    """
    if not framework.thetas:
        raise InvalidParameterError("thetas: Θ must be a finite set of labels to convert (Chen & Ohrimenko Thm 3.1)")
    get: Moments
    if isinstance(moments, Mapping):
        table = dict(moments)

        def get(theta: Hashable, attr: str, a: float) -> tuple[ArrayLike, ArrayLike] | None:
            return table.get((theta, attr, a))
    elif callable(moments):
        get = moments
    else:
        raise InvalidTypeError("moments: expected a callable (θ, attribute, a) -> (mean, cov) or a dict")
    means: dict[Hashable, ArrayLike] = {}
    covs: dict[Hashable, ArrayLike] = {}
    pairs: list[tuple[Hashable, Hashable]] = []
    for theta in framework.thetas:
        for attr, a, b in framework.point_pairs():
            ends: list[SecretLabel | None] = []
            for v in (a, b):
                lab = (theta, attr, v)
                if lab not in means:
                    mc = get(theta, attr, v)
                    if mc is None:
                        ends.append(None)
                        continue
                    mu, cov = mc
                    mu_arr = np.atleast_1d(np.asarray(mu, dtype=float))
                    means[lab] = mu_arr
                    covs[lab] = np.atleast_2d(np.asarray(cov, dtype=float))
                ends.append(lab)
            if ends[0] is not None and ends[1] is not None:  # Pufferfish only constrains P(s|θ) ≠ 0
                pairs.append((ends[0], ends[1]))
    if not pairs:
        raise InvalidParameterError("moments: no secret pair has positive probability under any θ")
    # normalize_pairs keeps the labels it is given: every label here is a (θ, attribute, value) triple
    return GaussianModel(means, covs), cast(tuple[tuple[SecretLabel, SecretLabel], ...],
                                            normalize_pairs(pairs, means.keys()))


@dataclass(frozen=True)
class Mixture:
    """φ_{θi,θj}: draw θi or θj with probability 1/2, then Data ~ θ (Thm 3.1, first direction)."""

    first: Hashable
    second: Hashable

    def prob_secret(self, theta: Hashable) -> float:
        """P(s_θ | φ_{θi,θj}): 1/2 for θ ∈ {θi, θj}, else 0."""
        return 0.5 if theta in (self.first, self.second) else 0.0


@dataclass(frozen=True)
class DistributionPufferfish:
    """The Pufferfish form of a distribution-privacy instantiation (Θ, Ψ)."""

    secrets: tuple[Hashable, ...]  # s_θ = "Data ~ θ", identified by θ
    pairs: tuple[tuple[Hashable, Hashable], ...]
    distributions: tuple[Mixture, ...]

    def to_distribution_privacy(self) -> tuple[tuple[Hashable, ...], tuple[tuple[Hashable, Hashable], ...]]:
        """Back to (Θ, Ψ): θ_s for every mixture and secret with P(s | φ) ≠ 0, paired as in Q."""
        labels: list[Hashable] = []
        pairs: list[tuple[Hashable, Hashable]] = []
        for phi in self.distributions:
            for si, sj in self.pairs:
                if phi.prob_secret(si) > 0 and phi.prob_secret(sj) > 0:
                    pairs.append((si, sj))
                    labels.extend(x for x in (si, sj) if x not in labels)
        return tuple(labels), normalize_pairs(pairs, labels)


def from_distribution_privacy(labels: Iterable[Hashable], pairs: Iterable[Sequence[Hashable]]) -> DistributionPufferfish:
    """Distribution privacy ⇒ Pufferfish (Chen & Ohrimenko Thm 3.1, first direction).

    S = {s_θ : θ ∈ Θ}, Q = {(s_θi, s_θj) : (θi, θj) ∈ Ψ}, D = {φ_{θi,θj}}.
    """
    labs = tuple(labels)
    ps = normalize_pairs(pairs, labs)
    return DistributionPufferfish(secrets=labs, pairs=ps, distributions=tuple(Mixture(a, b) for a, b in ps))


