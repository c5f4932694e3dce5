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


def _old_road_area(q, L):  # road's trapezoid of a loss curve over q
    return float(np.sum((L[1:] + L[:-1]) * np.diff(q)) / 2.0)


def _old_roar_area(q, L):  # roar's area against the straight line over q
    line = L[0] + (L[-1] - L[0]) * q
    d = L - line
    return float(np.sum((d[1:] + d[:-1]) * np.diff(q)) / 2.0)


@pytest.mark.parametrize("S", [2, 3, 7, 8, 9, 17, 130, 300])
def test_trapezoid_area_is_bit_identical_to_roar_and_road_areas(S):
    rng = np.random.default_rng(S)
    q = np.concatenate([[0.0], np.sort(rng.uniform(0, 1, S - 2)), [1.0]])
    L = rng.normal(size=(5, S)) * 10.0 ** rng.integers(-3, 4, size=(5, 1))
    got, got_line = areas.trapezoid_area(L, q), areas.trapezoid_area(L, q, minus_line=True)
    for i in range(5):
        assert got[i] == _old_road_area(q, L[i])  # bit for bit, every summation length
        assert got_line[i] == _old_roar_area(q, L[i])
        assert float(areas.trapezoid_area(L[i], q, minus_line=True)) == _old_roar_area(q, L[i])


def test_trapezoid_area_checks_its_points():
    with pytest.raises(ValueError, match="one point per curve point"):
        areas.trapezoid_area(np.zeros(3), [0.0, 1.0])
    with pytest.raises(ValueError, match="strictly increasing"):
        areas.trapezoid_area(np.zeros(3), [0.0, 0.5, 0.5])
    assert np.isnan(areas.trapezoid_area([0.0, np.nan], [0.0, 1.0]))
    np.testing.assert_allclose(areas.trapezoid_area([0.0, 2.0, 0.0], [0.0, 0.5, 1.0]), 1.0)
    np.testing.assert_allclose(
        areas.trapezoid_area([0.0, 2.0, 0.0], [0.0, 0.5, 1.0], minus_line=True), 1.0)
