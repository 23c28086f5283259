"""Laplace top-up CPU before/after, with the claims compared (issue 26, items 1-2).

Runs a fixed set of Laplace calibrations (ExpM (L) and DirM (L); 1-D and 2-D; equal and unequal
covariances; with and without a δ target) twice, in subprocesses: once with the library at a
"before" revision (extracted by ``git archive`` into a temporary directory) and once with this
worktree's ``src``. Prints the CPU seconds of each (``resource.getrusage`` in the worker, after
imports) and their ratio, and checks that every claim is byte-identical: the claimed (ε, δ), the
Laplace scales, the noise basis and the guarantee's notes (``repr`` of the floats).

With ``--tests`` it also times ``pytest tests/accounting/test_independent_profile.py`` under both
sources (CPU of the child process via ``os.wait4``; ~3 min each on a quiet machine).

Run from the repository root::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_laplace_topup.py [--before REV] [--tests]

The machine is shared: the ratio measured in one run is the figure, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The last main commit before the top-up speed work (issue 26, lapcore27).
BEFORE = "6b7b1a4"

WORKER = r'''
import json, resource, sys, warnings
import numpy as np
import distpriv as dp

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def models():
    eq1 = dp.GaussianModel(means={"a": [0.0], "b": [1.0]}, covariances={"a": [[1.0]], "b": [[1.0]]})
    ne1 = dp.GaussianModel(means={"a": [0.0], "b": [0.7]}, covariances={"a": [[1.0]], "b": [[1.6]]})
    eq2 = dp.GaussianModel(means={"a": [0.0, 0.0], "b": [1.0, 0.5]},
                           covariances={"a": [[2.0, 0.3], [0.3, 1.0]], "b": [[2.0, 0.3], [0.3, 1.0]]})
    ne2 = dp.GaussianModel(means={"a": [0.0, 0.0], "b": [0.8, -0.4]},
                           covariances={"a": [[1.0, 0.2], [0.2, 1.5]], "b": [[1.4, -0.1], [-0.1, 1.1]]})
    return {"eq1": eq1, "ne1": ne1, "eq2": eq2, "ne2": ne2}

out = []
start = cpu()
for mname, model in models().items():
    for mech in ("expm-laplace", "dirm-laplace"):
        for eps in (0.5, 1.0, 2.0):
            for delta in (None, 1e-3, 1e-6):
                label = f"{mname} {mech} eps={eps} delta={delta}"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        m = dp.calibrate(mech, model, [("a", "b")], epsilon=eps, delta=delta)
                    except dp.DistPrivError as err:
                        out.append([label, "refused", str(err)])
                        continue
                g = m.guarantee
                out.append([label, repr(float(g.epsilon)), repr(float(g.delta)),
                            repr(np.asarray(m.scales, dtype=float).tolist()),
                            repr(np.asarray(m.basis, dtype=float).tolist()),
                            repr(list(getattr(g, "notes", [])))])
print(json.dumps({"cpu": cpu() - start, "claims": out}))
'''


def _env(src: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def _worker(src: Path) -> dict[str, object]:
    res = subprocess.run([sys.executable, "-c", WORKER], env=_env(src), capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    data: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    return data


def _child_cpu(cmd: list[str], src: Path) -> tuple[float, int]:
    """CPU seconds (user + system) of a child process and its exit status, via os.wait4."""
    proc = subprocess.Popen(cmd, env=_env(src), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=BEFORE, help="git revision of the 'before' library (default %(default)s)")
    ap.add_argument("--tests", action="store_true", help="also time tests/accounting/test_independent_profile.py")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        arch = subprocess.run(["git", "archive", args.before, "src"], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
        old_src, new_src = Path(tmp) / "src", ROOT / "src"
        t0 = time.time()
        before, after = _worker(old_src), _worker(new_src)
        same = before["claims"] == after["claims"]
        n = len(before["claims"])  # type: ignore[arg-type]
        print(f"calibrations: {n} (ExpM (L), DirM (L); 1-D/2-D; equal/unequal covariances; δ none/1e-3/1e-6)")
        print(f"  CPU before {before['cpu']:.2f} s, after {after['cpu']:.2f} s, "
              f"ratio {float(before['cpu']) / float(after['cpu']):.2f}x")  # type: ignore[arg-type]
        print(f"  claims byte-identical: {same}")
        if not same:
            for b, a in zip(before["claims"], after["claims"], strict=True):  # type: ignore[call-overload]
                if b != a:
                    print("  DIFF", b, "->", a)
        if args.tests:
            test = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                    "tests/accounting/test_independent_profile.py"]
            cb, rb = _child_cpu(test, old_src)
            ca, ra = _child_cpu(test, new_src)
            print(f"test_independent_profile.py: CPU before {cb:.1f} s (exit {rb}), after {ca:.1f} s (exit {ra}), "
                  f"ratio {cb / ca:.2f}x")
        print(f"(wall {time.time() - t0:.0f} s; the machine may be loaded: compare the ratios)")
        return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
