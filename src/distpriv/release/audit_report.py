"""Rendering audits: Markdown sections, ROC figures and the progress bar of ``distpriv audit``.

Every figure is :func:`distpriv.auditing.plot_audit`: the ROC of the evaluation
releases on log–log axes (FPR and TPR both logarithmic, so the low-FPR tail where
the bound is decided is visible), the region the claim allows,

    TPR <= min(e^ε FPR + δ, 1 − e^{−ε}(1 − δ − FPR))

(Chen & Ohrimenko Definition 3.2 applied to the test's rejection region and to its
complement), and the audit's bound TPR = e^{ε_lower} FPR + δ — the line through the
kept test's (FPR_hi, TPR_lo). Labels are plain text (no mathtext: ``$`` is escaped).

The content is computed from the audit reports only: counts and rates of releases
drawn from the auditor's model, never from the private table — except with
``--model-from-data``, where the model *is* the private rows (``distpriv release
--audit`` refuses that; ``distpriv audit`` says so in its scope).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..auditing import AuditReport
from ..formatting import markdown_table
from ..report import Figure, Section
from .audit import ReleaseAudit, fmt_eps

_COLUMNS = ["pair", "ε lower bound", "claimed ε", "δ", "exact ε", "refuted", "trials", "scorer"]


def _label(x: Any) -> str:
    """A θ label for Markdown: numbers as given, anything else with Markdown specials escaped."""
    if isinstance(x, (int, float)):
        return repr(x) if isinstance(x, float) else str(x)
    out = str(x)
    for ch in "\\`*_{}[]<>()#+-!|$":
        out = out.replace(ch, "\\" + ch)
    return out


def pair_rows(reports: Sequence[AuditReport]) -> list[dict[str, Any]]:
    """One table row per audited pair."""
    return [{
        "pair": f"{_label(r.pair[0])} vs {_label(r.pair[1])}",
        "ε lower bound": fmt_eps(r.epsilon_lower),
        "claimed ε": fmt_eps(float(r.claimed.epsilon)),
        "δ": f"{r.delta:.3g}",
        "exact ε": fmt_eps(r.exact_epsilon),
        "refuted": "**yes**" if r.refuted else "no",
        "trials": r.trials,
        "scorer": r.scorer,
    } for r in reports]


def _figure_name(i: int) -> str:
    return f"audit_roc_{i + 1}"


def audit_figures(reports: Sequence[AuditReport], prefix: str = "") -> list[Figure]:
    """One ROC figure per pair (:func:`distpriv.auditing.plot_audit`), named ``audit_roc_<k>``."""
    figs = []
    for i, r in enumerate(reports):
        fig = r.plot()
        figs.append(Figure(prefix + _figure_name(i), fig,
                           f"ROC of the audit of pair {r.pair[0]} vs {r.pair[1]} on log axes, the claimed "
                           f"(ε, δ) region and the bound ε ≥ {fmt_eps(r.epsilon_lower)}"))
    return figs


def method_text(reports: Sequence[AuditReport], confidence: float) -> str:
    """How the bound is computed and what it assumes (for every audit report)."""
    if not reports:
        return ""
    r = reports[0]
    bonf = (f" Each of the {len(reports)} pairs is audited at confidence {r.confidence:.4g} (Bonferroni), so an "
            f"honest claim is refuted on any pair with probability at most {1 - confidence:.3g}."
            if len(reports) > 1 else "")
    return (
        "(ε, δ) for a pair (θ0, θ1) means every test on one release has TPR ≤ e^ε · FPR + δ (and the same with the "
        "secrets swapped), so a test with rates (FPR, TPR) shows ε ≥ ln((TPR − δ)/FPR). The audit draws "
        f"{r.trials} releases per secret from the auditor's model, scores them with the strongest attacker "
        "available (the exact likelihood ratio where the output law is known, else a classifier trained on a "
        "separate split), chooses the threshold on a selection split "
        f"({r.n_selection} releases per secret) and evaluates it on the remaining {r.n_evaluation}, bounding FPR "
        "from above and TPR from below by one-sided Clopper–Pearson intervals. The bound holds with probability "
        f"≥ {r.confidence:.4g} per pair; it is a lower bound, so a value below the claim is consistent with it but "
        f"does not prove it.{bonf} The figures show the ROC on log–log axes, the claimed region "
        "TPR ≤ min(e^ε FPR + δ, 1 − e^−ε (1 − δ − FPR)) and the dashed line TPR = e^ε_lower · FPR + δ "
        "(reference: distpriv.auditing; Kairouz, Oh & Viswanath 2015; Nasr et al. 2021)."
    )


def _verdict(refuted: bool) -> str:
    return ("**the claim is refuted**: an attack does better than (ε, δ) allows" if refuted
            else "consistent with the claim (no refutation)")


def audit_sections(
    audit: ReleaseAudit,
    scope: str | None = None,
    side_channel: dict[str, Any] | None = None,
    *,
    figures: bool = True,
    prefix: str = "",
) -> list[Section]:
    """Sections of the audit report (``figures=False``: no figure references, for stdout)."""
    g = audit.guarantee
    body = (
        f"Mechanism **{audit.label}** (`{audit.mechanism}`), claimed ({g.epsilon:.4g}, {g.delta:.3g}); auditor's "
        f"model: {audit.model_source}. Largest lower bound over the pairs: ε ≥ **{fmt_eps(audit.epsilon_lower)}** "
        f"— {_verdict(audit.refuted)}.\n\n" + markdown_table(pair_rows(audit.reports), _COLUMNS)
    )
    notes = [f"- {_label(r.pair[0])} vs {_label(r.pair[1])}: exact ε from {r.exact_note}"
             for r in audit.reports if r.exact_epsilon is not None]
    if notes:
        body += "\nExact ε under the auditor's model:\n\n" + "\n".join(notes) + "\n"
    figs = [prefix + _figure_name(i) for i in range(len(audit.reports))] if figures else []
    out = []
    if scope:
        out.append(Section("Scope", scope))
    out += [Section("Audit", body, figs), Section("Audit method", method_text(audit.reports, audit.confidence))]
    if side_channel is not None:
        out.append(Section("Side-channel check", side_channel_text(side_channel)))
    return out


def side_channel_text(side: dict[str, Any]) -> str:
    """The side-channel check's section: what was compared, the verdict, every difference and the run times."""
    from ..report import md_code

    status = "**passed**" if side["passed"] else "**failed**"
    txt = f"{side['description']}\n\nResult: {status}. "
    if side["differences"]:
        txt += "Public outputs differed beyond what may differ in:\n\n" + "\n".join(
            f"- {md_code(d)}" for d in side["differences"]) + "\n"
    else:
        txt += "The public outputs were identical apart from what may differ.\n"
    if side["data_dependent_differences"]:
        txt += ("\nData-dependent differences (declared in `data_dependent`; outside the guarantee):\n\n"
                + "\n".join(f"- {md_code(d)}" for d in side["data_dependent_differences"]) + "\n")
    t = side.get("timing") or {}
    if t.get("seconds_theta0"):
        times = ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(t["seconds_theta0"], t["seconds_theta1"], strict=True))
        txt += (f"\nRun times θ0/θ1 in seconds, interleaved: {times}; median paired difference "
                f"{t['median_relative_difference']:+.1%}, fastest runs {t['fastest_relative_difference']:+.1%} "
                + (f"(compared; threshold ±{t['threshold']:.0%})." if t["compared"]
                   else "(not compared: too few runs).") + "\n")
    return txt


