"""Bayesian networks over attribute parameters φ and their max-influence (Zhang et al. Section 5).

Distributional attribute privacy (Definition 5) models the parameters
(φ_1, ..., φ_m) of the attributes as a Bayesian network (Definition 2):
P(φ_1, ..., φ_m) = Π_i P(φ_i | φ_parents(i)). Here every φ_i has a finite support
Φ_i and a conditional probability table; Θ is a finite set of such networks.

Max-influence (Definition 7):

    e_Θ(X_A | X_i) = sup_{θ ∈ Θ} max_{φ_i^a, φ_i^b ∈ Φ_i} max_{φ_A ∈ Φ_A} ln P(φ_A | φ_i^a, θ) / P(φ_A | φ_i^b, θ),

computed by exact inference: P(φ_A, φ_i) is a tensor contraction of the
conditional tables (variable elimination through ``numpy.einsum`` with a greedy
contraction order), then normalised over φ_A. Values φ_i with P(φ_i | θ) = 0 are
skipped (Pufferfish only constrains secrets of positive probability); a φ_A
possible under φ_i^a but not under φ_i^b gives an infinite influence.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import RngLike, as_rng
from ..errors import InvalidParameterError, InvalidTypeError, UnknownLabelError

MAX_EINSUM_NODES = 52


class ParameterNetwork:
    """A Bayesian network over attribute parameters with finite supports.

    Parameters
    ----------
    supports:
        node -> the finite support Φ_i (a sequence of distinct hashable values).
    parents:
        node -> its parents, in the order used by its table (missing = root).
    tables:
        node -> P(φ_i | φ_parents): for a root a probability vector over Φ_i; otherwise
        either an array of shape (|Φ_p1|, ..., |Φ_pk|, |Φ_i|) or a dict mapping the
        tuple of parent values to a probability vector. Every row must sum to 1.
    name:
        Optional label (θ) of this network within Θ.
    """

    def __init__(self, supports: Mapping[str, Sequence[Hashable]], parents: Mapping[str, Sequence[str]] | None,
                 tables: Mapping[str, Any], name: Hashable = None) -> None:
        if not isinstance(supports, Mapping) or not supports:
            raise InvalidTypeError("supports: expected a non-empty dict node -> support values")
        self.name = name
        self.nodes: tuple[str, ...] = tuple(supports)
        self.supports: dict[str, tuple[Hashable, ...]] = {}
        for v, sup in supports.items():
            if isinstance(sup, (str, bytes)) or not isinstance(sup, Iterable):
                raise InvalidTypeError(f"supports[{v!r}]: expected a sequence of values")
            s = tuple(sup)
            if not s or len(set(s)) != len(s):
                raise InvalidParameterError(f"supports[{v!r}]: need at least one value and no duplicates")
            self.supports[v] = s
        pars = dict(parents or {})
        for v, ps in pars.items():
            if v not in self.supports:
                raise UnknownLabelError(f"parents: node {v!r} has no support; nodes are {list(self.nodes)}")
            for p in ps:
                if p not in self.supports:
                    raise UnknownLabelError(f"parents[{v!r}]: parent {p!r} is not a node; nodes are {list(self.nodes)}")
            if len(set(ps)) != len(tuple(ps)) or v in ps:
                raise InvalidParameterError(f"parents[{v!r}]: duplicate parents or a self-loop")
        self.parents: dict[str, tuple[str, ...]] = {v: tuple(pars.get(v, ())) for v in self.nodes}
        g = nx.DiGraph()
        g.add_nodes_from(self.nodes)
        g.add_edges_from((p, v) for v in self.nodes for p in self.parents[v])
        if not nx.is_directed_acyclic_graph(g):
            cycle = nx.find_cycle(g)
            raise InvalidParameterError(
                "parents: a Bayesian network must be acyclic (Definition 2); found the cycle "
                + " -> ".join(str(e[0]) for e in cycle) + f" -> {cycle[0][0]}"
            )
        self.graph = g
        missing = [v for v in self.nodes if v not in tables]
        if missing:
            raise InvalidParameterError(f"tables: missing conditional tables for {missing}")
        self.tables: dict[str, NDArray[np.float64]] = {v: self._table(v, tables[v]) for v in self.nodes}
        self._index = {v: {x: k for k, x in enumerate(self.supports[v])} for v in self.nodes}

    def _table(self, v: str, t: Any) -> NDArray[np.float64]:
        shape = tuple(len(self.supports[p]) for p in self.parents[v]) + (len(self.supports[v]),)
        if isinstance(t, Mapping):
            arr = np.full(shape, np.nan)
            for combo in itertools.product(*(range(len(self.supports[p])) for p in self.parents[v])):
                key = tuple(self.supports[p][k] for p, k in zip(self.parents[v], combo, strict=True))
                row = t.get(key, t.get(key[0]) if len(key) == 1 else None)
                if row is None:
                    raise InvalidParameterError(f"tables[{v!r}]: missing row for parent values {key}")
                arr[combo] = np.asarray(row, dtype=float)
        else:
            try:
                arr = np.asarray(t, dtype=float)
            except (TypeError, ValueError) as exc:
                raise InvalidTypeError(f"tables[{v!r}]: expected numbers") from exc
            if arr.shape != shape:
                raise InvalidTypeError(f"tables[{v!r}]: expected shape {shape} (parents {list(self.parents[v])}, node), got {arr.shape}")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise InvalidParameterError(f"tables[{v!r}]: probabilities must be finite and >= 0")
        sums = arr.sum(axis=-1)
        if not np.allclose(sums, 1.0, atol=1e-9, rtol=0):
            bad = float(sums.flat[int(np.argmax(np.abs(sums - 1.0)))])
            raise InvalidParameterError(f"tables[{v!r}]: every conditional distribution must sum to 1, one sums to {bad:.12g}")
        return arr

    # ------------------------------------------------------------------ inference
    def marginal(self, nodes: Sequence[str]) -> NDArray[np.float64]:
        """P(φ_nodes) as an array with one axis per node (in the given order), by variable elimination."""
        nodes = list(nodes)
        for v in nodes:
            if v not in self.supports:
                raise UnknownLabelError(f"nodes: {v!r} is not a node; nodes are {list(self.nodes)}")
        if len(set(nodes)) != len(nodes):
            raise InvalidParameterError("nodes: duplicates")
        if len(self.nodes) > MAX_EINSUM_NODES:
            raise InvalidParameterError(f"network: exact inference supports at most {MAX_EINSUM_NODES} nodes")
        idx = {v: k for k, v in enumerate(self.nodes)}
        ops: list[Any] = []
        for v in self.nodes:
            ops.append(self.tables[v])
            ops.append([idx[p] for p in self.parents[v]] + [idx[v]])
        ops.append([idx[v] for v in nodes])
        return np.asarray(np.einsum(*ops, optimize="greedy"), dtype=float)

    def conditional(self, targets: Sequence[str], given: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(P(φ_given), P(φ_targets | φ_given)) with shapes (|Φ_g|,) and (|Φ_g|, |Φ_t1|, ...).

        Rows where P(φ_given) = 0 are NaN.
        """
        t = list(targets)
        if given in t:
            raise InvalidParameterError(f"targets: must not contain the conditioning node {given!r}")
        joint = self.marginal([given, *t])
        pg = joint.reshape(joint.shape[0], -1).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cond = joint / pg.reshape((-1,) + (1,) * len(t))
        cond[pg <= 0] = np.nan
        return pg, cond

    def value_index(self, node: str, value: Hashable) -> int:
        if node not in self._index:
            raise UnknownLabelError(f"node: {node!r} is not a node; nodes are {list(self.nodes)}")
        try:
            return self._index[node][value]
        except KeyError:
            raise UnknownLabelError(f"value: {value!r} is not in the support of φ_{node} {list(self.supports[node])}") from None

    def sample(self, rng: RngLike = None) -> dict[str, Hashable]:
        """Draw φ = (φ_1, ..., φ_m) by ancestral sampling."""
        g = as_rng(rng)
        out: dict[str, Hashable] = {}
        ks: dict[str, int] = {}
        for v in nx.topological_sort(self.graph):
            row = self.tables[v][tuple(ks[p] for p in self.parents[v])]
            k = int(g.choice(len(row), p=row))
            ks[v] = k
            out[v] = self.supports[v][k]
        return out

    def same_structure(self, other: ParameterNetwork) -> bool:
        """Same nodes, supports and edges (tables may differ)."""
        return self.supports == other.supports and set(self.graph.edges) == set(other.graph.edges)

    def __repr__(self) -> str:
        return f"ParameterNetwork(name={self.name!r}, nodes={list(self.nodes)}, edges={sorted(self.graph.edges)})"


