"""Benchmark: the goals of issue 15 for ``dp.audit`` (numbers, not timings asserted anywhere).

1. Tight mechanism: EigM calibrated exactly at (ε, δ) = (1, 1e-3) on N(0, 1) vs N(1, 1),
   200,000 trials per secret: ``epsilon_lower`` at 95% (goal >= 0.6) next to the old
   accuracy bound on releases of the same size (ceiling ln((Φ(D/2) − δ)/(1 − Φ(D/2))) ≈ 0.31).
2. Overclaiming mechanism: calibrated on variance 4, audited against the true variance
   0.04 (true ε at δ = 1e-3 is 1.72): refuted.
3. Honest mechanisms: 200 audits of the tight claim at a fixed seed; refutations against
   the nominal rate 1 − confidence by an exact one-sided binomial test (confidence 0.95 and 0.5).
4. Trials per secret needed to confirm half the claimed ε (median over seeds of
   ``epsilon_lower`` >= ε/2) for ε ∈ {0.5, 1, 2}, δ = 1e-3, against the accuracy bound's.
5. Cost: seconds of one 200,000-trial audit with the exact scorer and with the classifier
   scorer (same releases' size, same process), as a ratio.

Run: ``PYTHONPATH=src python benchmarks/bench_audit.py`` (``--quick`` for smaller sizes).
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np
from scipy import stats

import distpriv as dp
from distpriv import auditing as au
from distpriv.calibration import gaussian_max_distance

DELTA = 1e-3


def unit_model(var: float = 1.0) -> dp.GaussianModel:
    return dp.GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[var]], 1: [[var]]})


def accuracy_bound(correct: int, total: int, delta: float, confidence: float = 0.95) -> float:
    """The old audit's bound: ε >= ln((a_lo − δ)/(1 − a_lo)), a_lo the one-sided CP lower bound on accuracy."""
    a = float(au.clopper_pearson_lower(correct, total, confidence))
    if a >= 1.0:
        return math.inf
    return max(0.0, math.log((a - delta) / (1.0 - a))) if a > delta else 0.0


def accuracy_audit(mech: dp.Mechanism, model: dp.GaussianModel, trials: int, rng: np.random.Generator) -> float:
    """Bayes-optimal (LR threshold 0) balanced guesses on 2·trials releases -> accuracy bound."""
    d = np.asarray(mech.noise_covariance)[0, 0] + model.covariance(0)[0, 0]
    correct = 0
    for lab in (0, 1):
        y = mech.release_batch(model.sample(lab, trials, rng), rng=rng)[:, 0]
        guess1 = y > 0.5  # the LR of N(0, v) vs N(1, v) is monotone with its zero at 1/2
        correct += int(np.sum(guess1 if lab == 1 else ~guess1))
    assert d > 0
    return accuracy_bound(correct, 2 * trials, DELTA)


def tight_goal(trials: int, seeds: int) -> dict:
    model = unit_model()
    mech = dp.calibrate("eigm", model, [(0, 1)], epsilon=1.0, delta=DELTA)
    d = gaussian_max_distance(1.0, DELTA)
    acc = stats.norm.cdf(d / 2)
    vals, accs = [], []
    first = None
    for s in range(seeds):
        r = dp.audit(mech, model, (0, 1), trials=trials, confidence=0.95, rng=np.random.default_rng(s))
        first = first or r
        vals.append(r.epsilon_lower)
        accs.append(accuracy_audit(mech, model, trials, np.random.default_rng(1000 + s)))
    assert first is not None
    return {
        "trials_per_secret": trials,
        "epsilon_lower_seed0": vals[0],
        "epsilon_lower_over_seeds": {"min": min(vals), "median": float(np.median(vals)), "max": max(vals), "seeds": seeds},
        "exact_epsilon": first.exact_epsilon,
        "best_test_seed0": first.best.to_dict(),
        "accuracy_bound_over_seeds": {"min": min(accs), "median": float(np.median(accs)), "max": max(accs)},
        "accuracy_bound_ceiling": math.log((acc - DELTA) / (1 - acc)),
        "goal_met": vals[0] >= 0.6,
    }


def overclaim_goal(trials: int) -> dict:
    mech = dp.calibrate("eigm", unit_model(4.0), [(0, 1)], epsilon=1.0, delta=DELTA)
    r = dp.audit(mech, unit_model(0.04), (0, 1), trials=trials, rng=np.random.default_rng(0))
    return {"trials_per_secret": trials, "epsilon_lower": r.epsilon_lower, "exact_epsilon": r.exact_epsilon,
            "claimed_epsilon": r.claimed.epsilon, "refuted": r.refuted}


