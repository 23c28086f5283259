"""The units of work of ``distpriv reproduce compare`` (:mod:`.compare`), run in worker processes or in-process.

A run is split into independent tasks (:func:`run_task`):

* ``("none", property)``: the undefended row of a property (the attacks on the clean values);
* ``("mechanism", property, name)``: one mechanism on one property at every ε — calibration, released
  values, both attacks and the audit of each (property, ε) cell.

Every random draw of a task comes from a generator keyed on (seed, what it draws, property, mechanism, ε)
(:func:`distpriv.experiments.chen_ohrimenko.settings._rng`), never from a stream shared with another
task, so a task's rows are the same whichever process runs it, in whichever order: the rows do not depend
on the number of worker processes. The per-property inputs (the empirical and Gaussian f_θ, the datasets,
the attack's shadow and test values: :func:`property_inputs`) are themselves pure functions of (seed,
property, sizes): the parent computes them once while the workers' forkserver imports, and hands them to
every worker (:func:`worker_init`); each process fits the meta-classifier on them once
(:func:`property_state`).

A mechanism's cells stay in one task because its calibrations share process-local work across ε
(Kantorovich's transport plan is computed once per model).
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Modules a worker process needs, imported once by the forkserver before it forks the workers
#: (:func:`forkserver_context`): each worker then starts with them loaded instead of importing them itself
#: (~2 s of CPU per process: scikit-learn, which imports pandas, SciPy, cvxpy for OptM). A module that is not
#: installed is skipped by the forkserver (the worker imports what it needs, or fails, as serially).
PRELOAD: tuple[str, ...] = (
    "numpy", "scipy.stats", "scipy.optimize", "scipy.spatial.distance", "sklearn.linear_model", "sklearn.pipeline",
    "sklearn.preprocessing", "pandas", "cvxpy",
    "distpriv.mechanisms", "distpriv.mechanisms.optm", "distpriv.mechanisms.ssp", "distpriv.mechanisms.ding",
    "distpriv.attacks", "distpriv.auditing", "distpriv.accounting.release", "distpriv.datasets.adult",
    "distpriv.property", "distpriv.queries", "distpriv.experiments.chen_ohrimenko.context",
    "distpriv.experiments.compare_cache", "distpriv.experiments.compare_work",
)


@dataclass(frozen=True)
class Settings:
    """What every task of one run shares: seed, sizes (:data:`.compare.FULL` / ``QUICK`` items), ε grid, δ,
    whether to audit, the secret pair, the cache folder (``None``: no cache), the properties' predicates and the
    mechanisms' (registry name, label, model) rows (:data:`.compare.PROPERTIES`, :data:`.compare.MECHANISMS`)."""

    seed: int
    sizes: tuple[tuple[str, int], ...]
    epsilons: tuple[float, ...]
    delta: float
    audit: bool
    pair: tuple[float, float]
    folder: str | None
    predicates: tuple[tuple[str, str], ...]
    mechanisms: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class PropertyInputs:
    """A property's data shared by its tasks: the empirical and Gaussian f_θ, the datasets' query values ``x``
    and the attack's shadow and test values (no fitted model: small to pickle, no scikit-learn needed)."""

    emp: Any
    gm: Any
    x: Any
    data: Any


@dataclass(frozen=True)
class PropertyState:
    """:class:`PropertyInputs` and the meta-classifier fitted on its shadow values."""

    emp: Any
    gm: Any
    x: Any
    data: Any
    attack: Any


#: Key of a property's inputs: (seed, property, predicate, pair, sizes).
InputsKey = tuple[int, str, str, tuple[float, float], tuple[tuple[str, int], ...]]
#: Inputs computed by the parent process and handed to this worker (:func:`worker_init`); else built here.
_SHIPPED: dict[InputsKey, PropertyInputs] = {}


def _models(ctx: Any, predicate: str, pair: tuple[float, float], seed: int) -> tuple[Any, Any, Any]:
    """PropertyModels (model / aux / test records) and the 1,000-sample f_θ of the pair."""
    from ..property import PropertyModel
    from ..queries import as_predicate
    from .chen_ohrimenko.settings import _rng

    pms = tuple(PropertyModel(getattr(ctx.split, part), as_predicate(predicate), ctx.query, ctx.n)
                for part in ("model", "aux", "test"))
    emp = pms[0].empirical_model(list(pair), size=ctx.model_samples, rng=_rng(seed, "compare-model", predicate, pair),
                                 claim_scope="papers")
    return pms, emp, emp.to_gaussian()


