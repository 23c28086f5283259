"""Error of one release meeting both (ε, δ)-distribution privacy and (E, D)-record DP, vs the two made separately.

Usage::

    python benchmarks/bench_record_dp.py [--samples 1000] [--stats mean:age count:sex=Female hist:education] \
        [--record-epsilon 1] [--record-delta 1e-6]

Adult: the first 2,000 rows are the private table, the other 43,222 rows the public population; the
secret is the share of ``income=>50K`` with Ψ = {(0.2, 0.3)} at (ε, δ) = (1, 1e-3); records are protected
at (E, D) = (1, 1e-6) with the declared bounds ``age=17:90``. Three releases (issue 22, item 2 goal):

* **DistP**: ``protect(...)`` without record DP — the library's own choice (any mechanism);
* **DP**: the least-E‖Z‖² Gaussian noise meeting (E, D) for one record replaced (the semidefinite program
  of :mod:`distpriv.release.record` without the distribution-privacy constraints) — the best separate DP
  release of the same statistics;
* **both**: ``protect(..., record_epsilon=1, record_delta=1e-6, bounds=...)``.

Error = E‖Z‖₂ on the standardised statistics (the unit-free error the selection minimises; the same public
diagonal D for the three). Printed: each error, ``ratio`` = both / max(DistP, DP) (issue goal <= 1.2), and
``ratio_gaussian`` = both / the best *Gaussian* distribution-private candidate (same noise family). Also the
per-statistic noise standard deviations in the statistics' units. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

try:
    import distpriv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from distpriv.datasets.adult import load_adult  # noqa: E402
from distpriv.release import protect  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--stats", nargs="+", default=["mean:age", "count:sex=Female", "hist:education"])
    parser.add_argument("--pairs", default="0.2,0.3")
    parser.add_argument("--record-epsilon", type=float, default=1.0)
    parser.add_argument("--record-delta", type=float, default=1e-6)
    args = parser.parse_args(argv)
    from distpriv.mechanisms.base import Mechanism
    from distpriv.release.record import _pad, _solve, max_mahalanobis, record_delta
    from distpriv.release.selection import expected_l2
    from distpriv.statspec import parse_request

    stats = []
    skipped = []
    for s in args.stats:
        try:
            parse_request(s)
            stats.append(s)
        except Exception as exc:  # noqa: BLE001 - a statistic this checkout does not have
            skipped.append(f"{s}: {exc}")
    df = load_adult()
    data, pop = df.iloc[:2000], df.iloc[2000:]
    a, b = (float(v) for v in args.pairs.split(","))
    common = dict(stats=stats, protect="income=>50K", pairs=[(a, b)], epsilon=1.0, delta=1e-3, population=pop,
                  samples=args.samples, seed=0)
    distp = protect(data, **common)
    re_, rd = args.record_epsilon, args.record_delta
    both = protect(data, **common, record_epsilon=re_, record_delta=rd, bounds={"age": (17, 90)})
    sens = both.prepared.record_sensitivity
    from distpriv.calibration import gaussian_max_distance

    mu_star = gaussian_max_distance(re_, rd)
    m = both.prepared.dim  # published coordinates (a histogram has one per level)
    dp_cov = _pad(_solve(np.zeros((m, m)), sens.vertices(), mu_star, [], 0.0), sens, mu_star)
    dp_mech = Mechanism("dp-gauss", "DP (G), least trace", m, "gaussian", both.guarantee, covariance=dp_cov)
    err_dp = expected_l2(dp_mech)
    err_distp = float(distp.chosen.expected_l2_error)
    err_both = float(both.chosen.expected_l2_error)
    gauss = [c for c in distp.selection.candidates if c.kept and c.base is not None and c.base.kind == "gaussian"]
    err_gauss = min((float(c.expected_l2_error) for c in gauss), default=float("nan"))
    scale = both.prepared.standardization.scale
    out = {
        "statistics": stats, "skipped": skipped, "pairs": [a, b],
        "distp": {"mechanism": distp.chosen.label, "expected_l2_error": err_distp,
                  "noise_std": [float(v) for v in distp.noise.noise_std]},
        "best_gaussian_distp": err_gauss,
        "dp": {"mechanism": "least-trace Gaussian (record LMIs only)", "expected_l2_error": err_dp,
               "noise_std": [float(v) for v in np.sqrt(np.diag(dp_cov)) * scale],
               "record_delta": record_delta(max_mahalanobis(dp_cov, sens), re_)},
        "both": {"mechanism": both.chosen.label, "expected_l2_error": err_both,
                 "noise_std": [float(v) for v in both.noise.noise_std],
                 "record_guarantee": {k: both.to_json()["record_guarantee"][k]
                                      for k in ("epsilon", "delta", "worst_case_mahalanobis", "proven_delta",
                                                "combination", "candidates_trace")},
                 "guarantee": {k: both.to_json()["guarantee"][k] for k in ("epsilon", "delta")}},
        "ratio": err_both / max(err_distp, err_dp),
        "ratio_gaussian": err_both / max(err_gauss, err_dp),
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
