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

A previous release is read from the JSON that ``distpriv release`` printed (or wrote
as ``release.json`` in ``--out``). Its data file's SHA-256 tells whether it used the
same data. Independence cannot be checked from the files; the user asserts it with
``--independent``. Anything else is refused with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AssumptionError, InvalidParameterError
from ..guarantees import Guarantee, compose

__all__ = ["Composition", "PreviousRelease", "compose_releases", "read_previous"]


@dataclass(frozen=True)
class PreviousRelease:
    """What composition needs from an earlier release."""

    path: Path
    sha256: str
    protect: str
    pairs: frozenset[frozenset[float]]
    deterministic: bool
    guarantee: Guarantee


@dataclass(frozen=True)
class Composition:
    """The composed guarantee and which proposition justified it."""

    proposition: str
    guarantee: Guarantee
    releases: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"proposition": self.proposition, "guarantee": self.guarantee.to_dict(), "releases": list(self.releases)}


def _pairs_key(pairs: Sequence[Sequence[float]]) -> frozenset[frozenset[float]]:
    return frozenset(frozenset(float(v) for v in p) for p in pairs)


def read_previous(path: str | Path) -> PreviousRelease:
    """Parse the JSON output of an earlier ``distpriv release``."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        data = doc["data"]
        secret = doc["secret"]
        g = doc["guarantee"]
        guarantee = Guarantee(
            epsilon=float(g["epsilon"]),
            delta=float(g["delta"]),
            mechanism=str(g.get("mechanism", doc.get("mechanism", "?"))),
            framework=str(g.get("framework", "distribution-privacy")),
            calibration=str(g.get("calibration", "exact")),
            pairs=tuple((float(a), float(b)) for a, b in g.get("pairs", secret["pairs"])),
            assumptions=tuple(str(a) for a in g.get("assumptions", ())),
            theorem=str(g.get("theorem", "")),
        )
        return PreviousRelease(p, str(data["sha256"]), str(secret["protect"]), _pairs_key(secret["pairs"]),
                               bool(secret.get("deterministic", False)), guarantee)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"--previous: {p} is not the JSON output of 'distpriv release' ({type(exc).__name__}: {exc})"
        ) from None


def compose_releases(
    previous: Sequence[PreviousRelease],
    current: Guarantee,
    *,
    sha256: str,
    protect: str,
    pairs: Sequence[Sequence[float]],
    deterministic: bool | None,
    independent: bool,
) -> Composition | None:
    """Compose ``current`` with ``previous`` releases, or raise :class:`AssumptionError` saying why not.

    ``deterministic``: F(Data) is constant given θ in the current model (Prop A.4's condition), ``None``
    when not known yet (then only the checks that do not need it are made and nothing is composed:
    :func:`distpriv.release.core.prepare` calls it so before modelling f_θ, to refuse early);
    ``independent``: the user asserts every release used an independently sampled dataset (Prop A.5).
    """
    key = _pairs_key(pairs)
    for prev in previous:
        if prev.protect != protect or prev.pairs != key:
            raise AssumptionError(
                f"--previous: {prev.path.name} protects {prev.protect!r} with other secret pairs; composition "
                "(Props A.4/A.5) needs the same protected property and the same pairs Ψ"
            )
    hashes = [p.sha256 for p in previous] + [sha256]
    guarantees = [p.guarantee for p in previous] + [current]
    names = tuple(str(p.path) for p in previous)
    if len(set(hashes)) < len(hashes):
        # the same data released more than once
        if deterministic is None and all(p.deterministic for p in previous):
            return None  # Prop A.4 may apply: decided once f_θ is modelled
        if deterministic and all(p.deterministic for p in previous):
            g = compose(guarantees).with_assumptions(
                "F(Data) is constant given θ, so each θ fixes what the mechanisms see (Chen & Ohrimenko Prop. A.4)"
            )
            return Composition("A.4", g, names)
        same = next(p for p in previous if hashes.count(p.sha256) > 1)
        raise AssumptionError(
            f"--previous: {same.path.name} is a release of the same data (sha256 {same.sha256[:12]}...); distribution "
            "privacy does not compose for repeated releases of one dataset: Prop. A.4 needs each θ to fix the query "
            "value and Prop. A.5 needs independently sampled datasets. Release all statistics in one call instead"
        )
    if not independent:
        raise AssumptionError(
            "--previous: the releases use different data files; Prop. A.5 composes them only if the datasets were "
            "sampled independently: pass --independent to assert it"
        )
    if deterministic is None:
        return None
    g = compose(guarantees).with_assumptions(
        "the released datasets were sampled independently (asserted by the user; Chen & Ohrimenko Prop. A.5); "
        "the composed guarantee is for Ψ ⋄ Ψ (pairs of product distributions)"
    )
    return Composition("A.5", g, names)
