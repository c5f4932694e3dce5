"""Reference-point policies (insdel.policies): built-ins against brute force, specs, registry, CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import insdel
from insdel import policies as P
from insdel.cli import main as cli_main
from insdel.diagnostics import diagnostics

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------ helpers

def brute_counterfactual(X, fv, min_diff, k, tol=0.0, targets=None, T=None, fT=None):
    """Pure-Python double loop over targets x candidates (the definition, conventions §policies).

    Returns reference pool indices; -1 where no candidate meets min_diff.
    """
    N, n = X.shape
    tol = np.broadcast_to(np.asarray(tol, float), (n,))
    if T is None:
        targets = range(N) if targets is None else targets
        rows = [(i, X[i], fv[i]) for i in targets]
    else:
        rows = [(-1, T[t], fT[t]) for t in range(len(T))]
    out = []
    for i, x, fx in rows:
        cands = []
        for c in range(N):
            if c == i:
                continue
            nd = sum(1 for j in range(n) if abs(x[j] - X[c, j]) > tol[j])
            if nd < min_diff:
                continue
            d2 = 0.0
            for j in range(n):
                d2 += (x[j] - X[c, j]) * (x[j] - X[c, j])
            cands.append((d2, c))
        if not cands:
            out.append(-1)
            continue
        cands.sort()
        top = cands[:k]
        # largest |f(x) - f(x')|, then the nearer, then the lower index
        best = max(top, key=lambda t: (abs(fx - fv[t[1]]), -t[0], -t[1]))
        out.append(best[1])
    return np.array(out)


def lin(X):
    X = np.atleast_2d(X)
    return X @ np.arange(1, X.shape[1] + 1, dtype=float) + 0.5 * X[:, 0] * X[:, -1]


def mixed_pool(rng, N, n, n_bin=2):
    X = rng.normal(size=(N, n))
    X[:, :n_bin] = rng.integers(0, 2, size=(N, n_bin))
    return X


# ------------------------------------------------------------------------------------------ counterfactual

@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("min_diff,k", [(1, 20), (4, 3), (5, 1), (6, 7)])
def test_counterfactual_matches_brute_force_mixed(seed, min_diff, k):
    rng = np.random.default_rng(seed)
    N, n = 40, 6
    X = mixed_pool(rng, N, n, n_bin=3)
    fv = lin(X)
    ref = brute_counterfactual(X, fv, min_diff, k)
    pol = P.build("counterfactual", min_diff=min_diff, k_nearest=k, on_unmet="skip")
    p = pol.pair(lin, X)
    keep = ref >= 0
    np.testing.assert_array_equal(p.target_index, np.flatnonzero(keep))
    np.testing.assert_array_equal(p.reference_index, ref[keep])
    np.testing.assert_array_equal(p.skipped, np.flatnonzero(~keep))
    np.testing.assert_array_equal(p.R, X[ref[keep]])
    np.testing.assert_array_equal(p.X, X[keep])
    np.testing.assert_allclose(p.fx, fv[keep])
    np.testing.assert_allclose(p.fr, fv[ref[keep]])
    assert (p.diff_count() >= min_diff).all()


@pytest.mark.parametrize("seed", range(5))
def test_counterfactual_ties_integer_pool(seed):
    """Small-integer features and f: many exact ties in distance and in |f(x) - f(x')|."""
    rng = np.random.default_rng(100 + seed)
    N, n = 50, 5
    X = rng.integers(0, 3, size=(N, n)).astype(float)
    X[:, 0] = rng.integers(0, 2, size=N)  # a binary column

    def f(A):
        return np.round(A.sum(axis=1) / 2)

    fv = f(X)
    for md, k in [(1, 5), (3, 4), (2, 20), (4, 2)]:
        ref = brute_counterfactual(X, fv, md, k)
        p = P.build("counterfactual", min_diff=md, k_nearest=k, on_unmet="skip").pair(f, X)
        np.testing.assert_array_equal(p.reference_index, ref[ref >= 0])


def test_counterfactual_tolerance():
    rng = np.random.default_rng(7)
    N, n = 45, 5
    X = np.round(rng.normal(size=(N, n)), 1)
    tol = [0.25, 0.0, 0.5, 0.0, 0.3]
    fv = lin(X)
    ref = brute_counterfactual(X, fv, 4, 6, tol=tol)
    p = P.build("counterfactual", min_diff=4, k_nearest=6, tol=tol, on_unmet="skip").pair(lin, X)
    np.testing.assert_array_equal(p.reference_index, ref[ref >= 0])
    assert (p.diff_count() >= 4).all()  # counted with the policy's tolerance
    # a scalar tolerance
    ref = brute_counterfactual(X, fv, 3, 6, tol=0.4)
    p = P.build("counterfactual", min_diff=3, k_nearest=6, tol=0.4, on_unmet="skip").pair(lin, X)
    np.testing.assert_array_equal(p.reference_index, ref[ref >= 0])


def test_counterfactual_unmet_error_skip_relax():
    X = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [0, 0, 5], [0, 0, 6]], float)
    # target 3 = (0,0,5) differs in all 3 features from 1 and 2 only; target 0 from 1, 2
    # with min_diff = 3 target 3 and 4 have candidates 1, 2; all have some.
    pol = P.build("counterfactual", min_diff="all", k_nearest=20)
    p = pol.pair(lin, X)
    assert len(p) == 5
    X2 = np.array([[0, 0, 0], [1, 1, 1], [0, 1, 7], [0, 1, 8]], float)
    with pytest.raises(ValueError, match=r"2 of 4 target\(s\).*targets 2, 3\."):
        pol.pair(lin, X2)
    p = P.build("counterfactual", min_diff="all", on_unmet="skip").pair(lin, X2)
    np.testing.assert_array_equal(p.target_index, [0, 1])
    np.testing.assert_array_equal(p.reference_index, [1, 0])
    np.testing.assert_array_equal(p.skipped, [2, 3])
    p = P.build("counterfactual", min_diff="all", on_unmet="relax").pair(lin, X2)
    np.testing.assert_array_equal(p.target_index, [0, 1, 2, 3])
    np.testing.assert_array_equal(p.info["min_diff"], [3, 3, 2, 2])
    fv = lin(X2)
    for t in (2, 3):
        assert p.reference_index[t] == brute_counterfactual(X2, fv, 2, 20, targets=[t])[0]
    # relax cannot help a point whose every other pool point is identical to it
    X3 = np.array([[1.0, 1.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="no other pool point that differs"):
        P.build("counterfactual", min_diff=1, on_unmet="relax").pair(lin, X3)


def test_counterfactual_error_message_lists_first_indices():
    X = np.zeros((12, 3))
    X[:, 0] = np.arange(12)
    with pytest.raises(ValueError, match=r"12 of 12 .*targets 0, 1, 2, 3, 4 \(and 7 more\)"):
        P.build("counterfactual", min_diff=2).pair(lin, X)


def test_counterfactual_small_pool_and_k():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6, 4))
    fv = lin(X)
    p = P.build("counterfactual", min_diff=4, k_nearest=50).pair(lin, X)
    np.testing.assert_array_equal(p.reference_index, brute_counterfactual(X, fv, 4, 50))
    np.testing.assert_array_equal(p.info["n_candidates"], 5)
    assert p.params["k_used"] == 6
    with pytest.raises(ValueError, match="1 of 1 target"):
        P.build("counterfactual").pair(lin, X[:1])