def property_inputs(seed: int, prop: str, predicate: str, pair: tuple[float, float],
                    sizes: tuple[tuple[str, int], ...]) -> PropertyInputs:
    """The data of ``prop``'s tasks: a pure function of its arguments (the Adult context of ``seed``, generators
    keyed on (seed, what is drawn, property)), so the parent may compute it once for every worker."""
    import numpy as np

    from ..attacks import sample_attack_data
    from .chen_ohrimenko.context import get_context
    from .chen_ohrimenko.settings import MODEL_SAMPLES, N_RECORDS, _rng

    size = dict(sizes)
    ctx = get_context(seed, n=N_RECORDS, model_samples=MODEL_SAMPLES)
    pms, emp, gm = _models(ctx, predicate, pair, seed)
    g = _rng(seed, "compare-data", prop)
    half = (size["reps"] + 1) // 2
    x = np.concatenate([pms[0].sample_query(pair[0], half, g), pms[0].sample_query(pair[1], size["reps"] - half, g)])
    data = sample_attack_data((pms[1].sample_query, pms[2].sample_query), *pair, n_shadow=size["n_shadow"],
                              n_test=size["n_test"], reps=size["attack_reps"], rng=_rng(seed, "compare-attack", prop))
    return PropertyInputs(emp, gm, x, data)


@functools.lru_cache(maxsize=4)
def property_state(seed: int, prop: str, predicate: str, pair: tuple[float, float],
                   sizes: tuple[tuple[str, int], ...]) -> PropertyState:
    """The inputs of ``prop``'s tasks (handed over by the parent, else :func:`property_inputs`) and the fitted
    meta-classifier (memoised per process)."""
    from ..attacks import MetaClassifierAttack

    key = (seed, prop, predicate, pair, sizes)
    inp = _SHIPPED.get(key) or property_inputs(*key)
    return PropertyState(inp.emp, inp.gm, inp.x, inp.data, MetaClassifierAttack().fit(inp.data))


def inputs_key(s: Settings, prop: str) -> InputsKey:
    """The :data:`InputsKey` of ``prop`` under the run's settings."""
    return (s.seed, prop, dict(s.predicates)[prop], s.pair, s.sizes)


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


@dataclass
class TaskResult:
    """A task's rows (in ε order), its notes and how many values came from the cache."""

    task: tuple[str, ...]
    rows: list[dict[str, Any]]
    notes: list[str]
    hits: int
    cpu: float = 0.0  # CPU seconds of the task in its process (diagnostics only)
    span: tuple[float, float, int] = (0.0, 0.0, 0)  # wall-clock start, end (time.time()) and process id


def _state(s: Settings, prop: str) -> PropertyState:
    return property_state(*inputs_key(s, prop))


def none_row(s: Settings, prop: str) -> TaskResult:
    """The undefended row of ``prop``: both attacks on the clean values."""
    from ..attacks import likelihood_ratio_attack
    from .chen_ohrimenko.settings import _rng

    st = _state(s, prop)
    base = st.attack.evaluate(st.data, None, _rng(s.seed, "compare-none", prop)).accuracy
    row = {"property": prop, "mechanism": "None", "epsilon": None, "claimed_delta": None,
           "l2_error": 0.0, "expected_l2_error": 0.0, "meta_classifier_accuracy": base,
           "likelihood_ratio_accuracy": likelihood_ratio_attack(st.data, None, rng=_rng(s.seed, "lr", prop)).accuracy,
           "audit_epsilon_lower": None, "own_notion": None}
    row.update(leakage_columns(row, s.pair))
    return TaskResult(("none", prop), [row], [], 0)


