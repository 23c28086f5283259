"""Tables 3 (L2 error) and 4 (attack accuracy) of Chen & Ohrimenko, Section 6.2-6.3, computed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...attacks import (
    AttackData,
    MetaClassifierAttack,
    gaussian_lr_accuracy,
    likelihood_ratio_attack,
)
from ...calibration import CALIBRATIONS
from ...formatting import progress
from ...models import pair_stats
from .context import Context, get_context
from .measures import _ci, _l2_samples, calibrate_row
from .settings import (
    _LAPLACE,
    DELTA,
    DELTAS,
    EPSILONS,
    GAUSSIAN_EVM,
    MODEL_SAMPLES,
    N_SHADOW,
    N_TEST,
    PAPER_TABLE3,
    PAPER_TABLE4,
    PAPER_TEXT,
    PROPERTIES,
    REPS,
    STUDY,
    TABLE3_MECHANISMS,
    _check_calibration,
    _check_flag,
    _check_reps,
    _rng,
    pair_for,
)


def table3(
    *,
    reps: int = REPS,
    seed: int = 0,
    calibration: str = "classic",
    epsilons: Sequence[float] = EPSILONS,
    delta: float = DELTA,
    model_samples: int = MODEL_SAMPLES,
    paper_settings: bool = False,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Table 3: L2 error of the five EVM variants and the group-DP baselines (income, Δp_I = 0.1).

    Each row holds ``l2_error`` under ``calibration`` (mean over ``reps``
    datasets, Section 6.2, with its 95% interval), the paper's value and the
    difference, both calibrations' values (``l2_error_classic``,
    ``l2_error_exact``), the share of error the exact calibration saves, and the
    mechanism's expected error E||Z||_2 (``l2_error_expected``).

    ``paper_settings=True`` gives DirM (L) the paper's scale Δ_E,1/ε
    (:func:`paper_dirm_laplace`); the rows have the same fields in both modes and
    ``differences`` lists the printed, paper-arithmetic and corrected values.
    """
    reps = _check_reps(reps)
    calibration = _check_calibration(calibration)
    paper_settings = _check_flag(paper_settings, "paper_settings")
    ctx = get_context(seed, model_samples=model_samples)
    prop = "income"
    dp_ = PROPERTIES[prop]["delta_p"]
    pair = pair_for(dp_)
    gm = ctx.gaussian(prop, *pair)
    notes: set[str] = set()
    rows = []
    with progress("Table 3: L2 error", len(TABLE3_MECHANISMS) * len(epsilons), enabled=show_progress) as advance:
        for name, label in TABLE3_MECHANISMS:
            for eps in epsilons:
                mechs = {cal: calibrate_row(ctx, name, gm, pair, eps, delta, cal, notes, paper_settings)
                         for cal in CALIBRATIONS}
                samples = _l2_samples(ctx, prop, pair, list(mechs.values()), reps, ("t3", name, eps))
                errs = {cal: float(e.mean()) for cal, e in zip(CALIBRATIONS, samples, strict=True)}
                lo, hi = _ci(samples[CALIBRATIONS.index(calibration)])
                main = mechs[calibration]
                paper = PAPER_TABLE3.get((label, float(eps)))
                value = errs[calibration]
                rows.append({
                    "mechanism": label,
                    "epsilon": float(eps),
                    "delta": None if name in _LAPLACE else float(delta),
                    "l2_error": value,
                    "ci_low": lo,
                    "ci_high": hi,
                    "paper": paper,
                    "difference": None if paper is None else value - paper,
                    "relative_difference": None if not paper else value / paper - 1.0,
                    "l2_error_expected": main.expected_l2_error,
                    "l2_error_classic": errs["classic"],
                    "l2_error_exact": errs["exact"],
                    "exact_saving": 1.0 - errs["exact"] / errs["classic"] if errs["classic"] > 0 else 0.0,
                })
                advance()
    st = pair_stats(gm, [pair])
    if paper_settings:
        notes.add(
            f"paper settings: DirM (L) rows use the Laplace scale Δ_E,1/ε (Δ_E,1 = {st.l1:.3f}) that the printed "
            f"values follow; Algorithm 1 / Thm 5.3 need only Δ_E,2/ε (Δ_E,2 = {st.l2:.3f}), so these rows add "
            f"Δ_E,1/Δ_E,2 = {st.l1 / st.l2:.3f} times the noise the theorem requires (their guarantee is the "
            "stronger (ε·Δ_E,2/Δ_E,1, 0)); all other rows are the same in both modes"
        )
    else:
        notes.add(
            f"DirM (L): Algorithm 1 / Thm 5.3 scale the directional Laplace noise by Δ_E,2/ε (here Δ_E,2 = {st.l2:.3f}, "
            f"giving E|Y| = {st.l2:.2f}/ε); the paper's DirM (L) values track Δ_E,1/ε instead (Δ_E,1 = {st.l1:.3f}), "
            "so the published DirM (L) errors are about Δ_E,1/Δ_E,2 times ours; --paper-settings reproduces them"
        )
    notes.update(_daum_sensitivity_notes(ctx, gm, pair, epsilons, delta, calibration, reps))
    return {
        "study": STUDY,
        "table": 3,
        "title": "L2 error protecting income to Δp_I = 0.1 (n = 100, δ = 0.001)",
        "settings": {
            "property": prop, "predicate": PROPERTIES[prop]["predicate"], "delta_p": dp_, "pairs": [list(pair)],
            "n": ctx.n, "model_samples": ctx.model_samples, "reps": reps, "seed": ctx.seed,
            "calibration": calibration, "delta": delta, "group_size": ctx.n,
            "sensitivities": ctx.sensitivities.tolist(), "paper_settings": paper_settings,
        },
        "rows": rows,
        "differences": table3_differences(gm, pair, epsilons),
        "notes": sorted(notes),
    }


