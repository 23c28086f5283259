"""Reproduction for Kawamoto & Murakami, *Local distribution obfuscation via
probability coupling* (divergence paper), Section VI.

* The Fig. 2 example: λ = (0.2, 0.5, 0.3), μ = (0.3, 0.2, 0.5) on {1, 2, 3}
  with d(x, y) = |x − y|; the coupling γ of Fig. 2b by the North-West corner
  rule and by POT, the coupling mechanism of Example 2 (input 2 → 1 w.p. 20 %,
  → 3 w.p. 40 %) and its expected loss W1 = 0.3 (Proposition 2).
* A sweep of coupling-mechanism privacy vs the accuracy of λ̂ on the built-in
  check-ins: the W1-optimal coupling mechanism for the attribute male/female
  with target μ = the population distribution, built from estimates λ̂_s of n
  check-ins per attribute value; for each n: the accuracy
  ε̂ = max_s D∞(λ̂_s, λ_s) (both directions), the Theorem 3 bounds (2ε̂, D∞)
  and (2ε̂e^ε̂, KL), the exact DistP of the mechanism for the true λ_s (D∞ and
  KL), and the expected loss.

The "true" λ_s are the histograms of all check-ins of value s over the
central regions, and every histogram gets an additive smoothing of 0.5 per
region so that D∞ is finite (documented choice; the paper leaves it open).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import local
from .._validation import check_int
from ..datasets.checkins import CheckinData, synthetic_checkins
from ..errors import InvalidParameterError
from ..formatting import (
    dumps,
    markdown_table,
    prepare_out,
    progress,
)
from .kawamoto_tupling import Setting

STUDY = "kawamoto-coupling"
PAPER_FIG2: dict[str, Any] = {
    "source": "Kawamoto & Murakami, divergence paper, Fig. 2 and Example 2",
    "lambda": [0.2, 0.5, 0.3],
    "mu": [0.3, 0.2, 0.5],
    "coupling": [[0.2, 0.0, 0.0], [0.1, 0.2, 0.2], [0.0, 0.0, 0.3]],
    "loss": 0.3,
}
DEFAULT_SIZES = (50, 100, 200, 500, 1000, 2000, 5000, 10000)
QUICK_SIZES = (100, 1000)
SMOOTHING = 0.5


def fig2_example() -> dict[str, Any]:
    """The divergence paper's Fig. 2 / Example 2, computed."""
    lam = np.array(PAPER_FIG2["lambda"])
    mu = np.array(PAPER_FIG2["mu"])
    pos = np.array([1.0, 2.0, 3.0])
    cost = np.abs(pos[:, None] - pos[None, :])
    nwc = local.north_west_corner(lam, mu)
    pot = local.optimal_coupling(lam, mu, cost, kind="w1")
    winf = local.optimal_coupling(lam, mu, cost, kind="winf")
    mech = local.CouplingMechanism.optimal(inputs={"s": lam}, target=mu, cost=cost, kind="nwc")
    from .. import distances

    return {
        "lambda": lam,
        "mu": mu,
        "coupling_nwc": nwc,
        "coupling_pot": pot,
        "coupling_winf": winf,
        "mechanism_matrix": mech.matrix("s"),
        "output_distribution": mech.lift("s", lam),
        "expected_loss_nwc": float(np.sum(nwc * cost)),
        "expected_loss_pot": float(np.sum(pot * cost)),
        "w1": distances.wasserstein_from_cost(cost, lam, mu, order=1),
        "w_inf": distances.w_infinity_from_cost(cost, lam, mu),
        "worst_case_loss_winf": float(cost[winf > 1e-12].max()),
        "paper": PAPER_FIG2,
    }


