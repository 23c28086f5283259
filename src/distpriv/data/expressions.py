"""Predicates and per-record contributions of :mod:`distpriv.queries` as narwhals expressions.

The translation keeps the pandas semantics of :class:`distpriv.queries.Condition`:

* numeric columns compare numerically (the value is parsed as a float);
* boolean columns accept ``true``/``false``/``1``/``0`` (and ``yes``/``no``, ``y``/``n``, ``t``/``f``,
  which CSV readers turn into booleans) and compare as 1.0/0.0;
* every other column holds labels: only ``=`` and ``!=`` apply, comparing the
  text of the cell with the value (categoricals through their labels);
* missing values never satisfy a condition — rows with missing values in a used
  column are either refused or dropped before any aggregate (:mod:`.aggregate`),
  so the expressions below only meet complete rows.

Column names are passed to narwhals as plain strings (no parsing), so names with
spaces or operator characters work as long as :class:`~distpriv.queries.Predicate`
can express them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import narwhals as nw

from ..errors import InvalidParameterError, InvalidTypeError, UnknownLabelError, arg
from ..queries import Condition, Predicate, Query, Statistic
from .sources import Table, list_preview

_ORDERING = (">", ">=", "<", "<=")
_TRUE = ("true", "1", "yes", "y", "t")
_FALSE = ("false", "0", "no", "n", "f")


def column_kind(dtype: Any) -> str:
    """``"boolean"``, ``"numeric"`` or ``"label"`` for a narwhals dtype."""
    if dtype == nw.Boolean:
        return "boolean"
    if dtype.is_numeric():
        return "numeric"
    return "label"


def _is_float(dtype: Any) -> bool:
    return dtype in (nw.Float32, nw.Float64)


def used_columns(query: Query, protect: Predicate | None = None) -> list[str]:
    """Columns read by the protected predicate and the statistics, in first-use order."""
    cols: list[str] = []
    if protect is not None:
        cols += list(protect.columns)
    for stat in query.statistics:
        cols += [stat.column] if stat.column is not None else list(stat.predicate.columns)  # type: ignore[union-attr]
        if stat.column is not None and stat.predicate is not None:  # sumif: x·1[predicate]
            cols += list(stat.predicate.columns)
    return list(dict.fromkeys(cols))


def missing_expr(column: str, dtype: Any) -> nw.Expr:
    """True where the cell is missing: null, or NaN in a float column."""
    expr = nw.col(column).is_null()
    if _is_float(dtype):
        expr = expr | nw.col(column).is_nan()
    return expr


def _categories(table: Table, column: str, dtype: Any) -> list[str] | None:
    """Known labels of a categorical column when the engine has them without a scan."""
    if dtype == nw.Enum:
        return [str(c) for c in dtype.categories]
    if dtype == nw.Categorical and table.backend == "pandas":
        return [str(c) for c in table.native[column].cat.categories]
    return None


def _parses_as_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def text_number_hint(table: Table, column: str, limit: int = 200) -> str:
    """Why a column meant to hold numbers holds text: an offending value and the option that reads it.

    Looks at up to ``limit`` distinct non-missing cells (a bounded query in the table's engine, only on this
    error path) for one that is not a number: ``"3,250"`` suggests ``--thousands``, ``"2,5"`` ``--decimal``,
    a token such as ``"n/a"`` or ``"-"`` ``--na-values``.
    """
    try:
        frame = table.frame.select(nw.col(column).cast(nw.String)).unique().head(limit)
        cells = [c for c in frame.collect().get_column(column).to_list() if c is not None]
    except Exception:  # the hint is best effort: the error it decorates is raised anyway
        return ""
    bad = next((str(c) for c in cells if not _parses_as_number(str(c).strip())), None)
    if bad is None:
        return ""
    digits = bad.replace(",", "").replace(".", "").replace(" ", "").lstrip("+-")
    if digits.isdigit() and "," in bad and "." in bad:
        fix = (f"read it with {arg('decimal')} ',' {arg('thousands')} '.'" if bad.rindex(",") > bad.rindex(".")
               else f"read it with {arg('thousands')} ','")
    elif digits.isdigit() and "," in bad:
        if bad.count(",") == 1 and len(bad.split(",")[1]) != 3:
            fix = f"read numbers with a decimal comma with {arg('decimal')} ','"
        else:
            fix = f"read numbers with thousands separators with {arg('thousands')} ','"
    elif digits.isdigit() and bad.count(".") > 1:
        fix = f"read it with {arg('decimal')} ',' {arg('thousands')} '.'"
    else:
        fix = f"if it marks a missing value, list it in {arg('na_values')}"
    return f" (it holds text such as {bad!r}, which is not a number; {fix})"


def condition_expr(cond: Condition, table: Table, *, what: str = "predicate") -> nw.Expr:
    """Boolean expression of one ``column op value`` condition (module docstring for the semantics)."""
    table.check_columns([cond.column], what)
    dtype = table.schema[cond.column]
    kind = column_kind(dtype)
    col = nw.col(cond.column)
    if kind == "label":
        cats = _categories(table, cond.column, dtype)
        if cond.op in _ORDERING:
            hint = ""
            if cats is not None and cond.op + cond.value in cats:
                hint = f"; did you mean '{cond.column}={cond.op + cond.value}'?"
            if not hint and table.files:
                hint = text_number_hint(table, cond.column)
            raise InvalidParameterError(
                f"operator {cond.op!r} needs a numeric column, but {cond.column!r} holds labels{hint} "
                f"(in {table.what})", argument=what
            )
        if cats is not None and cond.value not in cats:
            raise UnknownLabelError(
                f"{cond.value!r} is not a value of column {cond.column!r}; known values are "
                f"{list_preview(cats)}", argument=what
            )
        text = col if dtype == nw.String else col.cast(nw.String)
        return text == cond.value if cond.op == "=" else text != cond.value
    if kind == "boolean":
        lowered = cond.value.lower()
        # CSV readers turn yes/no, y/n, t/f columns into booleans: accept the words they read as such
        if lowered not in _TRUE + _FALSE:
            raise InvalidParameterError(
                f"column {cond.column!r} is boolean; value must be true/false, got {cond.value!r}", argument=what
            )
        target = 1.0 if lowered in _TRUE else 0.0
    else:
        try:
            target = float(cond.value)
        except ValueError:
            raise InvalidParameterError(
                f"column {cond.column!r} is numeric ({dtype}); cannot compare it with {cond.value!r}", argument=what
            ) from None
        if math.isnan(target):
            raise InvalidParameterError(f"comparison value for {cond.column!r} must not be NaN", argument=what)
    x = col.cast(nw.Float64)
    ops = {
        "=": x == target,
        "!=": x != target,
        ">": x > target,
        ">=": x >= target,
        "<": x < target,
        "<=": x <= target,
    }
    return ops[cond.op]


def predicate_expr(predicate: Predicate, table: Table, *, what: str = "predicate") -> nw.Expr:
    """Conjunction of the predicate's conditions."""
    exprs = [condition_expr(c, table, what=what) for c in predicate.conditions]
    out = exprs[0]
    for e in exprs[1:]:
        out = out & e
    return out