def test_counterfactual_targets_subset_rows_and_precomputed_values():
    rng = np.random.default_rng(11)
    X = mixed_pool(rng, 60, 5)
    fv = lin(X)
    pol = P.build("counterfactual", min_diff=3, k_nearest=5, on_unmet="skip")
    full = pol.pair(lin, X)
    sub = pol.pair(lin, X, targets=[5, 17, 2])
    m = dict(zip(full.target_index, full.reference_index, strict=True))
    np.testing.assert_array_equal(sub.reference_index, [m.get(5), m.get(17), m.get(2)])
    mask = np.zeros(60, bool)
    mask[[2, 5, 17]] = True
    np.testing.assert_array_equal(pol.pair(lin, X, targets=mask).target_index, [2, 5, 17])
    # precomputed f(pool) gives the same pairing without calling a model
    pre = pol.pair(fv, X)
    np.testing.assert_array_equal(pre.reference_index, full.reference_index)
    # targets given as rows (not pool points): candidates are the whole pool
    T = rng.normal(size=(7, 5))
    rows = pol.pair(lin, X, targets=T)
    np.testing.assert_array_equal(rows.target_index, -1)
    ref = brute_counterfactual(X, fv, 3, 5, T=T, fT=lin(T))
    np.testing.assert_array_equal(rows.reference_index, ref[ref >= 0])
    with pytest.raises(ValueError, match="need the model f itself"):
        pol.pair(fv, X, targets=T)


