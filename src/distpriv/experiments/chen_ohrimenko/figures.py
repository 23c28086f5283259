"""Figures 2-5 of Chen & Ohrimenko (Section 6, appendix D.1), computed (drawn by :mod:`.render`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...attacks import MetaClassifierAttack, gaussian_lr_accuracy
from ...calibration import CALIBRATIONS
from ...formatting import progress
from .context import Context, get_context
from .measures import _l2_errors, calibrate_row
from .settings import (
    DELTA,
    DELTA_PS,
    DP_MECHANISMS,
    EVM_MECHANISMS,
    FIG2_EPSILONS,
    FIG2_RANGE_NOTE,
    FIG4_DELTA_P,
    FIG4_EPSILONS,
    GAUSSIAN_EVM,
    GDP_MECHANISMS,
    MODEL_SAMPLES,
    N_SHADOW,
    N_TEST,
    PAPER_TEXT,
    PROPERTIES,
    PROPERTY_LABELS,
    REPS,
    STUDY,
    _check_calibration,
    _check_flag,
    _check_reps,
    _other,
    _rng,
    pair_for,
)


def _error_curves(
    ctx: Context, prop: str, delta_p: float, mechanisms: Sequence[tuple[str, str]], epsilons: Sequence[float],
    delta: float, reps: int, calibration: str, notes: set[str], panel: str, paper_settings: bool = False,
) -> dict[str, Any]:
    pair = pair_for(delta_p)
    gm = ctx.gaussian(prop, *pair)
    series: dict[str, Any] = {}
    for name, label in mechanisms:
        cur: dict[str, list[float]] = {cal: [] for cal in CALIBRATIONS}
        for eps in epsilons:
            mechs = [calibrate_row(ctx, name, gm, pair, eps, delta, cal, notes, paper_settings, tight=False)
                     for cal in CALIBRATIONS]
            # Same noise stream across ε: smooth curves (common random numbers).
            for cal, v in zip(CALIBRATIONS, _l2_errors(ctx, prop, pair, mechs, reps, ("fig", panel, name)), strict=True):
                cur[cal].append(v)
        series[label] = {"l2_error": cur[calibration], "l2_error_" + _other(calibration): cur[_other(calibration)]}
    return {"property": prop, "delta_p": delta_p, "pair": list(pair), "epsilons": list(epsilons), "series": series}


def _note_zero_noise(panels: dict[str, Any], notes: set[str]) -> None:
    for data in panels.values():
        for label, s in data["series"].items():
            if any(v == 0 for v in s["l2_error"]):
                notes.add(f"{label}: zero error where the fitted model's own uncertainty already gives the guarantee "
                          "(Thm 5.4: no noise needed); such points are left out of log-scale plots")


def figure2(
    *, reps: int = REPS, seed: int = 0, calibration: str = "classic", epsilons: dict[str, Sequence[float]] | None = None,
    delta: float = DELTA, model_samples: int = MODEL_SAMPLES, paper_settings: bool = False,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Figure 2: L2 error of the five EVM variants vs ε — (a) income, Δp_I = 0.1; (b) work class,
    Δp_W = 0.04, low-privacy ε range; (c) work class, wider ε range (higher privacy).

    ``paper_settings=True`` gives DirM (L) the paper's scale Δ_E,1/ε (as in :func:`table3`).
    Each panel carries a distinct ``title`` naming its property, Δp and ε range.
    """
    reps = _check_reps(reps)
    calibration = _check_calibration(calibration)
    paper_settings = _check_flag(paper_settings, "paper_settings")
    ctx = get_context(seed, model_samples=model_samples)
    grids = {**FIG2_EPSILONS, **(epsilons or {})}
    notes: set[str] = set()
    panels = {}
    spec = {"a": "income", "b": "workclass", "c": "workclass"}
    with progress("Figure 2", 3, enabled=show_progress) as advance:
        for panel, prop in spec.items():
            panels[panel] = _error_curves(ctx, prop, PROPERTIES[prop]["delta_p"], EVM_MECHANISMS, grids[panel], delta,
                                          reps, calibration, notes, panel, paper_settings)
            eps = grids[panel]
            panels[panel]["title"] = (f"({panel}) {PROPERTY_LABELS[prop]}, Δp = {PROPERTIES[prop]['delta_p']:g}, "
                                      f"ε ∈ [{min(eps):g}, {max(eps):g}]{FIG2_RANGE_NOTE[panel]}")
            advance()
    _note_zero_noise(panels, notes)
    if paper_settings:
        notes.add("paper settings: DirM (L) uses the Laplace scale Δ_E,1/ε of the printed Table 3 (Thm 5.3 needs Δ_E,2/ε)")
    return {"study": STUDY, "figure": 2, "title": "Privacy-utility tradeoffs (L2 error vs ε)",
            "settings": {"reps": reps, "seed": ctx.seed, "calibration": calibration, "delta": delta, "n": ctx.n,
                         "paper_settings": paper_settings},
            "panels": panels, "notes": sorted(notes)}


