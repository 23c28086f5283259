"""The audit's side-channel check: do the public outputs reveal θ beyond the noisy values?

Two synthetic datasets that differ only in θ — the two values of the first pair
of Ψ — are drawn from the model of f_θ (rows sampled from the reference
population without replacement, or resampled from the data with replacement;
for a declared model, query values drawn from N(μ_θ, Σ_θ)). Each goes through
the real release path (:func:`~distpriv.release.core.prepare`,
:func:`~distpriv.release.core.release`, :func:`~distpriv.release.public.public_payload`
and the Markdown report of :func:`~distpriv.release.render.release_sections`).
The check fails when the two public outputs differ anywhere but in the noisy
values (``statistics[].value``) and — with ``--model-from-data`` — in the fields
the payload declares data-dependent (those differences are reported as outside
the guarantee). It tests the release code, not the mechanism's noise: that is
what the attacks of the audit measure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..report import render_markdown
from .core import Prepared, ReleaseResult, prepare, release, select
from .public import public_context
from .render import release_sections
from .selection import Selection

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SideChannelResult", "json_differences", "side_channel_check"]

_VALUE = "<value>"


@dataclass(frozen=True)
class SideChannelResult:
    """Outcome of :func:`side_channel_check`."""

    pair: tuple[float, float]
    differences: tuple[str, ...]
    data_dependent_differences: tuple[str, ...]
    markdown_compared: bool
    description: str

    @property
    def passed(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "pair": list(self.pair), "differences": list(self.differences),
                "data_dependent_differences": list(self.data_dependent_differences),
                "markdown_compared": self.markdown_compared, "description": self.description}


def json_differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths (``statistics[].value`` style, list indices dropped) where two JSON documents differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.append(p)
            else:
                out += json_differences(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [path]
        out = []
        for x, y in zip(a, b, strict=True):
            out += json_differences(x, y, f"{path}[]")
        return out
    if type(a) is not type(b) or a != b:
        return [path]
    return []


def _mask_markdown(text: str, values: list[float]) -> str:
    for v in sorted({repr(float(x)) for x in values}, key=len, reverse=True):
        text = re.sub(rf"(?<![\d.]){re.escape(v)}(?![\d])", _VALUE, text)
    return text


def _synthetic_table(prep: Prepared, p: float, rng: np.random.Generator) -> pd.DataFrame:
    """A dataset of n records with ⌊pn⌉ protected ones, built from the modelling's stratified subsample
    (without replacement from a population where the subsample suffices, else with replacement)."""
    n = prep.modelling.n
    sub = prep.modelling.subsample
    assert n is not None and sub is not None
    k = int(round(p * n))
    flags = sub.protected
    pos_rows, neg_rows = np.flatnonzero(flags), np.flatnonzero(~flags)
    replace = prep.population is None or k > pos_rows.size or n - k > neg_rows.size
    pos = rng.choice(pos_rows, size=k, replace=replace)
    neg = rng.choice(neg_rows, size=n - k, replace=replace)
    rows = np.concatenate([pos, neg])
    rng.shuffle(rows)
    return sub.frame.iloc[rows].reset_index(drop=True)


def _public(result: ReleaseResult) -> tuple[dict[str, Any], str]:
    ctx = public_context(result)
    md = render_markdown("distpriv release", release_sections(ctx, figures=False))
    return ctx.payload, md


def side_channel_check(prep: Prepared, selection: Selection | None = None) -> SideChannelResult:
    """Release two synthetic datasets at the two θ of the first pair and compare their public outputs."""
    spec = prep.spec
    a, b = spec.pairs[0]
    rng = prep.stream(4)
    outs: list[tuple[dict[str, Any], str]] = []
    if prep.declared is not None:
        sel = selection or select(prep)
        for p in (a, b):
            x = prep.modelling.sampler(p, 1, rng)[0]
            outs.append(_public(release(replace(prep, previous=[], shared={}), sel, truth=x)))
        how = "query values drawn from the declared N(μ_θ, Σ_θ)"
    else:
        plain = replace(spec, previous=(), independent=False)
        for p in (a, b):
            table = _synthetic_table(prep, p, rng)
            p_prep = prepare(plain, data=table)
            outs.append(_public(release(p_prep, select(p_prep))))
        how = ("datasets of n records sampled from the reference population" if prep.population is not None
               else "datasets of n records resampled from the data")
    (ja, ma), (jb, mb) = outs
    diffs = [d for d in json_differences(ja, jb) if d != "statistics[].value"]
    declared = set(ja.get("data_dependent", []))
    dd = [d for d in diffs if any(d == f or d.startswith(f + ".") or d.startswith(f + "[") for f in declared)]
    other = [d for d in diffs if d not in dd]
    compare_md = not declared
    if compare_md:
        va = [s["value"] for s in ja["statistics"]]
        vb = [s["value"] for s in jb["statistics"]]
        if _mask_markdown(ma, va) != _mask_markdown(mb, vb):
            other.append("report.md")
    desc = (f"Two synthetic datasets differing only in θ ({a} vs {b}; {how}) were released through the real "
            "public-output path (JSON payload" + (" and Markdown report" if compare_md else "") + "); the check fails "
            "if they differ anywhere but in the noisy values"
            + (" and the fields declared data-dependent." if declared else "."))
    return SideChannelResult((float(a), float(b)), tuple(dict.fromkeys(other)), tuple(dict.fromkeys(dd)), compare_md,
                             desc)
