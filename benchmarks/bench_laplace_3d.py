"""Benchmark: Laplace scale calibrated with the certified 3-D grid on 3-D models with unequal covariances (issue 25).

ExpM (L) adds Lap(b) noise on the standard basis, which does not diagonalise unequal covariances. In 3-D its δ is
proven by the Gaussian-coupling bound (:mod:`distpriv.accounting.laplace`) by default; with ``tight=True`` the
certified 3-D grid of :mod:`distpriv.accounting.laplace_3d` is used as well. For each random model (Σ₀ = AAᵀ/2 + 0.5 I,
Σ₁ = Σ₀ + 0.4 CCᵀ/2, means 10 + N(0, I), as in benchmarks/bench_laplace_tight.py but in 3-D) and each (ε, δ) it prints

* ``coupling``: the scale of ``dp.calibrate("expm-laplace", ...)`` (the coupling bound, default),
* ``tight``: the scale of ``dp.calibrate("expm-laplace", ..., tight=True)``,
* ``floor``: a certified lower bound on the least scale: the largest scale (bisection to 1 %) at which the grid's
  *lower* end of δ(ε) (κ = FLOOR_KAPPA, both orders, this tree's code) still exceeds δ — so the least scale lies in
  [floor, tight] and ``tight_over_floor`` bounds tight/least from above,

with the CPU seconds of each calibration, each run in a fresh child process (``time.process_time`` around the call
alone: imports and the grids' memo do not count). The machine may be shared: compare the columns of one run.

``--before REV`` also runs the tight calibration of commit ``REV``'s ``src`` (``git archive`` into a temporary
folder), alternating with this tree's on each model, and prints both scales and CPU seconds side by side and the
medians of their ratios (one run, so one machine load). ``--all`` adds (ε, δ) = (0.1, 1e-4) and (1, 1e-6).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_laplace_3d.py [--models N] [--before REV] [--all]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = [(1.0, 1e-3)]
MORE = [(0.1, 1e-4), (1.0, 1e-6)]
#: Grid resolution of the floor (any κ gives a certified lower end; a coarser one only lowers the floor).
FLOOR_KAPPA = 0.2


def unequal_model(seed: int):  # type: ignore[no-untyped-def]
    import distpriv as dp

    rng = np.random.default_rng(seed)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T / 2 + 0.5 * np.eye(3)
    c = rng.normal(size=(3, 3))
    return dp.GaussianModel(means={0: 10 + rng.normal(size=3), 1: 10 + rng.normal(size=3)},
                            covariances={0: cov, 1: cov + 0.4 * c @ c.T / 2})


def child(seed: int, eps: float, delta: float, tight: bool) -> None:
    """One calibration in this process (the ``src`` on PYTHONPATH); prints its scale, direction and CPU seconds."""
    import distpriv as dp

    warnings.simplefilter("ignore")
    model = unequal_model(seed)
    t0 = time.process_time()
    res = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=eps, delta=delta, tight=tight)
    cpu = time.process_time() - t0
    scales = np.asarray(res.scales)
    print(json.dumps({"scale": float(res.laplace_scale), "cpu": cpu, "basis": np.asarray(res.basis).tolist(),
                      "direction": (scales / float(res.laplace_scale)).tolist()}))


def run_child(src: Path, seed: int, eps: float, delta: float, tight: bool) -> dict[str, object]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(seed), repr(eps), repr(delta),
                          "1" if tight else "0"], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def floor_scale(model, basis: np.ndarray, direction: np.ndarray, hi: float, eps: float,  # type: ignore[no-untyped-def]
                delta: float) -> float:
    """Largest k (to 1 %) below ``hi`` with the grid's lower end of δ(ε) > δ for noise k·direction (0 if none found)."""
    from distpriv.accounting import laplace_3d as l3d

    def above(k: float) -> bool:
        br = l3d.delta_bracket_3d(model.mean(0), model.covariance(0), model.mean(1), model.covariance(1), basis,
                                  k * direction, eps, kappa=FLOOR_KAPPA)
        return br.lower > delta

    lo = hi / 1.1
    while not above(lo):
        hi, lo = lo, lo / 1.1
        if lo < 1e-3 * hi:
            return 0.0
    while hi / lo > 1.01:
        mid = float(np.sqrt(lo * hi))
        lo, hi = (mid, hi) if above(mid) else (lo, mid)
    return lo


def _export(rev: str, into: Path) -> Path:
    """``src`` of commit ``rev`` of this repository, extracted under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=4)
    ap.add_argument("--before", metavar="REV", help="also run the tight calibration of this commit's src")
    ap.add_argument("--all", action="store_true", help="also (ε, δ) = (0.1, 1e-4) and (1, 1e-6)")
    ap.add_argument("--no-floor", action="store_true", help="skip the certified floor (CPU only)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(int(args.child[0]), float(args.child[1]), float(args.child[2]), args.child[3] == "1")
        return 0
    warnings.simplefilter("ignore")
    src = ROOT / "src"
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _export(args.before, Path(tmp)) if args.before else None
        for eps, delta in SETTINGS + (MORE if args.all else []):
            rows = []
            for seed in range(args.models):
                row: dict[str, object] = {"epsilon": eps, "delta": delta, "seed": seed}
                row["coupling"] = run_child(src, seed, eps, delta, False)["scale"]
                if old_src is not None:
                    old = run_child(old_src, seed, eps, delta, True)
                    row["tight_before"], row["cpu_before_s"] = old["scale"], old["cpu"]
                new = run_child(src, seed, eps, delta, True)
                row["tight"], row["cpu_tight_s"] = new["scale"], new["cpu"]
                if not args.no_floor:
                    floor = floor_scale(unequal_model(seed), np.asarray(new["basis"]), np.asarray(new["direction"]),
                                        float(new["scale"]), eps, delta)  # type: ignore[arg-type]
                    row["floor"] = floor
                    row["tight_over_floor"] = float(new["scale"]) / floor if floor > 0 else float("inf")  # type: ignore[arg-type]
                    if old_src is not None:
                        row["before_over_floor"] = float(row["tight_before"]) / floor if floor > 0 else float("inf")  # type: ignore[arg-type]
                row["coupling_over_tight"] = float(row["coupling"]) / float(new["scale"])  # type: ignore[arg-type]
                rows.append(row)
                print(json.dumps({k: (round(v, 4) if isinstance(v, float) and k not in ("epsilon", "delta") else v)
                                  for k, v in row.items()}), flush=True)
            summary: dict[str, object] = {"epsilon": eps, "delta": delta, "models": len(rows)}
            for key in ("cpu_tight_s", "cpu_before_s", "tight_over_floor", "before_over_floor", "coupling_over_tight"):
                vals = [float(r[key]) for r in rows if key in r]  # type: ignore[arg-type]
                if vals:
                    summary[f"{key}_median"] = round(float(np.median(vals)), 4)
                    summary[f"{key}_max"] = round(max(vals), 4)
            if old_src is not None:
                summary["cpu_before_over_after_median"] = round(float(np.median(
                    [float(r["cpu_before_s"]) / float(r["cpu_tight_s"]) for r in rows])), 2)  # type: ignore[arg-type]
            print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
