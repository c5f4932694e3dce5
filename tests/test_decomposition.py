"""Anchored decomposition: the paper's results (§3.2–3.4, Appendix B) are the oracle."""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import insdel
from insdel._decomposition_kernels import popcounts
from insdel.decomposition import (
    AnchoredDecomposition,
    BatchDecomposition,
    anchored_decomposition,
    batch_decomposition,
    expected_last_position,
    mobius,
    shapley_values,
    zeta,
)

ROOT = Path(__file__).resolve().parents[1]


def smooth_f(n: int, seed: int):
    """A random smooth function with interactions of all orders."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    W = rng.normal(size=(n, 3)) / np.sqrt(n)
    c = rng.normal(size=3)
    Q = rng.normal(size=(n, n)) * 0.3

    def f(Z):
        return (np.sin(Z * b) @ a + np.tanh(Z @ W) @ c
                + 0.1 * np.einsum("bi,ij,bj->b", Z, Q, Z) + np.exp(0.2 * Z[:, 0]))

    return f


def pairs(n: int, B: int, seed: int, binary: bool = False):
    rng = np.random.default_rng(seed + 1)
    if binary:
        return (rng.integers(0, 2, size=(B, n)).astype(float),
                rng.integers(0, 2, size=(B, n)).astype(float))
    return rng.normal(size=(B, n)), rng.normal(size=(B, n))


def brute_shapley(values: np.ndarray, n: int) -> np.ndarray:
    phi = np.zeros(n)
    for j in range(n):
        for S in range(1 << n):
            if S >> j & 1:
                continue
            s = bin(S).count("1")
            w = math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n)
            phi[j] += w * (values[S | (1 << j)] - values[S])
    return phi


def all_perms(n: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64)


# -- transforms ------------------------------------------------------------------------------
def test_mobius_is_the_double_sum_and_zeta_inverts_it():
    rng = np.random.default_rng(0)
    n = 5
    g = rng.normal(size=1 << n)
    d = mobius(g)
    for u in range(1 << n):
        ref = sum((-1) ** (bin(u).count("1") - bin(v).count("1")) * g[v]
                  for v in range(1 << n) if v & u == v)
        assert d[u] == pytest.approx(ref, abs=1e-12)
    np.testing.assert_allclose(zeta(d), g, atol=1e-12)
    assert d[0] == g[0] and d.sum() == pytest.approx(g[-1])


def test_values_are_the_hybrids_and_dedup_matches_full_enumeration():
    n, B = 6, 4
    f = smooth_f(n, 3)
    X, R = pairs(n, B, 3)
    X[1, [0, 4]] = R[1, [0, 4]]
    X[2] = R[2]  # no feature differs
    full = batch_decomposition(f, X, R, dedup=False)
    fast = batch_decomposition(f, X, R, batch_size=7)  # many small model calls, chunked pairs
    np.testing.assert_array_equal(fast.values, full.values)
    np.testing.assert_allclose(fast.delta, full.delta, atol=1e-12)
    assert fast.n_evals == 64 + 16 + 1 + 64 and full.n_evals == B * 64
    u = np.arange(1 << n)
    for b in range(B):
        np.testing.assert_allclose(full.values[b], f(insdel.hybrid(X[b], R[b], u)))
    np.testing.assert_allclose(fast.fx, f(X))
    np.testing.assert_allclose(fast.fr, f(R))
    # Delta_u vanishes when u holds a feature with x_j == r_j
    assert np.all(fast.delta[2, 1:] == 0)
    assert np.all(fast.delta[1, (u & 0b010001) != 0] == 0)


def test_torch_module_and_single_pair_api():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.PReLU(), torch.nn.Dropout(0.3),
                              torch.nn.Linear(8, 1))
    x, r = np.linspace(-1, 1, 5), np.zeros(5)
    d = anchored_decomposition(net, x, r, feature_names=list("abcde"))
    with torch.no_grad():
        fx = net.eval()(torch.tensor(x[None], dtype=torch.float32)).item()
    assert d.fx == pytest.approx(fx, rel=1e-6)
    assert d.n == 5 and d.values.shape == (32,) and d.delta.shape == (32,)
    assert d.shapley().sum() == pytest.approx(d.fx - d.fr, abs=1e-9)
    top = d.interactions(top=3)
    assert len(top) == 3 and all(t.size >= 2 for t in top)
    assert all(set(t.features) <= set("abcde") for t in top)
    mags = [abs(t.delta) for t in top]
    assert mags == sorted(mags, reverse=True)
    assert mags[0] == pytest.approx(np.abs(d.delta[popcounts(5) >= 2]).max())
    assert "n=5" in repr(d)


# -- Theorem 1 and Appendix B.1 against traced curves ---------------------------------------------
@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 10), seed=st.integers(0, 10_000))
def test_theorem1_and_deletion_form_equal_traced_curves(n, seed):
    B, Kord = 3, 3
    f = smooth_f(n, seed)
    X, R = pairs(n, B, seed, binary=seed % 3 == 0)
    rng = np.random.default_rng(seed + 2)
    orders = np.array([[rng.permutation(n) for _ in range(Kord)] for _ in range(B)])
    dec = batch_decomposition(f, X, R)
    tr = insdel.trace(f, X, R, orders)
    ins, dele = tr.curves["insertion"], tr.curves["deletion"]
    tol = dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dec.auc(orders), insdel.auc(ins), **tol)
    np.testing.assert_allclose(dec.auc(orders, mode="deletion"), insdel.auc(dele), **tol)
    for norm in (True, False):
        np.testing.assert_allclose(dec.abc(orders, normalize=norm),
                                   insdel.abc(ins, mode="insertion", normalize=norm), **tol)
        np.testing.assert_allclose(dec.abc(orders, mode="deletion", normalize=norm),
                                   insdel.abc(dele, mode="deletion", normalize=norm), **tol)
    np.testing.assert_allclose(dec.abc_total(orders),
                               insdel.abc(ins) + insdel.abc(dele, mode="deletion"), **tol)
    # single-pair object, one ordering and K orderings
    d0 = dec[0]
    assert d0.abc(orders[0, 0]) == pytest.approx(float(insdel.abc(ins[0, 0])), abs=1e-9)
    np.testing.assert_allclose(d0.auc(orders[0], mode="deletion"), insdel.auc(dele[0]), **tol)


# -- expectations under a random ordering (§3.3, Appendix B.1) ------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_expected_abc_equals_mean_over_all_orderings(n):
    f = smooth_f(n, 10 + n)
    X, R = pairs(n, 2, n)
    perms = all_perms(n)
    dec = batch_decomposition(f, X, R)
    tr = insdel.trace(f, X, R, np.broadcast_to(perms, (2,) + perms.shape))
    abc_i = insdel.abc(tr.curves["insertion"])
    abc_d = insdel.abc(tr.curves["deletion"], mode="deletion")
    np.testing.assert_allclose(dec.expected_abc(), abc_i.mean(axis=1), atol=1e-10)
    np.testing.assert_allclose(dec.expected_abc(mode="deletion"), abc_d.mean(axis=1), atol=1e-10)
    np.testing.assert_allclose((abc_i + abc_d).mean(axis=1), 0, atol=1e-10)
    np.testing.assert_allclose(dec.expected_abc() + dec.expected_abc(mode="deletion"), 0, atol=1e-12)
    np.testing.assert_allclose(dec.expected_abc(normalize=False), n * dec.expected_abc())


def test_expected_abc_monte_carlo_n12():
    n = 12
    f = smooth_f(n, 5)
    x, r = pairs(n, 1, 5)
    d = anchored_decomposition(f, x[0], r[0])
    rng = np.random.default_rng(0)
    orders = np.array([rng.permutation(n) for _ in range(4000)])
    for mode in ("insertion", "deletion"):
        a = d.abc(orders, mode=mode)
        se = a.std(ddof=1) / np.sqrt(a.size)
        assert abs(a.mean() - d.expected_abc(mode=mode)) < 4 * se
    tot = d.abc_total(orders)
    assert abs(tot.mean()) < 4 * tot.std(ddof=1) / np.sqrt(tot.size)
    assert d.expected_abc() + d.expected_abc(mode="deletion") == pytest.approx(0, abs=1e-12)


def test_additive_f_has_zero_expected_abc_and_shapley_equals_main_effects():
    n = 7
    rng = np.random.default_rng(1)
    a = rng.normal(size=n)

    def f(Z):
        return np.sin(Z) @ a + Z[:, 2] ** 3

    X, R = pairs(n, 3, 1)
    dec = batch_decomposition(f, X, R)
    inter = dec.delta[:, popcounts(n) >= 2]
    assert np.abs(inter).max() < 1e-12
    np.testing.assert_allclose(dec.expected_abc(), 0, atol=1e-12)
    np.testing.assert_allclose(dec.expected_abc(mode="deletion"), 0, atol=1e-12)
    singles = dec.delta[:, 1 << np.arange(n)]
    np.testing.assert_allclose(dec.shapley(), singles, atol=1e-12)
    # additive: ordering by Delta_j (= Shapley) is the best ordering
    np.testing.assert_allclose(dec.abc(insdel.orderings(dec.shapley())), dec.best_abc(), atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 5, 7])
def test_proposition1_against_enumeration(n):
    perms = all_perms(n)
    pos = np.argsort(perms, axis=1) + 1  # pos[p, j] = 1-based position of feature j
    for size in range(n + 1):
        for u in itertools.combinations(range(n), size):
            last = pos[:, list(u)].max(axis=1) if size else np.zeros(len(perms))
            assert last.mean() == pytest.approx(expected_last_position(size, n), abs=1e-12)
            if size:
                first = pos[:, list(u)].min(axis=1)
                assert first.mean() == pytest.approx(n + 1 - expected_last_position(size, n))
    np.testing.assert_allclose(expected_last_position(np.arange(n + 1), n),
                               np.arange(n + 1) * (n + 1) / (np.arange(n + 1) + 1))


# -- Shapley values --------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 3, 6])
def test_shapley_matches_brute_force_and_sums_to_difference(n):
    f = smooth_f(n, 20 + n)
    X, R = pairs(n, 3, n)
    dec = batch_decomposition(f, X, R)
    phi = dec.shapley()
    np.testing.assert_allclose(phi.sum(axis=1), dec.fx - dec.fr, atol=1e-12)
    for b in range(3):
        np.testing.assert_allclose(phi[b], brute_shapley(dec.values[b], n), atol=1e-12)
    np.testing.assert_allclose(shapley_values(f, X, R, batch_size=5), phi, atol=1e-12)


def test_section_3_4_counterexample():
    A = -1.5
    delta = np.zeros(8)
    delta[0b001], delta[0b010], delta[0b100], delta[0b011] = 3, 2, 1, A
    d = AnchoredDecomposition.from_delta(delta)
    np.testing.assert_allclose(d.shapley(), [3 + A / 2, 2 + A / 2, 1])
    np.testing.assert_array_equal(insdel.orderings(d.shapley()), [0, 1, 2])  # (1, 2, 3)
    assert d.auc([0, 1, 2]) == pytest.approx(14 + 2 * A)
    assert d.auc([0, 2, 1]) == pytest.approx(13 + A)
    assert d.auc([0, 2, 1]) > d.auc([0, 1, 2])
    assert d.best_auc() == pytest.approx(max(d.auc(all_perms(3))))
    assert d.auc(d.best_order()) == pytest.approx(d.best_auc())


# -- Appendix B.2: increasing functions of additive models ---------------------------------------
def _leaky(w):
    return np.where(w > 0, w, 0.05 * w)


_LINKS = {
    "logistic": (lambda w: 1 / (1 + np.exp(-w)), lambda w: np.exp(-w) / (1 + np.exp(-w)) ** 2),
    "exp": (np.exp, np.exp),
    "leaky_relu": (_leaky, lambda w: np.where(w > 0, 1.0, 0.05)),
}


def _ig(dh, beta, b0, x, r, steps=20000):
    """Integrated gradients of h(b0 + z.beta) by a midpoint Riemann sum (conventions)."""
    t = (np.arange(steps) + 0.5) / steps
    path = r[None, :] + t[:, None] * (x - r)[None, :]
    grad = dh(b0 + path @ beta)[:, None] * beta[None, :]
    return (x - r) * grad.mean(axis=0)


@pytest.mark.parametrize("link", sorted(_LINKS))
@pytest.mark.parametrize("binary", [True, False])
def test_appendix_b2_shapley_and_ig_orders_are_optimal(link, binary):
    h, dh = _LINKS[link]
    n, B = 8, 12
    rng = np.random.default_rng(10 * sorted(_LINKS).index(link) + int(binary))
    beta, b0 = rng.normal(size=n), rng.normal()
    scale = 0.5 if link == "exp" else 1.0

    def f(Z):
        return h(b0 + scale * (Z @ beta))

    X, R = pairs(n, B, 7, binary=binary)
    dec = batch_decomposition(f, X, R)
    best = dec.best_auc()
    sh = dec.shapley()
    ig = np.array([_ig(dh, scale * beta, b0, X[b], R[b]) for b in range(B)])
    # IG completeness sanity check for the Riemann sum
    np.testing.assert_allclose(ig.sum(axis=1), dec.fx - dec.fr, rtol=1e-3, atol=1e-4)
    tol = 1e-9 * max(1.0, np.abs(best).max())
    assert np.all(np.abs(dec.auc(insdel.orderings(sh)) - best) <= tol)
    assert np.all(np.abs(dec.auc(insdel.orderings(ig)) - best) <= tol)
    # and a random ordering usually does worse
    rnd = np.array([rng.permutation(n) for _ in range(B)])
    assert np.all(dec.auc(rnd) <= best + tol)


# -- best achievable ordering -----------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 4, 7])
@pytest.mark.parametrize("mode", ["insertion", "deletion"])
def test_best_order_equals_brute_force(n, mode):
    rng = np.random.default_rng(n)
    B = 3
    dec = BatchDecomposition.from_values(rng.normal(size=(B, 1 << n)))
    perms = all_perms(n)
    every = dec.abc(np.broadcast_to(perms, (B,) + perms.shape), mode=mode)
    np.testing.assert_allclose(dec.best_abc(mode=mode), every.max(axis=1), atol=1e-12)
    bo = dec.best_order(mode=mode)
    np.testing.assert_allclose(dec.abc(bo, mode=mode), every.max(axis=1), atol=1e-12)
    np.testing.assert_allclose(dec.best_abc(mode=mode, normalize=False), n * dec.best_abc(mode=mode))
    # also from a real model traced along the best order
    f = smooth_f(n, n)
    X, R = pairs(n, 2, n)
    d2 = batch_decomposition(f, X, R)
    tr = insdel.trace(f, X, R, d2.best_order(mode=mode), modes=(mode,))
    np.testing.assert_allclose(insdel.abc(tr.curves[mode][:, 0], mode=mode), d2.best_abc(mode=mode),
                               atol=1e-10)


# -- bad input -------------------------------------------------------------------------------------
def test_refuses_large_n_with_cost():
    f = smooth_f(30, 0)
    with pytest.raises(ValueError, match=r"n = 30 .*2\*\*30 = 1,073,741,824 model evaluations.*GiB"):
        anchored_decomposition(f, np.ones(30), np.zeros(30))
    with pytest.raises(ValueError, match=r"max_d = 4"):
        batch_decomposition(smooth_f(5, 0), np.ones((2, 5)), np.zeros(5), max_d=4)
    assert shapley_values(smooth_f(5, 0), np.ones((2, 5)), np.zeros(5), max_d=5).shape == (2, 5)


def test_rejects_bad_orders_naming_entries():
    d = AnchoredDecomposition.from_values(np.arange(16.0))
    with pytest.raises(ValueError, match=r"out of range: 7 \(position 2\).*missing: 2"):
        d.abc([0, 1, 7, 3])
    with pytest.raises(ValueError, match=r"repeated: 1 \(positions 1, 3\).*missing: 3"):
        d.auc([0, 1, 2, 1])
    with pytest.raises(ValueError, match="last dimension n = 4"):
        d.auc([0, 1, 2])
    with pytest.raises(TypeError, match="integer"):
        d.auc([0.5, 1, 2, 3])
    with pytest.raises(ValueError, match="mode"):
        d.abc([0, 1, 2, 3], mode="both")
    b = BatchDecomposition.from_values(np.zeros((2, 8)))
    with pytest.raises(ValueError, match=r"orders\[1, 0\] is not a permutation"):
        b.abc(np.array([[[0, 1, 2]], [[0, 0, 2]]]))
    with pytest.raises(ValueError, match="2\\*\\*n entries"):
        BatchDecomposition.from_values(np.zeros((2, 6)))
    with pytest.raises(ValueError, match="size must lie"):
        expected_last_position(5, 4)


# -- benchmark never rots ---------------------------------------------------------------------------
def test_bench_decomposition_tiny(monkeypatch, capsys):
    """bench/decomposition.py --tiny, run in this process: shap's Exact explainer is compiled by
    numba (shap caches none of it) once per process, and the suite's own shap tests share it."""
    import importlib.util

    import torch

    path = ROOT / "bench" / "decomposition.py"
    spec = importlib.util.spec_from_file_location("bench_decomposition", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(sys, "argv", [str(path), "--tiny"])
    rng, threads = torch.random.get_rng_state(), torch.get_num_threads()
    try:
        bench.main()
    finally:  # the bench seeds torch for its models: later tests see this process's state
        torch.random.set_rng_state(rng)
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "share outside model" in out and "best_order" in out and "exact baseline Shapley" in out


# -- labelled input, option checks and group games of the decomposition ----------------------------
def _lin(Z):
    Z = np.asarray(Z, dtype=float)
    return 2 * Z[:, 0] + 10 * Z[:, 1] + Z[:, 2] + Z[:, 0] * Z[:, 2]


def _f6(Z):
    Z = np.asarray(Z, dtype=float)
    w = np.array([0.3, -1.0, 0.7, 0.2, -0.4, 1.1])
    return np.tanh(Z @ w) + Z[:, 0] * Z[:, 5] - Z[:, 2] * Z[:, 3]


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


def test_batch_decomposition_names_features_from_dataframe_columns():
    """A DataFrame X names the units of the decomposition (its interactions name columns)."""
    import pandas as pd

    from insdel.decomposition import batch_decomposition

    def f(Z):
        return Z[:, 0] * Z[:, 1] + Z[:, 2]

    X = pd.DataFrame([[1.0, 2.0, 3.0]], columns=["a", "b", "c"])
    R = pd.DataFrame([[0.0, 0.0, 0.0]], columns=["a", "b", "c"])
    d = batch_decomposition(f, X, R)
    assert d.feature_names == ["a", "b", "c"]
    assert batch_decomposition(f, X.to_numpy(), R.to_numpy()).feature_names is None


def test_the_full_layouts_of_one_pair_and_the_sizes():
    """AnchoredDecomposition's full 2^n layouts are its batch's first row; ``sizes`` is |u| of
    every bitmask."""
    from insdel.decomposition import anchored_decomposition, batch_decomposition

    f = lambda Z: Z[:, 0] * Z[:, 1] + Z[:, 2]  # noqa: E731
    x, r = np.array([1.0, 2.0, 3.0]), np.array([0.0, 2.0, 1.0])
    d = anchored_decomposition(f, x, r)
    b = batch_decomposition(f, x[None], r[None])
    np.testing.assert_array_equal(d.full_values(), b.full_values()[0])
    np.testing.assert_array_equal(d.full_delta(), b.full_delta()[0])
    np.testing.assert_array_equal(b.sizes, [bin(u).count("1") for u in range(8)])
    np.testing.assert_allclose(d.full_values()[7], f(x[None])[0])
