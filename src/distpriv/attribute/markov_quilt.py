"""Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings Section 5.1).

Definition 6: X_Q is a Markov quilt of X_i if deleting it splits the network into
X_N ∋ X_i and X_R with X_R ⟂ X_i | X_Q. For a candidate quilt Q this module
takes the smallest nearby set, N = {i} ∪ {v ∉ Q : v d-connected to i given Q},
and R = the rest (the largest remote set), found with one Bayes-ball pass
(Koller & Friedman Alg. 3.1); every returned quilt is re-checked with
``networkx.is_d_separator``.

Algorithm 2 (APMQM), Theorem 3 ((ε, 0)-distributional attribute privacy):

    b_i = Δ_A F / ε                                         (fallback: Q = ∅, N = all)
    b_i = min over quilts with e_Θ(X_Q | X_i) < ε of Δ_{A∩N} F / (ε − e_Θ(X_Q | X_i))
    Z ~ Lap(max_{i ∈ C} b_i)

Theorem 4 (accuracy): P(|Z| > α) <= β. For Lap(b), P(|Z| > α) = e^{−α/b}, so
α = b ln(1/β); the paper prints b ln(1/(2β)), which is the one-sided tail
P(Z > α) and therefore covers only probability 2β (reported as ``paper_alpha``).
Theorem 4 also writes max{·, Δ_A F/ε} where Algorithm 2 takes the minimum; the
mechanism follows Algorithm 2.

Column sensitivities Δ_S F (the largest change of F when the columns in S change
arbitrarily) are supplied by the query (:class:`ColumnSensitivity`).

Tightness (issue 25): Theorem 3's ε = e_Θ(X_Q | X_i) + Δ_{A∩N} F / b is used as proven (the least
scale over every quilt, max-influence restricted to the secret values); it is attained only when a
network, a quilt value and two column-neighbouring datasets line up. When the law of F given the
query columns' parameters is known, :mod:`distpriv.attribute.apmqm_exact` computes the exact ε of the
same release: Theorem 3's ε was a median 4.0× that on the school example (``benchmarks/bench_apmqm_exact.py``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from .._validation import check_delta, check_epsilon, check_int, check_positive
from ..errors import InvalidParameterError, InvalidTypeError, UnknownLabelError
from ..guarantees import Calibration, Guarantee
from ..mechanisms.base import Mechanism
from ..noise import NoiseLaw
from .bayesnet import ParameterNetwork, as_networks, max_influence
from .pufferfish import Interval, PufferfishFramework

THEOREM = "Zhang, Ohrimenko & Cummings Alg 2, Thm 3 (accuracy Thm 4)"


# --------------------------------------------------------------------------- quilts
@dataclass(frozen=True)
class MarkovQuilt:
    """(X_Q, X_N, X_R) for a node X_i (Definition 6)."""

    node: str
    quilt: frozenset[str]
    nearby: frozenset[str]
    remote: frozenset[str]

    def to_dict(self) -> dict[str, list[str]]:
        return {"quilt": sorted(self.quilt), "nearby": sorted(self.nearby), "remote": sorted(self.remote)}


def d_connected(graph: nx.DiGraph, source: str, observed: Iterable[str]) -> set[str]:
    """Nodes reachable from ``source`` by an active trail given ``observed`` (Bayes ball).

    Koller & Friedman (2009) Algorithm 3.1. ``source`` itself is included; observed
    nodes are never returned.
    """
    z = set(observed)
    anc: set[str] = set()
    stack = list(z)
    while stack:
        v = stack.pop()
        if v not in anc:
            anc.add(v)
            stack.extend(graph.predecessors(v))
    visited: set[tuple[str, str]] = set()
    reach: set[str] = set()
    todo: list[tuple[str, str]] = [(source, "up")]
    while todo:
        v, d = todo.pop()
        if (v, d) in visited:
            continue
        visited.add((v, d))
        if v not in z:
            reach.add(v)
        if d == "up" and v not in z:
            todo.extend((p, "up") for p in graph.predecessors(v))
            todo.extend((c, "down") for c in graph.successors(v))
        elif d == "down":
            if v not in z:
                todo.extend((c, "down") for c in graph.successors(v))
            if v in anc:
                todo.extend((p, "up") for p in graph.predecessors(v))
    return reach


def is_markov_quilt(graph: nx.DiGraph, node: str, quilt: Iterable[str], remote: Iterable[str]) -> bool:
    """X_R ⟂ X_i | X_Q by d-separation (``networkx.is_d_separator``)."""
    r, q = set(remote), set(quilt)
    if not r:
        return True
    if node in r or node in q or r & q:
        return False
    return bool(nx.is_d_separator(graph, {node}, r, q))


def quilt_for(graph: nx.DiGraph, node: str, quilt: Iterable[str]) -> MarkovQuilt:
    """The Markov quilt with quilt set Q and the smallest nearby set N."""
    q = frozenset(quilt)
    if node in q:
        raise InvalidParameterError(f"quilt: must not contain the node {node!r} itself")
    near = frozenset(d_connected(graph, node, q) - q) | {node}
    remote = frozenset(graph.nodes) - near - q
    return MarkovQuilt(node, q, near, remote)


def enumerate_quilts(graph: nx.DiGraph, node: str, *, exhaustive_limit: int = 14, max_quilt_size: int = 3,
                     max_candidates: int = 100_000) -> tuple[list[MarkovQuilt], bool]:
    """All Markov quilts of ``node`` (one per quilt set Q ⊆ V∖{i}), and whether the search was exhaustive.

    With at most ``exhaustive_limit`` other nodes every subset is tried (2^(m−1));
    beyond that only quilt sets of size <= ``max_quilt_size`` (a bounded search),
    and an :class:`InvalidParameterError` is raised if even that exceeds
    ``max_candidates``. Every quilt is verified by d-separation.
    """
    if node not in graph:
        raise UnknownLabelError(f"node: {node!r} is not in the network; nodes are {sorted(graph.nodes)}")
    others = [v for v in graph.nodes if v != node]
    exhaustive = len(others) <= check_int(exhaustive_limit, "exhaustive_limit", minimum=0)
    sizes = range(len(others) + 1) if exhaustive else range(min(check_int(max_quilt_size, "max_quilt_size", minimum=0), len(others)) + 1)
    count = sum(math.comb(len(others), k) for k in sizes)
    if count > max_candidates:
        raise InvalidParameterError(
            f"quilts: {count} candidate quilt sets for {node!r} ({len(others) + 1} nodes) exceed max_candidates="
            f"{max_candidates}; lower max_quilt_size, raise max_candidates, or pass quilts explicitly"
        )
    out: list[MarkovQuilt] = []
    for k in sizes:
        for q in itertools.combinations(others, k):
            mq = quilt_for(graph, node, q)
            if not is_markov_quilt(graph, node, mq.quilt, mq.remote):  # pragma: no cover - Bayes ball is exact
                raise AssertionError(f"internal: quilt {mq} fails d-separation")
            out.append(mq)
    return out, exhaustive


# --------------------------------------------------------------------------- sensitivities
class ColumnSensitivity:
    """Δ_S F for sets S of columns: the largest |F(X) − F(X')| over S-column neighbours.

    Build from a callable ``S -> Δ_S F`` or a mapping of frozensets (missing sets raise).
    Δ_∅ F = 0 always.
    """

    def __init__(self, fn: Callable[[frozenset[str]], float] | Mapping[frozenset[str], float], *, dim: int = 1) -> None:
        self.dim = check_int(dim, "dim", minimum=1)
        if isinstance(fn, Mapping):
            table = {frozenset(k): check_positive(v, f"sensitivity[{sorted(k)}]", allow_zero=True) for k, v in fn.items()}

            def get(s: frozenset[str]) -> float:
                if s in table:
                    return table[s]
                raise InvalidParameterError(f"sensitivity: Δ_S F not given for S = {sorted(s)}")

            self._fn: Callable[[frozenset[str]], float] = get
        elif callable(fn):
            self._fn = fn
        else:
            raise InvalidTypeError("sensitivity: expected a callable S -> Δ_S F or a dict of frozensets")

    def __call__(self, columns: Iterable[str]) -> float:
        s = frozenset(columns)
        if not s:
            return 0.0
        return check_positive(self._fn(s), f"sensitivity[{sorted(s)}]", allow_zero=True)

    @classmethod
    def count(cls, n: int, columns: Iterable[str]) -> ColumnSensitivity:
        """F = Σ_j 1[predicate on columns A of record j]: changing any column of A can flip all n terms."""
        k = check_int(n, "n", minimum=1)
        a = frozenset(columns)
        return cls(lambda s: float(k) if s & a else 0.0)

    @classmethod
    def mean(cls, ranges: Mapping[str, float], columns: Iterable[str]) -> ColumnSensitivity:
        """F = Σ_{k ∈ A} mean of column k with column k in an interval of width ``ranges[k]``: Δ_S F = Σ_{k ∈ S∩A} width."""
        a = frozenset(columns)
        w = {k: check_positive(v, f"ranges[{k!r}]", allow_zero=True) for k, v in ranges.items()}
        missing = a - set(w)
        if missing:
            raise InvalidParameterError(f"ranges: missing column width for {sorted(missing)}")
        return cls(lambda s: float(sum(w[k] for k in s & a)))


# --------------------------------------------------------------------------- mechanism
@dataclass
class QuiltChoice:
    """The quilt chosen for one sensitive attribute and every candidate's noise."""

    attribute: str
    scale: float
    quilt: MarkovQuilt | None
    influence: float
    fallback: bool
    candidates: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class QuiltMechanism(Mechanism):
    """APMQM: F(X) + Lap(b) per component (or F(X) when b = 0).

    ``scale`` is b = max over the query attributes of the chosen quilt's noise (Zhang et al. Algorithm 2);
    ``choices`` the chosen :class:`QuiltChoice` per sensitive attribute. Both are also in ``details``
    (``"scale"``, ``"choices"``) for the JSON outputs.
    """

    scale: float = 0.0
    choices: dict[str, QuiltChoice] = field(default_factory=dict)

    def accuracy(self, beta: float) -> float:
        """Theorem 4 corrected: P(max_k |Z_k| > α) <= β for α = b ln(dim/β) (b ln(1/β) for scalar F)."""
        b = check_delta(beta, "beta")
        return self.scale * math.log(self.dim / b) if self.scale > 0 else 0.0

    def paper_accuracy(self, beta: float) -> float:
        """Theorem 4 as printed: α = b ln(1/(2β)) (one-sided tail; covers probability 2β)."""
        b = check_delta(beta, "beta")
        return self.scale * math.log(1.0 / (2.0 * b))


def apmqm(
    framework: PufferfishFramework,
    networks: ParameterNetwork | Sequence[ParameterNetwork],
    query_attributes: Iterable[str],
    sensitivity: ColumnSensitivity | Callable[[frozenset[str]], float] | Mapping[frozenset[str], float],
    *,
    epsilon: float,
    quilts: Mapping[str, Sequence[Iterable[str]]] | None = None,
    restrict_to_secret_values: bool = True,
    exhaustive_limit: int = 14,
    max_quilt_size: int = 3,
    max_candidates: int = 100_000,
) -> QuiltMechanism:
    """Algorithm 2 for (ε, 0)-distributional attribute privacy (Theorem 3).

    Parameters
    ----------
    framework:
        Distributional attribute privacy (S, Q, Θ) (Definition 5); C = ``framework.sensitive``.
    networks:
        Θ: one or more :class:`ParameterNetwork` with one structure (nodes = attributes).
    query_attributes:
        A, the columns F reads.
    sensitivity:
        Δ_S F for column sets S (see :class:`ColumnSensitivity`).
    quilts:
        Optional explicit quilt sets per sensitive attribute (each validated by
        d-separation); default: :func:`enumerate_quilts`.
    restrict_to_secret_values:
        Take the max in Definition 7 over φ_i^a ∈ Φ_a, φ_i^b ∈ Φ_b of the secret pairs
        (valid, see :func:`max_influence`); ``False`` uses all of Φ_i.
    """
    if not isinstance(framework, PufferfishFramework):
        raise InvalidTypeError("framework: expected a PufferfishFramework")
    if framework.kind != "distributional":
        raise InvalidParameterError("framework: APMQM protects distributional secrets φ_i ∈ Φ_a (Definition 5)")
    eps = check_epsilon(epsilon)
    nets = as_networks(networks)
    graph = nets[0].graph
    nodes = set(nets[0].nodes)
    for a in framework.attributes:
        if a not in nodes:
            raise UnknownLabelError(f"framework: attribute {a!r} is not a node of the Bayesian network; nodes are {sorted(nodes)}")
    A = frozenset(query_attributes)
    if not A:
        raise InvalidParameterError("query_attributes: F must read at least one column")
    for a in A:
        if a not in nodes:
            raise UnknownLabelError(f"query_attributes: attribute {a!r} does not exist; attributes are {sorted(nodes)}")
    sens = sensitivity if isinstance(sensitivity, ColumnSensitivity) else ColumnSensitivity(sensitivity)
    delta_a = sens(A)
    choices: list[QuiltChoice] = []
    notes: list[str] = []
    exhaustive_all = True
    for attr in framework.sensitive:
        pairs = framework.pairs_for(attr)
        vp = None
        if restrict_to_secret_values:
            vp = []
            for p in pairs:
                if isinstance(p.first.values, Interval) or isinstance(p.second.values, Interval):
                    raise InvalidParameterError(f"pairs: distributional secrets on {attr!r} need finite value sets Φ_a")
                u, v = tuple(p.first.values), tuple(p.second.values)
                for x in (*u, *v):
                    nets[0].value_index(attr, x)
                vp.append((u, v))
        if quilts is not None and attr in quilts:
            cands = []
            for q in quilts[attr]:
                mq = quilt_for(graph, attr, q)
                if not is_markov_quilt(graph, attr, mq.quilt, mq.remote):  # pragma: no cover - construction is exact
                    raise InvalidParameterError(f"quilts[{attr!r}]: {sorted(mq.quilt)} is not a Markov quilt")
                cands.append(mq)
            exhaustive = False
        else:
            cands, exhaustive = enumerate_quilts(graph, attr, exhaustive_limit=exhaustive_limit,
                                                 max_quilt_size=max_quilt_size, max_candidates=max_candidates)
        exhaustive_all &= exhaustive
        best = QuiltChoice(attr, delta_a / eps, None, 0.0, True)
        usable = 0
        for mq in cands:
            e = max_influence(nets, mq.quilt, attr, vp).value
            d_near = sens(A & mq.nearby)
            ok = e < eps
            scale = d_near / (eps - e) if ok else math.inf
            best.candidates.append({**mq.to_dict(), "max_influence": e, "sensitivity_nearby": d_near,
                                    "scale": scale, "usable": ok})
            if ok and mq.quilt:
                usable += 1
            if ok and scale < best.scale:
                best = QuiltChoice(attr, scale, mq, e, False, best.candidates)
        if usable == 0:
            notes.append(
                f"{attr}: ε = {eps:g} <= max-influence e_Θ(X_Q | X_{attr}) for every non-empty Markov quilt; "
                f"only the trivial quilt / fallback Δ_A F/ε applies"
            )
        if best.fallback:
            notes.append(f"{attr}: fallback b = Δ_A F/ε = {delta_a:g}/{eps:g} (no quilt gives less noise)")
        choices.append(best)
    if not exhaustive_all:
        notes.append("quilt search was bounded or user-supplied (not exhaustive): privacy holds, noise may not be minimal")
    b = max(c.scale for c in choices)
    dim = sens.dim
    g = Guarantee(
        epsilon=eps,
        delta=0.0,
        mechanism="apmqm",
        framework="attribute-privacy",
        calibration=Calibration.LAPLACE,
        pairs=tuple((p.first.label, p.second.label) for p in framework.pairs),
        assumptions=(
            "(φ_1, ..., φ_m) follow one of the Bayesian networks in Θ (Zhang et al. Def. 5, Sec. 5)",
            "the columns X_1..X_m are independent given φ and X_k depends on φ only through φ_k",
            "the column sensitivities Δ_S F supplied with the query are correct (ℓ1 for vector F)",
        ),
        theorem=THEOREM,
        notes=tuple(notes),
    )
    chosen = {c.attribute: c for c in choices}
    details: dict[str, Any] = {
        "scale": b,
        "query_attributes": sorted(A),
        "sensitivity_all": delta_a,
        "choices": chosen,
        "exhaustive": exhaustive_all,
    }
    if b > 0:
        return QuiltMechanism("apmqm", "APMQM", dim, NoiseLaw.laplace(np.eye(dim), np.full(dim, b)), g,
                              details=details, scale=b, choices=chosen)
    return QuiltMechanism("apmqm", "APMQM", dim, NoiseLaw.none(dim), g, details=details, scale=b, choices=chosen)


