"""Private ledgers, row fingerprints and the composition rules that read them (in process)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from distpriv.errors import AssumptionError, InvalidParameterError
from distpriv.guarantees import Guarantee
from distpriv.release.compose import check_compatible, compose_releases, decide_propositions
from distpriv.release.fingerprints import (
    FINGERPRINT_SCHEME,
    count_shared,
    new_key,
    row_fingerprints,
)
from distpriv.release.ledger import (
    ChainEntry,
    Ledger,
    composed_total,
    new_release_id,
    read_ledger,
    write_ledger,
)

MASK = (1 << 64) - 1


def frame() -> pd.DataFrame:
    return pd.DataFrame({"b": [1.0, 2.5, np.nan, 7.0], "a": ["x", "y", "z", "é"], "c": [True, False, True, True]})


def reference_fingerprint(row: dict, key: str) -> int:
    """fp(r) of scheme distpriv-row-md5-64/v1, written independently with hashlib: cells by column name,
    numbers as %.17g (integral ones as integers), length-prefixed, MD5 of hex(key) 0x1F row, lower 64 bits."""
    text = ""
    for name in sorted(row):
        v = row[name]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            text += "-"
            continue
        if isinstance(v, (bool, np.bool_)):
            cell = "1" if v else "0"
        elif isinstance(v, (int, float, np.floating, np.integer)):
            x = float(v) + 0.0
            cell = str(int(x)) if x == int(x) and abs(x) < 1e15 else f"{x:.17g}"
        else:
            cell = str(v)
        text += f"{len(cell.encode('utf-8'))}:{cell}"
    digest = hashlib.md5(key.encode("ascii").hex().encode() + b"\x1f" + text.encode("utf-8")).digest()
    return int.from_bytes(digest[8:16], "little")


def test_fingerprints_are_keyed_md5_of_the_canonical_row_computed_by_the_engine() -> None:
    assert FINGERPRINT_SCHEME == "distpriv-row-md5-64/v1"
    df = frame()
    key = new_key()
    want = sorted(reference_fingerprint(r, key) for r in df.to_dict("records"))
    assert row_fingerprints(df, key).tolist() == want
    assert row_fingerprints(df, new_key()).tolist() != want  # another key, other fingerprints
    edited = df.assign(a=["x", "y", "z", "e"])  # one cell edited: one row differs
    assert count_shared(row_fingerprints(edited, key), np.asarray(want, dtype=np.uint64)) == 3


def test_fingerprints_ignore_column_order_dtype_and_file_format(tmp_path: Path) -> None:
    df = frame()
    same = pd.DataFrame({"c": [True, False, True, True], "a": ["x", "y", "z", "é"], "b": [1, 2.5, None, 7]})
    key = new_key()
    assert np.array_equal(row_fingerprints(df, key), row_fingerprints(same, key))
    df.to_csv(tmp_path / "f.csv", index=False)
    df.to_parquet(tmp_path / "f.parquet")
    a = row_fingerprints(pd.read_csv(tmp_path / "f.csv", skipinitialspace=True), key)
    b = row_fingerprints(pd.read_parquet(tmp_path / "f.parquet"), key)
    assert np.array_equal(a, b)
    changed = df.copy()
    changed.loc[3, "b"] = 71.0  # one appended digit changes one row, not the others
    assert count_shared(row_fingerprints(changed, key), b) == 3
    big = pd.DataFrame({"id": np.array([2**60, 2**60 + 1], dtype=np.int64)})  # beyond float64: kept exact
    assert len(set(row_fingerprints(big, key).tolist())) == 2


def test_count_shared_is_a_multiset_intersection() -> None:
    u = np.uint64
    assert count_shared(np.array([1, 1, 2, 5], u), np.array([1, 2, 2, 3], u)) == 2
    assert count_shared(np.array([1, 1], u), np.array([1, 1, 1], u)) == 2
    assert count_shared(np.array([], u), np.array([1], u)) == 0
    assert count_shared(np.array([4], u), np.array([], u)) == 0


# --------------------------------------------------------------------------- ledgers
def entry(eps: float = 1.0, delta: float = 1e-3, rows: int = 50, seed: int = 0, deterministic: bool = False
          ) -> ChainEntry:
    fps = np.sort(np.random.default_rng(seed).integers(0, 2**63, rows, dtype=np.uint64))
    return ChainEntry(new_release_id(), eps, delta, "dirm-laplace", deterministic, rows, new_key(), fps)


def ledger(*chain: ChainEntry, protect: str = "income=>50K", props: tuple[str, ...] = ()) -> Ledger:
    eps, delta = composed_total(chain)
    return Ledger(None, chain[-1].id, "distribution-privacy", protect, ((0.45, 0.55),), chain, eps, delta, props, None)


def test_ledger_round_trip_and_private_label(tmp_path: Path) -> None:
    a, b = entry(seed=1), entry(0.5, 0.0, seed=2)
    write_ledger(tmp_path / "r", ledger(a, b, props=("A.5",)))
    got = read_ledger(tmp_path / "r")
    assert [e.id for e in got.chain] == [a.id, b.id] and got.release == b.id
    assert got.epsilon == 1.5 and got.delta == 1e-3 and got.propositions == ("A.5",)
    assert np.array_equal(got.chain[0].fingerprints, a.fingerprints)
    assert got.own.fingerprint_key == b.fingerprint_key
    doc = json.loads((tmp_path / "r" / "private" / "ledger.json").read_text())
    assert "NOT FOR PUBLICATION" in doc["notice"]
    assert "NOT FOR PUBLICATION" in (tmp_path / "r" / "private" / "README.txt").read_text()


def _edit(path: Path, fn: object) -> None:
    doc = json.loads(path.read_text())
    fn(doc)  # type: ignore[operator]
    path.write_text(json.dumps(doc))


def _rechecksum(doc: dict) -> None:
    from distpriv.release.ledger import _checksum

    doc["checksum"] = _checksum(doc)


EDITS = {
    "epsilon 1e-9, total kept consistent (checksum)": (
        lambda d: (d["releases"][0].update(epsilon=1e-9), d["composed"].update(epsilon=1.0 + 1e-9)),
        "checksum does not match"),
    "epsilon 1e-9 alone": (lambda d: d["releases"][0].update(epsilon=1e-9), "not the sum over its chain"),
    "epsilon -0.9": (lambda d: d["releases"][0].update(epsilon=-0.9), "must be > 0"),
    "delta 1": (lambda d: d["releases"][0].update(delta=1.0), r"must be in \[0, 1\)"),
    "epsilon string": (lambda d: d["releases"][0].update(epsilon="1"), "is not a number"),
    "missing field": (lambda d: d["releases"][0].pop("deterministic"), "lacks 'deterministic'"),
    "unknown field": (lambda d: d.update(extra=1), "unknown field 'extra'"),
    "foreign format": (lambda d: d.update(format="something-else"), "not a distpriv ledger"),
    "future version": (lambda d: d.update(version=2), "unsupported ledger version"),
    "composed total edited, checksum recomputed": (
        lambda d: (d["composed"].update(epsilon=0.5), _rechecksum(d)), "not the sum over its chain"),
    "chain shortened, checksum recomputed": (
        lambda d: (d["releases"].pop(0), d["composed"].update(epsilon=1.0, delta=1e-3), _rechecksum(d)),
        None),  # valid: a ledger may be rewritten consistently; only the checksum protects content
}


@pytest.mark.parametrize("case", list(EDITS))
def test_edited_ledgers_are_refused(tmp_path: Path, case: str) -> None:
    write_ledger(tmp_path / "r", ledger(entry(seed=1), entry(seed=2)))
    fn, match = EDITS[case]
    _edit(tmp_path / "r" / "private" / "ledger.json", fn)
    if match is None:
        assert read_ledger(tmp_path / "r").epsilon == 1.0
        return
    with pytest.raises(InvalidParameterError, match=match) as err:
        read_ledger(tmp_path / "r")
    assert str(err.value).startswith("--previous: ") and "\n" not in str(err.value)


def test_nan_missing_and_tampered_fingerprints_are_refused(tmp_path: Path) -> None:
    e = entry(seed=1)
    write_ledger(tmp_path / "r", ledger(e))
    path = tmp_path / "r" / "private" / "ledger.json"
    text = path.read_text()
    path.write_text(text.replace('"epsilon": 1.0', '"epsilon": NaN', 1))
    with pytest.raises(InvalidParameterError, match="NaN, which is not a number"):
        read_ledger(tmp_path / "r")
    path.write_text(text)
    fp = tmp_path / "r" / "private" / f"fingerprints-{e.id}.npy"
    fp.write_bytes(fp.read_bytes()[:-8])
    with pytest.raises(InvalidParameterError, match="was modified"):
        read_ledger(tmp_path / "r")
    fp.unlink()
    with pytest.raises(InvalidParameterError, match="is missing"):
        read_ledger(tmp_path / "r")
    with pytest.raises(InvalidParameterError, match="has no private ledger"):
        read_ledger(tmp_path)
    (tmp_path / "h" / "private").mkdir(parents=True)
    (tmp_path / "h" / "private" / "ledger.json").write_text(json.dumps(
        {"mechanism": "x", "guarantee": {"epsilon": 0.1, "delta": 0}, "data": {}, "secret": {}, "report": {}}))
    with pytest.raises(InvalidParameterError, match="not a distpriv ledger"):
        read_ledger(tmp_path / "h")
    (tmp_path / "h" / "private" / "ledger.json").write_text("{not json")
    with pytest.raises(InvalidParameterError, match="not a readable ledger"):
        read_ledger(tmp_path / "h")


def test_public_file_must_belong_to_the_ledger(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "release.json").write_text("{}\n")
    import hashlib

    sha = hashlib.sha256(b"{}\n").hexdigest()
    e = entry()
    write_ledger(tmp_path / "r", Ledger(None, e.id, "distribution-privacy", "b=x", ((0.45, 0.55),), (e,), 1.0, 1e-3,
                                        (), sha))
    assert read_ledger(tmp_path / "r").public_sha256 == sha
    (tmp_path / "r" / "release.json").write_text("{} \n")
    with pytest.raises(InvalidParameterError, match="does not belong to the ledger"):
        read_ledger(tmp_path / "r")


# --------------------------------------------------------------------------- composition rules
def test_composition_rules_by_shared_rows() -> None:
    a = entry(seed=1)
    led = ledger(a)
    # same rows, claimed independent: refused
    with pytest.raises(AssumptionError, match="50 of the 50 rows .*Prop. A.5 needs independently sampled"):
        decide_propositions([led], shared={a.id: 50}, rows=50, independent=True, deterministic=False)
    # same rows, not deterministic: refused (only Prop A.4 could apply)
    with pytest.raises(AssumptionError, match="same data .*does not compose"):
        decide_propositions([led], shared={a.id: 1}, rows=50, independent=False, deterministic=None)
    # disjoint rows: Prop A.5 only when independence is asserted
    with pytest.raises(AssumptionError, match="pass --independent"):
        decide_propositions([led], shared={a.id: 0}, rows=50, independent=False, deterministic=False)
    assert decide_propositions([led], shared={a.id: 0}, rows=50, independent=True, deterministic=None) == ("A.5",)
    # same rows, every model fixes F given θ: Prop A.4 (decided once this release's model is known)
    d = entry(seed=2, deterministic=True)
    led_d = ledger(d)
    assert decide_propositions([led_d], shared={d.id: 50}, rows=50, independent=False, deterministic=None) is None
    assert decide_propositions([led_d], shared={d.id: 50}, rows=50, independent=False, deterministic=True) == ("A.4",)
    with pytest.raises(AssumptionError, match="same data"):
        decide_propositions([led_d], shared={d.id: 50}, rows=50, independent=False, deterministic=False)


def test_chains_add_up_and_count_each_release_once() -> None:
    a, b = entry(1.0, 1e-3, seed=1), entry(1.0, 1e-3, seed=2)
    first = ledger(a)
    second = ledger(a, b, props=("A.5",))  # b composed with a
    cur = Guarantee(1.0, 1e-3, "expm-laplace", pairs=((0.45, 0.55),))
    props = decide_propositions([second], shared={a.id: 0, b.id: 0}, rows=50, independent=True, deterministic=False)
    comp = compose_releases([second], cur, props)
    assert comp.releases == 3 and comp.guarantee.epsilon == pytest.approx(3.0)
    assert comp.guarantee.delta == pytest.approx(3e-3) and comp.proposition == "A.5"
    # a reached through two ledgers counts once
    comp2 = compose_releases([first, second], cur, props)
    assert comp2.releases == 3 and comp2.guarantee.epsilon == pytest.approx(3.0)
    assert any("Prop. A.5" in x for x in comp2.guarantee.assumptions)
    assert comp.to_dict() == {"proposition": "A.5", "guarantee": comp.guarantee.to_dict(), "releases": 3}
    assert math.isclose(composed_total((a, b))[0], 2.0)


def test_incompatible_secrets_are_refused() -> None:
    led = ledger(entry(), protect="income=>50K")
    check_compatible([led], framework="distribution-privacy", protect="income=>50K", pairs=[(0.55, 0.45)])
    with pytest.raises(AssumptionError, match="same protected property"):
        check_compatible([led], framework="distribution-privacy", protect="sex=Female", pairs=[(0.45, 0.55)])
    with pytest.raises(AssumptionError, match="same protected property"):
        check_compatible([led], framework="distribution-privacy", protect="income=>50K", pairs=[(0.4, 0.6)])
    with pytest.raises(AssumptionError, match="attribute-privacy"):
        check_compatible([led], framework="attribute-privacy", protect="income=>50K", pairs=[(0.45, 0.55)])
