"""What to release and how: the release specification, from command-line options and/or a TOML file.

A :class:`ReleaseSpec` names the data, the statistics (declarative query of
:mod:`distpriv.queries`), the protected property (a predicate whose share of
records is the secret θ, Chen & Ohrimenko Section 3), the secret pairs Ψ, the
privacy target (ε, δ) and the mechanism (``auto`` or one of
:data:`distpriv.MECHANISMS`). Every field is validated here, before any data is
read or anything is written, and every problem raises a
:class:`distpriv.DistPrivError` whose message names the option.

TOML spec files use the same names as the command-line options::

    data = "adult.csv"
    stats = ["mean:age", "count:sex=Female"]      # or a table {name = "kind:target"}
    protect = "income=>50K"
    range = "0.2:0.5"                             # Ψ = adjacent pairs of the public grid 0.2, 0.3, 0.4, 0.5
    gap = 0.1                                     # (or pairs = [[0.45, 0.55]], or around = 0.5 and gap = 0.1)
    epsilon = 1.0
    delta = 1e-3
    mechanism = "auto"
    population = "population.csv"                 # or model = "model.toml", or model_from_data = true

Command-line options override the file.
"""

from __future__ import annotations

import glob
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._validation import check_delta, check_epsilon
from ..calibration import CALIBRATIONS
from ..data.sources import check_na_values, check_number_format
from ..errors import (
    DataUnavailableError,
    InvalidParameterError,
    InvalidTypeError,
    UnknownLabelError,
    arg,
)
from ..mechanisms import MECHANISMS

if sys.version_info >= (3, 11):  # pragma: no cover - version dependent
    import tomllib
else:  # pragma: no cover - version dependent
    import tomli as tomllib

#: Keys accepted in a TOML spec file.
SPEC_KEYS: tuple[str, ...] = (
    "data", "stats", "protect", "pairs", "around", "gap", "range", "epsilon", "delta", "mechanism",
    "population", "model", "model_from_data", "n", "samples", "calibration", "seed", "previous", "independent",
    "missing", "sep", "encoding", "id",
    "na_values", "decimal", "thousands", "population_sep", "population_encoding", "interval_level",
    "record_epsilon", "record_delta", "bounds",
)

#: Most datasets sampled per θ (``--samples``): the sampled model costs O(samples × n) time and memory, and the
#: W∞ of several statistics a samples² distance matrix (at most distances.MAX_PAIRS = 1e8 entries), so 10,000
#: keeps every release within seconds (docs/assumptions.md).
SAMPLES_MAX = 10_000

#: The one-line error when no source of f_θ is given (or more than one).
SOURCE_HELP = (
    f"give a reference population ({arg('population')} POP), a declared model ({arg('model')} FILE) or "
    f"{arg('model_from_data')} (resamples the private table itself: the noise scale then depends on the data, outside the guarantee)"
)


def parse_pair(text: str) -> tuple[float, float]:
    """``"0.45,0.55"`` -> (0.45, 0.55)."""
    if not isinstance(text, str):
        raise InvalidTypeError(f"expected 'p1,p2', got {text!r}", argument="pairs")
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidParameterError(f"expected two property values 'p1,p2', got {text!r}", argument="pairs")
    try:
        a, b = float(parts[0]), float(parts[1])
    except ValueError:
        raise InvalidParameterError(f"property values must be numbers, got {text!r}", argument="pairs") from None
    return a, b


def pairs_around(around: float, gap: float) -> tuple[tuple[float, float], ...]:
    """``--around P --gap DP``: the single pair (P − DP/2, P + DP/2) (the paper's 0.45 vs 0.55 is P = 0.5, DP = 0.1)."""
    if not math.isfinite(around) or not math.isfinite(gap):
        raise InvalidParameterError(f"{arg('around')}/{arg('gap')}: must be finite numbers, got {around}, {gap}")
    if gap <= 0:
        raise InvalidParameterError(f"must be > 0, got {gap}", argument="gap")
    return ((round(around - gap / 2, 12), round(around + gap / 2, 12)),)


