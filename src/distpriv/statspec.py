"""The statistics a release publishes, beyond the linear ones: variances, quantiles, histograms, group-by, ratios.

A published statistic is one or more *coordinates* (a histogram or a group-by
has one per category/group: a vector statistic). Each is computed from the
per-group aggregates of a *base* query of linear statistics
(:class:`distpriv.queries.Query`, the sums S_j = Σ_{r∈D} v_j(r) of the aggregate
pass and of the stratified resampler), except quantiles, whose law under the
model is computed exactly (:mod:`distpriv.quantiles`):

=============================  =========================================  =========
spec                           coordinates (D a dataset of n records)     linear
=============================  =========================================  =========
``mean:x`` ``sum:x``           as in :mod:`distpriv.queries`              yes
``count:P`` ``proportion:P``   as in :mod:`distpriv.queries`              yes
``hist:c``                     #{r : c(r) = a} per level a of c            yes
``hist:x@b0,b1,...,bK``        #{r : b_i <= x(r) < b_{i+1}} (K bins)       yes
``sum:y@by=c``                 Σ y(r)·1[c(r) = g] per group g             yes
``count:P@by=c``               #{r : P(r), c(r) = g} per group g          yes
``mean:y@by=c``                Σ y·1[c = g] / #{c = g} per group g        no
``var:x``                      (Σx² − (Σx)²/n) / (n − 1)                  no
``std:x``                      √var                                       no
``ratio:sum(a)/sum(b)``        Σa / Σb                                    no
``median:x`` ``quantile:x@q``  the lower q-quantile (rank ⌈qn⌉)            no
=============================  =========================================  =========

Levels of a histogram and groups of a group-by come from the public population
(or are declared: ``@by=c:a|b|c``), never from the private table. Each
:class:`Output` says whether it is linear and, for a linear one, the linear
statistic behind each coordinate (:meth:`Output.contributions`), from which
replace-one sensitivities follow (a count moves by at most 1, a sum by the
column's range).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidParameterError, UnknownLabelError
from .queries import (
    KINDS,
    Condition,
    Predicate,
    Query,
    Statistic,
    quote_name,
    split_outside_backticks,
)

#: Kinds added to those of :data:`distpriv.queries.KINDS`.
NEW_KINDS = ("var", "std", "median", "quantile", "hist", "ratio")
#: Most categories of a histogram or groups of a group-by read from a population.
MAX_LEVELS = 1000
_RATIO_RE = re.compile(r"^\s*sum\((.+)\)\s*/\s*sum\((.+)\)\s*$")


def _bad(message: str) -> InvalidParameterError:
    return InvalidParameterError(message, argument="stats")


def _column(text: str, spec: str) -> str:
    text = text.strip()
    if text.startswith("`"):
        if len(text) < 2 or not text.endswith("`"):
            raise _bad(f"unbalanced backticks in {spec!r}")
        return text[1:-1].replace("``", "`")
    if not text:
        raise _bad(f"missing column in {spec!r}")
    return text


@dataclass(frozen=True)
class Request:
    """A statistic spec as written, parsed but not yet resolved against a population.

    ``kind`` is one of :data:`distpriv.queries.KINDS` or :data:`NEW_KINDS` (``median`` is a quantile with
    ``q = 0.5``); ``target`` the column (or the predicate of count/proportion); ``q`` the quantile level;
    ``bins`` the declared histogram edges; ``by`` the group-by column and ``groups`` its declared groups;
    ``ratio`` the numerator and denominator columns.
    """

    text: str
    name: str
    kind: str
    target: str
    q: float | None = None
    bins: tuple[float, ...] | None = None
    by: str | None = None
    groups: tuple[str, ...] | None = None
    ratio: tuple[str, str] | None = None

    @property
    def plain(self) -> bool:
        """A statistic of :mod:`distpriv.queries` (one linear coordinate, no options)."""
        return self.kind in KINDS and self.by is None


def _float(text: str, spec: str, what: str) -> float:
    t = text.strip().lower()
    if t in ("inf", "+inf", "infinity"):
        return math.inf
    if t in ("-inf", "-infinity"):
        return -math.inf
    try:
        v = float(t)
    except ValueError:
        raise _bad(f"{what} {text.strip()!r} in {spec!r} is not a number") from None
    if math.isnan(v):
        raise _bad(f"{what} in {spec!r} must not be NaN")
    return v


def parse_request(text: str, name: str | None = None) -> Request:
    """Parse one statistic spec (module table). Raises a one-line :class:`InvalidParameterError` (argument
    ``stats``) for a quantile level outside (0, 1), bins not strictly increasing and malformed specs."""
    if not isinstance(text, str):
        raise _bad(f"expected a string like 'mean:age', got {type(text).__name__}")
    kind, sep, rest = text.partition(":")
    kind, rest = kind.strip(), rest.strip()
    label = name if name is not None else text
    if not sep or not rest:
        raise _bad(f"cannot parse {text!r}; expected 'kind:target' with kind one of {[*KINDS, *NEW_KINDS]}")
    if kind not in KINDS and kind not in NEW_KINDS:
        raise UnknownLabelError(f"unknown kind {kind!r} in {text!r}; expected one of {[*KINDS, *NEW_KINDS]}",
                                argument="stats")
    parts = split_outside_backticks(rest, "@")
    target, opts = parts[0].strip(), [p.strip() for p in parts[1:]]
    if len(opts) > 1:
        raise _bad(f"at most one '@' option in {text!r}")
    opt = opts[0] if opts else None
    if kind == "ratio":
        m = _RATIO_RE.match(rest)
        if m is None or opt is not None:
            raise _bad(f"cannot parse {text!r}; expected 'ratio:sum(a)/sum(b)'")
        return Request(text, label, kind, rest, ratio=(_column(m.group(1), text), _column(m.group(2), text)))
    if opt is not None and opt.startswith("by="):
        if kind not in ("mean", "sum", "count"):
            raise _bad(f"'@by=' applies to mean, sum and count, not {kind!r} in {text!r}")
        by_text, _, groups_text = opt[3:].partition(":") if not opt[3:].lstrip().startswith("`") else (
            _split_quoted(opt[3:], text))
        by = _column(by_text, text)
        groups = None
        if groups_text.strip():
            groups = tuple(g.strip() for g in groups_text.split("|"))
            if any(not g for g in groups) or len(set(groups)) != len(groups):
                raise _bad(f"groups in {text!r} must be distinct and non-empty, separated by '|'")
        tgt = _column(target, text) if kind != "count" else target
        return Request(text, label, kind, tgt, by=by, groups=groups)
    if kind in ("median", "quantile"):
        if kind == "median":
            if opt is not None:
                raise _bad(f"median takes no option in {text!r} (use quantile:col@q)")
            q = 0.5
        else:
            if opt is None:
                raise _bad(f"quantile needs a level in {text!r}, e.g. 'quantile:age@0.9'")
            q = _float(opt, text, "quantile level")
        if not 0.0 < q < 1.0:
            raise _bad(f"quantile level must lie in (0, 1), got {opt} in {text!r}")
        return Request(text, label, kind, _column(target, text), q=q)
    if kind == "hist":
        bins = None
        if opt is not None:
            bins = tuple(_float(b, text, "bin edge") for b in opt.split(","))
            if len(bins) < 2:
                raise _bad(f"bins in {text!r} need at least two edges, e.g. 'hist:age@0,18,30,50,inf'")
            if any(b >= a for a, b in zip(bins[1:], bins[:-1], strict=True)):
                raise _bad(f"bins must be strictly increasing, got {opt} in {text!r}")
        return Request(text, label, kind, _column(target, text), bins=bins)
    if opt is not None:
        raise _bad(f"{kind!r} takes no '@' option in {text!r}")
    if kind in ("var", "std"):
        return Request(text, label, kind, _column(target, text))
    return Request(text, label, kind, target)


def _split_quoted(text: str, spec: str) -> tuple[str, str, str]:
    parts = split_outside_backticks(text, ":")
    return parts[0], ":", ":".join(parts[1:])


def is_plain(stats: Sequence[str]) -> bool:
    """True when every spec is a statistic of :mod:`distpriv.queries` (the release path of before)."""
    return all(parse_request(s).plain for s in stats)


# --------------------------------------------------------------------------- layout
@dataclass(frozen=True)
class Output:
    """One published statistic: its coordinates and how they are computed from the base sums.

    ``base``: indices into the base query of the linear statistics it reads (``op`` says how);
    ``labels``: one per coordinate (``None`` for a scalar statistic, published as a number);
    ``linear``: every coordinate is one linear statistic of the base query (then
    :meth:`contributions` lists them); ``quantile``: (column, q) of a quantile.
    """

    name: str
    spec: str
    kind: str
    op: str  # "copy", "ratio", "var", "std", "quantile"
    base: tuple[int, ...]
    labels: tuple[str, ...] | None
    linear: bool
    quantile: tuple[str, float] | None = None
    bins: tuple[float, ...] | None = None
    statistics: tuple[Statistic, ...] = field(default=(), repr=False)

    @property
    def dim(self) -> int:
        """Number of coordinates."""
        return 1 if self.labels is None else len(self.labels)

    @property
    def vector(self) -> bool:
        """Published as lists (one entry per coordinate)."""
        return self.labels is not None

    def contributions(self) -> tuple[Statistic, ...]:
        """For a linear statistic, the linear statistic of each coordinate: F_c(D) = s(n) Σ_r v_c(r) with v_c
        its per-record contribution (``kind``/``column``/``predicate`` of :class:`~distpriv.queries.Statistic`;
        ``sumif`` is x·1[predicate]). Raises for a nonlinear one."""
        if not self.linear:
            raise InvalidParameterError(f"{self.spec!r} is not a linear statistic", argument="stats")
        return self.statistics


class Layout:
    """The published coordinates of a list of statistics and the base query of linear statistics they need.

    :meth:`transform` maps base values (F of the base query, shape (..., b)) to the published coordinates
    (..., m), quantile coordinates left NaN (they are filled by :mod:`distpriv.quantiles`).
    """

    def __init__(self, outputs: Sequence[Output], base: Query) -> None:
        self.outputs = tuple(outputs)
        self.base = base
        starts = np.cumsum([0, *(o.dim for o in self.outputs)])
        self.slices = tuple(slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:], strict=True))
        self.dim = int(starts[-1])

    @property
    def linear(self) -> bool:
        """Every published coordinate is linear in the records."""
        return all(o.linear for o in self.outputs)

    @property
    def quantile_coordinates(self) -> list[tuple[int, str, float]]:
        """(coordinate, column, q) of every quantile."""
        return [(sl.start, o.quantile[0], o.quantile[1]) for o, sl in zip(self.outputs, self.slices, strict=True)
                if o.quantile is not None]

    def coordinate_names(self) -> list[str]:
        """``name`` or ``name[label]`` per coordinate."""
        return [o.name if o.labels is None else f"{o.name}[{lab}]" for o in self.outputs for lab in (o.labels or [""])]

    def transform(self, base: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        """Published coordinates from base values F_base (..., b) of datasets of n records (module table).

        A ratio or a group mean over an empty group (denominator 0) is 0.
        """
        b = np.asarray(base, dtype=float)
        out = np.full((*b.shape[:-1], self.dim), np.nan)
        for o, sl in zip(self.outputs, self.slices, strict=True):
            idx = list(o.base)
            if o.op == "copy":
                out[..., sl] = b[..., idx]
            elif o.op == "ratio":
                k = o.dim
                num, den = b[..., idx[:k]], b[..., idx[k:]]
                with np.errstate(divide="ignore", invalid="ignore"):
                    out[..., sl] = np.where(den != 0, num / np.where(den != 0, den, 1.0), 0.0)
            elif o.op in ("var", "std"):
                s1, s2 = b[..., idx[0]], b[..., idx[1]]
                var = np.maximum((s2 - s1 * s1 / n) / max(n - 1, 1), 0.0)
                out[..., sl.start] = var if o.op == "var" else np.sqrt(var)
        return out

    def check_data(self, true_base: NDArray[np.float64], n: int) -> None:
        """Checks on the data's own base values: every value of a binned histogram falls in a bin."""
        for o in self.outputs:
            if o.bins is not None:
                inside = int(round(float(np.sum(np.asarray(true_base)[list(o.base)]))))
                if inside != n:
                    raise _bad(f"some values of the data lie outside every bin of {o.spec!r} (bins are [a, b); "
                               "add edges such as -inf or inf)")  # no count: it is private


