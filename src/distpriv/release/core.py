"""The release pipeline: validate, model f_θ, choose and calibrate a mechanism, release, compose.

:func:`prepare` does everything that can fail on bad input (reading the files,
parsing the query and the predicate, checking Ψ against n, reading and
validating earlier releases' private ledgers, refusing compositions that no
proposition allows) and models f_θ; :func:`release` then chooses the mechanism
(:func:`~distpriv.release.selection.select_mechanism`), draws its noise
float-safely from the operating system's entropy (:mod:`distpriv.release.noise`)
and composes with earlier releases. Nothing here writes files: the public
payload is :func:`distpriv.release.public.public_payload` and the files are
written by :mod:`distpriv.release.output`.

Randomness: everything that shapes the published choice (modelling, assumption
tests, the attack simulations of the report, the audit) is seeded from the
public inputs (:func:`distpriv.release.data.public_seed`); only the released
noise uses fresh entropy — or the ``seed`` of the spec, for tests only.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..data import open_table
from ..data.fingerprint import normalise_name
from ..data.sources import is_csv_input
from ..errors import InvalidParameterError, arg
from ..guarantees import Guarantee
from ..models import EmpiricalModel, GaussianModel
from ..queries import Predicate, Query
from ..statspec import Layout, build_layout, is_plain, parse_request
from .compose import (
    Composition,
    check_compatible,
    compose_releases,
    decide_propositions,
    merged_chain,
)
from .data import (
    Modelling,
    SummarizedTable,
    build_query,
    check_pairs_achievable,
    csv_options,
    declared_modelling,
    input_sha256,
    model_f_theta,
    open_input,
    prefetch_sha256,
    public_seed,
)
from .declared import DeclaredModel, declared_diagnostics, load_model_file
from .fingerprints import Overlap, compare_rows, new_key, table_cells
from .layout import RecordingSampler, layout_modelling, quantile_laws, true_values
from .ledger import ChainEntry, Ledger, composed_total, read_ledger
from .noise import NoisePlan, plan_noise
from .sampler import BitSource, bit_source
from .selection import Candidate, Selection, select_mechanism
from .spec import ReleaseSpec
from .standardize import Standardization, StandardizedPlan, standardization, standardize_modelling

#: The framework of every release made here (Chen & Ohrimenko Definition 3.2).
FRAMEWORK = "distribution-privacy"

# independent random streams derived from the public seed, one per use
_STREAM_MODEL, _STREAM_SELECT, _STREAM_ATTACKS, _STREAM_AUDIT = range(4)


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (``2026-11-26T18:04:28Z``)."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_release_id() -> str:
    """A fresh random release identifier (operating-system entropy): with :func:`utc_now`, what stamps a release."""
    return secrets.token_hex(16)


@dataclass
class Prepared:
    """Validated inputs and the modelled f_θ.

    ``data`` and ``shared`` (rows shared with each earlier release) are private; everything else is a
    function of the public inputs, except ``modelling``/``sensitivities`` with ``--model-from-data``.
    """

    spec: ReleaseSpec
    data: SummarizedTable
    population: SummarizedTable | None
    declared: DeclaredModel | None
    query: Query
    predicate: Predicate
    modelling: Modelling
    sensitivities: NDArray[np.float64] | None
    previous: list[Ledger]
    shared: dict[str, int]
    seed: int
    #: the public diagonal D (:mod:`distpriv.release.standardize`); ``modelling`` and ``sensitivities`` are of D⁻¹F
    standardization: Standardization | None = None
    #: per earlier release, how the rows compare (private; :mod:`distpriv.release.fingerprints`)
    overlaps: dict[str, Overlap] = field(default_factory=dict)
    #: the published coordinates of variances, quantiles, histograms, group-by and ratios (``None``: the
    #: statistics are the linear ones of ``query``, one coordinate each)
    layout: Layout | None = None
    #: F(Data) of the published coordinates when ``layout`` is set (private; ``data.values`` otherwise)
    truth: NDArray[np.float64] | None = None

    @property
    def values(self) -> NDArray[np.float64]:
        """The true published statistics (private: never published)."""
        return self.data.values if self.truth is None else self.truth

    @property
    def dim(self) -> int:
        """Published coordinates m."""
        return self.query.dim if self.layout is None else self.layout.dim
    #: record-level DP (issue 22): the replace-one sensitivity set of D⁻¹F from the declared bounds (public)
    record_sensitivity: Any = None
    #: curator-only facts found while preparing (the clamped counts of record-level DP)
    notes: list[str] = field(default_factory=list)

    @property
    def unidentified(self) -> dict[str, str]:
        """Per earlier release, why rows cannot tell disjoint samples from reused ones (``--independent`` needs ``--id``)."""
        return {k: o.reason for k, o in self.overlaps.items() if o.reason}

    def stream(self, which: int) -> np.random.Generator:
        """A generator seeded from the public inputs (``which`` selects an independent stream)."""
        return np.random.default_rng([self.seed, which])

    @property
    def rng(self) -> np.random.Generator:
        """The selection stream (kept for callers of the research functions)."""
        return self.stream(_STREAM_SELECT)

    @property
    def deterministic(self) -> bool:
        """F(Data) constant given θ in the model (Prop. A.4's condition)."""
        model = self.modelling.model
        if isinstance(model, GaussianModel):
            return all(not np.any(model.covariance(lab)) for lab in model.labels)
        assert isinstance(model, EmpiricalModel)
        return all(np.ptp(model.samples(lab), axis=0).max() == 0 for lab in model.labels)


@dataclass
class ReleaseResult:
    """A finished release: the noisy statistics, the chosen mechanism and its float-safe noise plan.

    :meth:`to_json` is the public payload (:func:`distpriv.release.public.public_payload`);
    :meth:`ledger` the private record for composing later releases.
    """

    prepared: Prepared
    selection: Selection
    noise: NoisePlan | StandardizedPlan
    values: NDArray[np.float64]
    randomness: str  # "os" or "seeded"
    composition: Composition | None = None
    release_id: str = field(default_factory=new_release_id)
    #: private facts for the curator alone (the private share outside the published range, the kept count of
    #: ``missing="drop"``, clamped rows, ...): never in a public file; the CLI prints each on stderr as a line
    #: starting with :data:`~distpriv.release.public.CURATOR_PREFIX`, which the audit's side-channel diff skips
    curator_notes: list[str] = field(default_factory=list)
    _intervals: list[Any] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # how the rows compared with each earlier release (issue 27): private, for the curator alone
        self.curator_notes.extend(f"earlier release: {o.describe()}" for o in self.prepared.overlaps.values())
        self.curator_notes.extend(self.prepared.notes)
    #: when the release was made (UTC, ISO 8601 to the second): ``provenance.time`` of the payload
    time: str = field(default_factory=utc_now)
    #: the published id (``provenance.release_id``): fresh random, independent of :attr:`release_id`, the private
    #: ledger's id, so that the public files cannot be linked to a ledger entry by it
    public_id: str = field(default_factory=new_release_id)
    #: per k, the exact δ(kε) of the pairs k gaps apart when Ψ is a grid (:func:`distpriv.release.grid.gap_profiles`;
    #: public: a function of the model, Ψ and the chosen noise); ``None`` when Ψ is not a grid of >= 2 pairs
    gap_profile: dict[str, Any] | None = None

    @property
    def chosen(self) -> Candidate:
        return self.selection.chosen

    def _record_entry(self) -> dict[str, float] | None:
        """The ledger's record-level entry {epsilon, delta, mu} (``None`` without record-level DP)."""
        claim = getattr(self.selection, "record", None)
        return None if claim is None else {"epsilon": claim.epsilon, "delta": claim.delta, "mu": claim.mu}

    @property
    def record_composition(self) -> dict[str, Any] | None:
        """Record-level DP composed over the chain of earlier releases and this one (``None`` without ``--previous``
        or without record-level DP here); :func:`distpriv.release.ledger_record.compose_record`."""
        if self.composition is None or getattr(self.selection, "record", None) is None:
            return None
        from .ledger_record import compose_record

        return compose_record([*(e.record for e in self.composition.chain), self._record_entry()])

    @property
    def record_guarantee(self) -> Guarantee | None:
        """(E, D)-differential privacy for one record replaced (``None`` without ``record_epsilon``)."""
        claim = getattr(self.selection, "record", None)
        return None if claim is None else claim.guarantee()

    @property
    def guarantee(self) -> Guarantee:
        """The guarantee of what was published (the chosen candidate's, with the float-safe sampling terms)."""
        return self.noise.guarantee

    @property
    def intervals(self) -> list[Any]:
        """Per-statistic (1 − α) intervals for F(D) (:func:`distpriv.release.intervals.statistic_intervals`)."""
        from .intervals import statistic_intervals

        if self._intervals is None:
            self._intervals = statistic_intervals(self.values, self.noise, self.prepared.spec.interval_level)
        return self._intervals

    @property
    def display(self) -> list[str]:
        """``value ± half-width`` per statistic, to the digits the interval supports."""
        from .intervals import display

        return [display(float(v), iv.half_width) for v, iv in zip(self.values, self.intervals, strict=True)]

    def to_json(self) -> dict[str, Any]:
        """The public payload: what ``distpriv release --format json`` prints. No true value, nothing private."""
        from .public import public_payload

        return public_payload(self)

    def ledger(self, public_sha256: str | None = None) -> Ledger:
        """The private ledger of this release: its chain (earlier releases + this one) with fresh fingerprints."""
        prep = self.prepared
        key = new_key()
        columns, cells = table_cells(prep.data.source, key)
        own = ChainEntry(self.release_id, float(self.guarantee.epsilon), float(self.guarantee.delta), self.chosen.name,
                         prep.deterministic, prep.data.rows, key, cells, columns,
                         "os" if prep.spec.seed is None else "seeded", prep.spec.seed, self._record_entry())
        chain = (*self.composition.chain, own) if self.composition is not None else (own,)
        eps, delta = composed_total(chain)
        props: tuple[str, ...] = ()
        if self.composition is not None:
            earlier = tuple(p for led in prep.previous for p in led.propositions)
            props = tuple(sorted({*earlier, *self.composition.propositions}))
        return Ledger(None, self.release_id, FRAMEWORK, str(prep.predicate), tuple(prep.spec.pairs), chain, eps,
                      delta, props, public_sha256)


def range_notes(prep: Prepared) -> list[str]:
    """Curator-only: the private share when it lies outside the range of Ψ (the guarantee does not cover it).

    Private (it reads the table's protected count): for :attr:`ReleaseResult.curator_notes` only.
    """
    counts = prep.data.summary.moments.counts
    kept = prep.data.kept
    if kept <= 0 or len(counts) < 1:
        return []
    share = float(counts[0]) / kept
    labels = [float(v) for pr in prep.spec.pairs for v in pr]
    lo, hi = min(labels), max(labels)
    if lo <= share <= hi:
        return []
    return [f"the private share of {prep.spec.protect!r} is {share:.4g} ({int(counts[0])} of {kept} rows), outside "
            f"the published range {lo:g}–{hi:g} of Ψ: the guarantee protects the values in Ψ, and says nothing about "
            "telling the true share from them; widen the range from public knowledge (never from this note) if it "
            "should cover it"]


def gap_profile(prep: Prepared, selection: Selection, guarantee: Guarantee) -> dict[str, Any] | None:
    """:func:`distpriv.release.grid.gap_profiles` for a Ψ that is a grid of at least two adjacent pairs."""
    if len(prep.spec.pairs) < 2:  # one pair is a one-step grid: nothing to profile (no import of .grid)
        return None
    from .grid import gap_profiles, grid_of

    spec = grid_of(prep.spec.pairs)
    if spec is None or spec.steps < 2:
        return None
    from .memo import memoized

    args = (prep.modelling.model, spec, selection.chosen, float(guarantee.epsilon), float(guarantee.delta))
    return memoized(  # once per process for the same public inputs (issue 26); a copy each call
        "gap_profiles", args, lambda: gap_profiles(*args[:3], epsilon=args[3], delta=args[4]),
        enabled=prep.modelling.public)


def _framework(g: Guarantee) -> str:
    return str(getattr(g.framework, "value", g.framework))


def prepare(spec: ReleaseSpec, data: Any = None) -> Prepared:
    """Read and validate everything, then model f_θ. Raises a DistPrivError on any bad input.

    ``data`` replaces ``spec.data``: anything :func:`distpriv.data.open_table` accepts (a pandas, Polars,
    DuckDB, Dask or PySpark frame, a path or glob) or an opened :class:`~distpriv.release.data.SummarizedTable`.
    Every table is read by its own engine: one aggregate pass (and a bounded subsample for the model).
    """
    predicate = Predicate(spec.protect)
    if spec.record_epsilon is not None:  # refuse before reading anything
        from .record import check_record_query, check_record_specs

        if not is_plain(spec.stats):  # histograms, group-by sums/counts pass; the nonlinear ones with the reason
            check_record_specs(spec.stats, spec.bounds)
        else:
            check_record_query(build_query(spec.stats, spec.names), spec.bounds)
    if data is None:
        if spec.data is None:
            raise InvalidParameterError("give the table to release", argument="data")
        data = spec.data
    pop_value = spec.population if spec.population is not None else spec.population_frame
    layout = None
    if is_plain(spec.stats):
        query = build_query(spec.stats, spec.names)
    else:  # variances, quantiles, histograms, group-by, ratios (distpriv.statspec): levels from the population
        if spec.model is not None:
            first = next(t for t in spec.stats if not parse_request(t).plain)
            raise InvalidParameterError(
                f"a model file declares f_θ of mean/sum/count/proportion statistics only, and {first!r} needs the "
                "public population: its levels or groups, a quantile's grid and exact law, the resampled datasets "
                f"of a variance or ratio come from it; model the release from {arg('population')}", argument="model")
        if pop_value is not None:
            prefetch_sha256(pop_value)
            pop_value = open_table(pop_value, what="population", **(
                csv_options(spec, "population") if is_csv_input(pop_value) else {}))
        layout = build_layout(spec.stats, spec.names, pop_value)
        query = layout.base
    prefetch_sha256(pop_value)  # the population's published SHA-256, hashed while the engine scans it
    # the CSV options apply to every CSV input (open_input ignores them for Parquet files and frames)
    clamp = spec.bounds if spec.record_epsilon is not None else ()
    table = open_input(data, query, predicate, what="data", missing=spec.missing, clamp=clamp,
                       **csv_options(spec, "data"))
    population = None if pop_value is None else open_input(pop_value, query, predicate, what="population",
                                                           missing=spec.missing, clamp=clamp,
                                                           **csv_options(spec, "population"))
    declared = load_model_file(spec.model, spec.stats, spec.pairs) if spec.model is not None else None
    n: int | None = None
    if declared is None:
        if spec.n is None and table.kept != table.rows and not spec.model_from_data:
            # the model (and so every published noise scale) depends on n; rows dropped for missing values make
            # the kept count a function of the data, possibly of the secret (independent review): make it a choice
            exc = InvalidParameterError(
                f"drop: {table.rows - table.kept} rows were dropped from the data (not the population), so "
                "the number of rows kept depends on the data and would shape the published noise; declare it public "
                f"with {arg('n')} (the kept count), or model f_θ with {arg('model_from_data')} (outside the guarantee) or {arg('model')}",
                argument="missing",
            )
            # the count is private: for the curator's eyes (a 'curator:' line of the CLI), never in a public file
            exc.curator_notes = [f"{arg('missing')} drop kept {table.kept} of the data's {table.rows} rows "  # type: ignore[attr-defined]
                                 f"({arg('n')} {table.kept} declares that count public)"]
            raise exc
        n = table.kept if spec.n is None else spec.n
        check_pairs_achievable(spec.pairs, n)
        if n != table.kept:
            raise InvalidParameterError(
                f"the model describes datasets of n = {n} records but the data has {table.kept} rows; the "
                "guarantee only covers datasets of n records", argument="n"
            )
    previous = [read_ledger(p) for p in spec.previous]
    shared: dict[str, int] = {}
    overlaps: dict[str, Overlap] = {}
    if spec.id is not None and normalise_name(spec.id) not in {normalise_name(c) for c in table.source.columns}:
        raise InvalidParameterError(f"the data has no column {spec.id!r}", argument="id")
    if previous:  # refuse what can be refused before any modelling
        check_compatible(previous, framework=FRAMEWORK, protect=str(predicate), pairs=spec.pairs)
        chain, _ = merged_chain(previous)
        overlaps = dict(compare_rows(table.source, chain, rows=table.rows, id_column=spec.id,
                                     population=None if population is None else population.source))
        shared = {k: o.shared for k, o in overlaps.items()}
        decide_propositions(previous, shared=shared, rows=table.rows, independent=spec.independent,
                            deterministic=None, seed=spec.seed,
                            unidentified={k: o.reason for k, o in overlaps.items() if o.reason})
    if population is not None:
        input_sha: str | None = input_sha256(population)
    else:
        input_sha = declared.sha256 if declared is not None else None
    seed = public_seed({
        "stats": list(spec.stats), "names": list(spec.names), "protect": str(predicate),
        "pairs": [list(p) for p in spec.pairs], "epsilon": spec.epsilon, "delta": spec.delta,
        "mechanism": spec.mechanism, "calibration": spec.calibration, "n": n, "samples": spec.samples,
        # a population enters through what it is (its aggregates and subsample), not through its file's bytes:
        # the same population from a CSV, Parquet files or any engine gives the same draws
        "source": spec.source, "input": input_sha if population is None else None, "missing": spec.missing,
    })
    model_rng = np.random.default_rng([seed, _STREAM_MODEL])
    if declared is not None:
        modelling = declared_modelling(declared.model, declared.path, declared.sha256)
        sens = None
    else:
        assert n is not None
        modelling = model_f_theta(table, population, query, predicate, spec.pairs, n=n, samples=spec.samples,
                                  rng=model_rng, population_sha256=input_sha, missing=spec.missing,
                                  sampler_cls=None if layout is None else RecordingSampler)
        sens = (None if layout is not None else
                (population if population is not None else table).summary.record_sensitivities(n))
    truth = None
    if layout is not None:
        assert n is not None and isinstance(modelling.sampler, RecordingSampler)
        src = population if population is not None else table
        laws = quantile_laws(layout, src, predicate, n, replace=population is None)
        modelling.sampler.setup([layout.outputs[i].base[0] for i, o in enumerate(layout.outputs) if o.quantile],
                                [laws[c].r for c, _, _ in layout.quantile_coordinates])
        truth = true_values(layout, table, predicate, n, laws)
        modelling = layout_modelling(modelling, layout, laws, list(dict.fromkeys(v for pr in spec.pairs for v in pr)))
        sens = None  # the group-DP baselines take the linear statistics of mean/sum/count/proportion only
    # unit-free noise: everything downstream is calibrated on D⁻¹F (distpriv.release.standardize)
    std = standardization(modelling.model, spec.pairs)
    modelling = standardize_modelling(modelling, std.scale)
    if sens is not None:
        sens = np.asarray(sens, dtype=float) / std.scale
    prep = Prepared(spec, table, population, declared, query, predicate, modelling, sens, previous, shared, seed, std)
    prep.layout, prep.truth = layout, truth
    if spec.record_epsilon is not None:
        from .record import clamped_notes, layout_sensitivity_set, sensitivity_set

        if n is None and declared is not None:  # the row count is private unless declared public
            if spec.n is None:
                raise InvalidParameterError("record-level DP with a declared model needs the public number of "
                                            f"records: declare it with {arg('n')}",
                                            argument="n")
            n = int(spec.n)
            if n != table.kept:  # the claim covers datasets of the public n only
                raise InvalidParameterError("record-level DP with a declared model: the public number of records "
                                            "is not the data's row count", argument="n")
        n_rec = n if n is not None else table.kept
        rec = (sensitivity_set(query, spec.bounds, n_rec) if layout is None
               else layout_sensitivity_set(layout, spec.bounds, n_rec))
        prep.record_sensitivity = rec.scaled(std.scale)
        prep.notes.extend(clamped_notes(table, spec.bounds, query))  # private: the curator channel only
    if previous:  # refuse before any noise is drawn
        prep.overlaps = overlaps
        decide_propositions(previous, shared=shared, rows=table.rows, independent=spec.independent,
                            deterministic=prep.deterministic, seed=spec.seed, unidentified=prep.unidentified)
    return prep


def _is_files(value: Any) -> bool:
    return isinstance(value, (str, Path)) or (isinstance(value, (list, tuple)) and all(
        isinstance(v, (str, Path)) for v in value))


def select(prep: Prepared) -> Selection:
    """Choose the mechanism for a prepared release (``spec.mechanism``: ``auto`` or a name)."""
    spec = prep.spec
    diag = None
    if prep.declared is not None:  # the standardised declared model (prep.modelling.model)
        model = prep.modelling.model
        assert isinstance(model, GaussianModel)
        diag = declared_diagnostics(model, list(spec.pairs), epsilon=spec.epsilon, delta=spec.delta)
    sel = select_mechanism(
        prep.modelling.model, list(spec.pairs), epsilon=spec.epsilon, delta=spec.delta,
        calibration=spec.calibration, sensitivities=prep.sensitivities, n=prep.modelling.n,
        mechanism=spec.mechanism, rng=prep.stream(_STREAM_SELECT), diagnostics=diag,
        # with record DP every candidate is combined with the record noise (record.combine): a candidate that
        # loses on distribution-privacy error alone can still give the least error meeting both guarantees,
        # so the ranking (issue 26) that skips such candidates is off
        rank=spec.record_epsilon is None,
        memo=prep.modelling.public,  # candidates evaluated once per process for the same public inputs (issue 26)
    )
    if spec.record_epsilon is not None and spec.record_delta is not None:
        from .record import combine

        sel, claim = combine(prep, sel, prep.record_sensitivity, epsilon=spec.record_epsilon,
                             delta=spec.record_delta)
        sel.record = claim
    return sel


def release(
    prep: Prepared,
    selection: Selection | None = None,
    *,
    bits: BitSource | None = None,
    truth: ArrayLike | None = None,
) -> ReleaseResult:
    """Release the noisy statistics of the data with the selected mechanism (float-safe, fresh entropy).

    ``bits``: the source of the noise (default: the operating system's entropy, or the spec's seed);
    ``truth``: F(Data) to release instead of the data's (the audit's side-channel check releases
    synthetic query values through the same path).
    """
    sel = selection or select(prep)
    if prep.spec.record_epsilon is not None and prep.spec.record_delta is not None and sel.record is None:
        from .record import combine

        sel, claim = combine(prep, sel, prep.record_sensitivity, epsilon=prep.spec.record_epsilon,
                             delta=prep.spec.record_delta)
        sel.record = claim
    from .record_mixed import MixedCandidate, MixedPlan

    plan: NoisePlan | StandardizedPlan = (MixedPlan(sel.chosen) if isinstance(sel.chosen, MixedCandidate)  # type: ignore[assignment]
                                          else plan_noise(sel.chosen))
    if prep.standardization is not None:
        plan = StandardizedPlan(plan, prep.standardization.scale)
    x = prep.values if truth is None else np.asarray(truth, dtype=float)
    if x.shape != (prep.dim,):
        raise InvalidParameterError(f"truth: expected {prep.dim} statistics, got shape {x.shape}")
    source = bits if bits is not None else bit_source(prep.spec.seed)
    values = plan.apply(x, source)
    del x
    comp = None
    if prep.previous:
        props = decide_propositions(prep.previous, shared=prep.shared, rows=prep.data.rows,
                                    independent=prep.spec.independent, deterministic=prep.deterministic,
                                    seed=prep.spec.seed, unidentified=prep.unidentified)
        assert props is not None
        if _framework(plan.guarantee) != FRAMEWORK:  # pragma: no cover - every release mechanism is DistP
            raise InvalidParameterError(f"cannot compose a {_framework(plan.guarantee)} release", argument="previous")
        comp = compose_releases(prep.previous, plan.guarantee, props)
    result = ReleaseResult(prep, sel, plan, values, "seeded" if source.seeded else "os", comp)
    if prep.data.kept != prep.data.rows:  # the kept count of --missing drop: for the curator alone
        result.curator_notes.append(f"{arg('missing')} drop kept {prep.data.kept} of the data's {prep.data.rows} rows")
    result.curator_notes.extend(range_notes(prep))
    result.gap_profile = gap_profile(prep, sel, plan.guarantee)
    return result