def leakage_columns(row: Mapping[str, Any], pair: tuple[float, float]) -> dict[str, float]:
    """Suri & Evans' n_leaked (:mod:`distpriv.leakage`) of a row: ``n_leaked_attack`` from the better of its two
    attacks' accuracies, ``n_leaked_cap`` the most any attacker can reach under the row's guarantee at (ε, δ under
    the Gaussian f_θ: ``exact_delta`` where the claim rests on another law, else ``claimed_delta``); ∞ without a
    guarantee (the undefended row). The pair's two shares p_0, p_1 are the per-record laws."""
    from ..leakage import n_leaked, n_leaked_cap

    p0, p1 = float(pair[0]), float(pair[1])
    acc = max(float(row["meta_classifier_accuracy"]), float(row["likelihood_ratio_accuracy"]))
    delta = row.get("exact_delta") if row.get("exact_delta") is not None else row.get("claimed_delta")
    eps = row.get("epsilon")
    cap = math.inf if eps is None or delta is None else n_leaked_cap(float(eps), float(delta), p0, p1)
    return {"n_leaked_attack": n_leaked(acc, p0, p1), "n_leaked_cap": cap}


@dataclass(frozen=True)
class CellKeys:
    """The cache keys of one (property, mechanism, ε) cell (:mod:`.compare_cache`): its calibration, its proven δ
    under the Gaussian f_θ (mechanisms calibrated on the samples; else ``None``) and its audit (``None`` without)."""

    calibration: str
    exact_delta: str | None
    audit: str | None


def cell_keys(s: Settings, prop: str, name: str, eps: float, emp: Any, gm: Any) -> CellKeys:
    """:class:`CellKeys` of ``name`` on ``prop`` at ``eps``: the digests :func:`mechanism_rows` reads and writes."""
    from . import compare_cache

    on = next(on for n, _, on in s.mechanisms if n == name)
    cal = compare_cache.calibration_key(name, emp if on == "samples" else gm, s.pair, float(eps), s.delta)
    gm_bytes = compare_cache.model_fingerprint(gm, s.pair)
    exact = compare_cache.key("exact-delta", cal, gm_bytes) if on == "samples" else None
    audit = (compare_cache.key("audit", cal, gm_bytes, dict(s.sizes)["audit_trials"], 0.95, s.seed,
                               (prop, name, float(eps))) if s.audit else None)
    return CellKeys(cal, exact, audit)


def all_cached(s: Settings, props: Sequence[str], inputs: Mapping[str, PropertyInputs]) -> bool:
    """Whether the cache folder of ``s`` holds every calibration, proven δ and audit of the run (a warm rerun:
    reading them back costs less than starting worker processes). ``False`` without a cache."""
    from . import compare_cache

    if s.folder is None:
        return False
    digests = []
    for prop in props:
        inp = inputs[prop]
        for name, _, _ in s.mechanisms:
            for eps in s.epsilons:
                k = cell_keys(s, prop, name, eps, inp.emp, inp.gm)
                digests += [d for d in (k.calibration, k.exact_delta, k.audit) if d is not None]
    return all(compare_cache.has_entry(Path(s.folder), d) for d in digests)


def mechanism_rows(s: Settings, prop: str, name: str) -> TaskResult:
    """``name`` on ``prop`` at every ε of ``s``: one row per ε (module docstring of :mod:`.compare`)."""
    import numpy as np

    from ..attacks import likelihood_ratio_attack
    from ..auditing import audit as run_audit
    from ..errors import DistPrivError
    from . import compare_cache
    from .chen_ohrimenko.settings import _rng

    label, on = next((lab, on) for n, lab, on in s.mechanisms if n == name)
    st = _state(s, prop)
    pair, seed, size = s.pair, s.seed, dict(s.sizes)
    folder = None if s.folder is None else Path(s.folder)
    model = st.emp if on == "samples" else st.gm
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    hits = 0
    for eps in s.epsilons:
        key = (prop, name, float(eps))
        row: dict[str, Any] = {"property": prop, "mechanism": label, "epsilon": float(eps)}
        keys = cell_keys(s, prop, name, eps, st.emp, st.gm)
        try:
            (mech, warned), hit = compare_cache.cached(
                folder, keys.calibration, lambda: _calibrate(name, model, pair, float(eps), s.delta))  # noqa: B023
            hits += hit
        except DistPrivError as exc:  # a refusal is a result: the mechanism proves nothing here
            rows.append({**row, "claimed_delta": None, "refused": str(exc)})
            notes.append(f"{label} refused on {prop}: {exc}")
            continue
        notes.extend(f"{label} ({prop}, ε = {eps:g}): {w}" for w in warned)
        y = mech.release_batch(st.x, _rng(seed, "compare-noise", *key))
        row["claimed_delta"] = float(mech.guarantee.delta)
        if keys.exact_delta is not None:
            row["exact_delta"], hit = compare_cache.cached(
                folder, keys.exact_delta,
                lambda: _exact_delta(mech, st.gm, pair, float(eps)))  # noqa: B023
            hits += hit
        else:
            row["exact_delta"] = None
        row["l2_error"] = float(np.linalg.norm(y - st.x, axis=1).mean())
        row["expected_l2_error"] = float(mech.expected_l2_error)
        row["meta_classifier_accuracy"] = st.attack.evaluate(st.data, mech, _rng(seed, "compare-test", *key)).accuracy
        row["likelihood_ratio_accuracy"] = likelihood_ratio_attack(
            st.data, mech, rng=_rng(seed, "compare-lr", *key)).accuracy
        if keys.audit is not None:
            rep, hit = compare_cache.cached(folder, keys.audit, lambda: run_audit(  # noqa: B023
                mech, st.gm, pair, trials=size["audit_trials"], confidence=0.95,  # noqa: B023
                rng=_rng(seed, "compare-audit", *key)))  # noqa: B023
            hits += hit
            row["audit_epsilon_lower"] = float(rep.epsilon_lower)
            row["audit_scorer"] = rep.scorer
        else:
            row["audit_epsilon_lower"] = None
        row["own_notion"] = _own_notion(name, mech)
        row.update(leakage_columns(row, pair))
        rows.append(row)
    return TaskResult(("mechanism", prop, name), rows, notes, hits)