def test_counterfactual_evaluates_model_once_per_needed_row():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 4))
    model = insdel.as_model(lin)
    P.build("counterfactual", min_diff=4, k_nearest=3).pair(model, X)
    assert model.n_calls == 1 and model.n_evals <= 100


def test_counterfactual_parameter_errors():
    for bad in [dict(min_diff=-1), dict(min_diff="most"), dict(k_nearest=0), dict(on_unmet="x"),
                dict(tol=-1.0), dict(tol=[0.1, np.nan])]:
        with pytest.raises(ValueError):
            P.build("counterfactual", **bad)
    with pytest.raises(ValueError, match="exceeds the number of features"):
        P.build("counterfactual", min_diff=9).pair(lin, np.eye(4))
    with pytest.raises(ValueError, match="needs the model"):
        P.build("counterfactual").pair(None, np.eye(4))
    with pytest.raises(TypeError, match="unknown parameter"):
        P.build("counterfactual", mindiff=3)


def test_nan_in_pool_names_the_rows():
    X = np.ones((5, 3))
    X[3, 1] = np.nan
    for name in ("counterfactual", "one_to_one", "average"):
        with pytest.raises(ValueError, match=r"X_pool.*row\(s\): 3"):
            P.build(name).pair(lin, X)


def test_unknown_policy_lists_known():
    with pytest.raises(P.UnknownPolicyError,
                       match="Did you mean 'counterfactual'.*Available: .*counterfactual, fixed"):
        P.build("counterfact")
    with pytest.raises(ValueError, match="specifications: average"):
        P.load("nope")


# ------------------------------------------------------------------------------------------ one-to-one

@pytest.mark.parametrize("N", [2, 9, 10, 31])
def test_one_to_one_perfect_matching(N):
    X = np.random.default_rng(N).normal(size=(N, 3))
    p = P.build("one_to_one").pair(None, X, seed=3)
    ti, ri = p.target_index, p.reference_index
    assert len(p) == N - N % 2
    assert len(set(ti)) == len(ti) and (ti != ri).all()
    partner = dict(zip(ti, ri, strict=True))
    assert all(partner[partner[t]] == t for t in ti)  # both directions of every pair
    assert set(ti) | set(p.skipped) == set(range(N))
    np.testing.assert_array_equal(p.X, X[ti])
    np.testing.assert_array_equal(p.R, X[ri])
    _, counts = np.unique(p.info["match"], return_counts=True)
    assert (counts == 2).all()


