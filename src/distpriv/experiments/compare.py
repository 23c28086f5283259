"""``distpriv reproduce compare``: every mechanism side by side on Chen & Ohrimenko's Table 3 workload.

Workload (Chen & Ohrimenko Sec. 6, Table 3): UCI Adult, datasets of n = 100 records, the five-statistic
query :data:`distpriv.queries.ADULT_QUERY`, the secret pair p = 0.45 vs 0.55 (Δp = 0.1) of the share of
records satisfying a predicate — income > 50K (Table 3's property) and two more, workclass = Private
and sex = Female — f_θ the Gaussian fit of 1,000 sampled datasets per θ (appendix C.1), δ = 10⁻³,
ε ∈ {0.2, 1, 5}.

Mechanisms, each calibrated to the same target (ε, δ) under the same Gaussian f_θ with exact accounting
(``calibration="exact"``: the papers' noise is topped up where their theorem falls short, never claimed
silently): the papers' ExpM (L), DirM (L), ExpM (G), DirM (G), EigM (G), DauM (G); OptM (G) (least
E||Z||² Gaussian noise); the peers SSP quantizer (Lin et al.), Ding (L) and Kantorovich (Ding; built on
the 1,000 samples per θ, whose plan it needs). Per row:

* ``l2_error``: mean ||M(F(D)) − F(D)||₂ over ``reps`` fresh datasets (Sec. 6.2's protocol);
  ``expected_l2_error``: the mechanism's E||M(F) − F||₂ under the model;
* ``claimed_delta``: the δ the mechanism claims at ε after our accounting (<= the target);
  ``exact_delta``: the proven δ(ε) under the Gaussian f_θ where the claim rests on another law
  (Kantorovich: the samples) — ``None`` when it is the claim itself;
* ``meta_classifier_accuracy``: Sec. 6.3's attack (logistic regression trained on clean shadow
  values, tested on released values), mean over repetitions; ``likelihood_ratio_accuracy``: the
  Gaussian likelihood-ratio attacker with the defence's noise covariance;
* ``audit_epsilon_lower``: :func:`distpriv.audit`'s lower bound on ε at the claimed δ (95%
  confidence) against the Gaussian f_θ — it must stay below the claimed ε;
* ``own_notion``: the peer's own privacy measure (SSP: attacker success Π under a uniform prior
  on the pair; Ding (L): the paper's δ; Kantorovich: the sensitivity Δ_K).

Cost: a fresh full run is about 17 CPU seconds on a loaded machine (32 before issue 25's "compare in
seconds": the run now holds BLAS to one thread, :func:`_one_blas_thread`, whose spinning workers cost a
quarter of it, and the SSP quantizer's certified PLDs are a third shorter and skip the dominated order;
37 before the vectorised coupling split, :func:`distpriv.accounting.laplace._level_split`, and the audit's
one-sort thresholds). What is left: the verified Laplace top-ups of ExpM (L) and DirM (L) (~4.5 s), the
audits' classifiers (~5 s with scikit-learn's import), the Kantorovich assignments (~1.5 s) and the
imports. ``run_compare(cache=folder)`` memoises every calibration, audit and proven δ
on disk (:mod:`.compare_cache`, keyed on the code and every input), so a repeated run gives the same
rows in about 2 CPU seconds (``benchmarks/bench_compare.py``; ``--before REV`` times a fresh run of
another commit in the same run and lists the numbers that moved).
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_int
from ..errors import DistPrivError, InvalidParameterError
from ..formatting import dumps, markdown_table, prepare_out, progress
from .chen_ohrimenko.settings import DELTA, EPSILONS, MODEL_SAMPLES, N_RECORDS, _rng, pair_for

STUDY = "compare"
#: The compared properties: predicate of the protected share (Table 3 protects income).
PROPERTIES: dict[str, str] = {"income": "income=>50K", "workclass": "workclass=Private", "sex": "sex=Female"}
DELTA_P = 0.1
#: (registry name, label, which model it is calibrated on: "gaussian" fit or the "samples").
MECHANISMS: tuple[tuple[str, str, str], ...] = (
    ("expm-laplace", "ExpM (L)", "gaussian"),
    ("dirm-laplace", "DirM (L)", "gaussian"),
    ("expm-gauss", "ExpM (G)", "gaussian"),
    ("dirm-gauss", "DirM (G)", "gaussian"),
    ("eigm", "EigM (G)", "gaussian"),
    ("daum", "DauM (G)", "gaussian"),
    ("optm", "OptM (G)", "gaussian"),
    ("ssp-quantizer", "SSP quantizer", "gaussian"),
    ("ding-laplace", "Ding (L)", "gaussian"),
    ("kantorovich", "Kantorovich", "samples"),
)
FULL = {"reps": 50, "n_shadow": 200, "n_test": 200, "attack_reps": 20, "audit_trials": 20_000}
QUICK = {"reps": 20, "n_shadow": 100, "n_test": 100, "attack_reps": 5, "audit_trials": 4_000}
COLUMNS = ("property", "mechanism", "epsilon", "claimed_delta", "l2_error", "expected_l2_error",
           "meta_classifier_accuracy", "likelihood_ratio_accuracy", "audit_epsilon_lower", "own_notion")


def _models(ctx: Any, predicate: str, pair: tuple[float, float], seed: int) -> tuple[Any, Any, Any]:
    """PropertyModels (model / aux / test records) and the 1,000-sample f_θ of the pair."""
    from ..property import PropertyModel
    from ..queries import as_predicate

    pms = tuple(PropertyModel(getattr(ctx.split, part), as_predicate(predicate), ctx.query, ctx.n)
                for part in ("model", "aux", "test"))
    emp = pms[0].empirical_model(list(pair), size=ctx.model_samples, rng=_rng(seed, "compare-model", predicate, pair),
                                 claim_scope="papers")
    return pms, emp, emp.to_gaussian()


def _calibrate(name: str, model: Any, pair: tuple[float, float], eps: float, delta: float) -> tuple[Any, list[str]]:
    from ..mechanisms import calibrate

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mech = calibrate(name, model, [pair], epsilon=eps, delta=delta)
    return mech, sorted({f"{w.category.__name__}: {w.message}" for w in caught})


def _exact_delta(mech: Any, gm: Any, pair: tuple[float, float], eps: float) -> float | None:
    """Proven δ(ε) under the Gaussian f_θ for a claim made on another law (Kantorovich's samples)."""
    from ..accounting.release import NoiseLaw, proven_delta

    prof = proven_delta(gm, [pair], NoiseLaw.laplace(mech.basis, mech.scales), eps, rtol=1e-2)
    return float(prof.delta_upper)


def _own_notion(name: str, mech: Any) -> str | None:
    d = mech.details
    if name == "ssp-quantizer":
        return f"attacker success Π = {d['attacker_success']:.4f} (bin width {d['bin_width']:.3g})"
    if name == "ding-laplace":
        return f"paper's (ε, δ) claim δ = {d['paper_delta']:g}; proven δ = {d.get('exact_delta', 0.0):.3g}"
    if name == "kantorovich":
        return f"ε-Pufferfish on the samples, Δ_K = {d['kantorovich_sensitivity']:.4g}"
    return None


def run_compare(
    *,
    quick: bool = False,
    seed: int = 0,
    properties: Sequence[str] | None = None,
    epsilons: Sequence[float] = EPSILONS,
    delta: float = DELTA,
    mechanisms: Sequence[str] | None = None,
    audit: bool = True,
    out: str | Path | None = None,
    show_progress: bool = False,
    cache: str | Path | None = None,
) -> dict[str, Any]:
    """Compute the comparison (module docstring).

    ``quick``: income only (unless ``properties`` is given), fewer datasets, attack repetitions and
    audit trials. ``mechanisms``: registry names of :data:`MECHANISMS` to run (default all);
    ``audit=False`` skips the audit column. ``cache``: a folder memoising the calibrated mechanisms
    across runs (:mod:`.compare_cache`: keyed on the code and every input, so a hit is the very
    mechanism a fresh calibration gives; the CLI uses ``$XDG_CACHE_HOME/distpriv/compare``);
    ``None`` (the default) calibrates everything afresh. The rows do not depend on it.

    The computation runs with one BLAS thread (:func:`_one_blas_thread`): its matrices are small, and
    OpenBLAS's worker threads only spin (issue 25: an eighth of a fresh run's CPU time on a loaded machine).
    """
    with _one_blas_thread():
        return _run_compare(quick=quick, seed=seed, properties=properties, epsilons=epsilons, delta=delta,
                            mechanisms=mechanisms, audit=audit, out=out, show_progress=show_progress, cache=cache)


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Limit the BLAS libraries (numpy's and scipy's OpenBLAS) to one thread inside the block.

    The comparison's linear algebra is on 5 × 5 matrices and vectors of at most ~10⁵ entries, which
    OpenBLAS splits across threads that then spin-wait between calls; on a shared machine that waiting
    is CPU time with no work done (measured: the L-BFGS fits of the audits' classifiers cost 2.4× as
    much with two threads). One thread also fixes the summation order of the large dot products, so
    the numbers do not depend on the machine's core count.
    """
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # scikit-learn's dependency

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _run_compare(*, quick: bool, seed: int, properties: Sequence[str] | None, epsilons: Sequence[float], delta: float,
                 mechanisms: Sequence[str] | None, audit: bool, out: str | Path | None, show_progress: bool,
                 cache: str | Path | None) -> dict[str, Any]:
    """:func:`run_compare`'s body (under one BLAS thread)."""
    from ..attacks import MetaClassifierAttack, likelihood_ratio_attack, sample_attack_data
    from ..auditing import audit as run_audit
    from . import compare_cache
    from .chen_ohrimenko.context import get_context

    seed = check_int(seed, "seed", minimum=0)
    props = (["income"] if quick else list(PROPERTIES)) if properties is None else list(properties)
    for p in props:
        if p not in PROPERTIES:
            raise InvalidParameterError(f"unknown property {p!r}; expected some of {list(PROPERTIES)}",
                                        argument="properties")
    known = [name for name, _, _ in MECHANISMS]
    chosen = known if mechanisms is None else list(mechanisms)
    for name in chosen:
        if name not in known:
            raise InvalidParameterError(f"unknown mechanism {name!r}; expected some of {known}", argument="mechanisms")
    selected = tuple(row for row in MECHANISMS if row[0] in chosen)
    sizes = QUICK if quick else FULL
    t0 = time.perf_counter()
    ctx = get_context(seed, n=N_RECORDS, model_samples=MODEL_SAMPLES)
    pair = pair_for(DELTA_P)
    rows: list[dict[str, Any]] = []
    notes: set[str] = set()
    folder = None if cache is None else Path(cache)
    hits = 0
    total = len(props) * len(epsilons) * len(selected)
    with progress("compare", total, enabled=show_progress) as advance:
        for prop in props:
            pms, emp, gm = _models(ctx, PROPERTIES[prop], pair, seed)
            g = _rng(seed, "compare-data", prop)
            half = (sizes["reps"] + 1) // 2
            x = np.concatenate([pms[0].sample_query(pair[0], half, g), pms[0].sample_query(pair[1], sizes["reps"] - half, g)])
            data = sample_attack_data((pms[1].sample_query, pms[2].sample_query), *pair, n_shadow=sizes["n_shadow"],
                                      n_test=sizes["n_test"], reps=sizes["attack_reps"], rng=_rng(seed, "compare-attack", prop))
            attack = MetaClassifierAttack().fit(data)
            base = attack.evaluate(data, None, _rng(seed, "compare-none", prop)).accuracy
            rows.append({"property": prop, "mechanism": "None", "epsilon": None, "claimed_delta": None,
                         "l2_error": 0.0, "expected_l2_error": 0.0, "meta_classifier_accuracy": base,
                         "likelihood_ratio_accuracy": likelihood_ratio_attack(data, None, rng=_rng(seed, "lr", prop)).accuracy,
                         "audit_epsilon_lower": None, "own_notion": None})
            for eps in epsilons:
                for name, label, on in selected:
                    key = (prop, name, float(eps))
                    row: dict[str, Any] = {"property": prop, "mechanism": label, "epsilon": float(eps)}
                    model = emp if on == "samples" else gm
                    try:
                        cal_key = compare_cache.calibration_key(name, model, pair, float(eps), delta)
                        (mech, warned), hit = compare_cache.cached(
                            folder, cal_key, lambda: _calibrate(name, model, pair, float(eps), delta))  # noqa: B023
                        hits += hit
                    except DistPrivError as exc:  # a refusal is a result: the mechanism proves nothing here
                        rows.append({**row, "claimed_delta": None, "refused": str(exc)})
                        notes.add(f"{label} refused on {prop}: {exc}")
                        advance()
                        continue
                    notes.update(f"{label} ({prop}, ε = {eps:g}): {w}" for w in warned)
                    y = mech.release_batch(x, _rng(seed, "compare-noise", *key))
                    row["claimed_delta"] = float(mech.guarantee.delta)
                    gm_bytes = compare_cache.model_fingerprint(gm, pair)
                    if on == "samples":
                        row["exact_delta"], hit = compare_cache.cached(
                            folder, compare_cache.key("exact-delta", cal_key, gm_bytes),
                            lambda: _exact_delta(mech, gm, pair, float(eps)))  # noqa: B023
                        hits += hit
                    else:
                        row["exact_delta"] = None
                    row["l2_error"] = float(np.linalg.norm(y - x, axis=1).mean())
                    row["expected_l2_error"] = float(mech.expected_l2_error)
                    row["meta_classifier_accuracy"] = attack.evaluate(data, mech, _rng(seed, "compare-test", *key)).accuracy
                    row["likelihood_ratio_accuracy"] = likelihood_ratio_attack(
                        data, mech, rng=_rng(seed, "compare-lr", *key)).accuracy
                    if audit:
                        audit_key = compare_cache.key("audit", cal_key, gm_bytes, sizes["audit_trials"], 0.95, seed, key)
                        rep, hit = compare_cache.cached(folder, audit_key, lambda: run_audit(  # noqa: B023
                            mech, gm, pair, trials=sizes["audit_trials"], confidence=0.95,  # noqa: B023
                            rng=_rng(seed, "compare-audit", *key)))  # noqa: B023
                        hits += hit
                        row["audit_epsilon_lower"] = float(rep.epsilon_lower)
                        row["audit_scorer"] = rep.scorer
                    else:
                        row["audit_epsilon_lower"] = None
                    row["own_notion"] = _own_notion(name, mech)
                    rows.append(row)
                    advance()
    notes.add("every mechanism is calibrated to the same target (ε, δ) on the same Gaussian f_θ (Kantorovich on its "
              "1,000 samples per θ, with its proven δ under the Gaussian f_θ in exact_delta); claimed_delta is what "
              "our exact accounting proves (<= the target)")
    notes.add("OptM (G) minimises E||Z||₂² (the trace of Σ_Z), not E||Z||₂: a rank-one noise (DirM (G), DauM (G)) of "
              "slightly larger trace can show a smaller L2 error, since E||Z||₂ = σ·sqrt(2/π) in one direction")
    notes.add("SSP quantizer: a deterministic output; with bins wider than f_θ's spread it releases (nearly) the "
              "pair's public midpoint, so its error is f_θ's own spread around it — the price is that the release "
              "carries almost no information about F(D) beyond Ψ")
    res: dict[str, Any] = {
        "study": STUDY,
        "title": f"Mechanisms compared on Chen & Ohrimenko's Table 3 workload (Adult, n = {ctx.n}, Δp = {DELTA_P}, δ = {delta:g})",
        "settings": {"pair": list(pair), "delta": delta, "epsilons": [float(e) for e in epsilons], "properties":
                     {p: PROPERTIES[p] for p in props}, "n": ctx.n, "model_samples": ctx.model_samples, "seed": seed,
                     "quick": quick, "mechanisms": [lab for _, lab, _ in selected], "audit": audit, **sizes},
        "rows": rows,
        "notes": sorted(notes),
        "seconds": time.perf_counter() - t0,
    }
    if folder is not None:
        res["calibration_cache"] = {"folder": str(folder), "hits": hits}
    folder = prepare_out(out)
    if folder is not None:
        (folder / "compare.json").write_text(dumps(res))
        (folder / "compare.md").write_text(compare_markdown(res))
        res["figure"] = str(figure(res, folder / "compare.png"))
    return res


def figure(res: dict[str, Any], path: str | Path) -> Path:
    """PNG: expected L2 error (log scale) and meta-classifier accuracy against ε, one panel pair per property."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    props = list(res["settings"]["properties"])
    eps_ticks = sorted({float(r["epsilon"]) for r in res["rows"] if r.get("epsilon") is not None})
    fig, axes = plt.subplots(2, len(props), figsize=(4.2 * len(props), 7), squeeze=False)
    labels = [lab for _, lab, _ in MECHANISMS]
    markers = "osD^v<>pPX*h"
    for j, prop in enumerate(props):
        for i, lab in enumerate(labels):
            pts = [r for r in res["rows"] if r["property"] == prop and r["mechanism"] == lab and r.get("l2_error") is not None]
            if not pts:
                continue
            eps = [r["epsilon"] for r in pts]
            axes[0, j].plot(eps, [max(r["l2_error"], 1e-3) for r in pts], marker=markers[i % len(markers)], label=lab)
            axes[1, j].plot(eps, [r["meta_classifier_accuracy"] for r in pts], marker=markers[i % len(markers)], label=lab)
        none = [r for r in res["rows"] if r["property"] == prop and r["mechanism"] == "None"]
        if none:
            axes[1, j].axhline(none[0]["meta_classifier_accuracy"], color="grey", ls="--", label="no defence")
        axes[0, j].set(xscale="log", yscale="log", title=f"{prop}: L2 error", xlabel="ε")
        axes[1, j].set(xscale="log", title=f"{prop}: attack accuracy", xlabel="ε", ylim=(0.4, 1.0))
        for ax in axes[:, j]:  # ticks at the computed ε only (log-axis minor labels overlapped, and cost a second)
            ax.xaxis.set_major_locator(ticker.FixedLocator(eps_ticks))
            ax.xaxis.set_major_formatter(ticker.FixedFormatter([f"{e:g}" for e in eps_ticks]))
            ax.xaxis.set_minor_locator(ticker.NullLocator())
        # plain numbers, no mathtext (which cost a second of CPU); minor ticks labelled only when the errors
        # span less than one decade (else no tick would carry a label)
        axes[0, j].yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        lo, hi = axes[0, j].get_ylim()
        few = math.floor(math.log10(hi)) - math.ceil(math.log10(lo)) < 1
        axes[0, j].yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g") if few else ticker.NullFormatter())
    axes[0, -1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def compare_markdown(res: dict[str, Any]) -> str:
    """The comparison as a Markdown table (with the notes)."""
    rows = [{**r, "claimed_delta": r.get("claimed_delta") if "refused" not in r else "refused"} for r in res["rows"]]
    text = [f"## {res['title']}", "", markdown_table(rows, COLUMNS, digits=4), ""]
    text += [f"- {n}" for n in res["notes"]]
    return "\n".join(text) + "\n"


