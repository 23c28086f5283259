"""Reproduction of Kawamoto & Murakami, *Local obfuscation mechanisms for hiding
probability distributions* (tupling paper), Section 7 and Appendix A.4.

Everything is computed on the built-in synthetic check-ins
(:func:`distpriv.datasets.checkins.synthetic_checkins`, since the Foursquare
data cannot be downloaded here) with the paper's pipeline (Section 7.1):
an 11 × 10 grid over a Manhattan-sized box, crowded cells split into quadrants
until about 276 regions remain (Y), inputs X = regions in the central box,
Euclidean distances between region centres, attribute distributions λ_t as
empirical location histograms over X, the (ε_A, r)-RL mechanism and uniform
dummies. ε is the *exact* least ε of (ε, 0.001)-DistP (certified to 1e-5),
not the Theorem 3 bound, which Table 2 compares.

* Fig. 2a–c: ε vs k, vs ε_A, vs r (male/female); Fig. 2d: expected loss vs ε_A.
* Fig. 4: ε vs attack success rate (home/out) of the Bayes attacker.
* Fig. 5: (ε, 0.001)-DistP vs expected loss for the tupling mechanism (TM),
  randomized response (RR), planar Laplace (PL) and planar Gaussian (PG).
* Table 2: Theorem 3 bounds vs exact ε (δ = 0.001, 0.01, 0.1) and Theorem 7
  vs exact KL, for k = 10, ε_A = 10, r = 0.020; the paper's values (on the
  Foursquare data) are printed beside ours as labelled reference data.
"""

from __future__ import annotations

import time
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from .. import local
from .._validation import check_int
from ..datasets.checkins import (
    MANHATTAN_BBOX,
    MANHATTAN_INNER_BBOX,
    CheckinData,
    synthetic_checkins,
)
from ..errors import InvalidParameterError
from ..formatting import (
    dumps,
    markdown_table,
    prepare_out,
    progress,
)

STUDY = "kawamoto-tupling"

# Table 2 of the paper (Foursquare, Manhattan, male/female; k = 10, ε_A = 10, r = 0.020)
PAPER_TABLE2: dict[str, Any] = {
    "source": "Kawamoto & Murakami, tupling paper, Appendix A.4, Table 2 (Foursquare Manhattan, male/female)",
    "theoretical": {"delta=0.001": 2.170, "delta=0.01": 1.625, "delta=0.1": 1.140, "KL": 1.678},
    "empirical": {"delta=0.001": 0.04450, "delta=0.01": 0.03534, "delta=0.1": 0.02295, "KL": 0.01141},
}

DELTA = 0.001
DEFAULTS: dict[str, tuple[float, ...]] = {
    "k_values": (1, 2, 3, 5, 7, 10, 15, 20),
    "eps_a_values": (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0),
    "radii": (0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.06),
    "loss_radii": (0.01, 0.02, 0.04),
    "asr_eps_a": (1.0, 10.0, 30.0, 100.0, 300.0, 1000.0),
    "rr_eps": (0.5, 1.0, 2.0, 4.0, 6.0, 8.0),
    "pl_eps": (10.0, 30.0, 60.0, 100.0, 200.0, 400.0),
    "pg_sigma": (0.002, 0.005, 0.01, 0.02, 0.04, 0.08),
}
QUICK: dict[str, tuple[float, ...]] = {
    "k_values": (1, 5, 10),
    "eps_a_values": (10.0, 100.0),
    "radii": (0.01, 0.02),
    "loss_radii": (0.02,),
    "asr_eps_a": (10.0, 100.0),
    "rr_eps": (1.0, 4.0),
    "pl_eps": (30.0, 100.0),
    "pg_sigma": (0.005, 0.02),
}


#: Section 7.1: an 11 × 10 grid re-divided into |Y| = 276 regions, |X| = 228 of them in the central box.
GRID = (11, 10)
PAPER_REGIONS = 276
PAPER_INPUTS = 228


