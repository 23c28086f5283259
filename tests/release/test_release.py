"""``distpriv release`` end to end on temporary files: the real console script in a subprocess for the first full
release and one bad input (its exit status and one stderr line); the other runs go through the same entry point
in-process with the warnings a fresh process shows (:func:`_cli.run_in_process`: a process each added only its
~1-3 s CPU of imports, issue 26)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _cli import run_in_process

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BASE = ["--protect", "income=>50K", "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1e-3"]


def distpriv_exe() -> list[str]:
    """The installed ``distpriv`` console script (``DISTPRIV_EXE`` overrides it)."""
    override = os.environ.get("DISTPRIV_EXE")
    if override:
        return [override]
    exe = Path(sys.executable).with_name("distpriv")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("distpriv")
    if found is None:  # pragma: no cover - depends on the installation
        pytest.skip("the distpriv console script is not installed")
    return [found]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*distpriv_exe(), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([*distpriv_exe(), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_all(cmds: dict[str, list[str]], cwd: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run several commands concurrently."""
    procs = {k: start(v, cwd) for k, v in cmds.items()}
    out = {}
    for k, p in procs.items():
        so, se = p.communicate(timeout=600)
        out[k] = subprocess.CompletedProcess(p.args, p.returncode, so, se)
    return out


def people(n: int, seed: int, start: int = 0) -> pd.DataFrame:
    """n rows, half with income '>50K'; ``id`` makes rows of different tables distinct.

    x equals the protected indicator, so mean:x = round(θn)/n exactly; y takes the values 0..3 equally
    often in both groups, so mean:y has (nearly) the same law under every θ. f_θ is then a point mass in x
    times a θ-free law in y: an exact translation along x (see test_auto_picks_known_answer).
    """
    r = np.random.default_rng(seed)
    flag = np.repeat([1, 0], n // 2)
    return pd.DataFrame({
        "id": np.arange(start, start + n),
        "income": np.where(flag == 1, ">50K", "<=50K"),
        "x": flag,
        "y": np.tile(np.arange(4), n // 4),
        "age": np.round(r.normal(40, 10, n) + 4 * flag),
        "sex": np.where(r.random(n) < 0.35 + 0.2 * flag, "Female", "Male"),
    })


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """people.csv (400 rows, also as a shuffled Parquet copy), a disjoint other.csv and a population."""
    d = tmp_path_factory.mktemp("release")
    df = people(400, 7)
    df.to_csv(d / "people.csv", index=False)
    df.sample(frac=1.0, random_state=1).to_parquet(d / "people.parquet")
    people(400, 8, start=10_000).to_csv(d / "other.csv", index=False)
    people(8000, 9, start=100_000).to_csv(d / "pop.csv", index=False)
    return d


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.srcs: list[str] = []
        self.tags = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags += 1
        if tag == "img":
            self.srcs.append(dict(attrs).get("src") or "")


@pytest.fixture(scope="module")
def first_release(work: Path) -> subprocess.CompletedProcess[str]:
    """One full release with --out (its release.json is reused as --previous)."""
    before = _sha(work / "people.csv")
    res = run(["release", "people.csv", "--stat", "mean:age", "--stat", "count:sex=Female", *BASE,
               "--population", "pop.csv", "--samples", "200", "--format", "json", "--out", "out", "--seed", "3"], work)
    assert _sha(work / "people.csv") == before  # the data file is never modified
    return res


def test_release_json_and_report_files(work: Path, first_release: subprocess.CompletedProcess[str]) -> None:
    res = first_release
    out = work / "out"
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert {"mechanism", "guarantee", "statistics", "report"} <= set(doc)
    assert {"epsilon", "delta", "assumptions"} <= set(doc["guarantee"])
    assert doc["guarantee"]["epsilon"] <= 1.0 + 1e-9 and doc["guarantee"]["delta"] <= 1e-3
    assert isinstance(doc["guarantee"]["assumptions"], list) and doc["guarantee"]["assumptions"]
    assert [s["name"] for s in doc["statistics"]] == ["mean:age", "count:sex=Female"]
    assert all(isinstance(s["value"], float) for s in doc["statistics"])
    # the true values are never printed
    df = pd.read_csv(work / "people.csv")
    truths = [df["age"].mean(), float((df["sex"] == "Female").sum())]
    for t in truths:
        assert repr(float(t)) not in res.stdout
        assert all(abs(s["value"] - t) > 1e-9 for s in doc["statistics"])
    assert doc["report"]["modelling"]["source"] == "population"
    assert doc["randomness"] == "seeded" and "not private" in doc["warnings"][0]
    assert "not private" in res.stderr
    # on its statistic's grid: a power of two at most d_k·g (unit-free noise, distpriv.release.standardize)
    for s, d in zip(doc["statistics"], doc["noise"]["standardized"]["scale"], strict=True):
        g = s["grid"]
        assert s["value"] / g == round(s["value"] / g) and g == 2.0 ** round(np.log2(g)) and d * doc["noise"]["grid"] / 2 < g <= d * doc["noise"]["grid"]
    kept = [c for c in doc["report"]["candidates"] if c["kept"]]
    chosen = next(c for c in doc["report"]["candidates"] if c["mechanism"] == doc["mechanism"])
    assert chosen["expected_l2_error"] == min(c["expected_l2_error"] for c in kept)
    assert all(c["reason"] for c in doc["report"]["candidates"])
    # report files
    for name in ("report.md", "report.html", "release.json", "figures/f_theta.png",
                 "figures/error_vs_epsilon.png", "figures/attack_accuracy.png", "private/ledger.json"):
        assert (out / name).is_file(), name
    assert json.loads((out / "release.json").read_text()) == doc
    md = (out / "report.md").read_text()
    assert "## Mechanism choice" in md and "## Guarantee" in md and doc["mechanism_label"] in md
    parser = _Images()
    parser.feed((out / "report.html").read_text())
    assert len(parser.srcs) == 3
    for src in parser.srcs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)


def test_auto_picks_known_answer(work: Path) -> None:
    # mean:x is a point mass at round(θn)/n, mean:y has the same law under every θ: the mean difference is
    # (0.1, ~0) and f_θ are exact translates. DirM (L) adds Lap(b) along that direction only, b = ||Δμ||/ε ≈ 0.1,
    # so E||Z|| ≈ 0.1; every other valid mechanism pays more: ExpM (L) noises both components, Gaussian ones
    # need σ = Δ/D*(1, 1e-3) ≈ 2.6Δ, Wasserstein's W∞ includes y's sampling jitter, GDP is scaled by n.
    res = run_in_process(["release", "people.parquet", "--stat", "mean:x", "--stat", "mean:y", *BASE, "--samples",
                          "300", "--population", "pop.csv", "--format", "json"], work)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["mechanism"] == "dirm-laplace"
    cands = {c["mechanism"]: c for c in doc["report"]["candidates"]}
    assert doc["report"]["diagnostics"]["tests"]["translation"]["holds"]
    # calibrated on the standardised statistics (distpriv.release.standardize): x is a point mass at 0.45 or 0.55,
    # so its spread is d_x = 0.05 and the standardised gap 0.1/0.05 = 2; b = 2/ε along that direction
    spread_x = doc["statistics"][0]["spread"]
    assert spread_x == pytest.approx(0.05, rel=1e-9)
    assert cands["dirm-laplace"]["expected_l2_error"] == pytest.approx(2.0, rel=0.02)
    # back in the statistic's units: Laplace(b = 0.1) on mean:x, std √2·0.1
    assert doc["statistics"][0]["noise_std"] == pytest.approx(2**0.5 * 0.1, rel=0.02)
    others = [c["expected_l2_error"] for k, c in cands.items() if c["kept"] and k != "dirm-laplace"]
    assert others and min(others) > 1.3 * cands["dirm-laplace"]["expected_l2_error"]
    assert not cands["none"]["kept"] and not cands["dp-laplace"]["kept"]


def test_composition_and_spec_file(work: Path, first_release: subprocess.CompletedProcess[str]) -> None:
    assert first_release.returncode == 0, first_release.stderr
    # the same rows again (a shuffled Parquet copy): refused with the reason, before anything is written
    again = run_in_process(["release", "people.parquet", "--stat", "mean:age", *BASE, "--population", "pop.csv",
                            "--previous", "out", "--independent", "--out", "never"], work, fresh_warnings=True)
    assert again.returncode == 2
    assert again.stderr.count("\n") == 1 and "400 of the 400 rows" in again.stderr and "Prop. A.5" in again.stderr
    assert not (work / "never").exists()
    # another, independently sampled table, settings from a TOML spec, Markdown on stdout: Prop A.5 composes
    (work / "spec.toml").write_text(
        'data = "people.csv"\nstats = {"Average age" = "mean:age"}\nprotect = "income=>50K"\n'
        'around = 0.5\ngap = 0.1\nepsilon = 1.0\ndelta = 1e-3\nsamples = 50\nmechanism = "expm-laplace"\n'
        'population = "pop.csv"\n'
    )
    # the first release was seeded: it never composes as independent (issue 27)
    seeded = run_in_process(["release", "other.csv", "--config", "spec.toml", "--previous", "out", "--independent"],
                            work, fresh_warnings=True)
    assert seeded.returncode == 2 and seeded.stderr.count("\n") == 1, seeded.stderr
    assert "seeded (--seed 3)" in seeded.stderr and "never composes as independent" in seeded.stderr
    fresh = run_in_process(["release", "people.csv", "--stat", "mean:age", *BASE, "--population", "pop.csv",
                            "--samples", "50", "--mechanism", "expm-laplace", "--format", "json", "--out", "out_os"],
                           work, fresh_warnings=True)
    assert fresh.returncode == 0, fresh.stderr
    other = run_in_process(["release", "other.csv", "--config", "spec.toml", "--previous", "out_os", "--independent"],
                           work, fresh_warnings=True)
    assert other.returncode == 0, other.stderr
    assert other.stdout.startswith("# distpriv release")
    assert "Average age" in other.stdout and "ExpM (L)" in other.stdout
    assert "Composition with earlier releases" in other.stdout and "Prop. A.5" in other.stdout
    assert "total (2," in other.stdout


SRC = ["--model-from-data"]
BAD = {
    "missing file": (["release", "nope.csv", "--stat", "mean:age", *BASE, *SRC], "file not found"),
    "no model source": (["release", "people.csv", "--stat", "mean:age", *BASE],
                        "--population: f_θ needs a model of the data: give a reference population"),
    "two model sources": (["release", "people.csv", "--stat", "mean:age", *BASE, *SRC, "--population", "pop.csv"],
                          "give only one of --population, --model and --model-from-data"),
    "unknown column": (["release", "people.csv", "--stat", "mean:agee", *BASE, *SRC], "--stat: unknown column 'agee'"),
    "unknown protect column": (["release", "people.csv", "--stat", "mean:age", "--protect", "incom=>50K",
                                "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1e-3", *SRC],
                               "--protect: unknown column 'incom'"),
    "predicate no row": (["release", "people.csv", "--stat", "mean:age", "--protect", "sex=Female & age>500",
                          "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1e-3", *SRC], "matches no row"),
    "predicate every row": (["release", "people.csv", "--stat", "mean:age", "--protect", "age>-1",
                             "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1e-3", *SRC], "matches every row"),
    "pair outside [0,1]": (["release", "people.csv", "--stat", "mean:age", "--protect", "income=>50K",
                            "--pairs", "0.5,1.2", "--epsilon", "1", "--delta", "1e-3", *SRC], "outside [0, 1]"),
    "pair not achievable": (["release", "people.csv", "--stat", "mean:age", "--protect", "income=>50K", "--n", "10",
                             "--pairs", "0.41,0.44", "--epsilon", "1", "--delta", "1e-3", *SRC],
                            "not distinguishable with n = 10"),
    "n is not the row count": (["release", "people.csv", "--stat", "mean:age", "--protect", "income=>50K", "--n", "100",
                                "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1e-3", *SRC],
                               "datasets of n = 100 records but the data has 400 rows"),
    "epsilon <= 0": (["release", "people.csv", "--stat", "mean:age", "--protect", "income=>50K",
                      "--pairs", "0.45,0.55", "--epsilon", "0", "--delta", "1e-3", *SRC], "--epsilon: must be > 0"),
    "delta outside (0,1)": (["release", "people.csv", "--stat", "mean:age", "--protect", "income=>50K",
                             "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1", *SRC], "--delta: must be in (0, 1)"),
    "malformed spec": (["release", "--config", "bad.toml"], "malformed TOML"),
}


#: Bad-input cases run through the console script in a subprocess (its one stderr line and exit status end to end);
#: the others stop before computing and run the same entry point in-process (:func:`_cli.run_in_process`), since a
#: process per case adds nothing but ~2 s of imports.
BAD_SUBPROCESS = ("malformed spec",)


@pytest.fixture(scope="module")
def bad_runs(work: Path) -> dict[str, tuple[int, str, str, bool]]:
    """Run every bad-input case (each writes to its own --out that must not appear)."""
    (work / "bad.toml").write_text("epsilon = = 1\n")
    before = _sha(work / "people.csv")
    procs = {}
    for i, (name, (args, _)) in enumerate(BAD.items()):
        if name in BAD_SUBPROCESS:
            procs[name] = (start([*args, "--out", f"bad_out_{i}"], work), work / f"bad_out_{i}")
    out = {}
    for i, (name, (args, _)) in enumerate(BAD.items()):
        if name not in BAD_SUBPROCESS:
            res = run_in_process([*args, "--out", f"bad_out_{i}"], work)
            out[name] = (res.returncode, res.stdout, res.stderr, (work / f"bad_out_{i}").exists())
    for name, (proc, outdir) in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        out[name] = (proc.returncode, stdout, stderr, outdir.exists())
    assert _sha(work / "people.csv") == before
    return out


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_one_line_exit_2(bad_runs: dict[str, tuple[int, str, str, bool]], case: str) -> None:
    code, stdout, stderr, wrote = bad_runs[case]
    assert code == 2, (stdout, stderr)
    assert stderr.startswith("distpriv: error: ") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    assert BAD[case][1] in stderr, stderr
    assert not wrote, "nothing may be written to --out on bad input"
    assert stdout == ""