def test_one_to_one_seeded_and_odd_modes():
    X = np.random.default_rng(0).normal(size=(21, 3))
    a = P.build("one_to_one").pair(None, X, seed=5)
    b = P.build("one_to_one").pair(None, X, seed=5)
    c = P.build("one_to_one").pair(None, X, seed=6)
    np.testing.assert_array_equal(a.reference_index, b.reference_index)
    np.testing.assert_array_equal(a.skipped, b.skipped)
    assert not np.array_equal(a.reference_index, c.reference_index)
    assert a.skipped.size == 1
    e = P.build("one_to_one", odd="extra").pair(None, X, seed=5)
    assert len(e) == 21 and (e.info["match"] == -1).sum() == 1
    np.testing.assert_array_equal(e.reference_index[e.info["match"] >= 0], a.reference_index)
    with pytest.raises(ValueError, match="odd count"):
        P.build("one_to_one", odd="error").pair(None, X)
    sub = P.build("one_to_one").pair(None, X, targets=[0, 4, 8, 12])
    assert set(sub.reference_index) == {0, 4, 8, 12}
    with pytest.raises(ValueError, match="not as rows"):
        P.build("one_to_one").pair(None, X, targets=X[:4])
    with pytest.raises(ValueError, match="repeated"):
        P.build("one_to_one").pair(None, X, targets=[1, 1, 2, 3])


# ------------------------------------------------------------------------------------------ constants

def test_constant_references():
    rng = np.random.default_rng(2)
    X = mixed_pool(rng, 30, 4)
    X[:, 3] = rng.integers(0, 4, size=30)
    bg = rng.normal(size=(11, 4))
    cases = {
        ("average", ()): X.mean(0),
        ("mean", ()): X.mean(0),
        ("median", ()): np.median(X, 0),
        ("mean", ("bg",)): bg.mean(0),
        ("median", ("bg",)): np.median(bg, 0),
    }
    for (name, opts), want in cases.items():
        kw = {"background": bg} if opts else {}
        p = P.build(name, **kw).pair(None, X)
        np.testing.assert_allclose(p.R, np.tile(want, (30, 1)))
        np.testing.assert_array_equal(p.reference_index, -1)
        np.testing.assert_array_equal(p.X, X)
    # mode: most frequent value per feature, ties -> the smallest
    M = np.array([[1, 5, 2], [1, 6, 3], [2, 6, 2], [2, 7, 3]], float)
    np.testing.assert_array_equal(P.build("mode").pair(None, M).R[0], [1, 6, 2])
    # fixed
    pt = np.array([0.5, -1, 2, 0])
    p = P.build("fixed", point=pt).pair(None, X, targets=[3, 4])
    np.testing.assert_array_equal(p.R, [pt, pt])
    np.testing.assert_array_equal(p.target_index, [3, 4])
    p = P.build("fixed", index=7).pair(None, X)
    np.testing.assert_array_equal(p.reference_index, 7)
    np.testing.assert_array_equal(p.R[0], X[7])
    with pytest.raises(ValueError, match="exactly one"):
        P.build("fixed")
    with pytest.raises(ValueError, match="n = 4"):
        P.build("fixed", point=[1, 2]).pair(None, X)
    # targets as rows
    T = rng.normal(size=(3, 4))
    p = P.build("average").pair(None, X, targets=T)
    np.testing.assert_array_equal(p.X, T)
    np.testing.assert_array_equal(p.target_index, -1)


# ------------------------------------------------------------------------------------------ specs

def test_specs_load_to_the_python_objects():
    assert P.load("bangalore_counterfactual") == P.build("counterfactual", min_diff=12, k_nearest=20)
    assert P.load("cern_counterfactual") == P.build("counterfactual", min_diff="all", k_nearest=20)
    assert P.load("one_to_one") == P.build("one_to_one")
    assert P.load("average") == P.build("average")
    assert P.load("cern_counterfactual") != P.build("counterfactual", min_diff=16)
    assert P.load("cern_counterfactual").spec == "cern_counterfactual"
    assert "every feature" in P.load("cern_counterfactual").description
    inline = {"policy": "counterfactual", "min_diff": 16, "k_nearest": 20}
    assert P.load(inline) == P.build("counterfactual", min_diff=16)
    assert P.load({"policy": "counterfactual", "params": {"min_diff": 16}}) == P.load(inline)
    with pytest.raises(ValueError, match="'policy' key"):
        P.load({"min_diff": 3})
    with pytest.raises(ValueError, match="given twice"):
        P.load({"policy": "counterfactual", "min_diff": 3, "params": {"min_diff": 4}})


