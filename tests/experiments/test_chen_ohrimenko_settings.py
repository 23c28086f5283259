"""Settings and published values: :mod:`distpriv.experiments.chen_ohrimenko.settings` (``distpriv reproduce chen-ohrimenko``, Chen & Ohrimenko Section 6).

Runs use tiny repetition counts and grids so the file stays well under a
minute; the statistical checks use tolerances derived from those sizes.
"""

from __future__ import annotations

import numpy as np

from distpriv.experiments import chen_ohrimenko as co


def test_reference_data_is_complete():
    assert len(co.PAPER_TABLE3) == 21 and len(co.PAPER_TABLE4) == 27
    assert np.isclose(co.PAPER_TABLE4[("DauM (G)", 5.0, 1e-2)], 0.744)
    assert co.pair_for(0.1) == (0.45, 0.55)


def test_mechanism_rows_come_from_the_metadata():
    """The baseline rows are read from distpriv.mechanisms.metadata, in the paper's order."""
    from distpriv.experiments.chen_ohrimenko import settings

    assert [n for n, _ in co.TABLE3_MECHANISMS] == ["expm-laplace", "dirm-laplace", "expm-gauss", "eigm", "daum",
                                                   "groupdp-laplace", "groupdp-gauss"]
    assert [n for n, _ in co.GAUSSIAN_EVM] == ["expm-gauss", "eigm", "daum"]
    assert settings.GROUP_DP == ("groupdp-laplace", "groupdp-gauss")
    assert settings.PLAIN_DP == ("dp-laplace", "dp-gauss")
    assert [lab for _, lab in co.DP_MECHANISMS] == ["DP (L)", "DP (G)"]
