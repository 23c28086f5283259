"""The SSP quantizer's bin count is bounded (review32, F3): identical or nearly identical means made the grid's
smallest width 5e-8 whitened units — 4.8e8 bins and 3.6 GB — and a fixed tiny ``width`` did the same."""

from __future__ import annotations

import numpy as np
import pytest

import distpriv as dp
from distpriv.errors import InvalidParameterError
from distpriv.mechanisms import ssp


@pytest.mark.parametrize("shift", [0.0, 1e-4])
def test_tiny_or_no_shift_calibrates_on_a_bounded_grid(shift: float) -> None:
    model = dp.GaussianModel(means={0: [0.0, 0.0], 1: [shift, 0.0]}, covariances={0: np.eye(2), 1: np.eye(2)})
    m = dp.calibrate("ssp-quantizer", model, [(0, 1)], epsilon=1.0, delta=1e-3)
    # the ±12 sd span of both laws (24 + shift whitened units) over at most MAX_BINS bins
    assert m.width >= (2 * ssp.Z_RANGE + shift) / ssp.MAX_BINS * (1 - 1e-12)
    assert 0.0 <= m.guarantee.delta <= 1e-3
    assert m.expected_l2_error < 1e-3  # bins this fine move the statistic by at most half a width per coordinate


def test_a_fixed_width_below_the_bound_is_refused_naming_width() -> None:
    model = dp.GaussianModel(means={0: [0.0, 0.0], 1: [0.0, 0.0]}, covariances={0: np.eye(2), 1: np.eye(2)})
    with pytest.raises(InvalidParameterError) as info:
        dp.calibrate("ssp-quantizer", model, [(0, 1)], epsilon=1.0, delta=1e-3, width=1e-9)
    assert str(info.value).startswith("width:")
