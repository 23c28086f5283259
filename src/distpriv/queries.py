"""Declarative queries F over a table: predicates, linear statistics and their vectorised form.

A query F = (F_1, ..., F_m) is a vector of statistics of a dataset D of n rows
(Chen & Ohrimenko Section 6.1, Table 1). Every statistic supported here is a
*linear* function of per-row values:

    F_j(D) = s_j(n) · Σ_{r ∈ D} v_j(r)

with v_j(r) the row's value of a numeric column (``mean``, ``sum``) or the
indicator 1[r satisfies a predicate] (``count``, ``proportion``), and
s_j(n) = 1/n for ``mean``/``proportion`` and 1 for ``sum``/``count``.

:meth:`Query.column_matrix` precomputes V[r, j] = v_j(r) once for a whole
population, after which F over any subset is a gather and a sum
(:meth:`Query.reduce`) — this is what makes sampling thousands of datasets per θ
(appendix C.1 of the AISTATS version) a single vectorised step.

Predicates are parsed from strings such as ``"income=>50K"``,
``"sex=Female & age>=40"`` or ``"workclass!=Private"``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import check_array
from .errors import InvalidParameterError, InvalidTypeError, UnknownLabelError

if TYPE_CHECKING:  # pandas is imported where frames are handled (it costs ~0.4 s to import)
    import pandas as pd

#: Comparison operators, longest first (so ``>=`` wins over ``>`` and ``=``).
OPERATORS: tuple[str, ...] = ("==", "!=", ">=", "<=", "=", ">", "<")
_ORDERING = (">", ">=", "<", "<=")
_CONDITION_RE = re.compile(r"^\s*([^=!<>&:`]+?)\s*(==|!=|>=|<=|=|>|<)\s*(.*?)\s*$", re.DOTALL)
#: A condition whose column is quoted in backticks (a backtick inside is doubled): ``\`a=b\`=x``.
_QUOTED_RE = re.compile(r"^\s*`((?:[^`]|``)*)`\s*(==|!=|>=|<=|=|>|<)\s*(.*?)\s*$", re.DOTALL)
#: Characters that make a column name need backticks in a condition or statistic.
_SPECIAL = set("=!<>&:`")

#: Statistic kinds and whether each takes a numeric column (else a predicate).
KINDS: dict[str, str] = {
    "mean": "column",
    "sum": "column",
    "count": "predicate",
    "proportion": "predicate",
}

#: Internal linear kinds (never typed by users; building blocks of the statistics of
#: :mod:`distpriv.statspec`): ``sumsq`` sums v(r) = x², ``sumif`` sums v(r) = x·1[predicate].
INTERNAL_KINDS: dict[str, str] = {"sumsq": "column", "sumif": "both"}


def _is_numeric(series: pd.Series) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(series.dtype)) and not isinstance(
        series.dtype, pd.CategoricalDtype
    )


def _check_frame(df: Any, name: str = "df") -> pd.DataFrame:
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise InvalidTypeError(f"expected a pandas DataFrame, got {type(df).__name__}", argument=name)
    return df


def _check_column(df: pd.DataFrame, column: str, what: str) -> pd.Series:
    if column not in df.columns:
        raise UnknownLabelError(
            f"unknown column {column!r}; available columns are {[str(c) for c in df.columns]}", argument=what
        )
    return df[column]


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if len(text) >= 2 and text[0] == text[-1] == "`":
        return text[1:-1].replace("``", "`")
    return text


def quote_name(name: str) -> str:
    """``name`` as written in a condition or statistic: in backticks (inner ones doubled) when it holds
    ``= ! < > & : `` ` or surrounding spaces, else as is (so ``str`` of a parsed spec parses back to it)."""
    if name != name.strip() or any(ch in _SPECIAL for ch in name):
        return "`" + name.replace("`", "``") + "`"
    return name


def split_outside_backticks(text: str, sep: str) -> list[str]:
    """``text.split(sep)`` ignoring separators inside backtick-quoted names (a doubled backtick is literal)."""
    parts, start, inside = [], 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            inside = not inside
        elif ch == sep and not inside:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


