"""The one ordering vocabulary (insdel.ordering): names, aliases, the sort and the random draws."""

from __future__ import annotations

import numpy as np
import pytest

import insdel
from insdel import config, roar
from insdel.metrics.base import rank_of
from insdel.ordering import (
    ALIASES,
    ORDERINGS,
    RELEVANCE,
    check_ordering,
    random_permutations,
    sort_orderings,
)
from insdel.tracing import orderings

A = np.array([[0.5, -2.0, 0.5, 1.0, 0.0], [3.0, 1.0, -1.0, -3.0, 1.0]])


def test_every_alias_and_direction_names_a_canonical_ordering():
    assert set(ALIASES.values()) <= set(ORDERINGS)
    assert all(set(v.values()) <= set(ORDERINGS) for v in RELEVANCE.values())
    for name in ORDERINGS:
        assert check_ordering(name) == name
    assert check_ordering("kar_signed") == "ascending"
    assert check_ordering("kar_absolute") == "least"
    assert check_ordering("morf") == "absolute" and check_ordering("lerf") == "least"
    assert check_ordering("morf", ranking="signed") == "signed"
    assert check_ordering("lerf", ranking="signed") == "ascending"


def test_an_unknown_or_refused_ordering_names_the_argument_and_the_allowed_names():
    with pytest.raises(insdel.UnknownNameError, match=r"^orders: unknown ordering 'morff'\. "
                                                      r"Did you mean 'morf'"):
        check_ordering("morff", argument="orders")
    # an alias is taken where its canonical name is; a direction needs a ranking
    assert check_ordering("kar_signed", allowed=("signed", "ascending"), ranking=None) == "ascending"
    with pytest.raises(ValueError, match="Available: signed, ascending, kar_signed"):
        check_ordering("morf", allowed=("signed", "ascending"), ranking=None)
    with pytest.raises(ValueError, match="unknown ranking"):
        check_ordering("morf", ranking="magnitude")


def test_sort_orderings_is_each_engines_old_sort():
    # ROAR's KAR keys and the curves' keys, stable ties by index
    old = {"absolute": -np.abs(A), "signed": -A, "kar_absolute": np.abs(A), "kar_signed": A,
           "ascending": A, "least": np.abs(A)}
    for name, key in old.items():
        want = np.argsort(key, axis=1, kind="stable")
        np.testing.assert_array_equal(sort_orderings(A, name), want)
        np.testing.assert_array_equal(roar.removal_orders(A, name), want)
    for name in ("signed", "absolute", "ascending"):
        np.testing.assert_array_equal(orderings(A, order=name), sort_orderings(A, name))
    np.testing.assert_array_equal(rank_of(A, order="kar_absolute"), rank_of(A, order="least"))


@pytest.mark.parametrize("shape", [(7, 5), (3, 4, 9), (2, 1, 30)])
def test_random_permutations_are_the_draws_every_caller_made(shape):
    keys = np.random.default_rng(3).random(shape)
    got = random_permutations(np.random.default_rng(3), shape)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argsort(keys, axis=-1, kind="stable"))
    np.testing.assert_array_equal(got, np.argsort(keys, axis=-1))  # no ties among the keys
    base = np.broadcast_to(np.arange(shape[-1]), shape).copy()
    np.testing.assert_array_equal(
        random_permutations(np.random.default_rng(3), shape, scheme="permuted"),
        np.random.default_rng(3).permuted(base, axis=-1))
    with pytest.raises(ValueError, match="Did you mean 'keys'"):
        random_permutations(np.random.default_rng(3), shape, scheme="key")


def test_random_orderings_and_roar_random_keep_their_draws():
    rng = np.random.default_rng(5)
    np.testing.assert_array_equal(insdel.random_orderings(2, 3, 4, seed=5),
                                  np.argsort(rng.random((2, 3, 4)), axis=-1, kind="stable"))
    np.testing.assert_array_equal(roar.removal_orders(None, "random", seed=5, shape=(6, 4)),
                                  np.argsort(np.random.default_rng(5).random((6, 4)), axis=1))


def test_roar_takes_canonical_names_and_refuses_one_ordering_twice():
    A2 = np.abs(A) + np.arange(5)
    np.testing.assert_array_equal(roar.removal_orders(A2, "ascending"),
                                  roar.removal_orders(A2, "kar_signed"))
    with pytest.raises(ValueError, match="names an ordering twice"):
        roar.roar(None, {}, params=None, orderings=("kar_signed", "ascending"))


def test_evaluate_and_the_configuration_take_the_aliases():
    f = insdel.as_model(lambda Z: Z.sum(axis=1) + Z[:, 0] * Z[:, 1])
    X, R = np.ones((2, 5)), np.zeros((2, 5))
    a = insdel.evaluate(f, X, R, {"m": A}, order="ascending", add_random=False)
    b = insdel.evaluate(f, X, R, {"m": A}, order="kar_signed", add_random=False)
    np.testing.assert_array_equal(a.curves["insertion"], b.curves["insertion"])
    cfg = {"data": {"recipe": "diabetes"}, "model": {"preset": "quick_housing"}}
    with pytest.raises(config.ConfigError, match=r"evaluation\.order: unknown ordering 'signd'"):
        config.load({**cfg, "evaluation": {"order": "signd"}})