@dataclass(frozen=True)
class Influence:
    """e_Θ(X_A | X_i) with a maximising (θ, φ_i^a, φ_i^b, φ_A)."""

    value: float
    theta: Hashable = None
    source_values: tuple[Hashable, Hashable] | None = None
    target_values: tuple[Hashable, ...] | None = None


def as_networks(networks: ParameterNetwork | Sequence[ParameterNetwork]) -> tuple[ParameterNetwork, ...]:
    """Θ as a non-empty tuple of networks with one structure."""
    nets = (networks,) if isinstance(networks, ParameterNetwork) else tuple(networks)
    if not nets:
        raise InvalidParameterError("networks: Θ must contain at least one Bayesian network")
    for n in nets:
        if not isinstance(n, ParameterNetwork):
            raise InvalidTypeError(f"networks: expected ParameterNetwork objects, got {type(n).__name__}")
    for n in nets[1:]:
        if not n.same_structure(nets[0]):
            raise InvalidParameterError("networks: every network in Θ must share nodes, supports and edges")
    return nets


def max_influence(
    networks: ParameterNetwork | Sequence[ParameterNetwork],
    targets: Iterable[str],
    source: str,
    value_pairs: Sequence[tuple[Sequence[Hashable], Sequence[Hashable]]] | None = None,
) -> Influence:
    """Definition 7: e_Θ(X_A | X_i) by exact inference.

    ``value_pairs`` restricts (φ_i^a, φ_i^b) to a ∈ U, b ∈ V (both orders) for the
    secret pairs (U, V) ∈ Q — a valid bound for set secrets, since P(φ_A | φ_i ∈ U)
    is a mixture of P(φ_A | φ_i = a), a ∈ U. ``None`` uses all of Φ_i (Definition 7).
    """
    nets = as_networks(networks)
    tset = set(targets)
    for t in [*tset, source]:
        if t not in nets[0].supports:
            raise UnknownLabelError(f"attribute: {t!r} is not a node of the network; nodes are {list(nets[0].nodes)}")
    tgt = sorted(tset, key=nets[0].nodes.index)
    if source in tgt:
        raise InvalidParameterError(f"targets: must not contain the source attribute {source!r}")
    if not tgt:
        return Influence(0.0)
    k = len(nets[0].supports[source])
    if value_pairs is None:
        idx_pairs = [(a, b) for a in range(k) for b in range(k) if a != b]
    else:
        idx_pairs = []
        for u, v in value_pairs:
            for a in u:
                for b in v:
                    ia, ib = nets[0].value_index(source, a), nets[0].value_index(source, b)
                    if ia != ib:
                        idx_pairs.extend([(ia, ib), (ib, ia)])
    best = Influence(0.0)
    for net in nets:
        pg, cond = net.conditional(tgt, source)
        flat = cond.reshape(k, -1)
        for ia, ib in idx_pairs:
            if pg[ia] <= 0 or pg[ib] <= 0:
                continue
            pa, pb = flat[ia], flat[ib]
            with np.errstate(divide="ignore", invalid="ignore"):
                lr = np.where(pa > 0, np.log(pa) - np.log(np.where(pb > 0, pb, 1.0)), -np.inf)
                lr = np.where((pa > 0) & (pb <= 0), np.inf, lr)
            j = int(np.argmax(lr))
            val = float(lr[j])
            if val > best.value or (best.theta is None and val == best.value and math.isfinite(val)):
                combo = np.unravel_index(j, cond.shape[1:])
                best = Influence(
                    val,
                    net.name,
                    (net.supports[source][ia], net.supports[source][ib]),
                    tuple(net.supports[t][c] for t, c in zip(tgt, combo, strict=True)),
                )
    return best


