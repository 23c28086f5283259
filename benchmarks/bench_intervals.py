"""Empirical coverage of the per-statistic intervals (issue 21, item 3), per noise family, in process.

Usage::

    python benchmarks/bench_intervals.py [--releases 2000] [--level 0.95] [--seed 21]

For each noise family (Gaussian, Laplace, rotated Gaussian (EigM), rotated Laplace (DirM (L)),
Gaussian + Theorem 5.7 Laplace, and a standardised DirM (L) + Theorem 5.7 plan with d = (3, 1000, 0.01)),
``--releases`` seeded releases of a fixed F(D) are drawn with the float-safe noise plan
(:meth:`distpriv.release.noise.NoisePlan.apply`, the exact sampler) and the share of intervals that
contain F(D) is printed per statistic, with the binomial standard error sqrt(L(1 − L)/N) and the
deviation in standard errors (goal: within ~3). For Gaussian-only plans the joint ellipsoid's
coverage is printed too. Nothing is asserted (``tests/release/test_release_intervals.py`` checks the same
at 1,000 releases).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

try:
    import distpriv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import distpriv as dp  # noqa: E402
from distpriv.release.intervals import joint_region, statistic_intervals  # noqa: E402
from distpriv.release.noise import plan_noise  # noqa: E402
from distpriv.release.sampler import SeededBits  # noqa: E402
from distpriv.release.selection import Candidate, Relaxation  # noqa: E402
from distpriv.release.standardize import StandardizedPlan  # noqa: E402


def _model() -> dp.GaussianModel:
    mu = {0.2: np.array([1.0, 2.0, 0.5]), 0.3: np.array([1.4, 1.7, 0.9])}
    cov = np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 0.5]]) * 0.01
    return dp.GaussianModel(means=mu, covariances={0.2: cov, 0.3: cov})


def _candidate(name: str, extra: float = 0.0) -> Candidate:
    mech = dp.calibrate(name, _model(), [(0.2, 0.3)], epsilon=1.0, delta=1e-3)
    rel = Relaxation(lam=0.1, w=0.01) if extra else None
    return Candidate(name, name, True, "bench", 3, mech, extra, None, mech.guarantee, 1.0, rel)


def families() -> dict[str, Any]:
    """The plans of every noise family a release can publish."""
    return {
        "gaussian (ExpM (G))": plan_noise(_candidate("expm-gauss")),
        "laplace (ExpM (L))": plan_noise(_candidate("expm-laplace")),
        "rotated gaussian (EigM)": plan_noise(_candidate("eigm")),
        "rotated laplace (DirM (L))": plan_noise(_candidate("dirm-laplace")),
        "gaussian + Thm 5.7 laplace": plan_noise(_candidate("eigm", extra=0.05)),
        "standardised DirM (L) + Thm 5.7": StandardizedPlan(plan_noise(_candidate("dirm-laplace", extra=0.02)),
                                                           [3.0, 1000.0, 0.01]),
    }


def coverage(plan: Any, level: float, releases: int, seed: int) -> tuple[np.ndarray, float | None]:
    """Per-statistic coverage of F(D) = (1.234567, −2.5, 0.0071) over ``releases`` seeded releases (and the joint)."""
    x = np.array([1.234567, -2.5, 0.0071])
    src = SeededBits(seed)
    hits = np.zeros(3)
    joint = joint_region(x, plan, level) is not None
    pinv = np.linalg.pinv(np.asarray(plan.noise_covariance))
    jh = 0
    for _ in range(releases):
        o = plan.apply(x, src)
        hits += [iv.lo <= xk <= iv.hi for iv, xk in zip(statistic_intervals(o, plan, level), x, strict=True)]
        if joint:
            reg = joint_region(o, plan, level)
            assert reg is not None
            jh += float((o - x) @ pinv @ (o - x)) <= reg["radius"] ** 2
    return hits / releases, (jh / releases if joint else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=2000)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args(argv)
    se = math.sqrt(args.level * (1 - args.level) / args.releases)
    print(f"nominal {args.level}, {args.releases} releases, binomial SE {se:.4f}")
    for name, plan in families().items():
        t0 = time.perf_counter()
        cov, joint = coverage(plan, args.level, args.releases, args.seed)
        dev = (cov - args.level) / se
        extra = "" if joint is None else f"; joint ellipsoid {joint:.4f} ({(joint - args.level) / se:+.1f} SE)"
        print(f"{name:34s} coverage {np.array2string(cov, precision=4)} "
              f"({np.array2string(dev, precision=1, sign='+')} SE){extra}  [{time.perf_counter() - t0:.0f} s]",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