def reachable_region_counts(base_cells: int, target: int) -> tuple[int, int]:
    """The region counts next to ``target`` that quadrant splitting can produce from ``base_cells`` cells.

    Splitting one region into four adds three, so every partition has
    base_cells + 3s regions; returns the nearest such counts below-or-at and above ``target``.
    """
    s = max(0, (target - base_cells) // 3)
    lo = base_cells + 3 * s
    return lo, lo if lo == target else lo + 3


class Setting:
    """Regions, input set, distances and attribute distributions built from check-ins."""

    def __init__(self, data: CheckinData, n_regions: int = PAPER_REGIONS) -> None:
        pts = data.points()
        self.data = data
        self.target_regions = n_regions
        self.regions = local.build_regions(pts, data.bbox, *GRID, target=n_regions)
        self.inputs = self.regions.inner(MANHATTAN_INNER_BBOX if data.bbox == MANHATTAN_BBOX else _shrink(data.bbox))
        if self.inputs.size < 2:
            raise InvalidParameterError("data: fewer than two regions in the central box")
        self.cost = self.regions.distances(self.inputs, None)  # (|X|, |Y|)
        df = data.with_user_attributes()
        masks: dict[str, Any] = {"all": np.ones(len(df), dtype=bool)}
        if "gender" in df:
            masks["male"], masks["female"] = (df.gender == "male").to_numpy(), (df.gender == "female").to_numpy()
        if "social" in df:
            masks["social"] = (df.social == "social").to_numpy()
            masks["less-social"] = (df.social == "less-social").to_numpy()
        if "north" in df:
            masks["north"], masks["south"] = (df.north == "north").to_numpy(), (df.north == "south").to_numpy()
        masks["home"], masks["out"] = df.at_home.to_numpy(bool), ~df.at_home.to_numpy(bool)
        self.masks = masks
        self.lams = {t: self.regions.histogram(pts[m], self.inputs) for t, m in masks.items() if m.sum() > 0}
        idx = self.regions.assign(pts)
        pos = np.full(self.regions.n, -1)
        pos[self.inputs] = np.arange(self.inputs.size)
        self.input_index = pos[np.where(idx >= 0, idx, 0)]
        self.input_index[idx < 0] = -1

    def region_note(self) -> str:
        """Why |Y| and |X| differ from the paper's 276 and 228 (computed counts)."""
        base = GRID[0] * GRID[1]
        lo, hi = reachable_region_counts(base, self.target_regions)
        if lo == self.target_regions:
            reach = f"{self.target_regions} is reachable"
        else:
            reach = (f"{self.target_regions} − {base} = {self.target_regions - base} is not a multiple of 3, so "
                     f"{self.target_regions} regions cannot arise; the nearest counts are {lo} and {hi}")
        return (f"|Y| = {self.regions.n} regions: the {GRID[0]} × {GRID[1]} grid has {base} cells and each split "
                f"into quadrants adds 3, so a partition has {base} + 3s regions; {reach} (the crowding threshold "
                f"is chosen to come closest to {self.target_regions}). |X| = {self.inputs.size} regions lie in the "
                f"central box (paper: {PAPER_INPUTS}); how many depends on where the check-ins are dense, and these "
                f"are {self.data.source} check-ins, not the paper's Foursquare data")

    def pair(self, attribute: str) -> tuple[str, str]:
        pairs = {"male/female": ("male", "female"), "home/out": ("home", "out"),
                 "social/less-social": ("social", "less-social"), "north/south": ("north", "south")}
        if attribute not in pairs or any(t not in self.lams for t in pairs[attribute]):
            raise InvalidParameterError(f"attribute: unknown or unavailable {attribute!r}; expected one of {list(pairs)}")
        return pairs[attribute]

    def tupling(self, eps_a: float, r: float, k: int) -> local.Tupling:
        return local.Tupling(local.restricted_laplace(self.cost, eps_a, r), k=k)


def _shrink(b: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    w, h = b[2] - b[0], b[3] - b[1]
    return (b[0] + w / 22, b[1] + h / 20, b[2] - w / 22, b[3] - h / 20)


def _sweeps(quick: bool, overrides: dict[str, Any]) -> dict[str, tuple[float, ...]]:
    base = dict(QUICK if quick else DEFAULTS)
    for key, val in overrides.items():
        if val is not None:
            if len(val) == 0:
                raise InvalidParameterError("sweep must not be empty", argument=key)
            base[key] = tuple(val)
    return base


def run_kawamoto_tupling(
    *,
    seed: int = 0,
    n_users: int = 2000,
    quick: bool = False,
    out: str | Path | None = None,
    data: CheckinData | None = None,
    show_progress: bool = True,
    **sweeps: Any,
) -> dict[str, Any]:
    """Compute Fig. 2a–d, Fig. 4, Fig. 5 and Table 2; returns a JSON-able dict.

    ``sweeps`` may override any of :data:`DEFAULTS` (e.g. ``k_values=(1, 5)``).
    ``out`` (a directory) additionally receives PNG figures, ``kawamoto_tupling.json`` and the
    Markdown report ``kawamoto_tupling.md``.
    """
    start = time.perf_counter()
    check_int(seed, "seed", minimum=0)
    unknown = set(sweeps) - set(DEFAULTS)
    if unknown:
        raise InvalidParameterError(f"sweeps: unknown options {sorted(unknown)}; known are {sorted(DEFAULTS)}")
    sw = _sweeps(quick, sweeps)
    if data is None:
        data = synthetic_checkins(check_int(n_users, "n_users", minimum=10), rng=seed)
    st = Setting(data)
    mf = st.pair("male/female")
    l0, l1 = st.lams[mf[0]], st.lams[mf[1]]
    pooled = st.lams["all"]
    res: dict[str, Any] = {
        "study": STUDY,
        "data": {"source": data.source, "n_checkins": int(len(data.checkins)), "n_regions": st.regions.n,
                 "n_inputs": int(st.inputs.size), "paper_n_regions": PAPER_REGIONS, "paper_n_inputs": PAPER_INPUTS,
                 "regions_note": st.region_note(),
                 **{k: v for k, v in data.meta.items() if k != "files"}},
        "delta": DELTA,
    }
    total = (len(sw["k_values"]) + len(sw["eps_a_values"]) + len(sw["radii"]) + len(sw["asr_eps_a"])
             + 2 * len(sw["eps_a_values"]) + 4)
    with progress("kawamoto-tupling", total, enabled=show_progress) as adv:
        rows: list[dict[str, Any]] = []
        for k in sw["k_values"]:
            t = st.tupling(100.0, 0.02, int(k))
            rows.append({"k": int(k), "epsilon": t.distp_epsilon(l0, l1, DELTA)})
            adv()
        res["fig2a"] = {"attribute": "male/female", "eps_a": 100.0, "r": 0.02, "rows": rows}
        rows = []
        for ea in sw["eps_a_values"]:
            t = st.tupling(float(ea), 0.02, 10)
            rows.append({"eps_a": float(ea), "epsilon": t.distp_epsilon(l0, l1, DELTA)})
            adv()
        res["fig2b"] = {"attribute": "male/female", "k": 10, "r": 0.02, "rows": rows}
        rows = []
        for r in sw["radii"]:
            t = st.tupling(100.0, float(r), 10)
            rows.append({"r": float(r), "epsilon": t.distp_epsilon(l0, l1, DELTA)})
            adv()
        res["fig2c"] = {"attribute": "male/female", "k": 10, "eps_a": 100.0, "rows": rows}
        rows = []
        for r in sw["loss_radii"]:
            for ea in sw["eps_a_values"]:
                t = st.tupling(float(ea), float(r), 5)
                rows.append({"r": float(r), "eps_a": float(ea), "expected_loss": t.expected_loss(pooled, st.cost)})
        adv()
        res["fig2d"] = {"k": 5, "loss_distribution": "all check-ins", "rows": rows}

        # Fig. 4: ε vs ASR for home/out
        ho = st.pair("home/out")
        rows = []
        home_inputs = st.input_index[st.masks["home"] & (st.input_index >= 0)]
        gen = np.random.default_rng(seed + 1)
        for ea in sw["asr_eps_a"]:
            t = st.tupling(float(ea), 0.02, 10)
            eps = t.distp_epsilon(st.lams[ho[0]], st.lams[ho[1]], DELTA)
            att = local.BayesAttacker(t, {ho[0]: st.lams[ho[0]], ho[1]: st.lams[ho[1]]})
            asr = att.empirical_success_rate(ho[0], home_inputs, rng=gen)
            se = float(np.sqrt(asr * (1.0 - asr) / max(home_inputs.size, 1)))
            rows.append({"eps_a": float(ea), "epsilon": eps, "asr": asr, "asr_se": se})
            adv()
        res["fig4"] = {"attribute": "home/out", "k": 10, "r": 0.02, "n_users_home": int(home_inputs.size), "rows": rows}

        # Fig. 5: TM vs RR, PL, PG (male/female)
        rows = []
        for ea in sw["eps_a_values"]:
            t = st.tupling(float(ea), 0.02, 10)
            rows.append({"mechanism": "TM", "parameter": float(ea), "epsilon": t.distp_epsilon(l0, l1, DELTA),
                         "expected_loss": t.expected_loss(pooled, st.cost)})
            adv()
        n_y = st.regions.n
        for e in sw["rr_eps"]:
            a = local.randomized_response(n_y, float(e)).restrict_inputs(st.inputs)
            rows.append(_point_row("RR", float(e), a, l0, l1, pooled, st.cost))
        for e in sw["pl_eps"]:
            rows.append(_point_row("PL", float(e), local.planar_laplace(st.cost, float(e)), l0, l1, pooled, st.cost))
        for s in sw["pg_sigma"]:
            rows.append(_point_row("PG", float(s), local.planar_gaussian(st.cost, float(s)), l0, l1, pooled, st.cost))
        adv(len(sw["eps_a_values"]))
        res["fig5"] = {"attribute": "male/female", "k": 10, "r": 0.02, "rows": rows}

        # Table 2
        t = st.tupling(10.0, 0.02, 10)
        table = []
        for d in (0.001, 0.01, 0.1):
            th = t.theorem3(l0, l1, d)
            table.append({"divergence": f"delta={d:g}", "theorem_bound": th.epsilon, "exact": t.distp_epsilon(l0, l1, d),
                          "alpha": th.alpha, "beta": th.beta,
                          "paper_theoretical": PAPER_TABLE2["theoretical"][f"delta={d:g}"],
                          "paper_empirical": PAPER_TABLE2["empirical"][f"delta={d:g}"]})
            adv()
        table.append({"divergence": "KL", "theorem_bound": t.theorem7(l0, l1),
                      "exact": t.distp_divergence(l0, l1, "kl"), "alpha": None, "beta": None,
                      "paper_theoretical": PAPER_TABLE2["theoretical"]["KL"],
                      "paper_empirical": PAPER_TABLE2["empirical"]["KL"]})
        adv()
        res["table2"] = {"k": 10, "eps_a": 10.0, "r": 0.02, "attribute": "male/female", "rows": table,
                         "paper_reference": PAPER_TABLE2}
    outdir = prepare_out(out)
    if outdir is not None:
        res["figures"] = _plot(res, outdir)
        (outdir / "kawamoto_tupling.json").write_text(dumps(res))
        (outdir / "kawamoto_tupling.md").write_text(
            kawamoto_tupling_markdown(res, figures=True) + _timing_md(time.perf_counter() - start), encoding="utf-8")
    return res


def _timing_md(seconds: float) -> str:
    return "\n## Timing\n\n" + markdown_table([{"item": STUDY, "seconds": seconds}])


def _point_row(name: str, param: float, a: local.Mechanism, l0: np.ndarray, l1: np.ndarray,
               pooled: np.ndarray, cost: np.ndarray) -> dict[str, Any]:
    return {"mechanism": name, "parameter": param, "epsilon": local.distp_epsilon(a, l0, l1, DELTA),
            "expected_loss": a.expected_loss(pooled, cost)}


#: Fig. 5 legend: what each curve is and which parameter moves along it.
MECHANISM_NAMES = {
    "TM": "TM: tupling mechanism, (ε_A, 0.02)-RL + 10 dummies (ε_A varies)",
    "RR": "RR: randomized response over Y (its ε varies)",
    "PL": "PL: planar Laplace (its ε varies)",
    "PG": "PG: planar Gaussian (σ varies)",
}


def _plot(res: dict[str, Any], outdir: Path) -> list[str]:
    """Fig. 2 (four panels), Fig. 4 and Fig. 5 as PNGs with titles, panel labels and legends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = res["data"]
    where = f"{d['source']} check-ins, |Y| = {d['n_regions']}, |X| = {d['n_inputs']}"
    files = []
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.4))
    f2a, f2b, f2c = res["fig2a"], res["fig2b"], res["fig2c"]
    specs = (
        ("fig2a", "k", "number of dummies k", f"(a) ε vs k (ε_A = {f2a['eps_a']:g}, r = {f2a['r']:g})"),
        ("fig2b", "eps_a", "ε_A of the (ε_A, r)-RL mechanism", f"(b) ε vs ε_A (k = {f2b['k']}, r = {f2b['r']:g})"),
        ("fig2c", "r", "radius r of the RL mechanism", f"(c) ε vs r (k = {f2c['k']}, ε_A = {f2c['eps_a']:g})"),
    )
    for ax, (key, col, xlabel, title) in zip(axes[:3], specs, strict=False):
        rows = sorted(res[key]["rows"], key=itemgetter(col))
        ax.plot([r[col] for r in rows], [r["epsilon"] for r in rows], "o-", label="exact ε, male/female")
        ax.set(xlabel=xlabel, ylabel=f"ε of (ε, {res['delta']:g})-DistP", title=title)
        if key == "fig2b":
            ax.set_xscale("log")
        ax.legend(fontsize=8)
    for r_val in sorted({r["r"] for r in res["fig2d"]["rows"]}):
        rows = sorted((r for r in res["fig2d"]["rows"] if r["r"] == r_val), key=lambda r: r["eps_a"])
        axes[3].plot([r["eps_a"] for r in rows], [r["expected_loss"] for r in rows], "o-", label=f"r = {r_val:g}")
    axes[3].set(xscale="log", xlabel="ε_A of the (ε_A, r)-RL mechanism", ylabel="expected quality loss",
                title=f"(d) expected loss vs ε_A (k = {res['fig2d']['k']})")
    axes[3].legend(fontsize=8, title="radius", title_fontsize=8)
    for ax in axes:
        ax.title.set_fontsize(10)
        ax.grid(alpha=0.3)
    fig.suptitle("Kawamoto & Murakami Fig. 2 (reproduced): DistP and quality loss of the tupling mechanism, "
                 f"male/female\n{where}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    files.append(str(outdir / "kawamoto_tupling_fig2.png"))
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    rows = sorted(res["fig4"]["rows"], key=lambda r: r["epsilon"])  # joined in ε order
    eps = [r["epsilon"] for r in rows]
    asr = [r["asr"] for r in rows]
    half = [1.96 * r.get("asr_se", 0.0) for r in rows]
    ax.errorbar(eps, asr, yerr=half, fmt="-", color="grey", ecolor="grey", capsize=3, zorder=1,
                label="Bayes attacker on 'home' check-ins, 95% interval (joined in ε order)")
    for r, marker in zip(sorted(rows, key=lambda r: r["eps_a"]), "osD^v<>ph*", strict=False):
        ax.plot(r["epsilon"], r["asr"], marker=marker, ls="none", ms=7, zorder=2, label=f"ε_A = {r['eps_a']:g}")
    ax.axhline(0.5, color="grey", ls="--", label="ASR = 0.5: the attacker learns nothing")
    ax.set(xlabel=f"ε of (ε, {res['delta']:g})-DistP for home/out", ylabel="attack success rate (ASR)",
           title=f"DistP vs ASR, home/out (k = {res['fig4']['k']}, r = {res['fig4']['r']:g})")
    ax.title.set_fontsize(10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, loc="lower right", ncol=2)
    fig.suptitle(f"Kawamoto & Murakami Fig. 4 (reproduced)\n{where}", fontsize=10)
    fig.tight_layout()
    files.append(str(outdir / "kawamoto_tupling_fig4.png"))
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8.4, 5.6))
    for mech in ("TM", "RR", "PL", "PG"):
        rows = sorted((r for r in res["fig5"]["rows"] if r["mechanism"] == mech), key=lambda r: r["epsilon"])
        ax.plot([r["epsilon"] for r in rows], [r["expected_loss"] for r in rows], "o-", label=MECHANISM_NAMES[mech])
    ax.set_xscale("symlog", linthresh=0.01)
    ax.set(xlabel=f"ε of (ε, {res['delta']:g})-DistP for male/female (symlog axis)", ylabel="expected quality loss",
           title="(ε, 0.001)-DistP vs expected loss: lower left is better")
    ax.title.set_fontsize(10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.suptitle(f"Kawamoto & Murakami Fig. 5 (reproduced)\n{where}", fontsize=10)
    fig.tight_layout()
    files.append(str(outdir / "kawamoto_tupling_fig5.png"))
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)
    return files


def kawamoto_tupling_markdown(res: dict[str, Any], *, figures: bool = False) -> str:
    """Markdown report of :func:`run_kawamoto_tupling`'s result (``figures=True`` embeds the PNGs written next to it)."""
    d = res["data"]
    parts = [f"# {STUDY} (data: {d['source']}, {d['n_regions']} regions, |X| = {d['n_inputs']})\n",
             f"Regions: {d.get('regions_note', '')}\n"]

    def fig(name: str) -> str:
        return f"\n![{name}](kawamoto_tupling_{name}.png)\n" if figures and res.get("figures") else ""

    parts.append("## Fig. 2a: ε vs k ((100, 0.02)-RL, male/female)\n" + markdown_table(res["fig2a"]["rows"]))
    parts.append("## Fig. 2b: ε vs ε_A (k = 10, r = 0.02)\n" + markdown_table(res["fig2b"]["rows"]))
    parts.append("## Fig. 2c: ε vs r (k = 10, ε_A = 100)\n" + markdown_table(res["fig2c"]["rows"]))
    parts.append("## Fig. 2d: expected loss vs ε_A (k = 5)\n" + markdown_table(res["fig2d"]["rows"]) + fig("fig2"))
    parts.append("## Fig. 4: ε vs attack success rate (home/out)\n"
                 + markdown_table(sorted(res["fig4"]["rows"], key=lambda r: r["epsilon"])) + fig("fig4"))
    parts.append("## Fig. 5: (ε, 0.001)-DistP vs expected loss (male/female)\n"
                 + "\n".join(f"- {v}" for v in MECHANISM_NAMES.values()) + "\n\n"
                 + markdown_table(res["fig5"]["rows"]) + fig("fig5"))
    parts.append(
        "## Table 2: Theorem 3/7 bounds vs exact values (k = 10, ε_A = 10, r = 0.02)\n"
        + markdown_table(res["table2"]["rows"], ["divergence", "theorem_bound", "exact", "paper_theoretical",
                                                 "paper_empirical"])
        + f"\nPaper columns: {PAPER_TABLE2['source']} — computed on different (real) data.\n"
    )
    return "\n".join(parts)
