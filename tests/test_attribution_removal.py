"""The attribution methods under a removal (issue 36): each against an independent computation.

Oracles: the single-reference methods on each reference and averaged (the averaged-baseline
form; Shapley values and Kernel SHAP's constrained fit are linear in v), the baseline method with
the constant a constant sampled removal fills in, v(all) - v(∅) from direct model calls.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from _removals import MeanImpute, Shuffled

import insdel
from insdel import removal as RM
from insdel.attribution import attribute, available
from insdel.decomposition import shapley_values

torch = pytest.importorskip("torch")


def f(Z):
    Z = np.asarray(Z, dtype=np.float64)
    return np.sin(Z).sum(1) + Z[:, 0] * Z[:, 1] * Z[:, 2] - 0.5 * Z[:, 1] * Z[:, 3]


def net(act=torch.nn.Tanh, n=5, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(n, 12), act(), torch.nn.Linear(12, 8), act(),
                               torch.nn.Linear(8, 1)).double().eval()


def values_of(model):
    def g(Z):
        with torch.no_grad():
            return model(torch.from_numpy(np.array(Z, np.float64)))[:, 0].numpy()
    return g


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 5))
    bg = rng.normal(size=(4, 5))
    bg[:, 4] = X[0, 4]  # pair 0: feature 4 equals every reference (outside its D)
    return X, bg


def single_mean(g, X, refs, method, **kw):
    """The mean over k of the single-reference attributions against refs[:, k] (B, K, n)."""
    return np.mean([attribute(g, X, refs[:, k], method, **kw) for k in range(refs.shape[1])],
                   axis=0)


def v_ends(g, X, rem):
    """v(all), v(∅) by direct model calls."""
    if isinstance(rem, RM.ReferenceRemoval):
        refs = rem.references(X, None)
        return g(X), np.array([g(refs[b]).mean() for b in range(len(X))])
    B, n = X.shape
    empty = rem.sample(X, np.zeros((B, n), bool), np.arange(B))
    return g(X), np.array([g(empty[b]).mean() for b in range(B)])


# -- Shapley -----------------------------------------------------------------------------------------
def test_exact_shapley_under_marginal_is_the_mean_of_single_reference_values(data):
    X, bg = data
    rem = RM.Marginal(bg, how="all")
    A, info = attribute(f, X, None, "exact_shapley", removal=rem, return_info=True)
    refs = np.broadcast_to(bg, (len(X),) + bg.shape)
    np.testing.assert_allclose(A, single_mean(f, X, refs, "exact_shapley"), rtol=0, atol=1e-10)
    np.testing.assert_allclose(A, shapley_values(f, X, None, removal=rem), rtol=0, atol=1e-12)
    v_all, v_empty = v_ends(f, X, rem)
    np.testing.assert_allclose(A.sum(1), v_all - v_empty, rtol=0, atol=1e-12)
    np.testing.assert_allclose(info["v_all_minus_v_empty"], v_all - v_empty, atol=1e-12)
    assert np.abs(info["completeness_gap"]).max() < 1e-12
    assert info["removal"] == rem.params()
    assert info["d"][0] == 4 and all(info["d"][1:] == 5)


def test_marginal_without_background_reads_K_references_from_R(data):
    X, bg = data
    rng = np.random.default_rng(1)
    R3 = rng.normal(size=(len(X), 3, X.shape[1]))
    A = attribute(f, X, R3, "exact_shapley", removal="marginal")
    np.testing.assert_allclose(A, single_mean(f, X, R3, "exact_shapley"), rtol=0, atol=1e-10)


def test_kernel_shap_under_marginal_is_the_mean_of_single_reference_fits(data):
    """The constrained fit is linear in (y, v(∅), v(all)) given the coalitions: with the same seed
    (same coalitions) Kernel SHAP of the marginal game is the mean of the K baseline fits."""
    X, bg = data
    rem = RM.Marginal(bg, how="all")
    refs = np.broadcast_to(bg, (len(X),) + bg.shape)
    kw = {"exact": "never", "n_samples": 300, "seed": 4}
    A, info = attribute(f, X, None, "kernel_shap", removal=rem, return_info=True, **kw)
    np.testing.assert_allclose(A, single_mean(f, X, refs, "kernel_shap", **kw), rtol=0,
                               atol=1e-10)
    assert np.abs(info["completeness_gap"]).max() < 1e-12  # efficiency against v(all) - v(∅)
    assert info["exact_pairs"] == 0
    # the exact road (2^|D| <= n_samples) gives the marginal exact Shapley values
    A_ex, info = attribute(f, X, None, "kernel_shap", removal=rem, return_info=True)
    assert info["exact_pairs"] == len(X)
    np.testing.assert_allclose(A_ex, attribute(f, X, None, "exact_shapley", removal=rem),
                               rtol=0, atol=1e-12)


def test_group_games_under_marginal(data):
    X, bg = data
    rem = RM.Marginal(bg, how="all")
    refs = np.broadcast_to(bg, (len(X),) + bg.shape)
    groups = [0, 0, 1, 2, 2]
    kw = {"exact": "never", "n_samples": 50, "seed": 1, "groups": groups}
    A = attribute(f, X, None, "kernel_shap", removal=rem, **kw)
    assert A.shape == (len(X), 3)
    np.testing.assert_allclose(A, single_mean(f, X, refs, "kernel_shap", **kw), rtol=0,
                               atol=1e-10)
    ex = attribute(f, X, None, "exact_shapley", removal=rem, groups=groups)
    np.testing.assert_allclose(ex, shapley_values(f, X, None, removal=rem, groups=groups),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(attribute(f, X, None, "kernel_shap", removal=rem, groups=groups),
                               ex, rtol=0, atol=1e-12)


def test_kernel_shap_and_lime_under_a_constant_sampled_removal_equal_the_baseline(data):
    X, _ = data
    mu = np.full(X.shape[1], 0.25)
    R = np.broadcast_to(mu, X.shape)
    for kw in ({"exact": "never", "n_samples": 200, "seed": 2}, {}):
        got = attribute(f, X, None, "kernel_shap", removal=MeanImpute(mu), **kw)
        np.testing.assert_allclose(got, attribute(f, X, R, "kernel_shap", **kw), rtol=0,
                                   atol=1e-12)
    got, info = attribute(f, X, None, "lime", removal=MeanImpute(mu), seed=5, n_samples=300,
                          return_info=True)
    np.testing.assert_allclose(got, attribute(f, X, R, "lime", seed=5, n_samples=300), rtol=0,
                               atol=1e-12)
    np.testing.assert_allclose(info["v_all_minus_v_empty"], f(X) - f(R), atol=1e-12)


def test_lime_under_marginal_fits_the_marginal_values(data):
    """The perturbations' values are v(z) (mean over the K hybrids), weights from the mean
    reference: with one reference per target, LIME with that reference."""
    X, bg = data
    one = bg[:1]
    np.testing.assert_allclose(
        attribute(f, X, None, "lime", removal=RM.Marginal(one, how="all"), seed=1),
        attribute(f, X, np.broadcast_to(one[0], X.shape), "lime", seed=1), rtol=0, atol=1e-12)
    # with K references: LIME of the mean game equals the baseline Lasso on averaged values only
    # through the fit; check the values it fits by a zero-penalty run against single fits with
    # the same weights (alpha=0: least squares, linear in y)
    refs = np.broadcast_to(bg, (len(X),) + bg.shape)
    from insdel.adapter import as_model
    from insdel.attribution.lime import _lime_batched

    m = as_model(f)
    ys = [_lime_batched(m, X, refs.mean(1), 400, 3, 0.0, 1 << 18, False,
                        values=_single_values(m, X, refs[:, k]))[0] for k in range(len(bg))]
    got = attribute(f, X, None, "lime", removal=RM.Marginal(bg, how="all"), seed=3,
                    n_samples=400, alpha=0.0)
    np.testing.assert_allclose(got, np.mean(ys, axis=0), rtol=0, atol=1e-6)


def _single_values(model, X, R):
    from insdel.attribution._sampling import evaluate_coalitions

    def values(b0, masks):
        return evaluate_coalitions(model, X, np.ascontiguousarray(R), b0, masks)
    return values


def test_shapley_methods_under_a_sampled_removal(data):
    X, bg = data
    rem = Shuffled(bg, n_draws=3, seed=7)
    A, info = attribute(f, X, None, "exact_shapley", removal=rem, return_info=True)
    np.testing.assert_allclose(A, shapley_values(f, X, None, removal=rem), rtol=0, atol=1e-12)
    v_all, v_empty = v_ends(f, X, rem)
    np.testing.assert_allclose(A.sum(1), v_all - v_empty, rtol=0, atol=1e-12)
    assert np.abs(info["completeness_gap"]).max() < 1e-12
    # Kernel SHAP, exact road: the same values; sampled road: efficient, and close to exact
    np.testing.assert_allclose(attribute(f, X, None, "kernel_shap", removal=rem), A, rtol=0,
                               atol=1e-12)
    ks, info = attribute(f, X, None, "kernel_shap", removal=rem, exact="never", n_samples=4000,
                         return_info=True)
    assert np.abs(info["completeness_gap"]).max() < 1e-12
    assert np.abs(ks - A).max() < 0.1 * np.abs(A).max()


# -- IG and DeepLIFT: the averaged-baseline form ----------------------------------------------------
@pytest.mark.parametrize("method,act,kw", [
    ("integrated_gradients", torch.nn.Tanh, {"n_steps": 64, "rule": "gausslegendre"}),
    ("deeplift", torch.nn.ReLU, {}),
    ("deeplift", torch.nn.PReLU, {})])
def test_gradient_path_methods_under_marginal_average_the_single_reference_ones(data, method,
                                                                                act, kw):
    X, bg = data
    model = net(act)
    g = values_of(model)
    rem = RM.Marginal(bg, how="all")
    A, info = attribute(model, X, None, method, removal=rem, return_info=True, **kw)
    refs = np.broadcast_to(bg, (len(X),) + bg.shape)
    np.testing.assert_allclose(A, single_mean(model, X, refs, method, **kw), rtol=0, atol=1e-12)
    v_all, v_empty = v_ends(g, X, rem)
    np.testing.assert_allclose(info["v_all_minus_v_empty"], v_all - v_empty, atol=1e-12)
    np.testing.assert_allclose(A.sum(1), v_all - v_empty, rtol=0, atol=1e-8)
    assert info["references_per_target"] == len(bg)
    assert info["removal"]["name"] == "marginal"


@pytest.mark.parametrize("method,act,kw", [
    ("integrated_gradients", torch.nn.Tanh, {"n_steps": 64, "rule": "gausslegendre"}),
    ("deeplift", torch.nn.ReLU, {})])
def test_gradient_path_methods_under_a_sampled_removal_average_over_its_empty_draws(data, method,
                                                                                    act, kw):
    """Expected-gradients form over the removal's M draws of the empty coalition."""
    X, bg = data
    model = net(act)
    rem = Shuffled(bg, n_draws=3, seed=1)
    B, n = X.shape
    draws = rem.sample(X, np.zeros((B, n), bool), np.arange(B))  # (B, M, n)
    A, info = attribute(model, X, None, method, removal=rem, return_info=True, **kw)
    np.testing.assert_allclose(A, single_mean(model, X, draws, method, **kw), rtol=0,
                               atol=1e-12)
    v_all, v_empty = v_ends(values_of(model), X, rem)
    np.testing.assert_allclose(A.sum(1), v_all - v_empty, rtol=0, atol=1e-8)
    assert np.abs(info["completeness_gap"]).max() < 1e-8