def table3_differences(model: Any, pair: tuple[float, float], epsilons: Sequence[float]) -> list[dict[str, Any]]:
    """Where Table 3's arithmetic differs from the paper's text: DirM (L)'s expected error per ε.

    E||Z||_2 of Laplace noise Y·v along one unit vector is E|Y| = b, so the
    paper's arithmetic gives Δ_E,1/ε and Thm 5.3 gives Δ_E,2/ε; ``paper`` is the
    printed (sampled, 50-repetition) mean error.
    """
    st = pair_stats(model, [pair])
    return [{
        "mechanism": "DirM (L)", "epsilon": float(eps), "quantity": "expected L2 error = Laplace scale along v",
        "paper": PAPER_TABLE3.get(("DirM (L)", float(eps))), "paper_arithmetic": st.l1 / eps,
        "corrected": st.l2 / eps,
        "why": f"Alg 1 / Thm 5.3 scale Y ~ Lap(Δ_E,2/ε), Δ_E,2 = {st.l2:.4g}; the printed values follow "
               f"Δ_E,1/ε, Δ_E,1 = {st.l1:.4g} (the ExpM (L) sensitivity)",
    } for eps in epsilons]


def _daum_sensitivity_notes(
    ctx: Context, gm: Any, pair: tuple[float, float], epsilons: Sequence[float], delta: float, calibration: str,
    reps: int,
) -> list[str]:
    """Why DauM (G) moves more than the others against the paper.

    Its noise is what is left of the variance required along v after the model's
    own variance there (Thm B.4; the requirement without it is ExpM (G)'s
    (Δ_E,2/D_max)²). Where the model covers most of it, the noise is a small
    difference of large numbers and depends strongly on the fitted Σ_θ. Its error
    is |Z| for a 1-D Gaussian Z, with coefficient of variation sqrt(π/2 − 1), so
    a mean over ``reps`` repetitions (ours and the paper's) has relative standard
    error sqrt(π/2 − 1)/sqrt(reps).
    """
    sink: set[str] = set()
    covered = []
    for eps in epsilons:
        need = float(calibrate_row(ctx, "expm-gauss", gm, pair, eps, delta, calibration, sink).noise_covariance[0, 0])
        dau = float(np.trace(calibrate_row(ctx, "daum", gm, pair, eps, delta, calibration, sink).noise_covariance))
        covered.append(1.0 - dau / need if need > 0 else 1.0)
    cv = math.sqrt(math.pi / 2 - 1)
    return [
        "DauM (G): the fitted f_θ's own variance along v covers "
        + " / ".join(f"{c:.0%}" for c in covered) + " of the variance Thm B.4 requires at ε = "
        + " / ".join(f"{e:g}" for e in epsilons)
        + " (the rest is DauM's noise); where it covers most, the noise is a small difference of large numbers and "
        "DauM's error depends strongly on the fitted Σ_θ (data split, model_samples), which the paper's run does not "
        f"share; elsewhere a mean of {reps} one-dimensional |Z| has a relative standard error of "
        f"{cv / math.sqrt(reps):.0%} (sqrt(π/2 − 1)/sqrt(reps)), in the paper's values as in ours"
    ]


