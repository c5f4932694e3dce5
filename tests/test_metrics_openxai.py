"""OpenXAI's PGI / PGU (insdel.metrics.openxai_family) and ground-truth agreement metrics
(insdel.metrics.ground_truth) against direct transcriptions of the paper's formulas (OpenXAI is not
on PyPI): Agarwal et al. 2022, Appendix A, eq. (1)-(2) and the FA / RA / SA / SRA / RC / PRA
definitions (Krishna et al. 2022), one pair at a time in plain Python."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata, spearmanr

import insdel.metrics as M
from insdel.metrics.base import MetricContext

GT_METRICS = ["feature_agreement", "rank_agreement", "sign_agreement", "signed_rank_agreement",
              "rank_correlation", "pairwise_rank_agreement"]


def _model(n, seed=0):
    rng = np.random.default_rng(seed + 7)
    W, v = rng.normal(size=(n, 4)), rng.normal(size=4)
    return lambda Z: np.tanh(Z @ W) @ v + 0.2 * Z[..., 0] * Z[..., -1]


def _data(seed=0, B=6, n=7):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(B, n)), rng.normal(size=(B, n)), rng.normal(size=(B, n))


def _top(a, k):
    return list(np.argsort(-np.abs(a), kind="stable")[:k])


# ---- transcriptions (one pair) ------------------------------------------------------------------

def fa(a, g, k):
    return len(set(_top(a, k)) & set(_top(g, k))) / k


def ra(a, g, k):
    rka, rkg = rankdata(-np.abs(a), method="dense"), rankdata(-np.abs(g), method="dense")
    ta, tg = _top(a, k), _top(g, k)
    return sum(i == j and rka[i] == rkg[j] for i, j in zip(ta, tg, strict=True)) / k


def sa(a, g, k):
    return len({(j, np.sign(a[j])) for j in _top(a, k)}
               & {(j, np.sign(g[j])) for j in _top(g, k)}) / k


def sra(a, g, k):
    rka, rkg = rankdata(-np.abs(a), method="dense"), rankdata(-np.abs(g), method="dense")
    ta, tg = _top(a, k), _top(g, k)
    return sum(i == j and rka[i] == rkg[j] and np.sign(a[i]) == np.sign(g[j])
               for i, j in zip(ta, tg, strict=True)) / k


def rc(a, g):
    return spearmanr(np.abs(a), np.abs(g))[0]


def pra(a, g):
    rka, rkg = rankdata(-np.abs(a), method="dense"), rankdata(-np.abs(g), method="dense")
    pairs = list(itertools.combinations(range(len(a)), 2))
    return sum((rka[i] < rka[j]) == (rkg[i] < rkg[j]) for i, j in pairs) / len(pairs)


TRANSCRIPTIONS = {"feature_agreement": fa, "rank_agreement": ra, "sign_agreement": sa,
                  "signed_rank_agreement": sra}


@pytest.mark.parametrize("name", list(TRANSCRIPTIONS))
@pytest.mark.parametrize("k", [1, 3, 0.5, 7, 100, "auc"])
def test_topk_agreement_matches_transcription(name, k):
    X, R, A = _data(1)
    G = A + 0.8 * np.random.default_rng(2).normal(size=A.shape)
    G[:, 0] *= -1  # some sign disagreement
    n = A.shape[1]
    ks = range(1, n + 1) if k == "auc" else [min(k, n) if isinstance(k, int)
                                            else math.ceil(k * n)]
    ours = M.build(name, k=k)(_model(n), X, R, A, ground_truth=G)
    want = [np.mean([TRANSCRIPTIONS[name](A[b], G[b], kk) for kk in ks]) for b in range(len(A))]
    np.testing.assert_allclose(ours, want, atol=1e-12)


def test_rank_metrics_match_transcription():
    X, R, A = _data(3, B=8, n=9)
    G = A + np.random.default_rng(4).normal(size=A.shape)
    f = _model(9)
    np.testing.assert_allclose(M.build("rank_correlation")(f, X, R, A, ground_truth=G),
                               [rc(a, g) for a, g in zip(A, G, strict=True)], atol=1e-12)
    np.testing.assert_allclose(M.build("pairwise_rank_agreement")(f, X, R, A, ground_truth=G),
                               [pra(a, g) for a, g in zip(A, G, strict=True)], atol=1e-12)


def test_ties_use_dense_ranks():
    A = np.array([[3.0, -3.0, 1.0, 0.5]])
    G = np.array([[-3.0, 3.0, 0.5, 1.0]])
    X = np.zeros((1, 4))
    f = _model(4)
    np.testing.assert_allclose(M.build("rank_agreement", k=2)(f, X, X, A, ground_truth=G),
                               ra(A[0], G[0], 2))
    np.testing.assert_allclose(M.build("pairwise_rank_agreement")(f, X, X, A, ground_truth=G),
                               pra(A[0], G[0]))
    np.testing.assert_allclose(M.build("sign_agreement", k=2)(f, X, X, A, ground_truth=G), 0.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 9))
def test_agreement_with_itself_and_monotone_transforms(seed, n):
    X, R, A = _data(seed, B=3, n=n)
    f = _model(n)
    for name in GT_METRICS:
        np.testing.assert_allclose(M.build(name)(f, X, R, A, ground_truth=A), 1.0, err_msg=name)
    G = 2.5 * A ** 3  # preserves |a|'s order and the signs
    for name in GT_METRICS:
        np.testing.assert_allclose(M.build(name, **({"k": "auc"} if "agreement" in name
                                                  and "pairwise" not in name else {}))(
            f, X, R, A, ground_truth=G), 1.0, err_msg=name)
    np.testing.assert_allclose(M.build("rank_correlation")(f, X, R, A, ground_truth=-A), 1.0)
    np.testing.assert_allclose(M.build("sign_agreement", k=n)(f, X, R, A, ground_truth=-A), 0.0)


def test_ground_truth_needs_no_model_and_is_required():
    X, R, A = _data(0)

    def boom(Z):
        raise AssertionError("the model was called")

    for name in GT_METRICS:
        assert M.build(name)(boom, X, R, A, ground_truth=A).shape == (len(A),)
    with pytest.raises(ValueError, match="ground_truth"):
        M.build("feature_agreement")(boom, X, R, A)
    assert np.isnan(M.build("rank_correlation")(boom, X, R, A, ground_truth=np.ones_like(A))).all()


# ---- PGI / PGU -----------------------------------------------------------------------------------

def _gap_reference(f, x, r, a, k, important):
    z = x.copy()
    top = _top(a, k)
    idx = top if important else [j for j in range(len(x)) if j not in top]
    z[idx] = r[idx]
    return abs(f(x[None])[0] - f(z[None])[0])


@pytest.mark.parametrize("k", [1, 2, 0.3, "auc"])
def test_pgi_pgu_reference_match_transcription(k):
    X, R, A = _data(5)
    n = X.shape[1]
    f = _model(n)
    ks = range(1, n + 1) if k == "auc" else [k if isinstance(k, int) else math.ceil(k * n)]
    for name, important in [("pgi", True), ("pgu", False)]:
        ours = M.build(name, k=k)(f, X, R, A)
        want = [np.mean([_gap_reference(f, X[b], R[b], A[b], kk, important) for kk in ks])
                for b in range(len(X))]
        np.testing.assert_allclose(ours, want, atol=1e-12)


def _normal_perturbation(x, static, noise, flips, discrete):
    """OpenXAI's NormalPerturbation.get_perturbed_inputs with given draws (one pair)."""
    continuous = ~discrete
    perturbations = noise * continuous + x
    perturbations = perturbations * (~discrete) + np.abs(perturbations * discrete
                                                         - flips * discrete)
    return x * static + perturbations * (~static)


