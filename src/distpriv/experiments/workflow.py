"""The Adult workflow behind ``distpriv demo`` (Chen & Ohrimenko Section 6, end to end).

1. Load UCI Adult (45,222 clean records) and split it as the paper does:
   10,000 auxiliary records (attacker), 10,000 test records, the rest for modelling
   — the data context of the reproduction (:mod:`distpriv.experiments.chen_ohrimenko.context`),
   so both run one pipeline and share its fitted models at the same seed.
2. Property model: datasets of n = 100 records whose share of income > 50K is p;
   θ ∈ {p1, p2} = {0.45, 0.55} (Δp = 0.1), f_θ estimated from 1,000 sampled
   datasets per θ (appendix C.1) for Table 1's five statistics.
3. Calibrate every mechanism of Table 3 (plus the Wasserstein mechanism on the
   empirical f_θ), release the five statistics of one sampled dataset.
4. Attack: the paper's meta-classifier (clean shadow releases), the adaptive one
   (shadow releases through the same mechanism) and the Gaussian likelihood-ratio
   attacker, each with and without protection.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .. import attacks
from ..calibration import classic_warnings_suppressed
from ..mechanisms import LABELS, Mechanism

WORKFLOW_MECHANISMS = (
    "expm-laplace", "dirm-laplace", "expm-gauss", "eigm", "daum", "wasserstein", "groupdp-laplace", "groupdp-gauss",
)


def adult_workflow(
    *,
    seed: int = 0,
    reps: int = 20,
    n: int = 100,
    p1: float = 0.45,
    p2: float = 0.55,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    calibration: str = "exact",
    samples_per_theta: int = 1000,
    out: Path | None = None,
    progress_bar: bool = True,
) -> dict[str, Any]:
    """Run the whole Adult workflow; returns a JSON-friendly dict (and writes a report to ``out``).

    The data pipeline is that of the Chen & Ohrimenko reproduction
    (:func:`distpriv.experiments.chen_ohrimenko.get_context`): the same seeded
    split, property models, empirical f_θ and record sensitivities, so at the
    same seed the demo and ``distpriv reproduce chen-ohrimenko`` share one
    fitted model. Mechanisms are calibrated on the empirical f_θ by
    :func:`~distpriv.experiments.chen_ohrimenko.measures.calibrate_row`.
    """
    from ..formatting import progress
    from .chen_ohrimenko import get_context
    from .chen_ohrimenko.measures import CLASSIC_NOTE, calibrate_row
    from .chen_ohrimenko.settings import _rng

    ctx = get_context(seed, n=n, model_samples=samples_per_theta)
    prop = "income"
    rng = _rng(ctx.seed, "demo", p1, p2)
    emp = ctx.empirical(prop, p1, p2)
    x_true = ctx.property_model(prop).sample_query(p1, 1, rng)[0]

    mechs: dict[str, Mechanism] = {}
    notes: set[str] = set()
    with classic_warnings_suppressed():
        for name in WORKFLOW_MECHANISMS:
            mechs[name] = calibrate_row(ctx, name, emp, (p1, p2), epsilon, delta, calibration, notes)
    for note in sorted(notes):
        if note != CLASSIC_NOTE:
            warnings.warn(note, stacklevel=2)

    data = ctx.attack_data(prop, p1, p2, reps, n_shadow=200, n_test=200, fresh_splits=False)
    gauss = ctx.gaussian(prop, p1, p2)
    rows: list[dict[str, Any]] = []
    defences: list[tuple[str, Mechanism | None]] = [("None", None), *[(k, v) for k, v in mechs.items()]]
    with progress("attacking", len(defences), enabled=progress_bar) as advance:
        for key, mech in defences:
            naive = attacks.meta_classifier_attack(data, mech, rng=rng)
            adaptive = attacks.adaptive_attack(data, mech, rng=rng) if mech is not None else naive
            lr = attacks.likelihood_ratio_attack(data, mech, means=gauss, rng=rng)
            released = mech.release(x_true, rng=rng) if mech is not None else None
            rows.append({
                "mechanism": "None" if mech is None else LABELS[key],
                "noise": "–" if mech is None else _noise_text(mech),
                "expected_l2_error": 0.0 if mech is None else mech.expected_l2_error,
                "epsilon": None if mech is None else mech.guarantee.epsilon,
                "delta": None if mech is None else mech.guarantee.delta,
                "released": None if released is None else [float(v) for v in released],
                "attack_accuracy": naive.accuracy,
                "attack_ci": list(naive.ci),
                "adaptive_accuracy": adaptive.accuracy,
                "lr_accuracy": lr.accuracy,
                "assumptions": [] if mech is None else list(mech.guarantee.assumptions),
            })
            advance()
    result = {
        "setting": {"n": n, "p1": p1, "p2": p2, "epsilon": epsilon, "delta": delta, "calibration": calibration,
                    "reps": reps, "samples_per_theta": samples_per_theta, "seed": seed,
                    "records": int(len(ctx.population)), "statistics": list(ctx.query.names)},
        "rows": rows,
    }
    if out is not None:
        result["report"] = str(_write_report(result, gauss, Path(out)))
    return result


def _noise_text(mech: Mechanism) -> str:
    return mech.noise.short_text()


def _write_report(result: dict[str, Any], gauss: Any, out: Path) -> Path:
    """Markdown + self-contained HTML report (:func:`distpriv.report.write_report`) with two figures:
    attack accuracy / expected error per mechanism, and the Gaussian fits of f_θ."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..formatting import markdown_table
    from ..report import Figure, Section, write_report

    rows = result["rows"]
    names = [r["mechanism"] for r in rows]
    fig_attack, axes = plt.subplots(1, 2, figsize=(12, 4))
    x = np.arange(len(rows))
    axes[0].bar(x - 0.25, [r["attack_accuracy"] for r in rows], 0.25, label="paper attacker")
    axes[0].bar(x, [r["adaptive_accuracy"] for r in rows], 0.25, label="adaptive")
    axes[0].bar(x + 0.25, [r["lr_accuracy"] for r in rows], 0.25, label="likelihood ratio")
    axes[0].axhline(0.5, color="k", lw=0.8, ls="--")
    eps, dl = result["setting"]["epsilon"], result["setting"]["delta"]
    ceiling = (np.exp(eps) + dl) / (1.0 + np.exp(eps))  # best balanced-test accuracy under (ε, δ)
    axes[0].axhline(ceiling, color="r", lw=0.8, ls=":", label=f"ceiling under (ε, δ) = ({eps:g}, {dl:g})")
    axes[0].set_xticks(x, names, rotation=45, ha="right")
    axes[0].set_ylabel("attack accuracy")
    axes[0].set_ylim(0.4, 1.0)
    axes[0].legend(fontsize=8)
    errs = [max(r["expected_l2_error"], 1e-3) for r in rows[1:]]
    axes[1].bar(np.arange(len(errs)), errs)
    axes[1].set_yscale("log")
    axes[1].set_xticks(np.arange(len(errs)), names[1:], rotation=45, ha="right")
    axes[1].set_ylabel("expected L2 error E‖Z‖₂")
    fig_attack.tight_layout()

    s = result["setting"]
    fig_fit, axes2 = plt.subplots(1, len(s["statistics"]), figsize=(3.2 * len(s["statistics"]), 3))
    for k, ax in enumerate(np.atleast_1d(axes2)):
        for lab in gauss.labels:
            mu, sd = gauss.mean(lab)[k], np.sqrt(gauss.covariance(lab)[k, k])
            grid = np.linspace(mu - 4 * sd, mu + 4 * sd, 200)
            ax.plot(grid, np.exp(-0.5 * ((grid - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi)), label=f"p = {lab}")
        ax.set_title(s["statistics"][k], fontsize=9)
        ax.legend(fontsize=7)
    fig_fit.tight_layout()

    table = markdown_table(
        [{**r, "95% CI": f"[{r['attack_ci'][0]:.3f}, {r['attack_ci'][1]:.3f}]"} for r in rows],
        ["mechanism", "noise", "expected_l2_error", "attack_accuracy", "95% CI", "adaptive_accuracy", "lr_accuracy"],
    )
    setting = (
        f"{s['records']} clean Adult records; datasets of n = {s['n']} records whose share with income > 50K is "
        f"p1 = {s['p1']} or p2 = {s['p2']}; f_θ from {s['samples_per_theta']} sampled datasets per θ; "
        f"ε = {s['epsilon']}, δ = {s['delta']} ({s['calibration']} calibration); attacks over {s['reps']} "
        f"repetitions of 200 shadow and 200 test datasets. Statistics: {', '.join(s['statistics'])}."
    )
    reading = (
        "The paper's attacker trains on clean shadow releases; the adaptive attacker trains on releases through "
        "the same mechanism; the likelihood-ratio attacker uses the Gaussian model of f_θ plus the known noise "
        "covariance. Accuracy 0.5 is guessing."
    )
    paths = write_report(
        out,
        "distpriv demo: protecting the share of high earners in UCI Adult",
        [Section("Setting", setting), Section("Mechanisms and attacks", table + "\n" + reading, figures=("attack_and_error",)),
         Section("Query distributions f_θ", "Gaussian fits of the five statistics per θ.", figures=("f_theta",))],
        [Figure("attack_and_error", fig_attack, "Attack accuracy and expected L2 error per mechanism"),
         Figure("f_theta", fig_fit, "Gaussian fits of f_θ")],
    )
    plt.close(fig_attack)
    plt.close(fig_fit)
    return Path(paths["markdown"])


def print_workflow(result: dict[str, Any]) -> None:
    """Compact table on stdout: mechanism, noise, expected error, attack accuracies."""
    from rich.console import Console
    from rich.table import Table

    con = Console(width=None if sys.stdout.isatty() else 120)
    s = result["setting"]
    con.rule(f"[bold]UCI Adult: hide income share p ∈ {{{s['p1']}, {s['p2']}}} (n = {s['n']}, ε = {s['epsilon']}, δ = {s['delta']})")
    t = Table()
    for col in ("mechanism", "noise", "E‖Z‖₂", "paper attack", "95% CI", "adaptive", "LR attack"):
        t.add_column(col, no_wrap=True, justify="left" if col in ("mechanism", "noise") else "right")
    for r in result["rows"]:
        t.add_row(r["mechanism"], r["noise"], f"{r['expected_l2_error']:.3g}", f"{r['attack_accuracy']:.3f}",
                  f"[{r['attack_ci'][0]:.3f}, {r['attack_ci'][1]:.3f}]", f"{r['adaptive_accuracy']:.3f}", f"{r['lr_accuracy']:.3f}")
    con.print(t)
    if "report" in result:
        con.print(f"report written to {result['report']}")
