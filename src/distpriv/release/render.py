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

from .. import attacks
from ..formatting import markdown_table
from ..mechanisms.metadata import CANDIDATES
from ..models import EmpiricalModel
from ..relaxed.diagnose import divergence_gaps
from ..report import Figure, Section, md_code, md_escape
from .assumptions import MIN_BINS, Diagnostics, eta_for
from .public import PublicContext, config_toml, rerun_config
from .selection import MC_ALLOWANCE, RANKED, Candidate, candidate_lower_bound, evaluate_public

_STREAM_ATTACKS = 2


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: Figures show user strings (statistic names, predicates) as plain text: no TeX, no mathtext.
PLAIN_TEXT: Any = {"text.usetex": False, "text.parse_math": False}


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def log_tick_label(value: float) -> str:
    """A log-axis tick as plain text: ``10³``, ``10⁻²`` for powers of ten, else ``{value:g}``.

    matplotlib's default log formatter writes ``$\\mathdefault{10^{3}}$``, which needs mathtext;
    the report draws every string as plain text (:data:`PLAIN_TEXT`), so ticks are written in
    Unicode superscripts instead.
    """
    if not math.isfinite(value) or value <= 0:
        return ""
    e = math.log10(value)
    if abs(e - round(e)) < 1e-9:
        k = int(round(e))
        return f"{10 ** k:g}" if 0 <= k <= 3 else "10" + str(k).translate(_SUPERSCRIPT)
    return f"{value:g}"