def _levels(population: Any, column: str, what: str) -> list[str]:
    """Distinct values of ``column`` in the public population (as text, sorted; numbers numerically)."""
    import narwhals as nw

    from .data.sources import engine_errors

    if population is None:
        raise _bad(f"{what} reads its categories from the public population; give --population or declare them "
                   "(hist:col@edges, @by=col:a|b|c) — never from the private table")
    table = getattr(population, "source", population)  # an opened release table or an engine table
    table.check_columns([column], "stats")
    with engine_errors(table.what, table.backend):
        got = table.frame.select(nw.col(column)).unique().head(MAX_LEVELS + 1).collect()
    values = [v for v in got.get_column(column).to_list() if v is not None and not (isinstance(v, float) and
                                                                                   math.isnan(v))]
    if len(values) > MAX_LEVELS:
        raise _bad(f"{what}: column {column!r} has more than {MAX_LEVELS} values in the population; declare bins "
                   "or groups")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [_num_text(v) for v in sorted(values)]
    return sorted(str(v) for v in values)


def _num_text(v: Any) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)


def _edge(v: float) -> str:
    return _num_text(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def build_layout(stats: Sequence[str], names: Sequence[str], population: Any = None) -> Layout:
    """Resolve the specs against the public population (levels, groups) into a :class:`Layout`.

    ``population``: the opened public population (:class:`distpriv.release.data.SummarizedTable`) or ``None``.
    Raises for a declared group absent from the population and for categories that only the private
    table could supply.
    """
    base: list[Statistic] = []
    index: dict[str, int] = {}

    def add(stat: Statistic) -> int:
        key = f"{stat.kind}:{stat}"
        if key not in index:
            index[key] = len(base)
            base.append(Statistic(f"__base{len(base)}", stat.kind, column=stat.column, predicate=stat.predicate)
                        if stat.kind != "sumif" else Statistic(f"__base{len(base)}", "sumif", column=stat.column,
                                                               predicate=stat.predicate))
        return index[key]

    outputs: list[Output] = []
    for text, name in zip(stats, names, strict=True):
        req = parse_request(text, name)
        if req.plain:
            stat = Statistic.parse(text, name=name)
            outputs.append(Output(name, text, req.kind, "copy", (add(stat),), None, True, statistics=(stat,)))
            continue
        if req.kind in ("median", "quantile"):
            assert req.q is not None
            stat = Statistic(name, "mean", column=req.target)  # reads the column (missing values, range)
            outputs.append(Output(name, text, req.kind, "quantile", (add(stat),), None, False,
                                  quantile=(req.target, req.q)))
        elif req.kind in ("var", "std"):
            i1 = add(Statistic(name, "sum", column=req.target))
            i2 = add(Statistic(name, "sumsq", column=req.target))
            outputs.append(Output(name, text, req.kind, req.kind, (i1, i2), None, False))
        elif req.kind == "ratio":
            assert req.ratio is not None
            a, b = (Statistic(name, "sum", column=c) for c in req.ratio)
            outputs.append(Output(name, text, req.kind, "ratio", (add(a), add(b)), None, False))
        elif req.kind == "hist":
            col = quote_name(req.target)
            if req.bins is None:
                levels = _levels(population, req.target, f"{text!r}")
                preds = [Predicate(Condition(req.target, "=", lev)) for lev in levels]
                labels = tuple(levels)
            else:
                preds, labs = [], []
                for lo, hi in zip(req.bins[:-1], req.bins[1:], strict=True):
                    conds = ([f"{col}>={_edge(lo)}"] if math.isfinite(lo) else []) + (
                        [f"{col}<{_edge(hi)}"] if math.isfinite(hi) else [])
                    preds.append(Predicate(conds or [f"{col}>-inf"]))
                    labs.append(f"[{_edge(lo)}, {_edge(hi)})")
                labels = tuple(labs)
            sts = tuple(Statistic(name, "count", predicate=p) for p in preds)
            outputs.append(Output(name, text, "hist", "copy", tuple(add(s) for s in sts), labels, True,
                                  bins=req.bins, statistics=sts))
        else:  # group-by
            assert req.by is not None
            present = _levels(population, req.by, f"{text!r}") if population is not None else None
            if req.groups is not None:
                groups = list(req.groups)
                if present is not None:
                    absent = [g for g in groups if g not in present]
                    if absent:
                        raise _bad(f"group {absent[0]!r} of {text!r} is not a value of {req.by!r} in the population "
                                   f"(values: {present[:20]})")
            else:
                groups = _levels(population, req.by, f"{text!r}")
            by_conds = [Condition(req.by, "=", g) for g in groups]
            if req.kind == "count":
                sts = tuple(Statistic(name, "count", predicate=Predicate(req.target) & Predicate(c)) for c in by_conds)
                outputs.append(Output(name, text, "count", "copy", tuple(add(s) for s in sts), tuple(groups), True,
                                      statistics=sts))
            else:
                sums = tuple(Statistic(name, "sumif", column=req.target, predicate=Predicate(c)) for c in by_conds)
                if req.kind == "sum":
                    outputs.append(Output(name, text, "sum", "copy", tuple(add(s) for s in sums), tuple(groups),
                                          True, statistics=sums))
                else:
                    cnts = tuple(Statistic(name, "count", predicate=Predicate(c)) for c in by_conds)
                    outputs.append(Output(name, text, "mean", "ratio", tuple(add(s) for s in (*sums, *cnts)),
                                          tuple(groups), False))
    return Layout(outputs, Query(base))
