"""Speed of the certified Gaussian accounting core (issue 26): CPU-time ratios measured in one run.

Run:  python benchmarks/bench_accounting.py [--repeat R] [--json]

1. PLD core: certified δ(ε) brackets (``distpriv.accounting.pld.pld_bracket``) of 5-D
   Gaussian pairs with unequal covariances (rtol 1e-2, ε ∈ {0.2, 1, 5}, both decision and
   value mode), with today's sums against the former ``x @ y`` products, which numpy hands to
   OpenBLAS's threaded ddot above ~2·10⁴ entries (its spinning threads cost CPU per call on a
   busy machine; the ratio depends on the load and on the number of cores).
2. The memo of ``profile_from_reduction``: the same profiles asked twice (a calibration
   search and both orders of Ψ do this), first call vs repeated call.
3. ``exact.noise_only()``: a classic-rule calibration at ε >= 1 inside it (the papers'
   noise, no profile for the unpublished δ) against the same calibration outside.

4. The Fourier-inversion core (``distpriv.accounting.fourier.fourier_bracket``, what
   ``profile_from_reduction`` now uses for unequal covariances) against the FFT grid on the
   cases of part 1 (rtol 1e-2): CPU ratio, the widest relative Fourier bracket, and that every
   pair of brackets intersects.

Times are CPU seconds (``time.process_time``), the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import distpriv as dp  # noqa: E402
from distpriv.accounting import gaussian as gauss  # noqa: E402
from distpriv.accounting import pld  # noqa: E402
from distpriv.mechanisms import exact  # noqa: E402


def cpu_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        value = fn()
        best = min(best, time.process_time() - t0)
    return best, value


def pairs(m: int = 5, count: int = 4) -> list[gauss.Reduction]:
    out = []
    for seed in range(count):
        rng = np.random.default_rng(seed)
        a = rng.normal(size=(m, m))
        cov = a @ a.T / m + 0.5 * np.eye(m)
        c = rng.normal(size=(m, m))
        noise = 4.0 * np.eye(m)
        out.append(gauss.reduce_pair(rng.normal(size=m), cov + noise, rng.normal(size=m),
                                     cov + 0.4 * c @ c.T / m + noise))
    return out


def core_cases() -> list[tuple[list[gauss.GaussCoord], float, float | None]]:
    cases = []
    for red in pairs():
        coords = [gauss.GaussCoord(float(m), float(a), float(b)) for m, a, b in zip(red.m, red.alpha, red.beta, strict=True)]
        for eps in (0.2, 1.0, 5.0):
            cases += [(coords, eps, None), (coords, eps, 1e-3)]
    return cases


def bench_core(repeat: int) -> dict[str, Any]:
    cases = core_cases()

    def run() -> list[pld.Bracket]:
        return [pld.pld_bracket(c, e, rtol=1e-2, target=t) for c, e, t in cases]

    t_new, new = cpu_time(run, repeat)
    saved = pld._dot
    pld._dot = lambda x, y: float(x @ y)  # the former products
    try:
        t_old, old = cpu_time(run, repeat)
    finally:
        pld._dot = saved
    worst = max(abs(a.upper - b.upper) / max(b.upper, 1e-300) for a, b in zip(new, old, strict=True))
    return {"brackets": len(cases), "new_cpu_seconds": t_new, "old_cpu_seconds": t_old, "ratio_old_over_new": t_old / t_new,
            "max_relative_difference_of_upper_ends": worst}


def bench_fourier(repeat: int) -> dict[str, Any]:
    from distpriv.accounting import fourier

    cases = core_cases()

    def run_fourier() -> list[fourier.FourierBracket | None]:
        return [fourier.fourier_bracket([c.quad for c in cs], e, rtol=1e-2) for cs, e, _ in cases]

    def run_fft() -> list[pld.Bracket]:
        return [pld.pld_bracket(cs, e, rtol=1e-2) for cs, e, _ in cases]

    t_f, fb = cpu_time(run_fourier, repeat)
    t_p, pb = cpu_time(run_fft, repeat)
    assert all(f is not None for f in fb)
    ok = all(f is not None and f.lower <= p.upper and p.lower <= f.upper for f, p in zip(fb, pb, strict=True))
    width = max((f.upper - f.lower) / max(f.upper, 1e-300) for f in fb if f is not None)
    fft_width = max((p.upper - p.lower) / max(p.upper, 1e-300) for p in pb)
    return {"brackets": len(cases), "fourier_cpu_seconds": t_f, "fft_cpu_seconds": t_p, "ratio_fft_over_fourier": t_p / t_f,
            "fourier_max_relative_width": width, "fft_max_relative_width": fft_width, "all_intersect": ok}


def bench_memo() -> dict[str, Any]:
    reds = pairs()

    def run() -> list[float]:
        return [gauss.profile_from_reduction(r, eps, reverse=rev, rtol=1e-2).delta_upper
                for r in reds for eps in (0.2, 1.0, 5.0) for rev in (False, True)]

    gauss._PROFILES.clear()
    t_first, a = cpu_time(run, 1)
    t_again, b = cpu_time(run, 1)
    assert a == b
    return {"profiles": len(a), "first_cpu_seconds": t_first, "repeat_cpu_seconds": t_again,
            "ratio_first_over_repeat": t_first / max(t_again, 1e-9)}


def bench_noise_only(repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(7)
    m = 5
    a = rng.normal(size=(m, m))
    cov = a @ a.T / m + 0.5 * np.eye(m)
    c = rng.normal(size=(m, m))
    model = dp.GaussianModel(means={0: 10 + rng.normal(size=m), 1: 10 + rng.normal(size=m)},
                             covariances={0: cov, 1: cov + 0.4 * c @ c.T / m})

    def calibrate() -> Any:
        gauss._PROFILES.clear()
        return dp.calibrate("eigm", model, [(0, 1)], epsilon=5.0, delta=1e-3, calibration="classic")

    def inside() -> Any:
        with exact.noise_only():
            return calibrate()

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_out, m_out = cpu_time(calibrate, repeat)
        t_in, m_in = cpu_time(inside, repeat)
    assert np.array_equal(m_out.noise_covariance, m_in.noise_covariance)
    return {"claim_cpu_seconds": t_out, "noise_only_cpu_seconds": t_in, "ratio": t_out / max(t_in, 1e-9)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a text summary")
    args = ap.parse_args(argv)
    res = {"core": bench_core(args.repeat), "memo": bench_memo(), "noise_only": bench_noise_only(args.repeat),
           "fourier": bench_fourier(args.repeat)}
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    c, m, n = res["core"], res["memo"], res["noise_only"]
    print(f"PLD core, {c['brackets']} brackets of 5-D Gaussian pairs (CPU): {c['new_cpu_seconds']:.3f} s now, "
          f"{c['old_cpu_seconds']:.3f} s with the former products, ratio {c['ratio_old_over_new']:.2f} "
          f"(upper ends differ by <= {c['max_relative_difference_of_upper_ends']:.1e} relative)")
    print(f"memo, {m['profiles']} profiles: first {m['first_cpu_seconds']:.3f} s, repeated {m['repeat_cpu_seconds']:.4f} s, "
          f"ratio {m['ratio_first_over_repeat']:.0f}")
    print(f"classic rule at ε = 5 (EigM, 5-D): with the claim {n['claim_cpu_seconds']:.3f} s, inside noise_only() "
          f"{n['noise_only_cpu_seconds']:.3f} s, ratio {n['ratio']:.1f} (same noise)")
    f = res["fourier"]
    print(f"Fourier core vs FFT grid, {f['brackets']} brackets (CPU): {f['fourier_cpu_seconds']:.3f} s vs "
          f"{f['fft_cpu_seconds']:.3f} s, ratio {f['ratio_fft_over_fourier']:.1f}; widest bracket "
          f"{f['fourier_max_relative_width']:.1e} vs {f['fft_max_relative_width']:.1e} of δ; all intersect: {f['all_intersect']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
