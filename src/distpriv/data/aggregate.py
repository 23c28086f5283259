"""One aggregate pass over a table: per-group moments, ranges, missing values, true statistics.

For a query F of linear statistics (F_j(D) = s_j(n) Σ_{r∈D} v_j(r),
:mod:`distpriv.queries`) and a protected predicate, the engine computes per
group g ∈ {P (predicate true), Q (the rest)}, over complete rows:

* N_g = the number of rows,
* Σ v_j, min v_j, max v_j for every statistic j,
* Σ v_j v_l for every pair j ≤ l,

plus the number of incomplete rows (a null or NaN in a used column). These are
simple sums of per-row expressions, grouped by two boolean keys (the group flag
and "row complete"), so every engine runs them as a single streaming
``GROUP BY`` (:func:`summarize`), and only a few hundred numbers come back to
Python. Only when some row is incomplete does a second, filtered pass count the
missing cells of every used column.

Numerics. The centred scatter Σ (v − a)(v − a)ᵀ = Σ v vᵀ − N a aᵀ loses digits
when |a_j| ≫ sd_j. With κ_j = (Σ v_j² / N) / S_jj the relative error of S_jj is
about κ_j times that of the sums, so when some κ_j exceeds :data:`KAPPA_MAX` a
second pass sums the shifted values v − a_g with the first pass's group means
(then κ ≈ 1). A column that is constant within a group (min = max) gets an
exactly zero variance and no second pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from .._validation import check_choice, check_int
from ..errors import EngineError, InvalidParameterError
from ..moments import GroupMoments
from ..queries import Predicate, Query, as_predicate, as_query
from .expressions import check_names, contribution_expr, missing_expr, predicate_expr, used_columns
from .sources import Table, engine_errors, list_preview, open_table

#: Largest tolerated ratio (Σv²/N)/S before the centred second pass (≈ 3 of 16 digits lost at most).
KAPPA_MAX = 1e3
#: Missing-value policies: refuse the table, or drop rows with a missing used cell.
MISSING_POLICIES = ("error", "drop")

G, OK, N = "__dp_g", "__dp_ok", "__dp_n"


def _v(j: int) -> str:
    return f"__dp_v{j}"


def _m(i: int) -> str:
    return f"__dp_m{i}"


@dataclass(frozen=True)
class ContributionFrame:
    """A table with the per-row columns of a query added (names in :attr:`contributions`)."""

    table: Table
    query: Query
    predicate: Predicate
    used: list[str]
    frame: nw.LazyFrame[Any]  # used columns + G (bool), OK (bool), v_j (Float64), m_i (Int64)

    @property
    def contributions(self) -> list[str]:
        return [_v(j) for j in range(self.query.dim)]

    @property
    def missing_columns(self) -> list[str]:
        return [_m(i) for i in range(len(self.used))]


def contribution_frame(
    table: Table,
    query: Query,
    protect: Predicate,
    *,
    frame: nw.LazyFrame[Any] | None = None,
    keep: Sequence[str] = (),
) -> ContributionFrame:
    """The used columns (and ``keep``) plus the group flag, the completeness flag, the contributions v_j
    and the missing-value indicators.

    ``frame`` replaces ``table.frame`` (e.g. the table with a random key column added).
    """
    used = used_columns(query, protect)
    table.check_columns(list(protect.columns), "protect")
    table.check_columns([c for c in used if c not in protect.columns], "stats")
    names = [G, OK, *(_v(j) for j in range(query.dim)), *(_m(i) for i in range(len(used)))]
    check_names(names, table)
    schema = table.schema
    flag = predicate_expr(protect, table, what="protect")
    contribs = [contribution_expr(s, table) for s in query.statistics]
    missing = [missing_expr(c, schema[c]) for c in used]
    complete = ~missing[0]
    for e in missing[1:]:
        complete = complete & ~e
    base = (table.frame if frame is None else frame).select(*used, *keep)  # only what the pass reads
    lf = base.with_columns(
        flag.fill_null(False).alias(G),
        complete.alias(OK),
        *(e.alias(_v(j)) for j, e in enumerate(contribs)),
        *(e.cast(nw.Int64).alias(_m(i)) for i, e in enumerate(missing)),
    )
    return ContributionFrame(table, query, protect, used, lf)


@dataclass(frozen=True)
class TableSummary:
    """What one aggregate pass knows about a table (see the module docstring).

    Attributes
    ----------
    moments:
        Per-group aggregates of the complete rows (:class:`distpriv.moments.GroupMoments`).
    rows:
        Rows read, complete or not.
    dropped:
        Rows dropped for a missing used cell (``missing="drop"``; 0 otherwise).
    missing:
        Used column -> number of rows where it is missing (null or NaN).
    ranges:
        Column of each mean/sum statistic -> (min, max) over the complete rows.
    passes:
        Aggregate passes run over the table (1, or 2 when re-centring was needed).
    """

    moments: GroupMoments
    rows: int
    dropped: int
    missing: dict[str, int]
    ranges: dict[str, tuple[float, float]]
    passes: int

    @property
    def query(self) -> Query:
        return self.moments.query

    @property
    def kept(self) -> int:
        """Complete rows the moments are computed from."""
        return self.moments.rows

    @property
    def values(self) -> NDArray[np.float64]:
        """The true statistics F of the table (over the complete rows)."""
        return self.moments.statistics()

    def record_sensitivities(self, n: int) -> NDArray[np.float64]:
        """Per-record sensitivities of F for datasets of n records: range/n (mean), range (sum), 1 (count),
        1/n (proportion) — as :meth:`distpriv.queries.Query.record_sensitivities`, from the pushed-down ranges."""
        size = check_int(n, "n", minimum=1)
        out = []
        for stat in self.query.statistics:
            if stat.column is None:
                out.append(1.0 if stat.kind == "count" else 1.0 / size)
            else:
                lo, hi = self.ranges[stat.column]
                out.append((hi - lo) / size if stat.kind == "mean" else hi - lo)
        return np.asarray(out, dtype=float)


def _rows(frame: Any, what: str, backend: str) -> list[dict[str, Any]]:
    with engine_errors(what, backend):
        if backend == "duckdb":  # DuckDB's own fetch of the few result rows: no pyarrow import (~0.3 s, issue 26)
            rel = nw.to_native(frame)
            names = list(rel.columns)
            return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]
        out = frame.collect()
        return list(out.rows(named=True))


def _pairs(m: int) -> list[tuple[int, int]]:
    return [(j, k) for j in range(m) for k in range(j, m)]


#: One aggregate of a pass: (alias, operation, column): ``("__dp_n", "len", None)`` or ``(alias, "sum" | "min" |
#: "max", column)``.
Aggregate = tuple[str, str, str | None]


def _aggregate_expr(agg: Aggregate) -> nw.Expr:
    alias, op, col = agg
    if op == "len":
        return nw.len().alias(alias)
    expr = nw.col(str(col))
    return (expr.sum() if op == "sum" else expr.min() if op == "min" else expr.max()).alias(alias)


def _products_pass(
    prep: ContributionFrame,
    frame: nw.LazyFrame[Any],
    keys: list[str],
    pairs: Sequence[tuple[int, int]],
    extra: Sequence[Aggregate],
) -> list[dict[str, Any]]:
    """group_by(keys) of Σ v_j v_l for ``pairs`` plus ``extra`` aggregates.

    On Dask, one pandas function per partition (:func:`_partial_products`) and a combine of the partial rows on the
    client: as a Dask expression the products are one task per pair and partition (the pairs share their input
    columns, which stops Dask's blockwise fusion; 190 products were ~10 s CPU for 2,500 rows, issue 26)."""
    if prep.table.backend == "dask":
        return _dask_products_pass(frame, keys, pairs, extra, prep.table.what)
    prods = [(nw.col(_v(j)) * nw.col(_v(k))).alias(f"__dp_p{j}_{k}") for j, k in pairs]
    lf = frame.with_columns(*prods) if prods else frame
    aggs = [*(_aggregate_expr(a) for a in extra), *(nw.col(f"__dp_p{j}_{k}").sum() for j, k in pairs)]
    return _rows(lf.group_by(*keys).agg(*aggs), prep.table.what, prep.table.backend)


def _partial_products(pdf: Any, keys: list[str], pairs: list[tuple[int, int]], extra: list[Aggregate]) -> Any:
    """One pandas partition's group_by(keys) of ``extra`` and of Σ v_j v_l (nulls and NaN skipped, as pandas' and
    Dask's sums, minima and maxima skip them; an empty sum is 0)."""
    import pandas as pd

    idx = pd.MultiIndex.from_frame(pdf[keys].astype(bool)) if len(pdf) else None
    out: dict[str, Any] = {}
    if idx is not None:
        codes, uniques = pd.factorize(idx)
        groups = [codes == g for g in range(len(uniques))]
        names = list(uniques)
    else:
        groups, names = [], []
    cols = sorted({c for p in pairs for c in p})
    mat = {j: pdf[_v(j)].to_numpy(dtype=float, na_value=np.nan) for j in cols}
    for alias, op, col in extra:
        if op == "len":
            out[alias] = [int(m.sum()) for m in groups]
            continue
        x = pdf[str(col)].to_numpy(dtype=float, na_value=np.nan)
        vals = []
        for m in groups:
            xs = x[m]
            if op == "sum":
                vals.append(float(np.nansum(xs)))
            elif np.all(np.isnan(xs)):
                vals.append(np.nan)
            else:
                vals.append(float(np.nanmin(xs) if op == "min" else np.nanmax(xs)))
        out[alias] = vals
    for j, k in pairs:
        prod = mat[j] * mat[k]
        out[f"__dp_p{j}_{k}"] = [float(np.nansum(prod[m])) for m in groups]
    frame = pd.DataFrame(out, index=range(len(names)))
    for i, key in enumerate(keys):
        frame.insert(i, key, [bool(n[i]) for n in names])
    return frame


def _dask_products_pass(frame: nw.LazyFrame[Any], keys: list[str], pairs: Sequence[tuple[int, int]],
                        extra: Sequence[Aggregate], what: str) -> list[dict[str, Any]]:
    import pandas as pd

    native = nw.to_native(frame)
    pair_list, extra_list = [(int(j), int(k)) for j, k in pairs], list(extra)
    meta = _partial_products(native._meta, keys, pair_list, extra_list)  # the empty frame of those columns
    with engine_errors(what, "dask"):
        parts = native.map_partitions(_partial_products, keys, pair_list, extra_list, meta=meta).compute()
    ops = {alias: ("sum" if op == "len" else op) for alias, op, _ in extra_list}
    ops.update({f"__dp_p{j}_{k}": "sum" for j, k in pair_list})
    combined = pd.DataFrame(parts).groupby(keys, sort=False).agg(ops).reset_index()
    rows = combined.to_dict("records")
    for r in rows:
        for alias, op, _ in extra_list:
            if op == "len":
                r[alias] = int(r[alias])
    return rows


def _cross(rows: list[dict[str, Any]], m: int, pairs: Sequence[tuple[int, int]], out: NDArray[np.float64]) -> None:
    for row in rows:
        g = 0 if row[G] else 1
        for j, k in pairs:
            out[g, j, k] = out[g, k, j] = float(row[f"__dp_p{j}_{k}"] or 0.0)


def summarize(
    data: Any,
    query: Query | Sequence[str],
    protect: Predicate | str,
    *,
    missing: str = "error",
    max_products: int = 2000,
    **open_options: Any,
) -> TableSummary:
    """One aggregate pass over ``data`` (a :class:`Table` or anything :func:`open_table` accepts).

    Parameters
    ----------
    query:
        The statistics F (``["mean:age", "count:sex=Female"]`` or a :class:`Query`).
    protect:
        The protected predicate defining group P (``"income=>50K"``).
    missing:
        ``"error"`` (default): refuse a table with a missing cell (null or NaN) in a used column;
        ``"drop"``: drop those rows (counted in :attr:`TableSummary.dropped`).
    max_products:
        Cross-products per ``GROUP BY`` (more statistics split them over several passes).
    open_options:
        Passed to :func:`open_table` (``what``, ``sep``, ``encoding``, ...).

    Raises
    ------
    InvalidParameterError
        Unknown or wrongly typed columns, missing values with ``missing="error"``, infinite values, no rows.
    EngineError
        The engine failed, or the table changed between passes.
    """
    policy = check_choice(missing, "missing", MISSING_POLICIES)
    cap = check_int(max_products, "max_products", minimum=1)
    table = open_table(data, **open_options)
    q = as_query(query)
    pred = as_predicate(protect)
    prep = contribution_frame(table, q, pred)
    m, what = q.dim, table.what
    pairs = _pairs(m)
    first, rest = pairs[:cap], [pairs[i : i + cap] for i in range(cap, len(pairs), cap)]
    extra: list[Aggregate] = [
        (N, "len", None),
        *((f"__dp_s{j}", "sum", _v(j)) for j in range(m)),
        *((f"__dp_lo{j}", "min", _v(j)) for j in range(m)),
        *((f"__dp_hi{j}", "max", _v(j)) for j in range(m)),
    ]
    rows = _products_pass(prep, prep.frame, [G, OK], first, extra)
    passes = 1
    total, miss = _check_missing(rows, prep, policy)
    complete = [r for r in rows if r[OK]]
    counts = np.zeros(2, dtype=np.int64)
    sums = np.zeros((2, m))
    lo = np.full((2, m), np.inf)
    hi = np.full((2, m), -np.inf)
    cross = np.zeros((2, m, m))
    for r in complete:
        g = 0 if r[G] else 1
        counts[g] = int(r[N])
        sums[g] = [float(r[f"__dp_s{j}"]) for j in range(m)]
        lo[g] = [float(r[f"__dp_lo{j}"]) for j in range(m)]
        hi[g] = [float(r[f"__dp_hi{j}"]) for j in range(m)]
    kept = int(counts.sum())
    present = counts > 0
    if np.any(~np.isfinite(lo[present])) or np.any(~np.isfinite(hi[present])):
        cols = sorted({s.column for j, s in enumerate(q.statistics)
                       if s.column and (np.any(~np.isfinite(lo[present, j])) or np.any(~np.isfinite(hi[present, j])))})
        raise InvalidParameterError(f"columns {list_preview(cols)} contain infinite values", argument=what)
    _cross(complete, m, first, cross)
    ok_frame = prep.frame.filter(nw.col(OK))
    for chunk in rest:
        rows_k = _products_pass(prep, ok_frame, [G], chunk, [(N, "len", None)])
        _check_counts(rows_k, counts, what)
        _cross(rows_k, m, chunk, cross)
        passes += 1

    constant = lo == hi
    shift = np.zeros((2, m))
    need_second = False
    for g in range(2):
        if not counts[g]:
            continue
        mean = sums[g] / counts[g]
        second = np.diagonal(cross[g]) / counts[g]
        var = second - mean**2
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = np.where(var > 0, second / var, np.inf)
        if np.any(~constant[g] & (kappa > KAPPA_MAX)):
            need_second = True
        shift[g] = np.where(constant[g], lo[g], mean)
    if need_second:
        shifted = ok_frame.with_columns(
            *((nw.col(_v(j)) - nw.when(nw.col(G)).then(nw.lit(float(shift[0, j]))).otherwise(nw.lit(float(shift[1, j]))))
              .alias(_v(j)) for j in range(m))
        )
        sums_w = np.zeros((2, m))
        cross = np.zeros((2, m, m))
        for chunk in [first, *rest]:
            rows_k = _products_pass(prep, shifted, [G], chunk,
                                    [(N, "len", None), *((f"__dp_s{j}", "sum", _v(j)) for j in range(m))])
            _check_counts(rows_k, counts, what)
            _cross(rows_k, m, chunk, cross)
            for r in rows_k:
                sums_w[0 if r[G] else 1] = [float(r[f"__dp_s{j}"]) for j in range(m)]
            passes += 1
    else:
        sums_w = sums
        shift = np.zeros((2, m))
    scatter = np.zeros((2, m, m))
    out_sums = np.zeros((2, m))
    for g in range(2):
        if not counts[g]:
            continue
        mean_w = sums_w[g] / counts[g]
        scatter[g] = cross[g] - counts[g] * np.outer(mean_w, mean_w)
        out_sums[g] = sums_w[g] + counts[g] * shift[g]
        const = np.flatnonzero(constant[g])
        scatter[g][const, :] = 0.0
        scatter[g][:, const] = 0.0
        out_sums[g][const] = counts[g] * lo[g][const]
    moments = GroupMoments(q, counts, out_sums, scatter, pred)
    ranges: dict[str, tuple[float, float]] = {}
    for j, stat in enumerate(q.statistics):
        if stat.column is not None and stat.kind in ("mean", "sum"):
            ranges[stat.column] = (float(lo[present, j].min()), float(hi[present, j].max()))
    return TableSummary(moments, total, total - kept if policy == "drop" else 0, miss, ranges, passes)


def _missing_cells(prep: ContributionFrame, rows: list[dict[str, Any]]) -> dict[str, int]:
    """Missing cells per used column. The ``GROUP BY`` rows already count the incomplete rows (OK false):
    when there are none every count is 0 and no pass is run; otherwise one pass sums the indicators over the
    incomplete rows. (Summing them in the main pass cost a third of its time on a 40M-row file.)"""
    if not any(int(r[N]) for r in rows if not r[OK]):
        return {c: 0 for c in prep.used}
    aggs = [nw.col(_m(i)).sum().alias(f"__dp_ms{i}") for i in range(len(prep.used))]
    got = _rows(prep.frame.filter(~nw.col(OK)).select(*aggs), prep.table.what, prep.table.backend)
    return {c: int(got[0][f"__dp_ms{i}"] or 0) for i, c in enumerate(prep.used)}


def _check_missing(rows: list[dict[str, Any]], prep: ContributionFrame, policy: str) -> tuple[int, dict[str, int]]:
    """Total rows and missing cells per used column; raise under ``missing="error"`` or when nothing is left."""
    what = prep.table.what
    total = sum(int(r[N]) for r in rows)
    miss = _missing_cells(prep, rows)
    if total == 0:
        raise InvalidParameterError("the table has no rows", argument=what)
    bad = {c: k for c, k in miss.items() if k}
    if bad and policy == "error":
        shown = list_preview([f"{c} ({k})" for c, k in bad.items()])
        raise InvalidParameterError(
            f"missing values (null or NaN) in used columns {shown}; drop those rows with "
            "missing='drop' (--missing drop)", argument=what
        )
    if not any(int(r[N]) for r in rows if r[OK]):
        raise InvalidParameterError(f"no rows left after dropping {total} rows with missing values", argument=what)
    return total, miss


def missing_counts(prep: ContributionFrame, policy: str) -> NDArray[np.int64]:
    """Complete rows per group (N_P, N_Q) in one counting pass, applying the missing-value policy."""
    rows = _rows(prep.frame.group_by(G, OK).agg(nw.len().alias(N)), prep.table.what, prep.table.backend)
    _check_missing(rows, prep, policy)
    counts = np.zeros(2, dtype=np.int64)
    for r in rows:
        if r[OK]:
            counts[0 if r[G] else 1] = int(r[N])
    return counts


def _check_counts(rows: list[dict[str, Any]], counts: NDArray[np.int64], what: str) -> None:
    got = np.zeros(2, dtype=np.int64)
    for r in rows:
        got[0 if r[G] else 1] = int(r[N])
    if not np.array_equal(got, counts):
        raise EngineError(f"the table changed between aggregate passes ({counts.tolist()} then {got.tolist()} rows)", argument=what)


def count_rows(data: Any, **open_options: Any) -> int:
    """Number of rows of a table, counted by its engine."""
    table = open_table(data, **open_options)
    rows = _rows(table.frame.select(nw.len().alias(N)), table.what, table.backend)
    return int(rows[0][N])
