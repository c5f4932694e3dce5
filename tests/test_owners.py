"""One owner per concept (CONTRIBUTING.md): the routes that are kept agree exactly."""
import itertools

import numpy as np
import pytest

from insdel.decomposition import batch_decomposition, shapley_values, subspace_shapley
from insdel.metrics.base import rank_of
from insdel.tracing import orderings


@pytest.mark.parametrize("order", ["signed", "absolute", "ascending"])
def test_rank_of_is_orderings_on_ties(order):
    A = np.array([[1.0, -1.0, 1.0, 0.0, -1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                  [2.0, 2.0, -2.0, 1.0, 1.0, -1.0]])
    assert np.array_equal(rank_of(A, order=order), orderings(A, order=order))


def _f(Z):
    Z = np.asarray(Z, dtype=np.float64)
    return Z[:, 0] * Z[:, 1] - 0.5 * Z[:, 2] * Z[:, 3] * Z[:, 0] + np.sin(Z[:, 3]) + Z[:, 2] ** 2


def _brute(x, r):
    """Shapley values as the mean marginal contribution over all n! orderings."""
    perms = list(itertools.permutations(range(x.size)))
    phi = np.zeros(x.size)
    for p in perms:
        z = r.copy()
        prev = _f(z[None])[0]
        for j in p:
            z[j] = x[j]
            cur = _f(z[None])[0]
            phi[j] += cur - prev
            prev = cur
    return phi / len(perms)


def test_exact_shapley_routes_agree_bitwise_and_with_brute_force():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 4))
    R = rng.normal(size=(5, 4))
    R[1, 2] = X[1, 2]
    phi = shapley_values(_f, X, R)
    assert np.array_equal(phi, subspace_shapley(_f, X, R)[0])
    for b in range(len(X)):
        np.testing.assert_allclose(phi[b], _brute(X[b], R[b]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(batch_decomposition(_f, X, R).shapley(), phi,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["insertion", "deletion"])
@pytest.mark.parametrize("order", ["signed", "absolute"])
def test_metric_curves_equal_trace(mode, order):
    from insdel.metrics.base import MetricContext
    from insdel.metrics.insertion_deletion import curve_values
    from insdel.tracing import trace

    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 4))
    R = rng.normal(size=(6, 4))
    A = np.round(rng.normal(size=(6, 4)), 0)  # ties
    c, pos = curve_values(MetricContext(_f, X, R), A, mode=mode, order=order)
    tr = trace(_f, X, R, orderings(A, order=order), modes=(mode,), progress=False)
    np.testing.assert_allclose(c, tr.curves[mode].reshape(c.shape), rtol=1e-12, atol=1e-12)
    assert np.array_equal(pos, tr.positions)


def test_the_three_row_writers_write_the_same_hybrids():
    """The curve engine's walk, the decomposition's subset stream and ``hybrid.build_rows`` write
    ``x_j`` where the set holds unit j and ``r_j`` elsewhere: the rows each hands the model are
    the hybrids of the sets it needs."""
    import itertools

    from insdel.decomposition import batch_decomposition
    from insdel.hybrids import build_rows, masks_to_words
    from insdel.tracing import trace

    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    R[0, 2] = X[0, 2]
    seen: list[np.ndarray] = []

    def f(Z):
        seen.append(np.array(Z, dtype=np.float64))
        return Z.sum(1)

    def rows_of(sets_per_pair):
        out = set()
        for b, sets in enumerate(sets_per_pair):
            masks = np.array(sets, dtype=bool)
            words = masks_to_words(masks)
            rows = build_rows(X, R, np.full(len(masks), b), words)
            out |= {tuple(r) for r in rows}
        return out

    orders = np.array([rng.permutation(4) for _ in range(3)])
    trace(f, X, R, orders[:, None, :])
    got = {tuple(r) for rows in seen for r in rows}
    sets = []
    for b in range(3):
        rank = np.argsort(orders[b])
        ins = [rank < k for k in range(5)]
        sets.append(ins + [~s for s in ins])
    assert got == rows_of(sets)
    seen.clear()
    batch_decomposition(f, X, R)
    got = {tuple(r) for rows in seen for r in rows}
    all_sets = [[np.array(s, bool) for s in itertools.product([0, 1], repeat=4)]] * 3
    assert got == rows_of(all_sets)
