"""What a release publishes: one payload built from the noisy values and public inputs only.

The public outputs — the JSON on stdout, ``release.json``, ``report.md``,
``report.html`` and the figures — are all built from :func:`public_payload`
and :func:`public_context`. They carry the noisy values, the guarantee, the
mechanism and its noise description, and the public specification (statistics,
protected predicate, Ψ, ε, δ, how f_θ was modelled and the SHA-256 of a public
population or model file). Nothing computed from the private table: no true
value, path, file hash, row or protected-record count, and — when f_θ comes from
the data — no diagnostics or figures.

With ``--population`` or ``--model`` the mechanism and noise are functions of
public inputs, so two datasets with the same public inputs give payloads that
differ only in ``statistics[].value``. With ``--model-from-data`` the fields
listed in ``data_dependent`` (:func:`data_dependent_fields`) depend on the private data
as well, and the payload's first warning says that this is outside the guarantee.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..errors import python_spelling, render_references

if TYPE_CHECKING:  # pragma: no cover
    from .core import ReleaseResult
    from .data import Modelling
    from .selection import Selection

#: What may differ between the public outputs of two releases whose datasets differ only in the secret (with
#: ``--population`` or ``--model``): these payload fields and their renderings in report.md / report.html.
#: Everything else published (files, names, sizes, stdout, public stderr, exit code) must be identical; the
#: audit's side-channel check and the tests diff everything else (docs/publishing.md).
MAY_DIFFER: tuple[str, ...] = (
    "statistics[].value", "statistics[].interval", "statistics[].display", "provenance.time", "provenance.release_id",
)

#: Start of every stderr line meant for the curator alone (private facts; never written to a public file and
#: skipped by the side-channel diff). Every other stderr line is public.
CURATOR_PREFIX = "curator:"


def curator_lines(notes: list[str] | tuple[str, ...],
                  spell: Callable[[str], str] = python_spelling) -> list[str]:
    """The curator-only stderr lines of ``notes`` (each prefixed with :data:`CURATOR_PREFIX`, one line each).

    A note may refer to an argument as ``{arg:name}`` (:func:`distpriv.errors.arg`); ``spell`` renders it
    (``name=`` by default; the CLI passes :func:`distpriv.cli.arguments.flag_for`)."""
    return [f"{CURATOR_PREFIX} {' '.join(render_references(str(n), spell).split())}" for n in notes]

#: Payload fields known to depend on the private data when f_θ is modelled from it (``--model-from-data``). The
#: payload's ``data_dependent`` is not this hand list but :func:`data_dependent_fields` (every field not in
#: :data:`PUBLIC_FIELDS`), which always includes these (a test checks it).
DATA_DEPENDENT: tuple[str, ...] = (
    "mechanism", "mechanism_label", "guarantee", "statistics[].noise_std", "statistics[].grid", "statistics[].spread",
    "statistics[].noise_to_spread",
    "noise",
    "report.chosen", "report.expected_l2_error", "report.correction", "report.why", "report.candidates",
    "composition.guarantee",
)

#: Payload fields that are functions of the public inputs alone (the spec, the randomness, the warnings), also
#: with ``--model-from-data``; ``report.modelling.n``/``note`` only when no row was dropped for a missing value
#: (with ``--missing drop`` the kept count n depends on the data).
PUBLIC_FIELDS: tuple[str, ...] = (
    "spec", "randomness", "warnings", "data_dependent", "statistics[].name", "statistics[].spec",
    "statistics[].interval_level", "report.modelling.source", "report.modelling.samples_per_theta", "report.modelling.input_sha256",
    "report.modelling.n", "report.modelling.note", "provenance.version", "provenance.spec",
    "statistics[].kind", "statistics[].linear", "statistics[].labels",
)


def data_dependent_fields(payload: dict[str, Any], public: tuple[str, ...] = PUBLIC_FIELDS) -> list[str]:
    """The ``data_dependent`` list of a ``--model-from-data`` payload, derived from the payload itself (issue 27).

    Every field is data-dependent unless it is in ``public`` or in :data:`MAY_DIFFER` (which may differ anyway);
    a subtree holding neither is listed by its own path (``noise``, ``report.candidates``), others field by
    field (``statistics[].noise_std``). A field added to the payload is data-dependent until declared public.
    The audit's side-channel check compares this list with what two synthetic releases actually show.
    """
    keep = (*public, *MAY_DIFFER)

    def inside(path: str) -> bool:  # a public or may-differ field at or below path
        return any(k == path or k.startswith(path + ".") or k.startswith(path + "[") for k in keep)

    def walk(node: Any, path: str) -> list[str]:
        if path and path in keep:
            return []
        if path and not inside(path):
            return [path]
        if isinstance(node, dict):
            return [f for k, v in node.items() for f in walk(v, f"{path}.{k}" if path else str(k))]
        if isinstance(node, list):
            items: dict[str, list[Any]] = {}
            for item in node:
                for k, v in (item.items() if isinstance(item, dict) else ()):
                    items.setdefault(str(k), []).append(v)
            return list(dict.fromkeys(f for k, vs in items.items() for v in vs for f in walk(v, f"{path}[].{k}")))
        return []

    return walk(payload, "")


FROM_DATA_WARNING = (
    "f_θ was modelled from the private table itself (--model-from-data): the mechanism, its noise scale and the "
    "fields listed in data_dependent depend on the private data, and what they reveal about it is outside the "
    "guarantee; use --population or --model for a release whose public outputs depend on public inputs only"
)
SEEDED_WARNING = (
    "a seeded release is not private: anyone who knows the seed (--seed) can reproduce and remove the noise; "
    "use it for tests and reproduction only"
)


def _stats(result: ReleaseResult) -> list[dict[str, Any]]:
    spec = result.prepared.spec
    std = result.noise.noise_std
    grids = getattr(result.noise, "grids", None) or [result.noise.grid] * len(std)
    std_ = result.prepared.standardization
    spread = std_.spread if std_ is not None else [None] * len(std)
    ivs = result.intervals  # (1 − α) per statistic, from the exact noise law (distpriv.release.intervals)
    disp = result.display
    layout = result.prepared.layout
    if layout is not None:  # vector statistics publish lists, one entry per coordinate (distpriv.statspec)
        return layout_stats(layout, result.values, std, grids, spread, ivs, disp)
    return [{"name": nm, "spec": st, "value": float(v), "noise_std": float(s), "grid": g,
             "spread": None if sp is None else float(sp),
             "noise_to_spread": None if sp is None or not sp > 0 else float(s) / float(sp),
             "interval": iv.to_list(), "interval_level": iv.level, "display": ds}
            for nm, st, v, s, g, sp, iv, ds in zip(spec.names, spec.stats, result.values, std, grids, spread, ivs, disp,
                                                    strict=True)]


def layout_stats(layout: Any, values: Any, std: Any, grids: Any, spread: Any, ivs: Any, disp: Any
                 ) -> list[dict[str, Any]]:
    """Per published statistic of a :class:`~distpriv.statspec.Layout`: a scalar one as before, a vector one
    (histogram, group-by) with ``value``, ``noise_std``, ``interval``, ``grid``, ``spread``,
    ``noise_to_spread`` and ``display`` as lists (one entry per coordinate) and its ``labels``."""
    out = []
    for o, sl in zip(layout.outputs, layout.slices, strict=True):
        rows = []
        for i in range(sl.start, sl.stop):
            sp = spread[i]
            rows.append({"value": float(values[i]), "noise_std": float(std[i]), "grid": grids[i],
                         "spread": None if sp is None else float(sp),
                         "noise_to_spread": None if sp is None or not sp > 0 else float(std[i]) / float(sp),
                         "interval": ivs[i].to_list(), "display": disp[i]})
        entry: dict[str, Any] = {"name": o.name, "spec": o.spec, "kind": o.kind, "linear": o.linear}
        if o.vector:
            entry["labels"] = list(o.labels)
            entry.update({k: [r[k] for r in rows] for k in rows[0]})
        else:
            entry.update(rows[0])
        entry["interval_level"] = ivs[sl.start].level
        out.append(entry)
    return out


def public_payload(result: ReleaseResult) -> dict[str, Any]:
    """The public JSON of a release (see the module docstring)."""
    prep = result.prepared
    spec = prep.spec
    m = prep.modelling
    chosen = result.chosen
    from_data = not m.public
    warnings = ([FROM_DATA_WARNING] if from_data else []) + ([SEEDED_WARNING] if result.randomness == "seeded" else [])
    report: dict[str, Any] = {
        "modelling": {"source": m.source, "n": m.n, "samples_per_theta": m.samples, "input_sha256": m.input_sha256,
                      "note": m.note},
        "chosen": chosen.name,
        "expected_l2_error": chosen.expected_l2_error,
        "correction": chosen.correction,
        "why": chosen.reason,
        "candidates": [c.to_dict() for c in result.selection.candidates],
    }
    if not from_data:
        report["diagnostics"] = result.selection.diagnostics.to_dict()
    out: dict[str, Any] = {
        "mechanism": chosen.name,
        "mechanism_label": chosen.label,
        "guarantee": result.guarantee.to_dict(),
        "statistics": _stats(result),
        "noise": {**result.noise.describe(), "expected_l2_error": chosen.expected_l2_error},
        "randomness": result.randomness,
        "spec": {
            "stats": [{"name": nm, "spec": st} for nm, st in zip(spec.names, spec.stats, strict=True)],
            "protect": str(prep.predicate),
            "pairs": [list(p) for p in spec.pairs],
            "epsilon": spec.epsilon,
            "delta": spec.delta,
            "mechanism": spec.mechanism,
            "calibration": spec.calibration,
        },
        "report": report,
        "data_dependent": [f for f in DATA_DEPENDENT if f != "composition.guarantee" or result.composition]
        if from_data else [],
        "warnings": warnings,
    }

    record = getattr(result.selection, "record", None)
    if record is not None:  # record-level DP from the same noise draw (issue 22), beside the DistP guarantee
        items = list(out.items())
        at = [k for k, _ in items].index("guarantee") + 1
        out = dict([*items[:at], ("record_guarantee", record.to_dict()), *items[at:]])
    if result.composition is not None:
        out["composition"] = result.composition.to_dict()
        rec_comp = result.record_composition
        if rec_comp is not None:  # record-level DP composed over the chain (release/ledger_record.py)
            out["composition"]["record_guarantee"] = rec_comp
    joint = _joint(result)
    if joint is not None:
        out["noise"]["joint_interval"] = joint
    from .intervals import exact_combinations

    combos = exact_combinations(result.noise)
    if combos:  # directions without noise (DirM, EigM, DauM): published exactly up to the grid rounding
        out["noise"]["exact_combinations"] = [[float(c) for c in u] for u in combos]
    if result.gap_profile is not None:
        out["psi"] = result.gap_profile
    out["warnings"] = [*out["warnings"], *coverage_warnings(result)]
    out["provenance"] = provenance(result)
    if from_data:  # derived, not listed by hand (issue 27); with --missing drop the kept count n is the data's
        dropped = ("report.modelling.n", "report.modelling.note", "provenance.spec") if spec.missing == "drop" else ()
        out["data_dependent"] = data_dependent_fields(out, tuple(f for f in PUBLIC_FIELDS if f not in dropped))
    return out


def _joint(result: ReleaseResult) -> dict[str, Any] | None:
    """The joint ellipsoid of Gaussian noise, centred on the published values (its centre is not repeated)."""
    from .intervals import joint_region

    region = joint_region(result.values, result.noise, result.prepared.spec.interval_level)
    if region is None:
        return None
    region.pop("center")
    region["definition"] = "centred on the published values o: " + region["definition"]
    return region


def coverage_warnings(result: ReleaseResult) -> list[str]:
    """Public warnings, from public inputs only, when a public population barely covers the datasets of f_θ.

    At θ the model draws datasets of n records with k = round(θn) protected ones, without replacement from
    the population's N_P protected and N_Q other records. When k = N_P every dataset holds the same protected
    records (and when n − k = N_Q the same others): f_θ then varies only through the other group, and the
    model describes the population's own records rather than datasets with share θ. Computed from the
    population's group counts, n and Ψ (all public); nothing from the private table.
    """
    prep = result.prepared
    if prep.population is None or prep.modelling.source != "population" or prep.modelling.n is None:
        return []
    n = int(prep.modelling.n)
    pos, neg = (int(c) for c in prep.population.summary.moments.counts)
    out = []
    for theta in dict.fromkeys(float(v) for pr in prep.spec.pairs for v in pr):
        k = int(round(theta * n))
        for need, have, who in ((k, pos, f"satisfying {str(prep.predicate)!r}"), (n - k, neg, "others")):
            if need > 0 and need >= have:
                out.append(f"the population cannot supply datasets of n = {n} records at θ = {theta:g} without "
                           f"repeating a group: θ needs {need} records {who} and the population has {have}, so every "
                           "sampled dataset holds all of them and f_θ varies only through the other records; use a "
                           "larger population or a range of θ it covers")
    return out


def public_spec(result: ReleaseResult) -> dict[str, Any]:
    """The full public specification of a release: enough to re-run it on another table (no path, no data).

    Statistics, protected predicate, Ψ (and the grid it was built from), (ε, δ), mechanism, calibration, how
    f_θ was modelled (source, SHA-256 of a public population or model file, n, samples per θ), the reading
    options and the number of earlier releases composed. :func:`rerun_config` turns it into a spec file
    (TOML, the keys of :data:`~distpriv.release.spec.SPEC_KEYS`) that re-runs the release; a command line is a
    rendering of the CLI (``distpriv.cli.command.command_line``), not published by the library.
    """
    prep = result.prepared
    spec = prep.spec
    m = prep.modelling
    grid = None
    if len(spec.pairs) > 1:  # a range is a grid of >= 2 adjacent pairs: one pair never is (no import of .grid)
        from .grid import grid_of

        grid = grid_of(spec.pairs)
    out: dict[str, Any] = {
        "stats": [{"name": nm, "spec": st} for nm, st in zip(spec.names, spec.stats, strict=True)],
        "protect": str(prep.predicate),
        "pairs": [list(p) for p in spec.pairs],
        "range": None if grid is None or grid.steps < 2 else [grid.lo, grid.hi],
        "gap": None if grid is None or grid.steps < 2 else grid.gap,
        "epsilon": spec.epsilon, "delta": spec.delta, "mechanism": spec.mechanism, "calibration": spec.calibration,
        "model": {"source": m.source, "sha256": m.input_sha256, "n": m.n, "samples_per_theta": m.samples},
        "missing": spec.missing, "sep": spec.sep, "encoding": spec.encoding,
        "previous_releases": len(spec.previous), "independent": spec.independent,
    }
    if spec.record_epsilon is not None:  # record-level DP (issue 22): public parameters and declared bounds
        out["record_epsilon"], out["record_delta"] = spec.record_epsilon, spec.record_delta
        out["bounds"] = {c: [lo, hi] for c, lo, hi in spec.bounds}
    return out


def rerun_config(spec: dict[str, Any], data: str = "DATA", population: str = "POP",
                 model: str = "MODEL") -> dict[str, Any]:
    """The spec-file keys (:data:`~distpriv.release.spec.SPEC_KEYS`) that re-run a release from its published
    ``provenance.spec`` (:func:`public_spec`) on the table ``data``, with the public population or model file
    standing for the one whose SHA-256 the spec records.

    Ψ is the grid (``range``, ``gap``) when the spec has one, else its pairs; the datasets per θ are the
    published ones; n (the kept row count of the table, which any declared n must equal) is given only where the
    release had to declare it (a population with ``missing = "drop"``), so the recipe also runs on a table of
    another size.
    Not re-created: the earlier releases of a composition (``previous_releases``: their folders are private).
    """
    mod = spec["model"]
    out: dict[str, Any] = {"data": data}
    stats = spec["stats"]
    if any(s["name"] != s["spec"] for s in stats):
        out["stats"] = {s["name"]: s["spec"] for s in stats}
    else:
        out["stats"] = [s["spec"] for s in stats]
    out["protect"] = spec["protect"]
    if spec["range"] is not None:
        out["range"], out["gap"] = f"{spec['range'][0]!r}:{spec['range'][1]!r}", spec["gap"]
    else:
        out["pairs"] = [list(p) for p in spec["pairs"]]
    out.update(epsilon=spec["epsilon"], delta=spec["delta"], mechanism=spec["mechanism"],
               calibration=spec["calibration"])
    if mod["source"] == "population":
        out["population"] = population
    elif mod["source"] == "model":
        out["model"] = model
    else:
        out["model_from_data"] = True
    if mod["source"] != "model":
        if mod["samples_per_theta"] is not None:
            out["samples"] = int(mod["samples_per_theta"])
        if mod["source"] == "population" and spec["missing"] == "drop" and mod["n"] is not None:
            out["n"] = int(mod["n"])  # declared public by the release (rows dropped: n must be declared)
    if spec.get("record_epsilon") is not None:
        out["record_epsilon"], out["record_delta"] = spec["record_epsilon"], spec["record_delta"]
        out["bounds"] = [f"{c}={lo!r}:{hi!r}" for c, (lo, hi) in spec["bounds"].items()]
    out["missing"] = spec["missing"]
    for key in ("sep", "encoding"):
        if spec[key] is not None:
            out[key] = spec[key]
    return out


def config_toml(config: dict[str, Any]) -> str:
    """``config`` (:func:`rerun_config`) as the text of a TOML spec file that
    :func:`~distpriv.release.spec.load_spec_file` reads back to the same values (strings, numbers, booleans,
    lists and one level of tables; floats by ``repr``, which TOML reads back exactly; characters that do not
    print — controls, direction marks — as ``\\uXXXX`` escapes, so the text is safe to show in a report)."""
    import math

    def string(text: str) -> str:  # a TOML basic string; unprintable characters (controls, bidi marks) escaped
        esc = {'"': '\\"', "\\": "\\\\"}
        return '"' + "".join(esc.get(c) or (c if c.isprintable() else (f"\\u{ord(c):04X}" if ord(c) < 0x10000
                                                                     else f"\\U{ord(c):08X}")) for c in text) + '"'

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
        if isinstance(v, str):
            return string(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{string(str(k))} = {value(x)}" for k, x in v.items()) + "}"
        raise TypeError(f"config: no TOML form for {type(v).__name__}")

    return "".join(f"{k} = {value(v)}\n" for k, v in config.items())


def provenance(result: ReleaseResult) -> dict[str, Any]:
    """``provenance``: the distpriv version, the UTC time, the release id and :func:`public_spec`.

    ``time`` and ``release_id`` are in :data:`MAY_DIFFER` (they differ between any two releases). The published
    ``release_id`` is :attr:`~distpriv.release.core.ReleaseResult.public_id`, not the private ledger's id.
    """
    from .. import __version__

    return {"version": __version__, "time": result.time, "release_id": result.public_id,
            "spec": public_spec(result)}


@dataclass(frozen=True)
class PublicContext:
    """Everything a public report may be computed from.

    ``payload``: :func:`public_payload`; ``modelling``/``selection``/``sensitivities``: the public f_θ model
    and what was computed from it (all ``None`` when f_θ was modelled from the private table); ``seed``: the
    seed derived from the public inputs (for the report's attack simulations).
    """

    payload: dict[str, Any]
    modelling: Modelling | None
    selection: Selection | None
    sensitivities: NDArray[np.float64] | None
    pairs: tuple[tuple[float, float], ...]
    epsilon: float
    delta: float
    calibration: str
    names: tuple[str, ...]
    seed: int
    scale: NDArray[np.float64] | None = None  # the public diagonal D of the unit-free noise (None: not public)

    @property
    def public_model(self) -> bool:
        return self.modelling is not None


def public_context(result: ReleaseResult) -> PublicContext:
    """The :class:`PublicContext` of a release (the private table is not reachable from it)."""
    prep = result.prepared
    spec = prep.spec
    public = prep.modelling.public
    return PublicContext(
        payload=public_payload(result),
        modelling=prep.modelling if public else None,
        selection=result.selection if public else None,
        sensitivities=prep.sensitivities if public else None,
        pairs=tuple(spec.pairs), epsilon=spec.epsilon, delta=spec.delta, calibration=spec.calibration,
        names=tuple(spec.names) if prep.layout is None else tuple(prep.layout.coordinate_names()), seed=prep.seed,
        scale=prep.standardization.scale if public and prep.standardization is not None else None,
    )