def test_methods_without_a_reference_ignore_the_removal_and_record_it(data):
    X, bg = data
    model = net()
    rem = RM.Marginal(bg, how="all")
    v_all, v_empty = v_ends(values_of(model), X, rem)
    for method in ("vanilla_grad", "input_x_gradient", "random"):
        A, info = attribute(model, X, None, method, removal=rem, return_info=True)
        np.testing.assert_array_equal(A, attribute(model, X, X, method))
        assert info["removal"] == rem.params()
        np.testing.assert_allclose(info["completeness_gap"], A.sum(1) - (v_all - v_empty),
                                   atol=1e-12)


# -- the baseline is unchanged ------------------------------------------------------------------------
#: the cohort methods play the observational cohort game, which is their removal: they take no
#: removal= (tests/test_cohort.py); tree_shap reads tree ensembles only (tests/test_tree_shap.py)
_TAKES_REMOVAL = [m for m in available() if m not in ("cohort_shapley", "igcs", "tree_shap")]


@pytest.mark.parametrize("method", _TAKES_REMOVAL)
def test_baseline_results_are_byte_identical(method):
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    model = net(torch.nn.ReLU) if method == "deeplift" else net()
    kw = {"n_samples": 60, "exact": "never"} if method == "kernel_shap" else \
        {"n_samples": 60} if method == "lime" else {"n_steps": 16} \
        if method == "integrated_gradients" else {}
    ref, info0 = attribute(model, X, R, method, return_info=True, **kw)
    for removal in (None, "baseline", RM.Baseline()):
        A, info = attribute(model, X, R, method, removal=removal, return_info=True, **kw)
        assert A.tobytes() == ref.tobytes()
        np.testing.assert_array_equal(info["completeness_gap"], info0["completeness_gap"])
        assert ("removal" in info) == (removal is not None)
    assert "removal" not in info0