def test_specs_shipped_as_package_data(tmp_path):
    from importlib.resources import files

    names = {p.name for p in files("insdel.shipped.policies").iterdir()}
    assert {"bangalore_counterfactual.toml", "cern_counterfactual.toml", "one_to_one.toml",
            "average.toml"} <= names
    specs = P.list_specs()
    assert set(specs["name"]) >= {"bangalore_counterfactual", "cern_counterfactual"}
    assert (specs["description"].str.len() > 0).all()
    # a user TOML file, by path
    path = tmp_path / "mine.toml"
    path.write_text('policy = "counterfactual"\ndescription = "x"\n[params]\nmin_diff = 2\n'
                    'tol = [0.1, 0.0, 0.0]\n')
    pol = P.load(path)
    assert pol == P.build("counterfactual", min_diff=2, tol=[0.1, 0.0, 0.0]) and pol.spec == "mine"
    assert P.load(str(path)) == pol
    path.write_text("policy = [")
    with pytest.raises(ValueError, match="invalid TOML"):
        P.load(path)
    with pytest.raises(FileNotFoundError):
        P.load(tmp_path / "missing.toml")


def test_cern_spec_means_every_feature():
    X = np.random.default_rng(4).normal(size=(40, 6))
    X[:, 5] = np.random.default_rng(5).choice([-1.0, 1.0], 40)
    p = P.load("cern_counterfactual").pair(lin, X)
    assert p.params["min_diff_used"] == 6 and (p.diff_count() == 6).all()
    assert p.label == "cern_counterfactual"


# ------------------------------------------------------------------------------------------ user policies

def test_user_function_policy_through_evaluate():
    @P.register("farthest_test")
    def farthest(f, X_pool, targets, seed, *, power=2.0):
        d = (np.abs(X_pool[targets, None, :] - X_pool[None, :, :]) ** power).sum(-1)
        j = d.argmax(1)
        return X_pool[j], j

    try:
        assert "farthest_test" in P.available()
        rng = np.random.default_rng(0)
        X = rng.normal(size=(12, 4))
        pol = P.build("farthest_test", power=1.0)
        assert pol.params == {"power": 1.0} and P.load({"policy": "farthest_test"}).params == {
            "power": 2.0}
        p = pol.pair(lin, X, targets=[0, 1, 2])
        assert p.name == "farthest_test" and p.params == {"power": 1.0}
        A = (p.X - p.R) * np.arange(1, 5)  # exact attribution of the linear part
        ev = insdel.evaluate(lin, p.X, p.R, {"grad": A}, n_random=2)
        assert ev.n_pairs == 3
        d = diagnostics({"farthest": p}, {"farthest": ev})
        assert d.loc["farthest", "pairs"] == 3 and "corr_grad" in d.columns
        with pytest.raises(ValueError, match="already registered"):
            P.register("farthest_test", farthest)
        with pytest.raises(TypeError, match="unknown parameter"):
            P.build("farthest_test", powr=1)
    finally:
        P.unregister("farthest_test")
    with pytest.raises(P.UnknownPolicyError):
        P.build("farthest_test")


def test_user_class_policy():
    class Shift(P.Policy):
        def __init__(self, delta: float = 1.0):
            self.params = {"delta": delta}

        def select(self, f, X_pool, targets, seed):
            return X_pool[targets] + self.params["delta"]

    P.register("shift_test", Shift)
    try:
        X = np.zeros((4, 2))
        p = P.build("shift_test", delta=2.0).pair(None, X)
        np.testing.assert_array_equal(p.R, 2.0)
        np.testing.assert_array_equal(p.reference_index, -1)
        assert p.name == "shift_test"
        with pytest.raises(ValueError, match="built-in"):
            P.register("average", Shift)
    finally:
        P.unregister("shift_test")


