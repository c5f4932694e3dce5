"""Audit 29: silent wrong results in the decomposition, areas, groups, hybrids and evaluations."""

import itertools

import numpy as np
import pandas as pd
import pytest

import insdel
from insdel import areas
from insdel.decomposition import AnchoredDecomposition, BatchDecomposition, batch_decomposition
from insdel.evaluation import Evaluation, evaluate
from insdel.groups import Groups, positions
from insdel.hybrid import hybrid


def _lin(Z):
    Z = np.asarray(Z, dtype=float)
    return 2 * Z[:, 0] + 10 * Z[:, 1] + Z[:, 2] + Z[:, 0] * Z[:, 2]


def _f6(Z):
    Z = np.asarray(Z, dtype=float)
    w = np.array([0.3, -1.0, 0.7, 0.2, -0.4, 1.1])
    return np.tanh(Z @ w) + Z[:, 0] * Z[:, 5] - Z[:, 2] * Z[:, 3]


# -- decomposition -------------------------------------------------------------------------------
def test_anchored_decomposition_matches_labelled_r_to_x_by_name():
    x = pd.Series({"a": 1.0, "b": 1.0, "c": 1.0})
    r = pd.Series({"c": 0.0, "b": 0.0, "a": 5.0})  # same names, other order
    phi = insdel.anchored_decomposition(_lin, x, r).shapley()
    want = insdel.batch_decomposition(_lin, x.to_frame().T, r.to_frame().T).shapley()[0]
    np.testing.assert_allclose(phi, want)
    with pytest.raises(ValueError, match="labelled by other columns"):
        insdel.anchored_decomposition(_lin, x, pd.Series({"a": 0.0, "b": 0.0, "z": 0.0}))


@pytest.mark.parametrize("bad", [None, "no", 0, 1])
def test_decomposition_normalize_must_be_a_bool(bad):
    d = insdel.anchored_decomposition(_lin, np.ones(3), np.zeros(3))
    b = batch_decomposition(_lin, np.ones((2, 3)), np.zeros(3))
    for call in (lambda: d.abc([0, 1, 2], normalize=bad), lambda: d.auc([0, 1, 2], normalize=bad),
                 lambda: d.abc_total([0, 1, 2], normalize=bad),
                 lambda: d.expected_abc(normalize=bad), lambda: d.best_abc(normalize=bad),
                 lambda: d.best_auc(normalize=bad), lambda: b.abc([0, 1, 2], normalize=bad)):
        with pytest.raises(TypeError, match="normalize must be True or False"):
            call()
    with pytest.raises(TypeError, match="dedup must be True or False"):
        batch_decomposition(_lin, np.ones((2, 3)), np.zeros(3), dedup=bad)


def test_given_delta_is_checked_for_nan():
    with pytest.raises(ValueError, match="delta contains non-finite"):
        BatchDecomposition(np.arange(8.0)[None], np.full((1, 8), np.nan))
    with pytest.raises(ValueError, match="delta contains non-finite"):
        AnchoredDecomposition(np.arange(8.0), np.r_[np.inf, np.zeros(7)])


def test_pair_index_must_be_an_integer():
    b = batch_decomposition(_lin, np.ones((3, 3)), np.zeros(3))
    for bad in (1.7, True, "1"):
        with pytest.raises(TypeError, match="pair index must be an integer"):
            b[bad]
        with pytest.raises(TypeError, match="pair index must be an integer"):
            b.D(bad)
        with pytest.raises(TypeError, match="pair index must be an integer"):
            b.interactions(bad)
    np.testing.assert_array_equal(b.D(np.int64(2)), [0, 1, 2])


def test_duplicate_feature_names_are_refused():
    with pytest.raises(ValueError, match="feature_names repeats"):
        insdel.anchored_decomposition(_lin, np.ones(3), np.zeros(3), feature_names=["a", "a", "b"])


def test_singleton_groups_keep_their_names_and_column_names_are_refused_with_groups():
    d = insdel.anchored_decomposition(_lin, np.ones(3), np.zeros(3),
                                      groups={"a": [0], "b": [1], "c": [2]})
    assert d.feature_names == ["a", "b", "c"]
    assert d.interactions(1)[0].features == ("a", "c")
    with pytest.raises(ValueError, match="m = 2 groups"):
        insdel.anchored_decomposition(_lin, np.ones(3), np.zeros(3), groups=[[0, 1], [2]],
                                      feature_names=["p", "q", "r"])


def test_max_d_error_names_groups_not_features():
    X = np.ones((1, 6))
    with pytest.raises(ValueError, match=r"\|D\| = 3 groups \(> max_d = 2\)"):
        batch_decomposition(_f6, X, np.zeros(6), groups=[[0, 1], [2, 3], [4, 5]], max_d=2)
    with pytest.raises(ValueError, match=r"\|D\| = 6 features \(> max_d = 2\)"):
        batch_decomposition(_f6, X, np.zeros(6), max_d=2)


