"""Error of one release meeting both (ε, δ)-distribution privacy and (E, D)-record DP, vs the two made separately.

Usage::

    python benchmarks/bench_record_dp.py [--samples 1000] [--stats mean:age count:sex=Female hist:education] \
        [--record-epsilon 1 0.1] [--record-delta 1e-6] [--json]

Adult: the first 2,000 rows are the private table, the other 43,222 rows the public population; the
secret is the share of ``income=>50K`` with Ψ = {(0.2, 0.3)} at (ε, δ) = (1, 1e-3); records are protected
at (E, D) = (1, 1e-6) (and every other E given) with the declared bounds ``age=17:90`` (and
``hours_per_week=1:99``). Three releases per E (issue 22, item 2 goal):

* **DistP**: ``protect(...)`` without record DP — the library's own choice (any mechanism), made once;
* **DP**: the least-trace Gaussian noise meeting (E, D) for one record replaced
  (:func:`distpriv.release.record.least_record_noise`, the record-only program) — the best separate DP release
  of the same statistics in the family the library uses for record DP;
* **both**: ``protect(..., record_epsilon=E, record_delta=D, bounds=...)``.

Error = E‖Z‖₂ on the standardised statistics (the unit-free error the selection minimises; the same public
diagonal for the three). Printed per E: each error, ``ratio`` = both / max(DistP, DP) (issue goal <= 1.2), the
mechanism chosen, and the CPU seconds of each release (progress lines go to stderr). The machine may be shared:
compare CPU seconds within one run only. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

try:
    import distpriv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from distpriv.datasets.adult import load_adult  # noqa: E402
from distpriv.release import protect  # noqa: E402

BOUNDS = {"age": (17.0, 90.0), "hours_per_week": (1.0, 99.0)}


def progress(text: str, t0: float) -> None:
    print(f"[{time.process_time() - t0:7.1f} s CPU] {text}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--stats", nargs="+", default=["mean:age", "count:sex=Female", "hist:education"])
    parser.add_argument("--pairs", default="0.2,0.3")
    parser.add_argument("--record-epsilon", type=float, nargs="+", default=[1.0, 0.1])
    parser.add_argument("--record-delta", type=float, default=1e-6)
    parser.add_argument("--json", action="store_true", help="print the full results as JSON after the table")
    args = parser.parse_args(argv)
    from distpriv.calibration import gaussian_max_distance
    from distpriv.mechanisms.base import Mechanism
    from distpriv.noise import NoiseLaw
    from distpriv.release.record import least_record_noise, max_mahalanobis, record_delta
    from distpriv.release.selection import expected_l2

    t0 = time.process_time()
    df = load_adult()
    data, pop = df.iloc[:2000], df.iloc[2000:]
    a, b = (float(v) for v in args.pairs.split(","))
    common = dict(stats=list(args.stats), protect="income=>50K", pairs=[(a, b)], epsilon=1.0, delta=1e-3,
                  population=pop, samples=args.samples, seed=0)
    progress(f"data loaded; DistP release of {args.stats}", t0)
    t = time.process_time()
    distp = protect(data, **common)
    cpu_distp = time.process_time() - t
    err_distp = float(distp.chosen.expected_l2_error)
    progress(f"DistP: {distp.chosen.label}, E‖Z‖ = {err_distp:.4g} ({cpu_distp:.1f} s CPU)", t0)
    used = {s.split(":", 1)[1].split("@")[0] for s in args.stats if s.split(":", 1)[0] in ("mean", "sum")}
    bounds = {c: v for c, v in BOUNDS.items() if c in used} or {"age": BOUNDS["age"]}
    rows = []
    for re_ in args.record_epsilon:
        rd = args.record_delta
        progress(f"both guarantees at record (E, D) = ({re_:g}, {rd:g})", t0)
        t = time.process_time()
        both = protect(data, **common, record_epsilon=re_, record_delta=rd, bounds=bounds)
        cpu_both = time.process_time() - t
        sens = both.prepared.record_sensitivity
        mu_star = gaussian_max_distance(re_, rd)
        m = both.prepared.dim  # published coordinates (a histogram has one per level)
        t = time.process_time()
        dp_cov = least_record_noise(sens, mu_star)
        cpu_dp = time.process_time() - t
        dp_mech = Mechanism("dp-gauss", "DP (G), least trace", m, NoiseLaw.gaussian(dp_cov), both.guarantee)
        err_dp = expected_l2(dp_mech)
        err_both = float(both.chosen.expected_l2_error)
        rec = both.to_json()["record_guarantee"]
        row = {
            "record_epsilon": re_, "record_delta": rd, "dim": m,
            "distp": {"mechanism": distp.chosen.label, "expected_l2_error": err_distp, "cpu_s": cpu_distp},
            "dp": {"mechanism": "least-trace Gaussian (record constraints only)", "expected_l2_error": err_dp,
                   "cpu_s": cpu_dp, "record_delta": record_delta(max_mahalanobis(dp_cov, sens), re_)},
            "both": {"mechanism": both.chosen.label, "expected_l2_error": err_both, "cpu_s": cpu_both,
                     "combination": rec["combination"], "candidates_trace": rec["candidates_trace"],
                     "proven_delta": rec["proven_delta"],
                     "guarantee": {k: both.to_json()["guarantee"][k] for k in ("epsilon", "delta")}},
            "ratio": err_both / max(err_distp, err_dp),
            "noise_std_both": [float(v) for v in both.noise.noise_std],
            "noise_std_dp": [float(v) for v in np.sqrt(np.diag(dp_cov)) * both.prepared.standardization.scale],
        }
        rows.append(row)
        progress(f"E = {re_:g}: both {err_both:.4g} ({both.chosen.label}, {cpu_both:.1f} s CPU), DP alone "
                 f"{err_dp:.4g}, ratio {row['ratio']:.3f}", t0)
    print(f"statistics: {' '.join(args.stats)}; Ψ = {{({a:g}, {b:g})}} at (1, 1e-3); samples {args.samples}; "
          f"bounds {bounds}")
    print("| record E | DistP alone | DP alone | both | ratio | chosen (both) | CPU s (DistP / both) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['record_epsilon']:g} | {r['distp']['expected_l2_error']:.4g} ({r['distp']['mechanism']}) | "
              f"{r['dp']['expected_l2_error']:.4g} | {r['both']['expected_l2_error']:.4g} | {r['ratio']:.3f} | "
              f"{r['both']['mechanism']} | {r['distp']['cpu_s']:.1f} / {r['both']['cpu_s']:.1f} |")
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