# ------------------------------------------------------------------------------------------ diagnostics

def test_diagnostics_table4():
    rng = np.random.default_rng(9)
    X = mixed_pool(rng, 30, 5, n_bin=2)
    pairings = {"cf": P.build("counterfactual", min_diff=4, on_unmet="skip").pair(lin, X),
                "o2o": P.build("one_to_one").pair(None, X, seed=1),
                "avg": P.build("average").pair(None, X)}
    evs = {}
    for k, p in pairings.items():
        A = (p.X - p.R) * np.arange(1, 6)
        evs[k] = insdel.evaluate(lin, p.X, p.R, {"lin": A, "neg": -A}, n_random=1)
    d = diagnostics(pairings, evs)
    assert list(d.index) == ["cf", "o2o", "avg"]
    for k, p in pairings.items():
        assert d.loc[k, "mean_n_diff"] == pytest.approx(np.mean((p.X != p.R).sum(1)))
        w = evs[k].wide()
        for m in ("lin", "neg", "random"):
            want = np.corrcoef(w[("insertion", m)], w[("deletion", m)])[0, 1]
            assert d.loc[k, f"corr_{m}"] == pytest.approx(want)
    d2 = diagnostics(list(pairings.values()))
    assert list(d2.columns) == ["pairs", "features", "mean_n_diff"]
    labels = [0, 0, 1, 2, 2]  # three groups: the units grouped curves move
    d3 = diagnostics(pairings, evs, groups=labels)
    assert list(d3.columns[:5]) == ["pairs", "features", "mean_n_diff", "units",
                                    "mean_n_diff_units"]
    for k, p in pairings.items():
        differ = p.X != p.R
        want = (differ[:, :2].any(1).astype(int) + differ[:, 2] + differ[:, 3:].any(1)).mean()
        assert d3.loc[k, "units"] == 3
        assert d3.loc[k, "mean_n_diff_units"] == pytest.approx(want)
        assert d3.loc[k, "mean_n_diff"] == d.loc[k, "mean_n_diff"]
    with pytest.raises(ValueError, match="groups"):
        pairings["cf"].diff_count(groups=[0, 1])  # a label per column: 5, not 2
    with pytest.raises(ValueError, match="evaluation has"):
        diagnostics({"a": P.build("average").pair(None, X, targets=[0, 1])}, {"a": evs["avg"]})


# ------------------------------------------------------------------------------------------ misc

def test_pairing_frame_and_save_roundtrip(tmp_path):
    X = np.random.default_rng(0).normal(size=(20, 3))
    p = P.build("counterfactual", min_diff=3, k_nearest=4).pair(lin, X)
    df = p.to_frame()
    assert list(df.columns[:5]) == ["target_index", "reference_index", "n_diff", "fx", "fr"]
    assert isinstance(df, pd.DataFrame) and len(df) == 20
    q = P.Pairing.load(p.save(tmp_path / "pairs"))
    for a in ("X", "R", "target_index", "reference_index", "fx", "fr", "skipped"):
        np.testing.assert_array_equal(getattr(q, a), getattr(p, a))
    assert q.params == p.params and q.name == p.name
    np.testing.assert_array_equal(q.info["distance"], p.info["distance"])


def test_bad_targets_and_seed():
    X = np.eye(3)
    with pytest.raises(ValueError, match="outside the pool"):
        P.build("average").pair(None, X, targets=[0, 5])
    with pytest.raises(TypeError, match="targets must be"):
        P.build("average").pair(None, X, targets=[0.5, 1.0])
    with pytest.raises(ValueError, match="seed"):
        P.build("one_to_one").pair(None, X, seed=-1)
    with pytest.raises(ValueError, match="no point"):
        P.build("average").pair(None, X, targets=np.zeros(3, bool))


