"""Declarative predicates, linear statistics and the vectorised column matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from distpriv.errors import InvalidParameterError, InvalidTypeError, UnknownLabelError
from distpriv.queries import ADULT_QUERY, Condition, Predicate, Query, Statistic


@pytest.fixture
def df() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [25, 40, 41, 60, 33, 52],
            "hours_per_week": [40, 35, 20, 50, 36, 35],
            "capital_gain": [0, 1000, 0, 5000, 0, 250],
            "sex": pd.Categorical(["Female", "Male", "Female", "Male", "Female", "Male"]),
            "income": pd.Categorical(["<=50K", ">50K", ">50K", "<=50K", "<=50K", ">50K"]),
            "workclass": ["Private", "State-gov", "Private", None, "Private", "Self-emp"],
            "score": [1.5, np.nan, 2.0, 3.0, 0.5, 1.0],
        }
    )


# --------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("text", "column", "op", "value"),
    [
        ("income=>50K", "income", "=", ">50K"),
        ("income=<=50K", "income", "=", "<=50K"),
        ("sex=Female", "sex", "=", "Female"),
        ("sex == 'Female'", "sex", "=", "Female"),
        ("age>40", "age", ">", "40"),
        ("age>=40", "age", ">=", "40"),
        ("hours_per_week<=35", "hours_per_week", "<=", "35"),
        (" workclass != Private ", "workclass", "!=", "Private"),
        ("age<30", "age", "<", "30"),
    ],
)
def test_condition_parse(text, column, op, value):
    assert Condition.parse(text) == Condition(column, op, value)


@pytest.mark.parametrize("text", ["age", "=5", "age>", "", "age ~ 3", "&"])
def test_condition_parse_errors(text):
    with pytest.raises(InvalidParameterError, match="predicate"):
        Predicate(text)


def test_predicate_type_errors():
    with pytest.raises(InvalidTypeError, match="predicate"):
        Predicate(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="empty condition"):
        Predicate("age>3 & ")
    with pytest.raises(InvalidParameterError, match="at least one"):
        Predicate([])


# --------------------------------------------------------------------------- masks
def test_masks(df):
    cases = {
        "income=>50K": [0, 1, 1, 0, 0, 1],
        "income=<=50K": [1, 0, 0, 1, 1, 0],
        "sex=Female": [1, 0, 1, 0, 1, 0],
        "age>40": [0, 0, 1, 1, 0, 1],
        "age>=40": [0, 1, 1, 1, 0, 1],
        "hours_per_week<=35": [0, 1, 1, 0, 0, 1],
        "age<33": [1, 0, 0, 0, 0, 0],
        "age=41": [0, 0, 1, 0, 0, 0],
        "age!=41": [1, 1, 0, 1, 1, 1],
        "workclass!=Private": [0, 1, 0, 0, 0, 1],  # missing values match neither = nor !=
        "workclass=Private": [1, 0, 1, 0, 1, 0],
        "score>1": [1, 0, 1, 1, 0, 0],  # NaN never matches
        "score!=1": [1, 0, 1, 1, 1, 0],
        "sex=Female & age>30": [0, 0, 1, 0, 1, 0],
        "income=>50K & hours_per_week<=35 & age>=50": [0, 0, 0, 0, 0, 1],
    }
    for text, expected in cases.items():
        mask = Predicate(text).mask(df)
        assert mask.dtype == bool
        np.testing.assert_array_equal(mask, np.array(expected, dtype=bool), err_msg=text)


def test_predicate_combination_and_str(df):
    p = Predicate("sex=Female") & "age>30"
    assert p == Predicate("sex=Female & age>30")
    assert str(p) == "sex=Female & age>30"
    assert p.columns == ("sex", "age")
    assert hash(p) == hash(Predicate("sex = Female & age > 30"))
    np.testing.assert_array_equal(p.mask(df), [False, False, True, False, True, False])


def test_unknown_column_names_it_and_lists_columns(df):
    with pytest.raises(UnknownLabelError, match=r"unknown column 'salary'.*'age'.*'income'"):
        Predicate("salary>3").mask(df)


def test_label_errors(df):
    with pytest.raises(UnknownLabelError, match=r"'Other' is not a value of column 'sex'.*Female"):
        Predicate("sex=Other").mask(df)
    # an ordering operator on labels: suggest the equality with the label that exists
    with pytest.raises(InvalidParameterError, match=r"did you mean 'income=<=50K'"):
        Predicate("income<=50K").mask(df)
    with pytest.raises(InvalidParameterError, match="numeric"):
        Predicate("age=old").mask(df)
    with pytest.raises(InvalidTypeError, match="DataFrame"):
        Predicate("age>3").mask(df.to_numpy())  # type: ignore[arg-type]


def test_string_dtype_and_mixed_object_columns():
    frame = pd.DataFrame({"a": pd.array(["x", None, "y", "5"], dtype="string"), "b": ["x", None, 5, "5"]})
    np.testing.assert_array_equal(Predicate("a=x").mask(frame), [True, False, False, False])
    np.testing.assert_array_equal(Predicate("a!=x").mask(frame), [False, False, True, True])
    np.testing.assert_array_equal(Predicate("b=5").mask(frame), [False, False, True, True])


def test_boolean_column():
    frame = pd.DataFrame({"flag": [True, False, True]})
    np.testing.assert_array_equal(Predicate("flag=true").mask(frame), [True, False, True])
    np.testing.assert_array_equal(Predicate("flag!=1").mask(frame), [False, True, False])
    with pytest.raises(InvalidParameterError, match="boolean"):
        Predicate("flag=maybe").mask(frame)


# --------------------------------------------------------------------------- statistics
def test_statistic_parse():
    assert Statistic.parse("mean:age") == Statistic("mean:age", "mean", column="age")
    assert Statistic.parse("sum:capital_gain", name="gains") == Statistic("gains", "sum", column="capital_gain")
    s = Statistic.parse("count:sex=Female")
    assert (s.name, s.kind, s.column, s.predicate) == ("count:sex=Female", "count", None, Predicate("sex=Female"))
    s = Statistic.parse("proportion:income=>50K")
    assert s.predicate == Predicate("income=>50K") and s.scaled
    assert str(s) == "proportion:income=>50K"


def test_statistic_errors(df):
    with pytest.raises(UnknownLabelError, match="median"):
        Statistic.parse("median:age")
    with pytest.raises(InvalidParameterError, match="kind:target"):
        Statistic.parse("mean age")
    with pytest.raises(InvalidParameterError, match="kind:target"):
        Statistic.parse("mean:")
    with pytest.raises(InvalidParameterError, match="predicate"):
        Statistic("x", "count")
    with pytest.raises(InvalidParameterError, match="not a predicate"):
        Statistic("x", "mean", column="age", predicate="sex=Female")
    with pytest.raises(InvalidParameterError, match="not a column"):
        Statistic("x", "count", column="age", predicate="sex=Female")
    with pytest.raises(UnknownLabelError, match="kind"):
        Statistic("x", "max", column="age")
    with pytest.raises(InvalidTypeError, match="numeric"):
        Statistic.parse("mean:sex").evaluate(df)
    with pytest.raises(InvalidParameterError, match="NaN"):
        Statistic.parse("mean:score").evaluate(df)
    with pytest.raises(UnknownLabelError, match="'salary'"):
        Statistic.parse("sum:salary").evaluate(df)
    with pytest.raises(InvalidParameterError, match="empty"):
        Statistic.parse("mean:age").evaluate(df.iloc[:0])


# --------------------------------------------------------------------------- queries
@pytest.fixture
def query() -> Query:
    return Query(["mean:age", "sum:capital_gain", "count:sex=Female", "proportion:income=>50K"])


def test_query_evaluate(df, query):
    assert query.names == ("mean:age", "sum:capital_gain", "count:sex=Female", "proportion:income=>50K")
    assert query.dim == len(query) == 4
    np.testing.assert_allclose(query.evaluate(df), [251 / 6, 6250.0, 3.0, 0.5])


def test_column_matrix_is_linear_form(df, query):
    v = query.column_matrix(df)
    assert v.shape == (6, 4) and v.dtype == np.float64
    np.testing.assert_array_equal(v[:, 0], df["age"])
    np.testing.assert_array_equal(v[:, 1], df["capital_gain"])
    np.testing.assert_array_equal(v[:, 2], [1, 0, 1, 0, 1, 0])
    np.testing.assert_array_equal(v[:, 3], [0, 1, 1, 0, 0, 1])
    np.testing.assert_allclose(query.reduce(v.sum(axis=0), len(df)), query.evaluate(df))
    np.testing.assert_allclose(query.scales(4), [0.25, 1.0, 1.0, 0.25])
    # any subset from gathered rows equals evaluating the sub-frame
    subsets = np.array([[0, 2, 3], [1, 4, 5], [5, 0, 1]])
    many = query.evaluate_rows(v, subsets)
    assert many.shape == (3, 4)
    for row, idx in zip(many, subsets, strict=True):
        np.testing.assert_allclose(row, query.evaluate(df.iloc[idx]))
    np.testing.assert_allclose(query.evaluate_rows(v, subsets[0]), many[0])
    # batched reduce with one n per dataset
    np.testing.assert_allclose(
        query.reduce(np.stack([v[:2].sum(0), v[:3].sum(0)]), np.array([2, 3])),
        np.stack([query.evaluate(df.iloc[:2]), query.evaluate(df.iloc[:3])]),
    )


def test_query_errors(df, query):
    with pytest.raises(InvalidParameterError, match="unique"):
        Query(["mean:age", "mean:age"])
    with pytest.raises(InvalidParameterError, match="at least one"):
        Query([])
    with pytest.raises(InvalidTypeError, match="statistics"):
        Query(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="length m = 4"):
        query.reduce(np.ones(3), 10)
    with pytest.raises(InvalidParameterError, match="n"):
        query.reduce(np.ones(4), 0)
    with pytest.raises(InvalidTypeError, match="integer"):
        query.evaluate_rows(query.column_matrix(df), np.array([0.5, 1.0]))
    with pytest.raises(UnknownLabelError, match="'nope'"):
        Query(["mean:nope"]).column_matrix(df)
    assert Query("mean:age") == Query([Statistic.parse("mean:age")])
    assert Query(query) == query


def test_adult_query_matches_table_1():
    assert ADULT_QUERY.names == (
        "Average age",
        "Average years of education",
        "Num. of never married individuals",
        "Num. of female individuals",
        "Average hours worked per week",
    )
    assert [s.kind for s in ADULT_QUERY.statistics] == ["mean", "mean", "count", "count", "mean"]
    assert [s.column for s in ADULT_QUERY.statistics] == ["age", "education_num", None, None, "hours_per_week"]
    assert ADULT_QUERY.statistics[2].predicate == Predicate("marital_status=Never-married")
    assert ADULT_QUERY.statistics[3].predicate == Predicate("sex=Female")


def test_adult_query_on_records():
    frame = pd.DataFrame(
        {
            "age": [39, 50, 38, 53],
            "education_num": [13, 13, 9, 7],
            "marital_status": pd.Categorical(
                ["Never-married", "Married-civ-spouse", "Divorced", "Never-married"]
            ),
            "sex": pd.Categorical(["Male", "Female", "Female", "Female"]),
            "hours_per_week": [40, 13, 40, 40],
        }
    )
    np.testing.assert_allclose(ADULT_QUERY.evaluate(frame), [45.0, 10.5, 2.0, 3.0, 33.25])
    np.testing.assert_allclose(
        ADULT_QUERY.reduce(ADULT_QUERY.column_matrix(frame).sum(axis=0), 4), [45.0, 10.5, 2.0, 3.0, 33.25]
    )


def test_record_sensitivities_rules():
    """range/n for means, range for sums, 1 for counts, 1/n for proportions (Sec. 6.1 baselines)."""
    frame = pd.DataFrame({"age": [20, 30, 70], "sex": ["Female", "Male", "Female"]})
    q = Query(["mean:age", "sum:age", "count:sex=Female", "proportion:sex=Female"])
    assert q.record_sensitivities(frame, 10) == pytest.approx([5.0, 50.0, 1.0, 0.1])
    with pytest.raises(InvalidParameterError, match="n"):
        q.record_sensitivities(frame, 0)
