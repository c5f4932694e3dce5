"""Feature groups, several units per step, fractions and partial curves (issue #16)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import insdel
from insdel.areas import abc, petsiuk_auc
from insdel.decomposition import batch_decomposition, shapley_values
from insdel.groups import Groups, check_groups, group_attributions, positions


def _model(n, seed=0):
    W = np.random.default_rng(seed).normal(size=(n, n))

    def f(Z):
        Z = np.asarray(Z, dtype=np.float64)
        return np.tanh(Z @ W).sum(1) + Z[:, 0] * Z[:, -1] - 0.5 * Z[:, 1] ** 2

    return f


def _pairs(B, n, seed=0, tie_frac=0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, n))
    R = rng.normal(size=(B, n))
    same = rng.random((B, n)) < tie_frac
    R[same] = X[same]
    return X, R


def _brute(f, X, R, orders, grp: Groups | None, pos, mode):
    """Curve values by direct hybrid construction, one point at a time."""
    B, K, m = orders.shape
    out = np.empty((B, K, len(pos)))
    for b in range(B):
        for k in range(K):
            for s, t in enumerate(pos):
                units = orders[b, k, :t]
                mask = np.zeros(X.shape[1], bool)
                for u in units:
                    mask[grp.columns(u) if grp is not None else [u]] = True
                if mode == "deletion":
                    mask = ~mask
                out[b, k, s] = f(np.where(mask, X[b], R[b])[None])[0]
    return out


GROUPS = [[0, 3], [1], [2, 5, 6], [4], [7, 8]]


@pytest.mark.parametrize("K", [1, 3])
@pytest.mark.parametrize("mode", ["insertion", "deletion"])
def test_singleton_groups_reproduce_todays_curves(K, mode):
    n = 9
    f = _model(n)
    X, R = _pairs(6, n)
    A = np.random.default_rng(1).normal(size=(6, K, n) if K > 1 else (6, n))
    base = insdel.curves(f, X, R, A, mode=mode)
    for g in (np.arange(n), [[j] for j in range(n)], Groups.singletons(n)):
        assert np.array_equal(insdel.curves(f, X, R, A, mode=mode, groups=g), base)
    assert np.array_equal(insdel.curves(f, X, R, A, mode=mode, step=1), base)


def test_singleton_groups_reproduce_evaluate_decomposition_and_shapley():
    n = 8
    f = _model(n, 2)
    X, R = _pairs(5, n, 3)
    A = {"a": np.random.default_rng(0).normal(size=(5, n))}
    e0 = insdel.evaluate(f, X, R, A, n_random=3)
    e1 = insdel.evaluate(f, X, R, A, n_random=3, groups=np.arange(n))
    assert e0.abc["abc"].equals(e1.abc["abc"])
    assert np.array_equal(shapley_values(f, X, R), shapley_values(f, X, R, groups=np.arange(n)))
    d0 = batch_decomposition(f, X, R)
    d1 = batch_decomposition(f, X, R, groups=[[j] for j in range(n)])
    assert np.array_equal(d0.shapley(), d1.shapley())
    assert np.array_equal(d0.best_abc(), d1.best_abc())


@pytest.mark.parametrize("K", [1, 4])
@pytest.mark.parametrize("mode", ["insertion", "deletion"])
@pytest.mark.parametrize("spec", [dict(), dict(step=2), dict(max_fraction=0.6),
                                  dict(fractions=[0.0, 0.2, 0.6, 1.0]),
                                  dict(fractions=[0.4, 0.8])])
def test_grouped_curves_equal_brute_force(K, mode, spec):
    n = 9
    f = _model(n, 4)
    X, R = _pairs(7, n, 5, tie_frac=0.3)
    R[2] = X[2]  # a pair with D empty
    grp = check_groups(GROUPS, n)
    A = np.random.default_rng(2).normal(size=(7, K, n))
    got = insdel.curves(f, X, R, A, mode=mode, groups=GROUPS, **spec)
    pos = positions(grp.m, **spec)
    orders = insdel.orderings(group_attributions(A, grp))
    want = _brute(f, X, R, orders, grp, pos, mode)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 10), B=st.integers(1, 5), K=st.integers(1, 3), k=st.integers(1, 5),
       seed=st.integers(0, 10_000))
def test_step_k_is_the_subsequence_of_the_one_per_step_curve(n, B, K, k, seed):
    rng = np.random.default_rng(seed)
    f = _model(n, seed % 7)
    X, R = _pairs(B, n, seed)
    labels = rng.integers(0, max(1, n // 2), size=n)
    grp = check_groups(labels, n)
    A = rng.normal(size=(B, K, n))
    for g in (None, grp):
        m = n if g is None else g.m
        full = insdel.curves(f, X, R, A, groups=g, mode="insertion")
        if 1 < k >= m:  # only the two end points: refused (test_step_not_below_m_is_refused)
            with pytest.raises(ValueError, match=f"step={k} is not smaller than"):
                insdel.curves(f, X, R, A, groups=g, step=k, mode="insertion")
            continue
        stepped = insdel.curves(f, X, R, A, groups=g, step=k, mode="insertion")
        # equal up to the model's own rounding (a BLAS result may depend on the batch)
        np.testing.assert_allclose(stepped, full[..., positions(m, step=k)], rtol=0, atol=1e-12)
        dfull = insdel.curves(f, X, R, A, groups=g, mode="deletion")
        dpart = insdel.curves(f, X, R, A, groups=g, max_fraction=0.5, mode="deletion")
        np.testing.assert_allclose(dpart, dfull[..., positions(m, max_fraction=0.5)], rtol=0,
                                   atol=1e-12)


def test_positions_rules():
    assert positions(10, step=3).tolist() == [0, 3, 6, 9, 10]
    assert positions(10, step=5).tolist() == [0, 5, 10]
    assert positions(10, max_fraction=0.35).tolist() == [0, 1, 2, 3]
    assert positions(10, step=2, max_fraction=0.5).tolist() == [0, 2, 4, 5]
    assert positions(10, fractions=[0, 0.25, 0.5, 1]).tolist() == [0, 3, 5, 10]  # halves up
    assert positions(4).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("kw, msg", [
    (dict(step=0), "step must be an integer >= 1"),
    (dict(step=1.5), "step must be an integer"),
    (dict(fractions=[0, 0.5, 0.4]), "strictly increasing"),
    (dict(fractions=[0, 0.01, 0.02]), "both round to"),
    (dict(fractions=[0, 1.2]), r"lie in \[0, 1\]"),
    (dict(max_fraction=0.0), r"max_fraction must be a number in \(0, 1\]"),
    (dict(fractions=[0, 1], step=2), "fractions= alone"),
])
def test_bad_steps_are_clear_errors(kw, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        positions(10, **kw)


def test_step_not_below_m_is_refused():
    """A step of m units or more (m > 1) leaves each curve its two end points f(r) and f(x),
    shared by every ordering: every method's ABC, random included, was 0.0 +- 0.0 without a
    word. It is an error naming step and the number of units; so are fractions giving the two
    end points alone, and (in evaluate) any two-point curve, whose ABC is 0 by definition."""
    for m, k in ((4, 4), (4, 9), (2, 2)):
        with pytest.raises(ValueError, match=rf"step={k} is not smaller than the number of "
                                             rf"units m = {m}"):
            positions(m, step=k)
    assert positions(5, step=4).tolist() == [0, 4, 5]
    assert positions(1, step=1).tolist() == [0, 1]  # one unit: the whole curve, as without step
    with pytest.raises(ValueError, match=r"fractions \[0.0, 1.0\] give only the curve's two end"):
        positions(6, fractions=[0.0, 1.0])
    n = 9
    f = _model(n, 4)
    X, R = _pairs(5, n, 5)
    A = np.random.default_rng(2).normal(size=(5, n))
    with pytest.raises(ValueError, match=r"step=5 is not smaller than the number of units m = 5"):
        insdel.evaluate(f, X, R, {"a": A}, groups=GROUPS, points=insdel.CurvePoints(step=5))
    with pytest.raises(ValueError, match=r"step=9 is not smaller than the number of units m = 9"):
        insdel.evaluate(f, X, R, {"a": A}, points=insdel.CurvePoints(step=9))
    for kw in (dict(fractions=[0.4, 0.8]), dict(max_fraction=0.2), dict(step=6, max_fraction=0.5)):
        with pytest.raises(ValueError, match=r"only 2 points .* is 0 by definition"):
            insdel.evaluate(f, X, R, {"a": A}, points=insdel.CurvePoints(**kw))
    from insdel import metrics

    with pytest.raises(ValueError, match=r"step=9 is not smaller than the number of units m = 9"):
        metrics.build("insertion_abc", step=9)(f, X, R, A)


@pytest.mark.parametrize("groups, msg", [
    ([[0, 1], [1, 2], [3]], "column 1 is in two groups"),
    ([[0, 1], [2, 7], [3]], "out of range"),
    ([[0, 1], [], [2, 3]], "non-empty"),
    (np.array([0, 0, 1]), "one label per column"),
    ({"a": [0, 1], "b": [2, 3, 3]}, "listed twice"),
])
def test_bad_groups_are_clear_errors(groups, msg):
    with pytest.raises(ValueError, match=msg):
        check_groups(groups, 4)


def test_columns_in_no_group_stay_singletons():
    """groups= had to list every column (a column left out was an error); a column in no listed
    group is now a unit of its own, after the listed groups, named after the column. Overlaps
    stay errors."""
    g = check_groups([[0, 3]], 5)
    assert g.m == 4 and g.names == ["g0", "x1", "x2", "x4"]
    assert [g.columns(k).tolist() for k in range(g.m)] == [[0, 3], [1], [2], [4]]
    full = check_groups({"loc": [0, 3], "b": [1], "c": [2], "e": [4]}, 5)
    partial = check_groups({"loc": [0, 3]}, 5, feature_names=list("abcde"))
    assert partial.names == ["loc", "b", "c", "e"]
    assert np.array_equal(partial.labels, full.labels)
    with pytest.raises(ValueError, match="column 1 is in two groups"):
        check_groups([[0, 1], [1, 2]], 5)
    with pytest.raises(ValueError, match=r"group name\(s\) \['b'\] clash"):
        check_groups({"b": [0, 3]}, 5, feature_names=list("abcde"))
    # end to end: the same curves and areas as the explicit partition, names from the columns
    n = 9
    f = _model(n, 6)
    X, R = _pairs(4, n, 7)
    A = np.random.default_rng(5).normal(size=(4, n))
    names = [f"c{j}" for j in range(n)]
    a = insdel.evaluate(f, X, R, {"a": A}, groups={"big": [2, 5, 6], "pair": [7, 8]},
                        feature_names=names, n_random=2)
    b = insdel.evaluate(f, X, R, {"a": A}, groups={"big": [2, 5, 6], "pair": [7, 8], "c0": [0],
                                                   "c1": [1], "c3": [3], "c4": [4]},
                        feature_names=names, n_random=2)
    assert a.groups.names == ["big", "pair", "c0", "c1", "c3", "c4"] and a.m == 6
    assert a.groups == b.groups
    np.testing.assert_array_equal(a.curves["insertion"], b.curves["insertion"])


def test_group_attributions_and_shapes():
    grp = check_groups({"a": [0, 2], "b": [1], "c": [3]}, 4)
    A = np.array([[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_array_equal(group_attributions(A, grp), [[4.0, 2.0, 4.0]])
    np.testing.assert_array_equal(group_attributions(A[:, :3], grp), A[:, :3])  # per group
    with pytest.raises(ValueError, match="last dimension n = 4"):
        group_attributions(np.ones((1, 2)), grp)
    assert grp.names == ["a", "b", "c"]
    f = _model(4)
    X, R = _pairs(2, 4)
    with pytest.raises(ValueError, match="per group"):
        insdel.curves(f, X, R, np.ones((2, 5)), groups=grp)


def _group_shapley_brute(f, x, r, grp):
    m = grp.m

    def g(S):
        mask = np.zeros(x.shape[0], bool)
        for u in S:
            mask[grp.columns(u)] = True
        return f(np.where(mask, x, r)[None])[0]

    phi = np.zeros(m)
    for i in range(m):
        others = [j for j in range(m) if j != i]
        for k in range(m):
            for S in itertools.combinations(others, k):
                w = math.factorial(k) * math.factorial(m - k - 1) / math.factorial(m)
                phi[i] += w * (g(S + (i,)) - g(S))
    return phi


def test_group_shapley_equals_brute_force_and_feeds_the_theorem():
    n = 9
    f = _model(n, 6)
    X, R = _pairs(4, n, 7, tie_frac=0.3)
    grp = check_groups(GROUPS, n)
    phi = shapley_values(f, X, R, groups=GROUPS)
    for b in range(4):
        np.testing.assert_allclose(phi[b], _group_shapley_brute(f, X[b], R[b], grp), atol=1e-12)
    np.testing.assert_allclose(phi.sum(1), f(X) - f(R), atol=1e-12)
    for method in ("exact_shapley", "kernel_shap"):
        np.testing.assert_allclose(insdel.attribute(f, X, R, method=method, groups=GROUPS), phi,
                                   atol=1e-12)
    # Theorem 1 over groups: the decomposition's ABC of an ordering = the traced group curve's ABC
    d = batch_decomposition(f, X, R, groups=GROUPS)
    assert d.feature_names == grp.names
    orders = insdel.orderings(phi)
    for mode in ("insertion", "deletion"):
        c = insdel.curves(f, X, R, phi, groups=GROUPS, mode=mode)
        np.testing.assert_allclose(d.abc(orders, mode=mode), abc(c, mode=mode), atol=1e-12)
        # the best group ordering is at least as good as Shapley's
        assert (d.best_abc(mode=mode) >= abc(c, mode=mode) - 1e-12).all()


def test_grouped_evaluate_areas_and_saving(tmp_path):
    n = 9
    f = _model(n, 8)
    X, R = _pairs(6, n, 9)
    rng = np.random.default_rng(3)
    A = {"a": rng.normal(size=(6, n)), "per_group": rng.normal(size=(6, 5))}
    e = insdel.evaluate(f, X, R, A, groups=GROUPS, points=insdel.CurvePoints(step=2), n_random=4)
    assert e.curves["insertion"].shape == (6, 3, 4)  # positions 0, 2, 4, 5
    assert e.positions.tolist() == [0, 2, 4, 5] and e.m == 5
    c = e.curves["insertion"][:, 0]
    x = np.array([0, 2, 4, 5]) / 5
    trap = ((x[1:] - x[:-1]) * (c[:, 1:] + c[:, :-1]) / 2).sum(1)
    want = trap - (c[:, 0] + c[:, -1]) / 2
    np.testing.assert_allclose(e.abc_array("a"), want, atol=1e-12)
    np.testing.assert_allclose(abc(c, positions=[0, 2, 4, 5], normalize=False), 5 * want,
                               atol=1e-12)
    e.save(tmp_path)
    back = insdel.Evaluation.load(tmp_path)
    assert back.groups == e.groups and back.positions.tolist() == [0, 2, 4, 5]
    assert back.abc["abc"].equals(e.abc["abc"])
    table = e.ordering(0, "a")
    assert table["moved"].tolist() == [0, 2, 4, 5] and len(table["name"][1]) == 2
    assert table["feature"][0] == [] and sum(map(len, table["feature"])) == 5
    # positions that do not start at 0: the first point lists the units moved by then
    late = insdel.evaluate(f, X, R, A, groups=GROUPS, points=insdel.CurvePoints(fractions=[0.4, 0.8, 1.0]), n_random=0)
    t2 = late.ordering(0, "a")
    assert t2["moved"].tolist() == [2, 4, 5]
    assert t2["feature"][0] == late.orders[0, 0, :2].tolist()
    assert t2["feature"][1] == late.orders[0, 0, 2:4].tolist()
    assert t2["feature"][2] == late.orders[0, 0, 4:].tolist()


def test_areas_on_positions_match_eq2_and_petsiuk():
    c = np.random.default_rng(0).normal(size=(4, 11))
    np.testing.assert_array_equal(abc(c, positions=np.arange(11)), abc(c))
    np.testing.assert_allclose(abc(c, positions=np.arange(11) * 3, m=30), abc(c), atol=1e-14)
    rise = (c.sum(1) - c[:, 0] / 2 - c[:, -1] / 2) / (c.shape[1] - 1)  # RISE's auc()
    np.testing.assert_allclose(petsiuk_auc(c), rise, atol=1e-14)
    # a partial curve over [0, 0.5] of a linear function has ABC 0
    lin = np.linspace(0, 5, 6)[None]
    assert abs(abc(lin, positions=np.arange(6), m=10)[0]) < 1e-14


def test_dedup_evaluates_each_distinct_grouped_row_once():
    n = 9
    f = _model(n, 10)
    X, R = _pairs(5, n, 11, tie_frac=0.4)
    grp = check_groups(GROUPS, n)
    rng = np.random.default_rng(4)
    for K in (1, 3):
        orders = insdel.orderings(rng.normal(size=(5, K, grp.m)))
        pos = positions(grp.m, step=2)
        res = insdel.trace(f, X, R, orders, groups=grp, positions=pos)
        distinct = 0
        for b in range(5):
            rows = {X[b].tobytes(), R[b].tobytes()}
            for k in range(K):
                for t in pos:
                    for mode in ("insertion", "deletion"):
                        mask = grp.expand(np.isin(np.arange(grp.m), orders[b, k, :t]))
                        mask = ~mask if mode == "deletion" else mask
                        rows.add(np.where(mask, X[b], R[b]).tobytes())
            distinct += len(rows)
        assert res.n_unique == distinct


# -- positions() and Groups: rounding, m and names checked -----------------------------------------
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