# -- chunks --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method,kw,model", [
    ("exact_shapley", {}, None),
    ("kernel_shap", {}, None),  # the exact road: no seed involved
    ("integrated_gradients", {"n_steps": 16}, "net"),
    ("deeplift", {}, "relu")])
@pytest.mark.parametrize("which", ["marginal_random", "sampled"])
def test_chunked_equals_unchunked_under_a_removal(data, method, kw, model, which):
    """Chunks see the global target indices: marginal's random references and a sampled removal's
    draws (both seeded by the target's index) are those of the unchunked call."""
    X, bg = data
    X = np.concatenate([X, X[::-1] + 0.1])
    rem = RM.Marginal(bg, how="random", n_references=2, seed=3) if which == "marginal_random" \
        else Shuffled(bg, n_draws=2, seed=5)
    g = f if model is None else net(torch.nn.ReLU if model == "relu" else torch.nn.Tanh)
    A, info = attribute(g, X, None, method, removal=rem, return_info=True, **kw)
    Ac, infoc = attribute(g, X, None, method, removal=rem, return_info=True, pairs_per_chunk=3,
                          **kw)
    np.testing.assert_allclose(Ac, A, rtol=0, atol=1e-12)
    assert infoc["chunks"] == 4 and infoc["removal"] == rem.params()
    np.testing.assert_allclose(infoc["v_all_minus_v_empty"], info["v_all_minus_v_empty"],
                               atol=1e-12)
    np.testing.assert_allclose(infoc["completeness_gap"], info["completeness_gap"], atol=1e-10)


