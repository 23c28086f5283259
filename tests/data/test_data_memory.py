"""A Parquet file larger than the child's whole address-space limit is aggregated by a lazy scan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

LIMIT_MB = 640  # RLIMIT_AS of the child: all its virtual memory (Python, numpy, pandas, DuckDB, ...)
ROWS = 22_000_000  # ≈ 700 MB of uncompressed Parquet

CHILD = textwrap.dedent(
    """
    import json, resource, sys
    limit = int(sys.argv[2]) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    def status():
        text = open("/proc/self/status").read()
        return {k: int(text.split(k + ":")[1].split()[0]) // 1024 for k in ("VmPeak", "VmHWM")}
    if sys.argv[3] == "lazy":
        from distpriv import data as dd
        s = dd.summarize(sys.argv[1], ["mean:age", "sum:hours", "count:sex=Female"], "sex=Female",
                         duckdb_config={"threads": 1, "memory_limit": "100MB"})
        print(json.dumps({"counts": s.moments.counts.tolist(), "sums": s.moments.sums.tolist(),
                          "cross": s.moments.cross_products.tolist(), **status()}))
    else:
        import pandas as pd
        frame = pd.read_parquet(sys.argv[1])
        print(json.dumps({"rows": len(frame), **status()}))
    """
)


def _child(path: str, mode: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MALLOC_ARENA_MAX": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", CHILD, path, str(LIMIT_MB), mode], capture_output=True,
                          text=True, env=env, timeout=600)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux features")
def test_file_larger_than_memory_limit_is_scanned_lazily(tmp_path):
    import duckdb

    path = tmp_path / "big.parquet"
    try:
        con = duckdb.connect()
        con.execute("SET threads = 2")
        con.execute(
            f"""COPY (SELECT random() * 60 + 20 AS age, random() AS x1, random() AS x2, random() * 100 AS hours,
                       CASE WHEN random() < 0.3 THEN 'Female' ELSE 'Male' END AS sex FROM range({ROWS}))
                TO '{path}' (FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE 100000)"""
        )
        size_mb = path.stat().st_size / 2**20
        assert size_mb > 1.05 * LIMIT_MB, size_mb
        # Independent reference: DuckDB SQL in this process.
        ref = con.execute(
            f"""SELECT sex = 'Female' AS g, count(*), sum(age), sum(hours), sum(age * age), sum(age * hours),
                       sum(hours * hours) FROM '{path}' GROUP BY 1 ORDER BY g DESC"""
        ).fetchall()
        con.close()

        lazy = _child(str(path), "lazy")
        assert lazy.returncode == 0, lazy.stderr[-2000:]
        out = json.loads(lazy.stdout)
        assert out["VmPeak"] < LIMIT_MB < size_mb  # the whole process stayed below the file's size
        assert out["counts"] == [ref[0][1], ref[1][1]]
        for g in (0, 1):
            _, n, s_age, s_hours, aa, ah, hh = ref[g]
            np.testing.assert_allclose(out["sums"][g], [s_age, s_hours, float(n if g == 0 else 0)], rtol=1e-9)
            np.testing.assert_allclose(np.array(out["cross"][g])[:2, :2], [[aa, ah], [ah, hh]], rtol=1e-9)

        # Control: reading the file into memory fails under the same limit.
        eager = _child(str(path), "eager")
        assert eager.returncode != 0
        assert "Memory" in eager.stderr or "memory" in eager.stderr
    finally:
        path.unlink(missing_ok=True)
