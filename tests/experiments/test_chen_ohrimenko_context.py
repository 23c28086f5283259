"""The cached Adult data context: :mod:`distpriv.experiments.chen_ohrimenko.context` (``distpriv reproduce chen-ohrimenko``, Chen & Ohrimenko Section 6).

Runs use tiny repetition counts and grids so the file stays well under a
minute; the statistical checks use tolerances derived from those sizes.
"""

from __future__ import annotations

from distpriv.experiments import chen_ohrimenko as co


def test_context_cache_is_bounded(adult_ok):
    ctx = co.get_context(0, model_samples=300)
    assert co.get_context(0, model_samples=300) is ctx  # cached
    assert co.context._build_context.cache_info().maxsize == co.CONTEXT_CACHE_SIZE
    for seed in range(1, co.CONTEXT_CACHE_SIZE + 1):  # evicts the least recently used context
        co.get_context(seed, model_samples=300)
    assert co.context._build_context.cache_info().currsize == co.CONTEXT_CACHE_SIZE
    assert co.get_context(0, model_samples=300) is not ctx
