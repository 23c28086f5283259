"""The distributed engines of tests/data: one Dask LocalCluster and one PySpark local session per run of consecutive
tests that use them, shared by test_data_distributed.py and test_data_release_backends.py (issue 26).

Each file used to start its own: two LocalClusters (2 nannies + 2 worker processes each, ~15 s CPU a cluster) and
two Spark contexts (one JVM per pytest process: PySpark reuses its gateway). Under
``make test`` (``-n 2 --dist loadgroup``) both files form one xdist group (``ENGINE_GROUP``, tests/conftest.py)
run on one worker one after the other, so each engine starts once; the engines are closed as soon as the next test
is outside that group (:func:`pytest_runtest_teardown`), not left idling for the rest of the run. Without xdist
(``-n 0``) the two files are not neighbours and each starts the engines it uses, as before.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import warnings
from collections.abc import Callable
from typing import Any

import pytest

#: JVM options of the Spark driver for these short runs: the C1 compiler only and the serial collector. The JIT and
#: GC threads of a default JVM spent ~33 s CPU on test_spark_local_matches_pandas alone (two runs on a loaded
#: machine: 32.5 and 35.3 s against 18.3 and 18.8 s with these options); the query plans and results are the same.
#: The JVM outlives the session (PySpark's gateway) and exits with the pytest process, which never waits for it: its
#: CPU time is not in ``make test``'s total, but it competes with the xdist workers for the two cores.
SPARK_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

_OPEN: dict[str, tuple[Any, Callable[[], None]]] = {}


def _shared(name: str, start: Callable[[], tuple[Any, Callable[[], None]]]) -> Any:
    if name not in _OPEN:
        _OPEN[name] = start()
    return _OPEN[name][0]


def _close(name: str) -> None:
    _, close = _OPEN.pop(name)
    close()


def _start_dask() -> tuple[Any, Callable[[], None]]:
    pytest.importorskip("dask.dataframe", reason="dask is not installed (pip install 'distpriv[dask]')")
    distributed = pytest.importorskip("distributed", reason="distributed is not installed (pip install 'distpriv[dask]')")
    with warnings.catch_warnings():
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


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Close the open engines when the next test is not in this test's xdist group (tests/conftest.py puts every
    test of the files using an engine into one group): their CPU time is then part of this test's teardown."""
    if _OPEN and (_group(item) is None or _group(nextitem) != _group(item)):
        for name in list(_OPEN):
            _close(name)


def pytest_sessionfinish(session: pytest.Session) -> None:
    for name in list(_OPEN):
        _close(name)