# --------------------------------------------------------------------------- predicates
@dataclass(frozen=True)
class Condition:
    """One comparison ``column op value``; ``op`` is one of :data:`OPERATORS` (``=`` and ``==`` agree)."""

    column: str
    op: str
    value: str

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column.strip():
            raise InvalidTypeError(f"column: expected a non-empty column name, got {self.column!r}")
        if self.op not in OPERATORS:
            raise InvalidParameterError(f"op: unknown operator {self.op!r}; expected one of {list(OPERATORS)}")
        if not isinstance(self.value, str):
            object.__setattr__(self, "value", str(self.value))
        if self.op == "==":
            object.__setattr__(self, "op", "=")

    @classmethod
    def parse(cls, text: str) -> Condition:
        """Parse ``"column<op>value"``, e.g. ``"age>=40"``, ``"income=>50K"`` (column 'income', value '>50K').

        A column name holding ``= ! < > & :`` or a backtick is written in backticks, a backtick inside doubled:
        ``"`a=b`=x"`` is column 'a=b', value 'x'; a value may be backticked too (to hold '&').
        """
        if not isinstance(text, str):
            raise InvalidTypeError(f"predicate: expected a string like 'sex=Female', got {type(text).__name__}")
        quoted = text.lstrip().startswith("`")
        m = (_QUOTED_RE if quoted else _CONDITION_RE).match(text)
        if m is None:
            raise InvalidParameterError(
                f"predicate: cannot parse {text!r}; expected 'column<op>value' with op one of "
                f"{list(OPERATORS)}, e.g. 'sex=Female', 'age>40', 'income=>50K' (quote awkward column names with "
                "backticks: '`a<b`=x')"
            )
        column, op, value = m.group(1), m.group(2), _unquote(m.group(3))
        if quoted:
            column = column.replace("``", "`")
        if value == "":
            raise InvalidParameterError(f"predicate: missing value after {op!r} in {text!r}")
        return cls(column=column, op=op, value=value)

    def mask(self, df: pd.DataFrame) -> NDArray[np.bool_]:
        """Boolean (n_rows,) array: which rows satisfy the condition."""
        import pandas as pd

        series = _check_column(df, self.column, "predicate")
        if isinstance(series.dtype, pd.CategoricalDtype) or not _is_numeric(series):
            return self._mask_labels(series)
        if pd.api.types.is_bool_dtype(series.dtype):
            lowered = self.value.lower()
            if lowered not in ("true", "false", "1", "0"):
                raise InvalidParameterError(
                    f"predicate: column {self.column!r} is boolean; value must be true/false, got {self.value!r}"
                )
            target: float = 1.0 if lowered in ("true", "1") else 0.0
        else:
            try:
                target = float(self.value)
            except ValueError:
                raise InvalidParameterError(
                    f"predicate: column {self.column!r} is numeric ({series.dtype}); "
                    f"cannot compare it with {self.value!r}"
                ) from None
            if math.isnan(target):
                raise InvalidParameterError(f"predicate: comparison value for {self.column!r} must not be NaN")
        x = series.to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            if self.op == "=":
                out = x == target
            elif self.op == "!=":
                out = ~(x == target) & ~np.isnan(x)
            elif self.op == ">":
                out = x > target
            elif self.op == ">=":
                out = x >= target
            elif self.op == "<":
                out = x < target
            else:
                out = x <= target
        return np.asarray(out, dtype=bool)

    def _mask_labels(self, series: pd.Series) -> NDArray[np.bool_]:
        import pandas as pd

        if self.op in _ORDERING:
            hint = ""
            candidate = self.op + self.value
            if isinstance(series.dtype, pd.CategoricalDtype) and candidate in set(map(str, series.cat.categories)):
                hint = f"; did you mean '{self.column}={candidate}'?"
            raise InvalidParameterError(
                f"predicate: operator {self.op!r} needs a numeric column, but {self.column!r} holds labels{hint}"
            )
        if isinstance(series.dtype, pd.CategoricalDtype):
            cats = [str(c) for c in series.cat.categories]
            if self.value not in cats:
                raise UnknownLabelError(
                    f"predicate: {self.value!r} is not a value of column {self.column!r}; known values are {cats}"
                )
            codes = series.cat.codes.to_numpy()
            hit = codes == cats.index(self.value)
            valid = codes >= 0
        else:
            valid = np.asarray(~pd.isna(series), dtype=bool)
            hit = np.asarray(series.astype(str).to_numpy(dtype=object) == self.value, dtype=bool) & valid
        return hit if self.op == "=" else (~hit & valid)

    def __str__(self) -> str:
        value = self.value
        if "&" in value or value.startswith("`") or value != value.strip():
            value = "`" + value.replace("`", "``") + "`"
        return f"{quote_name(self.column)}{self.op}{value}"


