"""Issue 22 goals for the new statistics: the Adult release's time against today's two-statistic release, its
claims against an independent check, and a quantile of a large Parquet population in bounded memory.

1. Adult (the first 2,000 rows the data, the rest the population), protecting ``income=>50K`` at (ε, δ) = (1, 1e-3)
   over Ψ = {(0.45, 0.55)}: ``median:age``, ``hist:education``, ``mean:hours_per_week@by=sex``, ``var:age`` against
   ``mean:age`` + ``count:sex=Female`` — wall time of each CLI run (median of --reps), the ratio measured in one run.
   The claim is checked independently: for a Laplace mechanism on the standardised model samples (the Wasserstein
   mechanism) the bottleneck L1 distance of the two θ's samples (tests/profile_oracle.py, scipy matching) must be
   at most ε·b; every value's interval is printed.
2. A Parquet population of --rows rows (generated; the data is 2,000 of its rows), ``median:x`` and
   ``quantile:x@0.9`` of a continuous column: wall time and the child's peak RSS (Linux ru_maxrss).

Run: ``PYTHONPATH=src python benchmarks/bench_new_stats.py [--reps 3] [--rows 40000000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

COMMON = ["--protect", "income=>50K", "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1e-3"]
NEW = ["median:age", "hist:education", "mean:hours_per_week@by=sex", "var:age"]
OLD = ["mean:age", "count:sex=Female"]


def _run(cmd: list[str], cwd: Path) -> tuple[float, int, str]:
    """Wall time, peak RSS (KiB) and stdout of one child, via os.wait4."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {' '.join(cmd[:8])} …")
        out.seek(0)
        return wall, int(usage.ru_maxrss), out.read().decode()


def _release(data: str, pop: str, stats: list[str], extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "distpriv.cli", "release", data, *[x for s in stats for x in ("--stat", s)],
            *extra, "--population", pop, "--format", "json"]


def adult(work: Path, reps: int) -> None:
    from distpriv.datasets.adult import load_adult

    df = load_adult()
    df.iloc[:2000].to_csv(work / "data.csv", index=False)
    df.iloc[2000:].to_csv(work / "pop.csv", index=False)
    times: dict[str, list[float]] = {"old": [], "new": []}
    doc = ""
    for _ in range(reps):
        for key, stats in (("old", OLD), ("new", NEW)):
            wall, _, out = _run(_release("data.csv", "pop.csv", stats, COMMON), work)
            times[key].append(wall)
            doc = out if key == "new" else doc
    old, new = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"Adult: two-statistic release {old:.2f} s, new-statistics release {new:.2f} s: ratio {new / old:.2f} "
          f"(goal <= 3; median of {reps})")
    payload = json.loads(doc)
    print(f"  mechanism {payload['mechanism']}, guarantee ({payload['guarantee']['epsilon']}, "
          f"{payload['guarantee']['delta']})")
    for st in payload["statistics"]:
        print(f"  {st['spec']}: value {st['value']}  interval {st['interval']}")
    check_claim(work)


def check_claim(work: Path) -> None:
    """The Adult release's claim against the independent bottleneck check (Laplace mechanisms) or say why not."""
    import numpy as np
    import pandas as pd

    from distpriv.release import protect
    from profile_oracle import bottleneck_l1, noise_law

    res = protect(pd.read_csv(work / "data.csv"), stats=NEW, protect="income=>50K", pairs=[(0.45, 0.55)],
                  epsilon=1.0, delta=1e-3, population=pd.read_csv(work / "pop.csv"), seed=0)
    mech = res.chosen.base
    model = res.prepared.modelling.model
    eps = float(res.guarantee.epsilon)
    if mech is None or res.chosen.name != "wasserstein":
        print(f"  claim: mechanism {res.chosen.name}: not the Wasserstein mechanism, no independent check here")
        return
    law = noise_law(mech)
    assert law.scales is not None and law.basis is not None
    assert np.allclose(law.basis, np.eye(law.basis.shape[0])) and np.allclose(law.scales, law.scales[0])
    w = bottleneck_l1(model.samples(0.45), model.samples(0.55))
    ok = w <= eps * float(law.scales[0]) * (1 + 1e-9)
    print(f"  claim ({eps}, {float(res.guarantee.delta)}): independent L1 bottleneck W∞ = {w:.6g} <= ε·b = "
          f"{eps * float(law.scales[0]):.6g}: {'PASS' if ok else 'FAIL'}")


def parquet(work: Path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = work / "pop.parquet"
    rng = np.random.default_rng(0)
    chunk = 2_000_000
    with pq.ParquetWriter(path, pa.schema([("x", pa.float64()), ("income", pa.string())])) as writer:
        for start in range(0, rows, chunk):
            size = min(chunk, rows - start)
            rich = rng.random(size) < 0.3
            x = rng.lognormal(np.where(rich, 4.2, 3.8), 0.5)
            writer.write_table(pa.table({"x": x, "income": np.where(rich, ">50K", "<=50K")}))
    data = work / "data.parquet"
    pq.write_table(pq.read_table(path).slice(rows // 2, 2000), data)
    wall, rss, out = _run(_release(str(data), str(path), ["median:x", "quantile:x@0.9"],
                                   ["--protect", "income=>50K", "--pairs", "0.25,0.35", "--epsilon", "1",
                                    "--delta", "1e-3"]), work)
    doc = json.loads(out)
    vals = [(s["spec"], s["value"], s["interval"]) for s in doc["statistics"]]
    print(f"Parquet population of {rows:,} rows ({path.stat().st_size / 2**20:.0f} MiB): median and 0.9-quantile "
          f"released in {wall:.1f} s, peak RSS {rss / 1024:.0f} MiB (goal < 1024 MiB); {vals}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rows", type=int, default=40_000_000)
    parser.add_argument("--skip-adult", action="store_true")
    parser.add_argument("--skip-parquet", action="store_true")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench_new_stats_"))
    try:
        if not args.skip_adult:
            adult(work, args.reps)
        if not args.skip_parquet:
            parquet(work, args.rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