def honest_rate(audits: int, trials: int, confidence: float) -> dict:
    model = unit_model()
    mech = dp.calibrate("eigm", model, [(0, 1)], epsilon=1.0, delta=DELTA)
    g = np.random.default_rng(2024)
    k = sum(dp.audit(mech, model, (0, 1), trials=trials, confidence=confidence, rng=g).refuted for _ in range(audits))
    nominal = 1.0 - confidence
    return {"audits": audits, "trials_per_secret": trials, "confidence": confidence, "refuted": int(k),
            "rate": k / audits, "nominal": nominal,
            "binomial_p_value_rate_above_nominal": float(stats.binomtest(k, audits, nominal, alternative="greater").pvalue)}


def _median_bound(mech: dp.Mechanism, model: dp.GaussianModel, trials: int, seeds: int) -> float:
    return float(np.median([dp.audit(mech, model, (0, 1), trials=trials, rng=np.random.default_rng(s)).epsilon_lower
                            for s in range(seeds)]))


def trials_needed(eps: float, seeds: int, t_max: int) -> dict:
    """Smallest trials (on a √2 grid) with median epsilon_lower >= ε/2, and the accuracy bound's (expected counts)."""
    model = unit_model()
    mech = dp.calibrate("eigm", model, [(0, 1)], epsilon=eps, delta=DELTA)
    target = eps / 2
    grid = [int(round(1000 * 2 ** (i / 2))) for i in range(0, 40)]
    grid = [t for t in grid if t <= t_max]
    lo, hi = 0, len(grid) - 1
    if _median_bound(mech, model, grid[hi], seeds) < target:
        ours: int | None = None
    else:
        while lo < hi:  # the median bound grows with the trials
            mid = (lo + hi) // 2
            if _median_bound(mech, model, grid[mid], seeds) >= target:
                hi = mid
            else:
                lo = mid + 1
        ours = grid[lo]
    d = gaussian_max_distance(eps, DELTA)
    acc = stats.norm.cdf(d / 2)
    ceiling = math.log((acc - DELTA) / (1 - acc))
    if ceiling < target:
        acc_needed: int | None = None
    else:  # expected counts: correct = acc · 2T
        t = 100
        while accuracy_bound(int(acc * 2 * t), 2 * t, DELTA) < target:
            t = int(t * 1.1) + 1
        acc_needed = t
    return {"epsilon": eps, "target": target, "trials_audit": ours,
            "median_at_trials": None if ours is None else _median_bound(mech, model, ours, seeds),
            "trials_accuracy_bound": acc_needed, "accuracy_bound_ceiling": ceiling, "seeds": seeds}


def cost(trials: int) -> dict:
    """One audit, exact Gaussian LR vs the classifier (a sampler-only model hides the law), same sizes."""
    model = unit_model()
    mech = dp.calibrate("eigm", model, [(0, 1)], epsilon=1.0, delta=DELTA)

    class Hidden:
        labels = (0, 1)

        def sample(self, label, size, rng):
            return model.sample(label, size, rng)

    t0 = time.perf_counter()
    r_exact = dp.audit(mech, model, (0, 1), trials=trials, rng=np.random.default_rng(0))
    t1 = time.perf_counter()
    r_clf = dp.audit(mech, Hidden(), (0, 1), trials=trials, rng=np.random.default_rng(0))
    t2 = time.perf_counter()
    return {"trials_per_secret": trials, "exact_seconds": t1 - t0, "classifier_seconds": t2 - t1,
            "ratio_classifier_over_exact": (t2 - t1) / (t1 - t0),
            "epsilon_lower_exact": r_exact.epsilon_lower, "epsilon_lower_classifier": r_clf.epsilon_lower}


def main(quick: bool = False) -> dict:
    big = 20_000 if quick else 200_000
    out = {
        "tight": tight_goal(big, 3 if quick else 5),
        "overclaim": overclaim_goal(big),
        "honest": [honest_rate(50 if quick else 200, 2_000 if quick else 20_000, c) for c in (0.95, 0.5)],
        "trials_to_confirm_half": [trials_needed(e, 5 if quick else 9, 64_000 if quick else 1_024_000)
                                   for e in (0.5, 1.0, 2.0)],
        "cost": cost(big),
    }
    return out


def _fmt(t: int | None) -> str:
    return "never" if t is None else f"{t:,}"


if __name__ == "__main__":
    res = main(quick="--quick" in sys.argv)
    print(json.dumps(res, indent=2, default=float))
    print("\n| ε | target ε/2 | trials (dp.audit, median of seeds) | trials (accuracy bound) | accuracy-bound ceiling |")
    print("|---|---|---|---|---|")
    for row in res["trials_to_confirm_half"]:
        print(f"| {row['epsilon']:g} | {row['target']:g} | {_fmt(row['trials_audit'])} | "
              f"{_fmt(row['trials_accuracy_bound'])} | {row['accuracy_bound_ceiling']:.3f} |")
