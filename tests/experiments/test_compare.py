"""``distpriv reproduce compare`` (issue 25 item 4): a fast smoke run on the Table 3 workload.

One property, one ε, the cheap mechanisms and a small audit: the rows must carry every column,
every claim must meet the common target, and no audit may refute a claim.
"""

from __future__ import annotations

import json

import pytest

from distpriv.errors import InvalidParameterError
from distpriv.experiments import compare

CHEAP = ["eigm", "ssp-quantizer", "ding-laplace", "kantorovich"]


@pytest.fixture(scope="module")
def smoke(adult_ok, tmp_path_factory):  # noqa: ANN001, ANN201
    out = tmp_path_factory.mktemp("compare")
    cache = tmp_path_factory.mktemp("compare-cache")
    res = compare.run_compare(quick=True, properties=["income"], epsilons=[5.0], mechanisms=CHEAP, audit=False, out=out,
                      cache=cache, jobs=1)
    return res, out


def test_compare_rows_meet_the_common_guarantee(smoke) -> None:  # noqa: ANN001
    res, _ = smoke
    rows = [r for r in res["rows"] if r["mechanism"] != "None"]
    assert [r["mechanism"] for r in rows] == ["EigM (G)", "SSP quantizer", "Ding (L)", "Kantorovich"]
    for r in rows:
        assert r["claimed_delta"] <= 1e-3 * (1 + 1e-9), r
        assert r["l2_error"] > 0 and r["expected_l2_error"] > 0
        assert 0.0 <= r["meta_classifier_accuracy"] <= 1.0 and 0.0 <= r["likelihood_ratio_accuracy"] <= 1.0
    kant = rows[-1]
    assert kant["claimed_delta"] == 0.0 and kant["exact_delta"] is not None and kant["exact_delta"] <= 1.0
    # the quantizer's own notion is the Bayes-optimal accuracy: the meta-classifier cannot beat it by more
    # than its sampling error (5 repetitions × 100 test datasets: standard error <= 0.5/sqrt(500) ≈ 0.022)
    ssp = rows[1]
    pi = float(ssp["own_notion"].split("Π = ")[1].split()[0])
    assert ssp["meta_classifier_accuracy"] <= pi + 4 * 0.5 / 500**0.5


def test_compare_rows_read_the_attacks_in_suri_evans_records(smoke) -> None:  # noqa: ANN001
    """n_leaked of the better attack, and the cap of the claim: the attack stays under the cap up to its sampling
    error (accuracies of 5 × 100 test datasets: standard error <= 0.022), and the numbers follow the closed forms."""
    import math

    from distpriv.leakage import accuracy_cap, n_leaked

    res, _ = smoke
    rho = 0.45 / 0.55
    for r in res["rows"]:
        acc = max(r["meta_classifier_accuracy"], r["likelihood_ratio_accuracy"])
        want = 0.0 if acc <= 0.5 else (math.inf if acc >= 1 else math.log1p(-(2 * acc - 1) ** 2) / math.log(rho))
        assert r["n_leaked_attack"] == pytest.approx(want, rel=1e-12), r
        if r["mechanism"] == "None":
            assert r["n_leaked_cap"] == math.inf
            continue
        delta = r["exact_delta"] if r["exact_delta"] is not None else r["claimed_delta"]
        cap = 1.0 - (1.0 - delta) / (1.0 + math.exp(r["epsilon"]))
        assert accuracy_cap(r["epsilon"], delta) == pytest.approx(cap, rel=1e-14)
        assert r["n_leaked_cap"] == pytest.approx(math.log1p(-(2 * cap - 1) ** 2) / math.log(rho), rel=1e-12)
        assert acc <= cap + 4 * 0.5 / 500**0.5, r
        assert n_leaked(min(acc, cap), 0.45, 0.55) <= r["n_leaked_cap"]


@pytest.mark.slow
def test_compare_audits_never_refute_the_claims(adult_ok) -> None:  # noqa: ANN001
    res = compare.run_compare(quick=True, properties=["income"], epsilons=[1.0], mechanisms=["ssp-quantizer", "ding-laplace"],
                              jobs=1)
    rows = [r for r in res["rows"] if r["mechanism"] != "None"]
    assert len(rows) == 2 and all(r["audit_epsilon_lower"] <= r["epsilon"] for r in rows), rows


def test_compare_writes_table_json_and_figure(smoke) -> None:  # noqa: ANN001
    res, out = smoke
    assert json.loads((out / "compare.json").read_text())["study"] == "compare"
    md = (out / "compare.md").read_text()
    assert "| income | SSP quantizer | 5 |" in md
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_rejects_unknown_names() -> None:
    with pytest.raises(InvalidParameterError, match="properties: unknown property"):
        compare.run_compare(properties=["age"])
    with pytest.raises(InvalidParameterError, match="mechanisms: unknown mechanism"):
        compare.run_compare(mechanisms=["nope"])


