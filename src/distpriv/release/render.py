"""Report content for ``distpriv release`` and ``distpriv audit``: Markdown sections and figures.

Everything here is computed from a :class:`~distpriv.release.public.PublicContext`:
the public payload and, when f_θ comes from public inputs (``--population``,
``--model``), the model of f_θ. The private table is never reachable, so two
datasets with the same public inputs give the same report apart from the noisy
values. Figures — the f_θ model per statistic, expected error vs ε for every
mechanism (:func:`error_curves`) and attack accuracy before/after the mechanism
on datasets drawn from the model (:func:`attack_summary`) — are drawn only for a
public model; with ``--model-from-data`` they would picture the private rows,
and the report has none.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from .. import attacks, relaxed
from ..errors import DistPrivError
from ..experiments._common import markdown_table
from ..models import EmpiricalModel
from ..report import Figure, Section
from .public import PublicContext
from .selection import evaluate_candidate

__all__ = ["attack_summary", "error_curves", "release_figures", "release_sections"]

_STREAM_ATTACKS = 2


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def error_curves(ctx: PublicContext, factors: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)) -> dict[str, list[float | None]]:
    """Expected L2 error of every candidate at ε × ``factors`` (same diagnostics; η and λ recomputed per ε)."""
    if ctx.modelling is None or ctx.selection is None:
        return {"epsilon": []}
    diag = ctx.selection.diagnostics
    model = ctx.modelling.model
    labs = list(dict.fromkeys(v for pr in ctx.pairs for v in pr))
    pooled = diag.pooled_model.covariance(labs[0])
    out: dict[str, list[float | None]] = {"epsilon": [ctx.epsilon * f for f in factors]}
    names = [c.name for c in ctx.selection.candidates if c.name not in ("dp-laplace", "dp-gauss")]
    for nm in names:
        out[nm] = []
    for eps in out["epsilon"]:
        assert eps is not None
        eta = ctx.delta / (2.0 * (1.0 + math.exp(eps)))
        if not isinstance(model, EmpiricalModel):  # declared model: the gaps are exact and do not depend on ε
            lam = diag.divergence_lambda
        else:
            try:
                lam = max(relaxed.approx_max_divergence_gap(model.samples(lab), model.mean(lab), pooled, eta)
                          for lab in labs)
            except DistPrivError:
                lam = math.inf
        d = replace(diag, eta=eta, divergence_lambda=float(lam))
        for nm in names:
            c = evaluate_candidate(nm, model, list(ctx.pairs), d, epsilon=eps, delta=ctx.delta,  # type: ignore[arg-type]
                                   calibration=ctx.calibration, sensitivities=ctx.sensitivities, n=ctx.modelling.n)
            out[nm].append(c.expected_l2_error if c.kept and math.isfinite(c.expected_l2_error) else None)
    return out


def attack_summary(ctx: PublicContext, *, reps: int = 5, n_datasets: int = 100) -> list[dict[str, Any]] | None:
    """Attack accuracy without and with the chosen mechanism on the first pair (datasets drawn from the model)."""
    if ctx.modelling is None or ctx.selection is None:
        return None
    chosen = ctx.selection.chosen
    a, b = ctx.pairs[0]
    g = np.random.default_rng([ctx.seed, _STREAM_ATTACKS])
    data = attacks.sample_attack_data(ctx.modelling.sampler, a, b, n_shadow=n_datasets, n_test=n_datasets, reps=reps,
                                      rng=g)
    mech = chosen if chosen.base is not None or chosen.extra_laplace_scale > 0 else None
    model = ctx.modelling.model
    gauss = model.to_gaussian() if isinstance(model, EmpiricalModel) else model
    rows = []
    for label, defence in (("before (no noise)", None), (f"after ({chosen.label})", mech)):
        rows.append({
            "setting": label,
            "meta-classifier": attacks.meta_classifier_attack(data, defence, rng=g).accuracy,
            "adaptive": (attacks.adaptive_attack(data, defence, rng=g).accuracy if defence is not None
                         else attacks.meta_classifier_attack(data, None, rng=g).accuracy),
            "likelihood-ratio": attacks.likelihood_ratio_attack(data, defence, means=gauss, rng=g).accuracy,
        })
    return rows


def _f_theta_figure(ctx: PublicContext) -> Figure:
    plt = _plt()
    assert ctx.modelling is not None
    model = ctx.modelling.model
    labs = list(model.labels)
    m = model.dim
    cols = min(m, 3)
    rows = int(math.ceil(m / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for k in range(rows * cols):
        ax = axes[k // cols][k % cols]
        if k >= m:
            ax.axis("off")
            continue
        for i, lab in enumerate(labs):
            if isinstance(model, EmpiricalModel):
                x = model.samples(lab)[:, k]
                ax.hist(x, bins=30, density=True, alpha=0.45, color=f"C{i}", label=f"θ = {lab}")
                mu, sd = float(x.mean()), float(x.std(ddof=1))
                lo, hi = float(x.min()), float(x.max())
            else:
                mu, sd = float(model.mean(lab)[k]), float(math.sqrt(max(model.covariance(lab)[k, k], 0.0)))
                lo, hi = mu - 4 * sd, mu + 4 * sd
            if sd > 0:
                t = np.linspace(lo, hi, 200)
                ax.plot(t, np.exp(-0.5 * ((t - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi)), lw=1.2, color=f"C{i}",
                        label=None if isinstance(model, EmpiricalModel) else f"θ = {lab}")
        ax.set_title(ctx.names[k], fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("f_θ: the model of the statistics per θ" + (" (sampled datasets, Gaussian fits)"
                                                             if isinstance(model, EmpiricalModel) else " (declared)"))
    fig.tight_layout()
    out = Figure("f_theta", fig, "f_θ per statistic, as modelled from the public inputs")
    plt.close(fig)
    return out


def release_figures(ctx: PublicContext, curves: dict[str, list[float | None]],
                    attack_rows: list[dict[str, Any]] | None) -> list[Figure]:
    """The figures of the release report (none when f_θ was modelled from the private table)."""
    if ctx.modelling is None or ctx.selection is None:
        return []
    plt = _plt()
    figs = [_f_theta_figure(ctx)]
    chosen = ctx.selection.chosen
    fig, ax = plt.subplots(figsize=(7, 4.2))
    eps = curves["epsilon"]
    for nm, ys in curves.items():
        if nm == "epsilon":
            continue
        pts = [(e, y) for e, y in zip(eps, ys, strict=True) if y is not None and y > 0]
        if pts:
            label = next(c.label for c in ctx.selection.candidates if c.name == nm)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", lw=1.5 if nm == chosen.name else 0.9,
                    label=label + (" (chosen)" if nm == chosen.name else ""))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(eps, [f"{e:g}" for e in eps])
    ax.minorticks_off()
    ax.set_xlabel("ε")
    ax.set_ylabel("expected L2 error E||Z||₂")
    ax.set_title(f"Expected error vs ε (δ = {ctx.delta:g}); valid mechanisms only")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    figs.append(Figure("error_vs_epsilon", fig, "expected L2 error of each mechanism whose guarantee holds, vs ε"))
    plt.close(fig)
    if attack_rows is not None:
        fig, ax = plt.subplots(figsize=(7, 4))
        kinds = ["meta-classifier", "adaptive", "likelihood-ratio"]
        width = 0.38
        xs = np.arange(len(kinds))
        for i, row in enumerate(attack_rows):
            ax.bar(xs + (i - 0.5) * width, [row[k] for k in kinds], width, label=row["setting"])
        e = math.exp(ctx.epsilon)
        ax.axhline((e + ctx.delta) / (1 + e), color="k", ls="--", lw=1, label="max allowed by (ε, δ)")
        ax.axhline(0.5, color="grey", ls=":", lw=1)
        ax.set_xticks(xs, kinds)
        ax.set_ylim(0.4, 1.0)
        ax.set_ylabel("attack accuracy")
        ax.set_title(f"Property inference θ = {ctx.pairs[0][0]} vs {ctx.pairs[0][1]}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        figs.append(Figure("attack_accuracy", fig, "attack accuracy before and after the mechanism"))
        plt.close(fig)
    return figs


def release_sections(
    ctx: PublicContext, attack_rows: list[dict[str, Any]] | None = None, *, figures: bool = True
) -> list[Section]:
    """Markdown sections of the release report (``figures=False``: no figure references, for stdout)."""
    doc = ctx.payload
    spec = doc["spec"]
    g = doc["guarantee"]
    noise = doc["noise"]
    figures = figures and ctx.public_model
    sections: list[Section] = []
    if doc["warnings"]:
        body = "\n\n".join(f"**Warning:** {w}." for w in doc["warnings"])
        if doc["data_dependent"]:
            body += "\n\nData-dependent fields of `release.json`: " + ", ".join(f"`{f}`" for f in doc["data_dependent"])
        sections.append(Section("Read this first", body))
    rows = [{"statistic": s["name"], "spec": s["spec"], "released value": repr(s["value"]),
             "noise std": s["noise_std"]} for s in doc["statistics"]]
    pairs = ", ".join(f"{a} and {b}" for a, b in spec["pairs"])
    if noise["grid"] is None:
        note = ("Released **without noise** (Theorem 5.4): these are the statistics themselves, which the guarantee "
                "below covers as they are.")
    else:
        note = (f"Every released value is a multiple of the grid g = 2^{noise['grid_log2']} = {noise['grid']!r}: the "
                "noise was drawn exactly on it (see Noise). The true values are not shown.")
    summary = (f"Released {len(rows)} statistic(s) with **{doc['mechanism_label']}**, hiding the share of records "
               f"with `{spec['protect']}` between {pairs}.\n\n"
               + markdown_table(rows, ["statistic", "spec", "released value", "noise std"], digits=4) + "\n" + note)
    sections.append(Section("Release", summary))
    guar = (f"({g['epsilon']:.4g}, {g['delta']:.3g})-{g['framework']} for Ψ = {[tuple(p) for p in spec['pairs']]} "
            f"(target ({spec['epsilon']:g}, {spec['delta']:g})), by {g['theorem']}.\n\n"
            "The guarantee rests on these assumptions:\n\n" + "\n".join(f"- {a}" for a in g["assumptions"]))
    if g.get("notes"):
        guar += "\n\nNotes:\n\n" + "\n".join(f"- {n}" for n in g["notes"])
    if doc["report"]["correction"]:
        guar += f"\n\nCorrection applied: {doc['report']['correction']}."
    sections.append(Section("Guarantee", guar))
    randomness = ("fresh entropy from the operating system, drawn for this release only" if doc["randomness"] == "os"
                  else "**a seeded generator (--seed): not private**")
    if noise["grid"] is None:
        nz = "No noise is added (Theorem 5.4)."
    else:
        nz = (f"Noise {noise['kind']} ({'in a rotated orthonormal basis' if noise['basis'] == 'rotated' else 'per statistic'}), "
              f"expected L2 error E||Z||₂ = {noise['expected_l2_error']:.4g}; randomness: {randomness}. "
              f"Sampler: {noise['sampler']}: the output has exactly the law of the ideal noisy statistics rounded to "
              f"the grid g = {noise['grid']!r}, whatever the statistics are, so no floating-point rounding pattern "
              "reveals them (Mironov 2012).")
        if noise.get("theorem_5_7"):
            t = noise["theorem_5_7"]
            nz += (f"\n\nTheorem 5.7 noise Lap({noise['extra_laplace_scale']:.6g}) per statistic uses W + m·g = "
                   f"{t['W_with_grid']:.6g} instead of W = {t['W']:.6g}, paying for the grid rounding of the first stage.")
    sections.append(Section("Noise", nz))
    mod = doc["report"]["modelling"]
    sections.append(Section("How f_θ was modelled", mod["note"] + (
        f"\n\n{mod['samples_per_theta']} datasets were sampled per θ." if mod["samples_per_theta"] else ""),
        ["f_theta"] if figures else []))
    diag = doc["report"].get("diagnostics")
    if diag is not None:
        tests = markdown_table([{"assumption": k.replace("_", " "), "holds": "yes" if t["holds"] else "rejected",
                                 "adjusted p": t["p_value"], "test": t["detail"]} for k, t in diag["tests"].items()],
                               ["assumption", "holds", "adjusted p", "test"])
        sections.append(Section("Assumption diagnostics", (
            f"Tests at level α = {diag['alpha']} on the public model (not rejecting is not a proof).\n\n{tests}\n"
            f"Gaps paid for by the corrections: translation W = {diag['translation_gap_W']:.4g}, "
            f"Gaussian W = {diag['gaussian_gap_W']:.4g} (Thm 5.7, L1 W∞ estimates), divergence λ = "
            f"{diag['divergence_gap_lambda']:.4g} at η = {diag['eta']:.3g} (Thm 5.6).")))
    cand_rows = [{"mechanism": c["label"],
                  "status": "chosen" if c["mechanism"] == doc["mechanism"] else ("kept" if c["kept"] else "rejected"),
                  "expected L2 error": c["expected_l2_error"] if c["kept"] else None,
                  "why": (c["correction"] or c["reason"]) if c["kept"] else c["reason"]}
                 for c in doc["report"]["candidates"]]
    sections.append(Section(
        "Mechanism choice",
        "Every applicable mechanism was calibrated for the target; those whose guarantee holds (directly or after a "
        "Theorem 5.6/5.7 correction) were kept, and the smallest expected error won.\n\n"
        + markdown_table(cand_rows, ["mechanism", "status", "expected L2 error", "why"]),
        ["error_vs_epsilon"] if figures else []))
    if attack_rows is not None:
        sections.append(Section(
            "Attacks before and after",
            "Accuracy of property-inference attacks distinguishing the first pair, on datasets drawn from the model "
            "(5 repetitions × 100 test datasets; see `distpriv audit` for a full audit).\n\n"
            + markdown_table(attack_rows, ["setting", "meta-classifier", "adaptive", "likelihood-ratio"]),
            ["attack_accuracy"] if figures else [],
        ))
    comp = doc.get("composition")
    if comp is not None:
        cg = comp["guarantee"]
        sections.append(Section(
            "Composition with earlier releases",
            f"Composed by Chen & Ohrimenko Prop. {comp['proposition']}: total ({cg['epsilon']:.4g}, {cg['delta']:.3g}) "
            f"over {comp['releases']} releases.\n\n" + "\n".join(f"- {a}" for a in cg["assumptions"][-2:]),
        ))
    return sections
