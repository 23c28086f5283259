"""Bayesian networks, max-influence, Markov quilts and the Attribute-Private Markov Quilt Mechanism."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from distpriv.attribute import (
    ColumnSensitivity,
    ParameterNetwork,
    apmqm,
    d_connected,
    dataset_attribute_privacy,
    distributional_attribute_privacy,
    enumerate_quilts,
    is_markov_quilt,
    max_influence,
    quilt_for,
    random_network,
)
from distpriv.attribute import examples as ex
from distpriv.errors import InvalidParameterError, UnknownLabelError


def _brute_joint(net: ParameterNetwork) -> dict[tuple[int, ...], float]:
    """P(φ) by enumerating every assignment and multiplying table entries (no einsum)."""
    out = {}
    for combo in itertools.product(*(range(len(net.supports[v])) for v in net.nodes)):
        k = dict(zip(net.nodes, combo, strict=True))
        p = 1.0
        for v in net.nodes:
            p *= float(net.tables[v][tuple(k[q] for q in net.parents[v]) + (k[v],)])
        out[combo] = p
    return out


def _brute_influence(nets: list[ParameterNetwork], targets: list[str], source: str) -> float:
    best = 0.0
    for net in nets:
        joint = _brute_joint(net)
        si = net.nodes.index(source)
        ti = [net.nodes.index(t) for t in targets]
        pa: dict[tuple[int, tuple[int, ...]], float] = {}
        ps: dict[int, float] = {}
        for combo, p in joint.items():
            key = (combo[si], tuple(combo[t] for t in ti))
            pa[key] = pa.get(key, 0.0) + p
            ps[combo[si]] = ps.get(combo[si], 0.0) + p
        vals = range(len(net.supports[source]))
        tvals = list(itertools.product(*(range(len(net.supports[t])) for t in targets)))
        for a in vals:
            for b in vals:
                if a == b or ps[a] <= 0 or ps[b] <= 0:
                    continue
                for t in tvals:
                    ca, cb = pa.get((a, t), 0.0) / ps[a], pa.get((b, t), 0.0) / ps[b]
                    if ca > 0 and cb == 0:
                        return math.inf
                    if ca > 0:
                        best = max(best, math.log(ca / cb))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_max_influence_vs_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nets = [random_network(5, rng=np.random.default_rng(seed), name="t0")]
    # a second θ: same structure, fresh tables
    base = nets[0]
    tables = {v: rng.dirichlet(np.ones(base.tables[v].shape[-1]), size=base.tables[v].shape[:-1]) if base.parents[v]
              else rng.dirichlet(np.ones(base.tables[v].shape[-1])) for v in base.nodes}
    nets.append(ParameterNetwork(base.supports, base.parents, tables, name="t1"))
    for source in base.nodes:
        others = [v for v in base.nodes if v != source]
        for k in (1, 2):
            for targets in itertools.combinations(others, k):
                got = max_influence(nets, targets, source).value
                want = _brute_influence(nets, list(targets), source)
                assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_max_influence_infinite_and_zero_probability() -> None:
    net = random_network(4, rng=7, zero_prob=0.4, max_support=3)
    for s in net.nodes:
        for t in net.nodes:
            if s != t:
                assert max_influence(net, [t], s).value == pytest.approx(_brute_influence([net], [t], s))
    # deterministic child: influence of parent is infinite
    det = ParameterNetwork({"a": (0, 1), "b": (0, 1)}, {"b": ("a",)}, {"a": [0.5, 0.5], "b": [[1, 0], [0, 1]]})
    assert max_influence(det, ["b"], "a").value == math.inf
    indep = ParameterNetwork({"a": (0, 1), "b": (0, 1)}, None, {"a": [0.5, 0.5], "b": [0.3, 0.7]})
    assert max_influence(indep, ["b"], "a").value == pytest.approx(0.0)
    assert max_influence(indep, [], "a").value == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_every_quilt_d_separates(seed: int) -> None:
    net = random_network(7, rng=seed, edge_prob=0.35)
    g = net.graph
    for node in net.nodes:
        quilts, exhaustive = enumerate_quilts(g, node)
        assert exhaustive and len(quilts) == 2 ** (len(net.nodes) - 1)
        for q in quilts:
            assert q.node in q.nearby and not (q.quilt & q.nearby) and not (q.remote & (q.quilt | q.nearby))
            assert q.quilt | q.nearby | q.remote == set(g.nodes)
            if q.remote:
                assert nx.is_d_separator(g, {node}, set(q.remote), set(q.quilt))
            # N is minimal: every other nearby node is d-connected to the node given Q
            for v in q.nearby - {node}:
                assert not nx.is_d_separator(g, {node}, {v}, set(q.quilt))


def test_bayes_ball_matches_networkx() -> None:
    net = random_network(8, rng=11, edge_prob=0.4)
    g = net.graph
    rng = np.random.default_rng(0)
    for _ in range(30):
        src = str(rng.choice(list(g.nodes)))
        z = {v for v in g.nodes if v != src and rng.random() < 0.3}
        reach = d_connected(g, src, z)
        for v in g.nodes:
            if v == src or v in z:
                continue
            assert (v in reach) == (not nx.is_d_separator(g, {src}, {v}, z))


def test_bad_networks() -> None:
    with pytest.raises(InvalidParameterError, match="acyclic"):
        ParameterNetwork({"a": (0, 1), "b": (0, 1)}, {"a": ("b",), "b": ("a",)},
                         {"a": [[0.5, 0.5], [0.5, 0.5]], "b": [[0.5, 0.5], [0.5, 0.5]]})
    with pytest.raises(InvalidParameterError, match="sum to 1"):
        ParameterNetwork({"a": (0, 1)}, None, {"a": [0.5, 0.6]})
    with pytest.raises(InvalidParameterError, match="sum to 1"):
        ParameterNetwork({"a": (0, 1), "b": (0, 1)}, {"b": ("a",)}, {"a": [0.5, 0.5], "b": {(0,): [1, 0], (1,): [0.2, 0.7]}})
    with pytest.raises(InvalidParameterError, match="missing row"):
        ParameterNetwork({"a": (0, 1), "b": (0, 1)}, {"b": ("a",)}, {"a": [0.5, 0.5], "b": {(0,): [1, 0]}})
    with pytest.raises(UnknownLabelError):
        ParameterNetwork({"a": (0, 1)}, {"a": ("zz",)}, {"a": [0.5, 0.5]})
    with pytest.raises(InvalidParameterError, match=">= 0"):
        ParameterNetwork({"a": (0, 1)}, None, {"a": [1.5, -0.5]})


def test_example1_school_outcomes() -> None:
    nets = ex.school_networks()
    fw = ex.school_framework()
    n, eps = 200, 1.0
    q = quilt_for(nets[0].graph, "income", ["gender"])
    assert q.nearby == {"income", "sat"} and q.remote == {"height", "weight"}  # the paper's quilt
    assert is_markov_quilt(nets[0].graph, "income", q.quilt, q.remote)
    e = max_influence(nets, ["gender"], "income").value
    assert 0 < e < eps
    # count of students taller than 66 in: released without noise
    m1 = apmqm(fw, nets, ["height"], ColumnSensitivity.count(n, ["height"]), epsilon=eps)
    assert m1.kind == "none" and m1.details["scale"] == 0.0
    c1 = m1.details["choices"]["income"]
    assert not c1.fallback and not (c1.quilt.nearby & {"height"})
    assert m1.release(np.array([57.0]), rng=0)[0] == 57.0
    # taller than 66 and SAT > 1300: the paper's quilt gives Δ_{sat}F/(ε − e); Algorithm 2 takes the minimum
    sens = ColumnSensitivity.count(n, ["height", "sat"])
    m2 = apmqm(fw, nets, ["height", "sat"], sens, epsilon=eps)
    cands = {tuple(c["quilt"]): c for c in m2.details["choices"]["income"].candidates}
    assert cands[("gender",)]["scale"] == pytest.approx(sens({"sat"}) / (eps - e))
    assert cands[("gender",)]["sensitivity_nearby"] == n
    usable = [c["scale"] for c in cands.values() if c["usable"]]
    assert m2.details["scale"] == pytest.approx(min(min(usable), n / eps))
    assert m2.kind == "laplace" and m2.laplace_scale == pytest.approx(n / eps)
    # with a smaller Δ_{sat}F a quilt beats the fallback; the paper's quilt {gender} gives 20/(ε − e)
    m3 = apmqm(fw, nets, ["height", "sat"], {frozenset({"height", "sat"}): 200.0, frozenset({"sat"}): 20.0,
                                             frozenset({"height"}): 200.0}, epsilon=eps)
    c3 = {tuple(c["quilt"]): c for c in m3.details["choices"]["income"].candidates}
    assert c3[("gender",)]["scale"] == pytest.approx(20.0 / (eps - e))
    best = min(c["scale"] for c in c3.values() if c["usable"])
    assert m3.laplace_scale == pytest.approx(best) and best < 200.0 / eps
    assert not m3.details["choices"]["income"].fallback


def test_fallback_when_every_quilt_is_too_influential() -> None:
    nets = ex.school_networks()
    fw = ex.school_framework()
    m = apmqm(fw, nets, ["height"], ColumnSensitivity.count(100, ["height"]), epsilon=0.1)
    assert m.laplace_scale == pytest.approx(100 / 0.1)
    assert any("only the trivial quilt / fallback" in s for s in m.guarantee.notes)
    assert m.details["choices"]["income"].fallback


def test_accuracy_theorem4() -> None:
    nets = ex.school_networks()
    m = apmqm(ex.school_framework(), nets, ["height", "sat"], ColumnSensitivity.count(50, ["height", "sat"]), epsilon=1.0)
    b = m.laplace_scale
    beta = 0.1
    assert m.accuracy(beta) == pytest.approx(b * math.log(1 / beta))
    assert m.paper_accuracy(beta) == pytest.approx(b * math.log(1 / (2 * beta)))
    z = m.sample_noise(200_000, rng=1)[:, 0]
    assert np.mean(np.abs(z) > m.accuracy(beta)) == pytest.approx(beta, abs=0.005)
    assert np.mean(np.abs(z) > m.paper_accuracy(beta)) == pytest.approx(2 * beta, abs=0.005)
    assert m.guarantee.delta == 0.0 and m.guarantee.framework == "attribute-privacy"


def test_apmqm_bad_inputs_and_bounded_search() -> None:
    nets = ex.school_networks()
    fw = ex.school_framework()
    with pytest.raises(UnknownLabelError, match="does not exist"):
        apmqm(fw, nets, ["shoe_size"], ColumnSensitivity.count(10, ["shoe_size"]), epsilon=1)
    bad_fw = distributional_attribute_privacy(["income", "zip"], [(("zip", (1,)), ("zip", (2,)))])
    with pytest.raises(UnknownLabelError, match="not a node"):
        apmqm(bad_fw, nets, ["height"], ColumnSensitivity.count(10, ["height"]), epsilon=1)
    dfw = dataset_attribute_privacy(list(ex.SCHOOL_ATTRIBUTES), [(("income", (40,)), ("income", (80,)))])
    with pytest.raises(InvalidParameterError, match="distributional"):
        apmqm(dfw, nets, ["height"], ColumnSensitivity.count(10, ["height"]), epsilon=1)
    with pytest.raises(UnknownLabelError):
        bad_val = distributional_attribute_privacy(list(ex.SCHOOL_ATTRIBUTES), [(("income", (41,)), ("income", (80,)))])
        apmqm(bad_val, nets, ["height"], ColumnSensitivity.count(10, ["height"]), epsilon=1)
    with pytest.raises(InvalidParameterError, match="not given"):
        apmqm(fw, nets, ["height"], {frozenset({"sat"}): 1.0}, epsilon=1)
    big = random_network(20, rng=3, edge_prob=0.15)
    quilts, exhaustive = enumerate_quilts(big.graph, "x0", max_quilt_size=2)
    assert not exhaustive and len(quilts) == 1 + 19 + math.comb(19, 2)
    with pytest.raises(InvalidParameterError, match="exceed max_candidates"):
        enumerate_quilts(big.graph, "x0", max_quilt_size=6, max_candidates=1000)
    other = ParameterNetwork({"a": (0, 1)}, None, {"a": [0.5, 0.5]})
    with pytest.raises(InvalidParameterError, match="share"):
        apmqm(fw, [nets[0], other], ["height"], ColumnSensitivity.count(10, ["height"]), epsilon=1)
