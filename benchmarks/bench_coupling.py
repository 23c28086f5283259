"""Benchmark: the coupling mechanism's worst-case divergence claims against the exact value (issue 25).

``CouplingMechanism.worst_case(ε, name)`` claims ``sup D(λC_s ‖ λ'C_s')`` over the accuracy balls. Up to
12 free inputs per context it enumerates the vertices (exact); beyond, it returns a certified bracket.

* ``forced``: contexts of 7–10 inputs where the exact value is known by vertex enumeration, with the
  bracket path forced (``MAX_FREE = 0``): claimed / exact, median and max, per divergence.
* ``large``: 13–24 inputs (no enumeration): claimed / certified lower end (an upper bound on claimed /
  exact), median and max, and the CPU seconds of the claim (all claims, and per divergence). Issue 25's goal:
  every claimed / lower <= 1.01.

* ``--compare``: the ``large`` claims again, each right after the same claim with the settings before the
  symmetric refinement and the goal extension (``SYMMETRIC`` empty, ``EXTRA_WORK = 0``), interleaved so both see
  the same machine load: claimed / lower and CPU seconds of both, and the per-claim CPU ratio new / previous.

Run: ``PYTHONPATH=src python benchmarks/bench_coupling.py`` (``--quick`` for fewer instances).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics

import numpy as np

from distpriv import local
from distpriv.local import coupling_accounting as ca

NAMES = ("kl", "reverse-kl", "chi2", "hellinger", "tv")


def instance(seed: int, n: int, m: int, size: int) -> tuple[local.CouplingMechanism, float]:
    """True λ_s, estimates from ``size`` samples (add-one smoothing), W1-optimal coupling, accuracy ε."""
    rng = np.random.default_rng(seed)
    cost = rng.uniform(0, 1, size=(n, m))
    true = {s: rng.dirichlet(np.ones(n) * 2) for s in ("a", "b")}
    est = {s: (np.bincount(rng.choice(n, size=size, p=true[s]), minlength=n) + 1.0) / (size + n) for s in true}
    mu = rng.dirichlet(np.ones(m) * 2)
    c = local.CouplingMechanism.optimal(inputs=est, target=mu, cost=cost)
    return c, c.estimation_epsilon(true)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values), "count": len(values)}


def forced(seeds: range) -> dict[str, dict[str, float]]:
    ratios: dict[str, list[float]] = {name: [] for name in NAMES}
    for seed in seeds:
        c, eps = instance(seed, n=7 + seed % 4, m=5, size=60)
        exact = {name: c.worst_case(eps, name) for name in NAMES}
        saved = ca.MAX_FREE
        ca.MAX_FREE = 0
        try:
            for name in NAMES:
                wc = c.worst_case(eps, name)
                assert exact[name].exact and wc.upper >= exact[name].upper * (1 - 1e-9)
                if exact[name].upper > 1e-12:
                    ratios[name].append(wc.upper / exact[name].upper)
        finally:
            ca.MAX_FREE = saved
    return {name: _summary(v) for name, v in ratios.items()}


def large(seeds: range) -> dict[str, object]:
    ratios: dict[str, list[float]] = {name: [] for name in NAMES}
    cpu: list[float] = []
    per_name: dict[str, list[float]] = {name: [] for name in NAMES}
    for seed in seeds:
        c, eps = instance(seed, n=(13, 16, 20, 24)[seed % 4], m=(6, 10)[seed % 2], size=400)
        for name in NAMES:
            t0 = _cpu()
            wc = c.worst_case(eps, name)
            cpu.append(_cpu() - t0)
            per_name[name].append(cpu[-1])
            if wc.lower > 1e-12:
                ratios[name].append(wc.upper / wc.lower)
    return {"claimed_over_lower": {name: _summary(v) for name, v in ratios.items()},
            "cpu_seconds_per_claim": _summary(cpu),
            "cpu_seconds_by_divergence": {name: _summary(v) for name, v in per_name.items()}}


def compare(seeds: range) -> dict[str, object]:
    """The ``large`` claims with the previous settings and the current ones, interleaved claim by claim."""
    out: dict[str, dict[str, list[float]]] = {
        name: {"previous_ratio": [], "ratio": [], "previous_cpu": [], "cpu": []} for name in NAMES}
    current = (ca.SYMMETRIC, ca.EXTRA_WORK)
    for seed in seeds:
        c, eps = instance(seed, n=(13, 16, 20, 24)[seed % 4], m=(6, 10)[seed % 2], size=400)
        for name in NAMES:
            for label, (sym, extra) in (("previous_", (frozenset(), 0)), ("", current)):
                ca.SYMMETRIC, ca.EXTRA_WORK = sym, extra
                try:
                    t0 = _cpu()
                    wc = c.worst_case(eps, name)
                    out[name][label + "cpu"].append(_cpu() - t0)
                finally:
                    ca.SYMMETRIC, ca.EXTRA_WORK = current
                out[name][label + "ratio"].append(wc.upper / wc.lower if wc.lower > 1e-12 else 1.0)
    every_prev = [t for v in out.values() for t in v["previous_cpu"]]
    every_now = [t for v in out.values() for t in v["cpu"]]
    return {"by_divergence": {name: {key: _summary(vals) for key, vals in v.items()} for name, v in out.items()},
            "cpu_seconds_per_claim": {"previous": _summary(every_prev), "now": _summary(every_now),
                                      "ratio_of_medians": statistics.median(every_now) / statistics.median(every_prev),
                                      "ratio_of_totals": sum(every_now) / sum(every_prev)}}


def main(quick: bool = False, with_compare: bool = False) -> dict[str, object]:
    n = 4 if quick else 12
    if with_compare:
        return {"compare": compare(range(n))}
    return {"forced_bracket_vs_exact": forced(range(n)), "large": large(range(n))}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args()
    print(json.dumps(main(args.quick, args.compare), indent=2))
