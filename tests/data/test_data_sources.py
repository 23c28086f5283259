"""Opening tables: files and globs through DuckDB, frames through narwhals, CSV options, one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from _data_backends import as_backend, mixed_table
from distpriv import data as dd
from distpriv.errors import (
    DataUnavailableError,
    EngineError,
    InvalidParameterError,
    InvalidTypeError,
)
from distpriv.moments import GroupMoments
from distpriv.queries import Query

Q = Query(["mean:my age", "count:sex=Female"])


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return mixed_table(400, seed=1)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and len(msg) < 400
    return msg


@pytest.mark.parametrize(
    ("backend", "expected"),
    [("pandas", "pandas"), ("polars", "polars"), ("polars-lazy", "polars-lazy"), ("pyarrow", "pyarrow"),
     ("duckdb", "duckdb"), ("parquet", "duckdb"), ("csv", "duckdb"), ("parquet-glob", "duckdb")],
)
def test_open_table_backends(backend, expected, table, tmp_path):
    t = dd.open_table(as_backend(table, backend, tmp_path))
    assert t.backend == expected
    assert t.columns == list(table.columns)
    assert dd.open_table(t) is t
    assert len(t.files) == {"parquet": 1, "csv": 1, "parquet-glob": 3}.get(backend, 0)


def test_glob_list_and_order(table, tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    table.iloc[:150].to_parquet(a)
    table.iloc[150:].to_parquet(b)
    t = dd.open_table([b, str(tmp_path / "a*.parquet")])
    assert [p.name for p in t.files] == ["b.parquet", "a.parquet"]
    s = dd.summarize(t, Q, "income=>50K")
    ref = GroupMoments.from_frame(table, Q, "income=>50K")
    np.testing.assert_array_equal(s.moments.counts, ref.counts)
    np.testing.assert_allclose(s.moments.sums, ref.sums)


def test_file_errors(table, tmp_path):
    with pytest.raises(DataUnavailableError) as exc:
        dd.open_table(str(tmp_path / "nothing" / "*.parquet"))
    assert "data: no file matches" in _one_line(exc)
    with pytest.raises(DataUnavailableError, match="population: file not found"):
        dd.open_table(tmp_path / "missing.csv", what="population")
    with pytest.raises(InvalidParameterError, match="is a directory; pass a glob"):
        dd.open_table(tmp_path)
    (tmp_path / "x.xlsx").write_bytes(b"PK")
    with pytest.raises(InvalidParameterError, match="unsupported file type '.xlsx'"):
        dd.open_table(tmp_path / "x.xlsx")
    table.to_csv(tmp_path / "t.csv", index=False)
    table.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(InvalidParameterError, match="cannot mix CSV and Parquet"):
        dd.open_table([tmp_path / "t.csv", tmp_path / "t.parquet"])
    with pytest.raises(InvalidParameterError, match="sep, encoding: only apply to CSV files"):
        dd.open_table(tmp_path / "t.parquet", sep=";")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 this is not a parquet file")
    with pytest.raises(EngineError) as exc:
        dd.open_table(tmp_path / "broken.parquet")
    assert _one_line(exc).startswith("data (broken.parquet): duckdb engine error:")


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_column_missing_from_some_files(suffix, table, tmp_path):
    parts = [table.iloc[:100], table.iloc[100:200].drop(columns=["sex"]), table.iloc[200:]]
    for i, part in enumerate(parts):
        path = tmp_path / f"part-{i}.{suffix}"
        part.to_parquet(path) if suffix == "parquet" else part.to_csv(path, index=False)
    pattern = str(tmp_path / f"part-*.{suffix}")
    with pytest.raises(InvalidParameterError) as exc:
        dd.summarize(pattern, Q, "income=>50K")
    assert _one_line(exc) == f"data: column 'sex' is missing from 1 of 3 files: ['part-1.{suffix}']"
    # statistics that do not read the column still work on the union of the files
    s = dd.summarize(pattern, ["mean:my age"], "income=>50K")
    assert s.kept == len(table)


def test_unsupported_inputs(table):
    for bad in ({"a": [1]}, np.zeros((3, 2)), 42, [1, 2]):
        with pytest.raises(InvalidTypeError) as exc:
            dd.open_table(bad)
        msg = _one_line(exc)
        assert "pandas, Polars (eager or lazy), pyarrow, DuckDB relation, Dask or PySpark DataFrame" in msg
    with pytest.raises(InvalidParameterError, match="sep, encoding: only apply to CSV file inputs"):
        dd.open_table(table, sep=";")


def test_csv_options_sep_encoding_and_spaces(tmp_path):
    text = "name;my age;town\nZoë;41;Montréal\nRené;35;Québec\nAnn;29;Montréal\n"
    path = tmp_path / "latin.csv"
    path.write_bytes(text.encode("latin-1"))
    ref = pd.read_csv(path, sep=";", encoding="latin-1")
    s = dd.summarize(path, ["mean:my age", "count:town=Montréal"], "name=René", sep=";", encoding="latin1")
    np.testing.assert_allclose(s.values, [ref["my age"].mean(), 2.0])
    assert s.moments.counts.tolist() == [1, 2]
    with pytest.raises(InvalidParameterError, match="encoding: 'cp1252' is not supported for lazy CSV scans"):
        dd.open_table(path, encoding="cp1252")
    with pytest.raises(InvalidParameterError, match="encoding: unknown encoding 'klingon'"):
        dd.open_table(path, encoding="klingon")
    with pytest.raises(InvalidParameterError, match="sep: expected a single character"):
        dd.open_table(path, sep=";;")
    # spaces after the delimiter, as in the UCI Adult files: stripped like pandas' skipinitialspace
    spaced = tmp_path / "spaced.csv"
    spaced.write_text("age, sex, income\n39, Male, <=50K\n50, Female, >50K\n38, Female, >50K\n")
    s = dd.summarize(spaced, ["mean:age", "count:sex=Female"], "income=>50K")
    np.testing.assert_allclose(s.values, [127 / 3, 2.0])
    assert s.moments.counts.tolist() == [2, 1]
    tsv = tmp_path / "t.tsv"
    tsv.write_text("a\tb\n1\tx\n2\ty\n")
    assert dd.summarize(tsv, ["sum:a"], "b=x").values.tolist() == [3.0]
