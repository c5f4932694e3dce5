"""The curve engine, areas and evaluate(): conventions, paper §3.1-3.2, equivalences, bad input."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import insdel
from insdel.areas import abc, auc, aul
from insdel.curves import MODES, orderings, trace

# ---------------------------------------------------------------- reference implementation


def brute_curve(f, x, r, order, mode):
    """The definition, one point at a time (conventions: Curves)."""
    n = len(x)
    pts = []
    for k in range(n + 1):
        S = np.zeros(n, bool)
        S[list(order[:k])] = True
        u = S if mode == "insertion" else ~S
        pts.append(np.where(u, x, r))
    return f(np.array(pts))


def smooth_f(seed: int, n: int):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n, 5))
    v = rng.normal(size=5)
    c = rng.normal(size=n)

    def f(Z):
        Z = np.asarray(Z, dtype=np.float64)
        return np.tanh(Z @ W) @ v + Z @ c + 0.3 * Z[:, 0] * Z[:, -1]

    return f


pairs = st.integers(min_value=1, max_value=9).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(1, 4))
)


@settings(max_examples=40, deadline=None)
@given(pairs)
def test_engine_matches_definition(args):
    n, seed, B, K = args
    rng = np.random.default_rng(seed)
    f = smooth_f(seed, n)
    X = rng.normal(size=(B, n))
    R = rng.normal(size=(B, n))
    # some equal features and ties in the attributions
    eq = rng.random((B, n)) < 0.25
    R[eq] = X[eq]
    A = rng.integers(-2, 3, size=(B, K, n)).astype(float)
    res = trace(f, X, R, orderings(A), modes=("insertion", "deletion"))
    o = orderings(A)
    for b in range(B):
        for k in range(K):
            for mode in ("insertion", "deletion"):
                ref = brute_curve(f, X[b], R[b], o[b, k], mode)
                np.testing.assert_allclose(res.curves[mode][b, k], ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.fx, f(X))
    np.testing.assert_allclose(res.fr, f(R))
    assert res.n_unique <= B * (2 + K * 2 * max(n - 1, 0))


def test_end_points_and_ordering_convention():
    rng = np.random.default_rng(1)
    n, B = 5, 7
    f = smooth_f(3, n)
    X, R = rng.normal(size=(B, n)), rng.normal(size=(B, n))
    A = rng.normal(size=(B, n))
    ins = insdel.curves(f, X, R, A, mode="insertion")
    dele = insdel.curves(f, X, R, A, mode="deletion")
    assert ins.shape == dele.shape == (B, n + 1)
    np.testing.assert_allclose(ins[:, 0], f(R))
    np.testing.assert_allclose(ins[:, -1], f(X))
    np.testing.assert_allclose(dele[:, 0], f(X))
    np.testing.assert_allclose(dele[:, -1], f(R))
    # decreasing *signed* attribution, ties by feature index
    assert orderings(np.array([0.5, -3.0, 2.0, 0.5])).tolist() == [2, 0, 3, 1]


def test_normalize_is_trapezoid_minus_line():
    rng = np.random.default_rng(2)
    c = rng.normal(size=(4, 3, 9))
    n = c.shape[-1] - 1
    grid = np.linspace(0, 1, n + 1)
    trap = np.trapezoid(c, grid, axis=-1)
    line = (c[..., 0] + c[..., -1]) / 2
    np.testing.assert_allclose(abc(c, mode="insertion", normalize=True), trap - line, atol=1e-12)
    np.testing.assert_allclose(abc(c, mode="insertion", normalize=False) / n, trap - line, atol=1e-12)
    np.testing.assert_allclose(abc(c, mode="deletion", normalize=True), line - trap, atol=1e-12)
    np.testing.assert_allclose(auc(c), c.sum(-1))
    np.testing.assert_allclose(aul(c), (n + 1) / 2 * (c[..., 0] + c[..., -1]))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 8), st.integers(0, 10_000))
def test_symmetry_swap_start_and_end(n, seed):
    """Paper §3.1: from r to x with pi equals from x to r with pi reversed."""
    rng = np.random.default_rng(seed)
    f = smooth_f(seed, n)
    X, R = rng.normal(size=(3, n)), rng.normal(size=(3, n))
    o = np.argsort(rng.random((3, n)), axis=1)
    fwd = trace(f, X, R, o)
    bwd = trace(f, R, X, o[:, ::-1].copy())
    for mode in ("insertion", "deletion"):
        a = abc(fwd.curves[mode], mode=mode)
        b = abc(bwd.curves[mode], mode=mode)
        np.testing.assert_allclose(a, b, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 10), st.integers(0, 10_000))
def test_additive_eq4_and_insertion_equals_deletion(n, seed):
    rng = np.random.default_rng(seed)
    coef = rng.normal(size=(3, n))

    def f(Z):  # additive: f_j(z) = a z + b z^2 + c sin z
        return (coef[0] * Z + coef[1] * Z**2 + coef[2] * np.sin(Z)).sum(1) + 1.5

    def fj(z):
        return coef[0] * z + coef[1] * z**2 + coef[2] * np.sin(z)

    X, R = rng.normal(size=(4, n)), rng.normal(size=(4, n))
    A = rng.normal(size=(4, n))
    ins = insdel.curves(f, X, R, A, mode="insertion")
    dele = insdel.curves(f, X, R, A, mode="deletion")
    o = orderings(A)
    pos = np.empty_like(o)
    np.put_along_axis(pos, o, np.arange(1, n + 1)[None, :].repeat(4, 0), axis=1)
    eq4 = (((n + 1) / 2 - pos) * (fj(X) - fj(R))).sum(1)  # eq. (4), insertion from r to x
    np.testing.assert_allclose(abc(ins, mode="insertion", normalize=False), eq4, atol=1e-9)
    np.testing.assert_allclose(abc(dele, mode="deletion"), abc(ins, mode="insertion"), atol=1e-9)


def test_k_orderings_equal_separate_calls():
    rng = np.random.default_rng(4)
    n, B, K = 6, 5, 4
    f = smooth_f(5, n)
    X, R = rng.normal(size=(B, n)), rng.normal(size=(B, n))
    A = rng.normal(size=(B, K, n))
    both = insdel.curves(f, X, R, A, mode="deletion")
    assert both.shape == (B, K, n + 1)
    for k in range(K):
        np.testing.assert_array_equal(both[:, k], insdel.curves(f, X, R, A[:, k], mode="deletion"))


def test_end_points_evaluated_once_per_pair():
    rng = np.random.default_rng(6)
    n, B, K = 5, 4, 6
    seen = []

    def f(Z):
        seen.append(Z.copy())
        return Z.sum(1)

    X, R = rng.normal(size=(B, n)), rng.normal(size=(B, n))
    A = rng.normal(size=(B, K, n))
    trace(f, X, R, orderings(A), modes=("insertion", "deletion"))
    rows = np.concatenate(seen)
    for b in range(B):
        assert (rows == X[b]).all(1).sum() == 1
        assert (rows == R[b]).all(1).sum() == 1
    # every evaluated row of a pair is distinct
    assert len(np.unique(rows, axis=0)) == len(rows)


def test_three_model_kinds_agree():
    torch.manual_seed(0)
    n = 7
    net = torch.nn.Sequential(torch.nn.Linear(n, 16), torch.nn.PReLU(), torch.nn.Dropout(0.3),
                              torch.nn.Linear(16, 1)).double()

    def call(Z):
        with torch.no_grad():
            return net(torch.from_numpy(Z)).numpy()[:, 0]

    class Est:
        def predict(self, Z):
            return call(Z)

    rng = np.random.default_rng(7)
    X, R, A = rng.normal(size=(9, n)), rng.normal(size=(9, n)), rng.normal(size=(9, n))
    net.train()  # the adapter must switch dropout off
    c1 = insdel.curves(net, X, R, A)
    c2 = insdel.curves(Est(), X, R, A)
    c3 = insdel.curves(call, X, R, A)
    np.testing.assert_allclose(c1, c2, rtol=1e-12)
    np.testing.assert_allclose(c1, c3, rtol=1e-12)
    # float32 modules are evaluated in float32
    net32 = net.float()
    c4 = insdel.curves(net32, X, R, A)
    np.testing.assert_allclose(c1, c4, rtol=1e-4, atol=1e-5)


def test_chunking_and_batching_do_not_change_results():
    rng = np.random.default_rng(8)
    n, B = 10, 23
    f = smooth_f(9, n)
    X, R, A = rng.normal(size=(B, n)), rng.normal(size=(B, n)), rng.normal(size=(B, 3, n))
    ref = insdel.curves(f, X, R, A)
    small = insdel.curves(f, X, R, A, batch_size=7, chunk_size=50)
    # BLAS may round differently with other batch shapes: equal to float64 precision
    np.testing.assert_allclose(ref, small, rtol=1e-13, atol=1e-13)


def test_many_features_use_several_words():
    rng = np.random.default_rng(10)
    n, B = 130, 3
    w = rng.normal(size=n)

    def f(Z):
        return np.tanh(Z @ w) + Z[:, 0] * Z[:, 129]

    X, R, A = rng.normal(size=(B, n)), rng.normal(size=(B, n)), rng.normal(size=(B, n))
    c = insdel.curves(f, X, R, A, mode="deletion")
    o = orderings(A)
    for b in range(B):
        np.testing.assert_allclose(c[b], brute_curve(f, X[b], R[b], o[b], "deletion"))


def test_hybrid_masks_and_bitmasks():
    x = np.array([1.0, 2.0, 3.0])
    r = np.array([-1.0, -2.0, -3.0])
    assert insdel.hybrid(x, r, 0b101).tolist() == [1.0, -2.0, 3.0]
    np.testing.assert_array_equal(insdel.hybrid(x, r, np.array([True, False, True])),
                                  [1.0, -2.0, 3.0])
    allm = insdel.hybrid(x, r, np.arange(8))
    assert allm.shape == (8, 3)
    X = np.stack([x, 2 * x])
    R = np.stack([r, 2 * r])
    per_pair = insdel.hybrid(X, R, np.array([1, 2]))
    np.testing.assert_array_equal(per_pair, [[1, -2, -3], [-2, 4, -6]])
    outer = insdel.hybrid(X, R, np.array([0, 7, 4]))
    assert outer.shape == (2, 3, 3)
    np.testing.assert_array_equal(outer[1, 1], 2 * x)
    with pytest.raises(ValueError, match="out of range"):
        insdel.hybrid(x, r, 8)


def test_evaluate_summary_and_random():
    rng = np.random.default_rng(11)
    n, B = 6, 40
    w = rng.normal(size=n)

    def f(Z):
        return Z @ w

    X, R = rng.normal(size=(B, n)), rng.normal(size=(B, n))
    good = w * (X - R)
    ev = insdel.evaluate(f, X, R, {"good": good, "bad": -good}, n_random=5, seed=3)
    assert ev.methods == ["good", "bad", "random"]
    s = ev.summary(differences=[("good", "bad")])
    ins = s[(s["mode"] == "insertion")].set_index("method")
    assert ins.loc["good", "mean"] > 0 > ins.loc["bad", "mean"]
    diff = ins.loc["good - bad"]
    v = ev.abc_array("good") - ev.abc_array("bad")
    assert diff["mean"] == pytest.approx(v.mean())
    assert diff["std_error"] == pytest.approx(v.std(ddof=1) / np.sqrt(B))
    assert ev.random_curves["insertion"].shape == (B, 5, n + 1)
    # same seed, same random row
    ev2 = insdel.evaluate(f, X, R, {"good": good, "bad": -good}, n_random=5, seed=3)
    np.testing.assert_array_equal(ev.abc["abc"], ev2.abc["abc"])
    assert "| Insertion | good |" in ev.to_markdown()


# ---------------------------------------------------------------- bad input


def _ok():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))


def lin(Z):
    return Z.sum(1)


@pytest.mark.parametrize("which", ["X", "R", "A"])
def test_nan_and_inf_named(which):
    X, R, A = _ok()
    arrs = {"X": X, "R": R, "A": A}
    arrs[which][2, 1] = np.nan
    with pytest.raises(ValueError, match=rf"{which} contains non-finite.*row\(s\): 2.*feature\(s\) 1"):
        insdel.curves(lin, arrs["X"], arrs["R"], arrs["A"])
    arrs[which][2, 1] = np.inf
    with pytest.raises(ValueError, match="inf"):
        insdel.curves(lin, arrs["X"], arrs["R"], arrs["A"])


@pytest.mark.parametrize("groups", [None, [0, 0, 1]])
@pytest.mark.parametrize("which", ["X", "R"])
def test_trace_names_non_finite_pairs(which, groups):
    """``trace`` checks finiteness in its own pass over the pairs (with and without groups); the
    error names the array, the row and the feature, as check_finite does."""
    X, R, _ = _ok()
    arrs = {"X": X, "R": R}
    arrs[which][3, 2] = np.inf
    o = np.tile(np.arange(2 if groups else 3), (4, 1))
    with pytest.raises(ValueError, match=rf"{which} contains non-finite.*row\(s\): 3.*feature\(s\) 2"):
        trace(lin, arrs["X"], arrs["R"], o, groups=groups)


def test_shape_errors():
    X, R, A = _ok()
    with pytest.raises(ValueError, match="same shape"):
        insdel.curves(lin, X, R[:3], A)
    with pytest.raises(ValueError, match="A must have shape"):
        insdel.curves(lin, X, R, A[:, :2])
    with pytest.raises(ValueError, match="B = 0"):
        insdel.curves(lin, X[:0], R[:0], A[:0])
    with pytest.raises(ValueError, match="n = 0"):
        insdel.curves(lin, X[:, :0], R[:, :0], A[:, :0])
    with pytest.raises(ValueError, match="mode must be"):
        insdel.curves(lin, X, R, A, mode="insert")
    with pytest.raises(ValueError, match="not a permutation"):
        trace(lin, X, R, np.array([[0, 0, 1]] * 4))


def test_model_output_errors():
    X, R, A = _ok()
    with pytest.raises(ValueError, match=r"shape \(B,\) or \(B, 1\)"):
        insdel.curves(lambda Z: np.zeros((len(Z), 2)), X, R, A)

    def bad(Z):
        y = Z.sum(1)
        y[1] = np.nan
        return y

    with pytest.raises(ValueError, match=r"bad returned non-finite values on the curves of 1 "
                                         r"pair\(s\) \(pairs 0\); pair 0: f\(x\), insertion "
                                         r"points 3\."):
        insdel.curves(bad, X, R, A)  # row 1 of the only model call: pair 0's x
    with pytest.raises(TypeError, match="torch.nn.Module"):
        insdel.curves(42, X, R, A)


def test_evaluate_errors():
    X, R, A = _ok()
    with pytest.raises(ValueError, match=r"attributions\['m'\] must have shape"):
        insdel.evaluate(lin, X, R, {"m": A[:2]})
    with pytest.raises(ValueError, match=r"attributions\['m'\] contains non-finite"):
        A2 = A.copy()
        A2[0, 0] = np.nan
        insdel.evaluate(lin, X, R, {"m": A2})
    with pytest.raises(ValueError, match="unknown method"):
        insdel.evaluate(lin, X, R, {"m": A}).summary(differences=[("m", "zz")])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 70), B=st.integers(1, 6), seed=st.integers(0, 2**16),
       modes=st.sampled_from([("insertion",), ("deletion",), ("insertion", "deletion")]))
def test_single_ordering_fast_path_equals_hashed_path(n, B, seed, modes):
    """K = 1 takes a hash-free path; it must give the curves and row count of the general path."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(B, n)).astype(float)   # many x_j == r_j: features outside D
    R = rng.integers(0, 2, size=(B, n)).astype(float)
    w = rng.normal(size=n)

    def f(Z):
        return np.tanh(Z @ w) + Z[:, 0] * Z[:, -1]

    o = np.argsort(rng.random((B, 1, n)), axis=-1)
    one = trace(f, X, R, o, modes=modes)
    two = trace(f, X, R, np.concatenate([o, o], axis=1), modes=modes)  # K = 2: hashed path
    for m in modes:  # the paths lay rows out differently: BLAS may round a row differently
        np.testing.assert_allclose(one.curves[m][:, 0], two.curves[m][:, 0], rtol=1e-13,
                                   atol=1e-13)
        for b in range(B):
            np.testing.assert_allclose(one.curves[m][b, 0], brute_curve(f, X[b], R[b], o[b, 0], m))
    assert one.n_unique == two.n_unique