def run_task(s: Settings, task: tuple[str, ...]) -> TaskResult:
    """Run one task (module docstring): ``("none", prop)`` or ``("mechanism", prop, name)``."""
    import os
    import time

    t0, c0 = time.time(), time.process_time()
    res = none_row(s, task[1]) if task[0] == "none" else mechanism_rows(s, task[1], task[2])
    res.cpu = time.process_time() - c0
    res.span = (t0, time.time(), os.getpid())
    return res


def default_jobs(jobs: int | None) -> int:
    """``jobs`` checked (an int >= 1), or ``min(2, os.cpu_count())`` when ``None``."""
    import os

    from .._validation import check_int

    return min(2, os.cpu_count() or 1) if jobs is None else check_int(jobs, "jobs", minimum=1)


def start_workers(jobs: int | None, cache: Path | None = None) -> None:
    """Start the forkserver now (it imports :data:`PRELOAD` while the caller imports the rest) when ``jobs`` > 1,
    unless the ``cache`` folder already holds entries of this code version (a rerun then most likely reads
    every value back in one process, :func:`all_cached`, and the forkserver's imports would be wasted).

    Optional: the pool of :func:`distpriv.experiments.compare.run_compare` starts it anyway when needed; the CLI
    calls this first thing, so the forkserver's imports overlap the CLI's own. No effect on any number.
    """
    if default_jobs(jobs) > 1:
        if cache is not None:
            from .compare_cache import has_version

            if cache.is_dir() and has_version(cache):
                return
        forkserver_context()


def forkserver_context() -> Any:
    """The forkserver context, its preload set to :data:`PRELOAD`, the server running."""
    import multiprocessing
    from multiprocessing import forkserver

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    forkserver.ensure_running()
    return ctx


@contextlib.contextmanager
def shipped_inputs(shipped: Mapping[InputsKey, PropertyInputs]) -> Iterator[None]:
    """Use ``shipped`` (:func:`property_inputs` values computed by the caller) in this process inside the block."""
    _SHIPPED.update(shipped)
    try:
        yield
    finally:
        for k in shipped:
            _SHIPPED.pop(k, None)


def worker_init(shipped: dict[InputsKey, PropertyInputs] | None = None) -> None:
    """Worker process setup: BLAS held to one thread for the process's life (:func:`.compare._one_blas_thread`'s
    reasons: the matrices are small, spinning BLAS threads only cost CPU, and one thread fixes the summation
    order, so a worker computes the very numbers the serial run does); ``shipped``: the properties' inputs
    computed by the parent (:func:`property_inputs`, the same values a worker would compute), so no worker
    loads the Adult data itself."""
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # scikit-learn's dependency

    threadpool_limits(limits=1, user_api="blas")
    _SHIPPED.clear()
    _SHIPPED.update(shipped or {})
