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
* ``n_leaked_attack``, ``n_leaked_cap``: Suri & Evans' distribution-inference unit (PETS 2022;
  :mod:`distpriv.leakage`): how many records' property labels an ideal adversary would need to match the
  better attack's accuracy, and the most any attacker can reach under the row's (ε, δ) — the cap
  (e^ε + δ)/(1 + e^ε) on accuracy read in records (∞ undefended);
* ``audit_epsilon_lower``: :func:`distpriv.audit`'s lower bound on ε at the claimed δ (95%
  confidence) against the Gaussian f_θ — it must stay below the claimed ε;
* ``own_notion``: the peer's own privacy measure (SSP: attacker success Π under a uniform prior
  on the pair; Ding (L): the paper's δ; Kantorovich: the sensitivity Δ_K).

Cost: the run is cut into independent tasks, one per (property, mechanism) over every ε and one per
property's undefended row (:mod:`.compare_work`), run in ``jobs`` worker processes (default
``min(2, os.cpu_count())``; ``jobs=1`` runs them in this process). The workers are forked from a
forkserver that imports their modules once (:data:`.compare_work.PRELOAD`) while the CLI starts up; every
random draw is keyed on what it draws, so the rows do not depend on ``jobs``. A fresh full run costs about
20 CPU seconds (docs/peers.md has the measured wall and CPU times): most of it is the verified Laplace top-ups,
which since issue 25 carry the certified tight bounds of ``distpriv.calibrate``'s default (DirM (L) ~11 s, its
joint-law grid; ExpM (L) ~6.5 s, the common Gaussian factor), then the audits (~3 s), the imports (~2 s per
process) and the peers' calibrations (~2 s: the SSP quantizer's PLDs, the Kantorovich
assignments). ``run_compare(cache=folder)``
memoises every calibration, audit and proven δ on disk (:mod:`.compare_cache`, keyed on the code and every
input), so a repeated run gives the same rows in about 2 CPU seconds (``benchmarks/bench_compare.py``:
wall and CPU seconds, the workers' included; ``--before REV`` times a fresh run of another commit, of this
tree and of this tree with ``jobs=1`` in the same run and lists the numbers that moved).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .._validation import check_int
from ..errors import InvalidParameterError
from ..formatting import dumps, markdown_table, prepare_out, progress
from .chen_ohrimenko.settings import DELTA, EPSILONS, MODEL_SAMPLES, N_RECORDS, pair_for

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
           "meta_classifier_accuracy", "likelihood_ratio_accuracy", "n_leaked_attack", "n_leaked_cap",
           "audit_epsilon_lower", "own_notion")


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
    jobs: int | None = None,
) -> dict[str, Any]:
    """Compute the comparison (module docstring).

    ``quick``: income only (unless ``properties`` is given), fewer datasets, attack repetitions and
    audit trials. ``mechanisms``: registry names of :data:`MECHANISMS` to run (default all);
    ``audit=False`` skips the audit column. ``cache``: a folder memoising the calibrated mechanisms
    across runs (:mod:`.compare_cache`: keyed on the code and every input, so a hit is the very
    mechanism a fresh calibration gives; the CLI uses ``$XDG_CACHE_HOME/distpriv/compare``);
    ``None`` (the default) calibrates everything afresh. The rows do not depend on it.

    ``jobs``: worker processes (default ``min(2, os.cpu_count())``; 1 runs everything in this process). The
    run is cut into independent tasks, one per (property, mechanism) and one per property's undefended row
    (:mod:`.compare_work`), whose random draws are keyed on what they draw, never on a shared stream: the
    rows are the same for every ``jobs`` (only ``seconds``, ``jobs`` and ``task_cpu`` in the result differ;
    ``jobs`` there is the number of processes that ran the tasks). With a ``cache`` that holds every value of
    the run (:func:`.compare_work.all_cached`) they are read back in this process, without workers.
    With ``jobs`` > 1 the workers come from a forkserver, which imports the caller's ``__main__`` module in
    each worker: a script calling this must guard its top level with ``if __name__ == "__main__":`` (as for
    any multiprocessing start method other than fork), or pass ``jobs=1``.

    The computation runs with one BLAS thread per process (:func:`_one_blas_thread`): its matrices are small,
    and OpenBLAS's worker threads only spin (issue 25: an eighth of a fresh run's CPU time on a loaded machine).
    """
    from .compare_work import default_jobs

    n_jobs = default_jobs(jobs)
    return _run_compare(quick=quick, seed=seed, properties=properties, epsilons=epsilons, delta=delta,
                        mechanisms=mechanisms, audit=audit, out=out, show_progress=show_progress, cache=cache,
                        jobs=n_jobs)


#: Relative CPU cost of one (property, mechanism) task over the three ε, the Gaussian papers' mechanisms = 1
#: (measured on the full run, issue 25: ExpM (L) 0.8–1.0 s, DirM (L) 0.5–0.65 s, Kantorovich 0.45–0.6 s, the SSP
#: quantizer 0.15–0.75 s, OptM 0.25–0.4 s, Ding (L) ~0.23 s, the others 0.07–0.17 s): tasks are handed out
#: longest first, so the workers finish at about the same time. Only the order of the work depends on it,
#: never a number.
TASK_COST: dict[str, float] = {"expm-laplace": 9.0, "dirm-laplace": 6.0, "kantorovich": 5.0, "ssp-quantizer": 4.0,
                               "optm": 3.0, "ding-laplace": 2.3}