def _check_pairs(pairs: Sequence[Sequence[Any]]) -> tuple[tuple[float, float], ...]:
    out: list[tuple[float, float]] = []
    for item in pairs:
        if isinstance(item, str):
            a, b = parse_pair(item)
        else:
            try:
                a, b = (float(v) for v in item)
            except (TypeError, ValueError):
                raise InvalidParameterError(f"each pair must be two property values, got {item!r}", argument="pairs") from None
        for v in (a, b):
            if not math.isfinite(v) or not 0.0 <= v <= 1.0:
                raise InvalidParameterError(f"property value {v} is outside [0, 1] (a share of records)", argument="pairs")
        if a == b:
            raise InvalidParameterError(f"the two values of a pair must differ, got ({a}, {b})", argument="pairs")
        out.append((a, b))
    if not out:
        raise InvalidParameterError(f"give at least one pair with {arg('pairs')} p1,p2 (or {arg('around')} P {arg('gap')} DP)", argument="pairs")
    return tuple(out)



# --------------------------------------------------------------------------- bounds (record-level DP)
def _bound_number(text: Any, item: Any) -> float:
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"expected COLUMN=LO:HI with numbers LO < HI, got {item!r}",
                                    argument="bounds") from None
    if not math.isfinite(v):
        raise InvalidParameterError(f"bounds must be finite numbers, got {item!r}", argument="bounds")
    return v


def parse_bounds(value: Any) -> tuple[tuple[str, float, float], ...]:
    """Declared public bounds per column: ``["age=17:90"]``, ``{"age": "17:90"}`` or ``{"age": (17, 90)}``.

    Returns ``((column, lo, hi), ...)`` in the order given; lo >= hi, a repeated column or a malformed item
    raise :class:`~distpriv.errors.InvalidParameterError` naming ``bounds``.
    """
    if value is None:
        return ()
    items: list[tuple[str, Any, Any, Any]] = []
    if isinstance(value, Mapping):
        for col, rng in value.items():
            if isinstance(rng, str):
                lo, sep, hi = rng.partition(":")
                if not sep:
                    raise InvalidParameterError(f"expected LO:HI for column {col!r}, got {rng!r}", argument="bounds")
            elif isinstance(rng, Sequence) and len(rng) == 2:
                lo, hi = rng
            else:
                raise InvalidParameterError(f"expected LO:HI or [LO, HI] for column {col!r}, got {rng!r}",
                                            argument="bounds")
            items.append((str(col), lo, hi, f"{col}={rng}"))
    else:
        seq = [value] if isinstance(value, str) else list(value)
        for item in seq:
            if isinstance(item, str):
                col, sep, rng = item.rpartition("=")
                lo, sep2, hi = rng.partition(":")
                if not sep or not sep2 or not col.strip():
                    raise InvalidParameterError(f"expected COLUMN=LO:HI (e.g. age=17:90), got {item!r}",
                                                argument="bounds")
                items.append((col.strip(), lo, hi, item))
            elif isinstance(item, Sequence) and len(item) == 3:
                items.append((str(item[0]), item[1], item[2], item))
            else:
                raise InvalidParameterError(f"expected COLUMN=LO:HI (e.g. age=17:90), got {item!r}", argument="bounds")
    out: list[tuple[str, float, float]] = []
    for col, lo_t, hi_t, item in items:
        low, high = _bound_number(lo_t, item), _bound_number(hi_t, item)
        if not low < high:
            raise InvalidParameterError(f"lower bound must be below the upper bound, got {col}={low:g}:{high:g}",
                                        argument="bounds")
        if any(c == col for c, _, _ in out):
            raise InvalidParameterError(f"column {col!r} is bounded twice", argument="bounds")
        out.append((col, low, high))
    return tuple(out)

