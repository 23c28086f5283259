"""Report content for ``distpriv release`` and ``distpriv audit``: Markdown sections and figures.

Figures: the f_θ fits (histograms of the sampled query values per θ with the
Gaussian fit; centred on the pooled mean when f_θ was modelled from the data
itself, so the report does not show the data's statistics), expected error vs ε
for every mechanism (:func:`error_curves`), and attack accuracy before/after
the mechanism.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from .. import attacks, relaxed
from ..errors import DistPrivError
from ..experiments._common import markdown_table
from ..report import Figure, Section
from .audit import AuditResult
from .core import ReleaseResult
from .selection import evaluate_candidate

__all__ = ["attack_summary", "audit_sections", "error_curves", "release_figures", "release_sections"]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def error_curves(result: ReleaseResult, factors: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)) -> dict[str, list[float | None]]:
    """Expected L2 error of every candidate at ε × ``factors`` (same diagnostics; η and λ recomputed per ε)."""
    prep = result.prepared
    spec = prep.spec
    diag = result.selection.diagnostics
    model = prep.modelling.model
    labs = list(dict.fromkeys(v for pr in spec.pairs for v in pr))
    pooled = diag.pooled_model.covariance(labs[0])
    out: dict[str, list[float | None]] = {"epsilon": [spec.epsilon * f for f in factors]}
    names = [c.name for c in result.selection.candidates if c.name not in ("dp-laplace", "dp-gauss")]
    for nm in names:
        out[nm] = []
    for eps in out["epsilon"]:
        assert eps is not None
        eta = spec.delta / (2.0 * (1.0 + math.exp(eps)))
        try:
            lam = max(relaxed.approx_max_divergence_gap(model.samples(lab), model.mean(lab), pooled, eta) for lab in labs)
        except DistPrivError:
            lam = math.inf
        d = replace(diag, eta=eta, divergence_lambda=float(lam))
        for nm in names:
            c = evaluate_candidate(nm, model, list(spec.pairs), d, epsilon=eps, delta=spec.delta,
                                   calibration=spec.calibration, sensitivities=prep.sensitivities, n=prep.modelling.n)
            out[nm].append(c.expected_l2_error if c.kept and math.isfinite(c.expected_l2_error) else None)
    return out


def attack_summary(result: ReleaseResult, *, reps: int = 5, n_datasets: int = 100) -> list[dict[str, Any]]:
    """Attack accuracy without and with the chosen mechanism on the first pair (fresh sampled datasets)."""
    prep = result.prepared
    a, b = prep.spec.pairs[0]
    g = np.random.default_rng(prep.spec.seed + 1)
    data = attacks.sample_attack_data(prep.modelling.sampler, a, b, n_shadow=n_datasets, n_test=n_datasets, reps=reps, rng=g)
    mech = result.chosen if result.chosen.base is not None or result.chosen.extra_laplace_scale > 0 else None
    gauss = prep.modelling.model.to_gaussian()
    rows = []
    for label, defence in (("before (no noise)", None), (f"after ({result.chosen.label})", mech)):
        rows.append({
            "setting": label,
            "meta-classifier": attacks.meta_classifier_attack(data, defence, rng=g).accuracy,
            "adaptive": (attacks.adaptive_attack(data, defence, rng=g).accuracy if defence is not None
                         else attacks.meta_classifier_attack(data, None, rng=g).accuracy),
            "likelihood-ratio": attacks.likelihood_ratio_attack(data, defence, means=gauss, rng=g).accuracy,
        })
    return rows


def release_figures(result: ReleaseResult, curves: dict[str, list[float | None]], attack_rows: list[dict[str, Any]]) -> list[Figure]:
    """The three figures of the release report."""
    plt = _plt()
    prep = result.prepared
    model = prep.modelling.model
    names = prep.spec.names
    labs = list(model.labels)
    centred = prep.modelling.source == "data"
    pooled_mean = np.mean([model.mean(lab) for lab in labs], axis=0)
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
            x = model.samples(lab)[:, k] - (pooled_mean[k] if centred else 0.0)
            ax.hist(x, bins=30, density=True, alpha=0.45, color=f"C{i}", label=f"θ = {lab}")
            mu, sd = float(x.mean()), float(x.std(ddof=1))
            if sd > 0:
                t = np.linspace(x.min(), x.max(), 200)
                ax.plot(t, np.exp(-0.5 * ((t - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi)), lw=1.2, color=f"C{i}")
        ax.set_title(names[k] + (" (centred)" if centred else ""), fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("f_θ: sampled query values per θ with Gaussian fits")
    fig.tight_layout()
    figs = [Figure("f_theta", fig, "f_θ per statistic: histograms of sampled datasets and Gaussian fits"
                   + (" (centred on the pooled mean: the data's statistics are not shown)" if centred else ""))]
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    eps = curves["epsilon"]
    for nm, ys in curves.items():
        if nm == "epsilon":
            continue
        pts = [(e, y) for e, y in zip(eps, ys, strict=True) if y is not None and y > 0]
        if pts:
            label = next(c.label for c in result.selection.candidates if c.name == nm)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", lw=1.5 if nm == result.chosen.name else 0.9,
                    label=label + (" (chosen)" if nm == result.chosen.name else ""))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(eps, [f"{e:g}" for e in eps])
    ax.minorticks_off()
    ax.set_xlabel("ε")
    ax.set_ylabel("expected L2 error E||Z||₂")
    ax.set_title(f"Expected error vs ε (δ = {prep.spec.delta:g}); valid mechanisms only")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    figs.append(Figure("error_vs_epsilon", fig, "expected L2 error of each mechanism whose guarantee holds, vs ε"))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    kinds = ["meta-classifier", "adaptive", "likelihood-ratio"]
    width = 0.38
    xs = np.arange(len(kinds))
    for i, row in enumerate(attack_rows):
        ax.bar(xs + (i - 0.5) * width, [row[k] for k in kinds], width, label=row["setting"])
    e = math.exp(prep.spec.epsilon)
    ax.axhline((e + prep.spec.delta) / (1 + e), color="k", ls="--", lw=1, label="max allowed by (ε, δ)")
    ax.axhline(0.5, color="grey", ls=":", lw=1)
    ax.set_xticks(xs, kinds)
    ax.set_ylim(0.4, 1.0)
    ax.set_ylabel("attack accuracy")
    ax.set_title(f"Property inference θ = {prep.spec.pairs[0][0]} vs {prep.spec.pairs[0][1]}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    figs.append(Figure("attack_accuracy", fig, "attack accuracy before and after the mechanism"))
    plt.close(fig)
    return figs


def release_sections(
    result: ReleaseResult, attack_rows: list[dict[str, Any]] | None = None, *, figures: bool = True
) -> list[Section]:
    """Markdown sections of the release report (``figures=False``: no figure references, for stdout)."""
    prep = result.prepared
    spec = prep.spec
    out = result.to_json()
    g = result.guarantee
    stats_rows = [{"statistic": s["name"], "spec": s["spec"], "released value": s["value"], "noise std": s["noise_std"]}
                  for s in out["statistics"]]
    summary = (
        f"Released {len(stats_rows)} statistic(s) of `{prep.data.path.name}` ({prep.data.rows} rows) with "
        f"**{result.chosen.label}**, hiding the share of records with `{spec.protect}` between "
        + ", ".join(f"{a} and {b}" for a, b in spec.pairs) + ".\n\n"
        + markdown_table(stats_rows, ["statistic", "spec", "released value", "noise std"], digits=6)
        + f"\nExpected L2 error E||Z||₂ = {result.chosen.expected_l2_error:.4g}. True values are not shown."
    )
    guar = (
        f"({g.epsilon:.4g}, {g.delta:.3g})-{g.framework} for Ψ = {[tuple(p) for p in spec.pairs]} "
        f"(target ({spec.epsilon:g}, {spec.delta:g})), by {g.theorem}.\n\n"
        "The guarantee rests on these assumptions:\n\n" + "\n".join(f"- {a}" for a in g.assumptions)
    )
    if result.chosen.correction:
        guar += f"\n\nCorrection applied: {result.chosen.correction}."
    m = prep.modelling
    modelling = m.note + (
        f"\n\n{m.samples} datasets were sampled per θ; protected records per dataset: "
        + ", ".join(f"θ = {k}: {v}" for k, v in m.counts.items()) + "."
    )
    diag = result.selection.diagnostics
    tests = markdown_table([{"assumption": k.replace("_", " "), "holds": "yes" if t.holds else "rejected",
                             "adjusted p": t.p_value, "test": t.detail} for k, t in diag.tests.items()],
                           ["assumption", "holds", "adjusted p", "test"])
    diagnostics = (
        f"Tests at level α = {diag.alpha} (not rejecting is not a proof).\n\n{tests}\n"
        f"Gaps paid for by the corrections: translation W = {diag.translation_w:.4g}, "
        f"Gaussian W = {diag.gaussian_w:.4g} (Thm 5.7, L1 W∞ estimates), divergence λ = {diag.divergence_lambda:.4g} "
        f"at η = {diag.eta:.3g} (Thm 5.6)."
    )
    cand_rows = [{"mechanism": c.label, "status": "chosen" if c is result.chosen else ("kept" if c.kept else "rejected"),
                  "expected L2 error": c.expected_l2_error if c.kept else None,
                  "why": (c.correction or c.reason) if c.kept else c.reason} for c in result.selection.candidates]
    choice = ("Every applicable mechanism was calibrated for the target; those whose guarantee holds (directly or "
              "after a Theorem 5.6/5.7 correction) were kept, and the smallest expected error won.\n\n"
              + markdown_table(cand_rows, ["mechanism", "status", "expected L2 error", "why"]))
    sections = [
        Section("Release", summary),
        Section("Guarantee", guar),
        Section("How f_θ was modelled", modelling, ["f_theta"] if figures else []),
        Section("Assumption diagnostics", diagnostics),
        Section("Mechanism choice", choice, ["error_vs_epsilon"] if figures else []),
    ]
    if attack_rows is not None:
        sections.append(Section(
            "Attacks before and after",
            "Accuracy of property-inference attacks distinguishing the first pair, on fresh sampled datasets "
            "(5 repetitions × 100 test datasets; see `distpriv audit` for a full audit).\n\n"
            + markdown_table(attack_rows, ["setting", "meta-classifier", "adaptive", "likelihood-ratio"]),
            ["attack_accuracy"] if figures else [],
        ))
    if result.composition is not None:
        c = result.composition
        sections.append(Section(
            "Composition with earlier releases",
            f"Composed by Chen & Ohrimenko Prop. {c.proposition}: total ({c.guarantee.epsilon:.4g}, "
            f"{c.guarantee.delta:.3g}) over {len(c.releases) + 1} releases.\n\n"
            + "\n".join(f"- {a}" for a in c.guarantee.assumptions[-1:]),
        ))
    return sections


def audit_sections(mech_label: str, audit: AuditResult) -> list[Section]:
    """Markdown sections of the audit report."""
    rows = [{"attack": r.attack, "pair": f"{r.pair[0]} vs {r.pair[1]}", "accuracy": r.accuracy,
             "95% interval": f"[{r.ci[0]:.3f}, {r.ci[1]:.3f}]", "undefended": r.accuracy_undefended,
             "ε lower bound": r.epsilon_lower_bound} for r in audit.rows]
    verdict = ("consistent with the claim" if audit.consistent
               else "**the claim is refuted**: an attack does better than (ε, δ) allows")
    body = (
        f"Mechanism **{mech_label}**, claimed ({audit.claimed_epsilon:g}, {audit.claimed_delta:g}); the claim allows "
        f"a balanced accuracy of at most (e^ε + δ)/(1 + e^ε) = {audit.max_accuracy_allowed:.4f}.\n\n"
        f"Best attack: **{audit.best.attack}**, empirical ε ≥ **{audit.empirical_epsilon:.4g}** with confidence "
        f"{audit.confidence:g} (one-sided Clopper–Pearson, Bonferroni over {len(audit.rows)} attack/pair tests): "
        f"{verdict}.\n\n" + markdown_table(rows, ["attack", "pair", "accuracy", "95% interval", "undefended", "ε lower bound"])
    )
    method = (
        "For a balanced test, (ε, δ)-distribution privacy implies accuracy a ≤ (e^ε + δ)/(1 + e^ε), i.e. "
        "ε ≥ ln((a − δ)/(1 − a)). The lower confidence bound on a over all test releases gives the lower bound on ε. "
        f"{audit.reps} repetitions, {audit.n_shadow} shadow and {audit.n_test} test datasets each."
    )
    return [Section("Audit", body), Section("Method", method)]