def test_a_dask_client_gives_the_unchunked_values_under_a_removal(data):
    dd = pytest.importorskip("dask.distributed")
    X, bg = data
    with dd.Client(processes=False, n_workers=1, threads_per_worker=1,
                   dashboard_address=None) as client:
        for rem in (Shuffled(bg, n_draws=2, seed=5),
                    RM.Marginal(bg, how="random", n_references=2, seed=3)):
            A = attribute(f, X, None, "exact_shapley", removal=rem)
            Ad, info = attribute(f, X, None, "exact_shapley", removal=rem, client=client,
                                 pairs_per_chunk=2, return_info=True)
            np.testing.assert_allclose(Ad, A, rtol=0, atol=1e-12)
            assert info["removal"] == rem.params()


# -- refusals --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["kernel_shap", "lime"])
def test_captum_backends_refuse_a_removal_naming_the_alternative(data, method):
    X, bg = data
    with pytest.raises(ValueError, match=rf"{method}: removal 'marginal' is not supported by "
                                         r"backend='captum'.*backend='insdel'"):
        attribute(f, X, None, method, removal=RM.Marginal(bg, how="all"), backend="captum")


def test_an_external_method_refuses_a_removal(data):
    X, bg = data

    def mine(X, R):
        return X - R

    with pytest.raises(ValueError, match=r"mine: removal 'shuffled' is not supported by an "
                                         r"external method.*kernel_shap"):
        attribute(f, X, None, mine, removal=Shuffled(bg))
    A = attribute(f, X, X[::-1], mine, removal="baseline")  # the baseline is fine
    np.testing.assert_array_equal(A, X - X[::-1])


def test_a_sampled_removal_needs_no_reference_but_marginal_without_background_does(data):
    X, _ = data
    with pytest.raises(ValueError, match="marginal"):
        attribute(f, X, None, "exact_shapley", removal="marginal")


