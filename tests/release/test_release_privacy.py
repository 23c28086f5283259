"""``distpriv release`` keeps its promise (issue 10): the real console script on temporary files.

* public outputs of two datasets at θ = 0.45 and 0.55 with the same public inputs are identical apart from
  the noisy values (every file: JSON structurally, Markdown/HTML after masking the values, PNG bytes);
  with --model-from-data nothing differs beyond the fields the payload declares data-dependent;
* fresh noise every run, seeded runs flagged;
* composition through private ledgers: chains add up, shared rows are found by content, every bad ledger
  and every bad model file is one line on stderr, exit 2, nothing written.

The two-dataset diffs, the composition releases (the chain, Prop. A.4), the seeded runs and most refusals run the
console script's entry point in-process with the warnings a fresh process shows
(``_cli.run_in_process(fresh_warnings=True)``; a process each added only its imports, issue 26); the two unseeded
fresh-noise runs and one refusal per test stay subprocesses.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _cli import run_in_process
from distpriv.errors import InvalidParameterError, InvalidTypeError
from test_release import run_all

BASE = ["--protect", "income=>50K", "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1e-3"]
STATS = ["--stat", "mean:age", "--stat", "count:sex=Female"]


def table(n: int, k: int, seed: int, start_id: int) -> pd.DataFrame:
    """n rows, k of them with income '>50K' (age and sex depend on it); ids make rows distinct."""
    r = np.random.default_rng(seed)
    flag = np.zeros(n, dtype=bool)
    flag[:k] = True
    r.shuffle(flag)
    return pd.DataFrame({
        "id": np.arange(start_id, start_id + n),
        "income": np.where(flag, ">50K", "<=50K"),
        "age": np.round(r.normal(40, 10, n) + 5 * flag),
        "sex": np.where(r.random(n) < 0.3 + 0.15 * flag, "Female", "Male"),
        "hours": np.round(r.normal(40, 6, n), 1),
    })


MODEL_TOML = """statistics = ["mean:age", "count:sex=Female"]
[theta."0.45"]
mean = [42.25, 147.0]
covariance = [[0.26, 0.1], [0.1, 90.0]]
[theta."0.55"]
mean = [42.75, 153.0]
covariance = [[0.26, 0.1], [0.1, 90.0]]
"""


@pytest.fixture(scope="module")
def pub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("privacy")
    table(12_000, 5_000, 1, 1_000_000).to_csv(d / "pop.csv", index=False)
    table(400, 180, 2, 0).to_csv(d / "d45.csv", index=False)  # θ = 0.45
    table(400, 220, 3, 1_000).to_csv(d / "d55.csv", index=False)  # θ = 0.55, other rows
    table(400, 200, 4, 2_000).to_csv(d / "e1.csv", index=False)
    table(400, 200, 5, 3_000).to_csv(d / "e2.csv", index=False)
    (d / "model.toml").write_text(MODEL_TOML)
    return d




def without_values(doc: dict) -> dict:
    """The payload without the fields that may differ between two datasets (MAY_DIFFER: values, provenance time/id)."""
    from distpriv.release.public import MAY_DIFFER

    d = copy.deepcopy(doc)
    for path in MAY_DIFFER:
        _drop(d, path)
    return d


def mask(text: str, values: list[float], doc: dict | None = None) -> str:
    """``text`` with the values (and, given ``doc``, their displays and interval ends) replaced by VALUE."""
    if doc is not None:
        for s in doc["statistics"]:
            text = text.replace(s["display"], "VALUE")
        values = [*values, *(e for s in doc["statistics"] for e in s["interval"])]
    for v in sorted({repr(float(x)) for x in values}, key=len, reverse=True):
        text = re.sub(rf"(?<![\d.]){re.escape(v)}(?![\d])", "VALUE", text)
    if doc is not None and "provenance" in doc:  # the renderings of provenance.time and provenance.release_id
        text = text.replace(doc["provenance"]["time"], "TIME").replace(doc["provenance"]["release_id"], "ID")
    return text


def public_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()
                  and p.relative_to(folder).parts[0] != "private")


# --------------------------------------------------------------------------- the two-dataset diff
@pytest.fixture(scope="module")
def diff_runs(pub: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    common = [*STATS, *BASE, "--samples", "150", "--format", "json"]
    return {name: run_in_process(args, pub, fresh_warnings=True) for name, args in {
        "pop45": ["release", "d45.csv", *common, "--population", "pop.csv", "--out", "pop45"],
        "pop55": ["release", "d55.csv", *common, "--population", "pop.csv", "--out", "pop55"],
        "data45": ["release", "d45.csv", *common, "--model-from-data", "--out", "data45"],
        "data55": ["release", "d55.csv", *common, "--model-from-data", "--out", "data55"],
    }.items()}


def test_population_release_public_outputs_differ_only_in_the_noisy_values(
        pub: Path, diff_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    a, b = diff_runs["pop45"], diff_runs["pop55"]
    assert a.returncode == 0, a.stderr
    assert b.returncode == 0, b.stderr
    # stderr: public warnings only (functions of the public inputs): identical; the spread warning is gone (issue 21)
    assert a.stderr == b.stderr
    assert "the noise on" not in a.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    assert without_values(ja) == without_values(jb)
    va, vb = [s["value"] for s in ja["statistics"]], [s["value"] for s in jb["statistics"]]
    assert va != vb
    assert ja["randomness"] == "os" and ja["data_dependent"] == [] and ja["warnings"] == []
    assert ja["report"]["modelling"]["source"] == "population"
    fa, fb = pub / "pop45", pub / "pop55"
    assert public_files(fa) == public_files(fb) == [
        "figures/attack_accuracy.png", "figures/error_vs_epsilon.png", "figures/f_theta.png",
        "release.json", "report.html", "report.md"]
    assert json.loads((fa / "release.json").read_text()) == ja
    assert json.loads((fb / "release.json").read_text()) == jb
    for name in ("report.md", "report.html"):
        ta, tb = (fa / name).read_text(), (fb / name).read_text()
        assert all(s["display"] in ta for s in ja["statistics"])  # the values are there, masked below
        assert mask(ta, va, ja) == mask(tb, vb, jb), name
    for png in ("attack_accuracy", "error_vs_epsilon", "f_theta"):
        assert (fa / "figures" / f"{png}.png").read_bytes() == (fb / "figures" / f"{png}.png").read_bytes()
    for name in ("release.json", "report.md"):  # nothing about the data file (its name, as a word: the random
        assert not re.search(r"\bd45\b", (fa / name).read_text())  # release id's hex digits may contain "d45")
    # values lie on the published grid
    g = ja["noise"]["grid"]
    coord_std = [c["scale"] * (2**0.5 if c["law"] == "laplace" else 1.0) for c in ja["noise"]["coordinates"]]
    smallest = min(s for s in coord_std if s > 0)
    assert g == 2.0 ** ja["noise"]["grid_log2"] and smallest / 2048 < g <= smallest / 1024
    grids = [s["grid"] for s in ja["statistics"]]  # per statistic (unit-free noise): powers of two <= d_k·g
    assert grids == [s["grid"] for s in jb["statistics"]]
    assert all(v / gk == round(v / gk) for vs in (va, vb) for v, gk in zip(vs, grids, strict=True))


def _drop(doc: dict, path: str) -> None:
    head, _, rest = path.partition(".")
    if head.endswith("[]"):
        for item in doc.get(head[:-2], []):
            if rest:
                _drop(item, rest)
        return
    if head.endswith("]") or head not in doc:
        return
    if rest:
        _drop(doc[head], rest)
    else:
        doc.pop(head)


def test_model_from_data_differs_only_in_declared_fields(
        pub: Path, diff_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    a, b = diff_runs["data45"], diff_runs["data55"]
    assert a.returncode == 0, a.stderr
    assert b.returncode == 0, b.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    assert ja["data_dependent"] == jb["data_dependent"] and "statistics[].noise_std" in ja["data_dependent"]
    assert "outside the guarantee" in ja["warnings"][0]
    assert "diagnostics" not in ja["report"]  # no tests computed from the private rows are published
    da, db = without_values(ja), without_values(jb)
    for path in ja["data_dependent"]:
        _drop(da, path)
        _drop(db, path)
    assert da == db
    assert "mechanism" not in da and "noise" not in da  # the declared fields really were removed
    assert ja["statistics"][0]["noise_std"] != jb["statistics"][0]["noise_std"]  # the scale depends on the data
    for folder in (pub / "data45", pub / "data55"):
        assert public_files(folder) == ["release.json", "report.html", "report.md"]  # no figures of private rows
        md = (folder / "report.md").read_text().splitlines()
        assert md[0] == "# distpriv release report" and md[2] == "## Read this first"
        assert "outside the guarantee" in md[4] and "--model-from-data" in md[4]


# --------------------------------------------------------------------------- randomness
def test_fresh_noise_every_run_seeded_runs_flagged(pub: Path) -> None:
    common = ["release", "d45.csv", *STATS, *BASE, "--model", "model.toml", "--format", "json"]
    # the two unseeded runs in two fresh processes (fresh noise per process and per run); the seeded runs and the
    # other dataset through the same entry point in-process, with a fresh process's warnings (issue 26)
    res = run_all({"os1": common, "os2": common}, pub)
    res.update({k: run_in_process(v, pub, fresh_warnings=True) for k, v in {
        "s1": [*common, "--seed", "7"], "s2": [*common, "--seed", "7"],
        "other": ["release", "d55.csv", *STATS, *BASE, "--model", "model.toml", "--format", "json"]}.items()})
    for r in res.values():
        assert r.returncode == 0, r.stderr
    docs = {k: json.loads(r.stdout) for k, r in res.items()}
    vals = {k: [s["value"] for s in d["statistics"]] for k, d in docs.items()}
    assert vals["os1"] != vals["os2"]  # two unseeded runs of the same data differ
    assert vals["s1"] == vals["s2"]  # a seed reproduces the noise ...
    for k in ("s1", "s2"):  # ... and says it is not private
        assert docs[k]["randomness"] == "seeded" and "not private" in docs[k]["warnings"][0]
        assert "warning: a seeded release is not private" in res[k].stderr
    for k in ("os1", "os2", "other"):
        assert docs[k]["randomness"] == "os" and docs[k]["warnings"] == []
        # stderr carries nothing here: no public warning applies, and the spread warning is gone (issue 21)
        assert res[k].stderr == ""
    # a declared model is a public input too: another dataset changes nothing but the values
    assert without_values(docs["os1"]) == without_values(docs["other"])
    m = docs["os1"]["report"]["modelling"]
    assert m["source"] == "model" and m["n"] is None and len(m["input_sha256"]) == 64
    assert "declared in the model file model.toml" in m["note"]


# --------------------------------------------------------------------------- composition
CHAIN = ["--stat", "mean:age", *BASE, "--model-from-data", "--samples", "60", "--mechanism", "expm-laplace",
         "--format", "json"]


@pytest.fixture(scope="module")
def chain(pub: Path) -> dict[str, dict]:
    """Three releases of disjoint tables, each composed with the previous one's ledger (Prop. A.5). Without a
    population the chance collision rate of the shared columns is unknown, so --independent needs --id (issue 27)."""
    out = {}
    for name, data, prev in (("c1", "d45.csv", None), ("c2", "e1.csv", "c1"), ("c3", "e2.csv", "c2")):
        extra = ["--previous", prev, "--independent", "--id", "id"] if prev else []
        r = run_in_process(["release", data, *CHAIN, "--out", name, *extra], pub, fresh_warnings=True)
        assert r.returncode == 0, r.stderr
        out[name] = json.loads(r.stdout)
    return out


def test_three_release_chain_adds_up(pub: Path, chain: dict[str, dict]) -> None:
    assert "composition" not in chain["c1"]
    c2, c3 = chain["c2"]["composition"], chain["c3"]["composition"]
    assert c2["releases"] == 2 and c2["guarantee"]["epsilon"] == pytest.approx(2.0)
    assert c3["releases"] == 3 and c3["guarantee"]["epsilon"] == pytest.approx(3.0)
    assert c3["proposition"] == "A.5" and c3["guarantee"]["delta"] == pytest.approx(3 * c2["guarantee"]["delta"] / 2)
    ledger = json.loads((pub / "c3" / "private" / "ledger.json").read_text())
    assert len(ledger["releases"]) == 3 and ledger["composed"]["epsilon"] == pytest.approx(3.0)
    assert "NOT FOR PUBLICATION" in ledger["notice"]
    public = json.dumps(chain["c3"])
    for e in ledger["releases"]:  # no identifier, key or fingerprint reaches the public payload
        assert e["id"] not in public and e["cells"]["key"] not in public
    assert "fingerprint" not in public
    # fresh noise per release: the differences of the released means are not the differences of the truths
    truths = [pd.read_csv(pub / f)["age"].mean() for f in ("d45.csv", "e1.csv", "e2.csv")]
    vals = [chain[c]["statistics"][0]["value"] for c in ("c1", "c2", "c3")]
    assert vals[1] - vals[0] != truths[1] - truths[0] and vals[2] - vals[1] != truths[2] - truths[1]


def test_shared_rows_are_found_by_content(pub: Path, chain: dict[str, dict]) -> None:
    text = (pub / "d45.csv").read_text()
    assert text.endswith("\n")
    (pub / "d45_byte.csv").write_text(text[:-1] + "7\n")  # one byte appended to the last value
    pd.read_csv(pub / "d45.csv").sample(frac=1.0, random_state=3).to_parquet(pub / "d45.parquet")
    res = _refusals({
        "byte": ["release", "d45_byte.csv", *CHAIN, "--previous", "c1", "--out", "never1"],
        "byte_indep": ["release", "d45_byte.csv", *CHAIN, "--previous", "c1", "--independent", "--out", "never2"],
        "parquet": ["release", "d45.parquet", *CHAIN, "--previous", "c3", "--independent", "--out", "never3"],
        "no_claim": ["release", "d55.csv", *CHAIN, "--previous", "c1", "--out", "never4"],
    }, pub, "byte", fresh_warnings=True, in_process=True)
    for k, r in res.items():
        assert r.returncode == 2, (k, r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stdout == "", (k, r.stderr)
    assert "399 of the 400 rows" in res["byte"].stderr and "same data" in res["byte"].stderr
    assert "399 of the 400 rows" in res["byte_indep"].stderr and "Prop. A.5" in res["byte_indep"].stderr
    assert "400 of the 400 rows" in res["parquet"].stderr  # c3's chain includes c1 (two steps back)
    assert "pass --independent" in res["no_claim"].stderr
    for i in range(1, 5):
        assert not (pub / f"never{i}").exists()


def test_prop_a4_composes_repeated_releases_when_theta_fixes_the_statistic(pub: Path) -> None:
    # proportion:income=>50K is round(θn)/n in every modelled dataset: each θ fixes F (Prop. A.4)
    args = ["--stat", "proportion:income=>50K", *BASE, "--population", "pop.csv", "--samples", "40",
            "--mechanism", "expm-laplace", "--format", "json"]
    first = run_in_process(["release", "d45.csv", *args, "--out", "a4"], pub, fresh_warnings=True)
    assert first.returncode == 0, first.stderr
    again = run_in_process(["release", "d45.csv", *args, "--previous", "a4"], pub, fresh_warnings=True)
    assert again.returncode == 0, again.stderr
    comp = json.loads(again.stdout)["composition"]
    assert comp["proposition"] == "A.4" and comp["guarantee"]["epsilon"] == pytest.approx(2.0)
    assert any("Prop. A.4" in a for a in comp["guarantee"]["assumptions"])


def _ledger_edit(folder: Path, fn: object) -> None:
    path = folder / "private" / "ledger.json"
    doc = json.loads(path.read_text())
    fn(doc)  # type: ignore[operator]
    path.write_text(json.dumps(doc))


def _refusals(cases: dict[str, list[str]], cwd: Path, subprocess_case: str, *, fresh_warnings: bool = False,
              in_process: bool = False) -> dict[str, subprocess.CompletedProcess[str]]:
    """Refused releases: ``subprocess_case`` through the console script (its one stderr line and exit status end to
    end), the others in-process through the same entry point (they stop before computing; a process each would
    add only its ~2 s of imports); ``fresh_warnings``: with the warnings a fresh process shows (_cli.py).
    ``in_process``: ``subprocess_case`` too runs in-process, with the warnings a fresh process shows (the console
    script's own exit status and line are checked end to end elsewhere: tests/release/test_release.py, issue 26)."""
    out = ({subprocess_case: run_in_process(cases[subprocess_case], cwd, fresh_warnings=True)} if in_process
           else run_all({subprocess_case: cases[subprocess_case]}, cwd))
    out.update({k: run_in_process(v, cwd, fresh_warnings=fresh_warnings) for k, v in cases.items()
                if k != subprocess_case})
    return out


def test_bad_previous_folders_one_line_exit_2_nothing_written(pub: Path, chain: dict[str, dict]) -> None:
    variants = {}

    def variant(name: str) -> Path:
        dst = pub / f"bad_{name}"
        shutil.copytree(pub / "c1", dst)
        variants[name] = dst
        return dst

    _ledger_edit(variant("eps_tiny"), lambda d: (d["releases"][0].update(epsilon=1e-9),
                                                 d["composed"].update(epsilon=1e-9)))
    _ledger_edit(variant("eps_negative"), lambda d: d["releases"][0].update(epsilon=-0.9))
    p = variant("nan") / "private" / "ledger.json"
    p.write_text(re.sub(r'"epsilon": 1\.0', '"epsilon": NaN', p.read_text(), count=1))
    (variant("five_fields") / "private" / "ledger.json").write_text(json.dumps(
        {"mechanism": "x", "guarantee": {"epsilon": 0.1, "delta": 0}, "data": {}, "secret": {}, "report": {}}))
    shutil.rmtree(variant("no_ledger") / "private")
    for f in (variant("no_fingerprints") / "private").glob("cells-*.npy"):
        f.unlink()
    foreign = variant("foreign")
    shutil.copy(pub / "c2" / "release.json", foreign / "release.json")  # another release's public file
    # every other malformation is covered in process (test_release_ledger.py); these run the real CLI
    for name in ("eps_negative", "no_fingerprints"):
        variants.pop(name)
    cases = {name: (["release", "e2.csv", *CHAIN, "--previous", str(folder), "--independent", "--out", f"out_{name}"])
             for name, folder in variants.items()}
    cases["old_json"] = ["release", "e2.csv", *CHAIN, "--previous", "c1/release.json", "--independent",
                         "--out", "out_old_json"]
    cases["other_secret"] = ["release", "e2.csv", "--stat", "mean:age", "--protect", "sex=Female", "--pairs",
                             "0.45,0.55", "--epsilon", "1", "--delta", "1e-3", "--model-from-data", "--samples", "60",
                             "--previous", "c1", "--independent", "--out", "out_other_secret"]
    expect = {
        "eps_tiny": "MAC does not match", "eps_negative": "must be > 0", "nan": "NaN",
        "five_fields": "not a distpriv ledger", "no_ledger": "has no private ledger",
        "no_fingerprints": "is missing", "foreign": "does not belong to the ledger",
        "old_json": "is a file; give the --out folder", "other_secret": "same protected property",
    }
    res = _refusals(cases, pub, subprocess_case="foreign", in_process=True)
    for name, r in res.items():
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert r.stderr.startswith("distpriv: error: --previous: ") and r.stderr.count("\n") == 1, (name, r.stderr)
        assert expect[name] in r.stderr, (name, r.stderr)
        assert "Traceback" not in r.stderr and r.stdout == ""
        assert not (pub / f"out_{name}").exists()


# --------------------------------------------------------------------------- --model FILE
MODEL_BAD = {
    "shape": (MODEL_TOML.replace("mean = [42.25, 147.0]", "mean = [42.25, 147.0, 3.0]"), "has shape [3], expected [2]"),
    "asymmetric": (MODEL_TOML.replace("[[0.26, 0.1], [0.1, 90.0]]", "[[0.26, 0.1], [0.3, 90.0]]", 1),
                   "not symmetric"),
    "not_psd": (MODEL_TOML.replace("[[0.26, 0.1], [0.1, 90.0]]", "[[0.26, 9.0], [9.0, 90.0]]", 1),
                "not positive semi-definite"),
    "missing_theta": (MODEL_TOML.replace('[theta."0.55"]', '[theta."0.56"]'), "no θ = 0.55 declared"),
    "statistics": (MODEL_TOML.replace('"count:sex=Female"', '"count:sex=Male"'), "same specs, same order"),
    "malformed": (MODEL_TOML + "mean = = 1\n", "malformed TOML"),
    "unknown_key": ("source = 'census'\n" + MODEL_TOML, "expected exactly the keys"),
    "label": (MODEL_TOML.replace('[theta."0.55"]', '[theta."1.5"]'), "outside [0, 1]"),
    "nan": (MODEL_TOML.replace("147.0", "nan"), "non-finite"),
}


def test_bad_model_files_one_line_exit_2_nothing_written(pub: Path) -> None:
    cases = {}
    for name, (text, _) in MODEL_BAD.items():
        if name not in ("shape", "not_psd", "missing_theta", "malformed"):
            continue  # in process: test_release_selection.py::test_model_file_validation
        (pub / f"m_{name}.toml").write_text(text)
        cases[name] = ["release", "d45.csv", *STATS, *BASE, "--model", f"m_{name}.toml", "--out", f"mout_{name}"]
    (pub / "m_json.json").write_text(json.dumps({"statistics": ["mean:age", "count:sex=Female"],
                                                 "theta": {"0.45": {"mean": [1, 2], "covariance": [[1, 0], [0, 1]]}}}))
    cases["json_missing_theta"] = ["release", "d45.csv", *STATS, *BASE, "--model", "m_json.json", "--out", "mout_js"]
    res = _refusals(cases, pub, subprocess_case="malformed", in_process=True)
    expect = {k: v[1] for k, v in MODEL_BAD.items()} | {"json_missing_theta": "no θ = 0.55 declared"}
    assert len(res) == 5
    for name, r in res.items():
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert r.stderr.startswith("distpriv: error: --model: ") and r.stderr.count("\n") == 1, (name, r.stderr)
        assert expect[name] in r.stderr, (name, r.stderr)
        assert r.stdout == ""
    assert not any(p.name.startswith("mout_") for p in pub.iterdir())


# --------------------------------------------------------------------------- the Python entry point
def test_protect_takes_frames_or_paths_and_writes_the_same_files(pub: Path, tmp_path: Path) -> None:
    from distpriv.release import protect, write_release

    data, pop = pd.read_csv(pub / "d45.csv"), pd.read_csv(pub / "pop.csv")
    kw = {"stats": ["mean:age"], "protect": "income=>50K", "pairs": [(0.45, 0.55)], "epsilon": 1.0, "delta": 1e-3,
          "samples": 60, "mechanism": "expm-laplace"}
    a = protect(data, population=pop, seed=3, **kw).to_json()
    b = protect(data.sample(frac=1.0, random_state=0), population=pop, seed=3, **kw).to_json()
    # seeded noise, modelling seeded from the public inputs: the same release (time and id are per release)
    assert without_values(a) == without_values(b) and a["statistics"] == b["statistics"]
    assert a["randomness"] == "seeded" and a["report"]["modelling"]["source"] == "population"
    g = a["statistics"][0]["grid"]
    assert a["statistics"][0]["value"] / g == round(a["statistics"][0]["value"] / g)
    res = protect(pub / "d45.csv", population=pub / "pop.csv", **kw)
    assert res.randomness == "os" and res.to_json()["mechanism"] == "expm-laplace"
    paths = write_release(res, tmp_path / "out", attack_reps=1)
    assert json.loads(paths["json"].read_text()) == res.to_json()
    assert json.loads(paths["ledger"].read_text())["releases"][0]["rows"] == 400
    with pytest.raises(InvalidParameterError, match="not an option of protect"):
        protect(data, population=pop, colour="blue", **kw)
    with pytest.raises(InvalidTypeError, match="pandas, Polars"):  # names the supported inputs
        protect([1, 2, 3], population=pop, **kw)
