"""``--out`` folders that would replace the working folder or write through a link are refused first (issue 27).

Each case runs the real console script: exit code 2, one line on stderr naming ``--out``, nothing on stdout and
nothing written anywhere (the working folder and a link's target are listed before and after). The data file is
missing in the ``first`` cases, so an error about ``--out`` shows the folder was checked before anything was read.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from _cli import run_in_process
from test_release_privacy import _refusals

SPEC = ["--stat", "mean:age", "--protect", "income=>50K", "--pairs", "0.45,0.55", "--epsilon", "1",
        "--delta", "1e-3", "--model-from-data", "--samples", "40", "--format", "json"]


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_out_current_folder_empty_and_symlinked_parents_are_refused_before_anything(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "real").mkdir(parents=True)
    rng = np.random.default_rng(0)
    pd.DataFrame({"age": rng.integers(20, 70, 200), "income": np.where(rng.random(200) < 0.5, ">50K", "<=50K")}
                 ).to_csv(work / "people.csv", index=False)
    os.symlink(work / "real", work / "link")
    cases = {
        "empty": ["release", "people.csv", *SPEC, "--out", ""],
        "dot": ["release", "people.csv", *SPEC, "--out", "."],
        "dot_force": ["release", "people.csv", *SPEC, "--out", ".", "--force"],
        "dot_slash": ["release", "people.csv", *SPEC, "--out", "./"],
        "parent": ["release", "people.csv", *SPEC, "--out", "..", "--force"],
        "link_parent": ["release", "people.csv", *SPEC, "--out", "link/new"],
        "link_dotdot": ["release", "people.csv", *SPEC, "--out", "link/../escaped"],
        "link_absolute": ["release", "people.csv", *SPEC, "--out", str(work / "link" / "deep" / "new")],
        "audit_dot": ["audit", "people.csv", *SPEC, "--out", ".", "--force", "--trials", "200"],
        "first_dot": ["release", "missing.csv", *SPEC, "--out", "."],
        "first_link": ["release", "missing.csv", *SPEC, "--out", "link/new"],
    }
    before, target_before = _listing(work), _listing(work / "real")
    # one through the console script (its one stderr line and exit status end to end), the rest in-process through
    # the same entry point, in the same cwd (a process each only added its ~2 s of imports)
    res = _refusals(cases, work, subprocess_case="dot")
    assert set(res) == set(cases)
    for name, r in res.items():
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert r.stderr.startswith("distpriv: error: --out: ") and r.stderr.count("\n") == 1, (name, r.stderr)
        assert r.stdout == "" and "Traceback" not in r.stderr, name
    for name in ("empty", "dot", "dot_force", "dot_slash", "audit_dot", "first_dot"):
        assert "not the current folder" in res[name].stderr, (name, res[name].stderr)
    assert "is the current folder or contains it" in res["parent"].stderr
    for name in ("link_parent", "link_dotdot", "link_absolute", "first_link"):
        assert "link is a symbolic link" in res[name].stderr, (name, res[name].stderr)
    assert _listing(work) == before and _listing(work / "real") == target_before == []
    assert _listing(tmp_path) == ["work", *(f"work/{p}" for p in before)]
    # a plain new folder next to the link is accepted (the checks do not refuse ordinary paths)
    ok = run_in_process(["release", "people.csv", *SPEC, "--out", "fresh"], work)
    assert ok.returncode == 0, ok.stderr
    assert (work / "fresh" / "release.json").is_file() and (work / "fresh" / "private" / "ledger.json").is_file()


def test_out_may_not_contain_the_ledger_key(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    import pytest

    from distpriv.errors import InvalidParameterError
    from distpriv.release.outdir import check_out

    monkeypatch.setenv("DISTPRIV_HOME", str(tmp_path / "out" / "keys"))
    with pytest.raises(InvalidParameterError, match=r"^out: .*out would contain the ledger key .*keys/ledger.key"):
        check_out(tmp_path / "out")
    check_out(tmp_path / "other")  # elsewhere: fine