def test_counterfactual_tol_checked():
    # every tolerance is a finite real >= 0; the error names the argument (and the feature)
    with pytest.raises(TypeError, match="tol must be a number"):
        P.build("counterfactual", tol="0.1")
    with pytest.raises(TypeError, match="tol must be a number"):
        P.build("counterfactual", tol=True)
    with pytest.raises(ValueError, match="tol must be a finite"):
        P.build("counterfactual", tol=float("nan"))
    with pytest.raises(ValueError, match="tol must be a number >= 0"):
        P.build("counterfactual", tol=-0.5)
    with pytest.raises(TypeError, match=r"tol\[1\] must be a number"):
        P.build("counterfactual", tol=[0.1, "x"])
    with pytest.raises(ValueError, match=r"tol\[0\] must be a finite"):
        P.build("counterfactual", tol=np.array([np.inf, 0.0]))
    with pytest.raises(ValueError, match="1-D sequence"):
        P.build("counterfactual", tol=[[0.1]])
    assert P.build("counterfactual", tol=np.float32(0.5)).params["tol"] == 0.5


def _policies_cli(argv):
    return cli_main(["--debug", *argv])  # --debug: errors are raised, not printed


def test_cli_list_and_show(capsys):
    assert _policies_cli(["policies", "list"]) == 0
    out = capsys.readouterr().out
    assert "counterfactual(min_diff=1, k_nearest=20" in out and "cern_counterfactual" in out
    assert "every feature differs" in out
    assert _policies_cli(["policies"]) == 0  # no action: list
    capsys.readouterr()
    assert _policies_cli(["policies", "show", "bangalore_counterfactual"]) == 0
    out = capsys.readouterr().out
    assert "min_diff = 12" in out and "k_nearest = 20" in out
    assert _policies_cli(["policies", "show", "fixed"]) == 0
    assert "# point = (not set)" in capsys.readouterr().out
    with pytest.raises(P.UnknownPolicyError, match="unknown policy or specification 'nope'"):
        _policies_cli(["policies", "show", "nope"])


def test_cli_entry_point_includes_policies(capsys):
    assert cli_main(["policies", "show", "one_to_one"]) == 0
    assert 'policy = "one_to_one"' in capsys.readouterr().out
    assert cli_main(["policies", "show", "nope"]) == 1


def test_bench_policies_tiny():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "policies.py"), "--tiny"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert "ratio (b)/(a)" in out


def test_pairings_carry_the_independent_unit_of_each_pair(tmp_path):
    """A pair and its mirror (the same two pool points the other way round) are one unit for
    standard errors: one_to_one's couples share a cluster id, the odd point's extra pair is a unit
    of its own, counterfactual pairs that chose each other share one, constant references have
    none (every pair its own unit)."""
    pool = np.random.default_rng(0).normal(size=(11, 3))
    p = P.build("one_to_one", odd="extra").pair(None, pool, seed=1)
    t, r, c = p.target_index, p.reference_index, p.cluster
    for i in range(len(p)):
        same = np.flatnonzero(c == c[i])
        if p.info["match"][i] >= 0:  # a couple: this pair and its mirror
            assert same.size == 2 and {t[same[0]], r[same[0]]} == {t[same[1]], r[same[1]]}
        else:  # the odd point's extra pair: one direction, a unit of its own
            assert same.tolist() == [i]
    assert sorted(set(c)) == list(range(6))
    cf = P.build("counterfactual", k_nearest=3).pair(lambda Z: Z.sum(1), pool)
    mutual = [i for i in range(len(cf)) if (cf.reference_index == cf.target_index[i])[
        cf.target_index == cf.reference_index[i]].any()]
    assert mutual  # this pool has targets and references that chose each other
    for i in range(len(cf)):
        shared = np.flatnonzero(cf.cluster == cf.cluster[i])
        assert (shared.size == 2) == (i in mutual)
    assert P.build("average").pair(None, pool).cluster is None
    back = P.Pairing.load(p.save(tmp_path / "p.npz"))
    np.testing.assert_array_equal(back.cluster, p.cluster)
    assert "cluster" in p.to_frame().columns


