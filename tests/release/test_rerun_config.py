"""The published spec is the library's record of how to re-run a release (issue 24): ``rerun_config`` of
``provenance.spec`` is a spec file that ``distpriv release --config`` reads, and re-running it on the same data
at the same seed gives the same ``release.json`` apart from :data:`MAY_DIFFER`; a command line is the CLI's
rendering alone, and no ``"--flag"`` string is left in the library."""

from __future__ import annotations

import copy
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from distpriv.cli.command import command_line, config_args
from distpriv.release import grid, protect
from distpriv.release.public import MAY_DIFFER, config_toml, rerun_config
from distpriv.release.spec import load_spec_file

SRC = Path(__file__).resolve().parents[2] / "src" / "distpriv"
SEED = 11


def _drop(doc: Any, path: str) -> None:
    head, _, rest = path.partition(".")
    many = head.endswith("[]")
    key = head[:-2] if many else head
    if not isinstance(doc, dict) or key not in doc:
        return
    nodes = doc[key] if many else [doc[key]]
    if not rest:
        del doc[key]
        return
    for node in nodes:
        _drop(node, rest)


def _public(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for path in MAY_DIFFER:
        _drop(out, path)
    return out


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from test_release_privacy import table

    d = tmp_path_factory.mktemp("rerun")
    table(1_500, 600, 1, 1_000_000).to_csv(d / "pop.csv", index=False)
    table(200, 80, 2, 0).to_csv(d / "data.csv", index=False)
    protect(d / "data.csv", stats=["mean:age", "count:sex=Female"], names=["age", "count:sex=Female"],
            protect="income=>50K", pairs=grid(0.3, 0.5, 0.1), epsilon=1.0, delta=1e-3,
            population=d / "pop.csv", samples=40, seed=SEED, out=d / "first")
    return d, json.loads((d / "first" / "release.json").read_text())


def test_provenance_has_no_command_and_the_config_round_trips(first: tuple[Path, dict[str, Any]]) -> None:
    d, doc = first
    spec = doc["provenance"]["spec"]
    assert "command" not in spec
    cfg = rerun_config(spec, data="data.csv", population="pop.csv")
    assert cfg["stats"] == {"age": "mean:age", "count:sex=Female": "count:sex=Female"}  # names kept: a table
    assert cfg["range"] == "0.3:0.5" and cfg["gap"] == 0.1 and "pairs" not in cfg
    assert cfg["population"] == "pop.csv" and cfg["samples"] == 40 and "n" not in cfg  # n: the table's own
    (d / "rerun.toml").write_text(config_toml(cfg), encoding="utf-8")
    back = load_spec_file(d / "rerun.toml")
    assert back["data"] == d / "data.csv" and back["population"] == d / "pop.csv"  # resolved against the file
    assert back["names"] == ["age", "count:sex=Female"] and back["stats"] == ["mean:age", "count:sex=Female"]
    assert {k: v for k, v in back.items() if k not in ("data", "population", "stats", "names")} == {
        k: v for k, v in cfg.items() if k not in ("data", "population", "stats")}


def test_rerun_from_the_published_spec_gives_the_same_release(first: tuple[Path, dict[str, Any]]) -> None:
    """Same data, same seed, the spec file of the published spec: the same release.json apart from MAY_DIFFER
    (and, seeded, the same values too)."""
    from distpriv.release.run import run_release
    from distpriv.release.spec import build_spec

    d, doc = first
    cfg = {**rerun_config(doc["provenance"]["spec"], data="data.csv", population="pop.csv"), "seed": SEED}
    (d / "seeded.toml").write_text(config_toml(cfg), encoding="utf-8")
    spec = build_spec(data=None, stats=None, protect=None, pairs=None, around=None, gap=None, epsilon=None,
                      delta=None, mechanism=None, population=None, config=d / "seeded.toml")
    run_release(spec, data=None, out=d / "second", force=False, show_progress=False)
    again = json.loads((d / "second" / "release.json").read_text())
    assert _public(again) == _public(doc)
    assert [s["value"] for s in again["statistics"]] == [s["value"] for s in doc["statistics"]]
    assert again["provenance"]["spec"] == doc["provenance"]["spec"]
    assert config_toml(rerun_config(doc["provenance"]["spec"])) in (d / "second" / "report.md").read_text()


def test_command_line_is_the_clis_rendering_of_the_config(first: tuple[Path, dict[str, Any]]) -> None:
    _, doc = first
    cfg = rerun_config(doc["provenance"]["spec"])
    args = shlex.split(command_line(cfg))
    assert args[:3] == ["distpriv", "release", "DATA"]
    assert args[3:9] == ["--stat", "mean:age", "--stat", "count:sex=Female", "--protect", "income=>50K"]
    assert args[args.index("--range") + 1] == "0.3:0.5" and args[args.index("--gap") + 1] == "0.1"
    assert args[args.index("--population") + 1] == "POP" and "--n" not in args
    assert config_args({"pairs": [[0.45, 0.55]], "model_from_data": True, "sep": None}) == [
        "--pairs", "0.45,0.55", "--model-from-data"]


def test_n_only_where_the_release_had_to_declare_it(first: tuple[Path, dict[str, Any]]) -> None:
    """With ``missing = "drop"`` a population release needs a declared n (the kept count): the recipe carries it;
    from the data, n is the kept count by itself; with nothing dropped, n is the table's row count."""
    spec = copy.deepcopy(first[1]["provenance"]["spec"])
    spec["missing"] = "drop"
    assert rerun_config(spec)["n"] == 200
    spec["model"]["source"] = "data"
    cfg = rerun_config(spec)
    assert "n" not in cfg and cfg["model_from_data"] is True and "population" not in cfg


def test_config_toml_writes_what_toml_reads_back() -> None:
    from distpriv.release.spec import tomllib  # tomllib, or tomli before Python 3.11

    cfg = {"protect": 'a="b\\c"\x7f', "epsilon": 1e-06, "delta": float("inf"), "n": 3, "model_from_data": False,
           "pairs": [[0.1, 0.30000000000000004]], "stats": {"x\u202e y": "mean:x"}, "sep": "\t"}
    text = config_toml(cfg)
    assert tomllib.loads(text) == cfg
    assert "\u202e" not in text and "\x7f" not in text and "\t" not in text  # escaped: safe to show in a report


def test_no_flag_string_outside_the_cli() -> None:
    """Issue 24: a command line is the CLI's business; the library names Python arguments only."""
    flag = re.compile(r"[\"']--[a-z][a-z-]+")
    hits = [f"{p.relative_to(SRC)}:{i}" for p in SRC.rglob("*.py") if "cli" not in p.relative_to(SRC).parts[:1]
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if flag.search(line)]
    assert hits == []
