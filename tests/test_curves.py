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
from insdel.tracing import MODES, orderings, trace

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
def test_chain_kernel_equals_set_kernel(n, B, seed, modes):
    """K = 1 takes the chain kernel (no index); the same ordering twice (K = 2) takes the set
    kernel: the same curves and the same number of distinct rows."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(B, n)).astype(float)   # many x_j == r_j: features outside D
    R = rng.integers(0, 2, size=(B, n)).astype(float)
    w = rng.normal(size=n)

    def f(Z):
        return np.tanh(Z @ w) + Z[:, 0] * Z[:, -1]

    o = np.argsort(rng.random((B, 1, n)), axis=-1)
    one = trace(f, X, R, o, modes=modes)
    two = trace(f, X, R, np.concatenate([o, o], axis=1), modes=modes)  # K = 2: set kernel
    for m in modes:  # the kernels lay rows out differently: BLAS may round a row differently
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
    with pytest.raises(ValueError, match="order: unknown ordering"):
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
    with pytest.raises(ValueError, match="order: unknown ordering"):
        insdel.evaluate(f, X, R, {"m": A}, order="abs")
    ev.save(tmp_path)
    assert insdel.Evaluation.load(tmp_path).order == "ascending"


# ------------------------------------------ the row kernels against the definition (brute force)


def _curves_module():
    """The module ``insdel.tracing`` (the curve engine; ``insdel.curves`` is its function)."""
    return importlib.import_module("insdel.tracing")


def _kernels():
    return importlib.import_module("insdel._curve_kernels")


def rowwise_f(seed: int, n: int):
    """A nonlinear model whose value on a row does not depend on the other rows of its batch
    (element-wise operations and a sum along each row), so the engine's curves can be compared
    with the definition's exactly, whatever the batches."""
    rng = np.random.default_rng(seed)
    a, c = rng.normal(size=n), rng.normal(size=n)

    def f(Z):
        Z = np.asarray(Z, dtype=np.float64)
        return (np.sin(Z * a) * c).sum(1) + Z[:, 0] * Z[:, -1] - np.tanh(Z[:, n // 2]) ** 2

    return f


def point(x, r, order, p, mode, grp=None):
    """The definition: the curve point after ``p`` units of ``order`` moved (conventions: Curves;
    a group moves all its columns)."""
    S = np.zeros(len(order), bool)
    S[order[:p]] = True
    cols = S if grp is None else grp.expand(S)
    return np.where(cols if mode == "insertion" else ~cols, x, r)


def canonical(order, p, diff, mode):
    """The canonical set of a curve point (the units of D taken from x), as a frozenset."""
    S = set(order[:p].tolist()) & set(np.flatnonzero(diff).tolist())
    return frozenset(S if mode == "insertion" else set(np.flatnonzero(diff).tolist()) - S)


def _tie_pairs(rng, B, n):
    """Pairs with many x_j == r_j (values in {0, 1, 2}; -0.0 against 0.0 in one column, equal
    as numbers), and pair 0 with x == r."""
    X = rng.integers(0, 3, size=(B, n)).astype(float)
    R = rng.integers(0, 3, size=(B, n)).astype(float)
    X[R == 0] *= -1.0  # x = -0.0 where both are 0: equal, so outside D, and r's zero is kept
    R[0] = X[0]
    return X, R


def _engine_args(grp, n, pos, modes):
    """Positions, units and mode indices as trace passes them to the row kernels."""
    C = _curves_module()
    starts, members = (grp.starts, grp.members) if grp is not None else C._identity_units(n)
    ins_at = 0 if modes[0] else -1
    del_at = (1 if modes[0] else 0) if modes[1] else -1
    return (C._read_only(np.asarray(pos, np.int64)), C._read_only(starts), C._read_only(members),
            ins_at, del_at)


def _share_prefix(rng, o, k, p, *, reverse=False):
    """Ordering k of every pair starts with ordering 0's first ``p`` units (reversed: the same
    set after p steps, reached another way), the rest in a random order."""
    for b in range(o.shape[0]):
        head = o[b, 0, :p][::-1] if reverse else o[b, 0, :p]
        rest = np.setdiff1d(np.arange(o.shape[2]), head)
        o[b, k] = np.r_[head, rng.permutation(rest)]


_MODES = [(True, True), (True, False), (False, True)]
_GROUPS = [0, 0, 1, 2, 2, 2, 3, 4, 5, 5]  # n = 10 columns in m = 6 groups


def _expected_rows(x, r, o, pos, diff, modes, grp, *, blocked=False):
    """The distinct rows of one pair in the order the kernels write them: r, x (when x != r),
    then each new canonical set in walk order (ordering by ordering, point by point, insertion's
    before deletion's); ``blocked`` (the chain kernel's other layout): all of insertion's new
    sets before deletion's. Returns the rows and the canonical set -> local id map."""
    names = [mo for mo, on in zip(MODES, modes, strict=True) if on]
    D = frozenset(np.flatnonzero(diff).tolist())
    row = {frozenset(): r}
    if D:
        row[D] = x
    ends = list(row)
    new = {mo: [] for mo in names}
    for k in range(o.shape[0]):
        for p in pos:
            for mo in names:
                c = canonical(o[k], p, diff, mo)
                if c not in row:
                    row[c] = point(x, r, o[k], p, mo, grp)
                    new[mo].append(c)
    order = ends + (sum(new.values(), []) if blocked else list(row)[len(ends):])
    return np.array([row[c] for c in order]), {c: i for i, c in enumerate(order)}


@pytest.mark.parametrize("modes", _MODES)
@pytest.mark.parametrize("nblk", [1, 5])
@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("interleave", [True, False])
def test_chain_kernel_rows_ids_and_counts(modes, nblk, grouped, full, interleave):
    """The chain kernel (one ordering per pair), serially and in parallel blocks, with groups,
    every step or some positions, each choice of modes and both layouts: the counting pass gives
    each pair's number of distinct rows (the closed form 1 + [x != r] + M (|D| - 1) when every
    step is recorded); the written rows are each pair's distinct points in the layout stated
    (r, x, then the inner rows alternating by mode or insertion's first), at the offsets given,
    and every curve point's id names the definition's hybrid."""
    from insdel.groups import check_groups

    K_ = _kernels()
    rng = np.random.default_rng(nblk + 7 * interleave)
    B, n = 37, 10
    X, R = _tie_pairs(rng, B, n)
    grp = check_groups(_GROUPS, n) if grouped else None
    diff = np.ascontiguousarray(grp.reduce_any(X != R)) if grouped else X != R
    m = diff.shape[1]
    nd = diff.sum(1)
    pos = np.arange(m + 1) if full else np.array([0, 1, 3, m - 1])
    o = np.argsort(rng.random((B, 1, m)), axis=-1)
    M, S = sum(modes), len(pos)
    args = _engine_args(grp, n, pos, modes)
    rows = np.full((0, n), np.nan, np.float32)
    idx = np.full((B, 1, M, S), -1, np.int32)
    counts = np.empty(B, np.int64)
    K_.write_chain_rows(nblk, o, X, R, diff, nd, *args, interleave, False, 0, counts, rows, idx)
    if full:
        np.testing.assert_array_equal(counts, 1 + (nd > 0) + M * np.maximum(nd - 1, 0))
    base = 5  # global row ids start at ``base`` in this buffer
    heads = np.concatenate([[0], np.cumsum(counts)]) + base
    rows = np.full((counts.sum(), n), np.nan, np.float32)
    K_.write_chain_rows(nblk, o, X, R, diff, nd, *args, interleave, True, base, heads, rows, idx)
    for b in range(B):
        got = rows[heads[b] - base:heads[b + 1] - base]
        want, ids = _expected_rows(X[b], R[b], o[b], pos, diff[b], modes, grp,
                                   blocked=not interleave)
        np.testing.assert_array_equal(got, want.astype(np.float32))
        for mi, mo in enumerate(mo for mo, on in zip(MODES, modes, strict=True) if on):
            for s, p in enumerate(pos):
                assert idx[b, 0, mi, s] == ids[canonical(o[b, 0], p, diff[b], mo)]
                np.testing.assert_array_equal(got[idx[b, 0, mi, s]],
                                              point(X[b], R[b], o[b, 0], p, mo, grp)
                                              .astype(np.float32))


def _set_rows(o, X, R, diff, args, lgT, cap, *, nblk=1, modes=(True, True), n_rows=None):
    """The set kernel over all pairs as the engine calls it; returns counts, idx, first, rows
    (NaN where unwritten; ``n_rows`` of them, default B ``cap``)."""
    B, K, m = o.shape
    S = args[0].shape[0]
    counts, first = np.empty(B, np.int64), np.empty(B, np.int64)
    idx = np.full((B, K, sum(modes), S), -1, np.int32)
    rows = np.full((B * cap if n_rows is None else n_rows, X.shape[1]), np.nan, np.float32)
    _kernels().write_set_rows(nblk, o, X, R, diff, *args, lgT, cap, counts, idx, first, rows)
    return counts, idx, first, rows


@pytest.mark.parametrize("units", ["m=6 groups", "m=10", "m=40", "m=70", "m=130 groups"])
@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("nblk", [1, 3])
@pytest.mark.parametrize("modes", _MODES)
def test_set_kernel_rows_ids_and_counts(units, full, nblk, modes):
    """The set kernel (K orderings per pair), with its direct table (up to 16 units) and its hash
    table (any m: one word up to 64 units, several beyond), serially and in parallel blocks,
    with groups, every step or some positions, each choice of modes: each pair's rows are its
    distinct canonical sets' hybrids, r and x first, then in walk order (insertion's before
    deletion's at a point); each block's rows follow one another from its first pair's upper
    bound; every curve point's id names the definition's hybrid; the direct table and the hash
    table give the same rows, ids and counts."""
    from insdel.groups import check_groups

    K_ = _kernels()
    m = int(units.split()[0][2:])
    grouped = units.endswith("groups")
    n = {6: 10, 130: 140}.get(m, m)
    rng = np.random.default_rng(m + 11 * nblk)
    B, K = 23, 4
    X, R = _tie_pairs(rng, B, n)
    if m > 16:  # fewer ties: long walks with many distinct sets
        R[1:] = np.where(rng.random((B - 1, n)) < 0.2, X[1:], R[1:] + 0.5)
    grp = None
    if grouped:
        grp = check_groups(_GROUPS if m == 6 else np.r_[np.arange(m), rng.integers(0, m, n - m)],
                           n)
    diff = np.ascontiguousarray(grp.reduce_any(X != R)) if grouped else X != R
    assert diff.shape[1] == m
    pos = np.arange(m + 1) if full else np.array([0, 1, 3, m // 2, m])
    o = np.argsort(rng.random((B, K, m)), axis=-1)
    o[:, 1] = o[:, 0]  # orderings that coincide, and share prefixes
    _share_prefix(rng, o, 2, m // 2, reverse=True)
    args = _engine_args(grp, n, pos, modes)
    cap = 2 + K * sum(modes) * len(pos)
    lgTs = [K_.index_size(m, cap)] + ([] if m > K_.DIRECT_MAX_UNITS else [K_.index_size(65, cap)])
    assert (lgTs[0] == 0) == (m <= 16) and all(lg > 0 for lg in lgTs[1:])
    out = [_set_rows(o, X, R, diff, args, lgT, cap, nblk=nblk, modes=modes) for lgT in lgTs]
    for got in out[1:]:  # the hash table against the direct table
        for a, b in zip(got, out[0], strict=True):
            np.testing.assert_array_equal(a, b)
    counts, idx, first, rows = out[0]
    names = [mo for mo, on in zip(MODES, modes, strict=True) if on]
    for i in range(nblk):  # block i: its pairs' rows one after the other from its bound
        lo, hi = i * B // nblk, (i + 1) * B // nblk
        assert first[lo] == lo * cap
        np.testing.assert_array_equal(first[lo + 1:hi], (first + counts)[lo:hi - 1])
    for b in range(B):
        want, ids = _expected_rows(X[b], R[b], o[b], pos, diff[b], modes, grp)
        got = rows[first[b]:first[b] + counts[b]]
        np.testing.assert_array_equal(got, want.astype(np.float32))
        for k in range(K):
            for mi, mo in enumerate(names):
                for s, p in enumerate(pos):
                    assert idx[b, k, mi, s] == ids[canonical(o[b, k], p, diff[b], mo)]


def test_direct_table_reuses_itself_when_pair_tags_run_out():
    """The direct table's entries carry a pair tag in the bits the local ids leave free; when the
    tags run out (2,047 pairs with ids of 20 bits) the table is cleared and the walk goes on: the
    rows and ids equal the hash table's on every pair."""
    K_ = _kernels()
    rng = np.random.default_rng(5)
    B, n, K = 2100, 5, 3
    R = rng.normal(size=(B, n))
    X = R.copy()
    X[:, 0] += 1.0  # the pairs between differ in feature 0 only: they leave the first pair's
    X[0] += 1.0  # entries in place, which the pairs after the tags run out would then misread
    X[2047:] += 1.0  # (pair 2047 is the first with a reused tag)
    diff = X != R
    o = np.argsort(rng.random((B, K, n)), axis=-1)
    args = _engine_args(None, n, np.arange(n + 1), (True, True))
    cap = 2 + K * 2 * (n + 1)
    got = {}
    for lgT, id_cap in ((0, (1 << 20) - 1), (K_.index_size(65, cap), cap)):  # 20 id bits
        counts, idx, first, rows = _set_rows(o, X, R, diff, args, lgT, id_cap,  # serial: rows
                                             n_rows=B * cap)  # one pair after the other
        got[lgT > 0] = counts, rows[(first[:, None, None, None] + idx).ravel()]
    np.testing.assert_array_equal(got[False][0], got[True][0])
    np.testing.assert_array_equal(got[False][1], got[True][1])


def _brute_curves(f, X, R, o, pos, modes, grp):
    return {mo: np.array([[f(np.array([point(X[b], R[b], o[b, k], p, mo, grp) for p in pos]))
                           for k in range(o.shape[1])] for b in range(X.shape[0])])
            for mo in modes}


@pytest.mark.parametrize("K", [1, 3])
@pytest.mark.parametrize("m", [9, 40, 70])
@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("spec", [{}, {"step": 3}, {"max_fraction": 0.5}])
@pytest.mark.parametrize("modes", [("insertion", "deletion"), ("deletion",), ("insertion",)])
def test_trace_equals_definition_exactly(K, m, grouped, spec, modes, monkeypatch):
    """trace against the definition's points, bit for bit (a row-wise model): one and several
    orderings, up to 16 units (direct table), 17-64 (one word), beyond (several words), groups,
    steps and partial curves, each choice of modes, ties x_j == r_j, several chunks and several
    runs of pairs per chunk; f(x), f(r) and the distinct rows counted."""
    from insdel.groups import check_groups
    from insdel.groups import positions as make_positions

    C = _curves_module()
    rng = np.random.default_rng(m + K)
    n = m + 3 if grouped else m
    B = 30
    X, R = _tie_pairs(rng, B, n)
    grp = check_groups(np.r_[np.arange(m), rng.integers(0, m, n - m)], n) if grouped else None
    o = np.argsort(rng.random((B, K, m)), axis=-1)
    if K > 1:
        _share_prefix(rng, o, K - 1, m // 3)  # shared prefixes
    pos = make_positions(m, **spec) if spec else np.arange(m + 1)
    f = rowwise_f(m, n)
    M = len(modes)
    monkeypatch.setattr(C, "ROW_BUFFER_BYTES", 8 * n * 40)  # runs of a few pairs
    calls = []
    model = insdel.as_model(lambda Z: (calls.append(len(Z)), f(Z))[1], batch_size=50)
    res = trace(model, X, R, o, modes=modes, groups=grp, positions=pos if spec else None,
                chunk_size=7 * K * M * len(pos))  # chunks of 7 pairs
    want = _brute_curves(f, X, R, o, pos, modes, grp)
    for mo in modes:
        np.testing.assert_array_equal(res.curves[mo], want[mo])
    np.testing.assert_array_equal(res.fx, f(X))
    np.testing.assert_array_equal(res.fr, f(R))
    diff = (X != R) if grp is None else grp.reduce_any(X != R)
    distinct = sum(len({canonical(o[b, k], p, diff[b], mo) for k in range(K) for p in pos
                        for mo in modes} | {frozenset(), canonical(o[b, 0], 0, diff[b],
                                                                   "deletion")})
                   for b in range(B))
    assert res.n_unique == distinct == sum(calls)
    assert len(calls) >= -(-B // 7)  # at least one model call per chunk


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 80), B=st.integers(1, 5), K=st.integers(1, 4), seed=st.integers(0, 2**16),
       grouped=st.booleans(), positions=st.booleans(), chunk=st.integers(1, 4),
       modes=st.sampled_from([("insertion",), ("deletion",), ("insertion", "deletion")]))
def test_random_functions_and_orderings_equal_definition(n, B, K, seed, grouped, positions,
                                                         chunk, modes):
    """Random row-wise functions, pairs with ties, orderings (random, or sharing prefixes),
    groups and positions: trace's curves are the definition's, bit for bit, whatever the
    chunking."""
    from insdel.groups import check_groups

    rng = np.random.default_rng(seed)
    X, R = _tie_pairs(rng, B, n)
    grp = None
    if grouped and n > 1:
        grp = check_groups(rng.integers(0, max(1, n // 2), n), n)
    m = n if grp is None else grp.m
    o = np.argsort(rng.random((B, K, m)), axis=-1)
    if K > 1:
        _share_prefix(rng, o, 1, m // 2)
    pos = np.arange(m + 1)
    if positions and m > 1:
        pos = np.unique(np.r_[rng.integers(0, m + 1, 3), m])
        if len(pos) < 2:
            pos = np.array([0, m])
    f = rowwise_f(seed, n)
    res = trace(f, X, R, o, modes=modes, groups=grp, positions=pos,
                chunk_size=chunk * K * len(modes) * len(pos))
    want = _brute_curves(f, X, R, o, pos, modes, grp)
    for mo in modes:
        np.testing.assert_array_equal(res.curves[mo], want[mo])
    np.testing.assert_array_equal(res.fx, f(X))
    np.testing.assert_array_equal(res.fr, f(R))


@pytest.mark.parametrize("K", [1, 3])
@pytest.mark.parametrize("modes", [("insertion", "deletion"), ("deletion",), ("insertion",),
                                   ("deletion", "insertion")])
def test_one_run_and_many_runs_agree(monkeypatch, K, modes):
    """All pairs' rows in one run (one adapter call on the chain kernel's contiguous rows, one per
    block region on the set kernel's) against many small runs (a row budget of 50 rows): the same
    curves, end values, distinct rows and rows evaluated, pairs with x == r and units outside D
    included."""
    C = _curves_module()
    rng = np.random.default_rng(7)
    B, n = 300, 9
    X, R = _tie_pairs(rng, B, n)
    R[:5] = X[:5]  # x == r
    orders = np.argsort(rng.random((B, K, n)), axis=-1)
    f = rowwise_f(5, n)
    calls = []
    m1 = insdel.as_model(lambda Z: (calls.append(len(Z)), f(Z))[1], batch_size=100_000)
    monkeypatch.setattr(C, "PARALLEL_MIN_POINTS", 1 << 40)  # one block: one region
    a = trace(m1, X, R, orders, modes=modes)
    assert len(calls) == 1
    monkeypatch.setattr(C, "ROW_BUFFER_BYTES", 8 * n * 50)  # 50 rows: many runs
    monkeypatch.setattr(C, "PARALLEL_MIN_POINTS", 0)
    b = trace(insdel.as_model(lambda Z: (calls.append(len(Z)), f(Z))[1], batch_size=1), X, R,
              orders, modes=modes)
    assert len(calls) > B * K // 10
    assert tuple(a.curves) == tuple(b.curves) == modes
    for mo in modes:
        np.testing.assert_array_equal(a.curves[mo], b.curves[mo])
    np.testing.assert_array_equal(a.fx, b.fx)
    np.testing.assert_array_equal(a.fr, b.fr)
    np.testing.assert_array_equal(a.fr, f(R))
    assert (a.n_points, a.n_unique) == (b.n_points, b.n_unique) == (B * K * len(modes) * (n + 1),
                                                                    calls[0])
    assert sum(calls[1:]) == calls[0]
    assert set(a.timings) == {"bookkeeping_s", "model_s"}


@pytest.mark.parametrize("row_bytes", [1 << 23, 2000])
def test_parallel_blocks_and_runs(monkeypatch, row_bytes):
    """Enough pairs for parallel blocks, and (with a small row budget) many runs of pairs, each
    evaluated by its own model call, on both kernels (K = 1 chain, K = 3 set): the curves are the
    definition's, and the chain kernel's equal the set kernel's."""
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
    three = trace(model, X, R, o)  # set kernel
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
    """trace's one pass over the pairs (:func:`insdel._curve_kernels.prepare`) finds every
    ordering that is not a permutation (an entry out of range either side, a repeat) and every
    NaN or inf, serially and in parallel blocks; the errors name the ordering and entry, or the
    row and feature; it leaves valid inputs alone and reports the differing columns."""
    C, K_ = _curves_module(), _kernels()
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
    assert K_.prepare(nblk, X, R, o, True, diff, nd) == (True, True)
    np.testing.assert_array_equal(diff, X != R)
    np.testing.assert_array_equal(nd, (X != R).sum(1))
    for value, pattern in [(-1, r"orders\[7, 2\].*out of range: -1"),
                           (n, rf"orders\[7, 2\].*out of range: {n}"),
                           (int(o[7, 2, 0]), r"orders\[7, 2\].*repeated")]:
        bad = o.copy()
        bad[7, 2, 3] = value
        assert K_.prepare(nblk, X, R, bad, True, diff, nd) == (True, False)
        with pytest.raises(ValueError, match=pattern):
            trace(f, X, R, bad)
    for arr, val in [("X", np.nan), ("R", np.inf), ("R", -np.inf)]:
        Xb, Rb = X.copy(), R.copy()
        (Xb if arr == "X" else Rb)[5, n - 1] = val
        assert K_.prepare(nblk, Xb, Rb, o, True, diff, nd)[0] is False
        with pytest.raises(ValueError, match=rf"{arr} contains .*row.* 5"):
            trace(f, Xb, Rb, o)


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