# -- image policies: options not truncated ---------------------------------------------------------
def test_image_policies_refuse_truncated_options():
    X = np.random.default_rng(0).random((2, 4))
    with pytest.raises(TypeError, match="shape"):
        P.build("black", shape=(1, 2.7, 2))  # not truncated to (1, 2, 2)
    with pytest.raises(TypeError, match="klen"):
        P.build("blurred", shape=(1, 2, 2), klen=3.9)  # not truncated to 3
    with pytest.raises(ValueError, match="klen"):
        P.build("blurred", shape=(1, 2, 2), klen=4)  # RISE's kernel has a centre pixel
    assert P.build("black", shape=(1, 2, 2)).pair(None, X).R.shape == (2, 4)


# -- the noise reference image: seeded per target --------------------------------------------------
SHAPE = (1, 4, 4)


def _pool(N=5, seed=0):
    return np.random.default_rng(seed).random((N, 16))


def _noise(X, **kw):
    return P.build("noise", shape=SHAPE).pair(None, X, **kw)


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
    R = P.build("noise", shape=SHAPE, low=-2.0, high=-1.0).pair(None, X, seed=1).R
    assert R.shape == X.shape and -2.0 <= R.min() and R.max() <= -1.0
    # targets given as rows: keyed by their position among the rows, seeded all the same
    rows = X[[3, 4]]
    r1 = _noise(X, targets=rows, seed=5).R
    r2 = _noise(X, targets=rows, seed=5).R
    np.testing.assert_array_equal(r1, r2)
    assert not np.array_equal(r1[0], r1[1])
    assert not np.array_equal(r1, _noise(X, targets=rows, seed=6).R)


# -- progress= of a registered function policy; shapes a policy returns ---------------------------
def test_a_registered_function_policy_gets_the_check_too():
    """A policy registered as a function checks progress= as the built-in ones do (those are
    checked in tests/test_common.py)."""
    from insdel.policies import register, unregister

    register("first_row", lambda f, X_pool, targets, seed: X_pool[0])
    try:
        pol = P.build("first_row")
        pool = np.random.default_rng(5).random((3, 2))
        with pytest.raises(TypeError, match="progress"):
            pol.pair(None, pool, progress="yes")
        assert pol.pair(None, pool, progress=False).n_pairs == 3
    finally:
        unregister("first_row")


def test_a_policy_returning_the_wrong_shape_names_n():
    from insdel.policies import base

    T = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"or \(3,\)"):
        base._to_pairing(np.zeros((2, 2)), None, np.arange(2), T, "p", {}, 0)


def test_policy_base_select_names_what_to_implement():
    class Mine(P.Policy):
        name = "mine"

    with pytest.raises(NotImplementedError, match=r"Mine must implement select\(f, X_pool, "
                                                  r"targets, seed\)"):
        Mine().pair(None, np.zeros((3, 2)))


def test_to_spec_round_trips_through_load():
    p = P.load("cern_counterfactual")
    spec = p.to_spec()
    assert spec["policy"] == "counterfactual" and spec["name"] == "cern_counterfactual"
    assert spec["params"]["k_nearest"] == 20 and spec["description"]
    assert P.load(spec) == p
    built = P.build("counterfactual", k_nearest=5)
    assert built.to_spec() == {"policy": "counterfactual",
                               "params": {**built.params, "k_nearest": 5}}
    assert set(built.to_spec()) == {"policy", "params"}  # no spec name, no description
    assert P.load(built.to_spec()) == built
