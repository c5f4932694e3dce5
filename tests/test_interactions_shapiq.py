"""insdel.interactions.shapiq_io: exact round trips through shapiq's InteractionValues, and
every index equal to shapiq's ExactComputer on the same game (insdel's value function wrapped as
a shapiq Game) under the baseline and the marginal removal."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import insdel
from insdel.interactions import INDICES
from insdel.interactions.shapiq_io import from_shapiq, shapiq_game, to_shapiq

shapiq = pytest.importorskip("shapiq")


def model(Z):
    return (Z[:, 0] * Z[:, 1] * Z[:, 5] + np.sin(Z[:, 2]) * Z[:, 3] + Z[:, 4] ** 2 * Z[:, 0]
            + Z[:, 6] * Z[:, 7] * Z[:, 1] + np.tanh(Z[:, 8] * Z[:, 9]) * Z[:, 2])


def pairs(removal, n=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2, n))
    R = rng.normal(size=(2, n)) if removal is None else rng.normal(size=(2, 3, n))
    return X, R


# FSII: shapiq's ExactComputer solves the constrained least squares with a penalty of 1e8 on
# the constraints, so its own values are off by about 1e-9 (insdel's equal brute force to 1e-12,
# tests/test_interactions.py).
TOL = {"FSII": 5e-9}


@pytest.mark.parametrize("removal", [None, "marginal"])
@pytest.mark.parametrize("name", list(INDICES))
def test_every_index_equals_shapiqs_exact_computer(name, removal):
    X, R = pairs(removal)
    game = shapiq_game(model, X, R, removal=removal, pair=1)
    exact = shapiq.ExactComputer(game)
    orders = [1] if INDICES[name].fixed_order else [1, 2, 3]
    for k in orders:
        res = insdel.interactions(model, X, R, index=name, order=k, removal=removal)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            iv = exact(name, k) if name != "Moebius" else exact("Moebius")
        mine = to_shapiq(res, 1)
        keys = [S for S in iv.interactions if len(S) <= k]
        err = max(abs(mine[S] - iv[S]) for S in keys)
        assert err <= TOL.get(name, 1e-10), (name, k, err)
        assert mine.index == iv.index


@pytest.mark.parametrize("name", list(INDICES))
def test_round_trip_through_interaction_values_is_exact(name):
    X, R = pairs(None, n=6, seed=3)
    R[0, [1, 4]] = X[0, [1, 4]]  # pair 0: D has 4 of the 6 units
    k = INDICES[name].fixed_order or 3
    res = insdel.interactions(model_small, X, R, index=name, order=k)
    for b in range(2):
        iv = to_shapiq(res, b)
        back = from_shapiq(iv, units=res.units, v_all=float(res.v_all[b]))
        assert back.to_dict(0) == res.to_dict(b)
        assert back.index == res.index and back.order == res.order
        assert back.D(0).tolist() == res.D(b).tolist()
        assert back.v_empty[0] == res.v_empty[b] and back.v_all[0] == res.v_all[b]
        assert iv.baseline_value == res.v_empty[b] and not iv.estimated


def model_small(Z):
    return Z[:, 0] * Z[:, 1] * Z[:, 5] + np.sin(Z[:, 2]) * Z[:, 3] + Z[:, 4] ** 2 * Z[:, 0]


def test_from_shapiq_reads_shapiqs_exact_values_and_its_approximators():
    X, R = pairs(None, n=6, seed=4)
    game = shapiq_game(model_small, X, R)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iv = shapiq.ExactComputer(game)("k-SII", 2)
        approx = shapiq.PermutationSamplingSII(n=6, max_order=2, index="k-SII",
                                               random_state=0).approximate(200, game)
    ours = insdel.interactions(model_small, X[:1], R[:1], index="k-SII", order=2)
    theirs = from_shapiq(iv)
    np.testing.assert_allclose(theirs.matrix(0), ours.matrix(0), atol=1e-12)
    np.testing.assert_allclose(theirs.v_all, ours.v_all, atol=1e-12)  # efficiency
    scored = from_shapiq(approx)
    assert not scored.exact and scored.method == "shapiq"
    assert np.abs(scored.matrix(0) - ours.matrix(0)).max() < 10


def test_order_one_sii_is_shapiqs_sv():
    X, R = pairs(None, n=6, seed=5)
    res = insdel.interactions(model_small, X, R, index="SII", order=1)
    iv = to_shapiq(res, 0)
    assert iv.index == "SV" and iv[()] == res.v_empty[0]
    np.testing.assert_allclose([iv[(j,)] for j in range(6)], res.values(1)[0], atol=0)


def test_package_level_shapiq_wrappers_are_shapiq_io():
    X, R = pairs(None, n=5, seed=7)
    res = insdel.interactions(model_small_5, X, R, index="k-SII", order=2)
    iv = insdel.interactions.to_shapiq(res, 1)
    assert iv.index == "k-SII" and iv.max_order == 2
    assert iv.dict_values == to_shapiq(res, 1).dict_values
    back = insdel.interactions.from_shapiq(iv, units=res.units, v_all=float(res.v_all[1]))
    assert back.to_dict(0) == res.to_dict(1)
    with pytest.raises(TypeError):
        insdel.interactions.from_shapiq(iv, no_such_option=1)


def model_small_5(Z):
    return Z[:, 0] * Z[:, 1] + np.sin(Z[:, 2]) * Z[:, 3] + Z[:, 4] ** 2
