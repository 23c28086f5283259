"""Benchmark: Laplace scale calibrated with the certified 3-D grid on 3-D models with unequal covariances (issue 25).

ExpM (L) adds Lap(b) noise on the standard basis, which does not diagonalise unequal covariances. Its δ is proven by
the Gaussian-coupling bound (:mod:`distpriv.accounting.laplace`) with ``tight=False``; by default in 3-D (``tight=None``
resolves to True since lap3d31) the certified 3-D grid of :mod:`distpriv.accounting.laplace_3d` is used as well,
behind a deterministic work budget (:data:`distpriv.accounting.topup.WORK_BUDGET_3D` grid elements) and an early exit
(a coarse probe at the coupling bound's scale / :data:`~distpriv.accounting.topup.USEFUL_3D`). For each random model
(Σ₀ = AAᵀ/2 + 0.5 I, Σ₁ = Σ₀ + 0.4 CCᵀ/2, means 10 + N(0, I), as in benchmarks/bench_laplace_tight.py but in 3-D) and
each (ε, δ) it prints

* ``coupling``: the scale of ``dp.calibrate("expm-laplace", ..., tight=False)`` (the coupling bound),
* ``tight``: the scale of ``dp.calibrate("expm-laplace", ...)`` (the default),
* ``floor``: a certified lower bound on the least scale: the largest scale (bisection to 1 %) at which the grid's
  *lower* end of δ(ε) (κ = FLOOR_KAPPA, both orders, this tree's code) still exceeds δ — so the least scale lies in
  [floor, tight] and ``tight_over_floor`` bounds tight/least from above,
* ``work``: the grid elements the default spent, ``budget_hit`` / ``early_exit``: whether the budget or the probe
  decided the result,

with the CPU seconds of each calibration, each run in a fresh child process (``time.process_time`` around the call
alone: imports and the grids' memo do not count). The machine may be shared: compare the columns of one run.

``--hard`` instead runs a reviewer's hard models (review30b): three pairs, covariances Q diag(0.1, 1, 100) Qᵀ with
random rotations, means 20·N(0, I) (seed 0), DirM (L) and ExpM (L) at (0.1, 1e-8), (3, 1e-8), (0.3, 1e-2), and
one ExpM case with condition number 1e3 at (0.1, 1e-4) (the reviewer's ``check_calib.py`` seed 7): default and
``tight=False`` scale and CPU, and whether the budget was reached.

``--before REV`` also runs the tight calibration of commit ``REV``'s ``src`` (``git archive`` into a temporary
folder), alternating with this tree's on each model, and prints both scales and CPU seconds side by side and the
medians of their ratios (one run, so one machine load). ``--all`` adds (ε, δ) = (0.1, 1e-4) and (1, 1e-6).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_laplace_3d.py [--models N] [--before REV] [--all]``
and ``... --hard``.
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


def stress_model(seed: int):  # type: ignore[no-untyped-def]
    """review30b's stress_calib_time.py model: three θ, Σ_i = Q_i diag(0.1, 1, 100) Q_iᵀ (Q_i random rotations),
    means 20·N(0, I)."""
    from scipy.stats import special_ortho_group

    import distpriv as dp

    rng = np.random.default_rng(seed)
    covs, means = {}, {}
    for i in range(3):
        q = special_ortho_group.rvs(3, random_state=rng)
        covs[i] = q @ np.diag([0.1, 1.0, 100.0]) @ q.T
        means[i] = 20.0 * rng.normal(size=3)
    return dp.GaussianModel(means=means, covariances=covs)


def cond_model(seed: int):  # type: ignore[no-untyped-def]
    """review30b's check_calib.py case (seed 7: ExpM (L), condition number 1e3 near the standard basis, three pairs)."""
    import math

    from scipy.linalg import expm

    import distpriv as dp

    rng = np.random.default_rng(10_000 + seed)
    rng.choice(["expm-laplace", "dirm-laplace"])
    cond = float(rng.choice([1.0, 3.0, 30.0, 1e3]))
    k = 2 if int(rng.choice([1, 3])) == 1 else 3
    if cond >= 30:
        qs = [expm(0.05 * (lambda a: a - a.T)(rng.normal(size=(3, 3)))) for _ in range(k)]
    else:
        from scipy.stats import special_ortho_group

        qs = [special_ortho_group.rvs(3, random_state=rng) for _ in range(k)]
    covs = {}
    for i in range(k):
        lam = np.exp(rng.uniform(0, math.log(cond), size=3))
        lam[0], lam[1] = 1.0, cond
        lam = lam / np.exp(np.mean(np.log(lam)))
        covs[i] = qs[i] @ np.diag(lam) @ qs[i].T * float(rng.uniform(0.7, 1.4))
    sep = float(rng.choice([0.3, 1.0, 4.0, 12.0]))
    means = {i: sep * rng.normal(size=3) / math.sqrt(3) for i in range(k)}
    return dp.GaussianModel(means=means, covariances=covs)


