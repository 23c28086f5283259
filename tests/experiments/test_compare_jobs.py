"""``distpriv reproduce compare`` in worker processes (issue 25 item 4): the rows never depend on ``jobs``.

Every task draws from generators keyed on what it draws (seed, property, mechanism, ε), so the worker
processes compute the very rows of the serial run, whichever worker runs which task; the calibration
cache's keys are the same in every process (the code fingerprint and the inputs).
"""

from __future__ import annotations

import json

import pytest

from distpriv.errors import DistPrivError
from distpriv.experiments import compare

#: Cheap mechanisms with each kind of audit scorer (exact Gaussian, classifier).
SMALL = ["eigm", "ssp-quantizer"]
ARGS = {"quick": True, "properties": ["income", "sex"], "epsilons": [1.0, 5.0], "mechanisms": SMALL}


def _same(a: dict, b: dict) -> bool:  # type: ignore[type-arg]
    return json.dumps(a["rows"], default=str) == json.dumps(b["rows"], default=str) and a["notes"] == b["notes"]


@pytest.fixture(scope="module")
def serial_and_parallel(adult_ok, tmp_path_factory):  # noqa: ANN001, ANN201
    cache = tmp_path_factory.mktemp("compare-jobs-cache")
    serial = compare.run_compare(**ARGS, jobs=1)
    parallel = compare.run_compare(**ARGS, jobs=2, cache=cache)
    return serial, parallel, cache


def test_compare_rows_do_not_depend_on_jobs(serial_and_parallel) -> None:  # noqa: ANN001
    serial, parallel, _ = serial_and_parallel
    assert (serial["jobs"], parallel["jobs"]) == (1, 2)
    assert len(serial["task_cpu"]) == 1 and 1 <= len(parallel["task_cpu"]) <= 2  # one process, at most two workers
    # two properties (None row + 2 ε × 2 mechanisms each), in the serial order
    assert [(r["property"], r["mechanism"], r["epsilon"]) for r in parallel["rows"]] == [
        (p, m, e) for p in ("income", "sex")
        for m, e in [("None", None)] + [(lab, eps) for eps in (1.0, 5.0) for lab in ("EigM (G)", "SSP quantizer")]]
    assert _same(serial, parallel)
    assert {r.get("audit_scorer") for r in parallel["rows"]} == {None, "exact-gaussian", "classifier"}


def test_compare_cache_written_by_workers_is_read_in_process(serial_and_parallel) -> None:  # noqa: ANN001
    """The workers' entries carry the keys the serial run computes (code fingerprint + inputs): all hits."""
    serial, parallel, cache = serial_and_parallel
    assert parallel["calibration_cache"]["hits"] == 0
    again = compare.run_compare(**ARGS, jobs=1, cache=cache)
    assert again["calibration_cache"]["hits"] == 2 * 2 * len(SMALL) * 2  # calibration + audit per row
    assert _same(again, serial)


def test_compare_rejects_bad_jobs() -> None:
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(DistPrivError, match="^jobs: "):
            compare.run_compare(jobs=bad)  # type: ignore[arg-type]


@pytest.mark.slow
def test_cli_quick_rows_same_for_jobs_1_and_2(adult_ok, tmp_path) -> None:  # noqa: ANN001
    """``reproduce compare --quick --jobs 1`` and ``--jobs 2`` print the same rows (issue 25 item 4): the CLI's
    forkserver and progress path, on the cheap mechanisms at one ε (the library test above covers the rest)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    out = []
    for jobs in ("1", "2"):
        res = subprocess.run([sys.executable, "-m", "distpriv.cli", "reproduce", "compare", "--quick", "--no-cache",
                              "--format", "json", "--jobs", jobs, "--epsilons", "1", "--mechanisms",
                              ",".join(SMALL)], capture_output=True, text=True, env=env, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        out.append(json.loads(res.stdout))
    assert len(out[0]["rows"]) == 1 + len(SMALL)
    assert _same(out[0], out[1])


def test_cli_bad_jobs_is_one_line_exit_2(tmp_path) -> None:  # noqa: ANN001
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "distpriv.cli", "reproduce", "compare", "--jobs", "0", "--out",
                          str(tmp_path / "o")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip() == "distpriv: error: --jobs: must be >= 1, got 0"
    assert not (tmp_path / "o").exists()


def test_compare_worker_error_reaches_the_caller(adult_ok, monkeypatch) -> None:  # noqa: ANN001
    """A task's exception in a worker process is re-raised by run_compare (the queued tasks are dropped)."""
    from distpriv.experiments import compare_work

    with pytest.raises(KeyError):  # an unknown property gets past no check in the worker: its predicate lookup fails
        compare_work.run_task(compare_work.Settings(0, tuple(compare.QUICK.items()), (1.0,), 1e-3, False, (0.45, 0.55),
                                                    None, (), compare.MECHANISMS), ("none", "income"))
    with compare._pool(2) as pool, pytest.raises(KeyError):
        pool.submit(compare_work.run_task, compare_work.Settings(0, tuple(compare.QUICK.items()), (1.0,), 1e-3, False,
                                                                 (0.45, 0.55), None, (), compare.MECHANISMS),
                    ("none", "income")).result()


def test_compare_warm_rerun_reads_back_in_one_process(serial_and_parallel) -> None:  # noqa: ANN001
    """Every value cached: the run reads them back here instead of starting workers (same rows, ``jobs`` 1)."""
    serial, _, cache = serial_and_parallel
    again = compare.run_compare(**ARGS, jobs=2, cache=cache)
    assert again["jobs"] == 1 and len(again["task_cpu"]) == 1
    assert again["calibration_cache"]["hits"] == 2 * 2 * len(SMALL) * 2
    assert _same(again, serial)


def test_all_cached_names_every_entry_a_task_reads(serial_and_parallel) -> None:  # noqa: ANN001
    """:func:`all_cached` checks the very digests the tasks read: one entry removed, and it says no."""
    from distpriv.experiments import compare_cache as cc
    from distpriv.experiments import compare_work as cw

    _, _, cache = serial_and_parallel
    s = cw.Settings(0, tuple(compare.QUICK.items()), (1.0, 5.0), 1e-3, True, compare.pair_for(compare.DELTA_P),
                    str(cache), tuple(compare.PROPERTIES.items()),
                    tuple(m for m in compare.MECHANISMS if m[0] in SMALL))
    inputs = {p: cw.property_inputs(*cw.inputs_key(s, p)) for p in ("income", "sex")}
    assert cw.all_cached(s, ["income", "sex"], inputs) and cc.has_version(cache)
    k = cw.cell_keys(s, "sex", "ssp-quantizer", 5.0, inputs["sex"].emp, inputs["sex"].gm)
    entry = cache / cc.code_fingerprint()[:16] / f"{k.audit}.pkl"
    saved = entry.read_bytes()
    entry.unlink()
    try:
        assert not cw.all_cached(s, ["income", "sex"], inputs)
        assert cw.all_cached(cw.Settings(**{**s.__dict__, "audit": False}), ["income", "sex"], inputs)
    finally:
        entry.write_bytes(saved)
    assert not cw.all_cached(cw.Settings(**{**s.__dict__, "folder": None}), ["income", "sex"], inputs)


def test_default_cache_folder_is_the_adult_cache_dir_plus_compare(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    from distpriv.datasets.adult import cache_dir
    from distpriv.experiments.compare_cache import default_folder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_folder() == cache_dir() / "compare" == tmp_path / "distpriv" / "compare"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_folder() == cache_dir() / "compare"