def run_kawamoto_coupling(
    *,
    seed: int = 0,
    n_users: int = 2000,
    sizes: tuple[int, ...] | None = None,
    quick: bool = False,
    repeats: int = 3,
    out: str | Path | None = None,
    data: CheckinData | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Fig. 2 example and the privacy-vs-accuracy sweep; ``sizes`` are the numbers of check-ins
    per attribute value used to estimate λ̂_s (``repeats`` seeded draws each).

    ``out`` (a directory) additionally receives the PNG, ``kawamoto_coupling.json`` and the
    Markdown report ``kawamoto_coupling.md``."""
    start = time.perf_counter()
    check_int(seed, "seed", minimum=0)
    reps = check_int(repeats, "repeats", minimum=1)
    ns = tuple(sizes) if sizes is not None else (QUICK_SIZES if quick else DEFAULT_SIZES)
    if not ns or any(int(n) < 1 for n in ns):
        raise InvalidParameterError(f"sizes: expected positive sample sizes, got {ns}")
    res: dict[str, Any] = {"study": STUDY, "fig2": fig2_example()}
    if data is None:
        data = synthetic_checkins(check_int(n_users, "n_users", minimum=10), rng=seed)
    st = Setting(data)
    pts = data.points()
    attrs = st.pair("male/female")
    cost = st.regions.distances(st.inputs, st.inputs)
    true = {s: st.regions.histogram(pts[st.masks[s]], st.inputs, smoothing=SMOOTHING) for s in attrs}
    mu = st.regions.histogram(pts, st.inputs, smoothing=SMOOTHING)
    gen = np.random.default_rng(seed + 7)
    rows = []
    with progress("kawamoto-coupling", len(ns) * reps, enabled=show_progress) as adv:
        for n in ns:
            for rep in range(reps):
                est = {}
                for s in attrs:
                    idx = np.flatnonzero(st.masks[s])
                    pick = gen.choice(idx, size=min(int(n), idx.size), replace=int(n) > idx.size)
                    est[s] = st.regions.histogram(pts[pick], st.inputs, smoothing=SMOOTHING)
                c = local.CouplingMechanism.optimal(inputs=est, target=mu, cost=cost)
                acc = c.estimation_epsilon(true)
                rows.append({
                    "n": int(n),
                    "repeat": rep,
                    "accuracy_eps": acc,
                    "bound_dinf": local.coupling_theorem3(acc, "max"),
                    "exact_dinf": c.distp(true, "max"),
                    "bound_kl": local.coupling_theorem3(acc, "kl"),
                    "exact_kl": c.distp(true, "kl"),
                    "exact_eps_delta_0.001": c.distp(true, "approx-max", delta=0.001),
                    "expected_loss": float(np.mean([c.expected_loss(s, lam=true[s]) for s in attrs])),
                    "w1_loss_estimate": float(np.mean([c.expected_loss(s) for s in attrs])),
                })
                adv()
    res["sweep"] = {"attribute": "male/female", "target": "population distribution", "smoothing": SMOOTHING,
                    "n_regions": int(st.inputs.size), "rows": rows}
    outdir = prepare_out(out)
    if outdir is not None:
        res["figures"] = _plot(res, outdir)
        (outdir / "kawamoto_coupling.json").write_text(dumps(res))
        timing = "\n## Timing\n\n" + markdown_table([{"item": STUDY, "seconds": time.perf_counter() - start}])
        (outdir / "kawamoto_coupling.md").write_text(kawamoto_coupling_markdown(res, figures=True) + timing, encoding="utf-8")
    return res


def _plot(res: dict[str, Any], outdir: Path) -> list[str]:
    """The privacy-vs-accuracy sweep as one PNG: (a) DistP bounds and exact values, (b) expected loss."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res["sweep"]["rows"]
    ns = sorted({r["n"] for r in rows})
    reps = max(r["repeat"] for r in rows) + 1

    def mean(key: str) -> list[float]:
        return [float(np.mean([r[key] for r in rows if r["n"] == n])) for n in ns]

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    axes[0].plot(ns, mean("bound_dinf"), "o--", label="Thm 3 bound 2ε̂ (D∞)")
    axes[0].plot(ns, mean("exact_dinf"), "o-", label="exact D∞-DistP for the true λ_s")
    axes[0].plot(ns, mean("bound_kl"), "s--", label="Thm 3 bound 2ε̂·e^ε̂ (KL)")
    axes[0].plot(ns, mean("exact_kl"), "s-", label="exact KL-DistP for the true λ_s")
    axes[0].set(xscale="log", yscale="log", xlabel="check-ins per attribute value used for λ̂_s",
                ylabel="ε (divergence DistP)", title="(a) privacy: Theorem 3 bounds vs exact values")
    axes[0].legend(fontsize=7.5)
    axes[1].plot(ns, mean("expected_loss"), "o-", label="expected loss E d(x, y) under the true λ_s")
    axes[1].plot(ns, mean("w1_loss_estimate"), "s--", label="W1(λ̂_s, μ) (the loss the mechanism is built for)")
    axes[1].set(xscale="log", xlabel="check-ins per attribute value used for λ̂_s", ylabel="expected loss",
                title="(b) utility: expected quality loss")
    axes[1].legend(fontsize=7.5)
    for ax in axes:
        ax.title.set_fontsize(10)
        ax.grid(alpha=0.3)
    sw = res["sweep"]
    fig.suptitle(f"Kawamoto & Murakami (divergence paper): W1-optimal coupling mechanism, {sw['attribute']}, "
                 f"target μ = {sw['target']}\n|X| = {sw['n_regions']} regions, smoothing {sw['smoothing']:g} per "
                 f"region, mean over {reps} subsamples per size", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    path = str(outdir / "kawamoto_coupling_sweep.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def kawamoto_coupling_markdown(res: dict[str, Any], *, figures: bool = False) -> str:
    """Markdown report of :func:`run_kawamoto_coupling`'s result (``figures=True`` embeds the PNG written next to it)."""
    f2 = res["fig2"]
    lines = [f"# {STUDY}\n", "## Fig. 2 / Example 2 (divergence paper)\n"]
    gam = [{"x": i + 1, **{f"y={j + 1}": float(v) for j, v in enumerate(row)}} for i, row in enumerate(f2["coupling_nwc"])]
    lines.append("Coupling γ (North-West corner rule):\n\n" + markdown_table(gam))
    paper = [{"x": i + 1, **{f"y={j + 1}": float(v) for j, v in enumerate(row)}}
             for i, row in enumerate(PAPER_FIG2["coupling"])]
    lines.append("\nPaper's γ (Fig. 2b):\n\n" + markdown_table(paper))
    mat = [{"x": i + 1, **{f"y={j + 1}": float(v) for j, v in enumerate(row)}} for i, row in enumerate(f2["mechanism_matrix"])]
    lines.append("\nCoupling mechanism C(x)[y] = γ[x, y]/λ[x]:\n\n" + markdown_table(mat))
    lines.append(f"\nExpected loss (NWC) = {f2['expected_loss_nwc']:.4g}, (POT) = {f2['expected_loss_pot']:.4g}, "
                 f"W1 = {f2['w1']:.4g} (paper: {PAPER_FIG2['loss']}); W∞ = {f2['w_inf']:.4g}.\n")
    ns = sorted({r["n"] for r in res["sweep"]["rows"]})
    cols = ["accuracy_eps", "bound_dinf", "exact_dinf", "bound_kl", "exact_kl", "exact_eps_delta_0.001", "expected_loss"]
    agg = []
    for n in ns:
        sel = [r for r in res["sweep"]["rows"] if r["n"] == n]
        agg.append({"n": n, **{c: float(np.mean([r[c] for r in sel])) for c in cols}})
    lines.append("## Coupling-mechanism privacy vs accuracy of λ̂ (male/female, means over repeats)\n")
    lines.append(markdown_table(agg, ["n", *cols]))
    if figures and res.get("figures"):
        lines.append("\n![kawamoto_coupling_sweep](kawamoto_coupling_sweep.png)\n")
    return "\n".join(lines)
