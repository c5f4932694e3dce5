"""Model.n_evals / n_calls / n_grad_evals: a Model that as_model derives from another one (another
batch size, dtype or output) counts on the caller's model too."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

import insdel
from insdel import as_model
from insdel.attribution import ExactShapley


def _sum(Z):
    return Z.sum(1)


def test_trace_with_batch_size_counts_on_the_callers_model():
    X, R = np.ones((3, 4)), np.zeros(4)
    m = as_model(lambda Z: Z.sum(1))
    insdel.trace(m, X, R, np.tile(np.arange(4), (3, 1)), batch_size=2)
    assert m.n_evals == 24
    assert m.n_calls >= 12  # 24 rows, at most 2 per call
    assert m.n_grad_evals == 0


def test_batch_decomposition_with_batch_size_counts_on_the_callers_model():
    X, R = np.ones((3, 4)), np.zeros(4)
    m = as_model(lambda Z: Z.sum(1))
    dec = insdel.batch_decomposition(m, X, R, batch_size=2)
    assert m.n_evals == 48 == dec.n_evals
    assert m.n_calls == 24


def test_derived_models_share_counts_both_ways():
    m = as_model(lambda Z: np.stack([Z.sum(1), Z[:, 0]], axis=1), output=0)
    by_bs = as_model(m, batch_size=2)
    by_dtype = as_model(m, dtype=np.float32)
    by_out = as_model(m, output=1)
    by_both = as_model(by_bs, output=1)  # derived from a derived one
    assert all(d is not m for d in (by_bs, by_dtype, by_out, by_both))
    X = np.arange(10.0).reshape(5, 2)

    by_bs(X)  # 3 calls of 2, 2 and 1 rows
    assert (m.n_evals, m.n_calls) == (5, 3)
    m(X)  # the caller's model, one call: seen by every derived one
    for d in (m, by_bs, by_dtype, by_out, by_both):
        assert (d.n_evals, d.n_calls, d.n_grad_evals) == (10, 4, 0)
    by_dtype(X[:1])
    by_out(X[:2])
    by_both(X[:3])  # batch size 2: 2 calls
    for d in (m, by_bs, by_dtype, by_out, by_both):
        assert (d.n_evals, d.n_calls) == (16, 8)
    np.testing.assert_array_equal(by_out(X), X[:, 0])  # and the output selection still applies

    by_out.n_evals = 0  # assignment resets the shared count
    by_out.n_calls = 0
    assert (m.n_evals, m.n_calls, by_bs.n_evals) == (0, 0, 0)


def test_unchanged_as_model_is_the_same_model():
    m = as_model(_sum, batch_size=4)
    assert as_model(m) is m and as_model(m, batch_size=4) is m and as_model(m, dtype=np.float64) is m


def test_independent_models_of_one_function_do_not_share_counts():
    a, b = as_model(_sum), as_model(_sum)
    c = insdel.Model(_sum)
    X = np.ones((4, 3))
    a(X)
    assert (a.n_evals, b.n_evals, c.n_evals) == (4, 0, 0)
    as_model(b, batch_size=1)(X)
    assert (a.n_evals, b.n_evals, c.n_evals) == (4, 4, 0)
    c(X[:1])
    assert (a.n_evals, b.n_evals, c.n_evals) == (4, 4, 1)


def test_a_deep_copy_has_counts_of_its_own():
    m = as_model(_sum)
    d = as_model(m, batch_size=2)
    m2, d2 = copy.deepcopy((m, d))
    d2(np.ones((3, 2)))
    assert (m2.n_evals, d2.n_evals) == (3, 3)  # still shared within the copy
    assert (m.n_evals, d.n_evals) == (0, 0)


def test_exact_shapley_n_evals_with_batch_size():
    rng = np.random.default_rng(0)
    n = 5
    X = rng.normal(size=(4, n)) + 3.0  # every feature differs from the zero reference
    R = np.zeros((4, n))
    X[3, :2] = 0.0  # except in the last pair: 3 features differ
    expected = 3 * 2**n + 2**3
    for bs in (None, 2, 7):
        e = ExactShapley(_sum)
        A = e.attribute(X, R, batch_size=bs)
        assert e.n_evals_ == expected, bs
        np.testing.assert_allclose(A, X - R, atol=1e-12)  # additive model: phi_j = x_j - r_j
    e = ExactShapley(as_model(_sum, batch_size=3))
    e.attribute(X, R, batch_size=2)
    assert e.n_evals_ == expected
    assert e.model.n_evals >= expected  # plus the completeness check's evaluations


def test_torch_paths_share_counts():
    torch.manual_seed(0)
    net = nn.Linear(4, 2).float()
    m = as_model(net, output=0)
    d = as_model(m, batch_size=2)
    X = np.ones((5, 4), dtype=np.float32)
    d(X)
    assert (m.n_evals, m.n_calls) == (5, 3)
    F, G = d.value_and_grad(X)  # chunks of the derived model's batch size
    assert G.shape == (5, 4)
    assert (m.n_evals, m.n_grad_evals, m.n_calls) == (10, 5, 6)
    d.count(7)
    assert (m.n_evals, m.n_grad_evals, m.n_calls) == (17, 12, 7)

    plain = as_model(nn.Linear(4, 1).float())  # the whole-call path (_torch_batches)
    small = as_model(plain, batch_size=2)
    small(X)
    assert (plain.n_evals, plain.n_calls) == (5, 3)


def test_batch_size_checked_for_a_model_too():
    """``batch_size < 1`` is an error whether ``f`` is a function or already a Model."""
    m = insdel.as_model(lambda Z: Z.sum(1))
    for f in (lambda Z: Z.sum(1), m):
        with pytest.raises(ValueError, match="batch_size must be an integer >= 1; got 0"):
            insdel.as_model(f, batch_size=0)
