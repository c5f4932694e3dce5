"""Areas (paper eq. 1, 2): AUC, AUL and ABC with positions, m and normalize."""

from __future__ import annotations

import numpy as np
import pytest

from insdel import areas


# -- abc / auc options: normalize, m and positions -------------------------------------------------
def test_areas_normalize_m_and_positions_are_checked():
    c = np.array([0.0, 1, 3, 3, 4])
    for bad in (None, "no"):
        with pytest.raises(TypeError, match="normalize must be True or False"):
            areas.abc(c, normalize=bad)
        with pytest.raises(TypeError, match="normalize must be True or False"):
            areas.abc(c, positions=[0, 1, 2, 3, 4], m=8, normalize=bad)
        with pytest.raises(TypeError, match="normalize must be True or False"):
            areas.auc(c, normalize=bad)
    for bad, err in ((5.9, TypeError), (True, TypeError), (0, ValueError)):
        with pytest.raises(err, match="m must be an integer"):
            areas.abc(c, positions=[0, 1, 2, 3, 4], m=bad)
    with pytest.raises(ValueError, match="give positions="):
        areas.abc(c, m=8)  # m alone is not ignored
    with pytest.raises(TypeError, match="positions must hold integers"):
        areas.abc(c, positions=np.arange(5.0))
    with pytest.raises(ValueError, match="one entry per curve point"):
        areas.abc(c, positions=[[0, 1, 2, 3, 4]])
    assert areas.abc(c, positions=[0, 1, 2, 3, 4], m=8, normalize=False) == pytest.approx(1.0)