def figure3(
    *, reps: int = REPS, seed: int = 0, calibration: str = "classic", delta_ps: Sequence[float] = DELTA_PS,
    epsilon: float = 1.0, delta: float = DELTA, model_samples: int = MODEL_SAMPLES, show_progress: bool = False,
) -> dict[str, Any]:
    """Figure 3: L2 error of the Gaussian EVM variants vs Δp (ε = 1, δ = 0.001), with DP (L)/(G) baselines;
    (a) income, (b) work class. ``crossover`` is the largest Δp at which DauM (G) beats DP (G)."""
    reps = _check_reps(reps)
    calibration = _check_calibration(calibration)
    ctx = get_context(seed, model_samples=model_samples)
    notes: set[str] = set()
    panels: dict[str, Any] = {}
    mechanisms = GAUSSIAN_EVM + DP_MECHANISMS
    with progress("Figure 3", 2 * len(delta_ps), enabled=show_progress) as advance:
        for panel, prop in (("a", "income"), ("b", "workclass")):
            series: dict[str, dict[str, list[float]]] = {
                label: {"l2_error": [], "l2_error_" + _other(calibration): []} for _, label in mechanisms
            }
            for dp_ in delta_ps:
                pair = pair_for(dp_)
                gm = ctx.gaussian(prop, *pair)
                for name, label in mechanisms:
                    mechs = [calibrate_row(ctx, name, gm, pair, epsilon, delta, cal, notes, tight=False)
                             for cal in CALIBRATIONS]
                    vals = dict(zip(CALIBRATIONS, _l2_errors(ctx, prop, pair, mechs, reps, ("fig3", panel, name)), strict=True))
                    series[label]["l2_error"].append(vals[calibration])
                    series[label]["l2_error_" + _other(calibration)].append(vals[_other(calibration)])
                advance()
            dau, dpg = np.array(series["DauM (G)"]["l2_error"]), np.array(series["DP (G)"]["l2_error"])
            below = [d for d, a, b in zip(delta_ps, dau, dpg, strict=True) if a < b]
            panels[panel] = {"property": prop, "delta_ps": list(delta_ps), "series": series,
                             "crossover": max(below) if below else None,
                             "paper_crossover": PAPER_TEXT[f"daum_beats_dp_{prop}_up_to"]["value"]}
    _note_zero_noise(panels, notes)
    return {"study": STUDY, "figure": 3, "title": "L2 error vs Δp (ε = 1, δ = 0.001), DP baselines for comparison",
            "settings": {"reps": reps, "seed": ctx.seed, "calibration": calibration, "epsilon": epsilon, "delta": delta,
                         "n": ctx.n, "sensitivities": ctx.sensitivities.tolist()},
            "panels": panels, "notes": sorted(notes)}


