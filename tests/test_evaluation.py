"""insdel.evaluate and Evaluation: standard errors over independent units (clusters of pairs).

evaluate() and Evaluation: options, curves given directly, orderings, random means, Markdown."""


from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import insdel
from insdel import areas, policies
from insdel.evaluation import Evaluation, evaluate


def _f(X):
    return np.sin(X[:, 0]) * X[:, 1] + X[:, 2] ** 2 + np.tanh(X[:, 3] * X[:, 4]) + X[:, 5]


def _grad(X, eps=1e-6):
    return np.stack([(_f(X + eps * e) - _f(X - eps * e)) / (2 * eps) for e in np.eye(X.shape[1])],
                    axis=1)


def _one_to_one(N=40, n=6, seed=0):
    pool = np.random.default_rng(seed).normal(size=(N, n))
    pairs = policies.build("one_to_one").pair(None, pool, seed=3)
    X, R = pairs.X, pairs.R
    atts = {"mid": (X - R) * _grad((X + R) / 2),   # changes sign with the pair
            "at_x": (X - R) * _grad(X)}              # does not
    return pairs, X, R, atts


def _by_couple(v, cluster):
    """The standard error by hand: each couple's two directions averaged, then over couples."""
    means = pd.Series(v).groupby(cluster).mean().to_numpy()
    return means.std(ddof=1) / np.sqrt(means.size)


def test_one_to_one_standard_errors_are_over_couples():
    """one_to_one evaluates every couple in both directions, and the ABCs of (x, r) and (r, x)
    are equal for an attribution that changes sign with the pair (the ordering reverses): the
    standard error over the 40 pairs counted 20 values twice (about sqrt(2) too small). It is over
    the 20 couples now, the means still over the pairs, and the table says so."""
    pairs, X, R, atts = _one_to_one()
    assert pairs.cluster is not None and np.bincount(pairs.cluster).tolist() == [2] * 20
    ev = insdel.evaluate(_f, X, R, atts, n_random=2, clusters=pairs.cluster)
    for mode in ("insertion", "deletion"):
        a = ev.abc_array("mid", mode)
        by_couple = pd.Series(a).groupby(pairs.cluster)
        np.testing.assert_allclose(by_couple.min(), by_couple.max(), atol=1e-12)  # equal ABCs
    s = ev.summary(differences=[("mid", "at_x")]).set_index(["mode", "method"])
    for mode in ("insertion", "deletion"):
        for m in ("mid", "at_x", "random"):
            v = ev.abc_array(m, mode)
            row = s.loc[(mode, m)]
            assert row["mean"] == pytest.approx(v.mean(), abs=1e-15)
            assert row["std_error"] == pytest.approx(_by_couple(v, pairs.cluster), rel=1e-12)
            assert row["n"] == 40 and row["n_units"] == 20
        d = ev.abc_array("mid", mode) - ev.abc_array("at_x", mode)
        assert s.loc[(mode, "mid - at_x"), "std_error"] == pytest.approx(
            _by_couple(d, pairs.cluster), rel=1e-12)
    # the pairs' standard error was about sqrt(2) too small on the sign-changing method
    v = ev.abc_array("mid", "insertion")
    plain = v.std(ddof=1) / np.sqrt(v.size)
    assert s.loc[("insertion", "mid"), "std_error"] / plain == pytest.approx(np.sqrt(39 / 19))
    assert "Std. error over the 20 independent units, not the 40 pairs" in ev.to_markdown()