# --------------------------------------------------------------------------- Table 4
def _attack_row(
    attack: MetaClassifierAttack, data: AttackData, gm: Any, mechs: dict[str, Any] | None, calibration: str,
    seed: int, key: Any,
) -> dict[str, Any]:
    """Naive (paper), adaptive and likelihood-ratio accuracies, plus the Bayes-optimal Φ(D/2) under the model."""
    p1, p2 = data.p1, data.p2
    pooled = 0.5 * (gm.covariance(p1) + gm.covariance(p2))
    out: dict[str, Any] = {}
    for cal in CALIBRATIONS if mechs is not None else (calibration,):
        mech = None if mechs is None else mechs[cal]
        naive = attack.evaluate(data, mech, _rng(seed, "t4-test", key))
        sfx = "" if cal == calibration else f"_{cal}"
        lo, hi = naive.ci
        out[f"attack_accuracy{sfx}"] = naive.accuracy
        if sfx == "":
            out["ci_low"], out["ci_high"] = lo, hi
        noise = np.zeros_like(pooled) if mech is None else mech.noise_covariance
        out[f"bayes_optimal_accuracy{sfx}"] = gaussian_lr_accuracy(gm.mean(p1), gm.mean(p2), pooled, noise)
        if sfx == "":
            if mech is not None:
                adaptive = MetaClassifierAttack().fit(data, mech, _rng(seed, "t4-adaptive-train", key))
                out["adaptive_accuracy"] = adaptive.evaluate(data, mech, _rng(seed, "t4-test", key)).accuracy
            else:
                out["adaptive_accuracy"] = naive.accuracy
            out["likelihood_ratio_accuracy"] = likelihood_ratio_attack(
                data, mech, rng=_rng(seed, "t4-test", key)
            ).accuracy
    if mechs is not None:
        for cal in CALIBRATIONS:
            out.setdefault(f"attack_accuracy_{cal}", out["attack_accuracy"] if cal == calibration else None)
        out["noise_std_ratio_exact"] = math.sqrt(
            float(np.trace(mechs["exact"].noise_covariance)) / max(float(np.trace(mechs["classic"].noise_covariance)), 1e-300)
        )
    return out


def table4(
    *,
    reps: int = REPS,
    seed: int = 0,
    calibration: str = "classic",
    epsilons: Sequence[float] = EPSILONS,
    deltas: Sequence[float] = DELTAS,
    n_shadow: int = N_SHADOW,
    n_test: int = N_TEST,
    model_samples: int = MODEL_SAMPLES,
    fresh_splits: bool = True,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Table 4: meta-classifier attack accuracy on income (p_I = 0.45 vs 0.55) against the Gaussian EVM variants.

    Row ``"None"`` is the undefended release. Beyond the paper's attacker
    (``attack_accuracy``, trained on clean shadow data; mean over ``reps``
    with a 95% interval) each row has the adaptive attacker, the Gaussian
    likelihood-ratio attacker (plug-in model from shadow data), the
    Bayes-optimal accuracy Φ(D/2) under the fitted Gaussian model, and the
    attack accuracy and noise-scale ratio under the other calibration.
    """
    reps = _check_reps(reps)
    calibration = _check_calibration(calibration)
    ctx = get_context(seed, model_samples=model_samples)
    prop = "income"
    dp_ = PROPERTIES[prop]["delta_p"]
    pair = pair_for(dp_)
    gm = ctx.gaussian(prop, *pair)
    notes: set[str] = set()
    data = ctx.attack_data(prop, *pair, reps, n_shadow=n_shadow, n_test=n_test, fresh_splits=fresh_splits)
    attack = MetaClassifierAttack().fit(data)
    rows = []
    total = 1 + len(GAUSSIAN_EVM) * len(epsilons) * len(deltas)
    with progress("Table 4: attack accuracy", total, enabled=show_progress) as advance:
        base = _attack_row(attack, data, gm, None, calibration, ctx.seed, ("none",))
        rows.append({"mechanism": "None", "epsilon": None, "delta": None, **base,
                     "paper": PAPER_TEXT["no_defence_income_dp_0.1"]["value"]})
        rows[-1]["difference"] = rows[-1]["attack_accuracy"] - rows[-1]["paper"]
        advance()
        for name, label in GAUSSIAN_EVM:
            for eps in epsilons:
                for dl in deltas:
                    mechs = {cal: calibrate_row(ctx, name, gm, pair, eps, dl, cal, notes) for cal in CALIBRATIONS}
                    res = _attack_row(attack, data, gm, mechs, calibration, ctx.seed, (name, eps, dl))
                    paper = PAPER_TABLE4.get((label, float(eps), float(dl)))
                    rows.append({
                        "mechanism": label, "epsilon": float(eps), "delta": float(dl), **res,
                        "paper": paper,
                        "difference": None if paper is None else res["attack_accuracy"] - paper,
                    })
                    advance()
    return {
        "study": STUDY,
        "table": 4,
        "title": "Attack accuracy on income, p_I = 0.45 vs 0.55 (Δp_I = 0.1)",
        "settings": {
            "property": prop, "predicate": PROPERTIES[prop]["predicate"], "p1": pair[0], "p2": pair[1],
            "n": ctx.n, "n_shadow": n_shadow, "n_test": n_test, "reps": reps, "seed": ctx.seed,
            "calibration": calibration, "model_samples": ctx.model_samples, "fresh_splits": fresh_splits,
            "classifier": "logistic regression on standardised features (C = 1)",
        },
        "rows": rows,
        "notes": sorted(notes) + [
            "paper value of the None row: AISTATS Sec. 5.3 text ('75% success rate'), approximate",
        ],
    }
