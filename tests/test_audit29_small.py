"""Audit 29 (small): silent wrong results in the noise reference image, the digits example's
integer options."""

from __future__ import annotations

import numpy as np
import pytest

from insdel import digits, policies

SHAPE = (1, 4, 4)


def _pool(N=5, seed=0):
    return np.random.default_rng(seed).random((N, 16))


def _noise(X, **kw):
    return policies.get("noise", shape=SHAPE).pair(None, X, **kw)


def test_noise_is_seeded_by_the_target_not_by_its_position():
    X = _pool()
    both = _noise(X, targets=[0, 1], seed=7).R
    alone = _noise(X, targets=[1], seed=7).R
    np.testing.assert_array_equal(both[1], alone[0])
    # the order of the targets does not matter either; every target gets its own image
    rev = _noise(X, targets=[1, 0], seed=7).R
    np.testing.assert_array_equal(rev, both[::-1])
    assert not np.array_equal(both[0], both[1])
    # the whole pool: row i is target i's image
    full = _noise(X, seed=7).R
    np.testing.assert_array_equal(full[[0, 1]], both)


def test_noise_same_seed_same_images_other_seed_other_images():
    X = _pool()
    a = _noise(X, targets=[2, 3], seed=3).R
    b = _noise(X, targets=[2, 3], seed=3).R
    c = _noise(X, targets=[2, 3], seed=4).R
    np.testing.assert_array_equal(a, b)
    assert not np.any(np.all(a == c, axis=1))
    assert 0.0 <= a.min() and a.max() <= 1.0


def test_noise_respects_low_and_high_and_rows_given():
    X = _pool()
    R = policies.get("noise", shape=SHAPE, low=-2.0, high=-1.0).pair(None, X, seed=1).R
    assert R.shape == X.shape and -2.0 <= R.min() and R.max() <= -1.0
    # targets given as rows: keyed by their position among the rows, seeded all the same
    rows = X[[3, 4]]
    r1 = _noise(X, targets=rows, seed=5).R
    r2 = _noise(X, targets=rows, seed=5).R
    np.testing.assert_array_equal(r1, r2)
    assert not np.array_equal(r1[0], r1[1])
    assert not np.array_equal(r1, _noise(X, targets=rows, seed=6).R)


@pytest.mark.parametrize("bad, err", [(2.7, TypeError), (2.0, TypeError), ("3", TypeError),
                                      (True, TypeError), (0, ValueError), (-1, ValueError)])
def test_train_cnn_epochs_must_be_a_positive_integer(bad, err):
    data = digits.load()
    with pytest.raises(err, match="epochs"):
        digits.train_cnn(data, epochs=bad)


@pytest.mark.parametrize("bad, err", [(1.5, TypeError), (-1, ValueError), (True, TypeError)])
def test_digits_seed_must_be_an_integer(bad, err):
    with pytest.raises(err, match="seed"):
        digits.load(seed=bad)
    with pytest.raises(err, match="seed"):
        digits.train_cnn(digits.load(), seed=bad, epochs=1)


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5, float("nan")])
def test_digits_test_fraction_in_the_open_interval(bad):
    with pytest.raises((ValueError, TypeError), match="test_fraction"):
        digits.load(test_fraction=bad)


def test_train_cnn_integral_epochs_accepted():
    data = digits.load()
    _, info = digits.train_cnn(data, epochs=np.int64(1))
    assert info["epochs"] == 1 and isinstance(info["epochs"], int)


@pytest.mark.parametrize("arg, bad, err", [
    ("n_images", 2.7, TypeError), ("n_images", 0, ValueError), ("n_images", True, TypeError),
    ("epochs", 2.7, TypeError), ("epochs", 0, ValueError), ("step", 1.5, TypeError),
    ("step", 0, ValueError), ("seed", 0.5, TypeError), ("seed", -1, ValueError)])
def test_paper_images_integer_options(tmp_path, arg, bad, err):
    from insdel.paper_images import run_paper_images

    with pytest.raises(err, match=arg):
        run_paper_images(tmp_path, quick=True, verbose=False, **{arg: bad})
    assert not any(tmp_path.iterdir())  # refused before anything is trained or written


def test_paper_images_too_many_images(tmp_path):
    from insdel.paper_images import run_paper_images

    with pytest.raises(ValueError, match="n_images"):
        run_paper_images(tmp_path, n_images=10_000, epochs=1, verbose=False)


def test_paper_images_quick_is_a_bool(tmp_path):
    from insdel.paper_images import run_paper_images

    with pytest.raises(TypeError, match="quick"):
        run_paper_images(tmp_path, quick="yes", verbose=False)