def figure4(
    *, reps: int = REPS, seed: int = 0, calibration: str = "classic", delta_ps: Sequence[float] = DELTA_PS,
    epsilons: Sequence[float] = FIG4_EPSILONS, delta: float = DELTA, n_shadow: int = N_SHADOW, n_test: int = N_TEST,
    model_samples: int = MODEL_SAMPLES, fresh_splits: bool = True, show_progress: bool = False,
) -> dict[str, Any]:
    """Figure 4: (a) undefended attack accuracy vs Δp for income and work class; attack accuracy vs ε
    against the Gaussian EVM variants and the group-DP baselines for (b) income, Δp_I = 0.1, and
    (c) work class, Δp_W = 0.2 (δ = 0.001)."""
    reps = _check_reps(reps)
    calibration = _check_calibration(calibration)
    ctx = get_context(seed, model_samples=model_samples)
    notes: set[str] = set()
    panels: dict[str, Any] = {}
    mechanisms = GAUSSIAN_EVM + GDP_MECHANISMS
    total = 2 * len(delta_ps) + 2 * len(mechanisms) * len(epsilons)
    with progress("Figure 4", total, enabled=show_progress) as advance:
        acc_a: dict[str, dict[str, list[float]]] = {}
        for prop in ("income", "workclass"):
            cur: dict[str, list[float]] = {"attack_accuracy": [], "ci_low": [], "ci_high": [], "bayes_optimal_accuracy": []}
            for dp_ in delta_ps:
                pair = pair_for(dp_)
                data = ctx.attack_data(prop, *pair, reps, n_shadow=n_shadow, n_test=n_test, fresh_splits=fresh_splits)
                res = MetaClassifierAttack().fit(data).evaluate(data)
                gm = ctx.gaussian(prop, *pair)
                pooled = 0.5 * (gm.covariance(pair[0]) + gm.covariance(pair[1]))
                cur["attack_accuracy"].append(res.accuracy)
                lo, hi = res.ci
                cur["ci_low"].append(lo)
                cur["ci_high"].append(hi)
                cur["bayes_optimal_accuracy"].append(gaussian_lr_accuracy(gm.mean(pair[0]), gm.mean(pair[1]), pooled))
                advance()
            acc_a[prop] = cur
        panels["a"] = {"delta_ps": list(delta_ps), "series": acc_a, "paper": {
            k: v["value"] for k, v in PAPER_TEXT.items() if k.startswith("no_defence")}}
        for panel, (prop, dp_) in FIG4_DELTA_P.items():
            pair = pair_for(dp_)
            gm = ctx.gaussian(prop, *pair)
            data = ctx.attack_data(prop, *pair, reps, n_shadow=n_shadow, n_test=n_test, fresh_splits=fresh_splits)
            attack = MetaClassifierAttack().fit(data)
            series: dict[str, Any] = {}
            for name, label in mechanisms:
                cur = {"attack_accuracy": [], "attack_accuracy_" + _other(calibration): [], "adaptive_accuracy": []}
                for eps in epsilons:
                    mechs = {cal: calibrate_row(ctx, name, gm, pair, eps, delta, cal, notes, tight=False)
                             for cal in CALIBRATIONS}
                    key = ("fig4", panel, name, eps)
                    cur["attack_accuracy"].append(attack.evaluate(data, mechs[calibration], _rng(ctx.seed, *key)).accuracy)
                    cur["attack_accuracy_" + _other(calibration)].append(
                        attack.evaluate(data, mechs[_other(calibration)], _rng(ctx.seed, *key)).accuracy)
                    adaptive = MetaClassifierAttack().fit(data, mechs[calibration], _rng(ctx.seed, "train", *key))
                    cur["adaptive_accuracy"].append(adaptive.evaluate(data, mechs[calibration], _rng(ctx.seed, *key)).accuracy)
                    advance()
                series[label] = cur
            panels[panel] = {"property": prop, "delta_p": dp_, "pair": list(pair), "epsilons": list(epsilons),
                             "series": series}
    return {"study": STUDY, "figure": 4, "title": "Property inference attack accuracy",
            "settings": {"reps": reps, "seed": ctx.seed, "calibration": calibration, "delta": delta, "n": ctx.n,
                         "n_shadow": n_shadow, "n_test": n_test, "fresh_splits": fresh_splits},
            "panels": panels, "notes": sorted(notes)}


def figure5(
    *, seed: int = 0, model_samples: int = MODEL_SAMPLES, bins: int = 30, show_progress: bool = False
) -> dict[str, Any]:
    """Figure 5 (appendix C.1/D.1): Gaussian approximations of each query component for p_I = 0.45 and 0.55.

    Per component and p: the fitted mean and variance, a histogram of the
    ``model_samples`` sampled values and the Kolmogorov–Smirnov distance to the
    fitted normal (a measure of how Gaussian f_θ is).
    """
    from scipy import stats

    ctx = get_context(seed, model_samples=model_samples)
    pair = pair_for(PROPERTIES["income"]["delta_p"])
    pm = ctx.property_model("income")
    # Same datasets as the Gaussian fit of Table 3/4 (same stream).
    emp = pm.empirical_model(list(pair), size=ctx.model_samples, rng=_rng(ctx.seed, "gaussian", "income", *pair))
    comps = []
    with progress("Figure 5", len(ctx.query.statistics), enabled=show_progress) as advance:
        for j, stat in enumerate(ctx.query.statistics):
            both = np.concatenate([emp.samples(p)[:, j] for p in pair])
            if np.allclose(both, np.round(both)) and np.ptp(both) <= 4 * bins:  # counts: one bin per integer
                edges = np.arange(both.min() - 0.5, both.max() + 1.5)
            else:
                edges = np.histogram_bin_edges(both, bins=bins)
            per: dict[str, Any] = {}
            for p in pair:
                x = emp.samples(p)[:, j]
                mu, var = float(x.mean()), float(x.var(ddof=1))
                ks = float(stats.kstest(x, "norm", args=(mu, math.sqrt(var))).statistic) if var > 0 else 1.0
                per[str(p)] = {"mean": mu, "variance": var, "ks_distance": ks,
                               "histogram": np.histogram(x, bins=edges)[0].tolist()}
            comps.append({"statistic": stat.name, "bin_edges": edges.tolist(), "fits": per})
            advance()
    female = next((c for c in comps if "female" in c["statistic"].lower()), None)
    paper = {}
    if female is not None:
        paper = {
            "var_female_0.45": {"ours": female["fits"][str(pair[0])]["variance"], "paper": PAPER_TEXT["var_female_income_0.45"]["value"]},
            "var_female_0.55": {"ours": female["fits"][str(pair[1])]["variance"], "paper": PAPER_TEXT["var_female_income_0.55"]["value"]},
        }
    return {"study": STUDY, "figure": 5, "title": "Gaussian approximations of f_θ (income, p_I = 0.45 / 0.55)",
            "settings": {"seed": ctx.seed, "model_samples": ctx.model_samples, "n": ctx.n, "pair": list(pair)},
            "components": comps, "paper_comparison": paper}
