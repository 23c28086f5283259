"""``distpriv release`` on messy inputs (issue 11): escaped reports, safe output folders, huge ε / tiny δ.

The releases and the refusals of unusable ``--out`` folders run the console script's entry point
(:func:`distpriv.cli.main`) in-process (the releases with the warnings a fresh process shows), since a process adds
nothing but ~1-2 s of imports each (the console script's one line on stderr and exit status 2 are checked end to end
in tests/release/test_release.py; issue 26). Each case:
exit code, a short stderr without a traceback, and pre-existing files left untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _cli import run_in_process
from test_release import people, run

HOSTILE = {  # column name -> what a browser or matplotlib must never interpret
    "age": "<script>alert(1)</script>",
    "y": "$\\frac{$",
    "x": "<svg onload=alert(2)>",
}
GENTOO = "<b>Gentoo</b>"
BASE = ["--protect", "income=>50K", "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1e-3"]


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _hostile(df: pd.DataFrame) -> pd.DataFrame:
    out = df.rename(columns=HOSTILE)
    out["sex"] = out["sex"].replace({"Female": GENTOO})
    return out




def _one_line_error(res: subprocess.CompletedProcess[str], needle: str) -> None:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stderr.startswith("distpriv: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stderr and needle in res.stderr, res.stderr
    assert res.stdout == ""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], list[str]]:
    """The working folder (tables, pre-existing folders and files that must stay as they are), the hashes of its
    files before any command ran, and the arguments of a quick release."""
    d = tmp_path_factory.mktemp("messy")
    people(200, 7).to_csv(d / "people.csv", index=False)
    people(4000, 9, start=100_000).to_csv(d / "pop.csv", index=False)
    _hostile(people(200, 7)).to_csv(d / "h_people.csv", index=False)
    _hostile(people(4000, 9, start=100_000)).to_csv(d / "h_pop.csv", index=False)
    (d / "full").mkdir()
    (d / "full" / "report.md").write_text("my notes\n")
    (d / "victim.txt").write_text("do not touch\n")
    (d / "linked").mkdir()
    (d / "linked" / "old.txt").write_text("old\n")
    (d / "linked" / "report.html").symlink_to(d / "victim.txt")
    (d / "realdir").mkdir()
    (d / "outlink").symlink_to(d / "realdir")
    (d / "file.txt").write_text("a file\n")
    (d / "replace").mkdir()
    (d / "replace" / "stale.txt").write_text("stale\n")
    (d / "replace" / "sub").mkdir()
    (d / "replace" / "sub" / "deep.txt").write_text("deep\n")
    before = {p.relative_to(d).as_posix(): _sha(p) for p in d.rglob("*") if p.is_file() and not p.is_symlink()}
    quick = ["release", "people.csv", "--stat", "mean:age", *BASE, "--population", "pop.csv", "--samples", "60",
             "--format", "json"]
    return d, before, quick


@pytest.fixture(scope="module")
def refusals(folder: tuple) -> dict[str, subprocess.CompletedProcess[str]]:
    """The unusable ``--out`` folders, in-process (they stop before computing; see the module docstring): "nonempty"
    with the warnings a fresh process shows (it used to be the console script, whose own exit status and one line are
    checked end to end in tests/release/test_release.py; issue 26)."""
    d, _, quick = folder
    audit = ["audit", "people.csv", "--stat", "mean:age", *BASE, "--population", "pop.csv", "--samples", "60",
             "--trials", "2000"]
    in_process = {
        "symlinked out": [*quick, "--out", "outlink"],
        "link inside": [*quick, "--out", "linked", "--force"],
        "under a file": [*quick, "--out", "file.txt/sub"],
        "virtual fs": [*quick, "--out", "/proc/distpriv-test/out"],
        "audit nonempty": [*audit, "--out", "full"],
        "audit under a file": [*audit, "--out", "file.txt/sub"],
    }
    out = {"nonempty": run_in_process([*quick, "--out", "full"], d, fresh_warnings=True)}  # console script: test_release.py
    out.update({k: run_in_process(v, d) for k, v in in_process.items()})
    return out


@pytest.fixture(scope="module")
def runs(folder: tuple) -> dict[str, subprocess.CompletedProcess[str]]:
    """The releases, through the console script's entry point in-process with the warnings a fresh process shows
    (``_cli.run_in_process(fresh_warnings=True)``: a process each added only its imports, issue 26; the console
    script itself runs in the "nonempty" refusal above and in tests/release/test_release.py)."""
    d, _, quick = folder
    hostile_stats = [a for col in HOSTILE.values() for a in ("--stat", f"mean:{col}")]
    cmds = {
        "hostile": ["release", "h_people.csv", *hostile_stats, "--stat", f"count:sex={GENTOO}", *BASE,
                    "--population", "h_pop.csv", "--samples", "60", "--out", "hostile"],
        "force": [*quick, "--out", "replace", "--force", "--mechanism", "expm-laplace"],
        "huge eps": ["release", "people.csv", "--stat", "mean:age", "--stat", "count:sex=Female", "--protect",
                     "income=>50K", "--pairs", "0.45,0.55", "--epsilon", "1e6", "--delta", "1e-300", "--population",
                     "pop.csv", "--samples", "60", "--format", "json"],
        "eps 710": ["release", "people.csv", "--stat", "mean:age", "--protect", "income=>50K", "--pairs", "0.45,0.55",
                    "--epsilon", "710", "--delta", "1e-3", "--population", "pop.csv", "--samples", "60",
                    "--mechanism", "expm-laplace", "--format", "json"],
    }
    return {name: run_in_process(args, d, fresh_warnings=True) for name, args in cmds.items()}


@pytest.mark.slow
def test_hostile_names_are_escaped_in_the_written_report(runs: dict, folder: tuple) -> None:
    d = folder[0]
    r = runs["hostile"]
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    html, md = (d / "hostile" / "report.html").read_text(), (d / "hostile" / "report.md").read_text()
    for bad in ("<script", "<svg", "<b>", "onload=alert(2)>"):
        assert bad not in html.replace("&lt;", "")  # only escaped forms remain ...
    for col in (HOSTILE["age"], HOSTILE["x"], GENTOO):
        assert col not in html  # ... nowhere raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;Gentoo&lt;/b&gt;" in html
    assert "$\\frac{$" in html  # shown as typed (no mathtext crash, no TeX)
    # Markdown: outside code spans the strings are entity-escaped, so no raw HTML reaches a Markdown renderer
    outside_code = "".join(md.split("`")[::2])
    for bad in ("<script", "<svg", "<b>"):
        assert bad not in outside_code
    assert (d / "hostile" / "figures" / "f_theta.png").read_bytes().startswith(b"\x89PNG")
    # the report opens with the guarantee in words, then human table headers
    heads = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert heads.index("## The guarantee in words") <= 1
    assert "| Statistic | Definition | Released value | Noise std. dev. | Spread under the model |" in md


@pytest.mark.parametrize(("case", "needle"), [
    ("nonempty", "exists and is not empty; give --force"),
    ("symlinked out", "is a symbolic link"),
    ("link inside", "is a symbolic link; refusing to replace"),
    ("under a file", "file.txt is not a folder"),
    ("virtual fs", "--out: cannot create /proc/distpriv-test/out"),
    ("audit nonempty", "exists and is not empty; give --force"),
    ("audit under a file", "file.txt is not a folder"),
])
def test_unusable_out_is_refused_before_computing(refusals: dict, folder: tuple, case: str, needle: str) -> None:
    d, before, _ = folder
    _one_line_error(refusals[case], needle)
    after = {p.relative_to(d).as_posix(): _sha(p) for p in d.rglob("*") if p.is_file() and not p.is_symlink()}
    for name, sha in before.items():  # nothing pre-existing was modified or removed (but by --force on 'replace')
        if not name.startswith("replace/"):
            assert after.get(name) == sha, name
    assert (d / "victim.txt").read_text() == "do not touch\n"
    assert (d / "linked" / "report.html").is_symlink() and os.listdir(d / "realdir") == []
    assert not [p for p in d.iterdir() if ".tmp-" in p.name]  # no temporary folder left behind


@pytest.mark.slow
def test_force_replaces_the_folder_as_a_whole(runs: dict, folder: tuple) -> None:
    d, res = folder[0], runs
    assert res["force"].returncode == 0, res["force"].stderr
    names = sorted(p.relative_to(d / "replace").as_posix() for p in (d / "replace").rglob("*"))
    assert "stale.txt" not in names and "sub/deep.txt" not in names
    assert {"release.json", "report.md", "report.html", "private/ledger.json"} <= set(names)
    assert json.loads((d / "replace" / "release.json").read_text()) == json.loads(res["force"].stdout)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_parent_is_refused(tmp_path: Path) -> None:  # pragma: no cover - not run as root
    people(200, 7).to_csv(tmp_path / "people.csv", index=False)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = run(["release", "people.csv", "--stat", "mean:age", *BASE, "--model-from-data", "--samples", "30",
                 "--out", "ro/out"], tmp_path)
        _one_line_error(r, "--out: cannot create")
    finally:
        ro.chmod(0o755)


@pytest.mark.slow
def test_huge_epsilon_and_tiny_delta_release(runs: dict) -> None:
    res = runs
    for case in ("huge eps", "eps 710"):
        r = res[case]
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr and r.stderr.count("\n") <= 3
        doc = json.loads(r.stdout)
        g = doc["guarantee"]
        assert np.isfinite(g["epsilon"]) and 0 <= g["delta"] <= float(r.args[r.args.index("--delta") + 1])
        assert all(np.isfinite(s["value"]) for s in doc["statistics"])
    assert json.loads(res["eps 710"].stdout)["mechanism"] == "expm-laplace"
