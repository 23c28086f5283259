"""Issue 27, bounded work: extreme parameters return a result or one clear line (no traceback, no hang)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import distpriv as dp
from _cli import run_in_process
from distpriv.accounting import laplace as lap
from distpriv.accounting.radius import min_samples, sample_l1_radius
from distpriv.accounting.topup import MAX_STEPS, search
from distpriv.errors import AssumptionError, InvalidParameterError
from distpriv.mechanisms.gaussian_uncertainty import daum_variance
from test_release import BASE, people, run


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bounded")
    people(400, 7).to_csv(d / "people.csv", index=False)
    people(2000, 9, start=100_000).to_csv(d / "pop.csv", index=False)
    return d


def _args(**over: str) -> list[str]:
    base = dict(zip(BASE[::2], BASE[1::2], strict=True))
    base.update({f"--{k}": v for k, v in over.items()})
    return [x for kv in base.items() for x in kv]


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("epsilon", "1e200", "distpriv: error: --epsilon: must be <= 1e+06"),
    ("epsilon", "1e308", "distpriv: error: --epsilon: must be <= 1e+06"),
    ("samples", "2000000", "distpriv: error: --samples: must be <= 10,000"),
])
def test_cli_refuses_in_one_line_and_writes_nothing(tables: Path, flag: str, value: str, message: str) -> None:
    """Through the console script's entry point in-process with a fresh process's warnings (a process each added only
    its imports, issue 26; the console script's own one line and exit status: tests/release/test_release.py)."""
    extra = [] if flag != "samples" else ["--samples", value]
    over = {flag: value} if flag != "samples" else {}
    args = ["release", "people.csv", "--stat", "mean:age", *_args(**over), *extra, "--population", "pop.csv",
            "--format", "json", "--out", "never"]
    res = run_in_process(args, tables, fresh_warnings=True)
    assert res.returncode == 2 and res.stdout == ""
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), res.stderr
    assert not (tables / "never").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("epsilon", "delta"), [("1e-300", "1e-3"), ("1", "5e-324"), ("1e6", "1e-300")])
def test_cli_extreme_values_release(tables: Path, epsilon: str, delta: str) -> None:
    res = run(["release", "people.csv", "--stat", "mean:age", *_args(epsilon=epsilon, delta=delta),
               "--population", "pop.csv", "--samples", "100", "--format", "json", "--seed", "1"], tables)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr


def test_epsilon_bound_in_the_research_api() -> None:
    m = dp.GaussianModel(means={1: [0.0], 2: [1.0]}, covariances={1: [[1.0]], 2: [[1.0]]})
    with pytest.raises(InvalidParameterError, match=r"^epsilon: must be <= 1e\+06"):
        dp.calibrate("expm-laplace", m, [(1, 2)], epsilon=1e200)
    mech = dp.calibrate("expm-laplace", m, [(1, 2)], epsilon=1e6)
    assert float(mech.scales[0]) == pytest.approx(1e-6)


def test_min_samples_for_vanishing_p() -> None:
    assert min_samples(5e-324, 0.05) == 10**30  # ln(1 − p) rounds to 0: no sample size certifies it
    assert min_samples(0.01, 0.05) == math.ceil(math.log(0.05) / math.log(0.99))
    with pytest.raises(InvalidParameterError, match="at least 1e\\+30 samples"):
        sample_l1_radius(np.arange(100.0), 5e-324, 0.05)


def test_topup_search_refuses_a_non_finite_start_and_gallops() -> None:
    with pytest.raises(AssumptionError, match="^noise: the top-up search has no finite starting point"):
        search(lambda x: (True, None), math.nan, 0.0, value=lambda p: 0.0, goal=1.0)  # type: ignore[arg-type,return-value]
    calls: list[float] = []

    def ok(x: float):  # type: ignore[no-untyped-def]
        calls.append(x)
        from distpriv.accounting.profile import Profile

        return x >= 1.0, Profile(1.0, 0.0 if x >= 1.0 else 1.0, 0.0, "test")

    x, _, steps = search(ok, 1e-300, 0.0, value=lambda p: p.delta_upper, goal=0.5)
    assert 1.0 <= x <= 1.01 and steps <= 60 <= MAX_STEPS  # 300 orders of magnitude in tens of steps


@pytest.mark.parametrize("name", ["eigm", "daum", "expm-gauss", "expm-laplace", "approx-wasserstein"])
def test_tiny_covariance_model_calibrates(name: str) -> None:
    m = dp.GaussianModel(means={1: [40.0], 2: [42.0]}, covariances={1: [[1e-300]], 2: [[2e-300]]})
    mech = dp.calibrate(name, m, [(1, 2)], epsilon=1.0, delta=1e-3)
    assert np.all(np.isfinite(mech.noise_covariance)) and mech.guarantee.delta <= 1e-3


def test_daum_root_is_scale_free() -> None:
    d, v = np.array([2.0, 0.0]), np.array([1.0, 0.0])
    for c in (1e-300, 1.0, 1e300):
        cov = c * np.eye(2)
        s = daum_variance(d, cov, v, 1.5)
        assert s is not None and s == pytest.approx(max(0.0, 4.0 / 2.25 - c), rel=1e-9, abs=1e-300)


def test_laplace_cells_are_bounded_for_tiny_scales() -> None:
    coord = lap.GaussLaplaceCoord(78.75, 0.926, 79.5, 0.9265, 7.5e-7, kappa=0.1)
    cells = coord.cells()
    assert cells["y"].size <= lap.MAX_CELLS + 1
    assert math.isinf(cells["sup_tail"])  # tails left uncertified: no pure ε claimed
    lo, up = coord.delta_bracket(1e6)
    assert 0.0 <= lo <= up <= 1.0