THREE = [(0, 1), (0, 2), (1, 2)]
HARD = [("stress", 0, name, eps, delta) for name in ("dirm-laplace", "expm-laplace")
        for eps, delta in ((0.1, 1e-8), (3.0, 1e-8), (0.3, 1e-2))] + [("cond", 7, "expm-laplace", 0.1, 1e-4)]


def child(spec: str, eps: float, delta: float, mode: str) -> None:
    """One calibration in this process (the ``src`` on PYTHONPATH); prints its scale, direction, CPU seconds and the
    3-D grid's work (``spec``: ``bench:SEED:NAME``, ``stress:SEED:NAME`` or ``cond:SEED:NAME``; ``mode``: 1, 0 or
    auto, the ``tight`` option)."""
    import contextlib

    import distpriv as dp

    warnings.simplefilter("ignore")
    kind, seed, name = spec.split(":")
    model = {"bench": unequal_model, "stress": stress_model, "cond": cond_model}[kind](int(seed))
    pairs = [(0, 1)] if kind == "bench" else THREE
    spent = []
    try:
        from distpriv.accounting import laplace_3d as l3d

        orig = l3d.work_budget

        @contextlib.contextmanager
        def record(limit):  # type: ignore[no-untyped-def]
            with orig(limit) as budget:
                spent.append(budget)
                yield budget

        l3d.work_budget = record  # type: ignore[assignment]
    except (ImportError, AttributeError):  # an older src (--before) has no budget
        pass
    tight = None if mode == "auto" else mode == "1"
    t0 = time.process_time()
    res = dp.calibrate(name, model, pairs, epsilon=eps, delta=delta, tight=tight)
    cpu = time.process_time() - t0
    scales = np.asarray(res.scales)
    notes = [n for n in res.guarantee.notes if n.startswith("3-D grid:")]
    print(json.dumps({"scale": float(np.max(scales)), "cpu": cpu, "basis": np.asarray(res.basis).tolist(),
                      "direction": (scales / float(np.max(scales))).tolist(),
                      "work": sum(getattr(b, "spent", 0) for b in spent),
                      "budget_hit": any(getattr(b, "hit", False) for b in spent),
                      "early_exit": any("does not certify" in n for n in notes)}))


def run_child(src: Path, seed: int | str, eps: float, delta: float, tight: bool | None) -> dict[str, object]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    spec = seed if isinstance(seed, str) else f"bench:{seed}:expm-laplace"
    mode = "auto" if tight is None else ("1" if tight else "0")
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", spec, repr(eps), repr(delta), mode],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def hard(src: Path) -> None:
    """The reviewer's hard cases: default and tight=False, one line each."""
    for kind, seed, name, eps, delta in HARD:
        spec = f"{kind}:{seed}:{name}"
        auto = run_child(src, spec, eps, delta, None)
        loose = run_child(src, spec, eps, delta, False)
        print(json.dumps({"model": spec, "epsilon": eps, "delta": delta, "default": round(float(auto["scale"]), 4),  # type: ignore[arg-type]
                          "coupling": round(float(loose["scale"]), 4), "cpu_default_s": round(float(auto["cpu"]), 2),  # type: ignore[arg-type]
                          "cpu_coupling_s": round(float(loose["cpu"]), 2), "work": auto["work"],  # type: ignore[arg-type]
                          "budget_hit": auto["budget_hit"], "early_exit": auto["early_exit"],
                          "coupling_over_default": round(float(loose["scale"]) / float(auto["scale"]), 4)}),  # type: ignore[arg-type]
              flush=True)


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
    ap.add_argument("--hard", action="store_true", help="the reviewer's hard models instead")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], float(args.child[1]), float(args.child[2]), args.child[3])
        return 0
    warnings.simplefilter("ignore")
    src = ROOT / "src"
    if args.hard:
        hard(src)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _export(args.before, Path(tmp)) if args.before else None
        for eps, delta in SETTINGS + (MORE if args.all else []):
            rows = []
            for seed in range(args.models):
                row: dict[str, object] = {"epsilon": eps, "delta": delta, "seed": seed}
                loose = run_child(src, seed, eps, delta, False)
                row["coupling"], row["cpu_coupling_s"] = loose["scale"], loose["cpu"]
                if old_src is not None:
                    old = run_child(old_src, seed, eps, delta, True)
                    row["tight_before"], row["cpu_before_s"] = old["scale"], old["cpu"]
                new = run_child(src, seed, eps, delta, None)
                row["tight"], row["cpu_tight_s"] = new["scale"], new["cpu"]
                row["work"], row["budget_hit"], row["early_exit"] = new["work"], new["budget_hit"], new["early_exit"]
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
            for key in ("cpu_tight_s", "cpu_coupling_s", "cpu_before_s", "work", "tight_over_floor", "before_over_floor",
                        "coupling_over_tight"):
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
