"""Rendering Chen & Ohrimenko results: Markdown sections, matplotlib figures and the written report."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...formatting import dumps, markdown_table
from .settings import PROPERTY_LABELS, STUDY, _other


def chen_ohrimenko_markdown(result: dict[str, Any]) -> str:
    """A Markdown section for one table or figure result."""
    lines: list[str] = []
    if "table" in result:
        lines.append(f"## Table {result['table']}: {result['title']}\n")
        cal = result["settings"]["calibration"]
        other = _other(cal)
        if result["table"] == 3:
            cols = ["mechanism", "epsilon", "l2_error", "ci_low", "ci_high", "paper", "difference", "l2_error_expected",
                    f"l2_error_{other}", "exact_saving"]
            rows = [{**r, "epsilon": f"{r['epsilon']:g}"} for r in result["rows"]]
        else:
            cols = ["mechanism", "epsilon", "delta", "attack_accuracy", "ci_low", "ci_high", "paper", "difference",
                    "adaptive_accuracy", "likelihood_ratio_accuracy", "bayes_optimal_accuracy",
                    f"attack_accuracy_{other}", f"bayes_optimal_accuracy_{other}", "noise_std_ratio_exact"]
            rows = [{**r, "epsilon": "–" if r["epsilon"] is None else f"{r['epsilon']:g}",
                     "delta": "–" if r["delta"] is None else f"{r['delta']:g}"} for r in result["rows"]]
        lines.append(f"Calibration of the main columns: **{cal}**; `*_{other}` columns use the {other} calibration.\n")
        if result["table"] == 3:
            mode = ("**paper settings** (DirM (L) scaled by Δ_E,1/ε as printed)" if result["settings"].get("paper_settings")
                    else "**corrected** (DirM (L) scaled by Δ_E,2/ε as Thm 5.3 states; `--paper-settings` for the printed arithmetic)")
            lines.append(f"Arithmetic: {mode}.\n")
        lines.append(markdown_table(rows, cols))
        if result.get("differences"):
            lines.append("\n### What differs from the paper's arithmetic\n")
            lines.append("`paper`: printed; `paper_arithmetic`: with `--paper-settings`; `corrected`: the default.\n")
            lines.append(markdown_table(result["differences"], ["mechanism", "epsilon", "quantity", "paper",
                                                                "paper_arithmetic", "corrected", "why"]))
    else:
        lines.append(f"## Figure {result['figure']}: {result['title']}\n")
        fig = result["figure"]
        if fig in (2, 3):
            for panel, data in result["panels"].items():
                xs = data["epsilons"] if fig == 2 else data["delta_ps"]
                xname = "epsilon" if fig == 2 else "delta_p"
                rows = [{xname: f"{x:g}", **{lab: s["l2_error"][i] for lab, s in data["series"].items()}} for i, x in enumerate(xs)]
                if fig == 2:
                    heading = data.get("title", f"({panel}) {data['property']}, Δp = {data['delta_p']}")
                else:
                    heading = (f"({panel}) {data['property']}; DauM (G) < DP (G) up to Δp = {data['crossover']} "
                               f"(paper: {data['paper_crossover']})")
                lines.append(f"### {heading}\n")
                lines.append(markdown_table(rows))
        elif fig == 4:
            a = result["panels"]["a"]
            rows = [{"delta_p": f"{d:g}", **{p: a["series"][p]["attack_accuracy"][i] for p in a["series"]}} for i, d in enumerate(a["delta_ps"])]
            lines.append("### (a) no defence\n")
            lines.append(markdown_table(rows))
            for panel in ("b", "c"):
                data = result["panels"][panel]
                rows = [{"epsilon": f"{e:g}", **{lab: s["attack_accuracy"][i] for lab, s in data["series"].items()}} for i, e in enumerate(data["epsilons"])]
                lines.append(f"### ({panel}) {data['property']}, Δp = {data['delta_p']}\n")
                lines.append(markdown_table(rows))
        elif fig == 5:
            rows = []
            for c in result["components"]:
                for p, fit in c["fits"].items():
                    rows.append({"statistic": c["statistic"], "p_I": p, "mean": fit["mean"], "variance": fit["variance"], "ks_distance": fit["ks_distance"]})
            lines.append(markdown_table(rows))
            for k, v in result.get("paper_comparison", {}).items():
                lines.append(f"- {k}: ours {v['ours']:.2f}, paper {v['paper']}\n")
    if result.get("notes"):
        lines.append("\nNotes:\n")
        lines.extend(f"- {n}\n" for n in result["notes"])
    return "\n".join(lines) + "\n"


ZERO_NOTE = ("▼ / ▽ at the bottom: zero error — the fitted model's own uncertainty already gives the guarantee "
             "(Thm 5.4: no noise is added), which a log axis cannot show")


def _mark_zeros(ax: Any, xs: Sequence[float], ys: Sequence[float], color: Any, filled: bool) -> bool:
    """Draw zero-error points as triangles on the bottom edge of a log-scale axis; True if there were any.

    Filled triangles (main calibration) sit on the edge, hollow ones (the other calibration) just above.
    """
    from matplotlib.transforms import blended_transform_factory

    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    zero = y == 0
    if not zero.any():
        return False
    ax.plot(x[zero], np.full(int(zero.sum()), 0.03 if filled else 0.085), ls="none", marker="v", ms=7, color=color,
            mfc=color if filled else "white", transform=blended_transform_factory(ax.transData, ax.transAxes),
            clip_on=False, zorder=5)
    return True


def plot(result: dict[str, Any], out: Path) -> list[Path]:
    """Write the PNG of a figure result into ``out`` (see :func:`build_figure`); tables have none."""
    fig = build_figure(result)
    if fig is None:
        return []
    import matplotlib.pyplot as plt

    path = out / f"chen_ohrimenko_figure{result['figure']}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def build_figure(result: dict[str, Any]) -> Any:
    """The matplotlib Figure of a figure result (``None`` for tables), drawn with the Agg backend.

    Every figure has a title, panel labels (a), (b), ... with distinct titles and a
    legend; zero-error points (no noise needed, Thm 5.4), which vanish from a
    log axis, are drawn as triangles on the bottom edge and explained below the panels.
    """
    if "figure" not in result:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import NullFormatter

    fig_no = result["figure"]
    settings = result["settings"]

    def pos(values: Sequence[float]) -> NDArray[np.float64]:
        """Zero error cannot be drawn on a log axis: leave a gap (marked by :func:`_mark_zeros`)."""
        v = np.asarray(values, dtype=float)
        return np.where(v > 0, v, np.nan)

    caption: list[str] = []
    handles: list[Any] = []
    subtitle = ""
    if fig_no in (2, 3):
        cal = settings.get("calibration", "classic")
        other_cal = _other(cal)
        other = "l2_error_" + other_cal
        n_panels = len(result["panels"])
        fig, axes = plt.subplots(1, n_panels, figsize=(5.2 * n_panels, 4.6))
        colours: dict[str, Any] = {}
        zeros = {"main": False, "other": False}
        for ax, (panel, data) in zip(np.atleast_1d(axes), result["panels"].items(), strict=True):
            xs = data["epsilons"] if fig_no == 2 else data["delta_ps"]
            for label, s in data["series"].items():
                dp_baseline = label.startswith("DP")
                (line,) = ax.plot(xs, pos(s["l2_error"]), marker=None if dp_baseline else "o", ms=3,
                                  ls="--" if dp_baseline else "-", color=colours.get(label), label=label)
                colours.setdefault(label, line.get_color())
                zeros["main"] |= _mark_zeros(ax, xs, s["l2_error"], colours[label], True)
                if fig_no == 2 and "(G)" in label:
                    ax.plot(xs, pos(s[other]), ls=":", color=colours[label])
                    zeros["other"] |= _mark_zeros(ax, xs, s[other], colours[label], False)
            if fig_no == 2:
                ax.set(xscale="log", yscale="log", xlabel="ε", ylabel="L2 error",
                       title=data.get("title", f"({panel}) {data['property']}, Δp = {data['delta_p']}"))
            else:
                ax.set(yscale="log", xlabel="Δp", ylabel="L2 error",
                       title=f"({panel}) {PROPERTY_LABELS.get(data['property'], data['property'])}: "
                             f"Gaussian variants vs DP")
            ax.title.set_fontsize(10)
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.grid(alpha=0.3)
        handles = [Line2D([], [], color=c, marker="o" if not lab.startswith("DP") else None, ms=3,
                          ls="--" if lab.startswith("DP") else "-", label=lab) for lab, c in colours.items()]
        if fig_no == 2:
            handles += [Line2D([], [], color="grey", ls="-", label=f"solid: {cal} calibration"),
                        Line2D([], [], color="grey", ls=":", label=f"dotted: {other_cal} calibration (Gaussian)")]
            subtitle = f"δ = {settings['delta']:g}, {settings['reps']} repetitions"
            if settings.get("paper_settings"):
                subtitle += "; DirM (L) with Δ_E,1/ε (paper settings)"
        else:
            handles.append(Line2D([], [], color="grey", ls="--", label="dashed: DP baselines (no distribution privacy)"))
            subtitle = f"{settings['reps']} repetitions, {settings.get('calibration', 'classic')} calibration"
        if zeros["main"]:
            handles.append(Line2D([], [], ls="none", marker="v", color="grey", label="zero error (Thm 5.4)"))
        if zeros["other"]:
            handles.append(Line2D([], [], ls="none", marker="v", mfc="white", color="grey",
                                  label=f"zero error, {other_cal} calibration"))
        if zeros["main"] or zeros["other"]:
            caption.append(ZERO_NOTE)
    elif fig_no == 4:
        fig, axes = plt.subplots(1, 3, figsize=(15.6, 4.6))
        a = result["panels"]["a"]
        for prop, s in a["series"].items():
            axes[0].plot(a["delta_ps"], s["attack_accuracy"], marker="o", ms=3, label=PROPERTY_LABELS.get(prop, prop))
            axes[0].fill_between(a["delta_ps"], s["ci_low"], s["ci_high"], alpha=0.2)
        axes[0].fill_between([], [], [], color="grey", alpha=0.2, label="95% interval")
        axes[0].set(xlabel="Δp", ylabel="attack accuracy", title="(a) no defence: accuracy vs Δp", ylim=(0.45, 1.02))
        axes[0].legend(fontsize=8, loc="lower right")
        colours = {}
        for ax, panel in zip(axes[1:], ("b", "c"), strict=True):
            data = result["panels"][panel]
            for label, s in data["series"].items():
                (line,) = ax.plot(data["epsilons"], s["attack_accuracy"], marker="o", ms=3, color=colours.get(label),
                                  label=label)
                colours.setdefault(label, line.get_color())
            ax.axhline(0.5, color="grey", lw=0.8)
            ax.set(xscale="log", xlabel="ε", ylabel="attack accuracy", ylim=(0.4, 1.02),
                   title=f"({panel}) {PROPERTY_LABELS.get(data['property'], data['property'])}, "
                         f"Δp = {data['delta_p']:g}: defended releases")
        handles = [Line2D([], [], color=c, marker="o", ms=3, label=lab) for lab, c in colours.items()]
        handles.append(Line2D([], [], color="grey", lw=0.8, label="chance (0.5)"))
        axes[1].legend(handles=handles, fontsize=8, loc="upper left")
        axes[2].legend(handles=handles, fontsize=8, loc="upper left")
        handles = []
        for ax in axes:
            ax.grid(alpha=0.3)
        subtitle = (f"δ = {settings['delta']:g}, {settings['reps']} repetitions × {settings['n_test']} test "
                    f"datasets, {settings.get('calibration', 'classic')} calibration")
    else:
        from scipy import stats

        comps = result["components"]
        fig, axes = plt.subplots(1, len(comps), figsize=(4 * len(comps), 4.0))
        colours5 = ("tab:green", "tab:purple")
        for k, (ax, c) in enumerate(zip(np.atleast_1d(axes), comps, strict=True)):
            edges = np.asarray(c["bin_edges"])
            grid = np.linspace(edges[0], edges[-1], 200)
            for (_p, fit), colour in zip(c["fits"].items(), colours5, strict=False):
                width = np.diff(edges)
                dens = np.asarray(fit["histogram"]) / (np.sum(fit["histogram"]) * width)
                ax.bar(edges[:-1], dens, width=width, align="edge", alpha=0.35, color=colour)
                if fit["variance"] > 0:
                    ax.plot(grid, stats.norm.pdf(grid, fit["mean"], math.sqrt(fit["variance"])), color=colour)
            ax.set_title(f"({chr(ord('a') + k)}) {c['statistic']}", fontsize=9)
            ax.set(xlabel=f"value over n = {settings['n']} records", ylabel="density" if k == 0 else None)
        for p, colour in zip(comps[0]["fits"], colours5, strict=False):
            handles += [Patch(color=colour, alpha=0.35, label=f"sampled datasets, p_I = {p}"),
                        Line2D([], [], color=colour, label=f"fitted normal N(μ, σ²), p_I = {p}")]
        subtitle = f"{settings['model_samples']} sampled datasets of n = {settings['n']} records per p_I"
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, 0.06 if caption else 0.0))
    if caption:
        fig.text(0.5, 0.01, "\n".join(caption), ha="center", va="bottom", fontsize=8)
    bottom = (0.12 if handles else 0.0) + (0.05 if caption else 0.0)
    fig.suptitle(f"Chen & Ohrimenko Figure {fig_no} (reproduced): {result['title']}\n{subtitle}", fontsize=11)
    fig.tight_layout(rect=(0.0, bottom, 1.0, 0.96))
    return fig


def write_chen_ohrimenko_report(results: Sequence[dict[str, Any]], out: Path, timing: dict[str, float] | None = None) -> list[Path]:
    """Write figure PNGs, ``chen_ohrimenko.md`` (tables beside the paper, figures embedded) and ``.json``."""
    written: list[Path] = []
    body = ["# Chen & Ohrimenko, Section 6 — reproduction\n"]
    for res in results:
        pngs = plot(res, out)
        written.extend(pngs)
        body.append(chen_ohrimenko_markdown(res))
        body.extend(f"![{p.stem}]({p.name})\n" for p in pngs)
    if timing:
        body.append("## Timing\n")
        body.append(markdown_table([{"item": k, "seconds": v} for k, v in timing.items()]))
    md = out / "chen_ohrimenko.md"
    md.write_text("\n".join(body), encoding="utf-8")
    js = out / "chen_ohrimenko.json"
    js.write_text(dumps({"study": STUDY, "results": list(results), "timing_seconds": timing or {}}), encoding="utf-8")
    return [*written, md, js]
