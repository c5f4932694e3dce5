"""evaluate() and Evaluation: options, curves given directly, orderings, random means, Markdown."""

from __future__ import annotations

import numpy as np
import pytest

import insdel
from insdel import areas
from insdel.evaluation import Evaluation, evaluate


# -- evaluate() options, Evaluation.from_curves, ordering and random_mean --------------------------
def _f6(Z):
    Z = np.asarray(Z, dtype=float)
    w = np.array([0.3, -1.0, 0.7, 0.2, -0.4, 1.1])
    return np.tanh(Z @ w) + Z[:, 0] * Z[:, 5] - Z[:, 2] * Z[:, 3]


def _pairs():
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    return X, R, {"a": rng.normal(size=(4, 6))}


@pytest.mark.parametrize("kw, match", [
    ({"normalize": None}, "normalize must be True or False"),
    ({"normalize": "false"}, "normalize must be True or False"),
    ({"add_random": "no"}, "add_random must be True or False"),
    ({"n_random": True}, "n_random must be an integer"),
    ({"n_random": 2.5}, "n_random must be an integer"),
    ({"seed": 1.5}, "seed must be an integer"),
    ({"seed": -1}, "seed must be an integer"),
])
def test_evaluate_options_are_checked(kw, match):
    X, R, A = _pairs()
    with pytest.raises(ValueError, match=match):
        evaluate(_f6, X, R, A, **kw)


def test_from_curves_needs_m_with_positions_and_matching_lengths():
    c = np.cumsum(np.random.default_rng(1).random((2, 1, 4)), axis=-1)
    kw = dict(methods=["a"], modes=["insertion"], curves={"insertion": c},
              random_curves={"insertion": c[:, :0]}, fx=c[:, 0, -1], fr=c[:, 0, 0],
              normalize=True)
    with pytest.raises(ValueError, match="give orders= or groups="):
        Evaluation.from_curves(**kw, positions=np.arange(4))  # m = 3? 10? unknown
    orders = np.tile(np.arange(10), (2, 1, 1))
    ev = Evaluation.from_curves(**kw, positions=np.arange(4), orders=orders)
    np.testing.assert_allclose(ev.abc_array("a"), areas.abc(c[:, 0], positions=np.arange(4), m=10))
    with pytest.raises(ValueError, match="has 4 points per curve; expected 11"):
        Evaluation.from_curves(**kw, orders=orders)


def test_ordering_pair_index_and_random_mean_without_random_orderings():
    X, R, A = _pairs()
    ev = evaluate(_f6, X, R, A, n_random=0)
    with pytest.raises(TypeError, match="pair must be an integer"):
        ev.ordering(1.5, "a")
    with pytest.raises(IndexError, match="out of range for 4 pairs"):
        ev.ordering(4, "a")
    assert ev.ordering(-1, "a").equals(ev.ordering(3, "a"))
    with pytest.raises(ValueError, match="n_random=0"):
        ev.random_mean()
    with pytest.raises(KeyError, match="was not evaluated"):
        evaluate(_f6, X, R, A, modes=["insertion"]).random_mean("deletion")


# -- Evaluation.to_markdown with one pair ----------------------------------------------------------
def test_evaluation_markdown_leaves_an_undefined_standard_error_blank():

    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(1, 3)), np.zeros(3)
    ev = insdel.evaluate(lambda Z: Z.sum(axis=1) + Z[:, 0] * Z[:, 1], X, R,
                         {"m": rng.normal(size=(1, 3))}, n_random=2)
    text = ev.to_markdown()
    assert "nan" not in text.lower()
    assert "needs at least two pairs" in text
