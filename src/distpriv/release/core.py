"""The release pipeline: validate, model f_θ, choose and calibrate a mechanism, release, compose.

:func:`prepare` does everything that can fail on bad input (reading the files,
parsing the query and the predicate, checking Ψ against n, reading previous
releases) and models f_θ; :func:`release` then chooses the mechanism
(:func:`~distpriv.release.selection.select_mechanism`), adds its noise to the
true statistics and composes with earlier releases. Nothing here writes files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import as_rng
from ..errors import InvalidParameterError
from ..guarantees import Guarantee
from ..mechanisms import LABELS
from ..queries import Predicate, Query
from .compose import Composition, PreviousRelease, compose_releases, read_previous
from .data import (
    Modelling,
    Table,
    build_query,
    check_against,
    load_table,
    model_f_theta,
)
from .selection import Candidate, Selection, select_mechanism
from .spec import ReleaseSpec

__all__ = ["Prepared", "ReleaseResult", "prepare", "release"]


@dataclass
class Prepared:
    """Validated inputs and the modelled f_θ."""

    spec: ReleaseSpec
    data: Table
    population: Table | None
    query: Query
    predicate: Predicate
    modelling: Modelling
    sensitivities: np.ndarray
    previous: list[PreviousRelease]
    rng: np.random.Generator

    @property
    def deterministic(self) -> bool:
        """F(Data) constant given θ in the model (Prop. A.4's condition)."""
        return all(np.ptp(self.modelling.model.samples(lab), axis=0).max() == 0 for lab in self.modelling.model.labels)


@dataclass
class ReleaseResult:
    """A finished release: the noisy statistics, the chosen mechanism and everything the report shows."""

    prepared: Prepared
    selection: Selection
    values: np.ndarray
    composition: Composition | None = None
    files: dict[str, str] = field(default_factory=dict)

    @property
    def chosen(self) -> Candidate:
        return self.selection.chosen

    @property
    def guarantee(self) -> Guarantee:
        g = self.chosen.guarantee
        assert g is not None
        return g

    def to_json(self) -> dict[str, Any]:
        """The command's JSON output. The true statistics are never included."""
        spec = self.prepared.spec
        noise_std = np.sqrt(np.clip(np.diag(self.chosen.noise_covariance), 0, None))
        out: dict[str, Any] = {
            "mechanism": self.chosen.name,
            "mechanism_label": self.chosen.label,
            "guarantee": self.guarantee.to_dict(),
            "statistics": [
                {"name": nm, "spec": st, "value": float(v), "noise_std": float(s)}
                for nm, st, v, s in zip(spec.names, spec.stats, self.values, noise_std, strict=True)
            ],
            "data": {"path": str(self.prepared.data.path), "sha256": self.prepared.data.sha256,
                     "rows": self.prepared.data.rows},
            "secret": {"protect": spec.protect, "pairs": [list(p) for p in spec.pairs],
                       "deterministic": self.prepared.deterministic},
            "report": {
                "modelling": {
                    "source": self.prepared.modelling.source,
                    "n": self.prepared.modelling.n,
                    "samples_per_theta": self.prepared.modelling.samples,
                    "protected_records": {str(k): v for k, v in self.prepared.modelling.counts.items()},
                    "note": self.prepared.modelling.note,
                },
                "expected_l2_error": self.chosen.expected_l2_error,
                "correction": self.chosen.correction,
                "why": self.chosen.reason,
                **self.selection.to_dict(),
            },
        }
        if self.composition is not None:
            out["composition"] = self.composition.to_dict()
        if self.files:
            out["report"]["files"] = dict(self.files)
        return out


def prepare(spec: ReleaseSpec) -> Prepared:
    """Read and validate everything, then model f_θ. Raises a DistPrivError on any bad input."""
    data = load_table(spec.data, "data")
    population = load_table(spec.population, "--population") if spec.population is not None else None
    query = build_query(spec.stats, spec.names)
    predicate = Predicate(spec.protect)
    check_against(data, query, predicate, "the data")
    previous = [read_previous(p) for p in spec.previous]
    if previous:  # refuse what can be refused before any modelling
        compose_releases(previous, Guarantee(spec.epsilon, spec.delta, "pending"), sha256=data.sha256,
                         protect=spec.protect, pairs=spec.pairs, deterministic=None, independent=spec.independent)
    rng = as_rng(spec.seed)
    modelling = model_f_theta(data, population, query, predicate, spec.pairs, n=spec.n, samples=spec.samples, rng=rng)
    frame = population.frame if population is not None else data.frame
    sens = query.record_sensitivities(frame, modelling.n)
    prep = Prepared(spec, data, population, query, predicate, modelling, sens, previous, rng)
    if previous:  # refuse before any noise is drawn
        _compose(prep, None)
    return prep


def _compose(prep: Prepared, guarantee: Guarantee | None) -> Composition:
    spec = prep.spec
    g = guarantee or Guarantee(spec.epsilon, spec.delta, "pending", pairs=tuple(spec.pairs))
    comp = compose_releases(prep.previous, g, sha256=prep.data.sha256, protect=spec.protect, pairs=spec.pairs,
                            deterministic=prep.deterministic, independent=spec.independent)
    assert comp is not None
    return comp


def select(prep: Prepared) -> Selection:
    """Choose the mechanism for a prepared release (``spec.mechanism``: ``auto`` or a name)."""
    spec = prep.spec
    return select_mechanism(
        prep.modelling.model, list(spec.pairs), epsilon=spec.epsilon, delta=spec.delta,
        calibration=spec.calibration, sensitivities=prep.sensitivities, n=prep.modelling.n,
        mechanism=spec.mechanism, rng=prep.rng,
    )


def release(prep: Prepared, selection: Selection | None = None) -> ReleaseResult:
    """Release the noisy statistics of the data with the selected mechanism."""
    sel = selection or select(prep)
    truth = prep.query.evaluate(prep.data.frame)
    if truth.shape != (prep.query.dim,):  # pragma: no cover - defensive
        raise InvalidParameterError("query: unexpected shape of the statistics")
    values = sel.chosen.release(truth, prep.rng)
    del truth
    comp = _compose(prep, sel.chosen.guarantee) if prep.previous else None
    return ReleaseResult(prep, sel, values, comp)


def label_of(name: str) -> str:
    """Paper label of a mechanism name (``"none"`` -> ``"None (Thm 5.4)"``)."""
    return LABELS.get(name, "None (Thm 5.4)")