def contribution_expr(stat: Statistic, table: Table) -> nw.Expr:
    """v_j(r) as Float64: the column value (mean/sum) or the predicate indicator (count/proportion)."""
    what = f"statistic {stat.name!r}"
    if stat.kind in ("sumsq", "sumif"):  # internal kinds (distpriv.statspec): x² and x·1[predicate]
        x = contribution_expr(Statistic(stat.name, "sum", column=stat.column), table)
        if stat.kind == "sumsq":
            return x * x
        assert stat.predicate is not None
        return nw.when(predicate_expr(stat.predicate, table, what=what).fill_null(False)).then(x).otherwise(0.0)
    if stat.predicate is not None:
        return predicate_expr(stat.predicate, table, what=what).cast(nw.Float64)
    assert stat.column is not None
    table.check_columns([stat.column], what)
    dtype = table.schema[stat.column]
    if column_kind(dtype) == "label":
        raise InvalidTypeError(f"{stat.kind} needs a numeric column, {stat.column!r} has dtype {dtype} in "
                               f"{table.what}{text_number_hint(table, stat.column)}", argument=what)
    expr = nw.col(stat.column).cast(nw.Float64)
    for col, lo, hi in getattr(table, "clamp", ()):  # declared bounds (record-level DP): clamp the contribution
        if col == stat.column:
            expr = expr.clip(lo, hi)
    return expr


def check_names(names: Sequence[str], table: Table) -> None:
    """Internal column names must not clash with the table's."""
    clash = sorted(set(names) & set(table.columns))
    if clash:
        raise InvalidParameterError(f"{table.what}: column names {clash} are reserved by distpriv; rename them")