@pytest.mark.parametrize("K", [1, 3])
def test_modes_in_any_order(K):
    """``modes`` in any order gives each mode its own curves (the engine traces insertion first;
    the result's dict follows the order asked); a mode named twice is an error."""
    rng = np.random.default_rng(K)
    B, n = 4, 6
    X, R = rng.normal(size=(B, n)), rng.normal(size=(B, n))
    w = rng.normal(size=n)

    def f(Z):
        return np.tanh(Z @ w) + Z[:, 0] * Z[:, 1]

    o = np.argsort(rng.random((B, K, n)), axis=-1)
    both = trace(f, X, R, o)
    swapped = trace(f, X, R, o, modes=("deletion", "insertion"))
    assert list(swapped.curves) == ["deletion", "insertion"]
    for m in MODES:
        np.testing.assert_array_equal(swapped.curves[m], both.curves[m])
        np.testing.assert_array_equal(trace(f, X, R, o, modes=(m,)).curves[m], both.curves[m])
        for b in range(B):
            np.testing.assert_allclose(both.curves[m][b, 0], brute_curve(f, X[b], R[b], o[b, 0], m))
    with pytest.raises(ValueError, match="at most once"):
        trace(f, X, R, o, modes=("insertion", "insertion"))
    A = {"a": rng.normal(size=(B, n))}  # evaluate reads the curves by mode name
    ev, ev_swapped = (insdel.evaluate(f, X, R, A, modes=md, n_random=2)
                      for md in (MODES, ("deletion", "insertion")))
    for m in MODES:
        np.testing.assert_array_equal(ev_swapped.abc_array("a", m), ev.abc_array("a", m))


