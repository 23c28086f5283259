"""Benchmark (issue 25): APMQM's Theorem 3 ε against the exact ε of the same release.

Cases: the school example (Example 1; counts over n = 200 students of height > 66 and of
height > 66 & SAT > 1300, ε ∈ {0.5, 1, 2}) and random parameter networks
(:func:`distpriv.attribute.random_network`, 5 nodes, supports of 2–3 values; the sensitive attribute
x0 with every pair of its values; a count over n = 100 records of a predicate on one or two other
columns whose success probability depends on their parameters; ε ∈ {0.5, 1, 2}). For each the
release F(X) + Lap(b) of Algorithm 2 is built once; Theorem 3 claims ε, the exact ε is
:func:`distpriv.attribute.apmqm_exact.exact_epsilon`. Reports the ratio Theorem 3 / exact (what the
exact claim removes), and checks the exact value never exceeds Theorem 3's; for the school cases with
noise also Algorithm 2's scale over the least scale with the same exact ε
(:func:`distpriv.attribute.apmqm_exact.least_scale`).

Run: ``PYTHONPATH=src python benchmarks/bench_apmqm_exact.py [--networks N]``.
"""

from __future__ import annotations

import argparse
import json
import resource

import numpy as np
from scipy import stats

from distpriv.attribute import apmqm_exact as ae
from distpriv.attribute import examples as ex
from distpriv.attribute.bayesnet import random_network
from distpriv.attribute.markov_quilt import ColumnSensitivity, apmqm
from distpriv.attribute.pufferfish import distributional_attribute_privacy
from distpriv.errors import DistPrivError


def school_cases() -> list[dict]:
    nets, fw, n = ex.school_networks(), ex.school_framework(), 200
    queries = {
        ("height",): lambda phi: stats.norm.sf(66, phi["height"], 3.0),
        ("height", "sat"): lambda phi: stats.norm.sf(66, phi["height"], 3.0) * stats.norm.sf(1300, phi["sat"], 150.0),
    }
    rows = []
    for eps in (0.5, 1.0, 2.0):
        for cols, succ in queries.items():
            mech = apmqm(fw, nets, cols, ColumnSensitivity.count(n, cols), epsilon=eps)
            r = ae.exact_epsilon(mech, fw, nets, cols, ae.binomial_count_law(n, succ))
            law = ae.binomial_count_law(n, succ)
            least = ae.least_scale(mech, fw, nets, cols, law) if mech.scale > 0 else 0.0
            rows.append({"case": f"school {'&'.join(cols)}", "epsilon": eps, "scale": mech.scale,
                         "exact": r.epsilon, "theorem3": r.theorem3, "least_scale": least})
    return rows


def random_cases(networks: int) -> list[dict]:
    rng = np.random.default_rng(7)
    rows = []
    made = 0
    while made < networks:
        seed = int(rng.integers(1 << 31))
        nets = [random_network(5, np.random.default_rng(seed + t), max_support=3, edge_prob=0.5, name=f"t{t}")
                for t in range(2)]
        try:
            nets[1] = type(nets[0])(nets[0].supports, nets[0].parents, nets[1].tables, name="t1")
        except DistPrivError:
            continue
        vals = nets[0].supports["x0"]
        pairs = [(("x0", (a,)), ("x0", (b,))) for i, a in enumerate(vals) for b in vals[i + 1:]]
        fw = distributional_attribute_privacy(nets[0].nodes, pairs, thetas=("t0", "t1"))
        cols = tuple(sorted(rng.choice(["x1", "x2", "x3", "x4"], size=int(rng.integers(1, 3)), replace=False)))
        slope = rng.uniform(0.1, 0.3, size=len(cols))

        def succ(phi, cols=cols, slope=slope):
            return float(np.prod([0.2 + s * float(phi[c]) for c, s in zip(cols, slope, strict=True)]))

        made += 1
        for eps in (0.5, 1.0, 2.0):
            mech = apmqm(fw, nets, cols, ColumnSensitivity.count(100, cols), epsilon=eps)
            r = ae.exact_epsilon(mech, fw, nets, cols, ae.binomial_count_law(100, succ))
            rows.append({"case": f"random {seed} {'&'.join(cols)}", "epsilon": eps, "scale": mech.scale,
                         "exact": r.epsilon, "theorem3": r.theorem3})
    return rows


def main(networks: int = 20) -> dict:
    cpu0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    rows = school_cases() + random_cases(networks)
    pos = [r for r in rows if r["exact"] > 0]
    ratio = np.array([r["theorem3"] / r["exact"] for r in pos])
    school = np.array([r["theorem3"] / r["exact"] for r in pos if r["case"].startswith("school")])
    return {
        "cases": len(rows), "cases_with_positive_exact": len(pos),
        "theorem3_over_exact": {"median": float(np.median(ratio)), "min": float(ratio.min()), "max": float(ratio.max())},
        "school_theorem3_over_exact": {"median": float(np.median(school)), "min": float(school.min()),
                                       "max": float(school.max())},
        "school_scale_over_least_scale": [r["scale"] / r["least_scale"] for r in rows
                                          if r.get("least_scale", 0) > 0],
        "exact_never_above_theorem3": bool(all(r["exact"] <= r["theorem3"] * (1 + 1e-12) for r in rows)),
        "cpu_seconds": resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0,
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--networks", type=int, default=20)
    print(json.dumps(main(ap.parse_args().networks), indent=2))
