"""The observational cohort game (issue 37): ``removal.Cohort``, ``cohort_shapley`` and ``igcs``,
each against an independent computation (plain Python loops over the data, all orderings, the
authors' autograd formulation of IGCS)."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import insdel
from insdel import removal as RM
from insdel.attribution.cohort import igcs_nodes
from insdel.removal import Cohort
from insdel.tracing import orderings, trace

ROOT = Path(__file__).resolve().parents[1]


def _zeros(Z):
    return np.zeros(len(Z))


def _table(N=150, seed=0):
    """Ties (integer columns), a binary column, a categorical column, a continuous one; N > 64
    and not a multiple of it (the last word of the masks is partial)."""
    rng = np.random.default_rng(seed)
    D = np.column_stack([rng.integers(0, 5, N), rng.integers(0, 2, N) * 3.0 + 1.0,
                         rng.normal(size=N), rng.integers(0, 4, N), rng.integers(0, 12, N),
                         rng.integers(0, 3, N)]).astype(float)
    y = D[:, 0] - 2 * D[:, 1] + np.sin(D[:, 2]) + (D[:, 3] == 2) + rng.normal(size=N)
    return D, y


def _brute_similar(D, x, tol, categorical=()):
    """(N, n) bool from the rule, column by column in plain Python."""
    N, n = D.shape
    S = np.zeros((N, n), bool)
    for j in range(n):
        col = [float(v) for v in D[:, j]]
        exact = len(set(col)) == 2 or j in categorical
        rng = max(col) - min(col)
        for i in range(N):
            S[i, j] = (col[i] == x[j]) if exact else abs(col[i] - x[j]) <= tol * rng
    return S


def _brute_value(D, y, x, u, tol, categorical=(), empty="raise"):
    S = _brute_similar(D, x, tol, categorical)
    members = [i for i in range(len(D)) if all(S[i, j] for j in u)]
    if members:
        return sum(y[i] for i in members) / len(members)
    if empty == "raise":
        return None
    miss = [sum(not S[i, j] for j in u) for i in range(len(D))]
    best = min(miss)
    sel = [i for i in range(len(D)) if miss[i] == best]
    return sum(y[i] for i in sel) / len(sel)


def test_cohort_values_match_a_brute_force_loop():
    D, y = _table()
    rng = np.random.default_rng(1)
    off = D[:4] + rng.normal(scale=0.7, size=(4, D.shape[1]))  # off the data
    X = np.vstack([D[:6], off])
    for tol, cat in ((0.1, ()), (0.25, (4,)), (0.0, ())):
        game = Cohort(D, y, tolerance=tol, categorical=list(cat), empty="nearest")
        keep = rng.random((60, D.shape[1])) < 0.5
        keep[0] = False
        keep[1] = True
        tix = rng.integers(0, len(X), 60)
        v = game.values(X[tix], keep, tix)
        for c in range(60):
            u = np.flatnonzero(keep[c])
            want = _brute_value(D, y, X[tix[c]], u, tol, cat, empty="nearest")
            assert math.isclose(v[c], want, rel_tol=0, abs_tol=1e-12), (tol, c)
        np.testing.assert_array_equal(game.similar(X[7]).T, _brute_similar(D, X[7], tol, cat))


def test_the_rule_is_non_strict_on_the_range_and_exact_for_binary_columns():
    D = np.column_stack([np.arange(11.0), np.r_[np.zeros(6), np.ones(5)] * 10])
    y = np.arange(11.0)
    game = Cohort(D, y, tolerance=0.1)  # radius 1.0 on column 0; column 1 binary
    S = game.similar(np.array([5.0, 0.0]))
    assert np.flatnonzero(S[0]).tolist() == [4, 5, 6]  # |4 - 5| = 1 <= 0.1 * 10
    assert np.flatnonzero(S[1]).tolist() == [0, 1, 2, 3, 4, 5]
    assert Cohort(D, y, tolerance=1.0).similar(np.array([5.0, 0.0]))[1].sum() == 6
    assert Cohort(D, y, tolerance=0.0).similar(np.array([5.0, 10.0]))[0].sum() == 1
    # v(∅) is the grand mean for every target, a data point is in its own cohort
    v = game.values(np.array([[5.0, 0.0], [50.0, 3.0]]), np.zeros((2, 2), bool), [0, 1])
    assert v.tolist() == [5.0, 5.0]


def _brute_shapley(v, n):
    """Shapley values as the mean of the marginal contributions over all n! orderings; v is
    called once per coalition (2^n calls, its values kept) so n! orderings stay cheap."""
    seen = {}

    def value(u):
        key = frozenset(u)
        if key not in seen:
            seen[key] = v(u)
        return seen[key]

    phi = np.zeros(n)
    perms = list(itertools.permutations(range(n)))
    for p in perms:
        u = []
        prev = value(u)
        for j in p:
            u = u + [j]
            cur = value(u)
            phi[j] += cur - prev
            prev = cur
    return phi / len(perms)


def test_exact_cohort_shapley_matches_all_orderings_and_is_efficient():
    D, y = _table(N=90, seed=2)
    X = np.vstack([D[:4], D[10:12] + 0.3])
    A, info = insdel.attribute(None, X, None, "cohort_shapley", data=D, y=y, tolerance=0.2,
                               empty="nearest", return_info=True)
    assert info["exact"] and info["model_evaluations"] == 0
    for b in range(len(X)):
        want = _brute_shapley(lambda u, b=b: _brute_value(D, y, X[b], u, 0.2, empty="nearest"),
                              D.shape[1])
        np.testing.assert_allclose(A[b], want, rtol=0, atol=1e-12)
        full = _brute_value(D, y, X[b], range(D.shape[1]), 0.2, empty="nearest")
        assert abs(A[b].sum() - (full - y.mean())) < 1e-12
    assert np.abs(info["completeness_gap"]).max() < 1e-12
    np.testing.assert_allclose(info["v_empty"], y.mean(), rtol=0, atol=1e-12)


def test_sampled_cohort_shapley_has_standard_errors_and_is_efficient():
    D, y = _table(N=120, seed=3)
    X = D[:5]
    exact = insdel.attribute(None, X, None, "cohort_shapley", data=D, outcome=y)
    A, info = insdel.attribute(None, X, None, "cohort_shapley", data=D, outcome=y, max_d=3,
                               n_orderings=400, seed=1, return_info=True)
    se = info["standard_error"]
    assert not info["exact"] and se.shape == A.shape and (se > 0).any()
    assert np.abs(info["completeness_gap"]).max() < 1e-12
    assert (np.abs(A - exact) <= 5 * se + 1e-12).all()


def test_igcs_equals_the_authors_autograd_formulation():
    """nu(z) = sum_i prod_j (1 + z_j (S_ij - 1)) y_i / sum_i prod_j (...), differentiated by
    torch along z = t 1 (cohortintgrad's formulation), integrated with the same nodes."""
    torch = pytest.importorskip("torch")
    D, y = _table(N=100, seed=4)
    X = D[:4]
    game = Cohort(D, y, tolerance=0.15)
    for rule, steps in (("gauss", 24), ("trapezoid", 20), ("authors", 20)):
        G = insdel.attribute(None, X, None, "igcs", data=D, y=y, tolerance=0.15, n_steps=steps,
                             rule=rule)
        t, w = igcs_nodes(steps, rule)
        for b in range(len(X)):
            S = torch.tensor(game.similar(X[b]).T.astype(float))
            z = torch.tensor(np.repeat(t[:, None], D.shape[1], 1), requires_grad=True)
            s = torch.prod(1 + z[:, None, :] * (S[None] - 1), dim=2)
            nu = (s @ torch.tensor(y)) / s.sum(1)
            nu.sum().backward()
            want = (torch.tensor(w)[:, None] * z.grad).sum(0).numpy()
            np.testing.assert_allclose(G[b], want, rtol=0, atol=1e-12)


def test_igcs_converges_as_the_steps_grow():
    """Measured rates (docs/cohort.md): Gauss-Legendre geometric (1e-11 by 32 nodes), the
    trapezoid O(1 / n_steps^2) (x4 per doubling), the authors' mean O(1 / n_steps) (x2)."""
    D, y = _table(N=120, seed=5)
    X = D[:8]
    opts = {"data": D, "y": y}
    limit = insdel.attribute(None, X, None, "igcs", n_steps=512, **opts)
    err = {rule: [np.abs(insdel.attribute(None, X, None, "igcs", n_steps=s, rule=rule,
                                          **opts) - limit).max() for s in (64, 128, 256)]
           for rule in ("gauss", "trapezoid", "authors")}
    assert max(err["gauss"]) < 1e-10
    for rule, rate in (("trapezoid", 4.0), ("authors", 2.0)):
        e = err[rule]
        assert 0.8 * rate < e[0] / e[1] < 1.25 * rate and 0.8 * rate < e[1] / e[2] < 1.25 * rate
    _, info = insdel.attribute(None, X, None, "igcs", return_info=True, **opts)
    assert np.abs(info["completeness_gap"]).max() < 1e-10  # the default: 64 Gauss nodes


def test_igcs_is_cohort_shapley_on_an_additive_full_factorial_game():
    """Every combination of three binary features once, the outcome additive: nu(z) is a sum of
    one-feature functions, where the diagonal path integral is the Shapley value."""
    D = np.array(list(itertools.product([0.0, 1.0], repeat=3)))
    y = 2.0 * D[:, 0] - 1.0 * D[:, 1] + 0.5 * D[:, 2]
    G = insdel.attribute(None, D, None, "igcs", data=D, y=y)
    A = insdel.attribute(None, D, None, "cohort_shapley", data=D, y=y)
    np.testing.assert_allclose(G, A, rtol=0, atol=1e-12)
    # a non-additive outcome: they differ, both efficient
    y2 = D[:, 0] * D[:, 1] + D[:, 2]
    D2 = np.vstack([D, D[:3]])
    y2 = np.r_[y2, y2[:3] + 1.0]
    _, gi = insdel.attribute(None, D2, None, "igcs", data=D2, y=y2, return_info=True)
    _, ci = insdel.attribute(None, D2, None, "cohort_shapley", data=D2, y=y2, return_info=True)
    assert np.abs(gi["completeness_gap"]).max() < 1e-12
    assert np.abs(ci["completeness_gap"]).max() < 1e-12


def _brute_abc(values, order, mode):
    n = len(order)
    if mode == "insertion":
        c = [values(list(order[:k])) for k in range(n + 1)]
    else:
        c = [values([j for j in range(n) if j not in order[:k]]) for k in range(n + 1)]
    trap = sum((c[k] + c[k + 1]) / 2 for k in range(n)) / n
    line = (c[0] + c[-1]) / 2
    return (trap - line) if mode == "insertion" else (line - trap)


@pytest.mark.parametrize("case", ["data_point", "off_data", "tolerance_0"])
def test_observational_abc_against_brute_force(case):
    D, y = _table(N=110, seed=6)
    tol, empty = 0.1, "raise"
    if case == "data_point":
        X = D[[3, 17, 40]]
    elif case == "off_data":
        X = D[[3, 17, 40]] + np.array([0.5, 0.0, 2.0, 0.5, 3.0, 0.0])
        empty = "nearest"
    else:  # cohorts of identical rows: duplicates of the targets in the data
        D = np.vstack([D, D[[3, 3, 17]]])
        y = np.r_[y, 0.0, 10.0, -4.0]
        X, tol = D[[3, 17, 40]], 0.0
    A = np.random.default_rng(7).normal(size=X.shape)
    game = Cohort(D, y, tolerance=tol, empty=empty)
    model = insdel.as_model(_zeros)
    res = insdel.evaluate(model, X, None, {"a": A}, removal=game)
    assert model.n_evals == 0
    order = orderings(A)
    for mode in ("insertion", "deletion"):
        got = res.abc_array("a", mode)
        for b in range(len(X)):
            want = _brute_abc(lambda u, b=b: _brute_value(D, y, X[b], u, tol, empty=empty),
                              order[b], mode)
            assert math.isclose(got[b], want, rel_tol=0, abs_tol=1e-12), (mode, b)
    if case == "tolerance_0":  # the full cohort of target 0: D[3] and its two copies
        assert math.isclose(res.curves["insertion"][0, 0, -1], (y[3] + 0.0 + 10.0) / 3,
                            abs_tol=1e-12)
    if case == "off_data":
        with pytest.raises(ValueError, match=r"cohort: the cohort of target \d+ is empty.*"
                                             r"empty='nearest'"):
            insdel.evaluate(model, X, None, {"a": A}, removal=Cohort(D, y, tolerance=tol))


def test_the_curves_engine_reads_the_game_without_the_model():
    D, y = _table(N=80, seed=8)
    X = D[:7]
    orders = np.argsort(np.random.default_rng(0).random((7, 2, D.shape[1])), axis=-1)
    model = insdel.as_model(_zeros)
    res = trace(model, X, None, orders, removal=Cohort(D, y))
    assert model.n_evals == 0 and res.n_unique == 0
    np.testing.assert_allclose(res.fr, y.mean(), rtol=0, atol=1e-12)
    game = Cohort(D, y)
    want = game.values(X, np.ones_like(X, bool), np.arange(7))
    np.testing.assert_array_equal(res.fx, want)
    np.testing.assert_array_equal(res.curves["insertion"][:, :, -1],
                                  np.repeat(want[:, None], 2, 1))


def test_registry_params_and_the_methods():
    assert "cohort" in RM.available() and RM.get("cohort") is Cohort
    assert RM.options_of("cohort")["tolerance"] == 0.1
    with pytest.raises(ValueError, match="cohort"):
        RM.register("cohort", Cohort, overwrite=True)
    D, y = _table(N=70)
    game = RM.build("cohort", data=D, outcome=y, tolerance=0.2, categorical=[3])
    p = game.params()
    assert p["name"] == "cohort" and p["tolerance"] == 0.2 and p["categorical"] == [3]
    assert p["data_sha256"] == insdel._checkpoint.sha256_arrays(game.data)
    assert p["outcome_sha256"] == insdel._checkpoint.sha256_arrays(game.outcome)
    assert Cohort(D, y + 1).params()["outcome_sha256"] != p["outcome_sha256"]
    with pytest.raises(ValueError, match="cohort needs the observed points: give data="):
        RM.resolve("cohort")
    assert {"cohort_shapley", "igcs"} <= set(insdel.attribution.available())
    assert insdel.attribution.get("cohortshapley").name == "cohort_shapley"
    # the model is optional and never evaluated; R is ignored; chunks equal one call
    calls = []

    def f(Z):
        calls.append(len(Z))
        return Z.sum(1)

    X = D[:6]
    for m in ("cohort_shapley", "igcs"):
        a = insdel.attribute(f, X, np.ones_like(X), m, data=D, y=y)
        b = insdel.attribute(None, X, None, m, data=D, y=y)
        c = insdel.attribute(None, X, None, m, data=D, y=y, pairs_per_chunk=4)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(b, c)
    assert calls == []


def test_a_dataframe_names_its_columns():
    D, y = _table(N=70)
    df = pd.DataFrame(D, columns=list("abcdef"))
    game = Cohort(df, pd.Series(y), categorical=["d"])
    assert game.categorical == (3,) and game.exact[3]
    bad = df.astype(object)
    bad["c"] = ["x"] * len(df)
    with pytest.raises(TypeError, match=r"data= column 2 \('c'\) holds non-numeric.*'x'.*"
                                        r"categorical="):
        Cohort(bad, y)
    arr = D.astype(object)
    arr[:, 4] = "Bangalore"
    with pytest.raises(TypeError, match=r"data= column 4 holds non-numeric.*'Bangalore'"):
        Cohort(arr, y)


@pytest.mark.parametrize("kw, err, pattern", [
    ({"tolerance": -0.1}, ValueError, r"tolerance"),
    ({"tolerance": 1.5}, ValueError, r"tolerance"),
    ({"tolerance": "0.1"}, TypeError, r"tolerance"),
    ({"tolerance": float("nan")}, ValueError, r"tolerance"),
    ({"tolerance": True}, TypeError, r"tolerance"),
    ({"outcome": np.zeros(69)}, ValueError, r"outcome= has 69 values but data= has 70 rows"),
    ({"outcome": np.zeros((70, 2))}, ValueError, r"outcome="),
    ({"outcome": np.r_[np.zeros(3), np.nan, np.zeros(66)]}, ValueError,
     r"outcome contains NaN at data point\(s\) 3\."),
    ({"data": "nan"}, ValueError, r"data contains non-finite values \(NaN\) in 1 row"),
    ({"data": None}, ValueError, r"data="),
    ({"outcome": None}, ValueError, r"outcome="),
    ({"categorical": [6]}, ValueError, r"categorical= names column 6, but data= has 6"),
    ({"categorical": [True, False]}, ValueError, r"categorical= as a boolean mask"),
    ({"empty": "mean"}, ValueError, r"empty must be one of"),
])
def test_bad_inputs_are_named(kw, err, pattern):
    D, y = _table(N=70)
    if kw.get("data") == "nan":
        D[5, 2] = np.nan
        kw = {}
    with pytest.raises(err, match=pattern):
        Cohort(**{"data": D, "outcome": y, **kw})


def test_bad_method_calls_are_named():
    D, y = _table(N=70)
    with pytest.raises(ValueError, match=r"cohort_shapley reads the observational cohort game: "
                                         r"give data="):
        insdel.attribute(None, D[:2], None, "cohort_shapley")
    with pytest.raises(ValueError, match="outcome= or as y=; got both"):
        insdel.attribute(None, D[:2], None, "igcs", data=D, y=y, outcome=y)
    with pytest.raises(ValueError, match=r"X must have shape \(B, n\) with n = 6"):
        insdel.attribute(None, D[:2, :5], None, "igcs", data=D, y=y)
    with pytest.raises(ValueError, match="rule must be one of"):
        insdel.attribute(None, D[:2], None, "igcs", data=D, y=y, rule="simpson")
    with pytest.raises(ValueError, match="n_orderings must be even"):
        insdel.attribute(None, D[:2], None, "cohort_shapley", data=D, y=y, n_orderings=5)
    off = D[:2] + 100.0
    with pytest.raises(ValueError, match=r"igcs: the full cohort of target\(s\) \[0, 1\] is "
                                         r"empty.*diverges"):
        insdel.attribute(None, off, None, "igcs", data=D, y=y)
    with pytest.raises(ValueError, match=r"cohort: the cohort of target 0 is empty"):
        insdel.attribute(None, off, None, "cohort_shapley", data=D, y=y)
    game = Cohort(D, y)
    with pytest.raises(ValueError, match=r"targets X have 5 features but.*6 columns"):
        game.values(D[:2, :5], np.ones((2, 5), bool), [0, 1])
    with pytest.raises(ValueError, match="keep must have the shape of X"):
        game.values(D[:2], np.ones((2, 5), bool), [0, 1])


def test_the_docs_example_runs():
    text = (ROOT / "docs" / "cohort.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "docs/cohort.md", "exec"), {})


def test_the_bench_runs_on_tiny_sizes():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, str(ROOT / "bench" / "cohort.py"), "--tiny",
                        "--repeats", "1"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "(o) observational curves" in p.stdout and "| authors |" in p.stdout


def test_the_observational_test_needs_no_model():
    """Under the cohort game no model row is evaluated, so f may be None in trace, evaluate and
    the decomposition."""
    import insdel
    from insdel.decomposition import shapley_values
    from insdel.removal import Cohort
    from insdel.tracing import trace

    rng = np.random.default_rng(0)
    data = rng.integers(0, 3, size=(40, 4)).astype(float)
    y = data @ np.array([1.0, -2.0, 0.5, 0.0]) + rng.normal(size=40)
    game = Cohort(data, y, tolerance=0.0)
    X = data[:5]
    orders = np.tile(np.arange(4), (5, 1))
    with_f = trace(lambda Z: Z.sum(1), X, None, orders, removal=game)
    without = trace(None, X, None, orders, removal=game)
    np.testing.assert_array_equal(with_f.curves["insertion"], without.curves["insertion"])
    ev = insdel.evaluate(None, X, None, {"a": X}, removal=game, n_random=2)
    assert np.isfinite(ev.abc["abc"]).all()
    phi = shapley_values(None, X, None, removal=game)
    np.testing.assert_allclose(phi.sum(1), without.fx - without.fr, atol=1e-12)