@pytest.mark.parametrize("name,important", [("pgi", True), ("pgu", False)])
def test_pgi_pgu_gaussian_match_transcription(name, important):
    X, R, A = _data(6, B=4, n=6)
    X[:, 2] = np.array([0.0, 1.0, 1.0, 0.0])  # a binary column
    f = _model(6)
    metric = M.build(name, k=2, perturbation="gaussian", n_samples=30, binary=[2])
    ctx = MetricContext(f, X, R, seed=3)
    noise, flips = metric.draws(ctx, "m")
    ours = metric.compute(ctx, ctx.unit_attributions(A), method="m")
    discrete = np.zeros(6, bool)
    discrete[2] = True
    for b in range(len(X)):
        top = np.zeros(6, bool)
        top[_top(A[b], 2)] = True
        static = ~top if important else top
        xp = _normal_perturbation(X[b], static, noise[:, b], flips[:, b], discrete)
        assert set(np.unique(xp[:, 2])) <= {0.0, 1.0}
        want = np.mean(np.abs(f(xp) - f(X[b:b + 1])))
        np.testing.assert_allclose(ours[b], want, atol=1e-12)


def test_pgi_gaussian_defaults_are_openxai():
    m = M.build("pgi", perturbation="gaussian")
    assert m.sigma == 0.1 and m.n_samples == 100
    assert m.flip == pytest.approx(0.1 * math.sqrt(2 / math.pi))
    X, R, A = _data(0)
    X[:, 0] = 0.5
    with pytest.raises(ValueError, match="binary"):
        M.build("pgi", perturbation="gaussian", binary=[0])(_model(7), X, R, A)
    with pytest.raises(ValueError, match="binary"):
        M.build("pgi", perturbation="gaussian", binary=[9])(_model(7), X, R, A)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 8), B=st.integers(1, 4))
