"""The ``distpriv.cli`` package: light start-up, no CLI framework inside the library, lazy ``import distpriv``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import distpriv as dp
from distpriv.cli import chen_ohrimenko as cli_co

HEAVY = ("scipy.stats", "matplotlib", "sklearn", "networkx", "pandas")


def imported_modules(*args: str) -> set[str]:
    """Modules a fresh interpreter imports for ``python -X importtime *args`` (parsed from its stderr)."""
    res = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    names = {line.rsplit("|", 1)[1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
    assert "encodings" in names  # the parse found the import lines
    return names


@pytest.mark.parametrize("argv", [("--help",), ("reproduce", "--help"), ("release", "--help")])
def test_help_imports_no_heavy_module(argv: tuple[str, ...]) -> None:
    names = imported_modules("-m", "distpriv.cli", *argv)
    assert "distpriv.cli" in names and "typer" in names
    assert not {m for m in HEAVY if m in names}, sorted(m for m in HEAVY if m in names)


def test_library_modules_do_not_import_the_cli() -> None:
    code = ("import sys, distpriv.release, distpriv.demo, distpriv.experiments.workflow, distpriv.experiments.chen_ohrimenko, "
            "distpriv.experiments.zhang_attribute, distpriv.experiments.kawamoto_tupling, "
            "distpriv.experiments.kawamoto_coupling; "
            "print(sorted(m for m in sys.modules if m == 'typer' or m.startswith(('typer.', 'distpriv.cli'))))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]"


def test_import_distpriv_is_lazy() -> None:
    code = "import sys, distpriv; print(sorted(m for m in sys.modules if m.startswith(('distpriv.', 'scipy'))))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]"


def test_lazy_names_resolve_to_their_modules() -> None:
    from distpriv import GaussianModel, models
    from distpriv.mechanisms import calibrate

    assert dp.GaussianModel is GaussianModel is models.GaussianModel
    assert dp.calibrate is calibrate
    assert dp.local.randomized_response(3, 1.0).matrix.shape == (3, 3)
    assert {"calibrate", "local", "audit", "GaussianModel"} <= set(dir(dp))
    for name in dp.__all__:
        assert getattr(dp, name) is not None
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = dp.no_such_name


def test_cli_defaults_match_the_library() -> None:
    from distpriv.experiments import chen_ohrimenko as co

    assert cli_co.DEFAULT_REPS == co.REPS


def test_python_dash_m_runs_the_cli() -> None:
    res = subprocess.run([sys.executable, "-m", "distpriv.cli", "reproduce", "--help"], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for cmd in ("chen-ohrimenko", "zhang-attribute", "kawamoto-tupling", "kawamoto-coupling"):
        assert cmd in res.stdout