class Predicate:
    """A conjunction of :class:`Condition` s, parsed from ``"c1 & c2 & ..."``.

    >>> Predicate("income=>50K & age>=40").conditions
    (Condition(column='income', op='=', value='>50K'), Condition(column='age', op='>=', value='40'))

    Missing values never satisfy a condition (not even ``!=``).
    """

    __slots__ = ("conditions",)
    conditions: tuple[Condition, ...]

    def __init__(self, spec: str | Condition | Predicate | Iterable[Condition | str]) -> None:
        if isinstance(spec, Predicate):
            conds: tuple[Condition, ...] = spec.conditions
        elif isinstance(spec, Condition):
            conds = (spec,)
        elif isinstance(spec, str):
            parts = split_outside_backticks(spec, "&")
            if any(not p.strip() for p in parts):
                raise InvalidParameterError(f"predicate: empty condition in {spec!r} (conditions are joined by '&')")
            conds = tuple(Condition.parse(p) for p in parts)
        elif isinstance(spec, Iterable):
            conds = tuple(c if isinstance(c, Condition) else Condition.parse(c) for c in spec)
        else:
            raise InvalidTypeError(
                f"predicate: expected a string like 'income=>50K', got {type(spec).__name__}"
            )
        if not conds:
            raise InvalidParameterError("predicate: needs at least one condition")
        self.conditions = conds

    @property
    def columns(self) -> tuple[str, ...]:
        """Columns the predicate reads."""
        return tuple(dict.fromkeys(c.column for c in self.conditions))

    def mask(self, df: pd.DataFrame) -> NDArray[np.bool_]:
        """Boolean (n_rows,) array: rows satisfying every condition."""
        df = _check_frame(df)
        out = np.ones(len(df), dtype=bool)
        for cond in self.conditions:
            out &= cond.mask(df)
        return out

    def __and__(self, other: Predicate | str) -> Predicate:
        return Predicate(self.conditions + as_predicate(other).conditions)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Predicate) and self.conditions == other.conditions

    def __hash__(self) -> int:
        return hash(self.conditions)

    def __str__(self) -> str:
        return " & ".join(map(str, self.conditions))

    def __repr__(self) -> str:
        return f"Predicate({str(self)!r})"


def as_predicate(value: Predicate | str | Condition) -> Predicate:
    """A :class:`Predicate` from a predicate, a condition or a string."""
    return value if isinstance(value, Predicate) else Predicate(value)