def random_network(n_nodes: int, rng: RngLike = None, *, max_support: int = 3, edge_prob: float = 0.4,
                   zero_prob: float = 0.0, name: Hashable = None) -> ParameterNetwork:
    """A random DAG (edges i -> j for i < j with probability ``edge_prob``) with random tables.

    ``zero_prob`` sets table entries to 0 with that probability (rows keep at least one positive entry).
    """
    g = as_rng(rng)
    nodes = [f"x{k}" for k in range(n_nodes)]
    supports = {v: tuple(range(int(g.integers(2, max_support + 1)))) for v in nodes}
    parents = {v: tuple(nodes[i] for i in range(k) if g.random() < edge_prob) for k, v in enumerate(nodes)}
    tables: dict[str, ArrayLike] = {}
    for v in nodes:
        shape = tuple(len(supports[p]) for p in parents[v]) + (len(supports[v]),)
        t = g.dirichlet(np.ones(shape[-1]), size=shape[:-1]) if shape[:-1] else g.dirichlet(np.ones(shape[-1]))
        if zero_prob > 0:
            mask = g.random(t.shape) < zero_prob
            t = np.where(mask, 0.0, t)
            flat = t.reshape(-1, shape[-1])
            for row in flat:
                if row.sum() == 0:
                    row[int(g.integers(shape[-1]))] = 1.0
            t = flat.reshape(shape)
            t = t / t.sum(axis=-1, keepdims=True)
        tables[v] = t
    return ParameterNetwork(supports, parents, tables, name=name)