def test_compare_cache_returns_the_same_rows(smoke) -> None:  # noqa: ANN001
    """A second run on the smoke run's cache reads every calibration (and Kantorovich's proven δ) back: same rows."""
    res, _ = smoke
    folder = res["calibration_cache"]["folder"]
    assert res["calibration_cache"]["hits"] == 0
    again = compare.run_compare(quick=True, properties=["income"], epsilons=[5.0], mechanisms=CHEAP, audit=False, cache=folder,
                                  jobs=1)
    assert again["calibration_cache"]["hits"] == len(CHEAP) + 1  # four calibrations + Kantorovich's exact δ
    assert json.dumps(again["rows"], default=str) == json.dumps(res["rows"], default=str)


def test_compare_cache_keys_name_every_input() -> None:
    from distpriv import GaussianModel
    from distpriv.experiments import compare_cache as cc

    m = GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[1.0]], 1: [[1.0]]})
    m2 = GaussianModel(means={0: [0.0], 1: [1.0 + 2**-40]}, covariances={0: [[1.0]], 1: [[1.0]]})
    base = cc.calibration_key("eigm", m, (0, 1), 1.0, 1e-3)
    assert base == cc.calibration_key("eigm", m, (0, 1), 1.0, 1e-3)
    others = {cc.calibration_key("daum", m, (0, 1), 1.0, 1e-3), cc.calibration_key("eigm", m2, (0, 1), 1.0, 1e-3),
              cc.calibration_key("eigm", m, (1, 0), 1.0, 1e-3), cc.calibration_key("eigm", m, (0, 1), 1.0 + 2**-50, 1e-3),
              cc.calibration_key("eigm", m, (0, 1), 1.0, 1e-4)}
    assert base not in others and len(others) == 5


def test_compare_cache_reads_back_and_prunes_old_code_versions(tmp_path) -> None:  # noqa: ANN001
    import os

    from distpriv.experiments import compare_cache as cc

    for i, name in enumerate(("a" * 16, "b" * 16, "c" * 16)):  # three older code versions, "c" the most recent
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (1000.0 + i, 1000.0 + i))
    calls = []
    digest = cc.key("test", 1.5)
    first, hit = cc.cached(tmp_path, digest, lambda: calls.append(1) or {"x": [1.0, 2.0]})
    again, hit2 = cc.cached(tmp_path, digest, lambda: calls.append(1) or {"x": [0.0]})
    assert (first, hit, again, hit2, len(calls)) == ({"x": [1.0, 2.0]}, False, {"x": [1.0, 2.0]}, True, 1)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["c" * 16, cc.code_fingerprint()[:16]])  # the newest older version is kept
    (tmp_path / cc.code_fingerprint()[:16] / f"{digest}.pkl").write_bytes(b"not a pickle")
    assert cc.cached(tmp_path, digest, lambda: 7) == (7, False)  # an unreadable entry is recomputed


def test_compare_cache_prunes_only_its_own_folders(tmp_path) -> None:  # noqa: ANN001
    """A user's folder beside the cache (16 characters, or 16 hex digits holding other files) is never deleted."""
    import os

    from distpriv.experiments import compare_cache as cc

    mine = tmp_path / ("d" * 16)
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    other = tmp_path / "notahexname00000"
    other.mkdir()
    for i, name in enumerate(("a" * 16, "b" * 16, "c" * 16)):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (1000.0 + i, 1000.0 + i))
    cc.cached(tmp_path, cc.key("test", 2.5), lambda: 1)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["c" * 16, "d" * 16, "notahexname00000", cc.code_fingerprint()[:16]])
    assert (mine / "notes.txt").read_text() == "keep me"


def test_reproduction_out_folder_never_writes_through_a_link(tmp_path) -> None:  # noqa: ANN001
    """Review finding: ``reproduce compare --out DIR`` followed a planted ``compare.md`` link and overwrote its target."""
    from distpriv.errors import InvalidParameterError
    from distpriv.formatting import prepare_out

    victim = tmp_path / "victim.txt"
    victim.write_text("user data")
    out = tmp_path / "out"
    out.mkdir()
    (out / "compare.md").symlink_to(victim)
    with pytest.raises(InvalidParameterError, match="out: .*compare.md is a symbolic link"):
        prepare_out(out)
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(InvalidParameterError, match="symbolic link"):
        prepare_out(tmp_path / "linked")
    with pytest.raises(InvalidParameterError, match="symbolic link"):
        prepare_out(tmp_path / "linked" / "sub")
    assert victim.read_text() == "user data"
    fresh = prepare_out(tmp_path / "new" / "sub")
    assert fresh is not None and fresh.is_dir()


def test_compare_runs_under_one_blas_thread_and_restores_it() -> None:
    """Issue 25: the comparison limits BLAS to one thread (spinning workers cost CPU) and gives the limit back."""
    from threadpoolctl import threadpool_info

    def blas_threads() -> list[int]:
        return [int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    with compare._one_blas_thread():
        inside = blas_threads()
    assert inside and set(inside) == {1}
    assert blas_threads() == before