@contextlib.contextmanager
def _pool(jobs: int, shipped: dict[Any, Any] | None = None) -> Iterator[Any]:
    """``jobs`` worker processes forked from a forkserver that has imported :data:`.compare_work.PRELOAD`.

    The forkserver (started once per Python process, then reused) pays the imports once; its forks start
    with them loaded. Each worker holds BLAS to one thread (:func:`.compare_work.worker_init`). When the
    block raises (a task's exception, re-raised by its future), the tasks not yet started are cancelled.
    ``shipped``: the properties' inputs (:func:`.compare_work.property_inputs`), handed to every worker.
    """
    from concurrent.futures import ProcessPoolExecutor

    from .compare_work import forkserver_context, worker_init

    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=forkserver_context(), initializer=worker_init,
                               initargs=(shipped,))
    try:
        yield pool
    except BaseException:  # a task failed (or ^C): drop the queued tasks instead of running them to the end
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


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
                 cache: str | Path | None, jobs: int) -> dict[str, Any]:
    """:func:`run_compare`'s body: the tasks (:mod:`.compare_work`) run in ``jobs`` processes (1: in this one)."""
    from .compare_work import (
        Settings,
        TaskResult,
        all_cached,
        inputs_key,
        property_inputs,
        run_task,
        shipped_inputs,
    )

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
    pair = pair_for(DELTA_P)
    eps_grid = tuple(float(e) for e in epsilons)
    settings = Settings(seed=seed, sizes=tuple(sizes.items()), epsilons=eps_grid, delta=float(delta), audit=audit,
                        pair=pair, folder=None if cache is None else str(cache),
                        predicates=tuple(PROPERTIES.items()), mechanisms=selected)
    tasks: list[tuple[str, ...]] = [("none", p) for p in props]
    tasks += sorted((("mechanism", p, name) for p in props for name, _, _ in selected),
                    key=lambda t: -TASK_COST.get(t[2], 1.0))  # longest first: the workers finish together
    done: dict[tuple[str, ...], TaskResult] = {}
    total = len(props) * len(eps_grid) * len(selected)
    with progress("compare", total, enabled=show_progress) as advance:
        shipped: dict[Any, Any] = {}
        if jobs > 1 and len(tasks) > 1:
            with _one_blas_thread():  # the properties' data, built here while the forkserver imports
                shipped = {inputs_key(settings, p): property_inputs(*inputs_key(settings, p)) for p in props}
            if all_cached(settings, props, {p: shipped[inputs_key(settings, p)] for p in props}):
                jobs = 1  # a warm rerun: reading every value back here costs less than starting workers
        if jobs == 1 or len(tasks) == 1:
            with _one_blas_thread(), shipped_inputs(shipped):
                for task in tasks:
                    done[task] = run_task(settings, task)
                    advance(len(done[task].rows) if task[0] == "mechanism" else 0)
        else:
            from concurrent.futures import as_completed

            with _pool(jobs, shipped) as pool:
                futures = [pool.submit(run_task, settings, task) for task in tasks]
                for fut in as_completed(futures):
                    got = fut.result()
                    done[got.task] = got
                    advance(len(got.rows) if got.task[0] == "mechanism" else 0)
    rows: list[dict[str, Any]] = []
    notes: set[str] = set()
    for prop in props:
        rows += done[("none", prop)].rows
        by_mech = {name: done[("mechanism", prop, name)] for name, _, _ in selected}
        for i in range(len(eps_grid)):
            for name, _, _ in selected:
                rows.append(by_mech[name].rows[i])  # one row per ε, refused or not
    for got in done.values():
        notes.update(got.notes)
    hits = sum(got.hits for got in done.values())
    folder = None if cache is None else Path(cache)
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
        "title": f"Mechanisms compared on Chen & Ohrimenko's Table 3 workload (Adult, n = {N_RECORDS}, Δp = {DELTA_P}, "
                 f"δ = {delta:g})",
        "settings": {"pair": list(pair), "delta": delta, "epsilons": [float(e) for e in epsilons], "properties":
                     {p: PROPERTIES[p] for p in props}, "n": N_RECORDS, "model_samples": MODEL_SAMPLES, "seed": seed,
                     "quick": quick, "mechanisms": [lab for _, lab, _ in selected], "audit": audit, **sizes},
        "rows": rows,
        "notes": sorted(notes),
        "seconds": time.perf_counter() - t0,
        "jobs": jobs,
        # CPU seconds of the tasks per process, busiest first (the balance of the workers; run-dependent)
        "task_cpu": sorted((round(sum(d.cpu for d in done.values() if d.span[2] == pid), 3)
                            for pid in {d.span[2] for d in done.values()}), reverse=True),
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


