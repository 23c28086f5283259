"""Data sets used by the reproductions: the UCI Adult census table (Chen & Ohrimenko Section 6)."""

from __future__ import annotations

from .adult import (
    ADULT_COLUMNS,
    ADULT_N_CLEAN,
    ADULT_SHA256,
    UCI_ADULT_URL,
    AdultSplit,
    load_adult,
    split_adult,
)

__all__ = [
    "ADULT_COLUMNS",
    "ADULT_N_CLEAN",
    "ADULT_SHA256",
    "UCI_ADULT_URL",
    "AdultSplit",
    "load_adult",
    "split_adult",
]