def test_clusters_are_saved_and_loaded_and_a_pairing_without_them_is_as_before(tmp_path):
    pairs, X, R, atts = _one_to_one()
    ev = insdel.evaluate(_f, X, R, atts, n_random=1, clusters=pairs.cluster)
    ev.save(tmp_path / "e", pairing=pairs)
    back = insdel.Evaluation.load(tmp_path / "e")
    np.testing.assert_array_equal(back.clusters, pairs.cluster)
    pd.testing.assert_frame_equal(back.summary(), ev.summary())
    df = pd.read_parquet(tmp_path / "e" / "abc.parquet")
    np.testing.assert_array_equal(df["cluster"], pairs.cluster[df["pair"]])
    # no clusters: every pair is a unit, the standard error over pairs, no note
    plain = insdel.evaluate(_f, X, R, atts, n_random=1)
    assert plain.clusters is None
    s = plain.summary()
    v = plain.abc_array("mid", "insertion")
    row = s[(s["mode"] == "insertion") & (s["method"] == "mid")].iloc[0]
    assert row["std_error"] == np.std(v, ddof=1) / np.sqrt(v.size)
    assert (s["n_units"] == s["n"]).all() and "independent units" not in plain.to_markdown()
    plain.save(tmp_path / "p")
    assert "cluster" not in pd.read_parquet(tmp_path / "p" / "abc.parquet").columns
    with pytest.raises(ValueError, match=r"clusters must hold one unit id per pair, shape \(40,\)"):
        insdel.evaluate(_f, X, R, atts, clusters=pairs.cluster[:5])
    with pytest.raises(TypeError, match="clusters must hold integer unit ids"):
        insdel.evaluate(_f, X, R, atts, clusters=pairs.cluster.astype(float))


def test_the_mirror_pair_identities_the_clusters_rest_on():
    """docs/policies.md: (r, x) with the reversed ordering has the ABCs of (x, r); with the same
    ordering its insertion ABC is minus the deletion ABC of (x, r), and the other way round."""
    rng = np.random.default_rng(0)
    X, R, A = rng.normal(size=(5, 6)), rng.normal(size=(5, 6)), rng.normal(size=(5, 6))
    e = insdel.evaluate(_f, X, R, {"a": A}, n_random=0)
    m = insdel.evaluate(_f, R, X, {"reversed": -A, "same": A}, n_random=0)
    for mode, other in (("insertion", "deletion"), ("deletion", "insertion")):
        np.testing.assert_allclose(m.abc_array("reversed", mode), e.abc_array("a", mode),
                                   atol=1e-12)
        np.testing.assert_allclose(m.abc_array("same", mode), -e.abc_array("a", other),
                                   atol=1e-12)


# -- evaluate() options, Evaluation.from_curves, ordering and random_mean --------------------------
def _f6(Z):
    Z = np.asarray(Z, dtype=float)
    w = np.array([0.3, -1.0, 0.7, 0.2, -0.4, 1.1])
    return np.tanh(Z @ w) + Z[:, 0] * Z[:, 5] - Z[:, 2] * Z[:, 3]


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
    steps = ev.ordering(0, "a")  # feature indices stay integers beside step 0's missing one
    assert steps["feature"].dtype == "Int64" and steps["feature"].isna().tolist()[0]
    assert steps["feature"].iloc[1:].tolist() == [int(j) for j in ev.orders[0, 0]]
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


def test_curve_points_and_the_moved_keywords():
    """points=CurvePoints(...) records the curves where step= / fractions= / max_fraction= did;
    those keywords and batch_size= (carried by the model or the game) still work for one
    release with a DeprecationWarning and the same numbers; an unknown keyword is a TypeError."""
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))

    def g(Z):
        return Z[:, 0] * Z[:, 1] + np.sin(Z[:, 2:]).sum(1)

    A = {"d": X - R}
    for given in ({"step": 2}, {"fractions": [0.0, 0.5, 1.0]}, {"max_fraction": 0.5}):
        new = insdel.evaluate(g, X, R, A, n_random=1, points=insdel.CurvePoints(**given))
        with pytest.warns(DeprecationWarning, match="points=insdel.CurvePoints"):
            old = insdel.evaluate(g, X, R, A, n_random=1, **given)
        pd.testing.assert_frame_equal(new.summary(), old.summary())
        np.testing.assert_array_equal(new.positions, old.positions)
    with pytest.warns(DeprecationWarning, match="as_model"):
        old = insdel.evaluate(g, X, R, A, n_random=1, batch_size=3)
    new = insdel.evaluate(insdel.as_model(g, batch_size=3), X, R, A, n_random=1)
    pd.testing.assert_frame_equal(new.summary(), old.summary())
    with pytest.raises(TypeError, match="unexpected keyword argument 'stepp'"):
        insdel.evaluate(g, X, R, A, stepp=2)
    with pytest.raises(TypeError, match="give the curve points once"):
        insdel.evaluate(g, X, R, A, points=insdel.CurvePoints(step=2), step=2)
    with pytest.raises(TypeError, match="points must be an insdel.CurvePoints"):
        insdel.evaluate(g, X, R, A, points=2)
