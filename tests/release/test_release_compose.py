"""Direct tests of :mod:`distpriv.release.compose`: chains add up, Props A.4/A.5 where they apply, refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import distpriv as dp
from distpriv.release.compose import (
    A4,
    A5,
    check_compatible,
    compose_releases,
    decide_propositions,
    merged_chain,
)
from distpriv.release.ledger import ChainEntry, Ledger

PAIRS = ((0.4, 0.6),)
FRAMEWORK = "distribution-privacy"


def _entry(rid: str, eps: float, delta: float, *, deterministic: bool = True, mechanism: str = "expm-gauss",
           seed: int | None = None) -> ChainEntry:
    return ChainEntry(rid, eps, delta, mechanism, deterministic, 3, "k" * 16, np.arange(6, dtype=np.uint64).reshape(3, 2),
                      ("a", "b"), "os" if seed is None else "seeded", seed)


def _ledger(*chain: ChainEntry, folder: str = "out", protect: str = "`a` > 1",
            pairs: tuple[tuple[float, float], ...] = PAIRS, framework: str = FRAMEWORK) -> Ledger:
    eps = sum(e.epsilon for e in chain)
    delta = min(1.0, sum(e.delta for e in chain))
    return Ledger(Path(folder), chain[-1].id, framework, protect, pairs, tuple(chain), eps, delta, (), None)


def _current(eps: float, delta: float) -> dp.Guarantee:
    return dp.Guarantee(eps, delta, "eigm", framework=FRAMEWORK, pairs=PAIRS)


A = _entry("a" * 32, 0.5, 1e-4)
B = _entry("b" * 32, 0.25, 2e-4)
C = _entry("c" * 32, 1.0, 0.0, deterministic=False, mechanism="wasserstein")


def test_chains_add_up_over_every_distinct_release() -> None:
    # two ledgers sharing release A: A counts once, the chain is A, B, C in first-appearance order
    l1 = _ledger(A, B, folder="one")
    l2 = _ledger(A, C, folder="two")
    chain, where = merged_chain([l1, l2])
    assert [e.id for e in chain] == [A.id, B.id, C.id]
    assert where == {A.id: "one", B.id: "one", C.id: "two"}
    comp = compose_releases([l1, l2], _current(0.125, 3e-4), ("A.5",))
    assert comp.guarantee.epsilon == pytest.approx(0.5 + 0.25 + 1.0 + 0.125)
    assert comp.guarantee.delta == pytest.approx(1e-4 + 2e-4 + 0.0 + 3e-4)
    assert comp.releases == 4 and comp.proposition == "A.5"
    assert comp.guarantee.assumptions[-1] == A5 and A4 not in comp.guarantee.assumptions
    assert comp.to_dict() == {"proposition": "A.5", "guarantee": comp.guarantee.to_dict(), "releases": 4}


def test_composed_delta_is_capped_at_one_and_both_propositions_are_recorded() -> None:
    big = _entry("d" * 32, 2.0, 0.75)
    comp = compose_releases([_ledger(big)], _current(1.0, 0.5), ("A.4", "A.5"))
    assert comp.guarantee.epsilon == pytest.approx(3.0) and comp.guarantee.delta == 1.0
    assert comp.proposition == "A.4+A.5"
    assert comp.guarantee.assumptions[-2:] == (A4, A5)


def test_disagreeing_ledgers_about_one_release_are_refused() -> None:
    edited = _entry(A.id, 0.6, 1e-4)
    with pytest.raises(dp.InvalidParameterError, match="disagree about the same earlier release"):
        merged_chain([_ledger(A, folder="one"), _ledger(edited, folder="two")])


def test_prop_a4_for_shared_rows_when_every_model_fixes_the_query_value() -> None:
    led = _ledger(A, B)
    shared = {A.id: 100, B.id: 40}
    assert decide_propositions([led], shared=shared, rows=100, independent=False, deterministic=True) == ("A.4",)
    # not known yet whether this release's model is deterministic: the answer is deferred
    assert decide_propositions([led], shared=shared, rows=100, independent=False, deterministic=None) is None
    with pytest.raises(dp.AssumptionError, match="does not compose for repeated releases"):
        decide_propositions([led], shared=shared, rows=100, independent=False, deterministic=False)


def test_shared_rows_with_a_random_earlier_model_are_refused() -> None:
    with pytest.raises(dp.AssumptionError, match=r"40 of the 100 rows are also in it"):
        decide_propositions([_ledger(C)], shared={C.id: 40}, rows=100, independent=False, deterministic=True)


def test_independent_with_shared_rows_is_refused() -> None:
    with pytest.raises(dp.AssumptionError, match=r"independent: 7 of the 50 rows"):
        decide_propositions([_ledger(A)], shared={A.id: 7}, rows=50, independent=True, deterministic=True)


def test_prop_a5_needs_independent_for_disjoint_rows() -> None:
    led = _ledger(A, C)
    assert decide_propositions([led], shared={}, rows=100, independent=True, deterministic=False) == ("A.5",)
    with pytest.raises(dp.AssumptionError, match="pass independent="):
        decide_propositions([led], shared={}, rows=100, independent=False, deterministic=True)


def test_mixed_chain_is_refused_either_way() -> None:
    # rows shared with A (A.4 would apply) but none with C: C needs --independent, which A's shared rows forbid
    led = _ledger(A, C)
    with pytest.raises(dp.AssumptionError, match="pass independent="):
        decide_propositions([led], shared={A.id: 10}, rows=100, independent=False, deterministic=True)
    with pytest.raises(dp.AssumptionError, match="independent: 10 of the 100 rows"):
        decide_propositions([led], shared={A.id: 10}, rows=100, independent=True, deterministic=True)


def test_check_compatible_refuses_another_framework_predicate_or_psi() -> None:
    led = _ledger(A)
    check_compatible([led], framework=FRAMEWORK, protect="`a` > 1", pairs=[(0.6, 0.4)])  # Ψ as unordered pairs
    with pytest.raises(dp.AssumptionError, match="is a distribution-privacy release; this one is attribute-privacy"):
        check_compatible([led], framework="attribute-privacy", protect="`a` > 1", pairs=PAIRS)
    with pytest.raises(dp.AssumptionError, match="same protected property and the same pairs"):
        check_compatible([led], framework=FRAMEWORK, protect="`a` > 2", pairs=PAIRS)
    with pytest.raises(dp.AssumptionError, match="same protected property and the same pairs"):
        check_compatible([led], framework=FRAMEWORK, protect="`a` > 1", pairs=[(0.4, 0.7)])


# --------------------------------------------------------------------------- issue 27: seeds and identifiability
def test_seeded_releases_never_compose() -> None:
    s7 = _entry("e" * 32, 1.0, 0.0, seed=7)
    # a seeded earlier release with disjoint rows and --independent: refused (not Prop. A.5)
    with pytest.raises(dp.AssumptionError, match=r"^independent: the release in out was seeded \(seed= 7\); .*"
                                                 r"never composes as independent"):
        decide_propositions([_ledger(s7)], shared={}, rows=100, independent=True, deterministic=False)
    # a seeded current release
    with pytest.raises(dp.AssumptionError, match=r"this release is seeded \(seed= 3\)"):
        decide_propositions([_ledger(A)], shared={}, rows=100, independent=True, deterministic=False, seed=3)
    # two releases with the same seed, even where Prop. A.4 would otherwise apply (same rows, F fixed by θ)
    same = _entry("f" * 32, 1.0, 0.0, seed=7)
    with pytest.raises(dp.AssumptionError, match=r"^previous: this release and an earlier one use the same seed 7"):
        decide_propositions([_ledger(same)], shared={same.id: 100}, rows=100, independent=False, deterministic=True,
                            seed=7)
    # the same chain without seeds composes
    assert decide_propositions([_ledger(A)], shared={}, rows=100, independent=True, deterministic=False) == ("A.5",)
    assert decide_propositions([_ledger(A)], shared={A.id: 100}, rows=100, independent=False,
                               deterministic=True) == ("A.4",)


def test_independent_needs_an_id_where_rows_do_not_identify_records() -> None:
    reason = "different records agree on them by chance for 82.0% of the rows"
    with pytest.raises(dp.AssumptionError, match=r"^independent: rows are compared .* but different records agree "
                                                 r"on them by chance for 82.0% .*id= COL"):
        decide_propositions([_ledger(A)], shared={}, rows=100, independent=True, deterministic=False,
                            unidentified={A.id: reason})
    # without --independent the reason does not matter (Prop. A.5 is not claimed)
    assert decide_propositions([_ledger(A)], shared={A.id: 5}, rows=100, independent=False, deterministic=True,
                               unidentified={A.id: reason}) == ("A.4",)


def test_composed_assumptions_name_the_proposition_not_a_bare_declaration() -> None:
    from distpriv.guarantees import INDEPENDENCE_DECLARED

    comp = compose_releases([_ledger(A)], _current(1.0, 0.0), ("A.5",))
    assert A5 in comp.guarantee.assumptions and INDEPENDENCE_DECLARED not in comp.guarantee.assumptions