def test_group_game_outside_d_against_brute_force():
    """Theorem 1, E[ABC], best ABC and Shapley of a group game with a group outside D, by
    direct evaluation of the hybrids over all m! orderings."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=6)
    r = x.copy()
    r[[0, 2, 5]] = rng.normal(size=3)
    groups = [[0, 1], [2], [3, 4], [5]]  # group 2 = columns 3, 4: outside D
    m = len(groups)
    d = insdel.anchored_decomposition(_f6, x, r, groups=groups)
    np.testing.assert_array_equal(d.D, [0, 1, 3])

    def g(S):
        cols = [c for k in S for c in groups[k]]
        z = r.copy()
        z[cols] = x[cols]
        return _f6(z[None])[0]

    allo = np.array(list(itertools.permutations(range(m))))
    for mode in ("insertion", "deletion"):
        cs = np.array([[g(o[:k]) if mode == "insertion" else g(o[k:]) for k in range(m + 1)]
                       for o in allo])
        a = insdel.abc(cs, mode=mode)
        np.testing.assert_allclose(d.abc(allo, mode=mode), a, atol=1e-12)
        np.testing.assert_allclose(d.expected_abc(mode=mode), a.mean(), atol=1e-12)
        np.testing.assert_allclose(d.best_abc(mode=mode), a.max(), atol=1e-12)
    assert d.shapley()[2] == 0.0


# -- areas ---------------------------------------------------------------------------------------
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
        areas.abc(c, m=8)  # m alone was silently ignored
    with pytest.raises(TypeError, match="positions must hold integers"):
        areas.abc(c, positions=np.arange(5.0))
    with pytest.raises(ValueError, match="one entry per curve point"):
        areas.abc(c, positions=[[0, 1, 2, 3, 4]])
    assert areas.abc(c, positions=[0, 1, 2, 3, 4], m=8, normalize=False) == pytest.approx(1.0)


# -- groups and positions ------------------------------------------------------------------------
def test_fractions_round_halves_up_on_the_decimal_value():
    np.testing.assert_array_equal(positions(25, fractions=[0, 0.58, 1]), [0, 15, 25])
    np.testing.assert_array_equal(positions(100, fractions=[0, 0.145, 1]), [0, 15, 100])
    np.testing.assert_array_equal(positions(10, fractions=[0, 0.25, 0.5, 1]), [0, 3, 5, 10])


@pytest.mark.parametrize("bad, err", [(10.7, TypeError), ("10", TypeError), (True, TypeError),
                                      (0, ValueError)])
def test_positions_m_must_be_a_positive_integer(bad, err):
    with pytest.raises(err, match="m must be an integer"):
        positions(bad)


def test_group_names_are_checked():
    with pytest.raises(ValueError, match="1 names for 3 groups"):
        Groups.singletons(3, names=["a"])
    with pytest.raises(ValueError, match="distinct"):
        Groups.from_labels([0, 0, 1], names=["a", "a"])
    with pytest.raises(ValueError, match="n must be an integer"):
        Groups.singletons(0)


# -- hybrids -------------------------------------------------------------------------------------
def test_hybrid_outer_must_be_a_bool():
    X = np.arange(6.0).reshape(2, 3)
    with pytest.raises(TypeError, match="outer must be True or False"):
        hybrid(X, np.zeros(3), [1, 2], outer="no")
    assert hybrid(X, np.zeros(3), [1, 2], outer=True).shape == (2, 2, 3)


# -- evaluation ----------------------------------------------------------------------------------
def _pairs():
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    return X, R, {"a": rng.normal(size=(4, 6))}


@pytest.mark.parametrize("kw, err, match", [
    ({"normalize": None}, TypeError, "normalize must be True or False"),
    ({"normalize": "false"}, TypeError, "normalize must be True or False"),
    ({"add_random": "no"}, TypeError, "add_random must be True or False"),
    ({"n_random": True}, TypeError, "n_random must be an integer"),
    ({"n_random": 2.5}, TypeError, "n_random must be an integer"),
    ({"seed": 1.5}, TypeError, "seed must be an integer"),
    ({"seed": -1}, ValueError, "seed must be an integer >= 0"),
])
def test_evaluate_options_are_checked(kw, err, match):
    X, R, A = _pairs()
    with pytest.raises(err, match=match):
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


def test_batch_decomposition_names_features_from_dataframe_columns():
    """A DataFrame X names the units of the decomposition (interactions used indices before)."""
    import pandas as pd

    from insdel.decomposition import batch_decomposition

    def f(Z):
        return Z[:, 0] * Z[:, 1] + Z[:, 2]

    X = pd.DataFrame([[1.0, 2.0, 3.0]], columns=["a", "b", "c"])
    R = pd.DataFrame([[0.0, 0.0, 0.0]], columns=["a", "b", "c"])
    d = batch_decomposition(f, X, R)
    assert d.feature_names == ["a", "b", "c"]
    assert batch_decomposition(f, X.to_numpy(), R.to_numpy()).feature_names is None