def test_order_options_signed_absolute_ascending(tmp_path):
    """order= everywhere an ordering comes from attributions (issue 16): the paper's signed order
    (default), MoRF by |a| and LeRF ascending; ties by feature index; curves and evaluate agree."""
    A = np.array([[0.5, -2.0, 1.0, 0.5]])
    assert insdel.orderings(A).tolist() == [[2, 0, 3, 1]]
    assert insdel.orderings(A, order="absolute").tolist() == [[1, 2, 0, 3]]
    assert insdel.orderings(A, order="ascending").tolist() == [[1, 0, 3, 2]]
    with pytest.raises(ValueError, match="order must be one of"):
        insdel.orderings(A, order="MoRF")
    rng = np.random.default_rng(5)
    n = 6
    w = rng.normal(size=n)
    f = lambda Z: np.tanh(Z @ w)  # noqa: E731
    X, R = rng.normal(size=(20, n)), rng.normal(size=(20, n))
    A = rng.normal(size=(20, n))
    for order in ("signed", "absolute", "ascending"):
        c = insdel.curves(f, X, R, A, mode="deletion", order=order)
        want = insdel.curves(f, X, R, -np.argsort(insdel.orderings(A, order=order), axis=1)
                             .astype(float), mode="deletion")
        np.testing.assert_array_equal(c, want)
        ev = insdel.evaluate(f, X, R, {"m": A}, order=order, n_random=0)
        assert ev.order == order
        np.testing.assert_array_equal(ev.curves["deletion"][:, 0], c)
    with pytest.raises(ValueError, match="order must be one of"):
        insdel.evaluate(f, X, R, {"m": A}, order="abs")
    ev.save(tmp_path)
    assert insdel.Evaluation.load(tmp_path).order == "ascending"


