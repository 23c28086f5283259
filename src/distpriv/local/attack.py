"""Attribute inference by the Bayes decision rule (tupling paper Section 7.3).

The attacker knows the mechanism and the location distribution ``λ_t`` of
every attribute value t (and priors π_t). Observing an output o (a region or a
tuple of regions) it picks ``argmax_t π_t Pr[o | λ_t]`` — the Bayes decision
rule (Duda et al.), which minimises the identification error when the
posterior is accurate. The *attack success rate* (ASR) for an attribute value
t is the fraction of users having t whom the attacker classifies as t.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import RngLike, as_rng, check_probability_vector
from ..errors import InvalidParameterError, InvalidTypeError, UnknownLabelError
from .mechanism import Mechanism, check_distribution
from .tupling import Tupling


class BayesAttacker:
    """Bayes-decision-rule attacker against a :class:`Mechanism` or :class:`Tupling`.

    Parameters
    ----------
    mech:
        The released mechanism.
    distributions:
        ``{t: λ_t}`` — the attacker's belief on the input distribution of each attribute value.
    priors:
        ``{t: π_t}``; uniform by default.
    """

    def __init__(
        self,
        mech: Mechanism | Tupling,
        distributions: Mapping[Any, ArrayLike],
        priors: Mapping[Any, float] | None = None,
    ) -> None:
        if not isinstance(mech, (Mechanism, Tupling)):
            raise InvalidTypeError(f"mech: expected a local.Mechanism or local.Tupling, got {type(mech).__name__}")
        if not isinstance(distributions, Mapping) or len(distributions) < 2:
            raise InvalidParameterError("distributions: need at least two attribute values {t: λ_t}")
        self.mech = mech
        self.labels = list(distributions)
        self.lams = {t: check_distribution(lam, mech.n_inputs, f"distributions[{t!r}]") for t, lam in distributions.items()}
        if priors is None:
            pri = np.full(len(self.labels), 1.0 / len(self.labels))
        else:
            missing = [t for t in self.labels if t not in priors]
            if missing:
                raise UnknownLabelError(f"priors: missing attribute values {missing}")
            pri = check_probability_vector([float(priors[t]) for t in self.labels], "priors")
        self.priors = pri
        self._lifts = np.stack([mech.lift(self.lams[t]) for t in self.labels])  # (T, |Y|)

    def log_scores(self, outputs: ArrayLike) -> NDArray[np.float64]:
        """``ln π_t + ln Pr[o | λ_t]`` for each output (rows) and attribute value (columns)."""
        with np.errstate(divide="ignore"):
            if isinstance(self.mech, Tupling):
                t = np.asarray(outputs)
                lik = np.stack([self.mech.tuple_probability(self.lams[lab], t) for lab in self.labels], axis=1)
            else:
                o = np.atleast_1d(np.asarray(outputs))
                if not np.issubdtype(o.dtype, np.integer) or (o.size and (o.min() < 0 or o.max() >= self.mech.n_outputs)):
                    raise InvalidParameterError(f"outputs: expected output indices in [0, {self.mech.n_outputs})")
                lik = self._lifts[:, o].T
            return np.log(lik) + np.log(self.priors)[None, :]

    def decide(self, outputs: ArrayLike) -> list[Any]:
        """The Bayes decision ``argmax_t π_t Pr[o | λ_t]`` for each output."""
        idx = np.argmax(self.log_scores(outputs), axis=1)
        return [self.labels[i] for i in idx]

    def exact_success_rate(self, target: Hashable) -> float:
        """Exact ASR for a plain mechanism: ``Σ_y Pr[y | λ_target] 1{decide(y) = target}``."""
        if target not in self.lams:
            raise UnknownLabelError(f"target: unknown attribute value {target!r}; known are {self.labels}")
        if isinstance(self.mech, Tupling):
            raise InvalidTypeError("exact_success_rate: only for a plain Mechanism; use empirical_success_rate")
        scores = np.log(np.maximum(self._lifts, 1e-300)).T + np.log(self.priors)[None, :]
        win = np.argmax(scores, axis=1) == self.labels.index(target)
        return float(self._lifts[self.labels.index(target)][win].sum())

    def empirical_success_rate(
        self, target: Hashable, inputs: ArrayLike | None = None, *, n_samples: int = 10_000, rng: RngLike = None
    ) -> float:
        """ASR on simulated releases: each user with attribute ``target`` (input indices ``inputs``,
        or ``n_samples`` draws from λ_target) releases one output; the fraction decided as ``target``."""
        if target not in self.lams:
            raise UnknownLabelError(f"target: unknown attribute value {target!r}; known are {self.labels}")
        gen = as_rng(rng)
        if inputs is None:
            xs = gen.choice(self.mech.n_inputs, size=int(n_samples), p=self.lams[target])
        else:
            xs = np.asarray(inputs)
            if xs.ndim != 1 or xs.size == 0:
                raise InvalidParameterError("inputs: expected a non-empty 1-D array of input indices")
        outs = self.mech.sample(xs, gen)
        dec = np.argmax(self.log_scores(outs), axis=1)
        return float(np.mean(dec == self.labels.index(target)))


def attack_success_rate(
    mech: Mechanism | Tupling,
    distributions: Mapping[Any, ArrayLike],
    target: Hashable,
    *,
    inputs: ArrayLike | None = None,
    priors: Mapping[Any, float] | None = None,
    n_samples: int = 10_000,
    rng: RngLike = None,
) -> float:
    """ASR of the Bayes attacker for attribute value ``target`` (Section 7.3).

    Exact for a plain :class:`Mechanism` without ``inputs``; otherwise the
    empirical rate on simulated releases (seeded).
    """
    att = BayesAttacker(mech, distributions, priors)
    if isinstance(mech, Mechanism) and inputs is None:
        return att.exact_success_rate(target)
    return att.empirical_success_rate(target, inputs, n_samples=n_samples, rng=rng)
