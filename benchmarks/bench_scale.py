"""Tables beyond memory: the data layer's aggregate pass against one DuckDB ``GROUP BY``, by table size.

Usage::

    PYTHONPATH=src python benchmarks/bench_scale.py [--rows 1000000 10000000] [--big] [--dir DIR]
    PYTHONPATH=src python benchmarks/bench_scale.py --rows 1000000 5000000 --big --tasks release-pop release-self
    PYTHONPATH=src python benchmarks/bench_scale.py --rows 1000000 10000000 40000000 --tasks release-pop \
        release-self --self-max 10000000 --dir /tmp/scale --keep --out /tmp/scale-out

For each size an Adult-like Parquet file (age, sex, hours, income and four
filler columns) is generated with DuckDB, then every measurement runs in its own
child process so that its peak RSS (``ru_maxrss`` from ``wait4``) is its own:

* ``groupby``   one hand-written DuckDB ``GROUP BY`` computing, per income group,
                the count, Σv and Σ v vᵀ of the contributions of
                mean:age, count:sex=Female, mean:hours (the baseline);
* ``summarize`` :func:`distpriv.data.summarize` (the same sums plus min/max and
                missing-value counts, through narwhals);
* ``model``     summarize + the Gaussian moment model for Ψ = {(0.45, 0.55)} with
                n = all rows (a table modelled from itself) + a 1,000-row
                stratified subsample per group;
* ``fingerprint`` :func:`distpriv.data.row_fingerprints` (8 bytes per row come back);
* ``pandas``    the in-memory path (read the used columns with pandas,
                ``GroupMoments.from_frame``), for sizes up to 10M rows;
* ``release-pop``  the CLI ``distpriv release`` of a 2,000-row table with the
                big file as ``--population`` (JSON output, mechanism auto);
* ``release-self`` the CLI ``distpriv release --model-from-data`` of the big
                file itself, n = all rows (up to ``--self-max`` rows);
* ``release-self-out`` the same with ``--out`` (public files and the private
                ledger, whose cell fingerprints hash every cell of the table).

Times are measured inside the child after its imports, as wall seconds and as
CPU seconds of the child (user + system, every thread: DuckDB's workers
included; the figure to trust on a loaded machine); ``process CPU`` is the
whole child from ``wait4`` (interpreter start and imports too). The figures to
report are the ratios to ``groupby`` in the same run and the RSS column. ``--big``
adds 40M rows, and 100M when the disk has room. ``--out`` writes the table as
Markdown, the raw numbers as JSON and a log-log plot of time and RSS against rows.
Before the children run, the library's sources are compiled to bytecode (``compileall``, into the
``__pycache__`` folders git ignores), as an installed package's are: without it, in an environment with
``PYTHONDONTWRITEBYTECODE`` set, every child compiles ~80 modules from source on the release path (about
0.6 s CPU, more than the GROUP BY itself); ``--no-precompile`` measures that cold case.
``--repeat N`` runs each measurement N times and reports the median time; the
last lines give the ratios issue 12 sets goals for.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
STATS = ["mean:age", "count:sex=Female", "mean:hours"]
PROTECT = "income=>50K"

CHILD = textwrap.dedent(
    """
    import json, os, resource, sys, time
    path, task = sys.argv[1], sys.argv[2]

    def cpu():  # user + system seconds of this process, every thread (DuckDB's workers included)
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    stats = ["mean:age", "count:sex=Female", "mean:hours"]
    protect = "income=>50K"
    if task == "groupby":
        import duckdb
        con = duckdb.connect()
        t, c = time.perf_counter(), cpu()
        rows = con.sql(f'''
            SELECT income = '>50K' AS g, count(*) AS n,
                   sum(v0), sum(v1), sum(v2),
                   sum(v0 * v0), sum(v0 * v1), sum(v0 * v2), sum(v1 * v1), sum(v1 * v2), sum(v2 * v2)
            FROM (SELECT income, CAST(age AS DOUBLE) AS v0, CAST(sex = 'Female' AS DOUBLE) AS v1,
                         CAST(hours AS DOUBLE) AS v2 FROM read_parquet('{path}'))
            GROUP BY 1''').fetchall()
        out = {"seconds": time.perf_counter() - t, "check": sorted(r[1] for r in rows)}
    elif task == "pandas":
        import pandas as pd
        from distpriv.moments import GroupMoments
        t, c = time.perf_counter(), cpu()
        frame = pd.read_parquet(path, columns=["age", "sex", "hours", "income"])
        gm = GroupMoments.from_frame(frame, stats, protect)
        out = {"seconds": time.perf_counter() - t, "check": sorted(gm.counts.tolist())}
    elif task in ("release-pop", "release-self", "release-self-out"):
        import contextlib, io
        from distpriv.cli import main
        common = ["--stat", "mean:age", "--stat", "count:sex=Female", "--stat", "mean:hours", "--protect", protect,
                  "--pairs", "0.2,0.3", "--epsilon", "1", "--delta", "1e-3", "--format", "json"]
        if task == "release-pop":  # a 2,000-row table, the big file as the population
            args = ["release", sys.argv[3], "--population", path, *common]
        else:  # the big file modelled from itself, n = all rows
            args = ["release", path, "--model-from-data", *common]
        if task == "release-self-out":  # also the public files and the private ledger (row fingerprints)
            import tempfile
            args += ["--out", os.path.join(tempfile.mkdtemp(prefix="distpriv-bench-out-"), "out")]
            os.environ.setdefault("DISTPRIV_HOME", os.path.dirname(args[-1]))
        buf = io.StringIO()
        t, c = time.perf_counter(), cpu()
        with contextlib.redirect_stdout(buf):
            try:
                main(args)
            except SystemExit as exc:
                if exc.code:
                    raise
        doc = json.loads(buf.getvalue())
        out = {"seconds": time.perf_counter() - t, "check": [doc["mechanism"]]}

    else:
        from distpriv import data as dd
        from distpriv.moments import moment_model
        t, c = time.perf_counter(), cpu()
        if task == "summarize":
            s = dd.summarize(path, stats, protect)
            out = {"check": sorted(s.moments.counts.tolist()), "passes": s.passes}
        elif task == "model":
            s = dd.summarize(path, stats, protect)
            model = moment_model(s.moments, [(0.45, 0.55)], s.kept, replace=True)
            sub = dd.stratified_sample(path, stats, protect, 1000, seed=0, summary=s)
            out = {"check": sorted(s.moments.counts.tolist()), "sample": list(sub.sizes)}
        elif task == "fingerprint":
            fp = dd.row_fingerprints(path, key=bytes(32))
            out = {"check": [int(fp.size)]}
        out["seconds"] = time.perf_counter() - t
    out["cpu"] = cpu() - c
    print(json.dumps(out))
    if task == "release-self-out":  # the ledger's cell file is rows x columns x 8 bytes: do not leave it
        import shutil
        shutil.rmtree(os.path.dirname(args[-1]), ignore_errors=True)
    """
)


def generate(path: Path, rows: int) -> float:
    import duckdb

    start = time.perf_counter()
    con = duckdb.connect()
    con.execute(
        f"""COPY (SELECT (17 + (hash(i, 1) % 74))::BIGINT AS age,
                         CASE WHEN hash(i, 2) % 3 = 0 THEN 'Female' ELSE 'Male' END AS sex,
                         (1 + hash(i, 3) % 9900) / 100.0 AS hours,
                         CASE WHEN hash(i, 4) % 4 = 0 THEN '>50K' ELSE '<=50K' END AS income,
                         random() AS f1, random() AS f2, (hash(i, 5) % 1000)::INTEGER AS f3,
                         'w' || (hash(i, 6) % 9)::VARCHAR AS f4
                  FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet)"""
    )
    con.close()
    return time.perf_counter() - start


def run_child(path: Path, task: str, extra: str = "") -> dict:
    """Start the child, collect its own rusage with wait4 (peak RSS of that process alone)."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryFile("w+") as out_file, tempfile.TemporaryFile("w+") as err_file:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), task, extra], stdout=out_file,
                                stderr=err_file, text=True, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out_file.seek(0)
        err_file.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{task} failed:\n{err_file.read()[-2000:]}")
        raw = out_file.read()
        try:
            out = json.loads(raw.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise SystemExit(f"{task}: unexpected output {raw[:500]!r}") from None
    out["rss_mb"] = usage.ru_maxrss / 1024
    out["process_cpu"] = usage.ru_utime + usage.ru_stime  # the whole child: interpreter start and imports too
    return out


def markdown_table(results: list[dict], tasks: list[str]) -> str:
    """Markdown table: per size, each task's seconds, ratio to ``groupby`` and peak RSS."""
    head = "| rows | file MB | " + " | ".join(
        f"{t} s (× groupby) | {t} CPU s (× groupby) | {t} RSS MB" for t in tasks) + " |"
    rule = "|" + "---:|" * (2 + 3 * len(tasks))
    lines = [head, rule]
    for row in results:
        base = row["tasks"]["groupby"]["seconds"]
        base_cpu = row["tasks"]["groupby"]["cpu"]
        cells = [f"{row['rows']:,}", f"{row['file_mb']:.0f}"]
        for task in tasks:
            r = row["tasks"].get(task)
            if r is None:
                cells += ["–", "–", "–"]
            else:
                cells += [f"{r['seconds']:.2f} ({r['seconds'] / base:.1f}×)",
                          f"{r['cpu']:.2f} ({r['cpu'] / base_cpu:.1f}×)", f"{r['rss_mb']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def goal_lines(results: list[dict]) -> list[str]:
    """The ratios issue 12 sets goals for, per size measured: the population release against one DuckDB
    GROUP BY (goal <= 6x at 40M rows), the self-modelled release against GROUP BY and against the data
    layer's aggregate pass ``summarize`` (goal <= 10x "one aggregate pass" at 5M rows)."""
    out = []
    for row in results:
        t = row["tasks"]
        for metric, label in (("seconds", "wall"), ("cpu", "CPU"), ("process_cpu", "process CPU")):
            base = t["groupby"][metric]
            parts = [f"{task} / groupby = {t[task][metric] / base:.1f}x"
                     for task in ("release-pop", "release-self", "release-self-out") if task in t]
            if "release-self" in t and "summarize" in t:
                parts.append(f"release-self / summarize = {t['release-self'][metric] / t['summarize'][metric]:.1f}x")
            if parts:
                out.append(f"{row['rows']:,} rows, {label}: " + ", ".join(parts))
    return out


def plot(results: list[dict], tasks: list[str], path: Path) -> None:
    """Time and peak RSS against rows, log-log, one line per task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for task in tasks:
        pts = [(r["rows"], r["tasks"][task]) for r in results if task in r["tasks"]]
        if not pts:
            continue
        rows = [x for x, _ in pts]
        axes[0].plot(rows, [m["seconds"] for _, m in pts], marker="o", label=task)
        axes[1].plot(rows, [m["rss_mb"] for _, m in pts], marker="o", label=task)
    for ax, label in zip(axes, ("seconds (after imports of the child)", "peak RSS (MB)"), strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def precompile() -> None:
    """Compile the library's sources to bytecode once, as installing the package does (see the module docstring)."""
    import compileall

    compileall.compile_dir(SRC, quiet=1)


def machine() -> str:
    """One line describing where the numbers were measured."""
    import platform

    import duckdb

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()} with {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, DuckDB {duckdb.__version__}, load average {load:.1f} at start")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000],
                        help="table sizes (default 1M and 10M rows)")
    parser.add_argument("--big", action="store_true", help="also 40M rows, and 100M if the disk has room")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where to write the Parquet files (default: a temp dir); files already there are reused")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--out", type=Path, default=None,
                        help="write scale.md (Markdown table), scale.png (time and RSS against rows, log-log) and "
                             "scale.json (raw numbers) to this folder")
    parser.add_argument("--tasks", nargs="+", default=["groupby", "summarize", "model", "fingerprint", "pandas"],
                        choices=["groupby", "summarize", "model", "fingerprint", "pandas", "release-pop",
                                 "release-self", "release-self-out"],
                        help="what to measure (groupby always runs: it is the baseline)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run every measurement this many times and report the median time (max RSS)")
    parser.add_argument("--self-max", type=int, default=10_000_000,
                        help="largest table run through release-self (--model-from-data, n = all rows)")
    parser.add_argument("--no-precompile", action="store_true",
                        help="do not compile the library to bytecode first (children may compile it from source)")
    args = parser.parse_args(argv)
    if not args.no_precompile:
        precompile()
    sizes = list(args.rows)
    if args.dir is None:
        workdir = Path(tempfile.mkdtemp(prefix="distpriv-bench-scale-"))
    else:
        workdir = args.dir
        workdir.mkdir(parents=True, exist_ok=True)
    if args.big:
        sizes.append(40_000_000)
        if shutil.disk_usage(workdir).free > 8 * 2**30:
            sizes.append(100_000_000)
    tasks = ["groupby", *(t for t in args.tasks if t != "groupby")]
    where = machine()
    print(f"query {STATS}, protect {PROTECT!r}; Parquet files in {workdir}; {where}")
    print(f"{'rows':>11} {'file MB':>8} | " + " | ".join(f"{t:>34}" for t in tasks))
    print(f"{'':>11} {'':>8} | " + " | ".join(f"{'wall s (x)  CPU s (x)  RSS MB':>34}" for _ in tasks))
    results: list[dict] = []
    made: list[Path] = []
    try:
        for rows in sizes:
            path = workdir / f"table-{rows}.parquet"
            if not path.exists():
                generate(path, rows)
                made.append(path)
            small = workdir / "table-2000.parquet"
            if "release-pop" in tasks and not small.exists():
                generate(small, 2000)
                made.append(small)
            measured = {}
            for task in tasks:
                if task == "pandas" and rows > 10_000_000:
                    continue
                if task in ("release-self", "release-self-out") and rows > args.self_max:
                    continue
                runs = [run_child(path, task, str(small)) for _ in range(args.repeat)]
                runs.sort(key=lambda r: r["seconds"])
                measured[task] = {**runs[len(runs) // 2], "runs": [r["seconds"] for r in runs],
                                  "cpu": sorted(r["cpu"] for r in runs)[len(runs) // 2],
                                  "process_cpu": sorted(r["process_cpu"] for r in runs)[len(runs) // 2],
                                  "rss_mb": max(r["rss_mb"] for r in runs)}
            checks = {t: r["check"] for t, r in measured.items()
                      if t not in ("fingerprint", "release-pop", "release-self", "release-self-out")}
            if len({json.dumps(c) for c in checks.values()}) != 1:
                raise SystemExit(f"group counts disagree: {checks}")
            base = measured["groupby"]["seconds"]
            base_cpu = measured["groupby"]["cpu"]
            cells = []
            for task in tasks:
                r = measured.get(task)
                if r is None:
                    cells.append(f"{'-':>34}")
                else:
                    cells.append(f"{r['seconds']:6.2f} ({r['seconds'] / base:4.1f}x) {r['cpu']:6.2f} "
                                 f"({r['cpu'] / base_cpu:4.1f}x) {r['rss_mb']:5.0f}")
            size_mb = path.stat().st_size / 2**20
            print(f"{rows:>11,} {size_mb:>8.0f} | " + " | ".join(cells), flush=True)
            results.append({"rows": rows, "file_mb": size_mb, "tasks": measured})
            if not args.keep and path in made:
                path.unlink()
    finally:
        if not args.keep:
            for f in made:
                f.unlink(missing_ok=True)
            if args.dir is None:
                shutil.rmtree(workdir, ignore_errors=True)
    summary = goal_lines(results)
    print("\n".join(summary))
    if args.out is not None and results:
        args.out.mkdir(parents=True, exist_ok=True)
        command = "PYTHONPATH=src python benchmarks/bench_scale.py " + " ".join(
            a for a in (argv if argv is not None else sys.argv[1:]))
        table = markdown_table(results, tasks)
        goals = "\n".join(f"- {line}" for line in summary)
        (args.out / "scale.md").write_text(f"Measured on {where}; rerun with `{command}`.\n\n{table}\n{goals}\n")
        (args.out / "scale.json").write_text(json.dumps({"machine": where, "command": command, "results": results},
                                                        indent=1))
        plot(results, tasks, args.out / "scale.png")
        print(f"wrote {args.out / 'scale.md'}, {args.out / 'scale.png'}, {args.out / 'scale.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
