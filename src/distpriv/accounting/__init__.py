"""Privacy accounting: certified privacy profiles of what mechanisms output (see submodules)."""

from __future__ import annotations

from .gaussian import gaussian_1d_delta, gaussian_pair_profile, reduce_pair
from .profile import EpsilonBound, Profile

__all__ = ["EpsilonBound", "Profile", "gaussian_1d_delta", "gaussian_pair_profile", "reduce_pair"]