def test_pgi_at_all_units_is_the_full_gap(seed, n, B):
    X, R, A = _data(seed, B, n)
    f = _model(n, seed)
    np.testing.assert_allclose(M.build("pgi", k=n)(f, X, R, A), np.abs(f(X) - f(R)), atol=1e-12)
    np.testing.assert_allclose(M.build("pgu", k=n)(f, X, R, A), 0.0, atol=1e-12)
    # PGU at k is PGI's complement: the units outside the top k
    if n > 1:
        np.testing.assert_allclose(M.build("pgu", k=1)(f, X, R, A),
                                   M.build("pgi", k=n - 1)(f, X, R, -1 / (np.abs(A) + 1)),
                                   atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 7))
def test_singleton_groups_equal_ungrouped(seed, n):
    X, R, A = _data(seed, 3, n)
    f = _model(n, seed)
    G = A + 0.5
    groups = [[j] for j in range(n)]
    for name in ["pgi", "pgu"]:
        for opts in [{}, {"perturbation": "gaussian", "n_samples": 5}]:
            a = M.build(name, **opts)(f, X, R, A, seed=seed)
            b = M.build(name, **opts)(f, X, R, A, groups=groups, seed=seed)
            np.testing.assert_array_equal(a, b)
    for name in GT_METRICS:
        np.testing.assert_array_equal(M.build(name)(f, X, R, A, ground_truth=G),
                                      M.build(name)(f, X, R, A, ground_truth=G, groups=groups))


def test_evaluate_metrics_with_ground_truth():
    X, R, A = _data(2)
    f = _model(7)
    res = M.evaluate_metrics(f, X, R, {"a": A, "noisy": A + 1}, ground_truth=A,
                             metrics=["pgi", "pgu", *GT_METRICS])
    w = res.wide()
    np.testing.assert_allclose(w.xs("a", level="method")["feature_agreement"], 1.0)
    assert set(M.available("openxai")) == {"pgi", "pgu", *GT_METRICS}


def test_options_are_checked():
    for bad, err, match in [(dict(k=0), ValueError, "k"), (dict(k=1.5), ValueError, "k"),
                            (dict(k="all"), ValueError, "k"),
                            (dict(perturbation="uniform"), ValueError, "perturbation"),
                            (dict(sigma=0), ValueError, "sigma"),
                            (dict(n_samples=0), ValueError, "n_samples"),
                            (dict(flip=2.0), ValueError, "flip"),
                            (dict(binary="ab"), TypeError, "binary")]:
        with pytest.raises(err, match=match):
            M.build("pgi", **bad)
    with pytest.raises(ValueError, match="k"):
        M.build("feature_agreement", k=-1)