# --------------------------------------------------------------------------- statistics
@dataclass(frozen=True, init=False)
class Statistic:
    """One linear statistic F_j(D) = s_j(n) Σ_{r∈D} v_j(r) (see the module docstring).

    Parameters
    ----------
    name:
        Label of the component (e.g. ``"Average age"``).
    kind:
        ``"mean"`` or ``"sum"`` of a numeric ``column``; ``"count"`` or
        ``"proportion"`` of the rows satisfying ``predicate``.
    column:
        Numeric column (mean/sum only).
    predicate:
        Row predicate (count/proportion only); a string is parsed.
    """

    name: str
    kind: str
    column: str | None
    predicate: Predicate | None

    def __init__(
        self,
        name: str,
        kind: str,
        column: str | None = None,
        predicate: Predicate | str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidTypeError(f"name: expected a non-empty string, got {name!r}")
        if kind not in KINDS and kind not in INTERNAL_KINDS:
            raise UnknownLabelError(f"kind: unknown statistic {kind!r}; expected one of {list(KINDS)}")
        if INTERNAL_KINDS.get(kind) == "both":
            if not isinstance(column, str) or not column or predicate is None:
                raise InvalidParameterError(f"column: statistic {kind!r} needs a numeric column and a predicate")
            pred: Predicate | None = as_predicate(predicate)
        elif KINDS.get(kind, INTERNAL_KINDS.get(kind)) == "column":
            if not isinstance(column, str) or not column:
                raise InvalidParameterError(f"column: statistic {kind!r} needs a numeric column name")
            if predicate is not None:
                raise InvalidParameterError(
                    f"predicate: statistic {kind!r} takes a column, not a predicate (use count/proportion)"
                )
            pred = None
        else:
            if predicate is None:
                raise InvalidParameterError(f"predicate: statistic {kind!r} needs a predicate such as 'sex=Female'")
            if column is not None:
                raise InvalidParameterError(f"column: statistic {kind!r} takes a predicate, not a column")
            pred = as_predicate(predicate)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "predicate", pred)

    @classmethod
    def parse(cls, text: str, name: str | None = None) -> Statistic:
        """Parse ``"kind:target"``: ``"mean:age"``, ``"sum:capital_gain"``, ``"count:sex=Female"``,
        ``"proportion:income=>50K"``. The default name is the text itself."""
        if not isinstance(text, str):
            raise InvalidTypeError(f"statistic: expected a string like 'mean:age', got {type(text).__name__}")
        kind, sep, target = text.partition(":")
        kind, target = kind.strip(), target.strip()
        if not sep or not target:
            raise InvalidParameterError(
                f"statistic: cannot parse {text!r}; expected 'kind:target' with kind one of {list(KINDS)}, "
                "e.g. 'mean:age' or 'count:sex=Female'"
            )
        if kind not in KINDS:
            raise UnknownLabelError(f"statistic: unknown kind {kind!r} in {text!r}; expected one of {list(KINDS)}")
        label = name if name is not None else f"{kind}:{target}"
        if KINDS[kind] == "column":
            if target.startswith("`"):
                if len(target) < 2 or not target.endswith("`") or "`" in target[1:-1].replace("``", ""):
                    raise InvalidParameterError(
                        f"statistic: unbalanced backticks in {text!r}; quote a column as `name` (double a backtick "
                        "inside it)"
                    )
                target = target[1:-1].replace("``", "`")
            return cls(label, kind, column=target)
        return cls(label, kind, predicate=target)

    @property
    def scaled(self) -> bool:
        """True when F_j divides the row sum by n (mean, proportion)."""
        return self.kind in ("mean", "proportion")

    def row_values(self, df: pd.DataFrame) -> NDArray[np.float64]:
        """v_j(r) for every row: the column value, or the predicate indicator (x² for ``sumsq``,
        x·1[predicate] for ``sumif``)."""
        if self.kind in INTERNAL_KINDS:
            x = Statistic(self.name, "sum", column=self.column).row_values(df)
            if self.kind == "sumsq":
                return x * x
            assert self.predicate is not None
            return x * self.predicate.mask(df)
        if self.predicate is not None:
            return self.predicate.mask(df).astype(float)
        assert self.column is not None
        series = _check_column(df, self.column, f"statistic {self.name!r}")
        if not _is_numeric(series):
            raise InvalidTypeError(
                f"statistic {self.name!r}: {self.kind} needs a numeric column, {self.column!r} has dtype {series.dtype}"
            )
        values = series.to_numpy(dtype=float, na_value=np.nan)
        if not np.all(np.isfinite(values)):
            raise InvalidParameterError(
                f"statistic {self.name!r}: column {self.column!r} contains NaN or infinite values"
            )
        return values

    def evaluate(self, df: pd.DataFrame) -> float:
        """F_j(df), computed directly with pandas (independent of the column-matrix path)."""
        df = _check_frame(df)
        if len(df) == 0:
            raise InvalidParameterError("df: cannot evaluate a statistic on an empty dataset")
        if self.kind in INTERNAL_KINDS:
            return float(self.row_values(df).sum())
        if self.predicate is not None:
            hits = int(self.predicate.mask(df).sum())
            return float(hits) if self.kind == "count" else hits / len(df)
        values = self.row_values(df)
        return float(values.sum()) if self.kind == "sum" else float(values.mean())

    def __str__(self) -> str:
        if self.kind == "sumif":
            return f"sumif:{quote_name(str(self.column))}|{self.predicate}"
        target = quote_name(self.column) if self.column is not None else str(self.predicate)
        return f"{self.kind}:{target}"