# ------------------------------------------------ the chain path (K = 1): kernels, runs, threads


def _curves_module():
    """The module ``insdel.curves`` (the package attribute of that name is the function)."""
    return importlib.import_module("insdel.curves")


def _chain_inputs(rng, B, n, dtype=np.float32):
    C = _curves_module()

    X = rng.integers(0, 3, size=(B, n)).astype(dtype)  # many x_j == r_j
    R = rng.integers(0, 3, size=(B, n)).astype(dtype)
    diff = X != R
    starts, members = np.arange(n + 1), np.arange(n)
    nd = C._row_counts(diff)
    o = np.argsort(rng.random((B, 1, n)), axis=-1).astype(np.int64)
    return C, X, R, diff, starts, members, nd, o


def _modes_at(modes: tuple) -> tuple:
    """(insertion traced, deletion traced) as the row kernels take them: each traced mode's index
    on the ids' mode axis (insertion first), None for a mode not traced."""
    ins, dele = modes
    return (0 if ins else None), ((1 if ins else 0) if dele else None)


@pytest.mark.parametrize("modes", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("nblk", [1, 5])
def test_chain_fast_kernel_equals_general_kernel(modes, nblk):
    """The specialised kernel (one feature per unit, every step recorded) writes the same rows
    (in its own order within a pair) as the general one, serially and in parallel blocks, and its
    gathering, which reads each point's row from the ordering (no ids), finds the same points as
    the general kernel's ids; the closed-form row counts are the general kernel's counts."""
    from insdel.groups import full_positions

    rng = np.random.default_rng(nblk)
    B, n = 37, 11
    C, X, R, diff, starts, members, nd, o = _chain_inputs(rng, B, n)
    M = sum(modes)
    pos = full_positions(n)
    idx_a = np.full((B, 1, M, n + 1), -1, dtype=np.int32)
    counts = np.empty(B, dtype=np.int64)
    args = (pos, starts, members, False, *_modes_at(modes))
    C._chain(nblk, o, X, R, diff, nd, *args, False, 0, counts, np.empty((0, n), np.float32),
             idx_a)
    np.testing.assert_array_equal(counts, 1 + (nd > 0) + M * np.maximum(nd - 1, 0))
    starts = C._full_chain_starts(nd, M)  # the chain walk's closed form
    np.testing.assert_array_equal(starts, np.concatenate([[0], np.cumsum(counts)]))
    base = 5  # global row ids start at ``base`` in this buffer
    offs = starts[:-1] + base
    rows_a = np.full((counts.sum(), n), np.nan, dtype=np.float32)
    rows_b = rows_a.copy()
    C._chain(nblk, o, X, R, diff, nd, *args, True, base, offs, rows_a, idx_a)
    C._chain_fast(nblk, o, X, R, diff, nd, *_modes_at(modes), offs, base, rows_b)
    # each point's global row id, as the fast gathering finds it (values: the ids themselves)
    ids = np.arange(base + counts.sum(), dtype=np.float64)
    got = np.empty((M, B, 1, n + 1))
    fr, fx = np.empty(B), np.empty(B)
    assert C._gather_chain(nblk, ids, offs, o, diff, got, nd, *_modes_at(modes), fr, fx) == 0
    idx_b = np.moveaxis(got, 0, 2).astype(np.int64) - offs[:, None, None, None]
    for b in range(B):  # the same points (the fast kernel orders a pair's rows otherwise)
        at = offs[b] - base
        np.testing.assert_array_equal(rows_a[at + idx_a[b]], rows_b[at + idx_b[b]])
        pa, pb = rows_a[at:at + counts[b]], rows_b[at:at + counts[b]]
        np.testing.assert_array_equal(pa[np.lexsort(pa.T)], pb[np.lexsort(pb.T)])  # same rows
    np.testing.assert_array_equal(idx_a[..., 0], idx_b[..., 0])  # r and x: local rows 0 and 1
    np.testing.assert_array_equal(fr, offs)  # f(r): row 0; f(x): row 1 (row 0 when x == r)
    np.testing.assert_array_equal(fx, offs + (nd > 0))
    assert not np.isnan(rows_a).any() and not np.isnan(rows_b).any() and idx_a.min() == 0
    assert (idx_a.max(axis=(1, 2, 3)) < counts).all()  # local ids within each pair's rows


@pytest.mark.parametrize("row_bytes", [1 << 23, 2000])
def test_parallel_blocks_and_runs(monkeypatch, row_bytes):
    """Enough pairs for parallel blocks, and (with a small row budget) many runs of pairs, each
    evaluated by its own model call, on both paths (K = 1 chain, K = 3 hashed): the curves are the
    definition's, and the chain path's equal the hashed path's."""
    C = _curves_module()

    monkeypatch.setattr(C, "ROW_BUFFER_BYTES", row_bytes)
    rng = np.random.default_rng(3)
    B, n = 400, 9
    X = rng.integers(0, 2, size=(B, n)).astype(float)
    R = rng.integers(0, 2, size=(B, n)).astype(float)
    f = smooth_f(4, n)
    o = np.argsort(rng.random((B, 3, n)), axis=-1)
    model = insdel.as_model(f, batch_size=64)
    one = trace(model, X, R, o[:, :1])
    three = trace(model, X, R, o)  # hashed path
    assert three.n_unique >= one.n_unique
    assert three.n_unique == trace(model, X, R, o, chunk_size=10**9).n_unique
    for m in ("insertion", "deletion"):  # other batch shapes: BLAS may round differently
        np.testing.assert_allclose(one.curves[m][:, 0], three.curves[m][:, 0], rtol=1e-13,
                                   atol=1e-13)
    for b in (0, 1, B // 2, B - 1):
        for m in ("insertion", "deletion"):
            for k in range(3):
                np.testing.assert_allclose(three.curves[m][b, k],
                                           brute_curve(f, X[b], R[b], o[b, k], m))
    for res in (one, three):
        np.testing.assert_allclose(res.fx, f(X))
        np.testing.assert_allclose(res.fr, f(R))


def test_workspace_reused_and_nested_calls_safe():
    """Scratch arrays are kept between calls (no fresh pages per call) and freed on request; a
    model that itself traces curves (a nested call, while the workspace is in use) gets fresh
    arrays, so the outer call's rows and ids are not overwritten."""
    C = _curves_module()
    rng = np.random.default_rng(5)
    B, n = 50, 6
    X, R = rng.normal(size=(B, n)), rng.normal(size=(B, n))
    f = smooth_f(6, n)
    o = np.argsort(rng.random((B, 2, n)), axis=-1)
    ref = trace(f, X, R, o)
    assert C._workspace.arrays and not C._workspace.busy

    def nested(Z):  # traces other curves on every call
        trace(f, X[:3], R[:3] + 1.0, o[:3])
        return f(Z)

    got = trace(insdel.as_model(nested, batch_size=17), X, R, o)
    for m in ("insertion", "deletion"):
        np.testing.assert_allclose(got.curves[m], ref.curves[m], rtol=1e-13, atol=1e-13)
    C.clear_workspace()
    assert not C._workspace.arrays


@pytest.mark.parametrize("n", [5, 64, 70])  # the bit-mask check (m <= 64) and the stamped one
@pytest.mark.parametrize("parallel", [False, True])
def test_pass_over_pairs_checks_orderings_and_values(monkeypatch, n, parallel):
    """trace's one pass over the pairs (:func:`_prepare`) finds every ordering that is not a
    permutation (an entry out of range either side, a repeat) and every NaN or inf, serially and
    in parallel blocks; the errors name the ordering and entry, or the row and feature; it leaves
    valid inputs alone and reports the differing columns."""
    C = _curves_module()
    monkeypatch.setattr(C, "PREPARE_PARALLEL_MIN", 0 if parallel else 1 << 40)
    rng = np.random.default_rng(n)
    B, K = 9, 3
    X, R = rng.normal(size=(B, n)), rng.normal(size=(B, n))
    X[:, 1] = R[:, 1]
    o = np.argsort(rng.random((B, K, n)), axis=-1)
    f = lambda Z: Z.sum(1)  # noqa: E731
    res = trace(f, X, R, o, modes=("insertion",))
    np.testing.assert_allclose(res.curves["insertion"][:, :, -1], np.repeat(X.sum(1)[:, None], K, 1))
    diff = np.empty((B, n), bool)
    nd = np.empty(B, np.int64)
    nblk = 4 if parallel else 1
    assert C._prepare(nblk, X, R, o, True, diff, nd) == (True, True)
    np.testing.assert_array_equal(diff, X != R)
    np.testing.assert_array_equal(nd, (X != R).sum(1))
    for value, pattern in [(-1, r"orders\[7, 2\].*out of range: -1"),
                           (n, rf"orders\[7, 2\].*out of range: {n}"),
                           (int(o[7, 2, 0]), r"orders\[7, 2\].*repeated")]:
        bad = o.copy()
        bad[7, 2, 3] = value
        assert C._prepare(nblk, X, R, bad, True, diff, nd) == (True, False)
        with pytest.raises(ValueError, match=pattern):
            trace(f, X, R, bad)
    for arr, val in [("X", np.nan), ("R", np.inf), ("R", -np.inf)]:
        Xb, Rb = X.copy(), R.copy()
        (Xb if arr == "X" else Rb)[5, n - 1] = val
        assert C._prepare(nblk, Xb, Rb, o, True, diff, nd)[0] is False
        with pytest.raises(ValueError, match=rf"{arr} contains .*row.* 5"):
            trace(f, Xb, Rb, o)


def _index_sets(C, kind, nblk, o, X, R, diff, pos, starts, members, grouped, modes, cap, *,
                id_cap=None, as_engine=True):
    """The hashed walk's kernel ``kind`` over all pairs, as the engine calls it (the direct table
    with ``lgT=None``; members None for one-column units; positions None when every step is
    recorded); returns counts, idx (-1 where unset), first and rows (NaN where unwritten).
    ``id_cap``: the cap the kernel is told (the direct table's id bits), when not ``cap``;
    ``as_engine=False``: the positions passed as an array even when they are every step."""
    B, K, m = o.shape
    counts, first = np.empty(B, np.int64), np.empty(B, np.int64)
    idx = np.full((B, K, sum(modes), len(pos)), -1, np.int32)
    rows = np.full((B * cap, X.shape[1]), np.nan, np.float32)
    lgT = int(np.ceil(np.log2(2 * cap)))
    tail = (cap if id_cap is None else id_cap, counts, idx, first, rows)
    if kind == "zobrist":
        C._hash_rows(nblk, kind, o, X, R, diff, C._zobrist(m), pos, starts, members, grouped,
                     *_modes_at(modes), 1 << lgT, np.zeros((B * cap, (m + 63) // 64), np.uint64),
                     *tail)
    else:
        full = as_engine and len(pos) == m + 1
        C._hash_rows(nblk, kind, o, X, R, diff, None if full else pos, starts,
                     members if grouped else None, *_modes_at(modes),
                     None if kind == "direct" else lgT,
                     *tail)
    return counts, idx, first, rows


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("nblk", [1, 3])
@pytest.mark.parametrize("modes", [(True, True), (True, False), (False, True)])
def test_set_kernels_agree(grouped, full, nblk, modes):
    """The hashed walk's three kernels (a direct table up to 16 units, one hashed word up to 64,
    Zobrist hashing beyond) give every curve point the same hybrid row, the same number of
    distinct rows per pair and the same region layout, with groups, every step or partial
    positions and each choice of modes, serially and in parallel blocks; each block's rows follow
    one another from its first pair's upper bound, a pair's rows are distinct, and every point's
    row is its set's hybrid. (The direct and one-word kernels number a pair's rows in their own
    walk order.) Every step recorded, the direct and one-word kernels' compiled case for it
    (positions None) equals their general one given the positions 0, 1, ..., m."""
    from insdel.groups import check_groups

    C = _curves_module()
    rng = np.random.default_rng(11 + nblk)
    B, n, K = 23, 10, 4
    X = rng.integers(0, 3, size=(B, n)).astype(float)  # many x_j == r_j
    R = rng.integers(0, 3, size=(B, n)).astype(float)
    grp = check_groups([0, 0, 1, 2, 2, 2, 3, 4, 5, 5], n) if grouped else None
    diff = np.ascontiguousarray(grp.reduce_any(X != R)) if grouped else X != R
    m = diff.shape[1]
    starts, members = (grp.starts, grp.members) if grouped else C._identity_units(n)
    pos = np.arange(m + 1) if full else np.array([0, 1, 3, m])
    o = np.argsort(rng.random((B, K, m)), axis=-1)
    M = sum(modes)
    cap = 2 + K * M * len(pos)
    assert C._set_kernel(m, cap) == "direct" and C._set_kernel(17, cap) == "word"
    assert C._set_kernel(65, cap) == "zobrist"
    out = {kind: _index_sets(C, kind, nblk, o, X, R, diff, pos, starts, members, grouped, modes,
                             cap) for kind in ("direct", "word", "zobrist")}
    assert all((idx >= 0).all() for _, idx, _, _ in out.values())  # every point has its row
    if full:  # the positions-None case against the general one
        for kind in ("direct", "word"):
            general = _index_sets(C, kind, nblk, o, X, R, diff, pos, starts, members, grouped,
                                  modes, cap, as_engine=False)
            for got, want in zip(out[kind], general, strict=True):
                np.testing.assert_array_equal(got, want)
    points = {kind: rows[(first[:, None, None, None] + idx).ravel()].reshape(*idx.shape, n)
              for kind, (counts, idx, first, rows) in out.items()}
    for kind in ("direct", "word"):
        np.testing.assert_array_equal(out[kind][0], out["zobrist"][0])  # counts
        np.testing.assert_array_equal(out[kind][2], out["zobrist"][2])  # layout
        np.testing.assert_array_equal(points[kind], points["zobrist"])  # every point's row
    ins_del = [ins for ins, on in zip((True, False), modes, strict=True) if on]
    for kind in ("direct", "word", "zobrist"):
        counts, idx, first, rows = out[kind]
        for i in range(nblk):  # block i: its pairs' rows one after the other from its bound
            lo, hi = i * B // nblk, (i + 1) * B // nblk
            assert first[lo] == lo * cap
            np.testing.assert_array_equal(first[lo + 1:hi], (first + counts)[lo:hi - 1])
        for b in range(B):
            pts = rows[first[b]:first[b] + counts[b]]
            assert not np.isnan(pts).any() and len(np.unique(pts, axis=0)) == counts[b]
            for k in range(K):
                S = np.zeros(m, bool)
                for s, p in enumerate(pos):  # point s: units o[b, k, :p] moved
                    S[:] = False
                    S[o[b, k, :p]] = True
                    cols = grp.expand(S) if grouped else S
                    for mi, ins in enumerate(ins_del):
                        want = np.where(cols if ins else ~cols, X[b], R[b]).astype(np.float32)
                        np.testing.assert_array_equal(points[kind][b, k, mi, s], want)


def test_direct_kernel_reuses_its_table_when_pair_tags_run_out():
    """The direct table's entries carry a pair tag in the bits the local ids leave free; when the
    tags run out (2,047 pairs with ids of 20 bits) the table is cleared and the walk goes on: the
    rows and ids equal the one-word kernel's on every pair."""
    C = _curves_module()
    rng = np.random.default_rng(5)
    B, n, K = 2100, 5, 3
    R = rng.normal(size=(B, n))
    X = R.copy()
    X[:, 0] += 1.0  # the pairs between differ in feature 0 only: they leave the first pair's
    X[0] += 1.0  # entries in place, which the pairs after the tags run out would then misread
    X[2047:] += 1.0  # (pair 2047 is the first with a reused tag)
    diff = X != R
    o = np.argsort(rng.random((B, K, n)), axis=-1)
    starts, members = C._identity_units(n)
    cap = 2 + K * 2 * (n + 1)
    got = {}
    for kind, id_cap in (("direct", (1 << 20) - 1), ("word", cap)):  # 2**20 - 1: 20 id bits
        counts, idx, first, rows = _index_sets(C, kind, 1, o, X, R, diff, np.arange(n + 1),
                                               starts, members, False, (True, True), cap,
                                               id_cap=id_cap)  # serial: rows from 0 on
        got[kind] = counts, rows[(first[:, None, None, None] + idx).ravel()]
    np.testing.assert_array_equal(got["direct"][0], got["word"][0])
    np.testing.assert_array_equal(got["direct"][1], got["word"][1])


@pytest.mark.parametrize("grouped", [False, True])
def test_one_word_kernel_beyond_32_units(grouped):
    """Units 32..63 in the one-word kernel (the bits of the upper half of the word): the same
    points and counts as the Zobrist kernel at m = 40, and trace's curves equal NumPy's hybrids."""
    from insdel.groups import check_groups

    C = _curves_module()
    rng = np.random.default_rng(40)
    B, K = 9, 5
    n = 44 if grouped else 40
    grp = check_groups(np.r_[np.arange(40), [0, 7, 33, 39]], n) if grouped else None
    m = 40
    X = rng.normal(size=(B, n))
    R = X.copy()
    R[:, rng.random(n) < 0.8] += 1.0  # about 32 differing columns
    diff = np.ascontiguousarray(grp.reduce_any(X != R)) if grouped else X != R
    starts, members = (grp.starts, grp.members) if grouped else C._identity_units(n)
    o = np.argsort(rng.random((B, K, m)), axis=-1)
    pos = np.arange(m + 1)
    cap = 2 + K * 2 * (m + 1)
    assert C._set_kernel(m, cap) == "word"
    got = {}
    for kind in ("word", "zobrist"):
        counts, idx, first, rows = _index_sets(C, kind, 1, o, X, R, diff, pos, starts, members,
                                               grouped, (True, True), cap)
        got[kind] = counts, rows[(first[:, None, None, None] + idx).ravel()]
    np.testing.assert_array_equal(got["word"][0], got["zobrist"][0])
    np.testing.assert_array_equal(got["word"][1], got["zobrist"][1])
    f = lambda Z: np.sin(Z).sum(1) + Z[:, 0] * Z[:, -1]  # noqa: E731
    res = trace(f, X, R, o, groups=grp)
    for b in (0, B - 1):
        for k in range(K):
            S = np.zeros(m, bool)
            for s in range(m + 1):
                S[:] = False
                S[o[b, k, :s]] = True
                cols = grp.expand(S) if grouped else S
                for mode, mask in (("insertion", cols), ("deletion", ~cols)):
                    want = f(np.where(mask, X[b], R[b])[None])[0]
                    assert abs(res.curves[mode][b, k, s] - want) < 1e-12


@pytest.mark.parametrize("modes", [("insertion", "deletion"), ("deletion",), ("insertion",),
                                   ("deletion", "insertion")])
def test_one_run_path_equals_the_chain_walk(monkeypatch, modes):
    """K = 1 with every step recorded takes the one-run path (rows, one adapter call, gathering);
    forced onto the chain walk (a row budget too small for one run) it gives the same curves,
    end values, counts and model calls, pairs with x == r and features outside D included."""
    C = _curves_module()

    rng = np.random.default_rng(7)
    B, n = 300, 9
    X = rng.integers(0, 3, size=(B, n)).astype(float)
    R = rng.integers(0, 3, size=(B, n)).astype(float)
    R[:5] = X[:5]  # x == r
    orders = np.argsort(rng.random((B, n)), axis=-1)
    f = smooth_f(5, n)
    calls = []
    taken = []
    one_run = C._trace_one_run

    def spy(*a, **k):
        out = one_run(*a, **k)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(C, "_trace_one_run", spy)
    m1 = insdel.as_model(lambda Z: (calls.append(len(Z)), f(Z))[1], batch_size=100_000)
    a = trace(m1, X, R, orders, modes=modes)
    assert taken == [True] and len(calls) == 1
    monkeypatch.setattr(C, "ROW_BUFFER_BYTES", 8 * n * 50)  # 50 rows: many runs
    m2 = insdel.as_model(f, batch_size=1)
    b = trace(m2, X, R, orders, modes=modes)
    assert taken == [True, False]
    assert tuple(a.curves) == tuple(b.curves) == modes
    for mo in modes:  # the same points (f's matrix products round by batch size: last ulp)
        np.testing.assert_allclose(a.curves[mo], b.curves[mo], rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(a.curves[mo][..., 0] if mo == "insertion" else
                                   a.curves[mo][..., -1], np.broadcast_to(f(R)[:, None], (B, 1)),
                                   rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(a.fx, b.fx, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(a.fr, b.fr, rtol=1e-13, atol=1e-13)
    assert (a.n_points, a.n_unique) == (b.n_points, b.n_unique) == (B * len(modes) * (n + 1),
                                                                    calls[0])
    assert set(a.timings) == {"bookkeeping_s", "model_s"}


# -- curves(): a labelled A is matched by name -----------------------------------------------------
def _f3(Z):
    return Z[:, 0] + 2.0 * Z[:, 1] * Z[:, 2]


@pytest.fixture(scope="module")
def four_pairs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 3)), rng.normal(size=(4, 3))


def test_curves_aligns_dataframe_attributions(four_pairs):
    X, R = four_pairs
    cols = ["a", "b", "c"]
    Xd, Rd = pd.DataFrame(X, columns=cols), pd.DataFrame(R, columns=cols)
    A = np.array([[3.0, 2.0, 1.0], [1.0, 3.0, 2.0], [2.0, 1.0, 3.0], [0.0, 1.0, 2.0]])
    Ad = pd.DataFrame(A, columns=cols)[["c", "a", "b"]]
    np.testing.assert_array_equal(insdel.curves(_f3, Xd, Rd, Ad), insdel.curves(_f3, X, R, A))
    with pytest.raises(ValueError, match="labelled"):
        insdel.curves(_f3, Xd, Rd, pd.DataFrame(A, columns=["a", "b", "z"]))


# -- progress= of trace: None, True and False draw the same curves --------------------------------
def _sum_pairs():
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    orders = np.tile(np.arange(3), (4, 1))
    return X, R, orders


def _sum(X):
    return X.sum(axis=1)


@pytest.mark.parametrize("ok", [None, True, False, np.True_, np.False_])
def test_trace_accepts_none_true_false(ok):
    X, R, orders = _sum_pairs()
    res = insdel.trace(_sum, X, R, orders, progress=ok)
    ref = insdel.trace(_sum, X, R, orders, progress=False)
    for mode in res.curves:
        np.testing.assert_array_equal(res.curves[mode], ref.curves[mode])