@dataclass(frozen=True)
class ReleaseSpec:
    """A validated release request.

    Attributes
    ----------
    data: the table (CSV or Parquet) whose statistics are released.
    stats: statistic specs such as ``"mean:age"``, ``"count:sex=Female"`` (names default to the spec).
    names: display names of the statistics (same length as ``stats``).
    protect: predicate whose share of records is the secret property (``"income=>50K"``).
    pairs: Ψ, unordered pairs of property values in [0, 1].
    epsilon, delta: the privacy target.
    mechanism: ``"auto"`` or a name of :data:`distpriv.MECHANISMS`.
    population: reference population (public) from which f_θ is modelled; or
    model: a declared model file (per-θ means and covariances, :mod:`distpriv.release.declared`); or
    model_from_data: model f_θ by resampling the data itself (the noise then depends on the private data).
        Exactly one of the three.
    n: records per modelled dataset (default: the number of rows of the data; treated as public).
    samples: datasets sampled per θ to estimate f_θ.
    calibration: ``"exact"`` or ``"classic"``.
    seed: ``None`` (default): the noise comes from the operating system's entropy. An integer seeds the
        noise for tests and reproduction only — a seeded release is not private.
    previous: ``--out`` folders of earlier releases (their private ledgers) to compose with.
    independent: the user asserts the data of this release and of ``previous`` are independently sampled.
    id: a column identifying records (``--id``); rows are then compared with earlier releases on it alone. Needed
        with ``independent`` when the shared columns do not identify records (:mod:`distpriv.release.fingerprints`).
    population_frame: a population frame (pandas, Polars, DuckDB, Dask, PySpark) instead of ``population``.
    missing: ``"error"`` (default: refuse missing values in a used column, naming it and the count) or
        ``"drop"`` (drop those rows; n is then the number of rows kept).
    sep, encoding: CSV delimiter (one character) and encoding (utf-8, utf-16, latin-1) of every CSV input.
    na_values: CSV cells read as missing in every CSV input (default ``NA``, ``N/A``, ``NaN``, ``nan``, ``null``,
        ``NULL``; an empty cell is always missing).
    decimal, thousands: number format of every CSV input (``','`` and ``'.'`` for ``"3.250,5"``).
    population_sep, population_encoding: the population's delimiter and encoding when they differ.
    interval_level: 1 − α of the per-statistic intervals (:mod:`distpriv.release.intervals`), default 0.95.
    record_epsilon, record_delta: also (E, D)-differential privacy for one record replaced, from the same noise
        draw (:mod:`distpriv.release.record`); needs ``bounds`` for every column a mean/sum reads.
    bounds: declared public bounds ``((column, lo, hi), ...)`` (or ``["age=17:90"]``); values outside are clamped.

    ``data`` and ``population`` may be globs (``"logs/*.parquet"``): files are scanned lazily.
    """

    data: Path | None
    stats: tuple[str, ...]
    protect: str
    pairs: tuple[tuple[float, float], ...]
    epsilon: float
    delta: float
    mechanism: str = "auto"
    names: tuple[str, ...] = ()
    population: Path | None = None
    model: Path | None = None
    model_from_data: bool = False
    n: int | None = None
    samples: int = 1000
    calibration: str = "exact"
    seed: int | None = None
    previous: tuple[Path, ...] = field(default_factory=tuple)
    independent: bool = False
    population_frame: Any = field(default=None, compare=False, repr=False)
    missing: str = "error"
    sep: str | None = None
    encoding: str | None = None
    id: str | None = None
    na_values: tuple[str, ...] | None = None
    decimal: str | None = None
    thousands: str | None = None
    population_sep: str | None = None
    population_encoding: str | None = None
    interval_level: float = 0.95
    record_epsilon: float | None = None
    record_delta: float | None = None
    bounds: tuple[tuple[str, float, float], ...] = ()

    def __post_init__(self) -> None:
        if not self.stats:
            raise InvalidParameterError(f"give at least one statistic, e.g. {arg('stats')} mean:age", argument="stats")
        if not self.names:
            object.__setattr__(self, "names", tuple(self.stats))
        if len(self.names) != len(self.stats):
            raise InvalidParameterError("names and statistics differ in length", argument="stats")
        from ..statspec import parse_request

        for text in self.stats:  # quantile levels, bins, options: refused before anything is read
            parse_request(text)
        if not isinstance(self.protect, str) or not self.protect.strip():
            raise InvalidParameterError(f"give the protected predicate, e.g. {arg('protect')} 'income=>50K'", argument="protect")
        object.__setattr__(self, "pairs", _check_pairs(self.pairs))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", check_delta(self.delta, "delta"))
        if self.mechanism != "auto" and self.mechanism not in MECHANISMS:
            raise UnknownLabelError(
                f"unknown mechanism {self.mechanism!r}; expected 'auto' or one of {list(MECHANISMS)}", argument="mechanism"
            )
        if self.calibration not in CALIBRATIONS:
            raise UnknownLabelError(f"expected one of {list(CALIBRATIONS)}, got {self.calibration!r}", argument="calibration")
        if self.n is not None and (isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1):
            raise InvalidParameterError(f"must be a positive integer, got {self.n!r}", argument="n")
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 20:
            raise InvalidParameterError(f"must be an integer >= 20, got {self.samples!r}", argument="samples")
        if self.samples > SAMPLES_MAX:
            raise InvalidParameterError(f"must be <= {SAMPLES_MAX:,} (bounded work; docs/assumptions.md), "
                                        f"got {self.samples:,}", argument="samples")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0):
            raise InvalidParameterError(f"must be a non-negative integer, got {self.seed!r}", argument="seed")
        if not isinstance(self.model_from_data, bool):
            raise InvalidTypeError(f"expected true or false, got {self.model_from_data!r}", argument="model_from_data")
        pop = self.population if self.population is not None else self.population_frame
        sources = [k for k, v in (("population", pop), ("model", self.model),
                                  ("model_from_data", self.model_from_data or None)) if v is not None]
        if not sources:
            raise InvalidParameterError(f"f_θ needs a model of the data: {SOURCE_HELP}", argument="population")
        if len(sources) > 1:
            raise InvalidParameterError(f"give only one of {arg('population')}, {arg('model')} and {arg('model_from_data')}",
                                        argument=sources[1])
        if self.model is not None and self.n is not None and self.record_epsilon is None:
            # with record DP the public n gives the replace-one sensitivities of means and proportions
            raise InvalidParameterError(f"not used with {arg('model')} (the declared model fixes f_θ)", argument="n")
        if self.missing not in ("error", "drop"):
            raise UnknownLabelError(f"expected 'error' or 'drop', got {self.missing!r}", argument="missing")
        from .intervals import check_level

        object.__setattr__(self, "interval_level", check_level(self.interval_level, "interval_level"))
        if self.sep is not None and (not isinstance(self.sep, str) or len(self.sep) != 1):
            raise InvalidParameterError(f"expected a single character such as ';', got {self.sep!r}", argument="sep")
        if self.encoding is not None and (not isinstance(self.encoding, str) or not self.encoding):
            raise InvalidParameterError(f"expected an encoding name such as latin-1, got {self.encoding!r}", argument="encoding")
        if self.id is not None and (not isinstance(self.id, str) or not self.id.strip()):
            raise InvalidParameterError(f"expected a column name, got {self.id!r}", argument="id")
        if self.population_sep is not None and (not isinstance(self.population_sep, str)
                                                or len(self.population_sep) != 1):
            raise InvalidParameterError(f"expected a single character such as ';', got "
                                        f"{self.population_sep!r}", argument="population_sep")
        if self.population_encoding is not None and (not isinstance(self.population_encoding, str)
                                                     or not self.population_encoding):
            raise InvalidParameterError(f"expected an encoding name such as latin-1, got "
                                        f"{self.population_encoding!r}", argument="population_encoding")
        if self.na_values is not None:
            object.__setattr__(self, "na_values", check_na_values(self.na_values))
        check_number_format(self.decimal, self.thousands)
        for p, what in ((self.data, "data"), (self.population, "population"), (self.model, "model")):
            if p is not None and what != "model" and glob.has_magic(str(p)):
                continue  # a glob: open_table reports one matching nothing
            if p is not None and not Path(p).is_file():
                raise DataUnavailableError(f"file not found: {p}", argument=what)
        self._check_record()
        for p in self.previous:
            if Path(p).is_file():
                raise InvalidParameterError(
                    f"{p} is a file; give the {arg('out')} folder of an earlier release (it holds the private ledger)", argument="previous"
                )
            if not Path(p).is_dir():
                raise DataUnavailableError(f"folder not found: {p}", argument="previous")

    def _check_record(self) -> None:
        """Record-level DP (issue 22): E and D together, declared bounds, a noise law not read from the table."""
        object.__setattr__(self, "bounds", parse_bounds(self.bounds))
        if (self.record_epsilon is None) != (self.record_delta is None):
            missing = "record_delta" if self.record_delta is None else "record_epsilon"
            raise InvalidParameterError("record-level DP needs both record_epsilon and record_delta",
                                        argument=missing)
        if self.record_epsilon is None:
            if self.bounds:
                raise InvalidParameterError("declared bounds are used by record-level DP only; give record_epsilon "
                                            "and record_delta too", argument="bounds")
            return
        for name, check in (("record_epsilon", check_epsilon), ("record_delta", check_delta)):
            try:
                object.__setattr__(self, name, check(getattr(self, name), name))
            except InvalidParameterError as exc:
                raise InvalidParameterError(str(exc).removeprefix(f"{name}: "), argument=name) from None
        if self.model_from_data:
            raise InvalidParameterError(
                "record-level DP needs a noise law not computed from the private table; model f_θ from a public "
                "population or a declared model instead", argument="model_from_data")
        if self.missing != "error":
            raise InvalidParameterError("record-level DP needs missing='error' (dropping rows would make n depend on "
                                        "one record)", argument="missing")
        if self.calibration != "exact":
            raise InvalidParameterError("record-level DP is calibrated exactly; use calibration='exact'",
                                        argument="calibration")
        from .record import check_record_specs

        check_record_specs(self.stats)

    @property
    def labels(self) -> tuple[float, ...]:
        """The θ labels (property values) in Ψ, in order of first appearance."""
        return tuple(dict.fromkeys(v for pr in self.pairs for v in pr))

    @property
    def source(self) -> str:
        """Where f_θ comes from: ``"population"``, ``"model"`` or ``"data"``."""
        if self.population is not None or self.population_frame is not None:
            return "population"
        return "model" if self.model is not None else "data"

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly view (paths as strings). Holds local paths: for the curator, not for publication."""
        return {
            "data": None if self.data is None else str(self.data),
            "stats": dict(zip(self.names, self.stats, strict=True)),
            "protect": self.protect,
            "pairs": [list(p) for p in self.pairs],
            "epsilon": self.epsilon,
            "delta": self.delta,
            "mechanism": self.mechanism,
            "population": None if self.population is None else str(self.population),
            "model": None if self.model is None else str(self.model),
            "model_from_data": self.model_from_data,
            "n": self.n,
            "samples": self.samples,
            "calibration": self.calibration,
            "seed": self.seed,
            "previous": [str(p) for p in self.previous],
            "independent": self.independent,
            "missing": self.missing,
            "sep": self.sep,
            "encoding": self.encoding,
            "id": self.id,
            "na_values": None if self.na_values is None else list(self.na_values),
            "decimal": self.decimal,
            "thousands": self.thousands,
            "population_sep": self.population_sep,
            "population_encoding": self.population_encoding,
            "record_epsilon": self.record_epsilon,
            "record_delta": self.record_delta,
            "bounds": {c: [lo, hi] for c, lo, hi in self.bounds},
        }


def load_spec_file(path: str | Path) -> dict[str, Any]:
    """Read a TOML spec file into a dict of known keys (relative paths resolved against the file's folder)."""
    p = Path(path)
    if not p.is_file():
        raise DataUnavailableError(f"file not found: {p}", argument="config")
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        msg = str(exc).replace("\n", " ")
        raise InvalidParameterError(f"malformed TOML in {p}: {msg}", argument="config") from None
    unknown = sorted(set(raw) - set(SPEC_KEYS))
    if unknown:
        raise InvalidParameterError(f"unknown key {unknown[0]!r} in {p}; allowed keys are {list(SPEC_KEYS)}", argument="config")
    out: dict[str, Any] = dict(raw)
    base = p.resolve().parent
    for key in ("data", "population", "model"):
        if key in out:
            if not isinstance(out[key], str):
                raise InvalidTypeError(f"{key} must be a file path string in {p}", argument="config")
            q = Path(out[key])
            out[key] = q if q.is_absolute() else base / q
    if "previous" in out:
        prev = out["previous"]
        if isinstance(prev, str):
            prev = [prev]
        if not isinstance(prev, list) or not all(isinstance(x, str) for x in prev):
            raise InvalidTypeError(f"previous must be a list of folder paths in {p}", argument="config")
        out["previous"] = [Path(x) if Path(x).is_absolute() else base / x for x in prev]
    if "stats" in out:
        stats = out["stats"]
        if isinstance(stats, Mapping):
            if not all(isinstance(v, str) for v in stats.values()):
                raise InvalidTypeError(f"stats values must be strings like 'mean:age' in {p}", argument="config")
            out["stats"] = [str(v) for v in stats.values()]
            out["names"] = [str(k) for k in stats]
        elif isinstance(stats, list) and all(isinstance(x, str) for x in stats):
            out["stats"] = list(stats)
        else:
            raise InvalidTypeError(f"stats must be a list of strings or a table of name = 'kind:target' in {p}", argument="config")
    if "pairs" in out:
        pairs = out["pairs"]
        if not isinstance(pairs, list):
            raise InvalidTypeError(f"pairs must be a list of [p1, p2] in {p}", argument="config")
    for key in ("record_epsilon", "record_delta"):
        if key in out and (isinstance(out[key], bool) or not isinstance(out[key], (int, float))):
            raise InvalidTypeError(f"{key} must be a number in {p}, got {out[key]!r}", argument="config")
    if "bounds" in out and not isinstance(out["bounds"], (Mapping, list)):
        raise InvalidTypeError(f"bounds must be a table {{age = \"17:90\"}} or a list of 'col=lo:hi' in {p}",
                               argument="config")
    for key in ("epsilon", "delta", "around", "gap"):
        if key in out and (isinstance(out[key], bool) or not isinstance(out[key], (int, float))):
            raise InvalidTypeError(f"{key} must be a number in {p}, got {out[key]!r}", argument="config")
    for key in ("n", "samples", "seed"):
        if key in out and (isinstance(out[key], bool) or not isinstance(out[key], int)):
            raise InvalidTypeError(f"{key} must be an integer in {p}, got {out[key]!r}", argument="config")
    if "na_values" in out and isinstance(out["na_values"], list):
        out["na_values"] = tuple(str(v) for v in out["na_values"])
    for key in ("protect", "mechanism", "calibration", "missing", "sep", "encoding", "id", "decimal", "thousands",
                "population_sep", "population_encoding"):
        if key in out and not isinstance(out[key], str):
            raise InvalidTypeError(f"{key} must be a string in {p}, got {out[key]!r}", argument="config")
    for key in ("independent", "model_from_data"):
        if key in out and not isinstance(out[key], bool):
            raise InvalidTypeError(f"{key} must be true or false in {p}", argument="config")
    return out


def _range_pairs(merged: dict[str, Any], cfg: dict[str, Any], *, range: str | None,  # noqa: A002
                 pairs: Sequence[str] | None, around: float | None, gap: float | None) -> bool:
    """``--range LO:HI --gap G`` (or TOML ``range`` and ``gap``): Ψ = the adjacent pairs of the public grid.

    The command line wins over the file: ``--pairs`` or ``--around`` replace a file's ``range``, and
    ``--range`` replaces a file's ``pairs``/``around``. Sets ``merged["pairs"]`` (and removes the keys used);
    returns whether the range defines Ψ.
    """
    from .grid import grid, parse_range

    if range is None:  # from the file only
        if pairs or around is not None:
            merged.pop("range", None)
            if pairs:
                merged.pop("gap", None)
            return False
        if "pairs" in cfg or "around" in cfg:
            raise InvalidParameterError("give one of pairs, around/gap and range/gap, not several", argument="config")
        text: Any = merged.pop("range")
        g = merged.pop("gap", None) if gap is None else gap
    else:
        if pairs:
            raise InvalidParameterError(f"give one of {arg('pairs')}, {arg('around')}/{arg('gap')} and {arg('range')}/{arg('gap')}", argument="range")
        if around is not None:
            raise InvalidParameterError(f"give one of {arg('around')}/{arg('gap')} and {arg('range')}/{arg('gap')}", argument="range")
        text, g = range, (gap if gap is not None else merged.get("gap"))
        for key in ("pairs", "around", "range", "gap"):
            merged.pop(key, None)
    if g is None:
        raise InvalidParameterError(f"give the grid step with {arg('gap')} G", argument="range")
    lo, hi = parse_range(text)
    merged["pairs"] = list(grid(lo, hi, g))
    return True


def build_spec(
    *,
    data: str | Path | None,
    stats: Sequence[str] | None,
    protect: str | None,
    pairs: Sequence[str] | None,
    around: float | None,
    gap: float | None,
    epsilon: float | None,
    delta: float | None,
    mechanism: str | None,
    population: str | Path | None,
    config: str | Path | None,
    model: str | Path | None = None,
    model_from_data: bool | None = None,
    n: int | None = None,
    samples: int | None = None,
    calibration: str | None = None,
    seed: int | None = None,
    previous: Sequence[str | Path] | None = None,
    independent: bool | None = None,
    missing: str | None = None,
    sep: str | None = None,
    encoding: str | None = None,
    id: str | None = None,  # noqa: A002 - the --id option
    na_values: str | Sequence[str] | None = None,
    decimal: str | None = None,
    thousands: str | None = None,
    population_sep: str | None = None,
    population_encoding: str | None = None,
    interval_level: float | None = None,
    range: str | None = None,  # noqa: A002 - the option's name
    record_epsilon: float | None = None,
    record_delta: float | None = None,
    bounds: Sequence[str] | None = None,
) -> ReleaseSpec:
    """Merge a TOML spec file (if any) with command-line options (which win) into a :class:`ReleaseSpec`."""
    cfg = load_spec_file(config) if config is not None else {}
    merged: dict[str, Any] = dict(cfg)
    cli: dict[str, Any] = {
        "data": None if data is None else Path(data),
        "stats": list(stats) if stats else None,
        "protect": protect,
        "epsilon": epsilon,
        "delta": delta,
        "mechanism": mechanism,
        "population": None if population is None else Path(population),
        "model": None if model is None else Path(model),
        "model_from_data": model_from_data,
        "n": n,
        "samples": samples,
        "calibration": calibration,
        "seed": seed,
        "previous": [Path(p) for p in previous] if previous else None,
        "independent": independent,
        "missing": missing,
        "sep": sep,
        "encoding": encoding,
        "id": id,
        "na_values": na_values,
        "decimal": decimal,
        "thousands": thousands,
        "population_sep": population_sep,
        "population_encoding": population_encoding,
        "interval_level": interval_level,
        "record_epsilon": record_epsilon,
        "record_delta": record_delta,
        "bounds": list(bounds) if bounds else None,
    }
    for k, v in cli.items():
        if v is not None:
            merged[k] = v
            if k == "stats":
                merged.pop("names", None)
    if pairs:
        merged["pairs"] = [parse_pair(p) for p in pairs]
        merged.pop("around", None)
        merged.pop("gap", None)
    by_range = (range is not None or merged.get("range") is not None) and _range_pairs(
        merged, cfg, range=range, pairs=pairs, around=around, gap=gap)
    if not by_range and (around is not None or gap is not None):
        merged["around"], merged["gap"] = around, gap
        if pairs:
            raise InvalidParameterError(f"{arg('pairs')} and {arg('around')}/{arg('gap')}: give one or the other")
    if not by_range and (merged.get("around") is not None or merged.get("gap") is not None):
        if merged.get("around") is None or merged.get("gap") is None:
            raise InvalidParameterError(f"{arg('around')}/{arg('gap')}: give both {arg('around')} P and {arg('gap')} DP")
        if "pairs" in cfg and not pairs and around is None:
            raise InvalidParameterError("give either pairs or around/gap, not both", argument="config")
        merged["pairs"] = pairs_around(float(merged.pop("around")), float(merged.pop("gap")))
    absent = [k for k in ("data", "stats", "protect", "pairs", "epsilon", "delta") if merged.get(k) is None]
    if absent:
        raise InvalidParameterError(f"missing (give it on the command line or in {arg('config')})",
                                    argument=absent[0])
    kwargs = {k: v for k, v in merged.items() if k in {f for f in ReleaseSpec.__dataclass_fields__}}
    kwargs["stats"] = tuple(kwargs["stats"])
    if "names" in kwargs:
        kwargs["names"] = tuple(kwargs["names"])
    kwargs["previous"] = tuple(kwargs.get("previous") or ())
    kwargs["independent"] = bool(kwargs.get("independent") or False)
    kwargs["model_from_data"] = bool(kwargs.get("model_from_data") or False)
    if "bounds" in kwargs:
        kwargs["bounds"] = parse_bounds(kwargs["bounds"])
    return ReleaseSpec(**kwargs)
