"""Benchmark: ExpM (L) scale with the common-Gaussian-factor bound against the coupling bound alone (issue 25, lapnd31).

ExpM (L) adds Lap(b) noise on the standard basis, which does not diagonalise unequal covariances; with
``tight=False`` (the release path's setting) its δ is proven by the coupling bound of
:mod:`distpriv.accounting.laplace`; with ``tight=True`` from 4-D on (and by default for a δ′ claimed without a
target) by the smaller of that bound and the common-factor bound of :mod:`distpriv.accounting.laplace_common`. On random d-dimensional models (the family of
benchmarks/bench_laplace_tight.py and bench_laplace_3d.py: Σ₀ = AAᵀ/2 + 0.5 I, Σ₁ = Σ₀ + 0.4 CCᵀ/2, means
10 + N(0, I)) it prints, per model and setting (ε, δ):

* ``coupling``: the calibrated scale with the coupling bound alone (the hook of ``release._composition_bound``
  switched off, as on main before this change), and its CPU seconds;
* ``common``: the calibrated scale with the new bound (``dp.calibrate(..., tight=False)`` with the bound switched
  on in ``release._composition_bound``, as ``tight=True`` does without the 2-D/3-D grids; in 2-D and 3-D with
  ``laplace_common.MIN_DIM`` lowered to 1, since the library computes the bound from 4-D on), and its CPU seconds;
* in 2-D ``tight``: the scale of the certified 2-D grid (``tight=True``), for reference;

and one summary line per (d, setting): median and max of common/coupling (and common/tight in 2-D), and the median
CPU ratio. The coupling run goes first; the new run then finds the coupling bound's memo warm (that part is ~0.2 s).
CPU seconds are process time of this process (BLAS threads count: run with ``OMP_NUM_THREADS=1``); the machine may
be shared, so compare the columns of one run.

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_laplace_common.py [--models N] [--dims 2 3 4 5]
[--settings 1,1e-3 0.1,1e-4 1,1e-6]``.

``--workload [--before REV]`` (lcspeed31): the CPU of the bound itself, before and after, in one process. It runs
``distpriv reproduce chen-ohrimenko --all`` in-process, recording the arguments of every computation of the bound
(the no-target calls of ExpM (L) δ′ claims on the 5-D Adult models: Table 3, Figures 2–5), then replays them through
``laplace_common`` as of git revision REV (default 5343bc8, before lcspeed31; loaded from ``git show`` as a sibling
module, so it uses this tree's :mod:`.laplace` and :mod:`.pld`) and through this tree's, memo bypassed, and prints
the CPU seconds of each and the ratios of the values (new/before: the new cells are certified, so below 1 is
tighter). Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_laplace_common.py --workload``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import io
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any

import numpy as np

import distpriv as dp
from distpriv.accounting import laplace_common as lc
from distpriv.accounting import release

SETTINGS = ("1,1e-3", "0.1,1e-4", "1,1e-6")


def unequal_model(seed: int, d: int) -> dp.GaussianModel:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    cov = a @ a.T / 2 + 0.5 * np.eye(d)
    c = rng.normal(size=(d, d))
    return dp.GaussianModel(means={0: 10 + rng.normal(size=d), 1: 10 + rng.normal(size=d)},
                            covariances={0: cov, 1: cov + 0.4 * c @ c.T / 2})


def calibrate(model: dp.GaussianModel, eps: float, delta: float, *, tight: bool, hook: bool) -> tuple[float, float]:
    """(largest Laplace scale, CPU seconds) of ExpM (L) at (ε, δ); ``hook=False``: the coupling bound alone."""
    orig, dim, bound = lc.improve, lc.MIN_DIM, release._composition_bound
    if not hook:
        lc.improve = lambda upper, *a, **k: (upper, False)  # type: ignore[assignment]
    elif not tight:  # the bound is a tight= choice; here it alone is measured, without the 2-D/3-D grids
        release._composition_bound = lambda *a, **k: bound(*a, **{**k, "tight": True})  # type: ignore[assignment]
    lc.MIN_DIM = 1  # measure the bound in 2-D and 3-D too (the library computes it from 4-D on)
    try:
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mech: Any = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=eps, delta=delta, tight=tight)
        return float(np.max(mech.noise.scales)), time.process_time() - t0
    finally:
        lc.improve, lc.MIN_DIM = orig, dim  # type: ignore[assignment]
        release._composition_bound = bound  # type: ignore[assignment]


def record_workload() -> list[tuple[Any, ...]]:
    """The arguments of every computation of the bound (``laplace_common._bound`` misses) in
    ``distpriv reproduce chen-ohrimenko --all``, run in this process."""
    from distpriv.cli import main as cli_main
    calls: list[tuple[Any, ...]] = []
    raw, memo = lc._bound.__wrapped__, lc._bound

    def rec(*a: Any) -> float:
        calls.append(a)
        return float(raw(*a))

    lc._bound = functools.lru_cache(maxsize=lc.MEMO_SIZE)(rec)  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as out, warnings.catch_warnings(), \
                contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            try:
                cli_main(["reproduce", "chen-ohrimenko", "--all", "--out", out, "--format", "json"])
            except SystemExit:
                pass
    finally:
        lc._bound = memo  # type: ignore[assignment]
    return calls


def module_at(rev: str) -> Any:
    """``distpriv.accounting.laplace_common`` as of git revision ``rev``, loaded as a sibling module."""
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
    src = subprocess.run(["git", "-C", root, "show", f"{rev}:src/distpriv/accounting/laplace_common.py"],
                         capture_output=True, text=True, check=True).stdout
    tmp = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    tmp.write(src)
    tmp.close()
    name = "distpriv.accounting._laplace_common_before"
    spec = importlib.util.spec_from_file_location(name, tmp.name)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def workload(rev: str) -> None:
    """Record the chen-ohrimenko workload, replay it before (``rev``) and after; print CPU and value ratios."""
    t0 = time.process_time()
    calls = record_workload()
    print(f"recorded {len(calls)} computations of the bound ({time.process_time() - t0:.1f} s CPU for the reproduce run)",
          flush=True)
    before = module_at(rev)
    vals: list[list[float]] = []
    cpu: list[float] = []
    for label, mod in ((f"before ({rev})", before), ("after", lc)):
        for obj in vars(mod).values():  # the module's own memos (corners, candidates of C, laws of D) start empty:
            if callable(getattr(obj, "cache_clear", None)) and getattr(obj, "__module__", None) == mod.__name__:
                obj.cache_clear()  # the recording run filled them (``_bound`` itself is replayed unwrapped)
        t0 = time.process_time()
        vals.append([float(mod._bound.__wrapped__(*a)) for a in calls])
        cpu.append(time.process_time() - t0)
        print(f"{label}: {cpu[-1]:.2f} s CPU", flush=True)
    ratios = np.array(vals[1]) / np.maximum(np.array(vals[0]), 1e-300)
    print(f"SUMMARY workload: CPU before {cpu[0]:.2f} s, after {cpu[1]:.2f} s ({cpu[0] / max(cpu[1], 1e-9):.1f}× less); "
          f"after/before δ min {ratios.min():.4f} median {np.median(ratios):.4f} max {ratios.max():.6f} over "
          f"{len(calls)} calls", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=int, default=4)
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 3, 4, 5])
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS))
    ap.add_argument("--workload", action="store_true", help="CPU of the bound before/after on chen-ohrimenko")
    ap.add_argument("--before", default="5343bc8", help="git revision of the 'before' bound (with --workload)")
    args = ap.parse_args()
    if args.workload:
        workload(args.before)
        return 0
    for d in args.dims:
        for setting in args.settings:
            eps, delta = (float(x) for x in setting.split(","))
            ratios, cpu, vs_tight = [], [], []
            for seed in range(args.models):
                model = unequal_model(seed, d)
                old, t_old = calibrate(model, eps, delta, tight=False, hook=False)
                new, t_new = calibrate(model, eps, delta, tight=False, hook=True)
                line = (f"d={d} ε={eps:g} δ={delta:g} seed={seed}: coupling {old:.4g} ({t_old:.2f} s)  "
                        f"common {new:.4g} ({t_new:.2f} s)  ratio {new / old:.3f}")
                ratios.append(new / old)
                cpu.append(t_new / max(t_old, 1e-9))
                if d == 2:
                    tight, t_tight = calibrate(model, eps, delta, tight=True, hook=True)
                    vs_tight.append(new / tight)
                    line += f"  tight {tight:.4g} ({t_tight:.2f} s)  common/tight {new / tight:.3f}"
                print(line, flush=True)
            summary = (f"SUMMARY d={d} ε={eps:g} δ={delta:g}: common/coupling median {np.median(ratios):.3f} "
                       f"max {max(ratios):.3f} min {min(ratios):.3f}; CPU ratio median {np.median(cpu):.1f}×")
            if vs_tight:
                summary += f"; common/tight median {np.median(vs_tight):.3f} max {max(vs_tight):.3f}"
            print(summary, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