def test_under_the_cohort_game_kernel_shap_is_cohort_shapley_and_lime_is_refused():
    from insdel.removal import Cohort

    rng = np.random.default_rng(0)
    D = rng.normal(size=(80, 3))
    y = D.sum(axis=1)
    g = Cohort(D, y)
    want = insdel.attribute(None, D[:5], None, "cohort_shapley", data=D, outcome=y)
    for kw in ({}, {"pairs_per_chunk": 2}):
        got = insdel.attribute(lambda Z: Z.sum(axis=1), D[:5], None, "kernel_shap", removal=g,
                               **kw)
        np.testing.assert_allclose(got, want, atol=1e-12)
    with pytest.raises(ValueError, match="removal 'cohort' is a game read off the data: it has "
                                         "no reference rows"):
        insdel.attribute(lambda Z: Z.sum(axis=1), D[:5], None, "lime", removal=g)


def test_lime_on_a_tree_game_reads_each_target_s_references():
    """The tree engine's marginal games hold their references as R (B, K, n) (each target's
    own) or a background (shared); LIME centres on their mean as on the black box. The
    path-dependent game has none, and the error says it is read off the trees."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    Xt = rng.normal(size=(200, 4))
    rf = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(
        Xt, Xt[:, 0] * Xt[:, 1] + Xt[:, 2])
    X = Xt[:3]
    for rem in (RM.Marginal(Xt[50:80], n_references=2), RM.Marginal(Xt[50:60], how="all")):
        got = {e: attribute(rf, X, None, "lime", removal=rem, n_samples=50, engine=e)
               for e in ("tree", "black_box")}
        np.testing.assert_allclose(got["tree"], got["black_box"], atol=1e-9)
    with pytest.raises(ValueError, match="removal 'path_dependent' is read off the tree "
                                         "ensemble's structure"):
        attribute(rf, X, None, "lime", removal="path_dependent", n_samples=50)


@pytest.mark.parametrize("method,kw", [("kernel_shap", {"n_samples": 40}), ("exact_shapley", {}),
                                       ("lime", {"n_samples": 50}), ("random", {})])
def test_a_game_gives_what_the_model_pairs_and_removal_give(data, method, kw):
    from insdel.game import as_game

    X, bg = data
    for rem in (RM.Marginal(bg, n_references=2), Shuffled(bg, n_draws=2, seed=4)):
        want, info0 = attribute(f, X, None, method, removal=rem, return_info=True, **kw)
        game = as_game(f, X, None, removal=rem)
        got, info = attribute(game, None, None, method, return_info=True, **kw)
        assert got.tobytes() == want.tobytes()
        np.testing.assert_array_equal(info["completeness_gap"], info0["completeness_gap"])
        assert info["removal"] == rem.params()
        chunked = attribute(game, None, None, method, pairs_per_chunk=2, **kw)
        np.testing.assert_array_equal(chunked, attribute(f, X, None, method, removal=rem,
                                                         pairs_per_chunk=2, **kw))
    with pytest.raises(TypeError, match="do not give removal"):
        attribute(game, None, None, method, removal="marginal", **kw)


@pytest.mark.filterwarnings("ignore:kernel_shap")
def test_kernel_shap_exact_road_on_pairs_that_are_not_consecutive(data):
    """Under marginal the pairs with small |D| (here 0 and 2) take the exact road on their own."""
    X, bg = data
    X, two = X.copy(), bg[:2].copy()
    two[1, 2:] = two[0, 2:]
    X[[0, 2], 2:] = two[0, 2:]  # pairs 0 and 2 differ from both references in 2 features
    rem = RM.Marginal(two, how="all")
    A, info = attribute(f, X, None, "kernel_shap", removal=rem, n_samples=9, return_info=True)
    assert info["exact"].tolist() == [True, False, True, False, False]
    exact = shapley_values(f, X[[0, 2]], None, removal=rem)
    np.testing.assert_allclose(A[[0, 2]], exact, rtol=0, atol=1e-12)


_METHODS_DIR = Path(insdel.__file__).parent / "attribution"


@pytest.mark.parametrize("module", sorted(p.name for p in _METHODS_DIR.glob("*.py")))
def test_methods_never_ask_a_removals_kind(module):
    """The methods read the game; the one check of the removal is insdel.game.as_game."""
    src = (_METHODS_DIR / module).read_text(encoding="utf-8")
    assert not re.findall(r"isinstance\(.*(Removal|Baseline|Marginal|Cohort)", src)
    assert "resolve(" not in src and "check_targets(" not in src
