"""Issue 26: the error-vs-ε curves skip provable losers (certified lower bounds drawn instead), and the process memo
of release computations keyed on public inputs returns what the computation returns, warnings included."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import pytest

from distpriv.relaxed.diagnose import divergence_gaps
from distpriv.release import memo, protect
from distpriv.release.assumptions import MIN_BINS, diagnose_assumptions, eta_for
from distpriv.release.public import public_context
from distpriv.release.render import LOWER_BOUND, error_curves, release_figures
from distpriv.release.selection import MC_ALLOWANCE, evaluate_candidate, evaluate_public
from test_release import people


@pytest.fixture(scope="module")
def small():  # type: ignore[no-untyped-def]
    """A two-statistic release whose error curves rank most candidates out (Thm 5.4 holds at 4ε)."""
    res = protect(people(200, 7), stats=["mean:age", "count:sex=Female"], protect="income=>50K", pairs=[(0.45, 0.55)],
                  epsilon=1.0, delta=1e-3, population=people(2000, 9, start=100_000), samples=60, seed=1)
    ctx = public_context(res)
    return ctx, error_curves(ctx)


def _diag_at(ctx, eps):  # type: ignore[no-untyped-def]
    """The diagnostics error_curves uses at ``eps`` (η and λ recomputed), written out again here."""
    diag = ctx.selection.diagnostics
    if eps == ctx.epsilon:
        return diag
    model = ctx.modelling.model
    labs = list(dict.fromkeys(v for pr in ctx.pairs for v in pr))
    eta = eta_for(eps, ctx.delta)
    lam = max(divergence_gaps(model, labs, diag.pooled_model.covariance(labs[0]), eta=eta, min_bins=MIN_BINS).values())
    return replace(diag, eta=eta, divergence_lambda=float(lam))


def test_lower_bounds_are_certified_and_beaten_and_the_points_are_the_evaluations(small) -> None:  # type: ignore[no-untyped-def]
    ctx, curves = small
    eps = curves["epsilon"]
    bounded = [k for k in curves if k.startswith(LOWER_BOUND)]
    assert bounded and all(v is None or v > 0 for k in bounded for v in curves[k])
    names = [k for k in curves if k != "epsilon" and not k.startswith(LOWER_BOUND)]
    n_bound = 0
    for i, e in enumerate(eps):
        best = min((curves[nm][i] for nm in names if curves[nm][i] is not None), default=math.inf)
        for nm in names:
            low = curves.get(LOWER_BOUND + nm, [None] * len(eps))[i]
            full = evaluate_candidate(nm, ctx.modelling.model, list(ctx.pairs), _diag_at(ctx, e), epsilon=e,
                                      delta=ctx.delta, calibration=ctx.calibration, sensitivities=ctx.sensitivities,
                                      n=ctx.modelling.n)
            value = full.expected_l2_error if full.kept and math.isfinite(full.expected_l2_error) else None
            if low is None:  # computed: exactly what the evaluation gives
                assert curves[nm][i] == value, (nm, e)
                continue
            n_bound += 1
            assert curves[nm][i] is None
            assert low * (1 - MC_ALLOWANCE) > best, (nm, e, low, best)  # a provable loser at e ...
            assert value is None or value >= low * (1 - MC_ALLOWANCE), (nm, e, value, low)  # ... by a bound that holds
    assert n_bound >= 5


def test_the_figure_draws_the_bounds_as_open_markers(small) -> None:  # type: ignore[no-untyped-def]
    ctx, curves = small
    fig = next(f for f in release_figures(ctx, curves, None) if f.name == "error_vs_epsilon")
    ax = fig.image.axes[0]
    hollow = [ln for ln in ax.get_lines() if ln.get_markerfacecolor() == "none" and len(ln.get_xdata())]
    assert len(hollow) == sum(1 for k in curves if k.startswith(LOWER_BOUND))
    assert "certified lower bound" in fig.caption
    assert any("certified lower bound" in t.get_text() for t in ax.get_legend().get_texts())


def test_memo_computes_once_and_replays_warnings() -> None:
    memo.clear()
    calls = []

    def compute() -> list[int]:
        calls.append(1)
        warnings.warn("from the computation", UserWarning, stacklevel=1)
        return [1, 2]

    key = ("test_memo", object.__name__, 3.5)
    for _ in range(2):
        with pytest.warns(UserWarning, match="from the computation"):
            assert memo.memoized("test-memo", key, compute) == [1, 2]
    assert len(calls) == 1
    with pytest.warns(UserWarning):
        memo.memoized("test-memo", key, compute, enabled=False)
    assert len(calls) == 2
    memo.memoized("test-memo", (lambda: 0,), lambda: calls.append(1))  # not picklable: computed, not stored
    memo.memoized("test-memo", (lambda: 0,), lambda: calls.append(1))
    assert len(calls) == 4


def test_a_memo_hit_equals_the_evaluation_and_sets_the_gap_it_computed(small) -> None:  # type: ignore[no-untyped-def]
    ctx, _ = small
    model, pairs = ctx.modelling.model, list(ctx.pairs)
    kw = {"epsilon": 1.0, "delta": 1e-3, "calibration": ctx.calibration, "sensitivities": ctx.sensitivities,
          "n": ctx.modelling.n}
    diag = diagnose_assumptions(model, pairs, epsilon=1.0, delta=1e-3, rng=11)
    assert not diag.wasserstein_computed
    a, b = replace(diag), replace(diag)  # two releases' copies: the same lazy Δ_W
    direct = evaluate_candidate("wasserstein", model, pairs, replace(diag), **kw)
    first = evaluate_public("wasserstein", model, pairs, a, **kw)
    second = evaluate_public("wasserstein", model, pairs, b, **kw)  # a hit
    assert first.to_dict() == second.to_dict() == direct.to_dict()
    assert a.wasserstein_computed and b.wasserstein_computed and a.to_dict() == b.to_dict()
    other = diagnose_assumptions(model, pairs, epsilon=1.0, delta=1e-3, rng=11)  # another lazy Δ_W: not a hit
    evaluate_public("wasserstein", model, pairs, other, **kw)
    assert other.wasserstein_computed


def test_memo_hands_out_copies_and_keeps_shared_objects() -> None:
    """Changing a returned value in place changes neither the stored one nor a later call's (review29b, finding
    1); the objects ``shared`` names are the same on every call (their identity keys later memo entries)."""
    memo.clear()
    keep = lambda: 1.0  # noqa: E731
    calls = []

    def compute():  # type: ignore[no-untyped-def]
        calls.append(1)
        return {"scales": [1.0, 2.0], "lazy": keep}

    first = memo.memoized("copies", ("k",), compute, shared=lambda v: [v["lazy"]])
    first["scales"][0] = 0.1
    second = memo.memoized("copies", ("k",), compute, shared=lambda v: [v["lazy"]])
    assert calls == [1]
    assert second["scales"] == [1.0, 2.0] and second is not first
    assert second["lazy"] is keep and first["lazy"] is keep


def test_memo_records_only_its_own_threads_warnings() -> None:
    """Another thread's warnings raised while a memoised computation runs are shown as usual and never stored
    or replayed to a later call (review29b, finding 2)."""
    import threading

    memo.clear()
    started, release = threading.Event(), threading.Event()

    def compute() -> int:
        started.set()
        release.wait(5)
        warnings.warn("own warning", UserWarning, stacklevel=1)
        return 3

    def other() -> None:
        started.wait(5)
        warnings.warn("other thread's warning", UserWarning, stacklevel=1)
        release.set()

    t = threading.Thread(target=other)
    t.start()
    with warnings.catch_warnings(record=True) as first:
        warnings.simplefilter("always")
        assert memo.memoized("threads", ("k",), compute) == 3
    t.join()
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        assert memo.memoized("threads", ("k",), compute) == 3
    assert [str(w.message) for w in later] == ["own warning"]
    assert "own warning" in [str(w.message) for w in first]


def test_replayed_warnings_keep_their_module_for_filters() -> None:
    """A caller's ``filterwarnings(module=...)`` silences a replayed warning as it does the original (review29b,
    finding 3)."""
    memo.clear()
    # a module whose name ("fake.module") is not its file's ("elsewhere.py"), as for a package's modules
    scope: dict[str, object] = {"__name__": "fake.module", "warnings": warnings}
    exec(compile("def compute():\n    warnings.warn('raised in fake.module', UserWarning, stacklevel=1)\n"
                 "    return 1\n", "/nowhere/elsewhere.py", "exec"), scope)
    for _ in range(2):  # the miss and the hit
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", module=r"fake\.module")
            memo.memoized("module", ("k",), scope["compute"])  # type: ignore[arg-type]
        assert seen == []
    with warnings.catch_warnings(record=True) as seen:  # and shown without the filter
        warnings.simplefilter("always")
        memo.memoized("module", ("k",), scope["compute"])  # type: ignore[arg-type]
    assert [str(w.message) for w in seen] == ["raised in fake.module"]
