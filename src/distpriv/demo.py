"""``distpriv demo``: the main job — worked examples of the papers, then the Adult workflow.

Part 1 walks through Chen & Ohrimenko's Section 5.3 example (f_θ1 = N((100, 101), Σ),
f_θ2 = N((99, 102), Σ), Σ = [[22, −6], [−6, 13]], ε = 1, δ = 1e-3) for every
mechanism under both calibrations, and the Figure 1 distance example
(W∞ = 97, (1, 0.1)-closeness).
Part 2 (see :mod:`distpriv.experiments.workflow`) protects the share of high earners in UCI Adult.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import distances
from .calibration import CALIBRATIONS, classic_warnings_suppressed
from .guarantees import Calibration
from .mechanisms import LABELS, calibrate
from .models import GaussianModel

EXAMPLE_MECHANISMS = ("expm-laplace", "dirm-laplace", "expm-gauss", "dirm-gauss", "eigm", "daum", "wasserstein")


def section_5_3_example(epsilon: float = 1.0, delta: float = 1e-3) -> dict[str, Any]:
    """Calibrate every applicable mechanism on the Section 5.3 example; noise per eigen-direction of Σ."""
    cov = np.array([[22.0, -6.0], [-6.0, 13.0]])
    model = GaussianModel(means={"θ1": [100.0, 101.0], "θ2": [99.0, 102.0]}, covariances={"θ1": cov, "θ2": cov})
    v1 = np.array([1.0, 2.0]) / np.sqrt(5.0)
    v2 = np.array([2.0, -1.0]) / np.sqrt(5.0)
    rows = []
    for cal in CALIBRATIONS:
        for name in EXAMPLE_MECHANISMS:
            if cal == Calibration.CLASSIC and name in ("expm-laplace", "dirm-laplace", "wasserstein"):
                continue
            with classic_warnings_suppressed():
                mech = calibrate(name, model, [("θ1", "θ2")], epsilon=epsilon, delta=delta,
                                 calibration=cal if name not in ("expm-laplace", "dirm-laplace", "wasserstein") else Calibration.EXACT)
            cz = mech.noise_covariance
            rows.append({
                "mechanism": LABELS[name],
                "calibration": mech.guarantee.calibration,
                "noise": mech.kind,
                "var_v1": float(v1 @ cz @ v1),
                "var_v2": float(v2 @ cz @ v2),
                "expected_l2_error": mech.expected_l2_error,
                "epsilon": mech.guarantee.epsilon,
                "delta": mech.guarantee.delta,
                "theorem": mech.guarantee.theorem,
                "assumptions": list(mech.guarantee.assumptions),
            })
    return {"epsilon": epsilon, "delta": delta, "eigenvalues": [10.0, 25.0], "rows": rows}


def figure_1_example() -> dict[str, float]:
    """Figure 1: μ = (0.6, 0.2, 0, 0.2), ν = (0.4, 0.3, 0.2, 0.1) on {1, 2, 3, 100}."""
    pts = np.array([1.0, 2.0, 3.0, 100.0])
    mu = np.array([0.6, 0.2, 0.0, 0.2])
    nu = np.array([0.4, 0.3, 0.2, 0.1])
    return {
        "w_infinity": distances.w_infinity(pts, mu, pts, nu),
        "closeness_radius_delta_0.1": distances.closeness_radius(pts, mu, pts, nu, 0.1),
        "wasserstein_1": distances.wasserstein(pts, mu, pts, nu, order=1),
    }


def print_examples(ex: dict[str, Any], fig1: dict[str, float]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=None if sys.stdout.isatty() else 110)
    con.rule("[bold]Chen & Ohrimenko Sec. 5.3 worked example (ε = 1, δ = 1e-3)")
    con.print("f_θ1 = N((100, 101), Σ), f_θ2 = N((99, 102), Σ), Σ = [[22, −6], [−6, 13]]: "
              "eigenvalues 10 along v1 = (1, 2)/√5 and 25 along v2 = (2, −1)/√5.")
    t = Table(show_lines=False)
    for col in ("mechanism", "calibration", "Var v1", "Var v2", "E‖Z‖₂", "(ε, δ)", "theorem"):
        t.add_column(col, justify="right" if col.startswith(("Var", "E")) else "left", no_wrap=True)
    for r in ex["rows"]:
        thm = r["theorem"].replace("Chen & Ohrimenko ", "").split(" (")[0].split(" with ")[0].split(" / ")[0]
        t.add_row(r["mechanism"], r["calibration"], f"{max(r['var_v1'], 0.0):.2f}", f"{max(r['var_v2'], 0.0):.2f}",
                  f"{r['expected_l2_error']:.3f}", f"({r['epsilon']:g}, {r['delta']:g})", thm)
    con.print(t)
    con.print("Paper: ExpM (G) adds variance 28.52 per component; EigM adds 18.52 along v1 and 3.52 along v2. "
              "Exact calibration (analytic Gaussian) needs less.")
    con.rule("[bold]Figure 1: ∞-Wasserstein vs (W, δ)-closeness")
    con.print(f"W∞(μ, ν) = {fig1['w_infinity']:g}   least W with (W, 0.1)-closeness = {fig1['closeness_radius_delta_0.1']:g}"
              f"   W1 = {fig1['wasserstein_1']:g}")