def plain_log_formatter() -> Any:
    """A matplotlib tick formatter using :func:`log_tick_label` (no mathtext)."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: log_tick_label(float(v)))


def _gap(value: float | None) -> str:
    """A Theorem 5.7 gap of the diagnostics: ``None`` when no correction needed it (computed on demand, issue 26)."""
    return "not computed (no correction used it)" if value is None else f"{value:.4g}"


#: Key prefix of :func:`error_curves` for the certified lower bounds drawn in place of provable losers' errors.
LOWER_BOUND = "lower bound:"


def _curve_point(c: Candidate) -> float | None:
    return c.expected_l2_error if c.kept and math.isfinite(c.expected_l2_error) else None


def _points_at(names: list[str], done: dict[str, Candidate], ctx: PublicContext, model: Any, d: Diagnostics,
               eps: float) -> tuple[dict[str, float | None], dict[str, float]]:
    """The error of every candidate at ``eps``, except provable losers: (errors, certified lower bounds).

    ``done``: candidates already evaluated at ``eps`` (the selection's own, at the target ε). The others are
    evaluated as the selection ranks them (:func:`~distpriv.release.selection.select_mechanism`, issue 26): the
    candidates without a bound first, then by increasing :func:`~distpriv.release.selection.candidate_lower_bound`;
    a candidate whose certified least error, less :data:`~distpriv.release.selection.MC_ALLOWANCE`, exceeds the
    best error found is not calibrated (its exact accounting is most of a report's work) and its bound is returned
    instead. Every input is public: the public model, Ψ, ε, δ and the diagnostics of the selection.
    """
    kwargs: dict[str, Any] = {"epsilon": eps, "delta": ctx.delta, "calibration": ctx.calibration,
                              "sensitivities": ctx.sensitivities, "n": None if ctx.modelling is None else ctx.modelling.n}
    found = {nm: done[nm] for nm in names if nm in done}
    bounds: dict[str, float] = {}
    for nm in names:
        if nm not in found and nm in RANKED:
            low = candidate_lower_bound(nm, model, list(ctx.pairs), d, **kwargs)
            if low is not None and math.isfinite(low):
                bounds[nm] = low
    order = {nm: i for i, nm in enumerate(names)}
    lower: dict[str, float] = {}
    for nm in sorted((nm for nm in names if nm not in found), key=lambda nm: (bounds.get(nm, -1.0), order[nm])):
        best = min((c.expected_l2_error for c in found.values() if c.kept), default=math.inf)
        if nm in bounds and bounds[nm] * (1.0 - MC_ALLOWANCE) > best:
            lower[nm] = bounds[nm]
            continue
        found[nm] = evaluate_public(nm, model, list(ctx.pairs), d, memo=ctx.modelling is not None
                                    and ctx.modelling.public, **kwargs)  # public inputs only (release.memo)
    return {nm: _curve_point(found[nm]) if nm in found else None for nm in names}, lower


def error_curves(ctx: PublicContext, factors: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)) -> dict[str, list[float | None]]:
    """Expected L2 error of every candidate at ε × ``factors`` (same diagnostics; η and λ recomputed per ε).

    ``out[name]``: the error :func:`~distpriv.release.selection.evaluate_candidate` finds (``None`` where the
    candidate's guarantee does not hold). A candidate that provably loses at an ε — its certified least error
    (:func:`~distpriv.release.selection.candidate_lower_bound`) exceeds the best error found there — is not
    calibrated there (issue 26): ``out[name]`` is ``None`` and ``out[LOWER_BOUND + name]`` holds that certified
    lower bound (``None`` elsewhere), drawn as open markers.
    """
    if ctx.modelling is None or ctx.selection is None:
        return {"epsilon": []}
    diag = ctx.selection.diagnostics
    model = ctx.modelling.model
    labs = list(dict.fromkeys(v for pr in ctx.pairs for v in pr))
    pooled = diag.pooled_model.covariance(labs[0])
    out: dict[str, list[float | None]] = {"epsilon": [ctx.epsilon * f for f in factors]}
    names = [c.name for c in ctx.selection.candidates
             if CANDIDATES[c.name].baseline != "dp" and c.code != "not-evaluated"]
    for nm in names:
        out[nm] = []
    lows: dict[str, list[float | None]] = {nm: [] for nm in names}
    selected = {c.name: c for c in ctx.selection.candidates if c.code != "not-evaluated-ranked-out"}
    for eps in out["epsilon"]:
        assert eps is not None
        if eps == ctx.epsilon:  # the selection's own evaluation at the target ε (ranked-out ones: their bound)
            points, lower = _points_at(names, selected, ctx, model, diag, eps)
        else:
            eta = eta_for(eps, ctx.delta)
            if not isinstance(model, EmpiricalModel):  # declared model: the gaps are exact and do not depend on ε
                lam = diag.divergence_lambda
            else:
                lam = max(divergence_gaps(model, labs, pooled, eta=eta, min_bins=MIN_BINS).values())
            points, lower = _points_at(names, {}, ctx, model, replace(diag, eta=eta, divergence_lambda=float(lam)), eps)
        for nm in names:
            out[nm].append(points[nm])
            lows[nm].append(lower.get(nm))
    for nm in names:
        if any(v is not None for v in lows[nm]):
            out[LOWER_BOUND + nm] = lows[nm]
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


#: At most this many statistics get an f_θ panel; the others are listed under the figure.
MAX_PANELS = 12


def shown_statistics(m: int) -> list[int]:
    """Indices of the statistics drawn in the f_θ figure (the first :data:`MAX_PANELS`)."""
    return list(range(min(m, MAX_PANELS)))


def _f_theta_figure(ctx: PublicContext) -> Figure:
    plt = _plt()
    assert ctx.modelling is not None
    model = ctx.modelling.model
    labs = list(model.labels)
    scale = np.ones(model.dim) if ctx.scale is None else np.asarray(ctx.scale, dtype=float)
    shown = shown_statistics(model.dim)
    m = len(shown)
    cols = min(m, 3)
    rows = int(math.ceil(m / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for k in range(rows * cols):
        ax = axes[k // cols][k % cols]
        if k >= m:
            ax.axis("off")
            continue
        j = shown[k]
        for i, lab in enumerate(labs):
            if isinstance(model, EmpiricalModel):  # the model is of D⁻¹F: drawn back in the statistic's units
                x = model.samples(lab)[:, j] * scale[j]
                ax.hist(x, bins=30, density=True, alpha=0.45, color=f"C{i}", label=f"θ = {lab}")
                mu, sd = float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else 0.0
                lo, hi = float(x.min()), float(x.max())
            else:
                mu = float(model.mean(lab)[j]) * scale[j]
                sd = float(math.sqrt(max(model.covariance(lab)[j, j], 0.0))) * scale[j]
                lo, hi = mu - 4 * sd, mu + 4 * sd
            if sd > 0:
                t = np.linspace(lo, hi, 200)
                ax.plot(t, np.exp(-0.5 * ((t - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi)), lw=1.2, color=f"C{i}",
                        label=None if isinstance(model, EmpiricalModel) else f"θ = {lab}")
        name = ctx.names[j]
        short = name if len(name) <= 40 else name[:39] + "…"
        ax.set_title(short, fontsize=9)
        ax.set_xlabel(f"value of {short}", fontsize=8)
        ax.set_ylabel("density", fontsize=8)
        ax.legend(fontsize=7)
    fig.suptitle("f_θ: the model of the statistics per θ" + (" (sampled datasets, Gaussian fits)"
                                                             if isinstance(model, EmpiricalModel) else " (declared)"))
    fig.tight_layout()
    cap = "f_θ per statistic, as modelled from the public inputs"
    if model.dim > m:
        cap += f" (the first {m} of {model.dim} statistics)"
    out = Figure("f_theta", fig, cap)
    plt.close(fig)
    return out


def release_figures(ctx: PublicContext, curves: dict[str, list[float | None]],
                    attack_rows: list[dict[str, Any]] | None) -> list[Figure]:
    """The figures of the release report (none when f_θ was modelled from the private table).

    User strings are drawn as plain text (:data:`PLAIN_TEXT`: no TeX, no mathtext), so a statistic
    named ``$\\frac{$`` is shown as typed.
    """
    if ctx.modelling is None or ctx.selection is None:
        return []
    import matplotlib

    with matplotlib.rc_context(PLAIN_TEXT):
        return _release_figures(ctx, curves, attack_rows)


def _release_figures(ctx: PublicContext, curves: dict[str, list[float | None]],
                     attack_rows: list[dict[str, Any]] | None) -> list[Figure]:
    assert ctx.selection is not None
    plt = _plt()
    figs = [_f_theta_figure(ctx)]
    chosen = ctx.selection.chosen
    fig, ax = plt.subplots(figsize=(7, 4.2))
    eps = curves["epsilon"]
    bounded = False
    i = 0  # the colour of the next mechanism drawn (the default cycle, as before the open markers)
    for nm, ys in ((k, v) for k, v in curves.items() if k != "epsilon" and not k.startswith(LOWER_BOUND)):
        pts = [(e, y) for e, y in zip(eps, ys, strict=True) if y is not None and y > 0]
        lows = [(e, y) for e, y in zip(eps, curves.get(LOWER_BOUND + nm, [None] * len(eps)), strict=True)
                if y is not None and y > 0]
        if pts or lows:
            label = next(c.label for c in ctx.selection.candidates if c.name == nm)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", lw=1.5 if nm == chosen.name else 0.9,
                    color=f"C{i % 10}", label=label + (" (chosen)" if nm == chosen.name else ""))
        if lows:  # a provable loser at that ε: its certified least error, not calibrated (error_curves)
            bounded = True
            ax.plot([p[0] for p in lows], [p[1] for p in lows], ls="none", marker="o", mfc="none", color=f"C{i % 10}")
        i += bool(pts or lows)
    if bounded:
        ax.plot([], [], ls="none", marker="o", mfc="none", color="grey",
                label="open: certified lower bound (not calibrated: above the least error found at that ε)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(eps, [f"{e:g}" for e in eps])
    ax.yaxis.set_major_formatter(plain_log_formatter())  # mathtext is off (PLAIN_TEXT): no $\mathdefault{..}$
    ax.minorticks_off()
    ax.set_xlabel("privacy parameter ε")
    ax.set_ylabel("expected L2 error E||Z||₂ (standardised units)")
    zero = [e for j, e in enumerate(eps)  # where a release without noise is private: error 0, off the log axis
            if any(v[j] == 0 for k, v in curves.items() if k != "epsilon" and not k.startswith(LOWER_BOUND))]
    ax.set_title(f"Expected error vs ε (δ = {ctx.delta:g}); filled: mechanisms whose guarantee holds")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    figs.append(Figure("error_vs_epsilon", fig, "expected L2 error (of the standardised statistics) of each mechanism "
                       "whose guarantee holds, vs ε" + ("; open markers: a certified lower bound on the error of a "
                                                       "mechanism not calibrated at that ε, because the bound (less "
                                                       f"the {MC_ALLOWANCE:.0%} allowance for the Monte Carlo estimates) exceeds the "
                                                       "estimated error of another mechanism there" if bounded else "")
                       + ("; no noise is needed (error 0, not drawn on the log axis) at ε = "
                          + ", ".join(f"{e:g}" for e in zero if e is not None) if zero else "")))
    plt.close(fig)
    if attack_rows is not None:
        fig, ax = plt.subplots(figsize=(7, 4))
        kinds = ["meta-classifier", "adaptive", "likelihood-ratio"]
        width = 0.38
        xs = np.arange(len(kinds))
        for i, row in enumerate(attack_rows):
            ax.bar(xs + (i - 0.5) * width, [row[k] for k in kinds], width, label=row["setting"])
        # (e^ε + δ)/(1 + e^ε) = 1/(1 + e^−ε) + δ/(1 + e^ε), overflow-free
        cap = 1.0 / (1.0 + math.exp(-min(ctx.epsilon, 700.0))) + ctx.delta * math.exp(-float(np.logaddexp(0.0, ctx.epsilon)))
        ax.axhline(min(cap, 1.0), color="k", ls="--", lw=1, label="max allowed by (ε, δ)")
        ax.axhline(0.5, color="grey", ls=":", lw=1)
        ax.set_xticks(xs, kinds)
        ax.set_ylim(0.4, 1.0)
        ax.set_xlabel("attack")
        ax.set_ylabel("attack accuracy")
        ax.set_title(f"Property inference θ = {ctx.pairs[0][0]} vs {ctx.pairs[0][1]}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        figs.append(Figure("attack_accuracy", fig, "attack accuracy before and after the mechanism"))
        plt.close(fig)
    return figs


#: An interval half-width above this fraction of |published value| is warned about (:func:`interval_warnings`).
INTERVAL_WARN_FRACTION = 1.0


def noise_warnings(doc: dict[str, Any]) -> list[str]:
    """Warnings about the noise that depend on public inputs only (printed on public stderr by the CLI).

    None remain: the former "noise exceeds the spread of F under the model" warning fired on every real release
    (the spread of F across datasets is not a utility scale; issue 21). The useful warning compares the interval
    with the published value (:func:`interval_warnings`); it depends on the published value, so it is shown in the
    report beside the values (a rendering of them, MAY_DIFFER) and not on stderr, where every line must be the
    same for two datasets that differ only in the secret.
    """
    del doc
    return []


def flat_statistics(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per published coordinate: a vector statistic (lists of values, one per label) becomes one
    entry per label, named ``name[label]``; scalar statistics are returned as they are."""
    out = []
    for st in doc["statistics"]:
        labels = st.get("labels")
        if not isinstance(st.get("value"), list) or labels is None:
            out.append(st)
            continue
        for i, lab in enumerate(labels):
            out.append({**{k: (v[i] if isinstance(v, list) and k != "labels" else v) for k, v in st.items()},
                        "name": f"{st['name']}[{lab}]"})
    return out


def interval_warnings(doc: dict[str, Any]) -> list[str]:
    """One line per statistic whose (1 − α) interval's half-width exceeds |published value| (issue 21, item 4).

    Computed from the published value and interval only (never from the private statistic), so the warning is a
    rendering of ``statistics[].value``/``interval``/``display``: it may differ between two releases exactly as
    those do.
    """
    out = []
    for st in flat_statistics(doc):
        iv = st.get("interval")
        if iv is None:
            continue
        half = (float(iv[1]) - float(iv[0])) / 2.0
        value = abs(float(st["value"]))
        if half > 0 and half > INTERVAL_WARN_FRACTION * value:
            level = st.get("interval_level", 0.95)
            out.append(f"the {level:.0%} interval of {st['name']!r} ({st.get('display', '')}) is wider than the "
                       "released value itself: at this ε and δ the value cannot tell its sign or size apart from "
                       "zero")
    return out


def _interval_warning_lines(doc: dict[str, Any]) -> list[str]:
    """The report's interval warnings, each with its leading separator (see :func:`value_renderings`)."""
    return [f"\n\n**Warning:** {md_escape(w)}." for w in interval_warnings(doc)]


def value_renderings(doc: dict[str, Any]) -> list[str]:
    """Every substring of the Markdown report computed from the published values (MAY_DIFFER renderings).

    The displays (``value ± half-width``) and the interval warnings (with their leading blank line, so that
    removing them leaves the same text whether or not a warning fired), longest first: a side-channel diff
    removes these, then the values' ``repr``, and compares the rest.
    """
    out = {*_interval_warning_lines(doc), *(s["display"] for s in flat_statistics(doc) if s.get("display"))}
    return sorted(out, key=len, reverse=True)


def _joint_words(doc: dict[str, Any]) -> str:
    """The joint Gaussian ellipsoid in words (public: its radius and shape do not depend on the values)."""
    joint = doc.get("noise", {}).get("joint_interval")
    if not joint:
        return ""
    return (f" **Jointly** (the noise is Gaussian), the statistics lie with probability {joint['level']:.0%} in the "
            f"ellipsoid {{x : (o − x)ᵀ Σ⁺ (o − x) <= {joint['radius']:.4g}²}} around the released values o, Σ the "
            f"noise covariance (rank {joint['rank']}; `noise.joint_interval` in `release.json`).")


def _exact_words(doc: dict[str, Any]) -> str:
    """The combinations of the statistics published without noise (EigM/DauM/DirM), and why that is safe."""
    combos = doc.get("noise", {}).get("exact_combinations") or []
    if not combos:
        return ""
    names = [st["name"] for st in flat_statistics(doc)]
    parts = []
    for coef in combos:
        terms = [f"{v:+.3g}·{md_escape(n)}" for v, n in zip(coef, names, strict=True) if abs(v) > 1e-9]
        parts.append(" ".join(terms))
    return (" **Exact combinations.** No noise is added along " + "; ".join(parts) + ": this combination is "
            "published exactly (up to the grid rounding). That is safe under Ψ because the mechanism's privacy profile, "
            "computed by the accounting core over all directions including this one, meets the guarantee under the "
            "stated assumptions (under translation the mean differences between the θ of Ψ lie in the noisy "
            "directions, so this combination has the same law for every θ; otherwise what it reveals is part of the "
            "accounted profile).")


def _pairs_words(pairs: list[list[float]], psi: dict[str, Any] | None = None) -> str:
    if psi is not None:  # a public grid: say so instead of listing every adjacent pair
        pts = psi["points"]
        shown = ", ".join(f"{v:g}" for v in pts) if len(pts) <= 8 else f"{pts[0]:g}, {pts[1]:g}, …, {pts[-1]:g}"
        return f"one or the other of two adjacent values of the public grid {shown} (gap {psi['gap']:g})"
    return "; or ".join(f"{a:g} or {b:g}" for a, b in pairs)


def psi_section(doc: dict[str, Any]) -> Section | None:
    """Ψ from a public grid: the guarantee per adjacent pair and the exact profile of values k gaps apart."""
    psi = doc.get("psi")
    if psi is None:
        return None
    g = doc["guarantee"]
    eps, delta = g["epsilon"], g["delta"]
    per = [{"Pair": f"{a:g} vs {b:g}", "ε": r["epsilon"], "δ proven (accounting core)": r["delta"]}
           for r in psi["per_pair"] for a, b in [r["pair"]]]
    rows = [{"k": r["k"], "Values apart": f"{r['apart']:g}", "Pairs": r["pairs"], "ε = kε": r["epsilon"],
             "δ(kε), exact": r["delta"], "δ chained k times": r["chained_delta"]} for r in psi["k_gaps"]]
    body = (
        f"Ψ is every adjacent pair of the public grid {psi['range'][0]:g} to {psi['range'][1]:g} in steps of "
        f"{psi['gap']:g} ({len(psi['points'])} values). The release is ({eps:.4g}, {delta:.3g})-distribution "
        "private for every adjacent pair; each pair's own δ at that ε:\n\n"
        + markdown_table(per, ["Pair", "ε", "δ proven (accounting core)"], digits=4)
        + "\nValues k gaps apart are not in Ψ, but the release still protects them: the table gives, for every k, "
        "the largest δ at kε over the pairs k gaps apart, computed exactly for the noise actually added — not "
        "the chained bound (kε, δ(e^(kε) − 1)/(e^ε − 1)) of applying the adjacent guarantee k times, shown "
        "beside it.\n\n"
        + markdown_table(rows, ["k", "Values apart", "Pairs", "ε = kε", "δ(kε), exact", "δ chained k times"], digits=4)
        + f"\nHow: {md_escape(psi['basis'])}; the guarantee's assumptions above apply."
    )
    return Section("Protected values: the public grid", body)


def provenance_section(doc: dict[str, Any]) -> Section | None:
    """Which distpriv made the release, when, its id, and the full public specification (to re-run it)."""
    prov = doc.get("provenance")
    if prov is None:
        return None
    sp = prov["spec"]
    mod = sp["model"]
    items = [
        ("statistics", ", ".join(md_code(f"{s['name']} = {s['spec']}") if s["name"] != s["spec"] else md_code(s["spec"])
                                 for s in sp["stats"])),
        ("protected predicate", md_code(sp["protect"])),
        ("Ψ", (f"adjacent pairs of the grid {sp['range'][0]:g}:{sp['range'][1]:g}, gap {sp['gap']:g}"
               if sp["range"] is not None else md_escape(str([tuple(p) for p in sp["pairs"]])))),
        ("target", f"ε = {sp['epsilon']:g}, δ = {sp['delta']:g}; mechanism {md_code(sp['mechanism'])}, calibration "
                   f"{md_code(sp['calibration'])}"),
        ("f_θ", f"from the {md_escape(mod['source'])}" + (f" (SHA-256 {md_code(mod['sha256'])})" if mod["sha256"] else "")
                + (f", n = {mod['n']}" if mod["n"] is not None else "")
                + (f", {mod['samples_per_theta']} datasets per θ" if mod["samples_per_theta"] else "")),
        ("reading", f"missing values: {md_code(sp['missing'])}"
                    + (f", delimiter {md_code(sp['sep'])}" if sp["sep"] is not None else "")
                    + (f", encoding {md_code(sp['encoding'])}" if sp["encoding"] is not None else "")),
        ("composition", f"{sp['previous_releases']} earlier release(s)"
                        + (", declared independent" if sp["independent"] else "")),
    ]
    body = (f"Made by distpriv {md_escape(prov['version'])} at {md_escape(prov['time'])} (UTC); release id "
            f"{md_code(prov['release_id'])}.\n\nFull public specification (`provenance.spec` in `release.json`):"
            "\n\n" + "\n".join(f"- {k}: {v}" for k, v in items)
            + "\n\nThe same release of another table DATA (with the same public population POP or model MODEL) as a "
              "spec file (`distpriv release --config FILE`):\n\n```toml\n"
            + config_toml(rerun_config(sp)) + "```")
    return Section("Provenance", body)


def _list(items: list[str], limit: int = 12) -> str:
    shown = [md_escape(i) for i in items[:limit]]
    more = f", … and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(shown) + more


#: What the selection states when the exact moments of f_θ have unequal covariances (release/selection.py):
#: the diagnostics table must not then say the covariances are equal (one source for both: the payload's texts).
COVARIANCES_DIFFER = "covariances differ across θ"


def _diagnostic_row(key: str, test: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """One row of the assumption diagnostics. The equal-covariance row follows the exact moments where the
    selection used them (a Box's M test on moment-matched samples cannot see a small gap)."""
    texts = [*doc["guarantee"]["assumptions"], *(c.get("correction") or "" for c in doc["report"]["candidates"]),
             *(c.get("reason") or "" for c in doc["report"]["candidates"])]
    differ = any(COVARIANCES_DIFFER in str(t) for t in texts)
    if key == "equal_covariance" and differ:
        return {"Holds?": "no", "Adjusted p-value": test["p_value"],
                "Test": md_escape(f"{COVARIANCES_DIFFER} in the exact moments of the model (Box's M test: "
                                  f"{test['detail']}, which cannot see a small gap)")}
    if key == "translation" and differ and test["holds"]:
        return {"Holds?": "no", "Adjusted p-value": test["p_value"],
                "Test": md_escape(f"{COVARIANCES_DIFFER} in the exact moments, so f_θ is not a translation (the "
                                  f"test, {test['detail']}, cannot see a small gap)")}
    return {"Holds?": "yes" if test["holds"] else "rejected", "Adjusted p-value": test["p_value"],
            "Test": md_escape(test["detail"])}


def _records_words(doc: dict[str, Any]) -> str:
    """What the report says about individual records: nothing protected, or the record-level DP claim."""
    rec = doc.get("record_guarantee")
    if rec is None:
        return "Individual records are not what is protected."
    bounds = ", ".join(f"{md_code(c)} in [{lo:g}, {hi:g}]" for c, (lo, hi) in rec["bounds"].items())
    return (f"**Individual records are protected too**, by the same noise: ({rec['epsilon']:.4g}, {rec['delta']:.3g})-"
            "differential privacy for one record replaced (datasets of the same size differing in one row): every "
            f"outcome is at most e^{rec['epsilon']:.4g} times as likely with or without any one person's row, plus "
            f"δ = {rec['delta']:.3g} (Balle & Wang 2018, analytic Gaussian mechanism, at the worst-case Mahalanobis "
            f"sensitivity {rec['worst_case_mahalanobis']:.4g} <= {rec['max_mahalanobis']:.4g})"
            + (f"; declared public bounds {bounds}, values outside them clamped." if bounds else "."))


def release_sections(
    ctx: PublicContext, attack_rows: list[dict[str, Any]] | None = None, *, figures: bool = True
) -> list[Section]:
    """Markdown sections of the release report (``figures=False``: no figure references, for stdout).

    Every user string (statistic names and specifications, the predicate, file names inside notes,
    assumption texts) goes through :func:`~distpriv.report.md_escape` / :func:`~distpriv.report.md_code`.
    """
    doc = ctx.payload
    spec = doc["spec"]
    g = doc["guarantee"]
    noise = doc["noise"]
    figures = figures and ctx.public_model
    exact = noise["grid"] is None
    sections: list[Section] = []
    protect = md_code(spec["protect"])
    label = md_escape(doc["mechanism_label"])
    # ---- the guarantee in words, its assumptions and the mechanism, first
    words = (
f"**What is protected.** The share of records with {protect}: anyone who sees these released values can "
        f"tell whether that share is {_pairs_words(spec['pairs'], doc.get('psi'))} only as well as "
        f"({g['epsilon']:.4g}, {g['delta']:.3g})-distribution privacy allows (Chen & Ohrimenko Def. 3.2): every "
        f"outcome is at most e^ε = e^{g['epsilon']:.4g} times as likely under one share as under the other, plus "
        f"δ = {g['delta']:.3g}. {_records_words(doc)}\n\n"
        f"**Mechanism.** {label}, chosen among the mechanisms whose guarantee holds for the smallest expected error "
        f"(by {md_escape(g['theorem'])}).\n\n"
    )
    if exact:
        words += ("**The values are exact.** They were released **without noise**: Theorem 5.4 shows that, under the "
                  "model below, the statistics themselves already meet the guarantee, so the released values are the "
                  "true statistics of the table.\n\n")
    words += "**The guarantee holds under these assumptions:**\n\n" + "\n".join(
        f"- {md_escape(a)}" for a in g["assumptions"])
    warns = list(doc["warnings"])
    if warns:
        body = "\n\n".join(f"**Warning:** {md_escape(w)}." for w in warns)
        if doc["data_dependent"]:
            body += "\n\nData-dependent fields of `release.json`: " + ", ".join(md_code(f) for f in doc["data_dependent"])
        sections.append(Section("Read this first", body))
    sections.append(Section("The guarantee in words", words))
    # ---- the values
    rows = [{"Statistic": md_escape(st["name"]), "Definition": md_code(st["spec"]),
             "Released value": st.get("display") or repr(st["value"]),
             "Noise std. dev.": st["noise_std"], "Spread under the model": st.get("spread"),
             "Noise / spread": st.get("noise_to_spread")} for st in flat_statistics(doc)]
    cols = ["Statistic", "Definition", "Released value", "Noise std. dev.", "Spread under the model", "Noise / spread"]
    if exact:
        note = ("Released **exactly, without noise** (Theorem 5.4): these are the statistics of the table themselves, "
                "and the guarantee above covers them as they are.")
    else:
        note = ("Each released value is the statistic plus noise, rounded to a power-of-two grid (its `grid` in "
                "`release.json`) on which the noise was drawn exactly (see Noise). The noise of each statistic is "
                "calibrated on the statistics divided by their spread under the model, so the units of one statistic "
                "do not change the noise of another.")
    if not exact and doc["statistics"] and doc["statistics"][0].get("interval") is not None:
        note += (f" Each value is shown as value ± half-width of its {doc['statistics'][0]['interval_level']:.0%} "
                 "interval for the statistic of the table as read (per statistic, not simultaneous; from the exact "
                 "law of the noise and the grid rounding), to the digits that interval supports; the exact grid "
                 "values and the intervals are in `release.json` (`value`, `interval`)." + _joint_words(doc)
                 + _exact_words(doc))
    summary = (f"Released {len(rows)} statistic(s) with **{label}**.\n\n"
               + markdown_table(rows, cols, digits=4) + "\n" + note + "".join(_interval_warning_lines(doc)))
    sections.append(Section("Released statistics", summary))
    guar = (f"({g['epsilon']:.4g}, {g['delta']:.3g})-{md_escape(g['framework'])} for Ψ = "
            f"{md_escape(str([tuple(p) for p in spec['pairs']]))} (target ({spec['epsilon']:g}, {spec['delta']:g})), "
            f"by {md_escape(g['theorem'])}.")
    if g.get("notes"):
        guar += "\n\nNotes:\n\n" + "\n".join(f"- {md_escape(n)}" for n in g["notes"])
    if doc["report"]["correction"]:
        guar += f"\n\nCorrection applied: {md_escape(doc['report']['correction'])}."
    sections.append(Section("Guarantee details", guar))
    grid_sec = psi_section(doc)
    if grid_sec is not None:
        sections.append(grid_sec)
    randomness = ("fresh entropy from the operating system, drawn for this release only" if doc["randomness"] == "os"
                  else "**a seeded generator (--seed): not private**")
    if exact:
        nz = "No noise is added (Theorem 5.4)."
    else:
        nz = (f"Noise {md_escape(noise['kind'])} "
              f"({'in a rotated orthonormal basis' if noise['basis'] == 'rotated' else 'per statistic'}) on the "
              f"standardised statistics F_k/d_k (d_k = the spread column above), expected L2 error "
              f"E||Z||₂ = {noise['expected_l2_error']:.4g} in those units; randomness: {randomness}. "
              f"Sampler: {md_escape(noise['sampler'])}: the output has exactly the law of the ideal noisy statistics "
              f"rounded to the grid g = {noise['grid']!r}, whatever the statistics are, so no floating-point rounding "
              "pattern reveals them (Mironov 2012); each value is then multiplied by d_k and rounded to the power-of-"
              "two grid g_k <= d_k·g (post-processing).")
        if noise.get("theorem_5_7"):
            t = noise["theorem_5_7"]
            nz += (f"\n\nTheorem 5.7 noise Lap({noise['extra_laplace_scale']:.6g}) per standardised statistic uses "
                   f"W + m·g = {t['W_with_grid']:.6g} instead of W = {t['W']:.6g}, paying for the grid rounding of the "
                   "first stage.")
    sections.append(Section("Noise", nz))
    mod = doc["report"]["modelling"]
    body = md_escape(mod["note"]) + (
        f"\n\n{mod['samples_per_theta']} datasets were sampled per θ." if mod["samples_per_theta"] else "")
    names = [st["name"] for st in flat_statistics(doc)]
    if figures and len(names) > MAX_PANELS:
        body += (f"\n\nThe figure shows the first {MAX_PANELS} of {len(names)} statistics; not shown: "
                 + _list(names[MAX_PANELS:], 50) + ".")
    sections.append(Section("How f_θ was modelled", body, ["f_theta"] if figures else []))
    diag = doc["report"].get("diagnostics")
    if diag is not None:
        tests = markdown_table([{"Assumption": k.replace("_", " "), **_diagnostic_row(k, t, doc)}
                                for k, t in diag["tests"].items()],
                               ["Assumption", "Holds?", "Adjusted p-value", "Test"])
        sections.append(Section("Assumption diagnostics", (
            f"Tests at level α = {diag['alpha']} on the public model of the standardised statistics (not rejecting "
            f"is not a proof).\n\n{tests}\n"
            f"Gaps paid for by the corrections (standardised units): translation W = {_gap(diag['translation_gap_W'])}, "
            f"Gaussian W = {_gap(diag['gaussian_gap_W'])} (Thm 5.7, L1 W∞ estimates), divergence λ = "
            f"{diag['divergence_gap_lambda']:.4g} at η = {diag['eta']:.3g} (Thm 5.6).")))
    cand_rows = [{"Mechanism": md_escape(c["label"]),
                  "Status": "chosen" if c["mechanism"] == doc["mechanism"] else ("kept" if c["kept"] else "rejected"),
                  "Expected error": c["expected_l2_error"] if c["kept"] else None,
                  "Reason": md_escape((c["correction"] or c["reason"]) if c["kept"] else c["reason"])}
                 for c in doc["report"]["candidates"]]
    sections.append(Section(
        "Mechanism choice",
        "Every applicable mechanism was calibrated for the target on the standardised statistics; those whose "
        "guarantee holds (directly or after a Theorem 5.6/5.7 correction) were kept, and the smallest expected L2 "
        "error (standardised units) won.\n\n"
        + markdown_table(cand_rows, ["Mechanism", "Status", "Expected error", "Reason"]),
        ["error_vs_epsilon"] if figures else []))
    if attack_rows is not None:
        att = [{"Setting": md_escape(r["setting"]), "Meta-classifier": r["meta-classifier"], "Adaptive": r["adaptive"],
                "Likelihood ratio": r["likelihood-ratio"]} for r in attack_rows]
        sections.append(Section(
            "Attacks before and after",
            "Accuracy of property-inference attacks distinguishing the first pair, on datasets drawn from the model "
            "(5 repetitions × 100 test datasets; see `distpriv audit` for a full audit).\n\n"
            + markdown_table(att, ["Setting", "Meta-classifier", "Adaptive", "Likelihood ratio"]),
            ["attack_accuracy"] if figures else [],
        ))
    comp = doc.get("composition")
    if comp is not None:
        cg = comp["guarantee"]
        sections.append(Section(
            "Composition with earlier releases",
            f"Composed by Chen & Ohrimenko Prop. {md_escape(comp['proposition'])}: total ({cg['epsilon']:.4g}, "
            f"{cg['delta']:.3g}) over {comp['releases']} releases.\n\n"
            + "\n".join(f"- {md_escape(a)}" for a in cg["assumptions"][-2:]),
        ))
    prov_sec = provenance_section(doc)
    if prov_sec is not None:
        sections.append(prov_sec)
    return sections