# --------------------------------------------------------------------------- queries
class Query:
    """A vector query F = (F_1, ..., F_m) of linear statistics.

    ``Query(["mean:age", "count:sex=Female"])`` or ``Query([Statistic(...), ...])``;
    names must be unique.
    """

    __slots__ = ("_scaled", "statistics")
    statistics: tuple[Statistic, ...]

    def __init__(self, statistics: Sequence[Statistic | str] | Query) -> None:
        if isinstance(statistics, Query):
            stats: tuple[Statistic, ...] = statistics.statistics
        elif isinstance(statistics, (str, Statistic)):
            stats = (statistics if isinstance(statistics, Statistic) else Statistic.parse(statistics),)
        elif isinstance(statistics, Iterable):
            stats = tuple(s if isinstance(s, Statistic) else Statistic.parse(s) for s in statistics)
        else:
            raise InvalidTypeError(f"statistics: expected a list of Statistic or strings, got {type(statistics).__name__}")
        if not stats:
            raise InvalidParameterError("statistics: a query needs at least one statistic")
        names = [s.name for s in stats]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise InvalidParameterError(f"statistics: names must be unique, repeated {dupes}")
        self.statistics = stats
        self._scaled = np.array([s.scaled for s in stats], dtype=bool)

    @property
    def names(self) -> tuple[str, ...]:
        """Component names, in order."""
        return tuple(s.name for s in self.statistics)

    @property
    def dim(self) -> int:
        """m, the number of components."""
        return len(self.statistics)

    def __len__(self) -> int:
        return len(self.statistics)

    def scales(self, n: int | ArrayLike) -> NDArray[np.float64]:
        """s(n): 1/n for mean/proportion components, 1 for sum/count; shape (m,) (or broadcast with n)."""
        n_arr = np.asarray(n, dtype=float)
        if np.any(n_arr <= 0):
            raise InvalidParameterError(f"n: dataset size must be > 0, got {str(n)}")
        return np.where(self._scaled, 1.0 / n_arr[..., None], 1.0)

    def record_sensitivities(self, population: pd.DataFrame, n: int) -> NDArray[np.float64]:
        """Per-component change of F when one record of a dataset of n records changes.

        mean: range/n; sum: range; count: 1; proportion: 1/n, ranges taken over
        ``population`` — the per-record sensitivities of the DP and group-DP
        baselines (Chen & Ohrimenko Sec. 6.1–6.2: "range/n for means and 1 for counts").
        """
        df = _check_frame(population, "population")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
            raise InvalidParameterError(f"n: dataset size must be a positive integer, got {n!r}")
        out = []
        for stat in self.statistics:
            if stat.kind in ("count", "proportion"):
                out.append(1.0 if stat.kind == "count" else 1.0 / n)
            else:
                assert stat.column is not None  # mean/sum statistics always name a column
                col = _check_column(df, stat.column, "statistic").to_numpy(dtype=float)
                span = float(np.nanmax(col) - np.nanmin(col))
                out.append(span / n if stat.kind == "mean" else span)
        return np.asarray(out, dtype=float)

    def evaluate(self, df: pd.DataFrame) -> NDArray[np.float64]:
        """F(df) as an (m,) array, statistic by statistic with pandas."""
        df = _check_frame(df)
        return np.array([s.evaluate(df) for s in self.statistics], dtype=float)

    def column_matrix(self, df: pd.DataFrame) -> NDArray[np.float64]:
        """V with V[r, j] = v_j(r): (n_rows, m) float array such that F(D) = s(|D|) · Σ_{r∈D} V[r]."""
        df = _check_frame(df)
        out = np.empty((len(df), self.dim), dtype=float)
        for j, stat in enumerate(self.statistics):
            out[:, j] = stat.row_values(df)
        return out

    def reduce(self, values_sum: ArrayLike, n: int | ArrayLike) -> NDArray[np.float64]:
        """F from row sums: ``values_sum`` (..., m) = Σ_{r∈D} V[r] over datasets of size ``n``."""
        sums = check_array(values_sum, "values_sum")
        if sums.ndim == 0 or sums.shape[-1] != self.dim:
            raise InvalidTypeError(f"values_sum: last axis must have length m = {self.dim}, got shape {sums.shape}")
        return sums * self.scales(n)

    def evaluate_rows(self, matrix: ArrayLike, indices: ArrayLike) -> NDArray[np.float64]:
        """F of the datasets given as row-index arrays into ``matrix`` = :meth:`column_matrix`.

        ``indices`` is (n,) for one dataset or (size, n) for many; returns (m,) or (size, m).
        """
        v = check_array(matrix, "matrix", ndim=2)
        if v.shape[1] != self.dim:
            raise InvalidTypeError(f"matrix: expected {self.dim} columns, got shape {v.shape}")
        idx = np.asarray(indices)
        if idx.ndim not in (1, 2) or idx.shape[-1] == 0 or not np.issubdtype(idx.dtype, np.integer):
            raise InvalidTypeError(f"indices: expected a non-empty (n,) or (size, n) integer array, got shape {idx.shape}")
        return self.reduce(v[idx].sum(axis=-2), idx.shape[-1])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Query) and self.statistics == other.statistics

    def __hash__(self) -> int:
        return hash(self.statistics)

    def __repr__(self) -> str:
        inner = ", ".join(f"{s.name!r}: {s}" for s in self.statistics)
        return f"Query({{{inner}}})"


def as_query(value: Query | Sequence[Statistic | str]) -> Query:
    """A :class:`Query` from a query or a list of statistics/strings."""
    return value if isinstance(value, Query) else Query(value)


#: Chen & Ohrimenko Table 1: the five statistics released on Adult subsets of n = 100 records.
ADULT_QUERY = Query(
    [
        Statistic("Average age", "mean", column="age"),
        Statistic("Average years of education", "mean", column="education_num"),
        Statistic("Num. of never married individuals", "count", predicate="marital_status=Never-married"),
        Statistic("Num. of female individuals", "count", predicate="sex=Female"),
        Statistic("Average hours worked per week", "mean", column="hours_per_week"),
    ]
)
