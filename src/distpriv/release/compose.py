"""Several releases: compose guarantees where Chen & Ohrimenko Propositions A.4/A.5 apply, refuse otherwise.

Distribution privacy does not compose in general (Kifer & Machanavajjhala; Chen &
Ohrimenko App. A.2.2): two noisy releases of the *same* dataset can together reveal
the property even when each alone does not, because the dataset is random given θ
and the two releases are correlated through it. Two sufficient conditions:

* **Proposition A.4** — every θ fixes the dataset (here: the query value F(Data)
  is constant given θ, which is all an additive-noise mechanism sees). Releases of
  the same data then compose: (ε₁ + ε₂, δ₁ + δ₂) for Ψ.
* **Proposition A.5** (Kawamoto & Murakami) — the releases are computed on
  *independently sampled* datasets: (ε₁ + ε₂, δ₁ + δ₂) for Ψ ⋄ Ψ.

Both need the releases' noise to be independent, which fresh operating-system
entropy for every release provides. A seeded release (``--seed``, recorded in
the ledger) is not private at all and its noise is a function of its seed, so it
never composes: a chain with a seeded release, earlier or current, is refused
(also two releases with the same seed).

An earlier release is read from the private ledger of its ``--out`` folder
(:mod:`distpriv.release.ledger`): its whole chain of earlier releases counts, so
the totals of chains add up, and a release reached through two ledgers counts
once. Rows shared with any release of the chain are found by content (keyed
per-column hashes of normalised cells, compared on the columns both tables
hold, :mod:`distpriv.release.fingerprints`):

* shared rows and ``--independent``: refused (the datasets are not independent);
* ``--independent`` where the shared columns do not identify records (their
  chance collision rate on the public population is above the threshold, or
  unknown without a population) and no ``--id COL`` is given: refused;
* shared rows without ``--independent``: Prop. A.4 if this release's model and
  every release sharing rows have F(Data) constant given θ; refused otherwise;
* no shared rows: Prop. A.5 with ``--independent`` (the curator asserts how the
  datasets were sampled; disjoint rows do not prove it); refused without it.

The framework, the protected predicate and Ψ must be the same as the earlier
releases'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import AssumptionError, InvalidParameterError, arg
from ..guarantees import INDEPENDENCE_DECLARED, Guarantee, compose
from .ledger import ChainEntry, Ledger

A4 = "F(Data) is constant given θ, so each θ fixes what the mechanisms see (Chen & Ohrimenko Prop. A.4)"
A5 = ("the released datasets were sampled independently (asserted by the curator with --independent; no rows are "
      "shared; Chen & Ohrimenko Prop. A.5); the composed guarantee is for Ψ ⋄ Ψ (pairs of product distributions)")


@dataclass(frozen=True)
class Composition:
    """The composed guarantee, the propositions that justify it and the chain it covers."""

    propositions: tuple[str, ...]
    guarantee: Guarantee
    chain: tuple[ChainEntry, ...]  # earlier releases (distinct), not this one

    @property
    def proposition(self) -> str:
        return "+".join(self.propositions)

    @property
    def releases(self) -> int:
        """Number of releases composed, this one included."""
        return len(self.chain) + 1

    def to_dict(self) -> dict[str, Any]:
        """Public view: the propositions, the composed guarantee and the number of releases (no identifiers)."""
        return {"proposition": self.proposition, "guarantee": self.guarantee.to_dict(), "releases": self.releases}


def _pairs_key(pairs: Sequence[Sequence[float]]) -> frozenset[frozenset[float]]:
    return frozenset(frozenset(float(v) for v in p) for p in pairs)


def check_compatible(ledgers: Sequence[Ledger], *, framework: str, protect: str,
                     pairs: Sequence[Sequence[float]]) -> None:
    """Same framework, protected predicate and Ψ as every earlier release, else :class:`AssumptionError`."""
    key = _pairs_key(pairs)
    for led in ledgers:
        where = led.folder if led.folder is not None else "an earlier release"
        if led.framework != framework:
            raise AssumptionError(f"{where} is a {led.framework} release; this one is {framework}", argument="previous")
        if led.protect != protect or _pairs_key(led.pairs) != key:
            raise AssumptionError(
                f"{where} protects {led.protect!r} with pairs {[list(p) for p in led.pairs]}; composition "
                "(Props A.4/A.5) needs the same protected property and the same pairs Ψ", argument="previous"
            )


def merged_chain(ledgers: Sequence[Ledger]) -> tuple[tuple[ChainEntry, ...], dict[str, str]]:
    """Distinct releases of all chains (first appearance order) and, per release id, the folder it came from."""
    seen: dict[str, ChainEntry] = {}
    where: dict[str, str] = {}
    for led in ledgers:
        for e in led.chain:
            if e.id in seen:
                old = seen[e.id]
                if (old.epsilon, old.delta, old.mechanism, old.fingerprint_key) != (
                        e.epsilon, e.delta, e.mechanism, e.fingerprint_key):
                    raise InvalidParameterError(
                        f"{led.folder} and {where[e.id]} disagree about the same earlier release", argument="previous"
                    )
                continue
            seen[e.id] = e
            where[e.id] = str(led.folder)
    return tuple(seen.values()), where


def decide_propositions(
    ledgers: Sequence[Ledger], *, shared: Mapping[str, int], rows: int, independent: bool, deterministic: bool | None,
    seed: int | None = None, unidentified: Mapping[str, str] | None = None,
) -> tuple[str, ...] | None:
    """Which of Props. A.4/A.5 compose this release with the earlier ones (see the module docstring).

    ``shared[id]``: rows of this release's data also in release ``id``; ``deterministic``: F(Data) is constant
    given θ in this release's model, ``None`` when not known yet (then ``None`` is returned where the answer
    depends on it, after every refusal that does not); ``seed``: this release's ``--seed`` (``None``: operating-
    system entropy); ``unidentified[id]``: why rows cannot tell disjoint samples from reused ones for release
    ``id`` (then ``--independent`` needs ``--id``). Raises :class:`AssumptionError` with the reason.
    """
    chain, where = merged_chain(ledgers)
    overlapping = [e for e in chain if shared.get(e.id, 0) > 0]
    disjoint = [e for e in chain if shared.get(e.id, 0) == 0]
    props: set[str] = set()
    if overlapping:
        e = overlapping[0]
        k = shared[e.id]
        if independent:
            raise AssumptionError(
                f"{k} of the {rows} rows of the data also appear in an earlier release (ledger in "
                f"{where[e.id]}); Prop. A.5 needs independently sampled datasets, so the claim is refused", argument="independent"
            )
        same = (f"{where[e.id]} holds a release of the same data ({k} of the {rows} rows are also in it); "
                "distribution privacy does not compose for repeated releases of one dataset: Prop. A.4 needs each θ "
                "to fix the query value and Prop. A.5 needs independently sampled datasets. Release all statistics "
                "in one call instead")
        if not all(x.deterministic for x in overlapping) or deterministic is False:
            raise AssumptionError(same, argument="previous")
        props.add("A.4")
    if disjoint:
        if not independent:
            raise AssumptionError(
                f"the release(s) in {where[disjoint[0].id]} used other rows; Prop. A.5 composes them only "
                f"if the datasets were sampled independently: pass {arg('independent')} to assert it", argument="previous"
            )
        for e in disjoint:
            reason = (unidentified or {}).get(e.id)
            if reason:
                raise AssumptionError(
                    f"rows are compared with the release in {where[e.id]} on the columns both tables "
                    f"hold, but {reason}, so disjoint samples cannot be told from reused rows; name a column that "
                    f"identifies records with {arg('id')} COL", argument="independent"
                )
        props.add("A.5")
    seeds = [(e.seed, where[e.id]) for e in chain if e.seeded]
    if seed is not None or seeds:
        what = f"this release is seeded ({arg('seed')} {seed})" if seed is not None else (
            f"the release in {seeds[0][1]} was seeded ({arg('seed')} {seeds[0][0]})")
        if seed is not None and any(s == seed for s, _ in seeds):
            what = f"this release and an earlier one use the same seed {seed} (the same noise)"
        raise AssumptionError(
            f"{what}; a seeded release's noise is a function of its seed, not fresh entropy, so it never "
            f"composes as independent (Props. A.4/A.5 need independent noise); release without {arg('seed')}",
            argument="independent" if independent else "previous",
        )
    if overlapping and deterministic is None:
        return None
    return tuple(sorted(props))


def compose_releases(ledgers: Sequence[Ledger], current: Guarantee, propositions: Sequence[str]) -> Composition:
    """The composed guarantee: (Σ ε, Σ δ) over every distinct earlier release and ``current``."""
    chain, _ = merged_chain(ledgers)
    previous = [Guarantee(epsilon=e.epsilon, delta=e.delta, mechanism=e.mechanism, framework=current.framework,
                          pairs=current.pairs) for e in chain]
    # the propositions were decided above (shared rows by content, F fixed by θ, --independent): justified here
    g = compose([*previous, current], independent=True)
    g = replace(g, assumptions=tuple(a for a in g.assumptions if a != INDEPENDENCE_DECLARED))
    extra = [A4] if "A.4" in propositions else []
    if "A.5" in propositions:
        extra.append(A5)
    return Composition(tuple(propositions), g.with_assumptions(*extra), chain)