def local_audit_sections(report: AuditReport, description: str, *, figures: bool = True) -> list[Section]:
    """Sections of ``distpriv audit-local``'s report: the bound beside the exact ε of the finite mechanism."""
    g = report.claimed
    exact = report.exact_epsilon
    body = (
        f"{description}. Claimed ({g.epsilon:.4g}, {g.delta:.3g})-DistP for the pair; exact ε at δ = "
        f"{report.delta:.3g}: **{fmt_eps(exact)}** ({report.exact_note}); empirical lower bound: "
        f"**{fmt_eps(report.epsilon_lower)}** — {_verdict(report.refuted)}.\n\n"
        + markdown_table(pair_rows([report]), _COLUMNS)
    )
    if exact is not None and math.isfinite(exact) and exact > 0:
        body += f"\nThe bound reaches {report.epsilon_lower / exact:.0%} of the exact ε.\n"
    return [Section("Audit", body, [_figure_name(0)] if figures else []),
            Section("Audit method", method_text([report], report.confidence))]


@contextmanager
def audit_progress(description: str) -> Iterator[Callable[[float], None]]:
    """A rich progress bar on stderr when it is a terminal (silent otherwise); yields ``update(fraction)``."""
    from ..formatting import progress

    steps = 1000
    with progress(description, steps) as advance:
        done = [0]

        def update(fraction: float) -> None:
            target = min(steps, max(0, int(round(fraction * steps))))
            if target > done[0]:
                advance(target - done[0])
                done[0] = target

        yield update
