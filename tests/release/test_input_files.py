"""Real files as they come (issue 23): NA tokens, CSV options on every input, engine errors in one line naming
the file, the line and the option, numbers stored as text, the kept count of --missing drop for the curator."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from _cli import run_in_process
from distpriv import data as dd
from distpriv.cli.arguments import flag_for, render_error
from distpriv.data.sources import NA_VALUES, translate_engine_error
from distpriv.errors import EngineError, InvalidParameterError, InvalidTypeError
from distpriv.queries import Predicate, Query
from distpriv.release.data import csv_options, open_input
from distpriv.release.public import curator_lines
from distpriv.release.spec import build_spec

Q = Query(["mean:body_mass_g"])
PROTECT = "species=Adelie"

# 12 rows, R's NA marker in a numeric column (as palmerpenguins ships its CSV)
ROWS = [("Adelie", "3750"), ("Adelie", "NA"), ("Gentoo", "5000"), ("Gentoo", "4875"), ("Adelie", "3250"),
        ("Chinstrap", "3800"), ("Gentoo", "NaN"), ("Adelie", "3650"), ("Gentoo", "5250"), ("Adelie", "null"),
        ("Chinstrap", "3700"), ("Gentoo", "")]
KNOWN = [float(v) for _, v in ROWS if v not in NA_VALUES]


def _write(path: Path, rows: list[tuple[str, str]], *, sep: str = ",", encoding: str = "utf-8",
           quote: bool = False) -> Path:
    q = '"' if quote else ""
    lines = [f"species{sep}body_mass_g"] + [f"{s}{sep}{q}{v}{q}" for s, v in rows]
    path.write_bytes(("\n".join(lines) + "\n").encode(encoding))
    return path


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and len(msg) < 400, msg
    return msg


def test_na_tokens_are_missing_in_every_input(tmp_path):
    path = _write(tmp_path / "p.csv", ROWS)
    t = dd.open_table(path)
    assert t.schema["body_mass_g"].is_numeric()  # 'NA', 'NaN', 'null' and '' did not turn the column into text
    with pytest.raises(InvalidParameterError, match="missing values") as exc:
        dd.summarize(t, Q, PROTECT)
    assert "body_mass_g" in _one_line(exc)
    s = dd.summarize(t, Q, PROTECT, missing="drop")
    assert s.rows == 12 and s.kept == len(KNOWN) == 8
    np.testing.assert_allclose(s.values, [np.mean(KNOWN)], rtol=1e-12)
    # the population is opened with the same options (open_input, as prepare does for --population)
    spec = build_spec(data=path, stats=["mean:body_mass_g"], protect=PROTECT, pairs=["0.4,0.5"], around=None,
                      gap=None, epsilon=1.0, delta=1e-3, mechanism=None, population=path, config=None,
                      missing="drop")
    pop = open_input(path, Q, Predicate(PROTECT), what="population", missing="drop",
                     **csv_options(spec, "population"))
    assert pop.kept == 8


def test_na_values_option_replaces_the_tokens(tmp_path):
    path = _write(tmp_path / "p.csv", [("Adelie", "-999"), ("Gentoo", "5000"), ("Adelie", "3000"), ("Gentoo", "")])
    s = dd.summarize(dd.open_table(path, na_values="-999"), Q, PROTECT, missing="drop")
    assert (s.rows, s.kept) == (4, 2)
    np.testing.assert_allclose(s.values, [4000.0])
    # without the token, -999 is a number like any other (and the empty cell is still missing)
    s = dd.summarize(dd.open_table(path), Q, PROTECT, missing="drop")
    np.testing.assert_allclose(s.values, [(5000 + 3000 - 999) / 3])
    # a token that NA_VALUES holds is no longer missing once --na-values replaces the list: the column is text
    path2 = _write(tmp_path / "q.csv", [("Adelie", "NA"), ("Gentoo", "5000")])
    with pytest.raises(InvalidTypeError, match=r"'NA', which is not a number; if it marks a missing value, list it "
                                               r"in na_values="):
        dd.summarize(dd.open_table(path2, na_values="-999"), Q, PROTECT)


def test_numbers_stored_as_text(tmp_path):
    rows = [("Adelie", "3,250"), ("Gentoo", "5,000"), ("Adelie", "3,750"), ("Gentoo", "4,875")]
    path = _write(tmp_path / "t.csv", rows, quote=True)
    with pytest.raises(InvalidTypeError) as exc:
        dd.summarize(dd.open_table(path), Q, PROTECT)
    msg = _one_line(exc)
    assert "'body_mass_g' has dtype String in data" in msg
    assert "'3,250'" in msg or "'5,000'" in msg or "'3,750'" in msg or "'4,875'" in msg
    assert "thousands= ','" in msg and "--thousands ','" in render_error(exc.value)
    s = dd.summarize(dd.open_table(path, thousands=","), Q, PROTECT)
    np.testing.assert_allclose(s.values, [(3250 + 5000 + 3750 + 4875) / 4])
    # European format: ';' between cells, ',' as the decimal mark and '.' between thousands
    path = _write(tmp_path / "e.csv", [("Adelie", "3.250,5"), ("Gentoo", "5.000,5")], sep=";")
    with pytest.raises(InvalidTypeError, match=r"decimal= ',' thousands= '\.'"):
        dd.summarize(dd.open_table(path, sep=";"), Q, PROTECT)
    s = dd.summarize(dd.open_table(path, sep=";", decimal=",", thousands="."), Q, PROTECT)
    np.testing.assert_allclose(s.values, [(3250.5 + 5000.5) / 2])
    with pytest.raises(InvalidParameterError, match="^thousands: '.' is also the decimal mark; give decimal= as well"):
        dd.open_table(path, thousands=".")
    with pytest.raises(InvalidParameterError, match="^decimal: expected '.' or ','"):
        dd.open_table(path, decimal=";")


def test_engine_errors_name_file_line_and_option(tmp_path):
    path = _write(tmp_path / "latin.csv", [("Adélie", "3750"), ("Gentoo", "5000")], encoding="latin-1")
    with pytest.raises(EngineError) as exc:
        dd.summarize(dd.open_table(path, what="population"), Q, PROTECT)
    msg = _one_line(exc)
    # the library names Python arguments; the CLI's render_error spells the same error with flags
    assert msg.startswith("population: ") and "latin.csv line 2" in msg and "encoding=" in msg
    assert exc.value.argument == "population" and exc.value.related == ("encoding", "population_encoding")
    cli = render_error(exc.value)
    assert cli.startswith("--population: ") and "--encoding (or --population-encoding) (e.g. latin-1)" in cli and "encoding=" not in cli
    s = dd.summarize(dd.open_table(path, encoding="latin-1"), Q, "species=Adélie")
    np.testing.assert_allclose(s.values, [4375.0])
    # a value beyond DuckDB's type-sniffing sample: the line, the column and the value are named
    big = tmp_path / "big.csv"
    big.write_text("species,body_mass_g\n" + "Adelie,3000\nGentoo,5000\n" * 15_000 + "Gentoo,n.a.\n")
    with pytest.raises(EngineError) as exc:
        dd.summarize(dd.open_table(big), Q, PROTECT)
    msg = _one_line(exc)
    assert "big.csv line 30002" in msg and "'n.a.'" in msg and "na_values=" in msg
    assert "--na-values" in render_error(exc.value)
    s = dd.summarize(dd.open_table(big, na_values="n.a."), Q, PROTECT, missing="drop")
    assert s.kept == 30_000
    # a translated message never carries DuckDB's multi-line report; other engines keep their first line
    assert translate_engine_error("Boom\nmore", "data", "polars") == "data: polars engine error: Boom"


def test_cli_refusals_one_line_nothing_written(tmp_path):
    """In-process (the console script's entry point with a fresh process's warnings; its own exit status end to end:
    tests/release/test_release.py): the latin-1 population without --encoding; --missing drop without --n (with the kept count
    on a curator: line, never in a file)."""
    data = _write(tmp_path / "d.csv", ROWS)
    pop = _write(tmp_path / "pop.csv", [("Adélie", "3750"), ("Adelie", "3650"), ("Gentoo", "5000")] * 20,
                 encoding="latin-1")
    base = [sys.executable, "-m", "distpriv.cli", "release", "--stat", "mean:body_mass_g", "--pairs", "0.4,0.5",
            "--epsilon", "1", "--delta", "1e-3", "--samples", "50"]
    out = tmp_path / "out"
    res = run_in_process([*base[3:], str(data), "--protect", PROTECT, "--population", str(pop), "--missing", "drop",
                          "--out", str(out)], tmp_path, fresh_warnings=True)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("distpriv: error: --population: cannot read pop.csv line 2")
    assert "--encoding" in lines[0] and not out.exists() and res.stdout == ""
    res = run_in_process([*base[3:], str(data), "--protect", PROTECT, "--population", str(data), "--missing", "drop",
                          "--out", str(out)], tmp_path)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines == ["curator: --missing drop kept 8 of the data's 12 rows (--n 8 declares that count public)",
                     lines[1]]
    assert lines[1].startswith("distpriv: error: --missing: drop: 4 rows were dropped from the data (not the "
                               "population)")
    assert not out.exists() and res.stdout == ""


def test_kept_count_is_a_curator_note_never_public(tmp_path):
    from distpriv.release import protect

    data = _write(tmp_path / "d.csv", ROWS)
    pop = _write(tmp_path / "pop.csv", ROWS * 5)
    res = protect(str(data), stats=["mean:body_mass_g"], protect=PROTECT, pairs=[(0.3, 0.4)], epsilon=1.0,
                  delta=1e-3, population=str(pop), missing="drop", n=8, samples=40, seed=3)
    # notes refer to arguments as {arg:name}: Python callers read missing=, the CLI's curator: lines --missing
    assert res.curator_notes == ["{arg:missing} drop kept 8 of the data's 12 rows"]
    assert curator_lines(res.curator_notes) == ["curator: missing= drop kept 8 of the data's 12 rows"]
    assert curator_lines(res.curator_notes, flag_for) == ["curator: --missing drop kept 8 of the data's 12 rows"]
    assert "kept 8" not in str(res.to_json())
    assert res.prepared.data.values[0] == pytest.approx(np.mean(KNOWN))


def test_population_options_and_blame(tmp_path):
    """--encoding/--sep reach the population (with per-input overrides); a text column names the population."""
    data = _write(tmp_path / "d.csv", ROWS)
    pop = _write(tmp_path / "pop.csv", [("Adélie", "3750"), ("Adelie", "3650"), ("Gentoo", "5000")] * 5, sep=";",
                 encoding="latin-1")
    kw = dict(data=data, stats=["mean:body_mass_g"], protect=PROTECT, pairs=["0.4,0.5"], around=None, gap=None,
              epsilon=1.0, delta=1e-3, mechanism=None, population=pop, config=None, missing="drop")
    for spec in (build_spec(**kw, sep=";", encoding="latin-1"),  # one set of options for every input ...
                 build_spec(**kw, population_sep=";", population_encoding="latin-1")):  # ... or the population's
        table = open_input(pop, Q, Predicate(PROTECT), what="population", **csv_options(spec, "population"))
        assert table.rows == 15 and int(table.summary.moments.counts[0]) == 5  # 'Adelie' rows (not 'Adélie')
        assert csv_options(spec, "data")["na_values"] is None  # the defaults: NA_VALUES
    text = _write(tmp_path / "text.csv", [("Adelie", "3 250 g"), ("Gentoo", "5000")])
    with pytest.raises(InvalidTypeError, match=r"has dtype String in population \(it holds text such as "
                                               r"'3 250 g'"):
        dd.summarize(dd.open_table(text, what="population"), Q, PROTECT)
