"""Models with H outputs (insdel.multi_output): per-output results equal single-output runs on
each output column, and the model evaluates each distinct row once whatever H is."""

import numpy as np
import pytest
import torch

import insdel
from insdel.adapter import as_model
from insdel.decomposition import batch_decomposition, shapley_values
from insdel.multi_output import MultiEvaluation, output_views, per_output

B, N_FEAT, H = 9, 6, 3


def _f(X):
    W = np.linspace(-1.0, 1.0, N_FEAT * H).reshape(N_FEAT, H)
    return np.tanh(X @ W) + (X[:, :1] * X[:, 1:2]) * np.arange(1, H + 1)


def _column(h):
    def fh(X):
        return _f(X)[:, h]
    return fh


@pytest.fixture
def pairs():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(B, N_FEAT))
    R = rng.normal(size=(B, N_FEAT))
    R[:, 2] = X[:, 2]  # a feature that does not differ
    return X, R, rng.normal(size=(B, N_FEAT)), rng.normal(size=(B, H, N_FEAT))


@pytest.mark.parametrize("mode", ["insertion", "deletion"])
def test_curves_per_output_equal_single_output_runs(pairs, mode):
    X, R, A, Ah = pairs
    mf = as_model(_f, outputs=H)
    one = insdel.curves(mf, X, R, A, mode=mode)
    per = insdel.curves(as_model(_f, outputs=H), X, R, Ah, mode=mode)
    assert one.shape == per.shape == (B, N_FEAT + 1, H)
    for h in range(H):
        np.testing.assert_allclose(one[..., h], insdel.curves(_column(h), X, R, A, mode=mode),
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(per[..., h],
                                   insdel.curves(_column(h), X, R, Ah[:, h], mode=mode),
                                   rtol=0, atol=1e-12)


def test_h_output_curves_are_contiguous_with_the_outputs_last(pairs):
    X, R, A, Ah = pairs
    for attributions in (A, Ah):  # one ordering for all outputs, and one per output
        res = insdel.trace(as_model(_f, outputs=H), X, R,
                           insdel.orderings(attributions))
        for mode in ("insertion", "deletion"):
            c = res.curves[mode]
            assert c.shape[0] == B and c.shape[-1] == H and c.flags.c_contiguous
        assert res.fx.shape == res.fr.shape == (B, H) and res.fx.flags.c_contiguous
        np.testing.assert_allclose(res.fx, _f(X), rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.fr, _f(R), rtol=0, atol=1e-12)


@pytest.mark.parametrize("per_output_attr", [False, True])
def test_a_non_finite_value_of_one_output_is_named(pairs, per_output_attr):
    X, R, A, Ah = pairs

    def bad(Z):
        y = _f(Z)
        y[np.isclose(Z[:, 0], X[4, 0]) & np.isclose(Z[:, 1], X[4, 1]), 2] = np.nan
        return y

    with pytest.raises(ValueError, match=r"returned non-finite values on the curves of 1 pair\(s\) "
                                         r"\(pairs 4\); pair 4: f\(x\)"):
        insdel.curves(as_model(bad, outputs=H), X, R, Ah if per_output_attr else A)


def test_model_evaluations_equal_one_output(pairs):
    X, R, A, _ = pairs
    mf, m1 = as_model(_f, outputs=H), as_model(_column(0))
    insdel.curves(mf, X, R, A)
    insdel.curves(m1, X, R, A)
    assert mf.n_evals == m1.n_evals and mf.n_calls == m1.n_calls
    mf, m1 = as_model(_f, outputs=H), as_model(_column(0))
    per_output(shapley_values, mf, X, R)
    shapley_values(m1, X, R)
    assert mf.n_evals == m1.n_evals


def test_trace_groups_and_marginal(pairs):
    X, R, _, _ = pairs
    orders = np.stack([np.random.default_rng(b).permutation(3) for b in range(B)])[:, None]
    groups = [[0, 1], [2, 3], [4, 5]]
    res = insdel.trace(as_model(_f, outputs=H), X, R, orders, groups=groups)
    assert res.curves["insertion"].shape == (B, 1, 4, H) and res.fx.shape == (B, H)
    for h in range(H):
        r1 = insdel.trace(_column(h), X, R, orders, groups=groups)
        for mo in r1.curves:
            np.testing.assert_allclose(res.curves[mo][..., h], r1.curves[mo], atol=1e-12, rtol=0)
        np.testing.assert_allclose(res.fx[:, h], r1.fx, atol=1e-12, rtol=0)
    refs = np.stack([R, R[::-1]], axis=1)  # marginal: K = 2 references per target
    res = insdel.trace(as_model(_f, outputs=H), X, refs, orders, groups=groups,
                       removal="marginal")
    r1 = insdel.trace(_column(1), X, refs, orders, groups=groups, removal="marginal")
    np.testing.assert_allclose(res.curves["deletion"][..., 1], r1.curves["deletion"], atol=1e-12)


def test_evaluate_per_output_and_aggregate(pairs):
    X, R, A, Ah = pairs
    mf = as_model(_f, outputs=H)
    w = np.array([1.0, 0.5, 0.25])
    ev = insdel.evaluate(mf, X, R, {"one": A, "per": Ah}, n_random=4, output_weights=w)
    assert isinstance(ev, MultiEvaluation) and ev.n_outputs == H
    for h in range(H):
        e1 = insdel.evaluate(_column(h), X, R, {"one": A, "per": Ah[:, h]}, n_random=4)
        for mo in ("insertion", "deletion"):
            np.testing.assert_allclose(ev[h].curves[mo], e1.curves[mo], atol=1e-12, rtol=0)
            np.testing.assert_allclose(ev[h].random_curves[mo], e1.random_curves[mo],
                                       atol=1e-12, rtol=0)
        s, s1 = ev[h].summary(), e1.summary()
        np.testing.assert_allclose(s["mean"], s1["mean"], atol=1e-12)
        np.testing.assert_allclose(s["std_error"], s1["std_error"], atol=1e-12)
    agg = ev.aggregate("per", "insertion")
    np.testing.assert_allclose(agg, ev.abc_array("per", "insertion") @ (w / w.sum()))
    table = ev.summary()
    row = table[(table.output == "weighted") & (table.method == "per")
                & (table["mode"] == "insertion")]
    assert row["mean"].item() == pytest.approx(agg.mean())
    assert row["std_error"].item() == pytest.approx(agg.std(ddof=1) / np.sqrt(B))


def test_decomposition_and_shapley_per_output(pairs):
    X, R, _, _ = pairs
    mf = as_model(_f, outputs=H)
    phi = per_output(shapley_values, mf, X, R)
    decs = per_output(batch_decomposition, mf, X, R)
    assert phi.shape == (B, N_FEAT, H)
    fx, fr = _f(X), _f(R)
    for h in range(H):
        np.testing.assert_allclose(phi[..., h], shapley_values(_column(h), X, R), atol=1e-12)
        np.testing.assert_allclose(phi[..., h].sum(axis=1), fx[:, h] - fr[:, h], atol=1e-10)
        d1 = batch_decomposition(_column(h), X, R)
        for mo in ("insertion", "deletion"):
            np.testing.assert_allclose(decs[h].expected_abc(mode=mo), d1.expected_abc(mode=mo),
                                       atol=1e-12)
        np.testing.assert_allclose(decs[h].shapley(), phi[..., h], atol=1e-12)
        # the decomposition's identity per output: its effects sum to f_h(x) - f_h(r)
        np.testing.assert_allclose(decs[h].full_delta()[:, 1:].sum(axis=1),
                                   fx[:, h] - fr[:, h], atol=1e-10)


def test_one_declared_output_is_the_single_output_run(pairs):
    X, R, A, _ = pairs
    c = insdel.curves(as_model(_column(0), outputs=1), X, R, A)
    assert c.shape == (B, N_FEAT + 1, 1)
    np.testing.assert_array_equal(c[..., 0], insdel.curves(_column(0), X, R, A))


def test_torch_module_and_sklearn_multi_output():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    A = rng.normal(size=(5, 4))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    c = insdel.curves(as_model(net, outputs=2), X, R, A)
    for h in range(2):
        np.testing.assert_allclose(c[..., h], insdel.curves(as_model(net, output=h), X, R, A),
                                   atol=1e-12)
    views = output_views(net, outputs=2)
    ig = insdel.attribute(views[1], X, R, method="integrated_gradients")
    assert ig.shape == (5, 4)
    est = LinearRegression().fit(rng.normal(size=(30, 4)), rng.normal(size=(30, 3)))
    c = insdel.curves(as_model(est, outputs=3), X, R, A)
    np.testing.assert_allclose(c[..., 2], insdel.curves(lambda Z: est.predict(Z)[:, 2], X, R, A),
                               atol=1e-12)


def test_bad_input_named(pairs):
    X, R, A, _ = pairs
    mf = as_model(_f, outputs=H)
    with pytest.raises(ValueError, match="H = 3 outputs"):
        insdel.curves(mf, X, R, np.zeros((B, 2, N_FEAT)))
    with pytest.raises(ValueError, match=r"attributions\['a'\].*H = 3"):
        insdel.evaluate(mf, X, R, {"a": np.zeros((B, 5, N_FEAT))})
    with pytest.raises(ValueError, match="outputs=4"):
        insdel.curves(as_model(_f, outputs=4), X, R, A)
    with pytest.raises(ValueError, match="output_weights has 2"):
        insdel.evaluate(mf, X, R, {"a": A}, output_weights=[1, 2])
    with pytest.raises(ValueError, match="output= .* or outputs="):
        as_model(_f, output=0, outputs=H)
    with pytest.raises(ValueError, match="outputs=H"):
        output_views(_column(0))
    with pytest.raises(TypeError, match="outputs"):
        as_model(_f, outputs=1.5)


def test_tint_mse_mae_reproduced_from_the_curves():
    import tint.metrics as tm

    rng = np.random.default_rng(5)
    Bw, L, C, Hh, q = 12, 6, 2, 3, 0.25
    n = L * C
    X = rng.normal(size=(Bw, n)).astype(np.float32).astype(np.float64)
    R = np.repeat(X.reshape(Bw, L, C).mean(1, keepdims=True), L, 1).reshape(Bw, n)
    R = R.astype(np.float32).astype(np.float64)
    A = rng.normal(size=(Bw, n))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(n, 8), torch.nn.ReLU(), torch.nn.Linear(8, Hh))
    wrapped = torch.nn.Sequential(torch.nn.Flatten(), net).eval()
    t = {k: torch.as_tensor(v.reshape(Bw, L, C), dtype=torch.float32)
         for k, v in (("x", X), ("r", R), ("a", A))}
    dele = insdel.curves(as_model(net, outputs=Hh), X, R, A, mode="deletion")
    ins = insdel.curves(as_model(net, outputs=Hh), X, R, A, mode="insertion")
    for fn, p in ((tm.mse, 2), (tm.mae, 1)):
        for largest in (True, False):
            pert = dele[:, int(n * q)] if largest else ins[:, n - int(n * (1 - q))]
            ours = (np.abs(dele[:, 0] - pert) ** p).sum(axis=1).mean()
            theirs = fn(wrapped, t["x"], t["a"], baselines=t["r"], topk=q, mask_largest=largest)
            assert abs(ours - theirs) < 1e-6


def test_drawn_removal_per_output_through_the_views(pairs):
    from insdel import removal as RM

    X, R, A, _ = pairs
    bg = np.random.default_rng(7).normal(size=(200, N_FEAT))
    rem = RM.build("conditional_gaussian", data=bg, n_draws=4, seed=2)
    with pytest.raises(NotImplementedError, match="per_output"):
        insdel.curves(as_model(_f, outputs=H), X, R, A, removal=rem)
    mf, m1 = as_model(_f, outputs=H), as_model(_column(2))
    c = per_output(insdel.curves, mf, X, R, A, removal=rem)
    np.testing.assert_allclose(c[..., 2], insdel.curves(m1, X, R, A, removal=rem), atol=1e-12)
    assert mf.n_evals == m1.n_evals  # each drawn row evaluated once for the three outputs


@pytest.mark.parametrize("engine", [
    lambda m, X, R: batch_decomposition(m, X, R),
    lambda m, X, R: shapley_values(m, X, R),
    lambda m, X, R: insdel.attribute(m, X, R, "kernel_shap"),
    lambda m, X, R: insdel.attribute(m, X, R, "occlusion"),
])
def test_a_one_output_engine_given_h_outputs_names_the_per_output_route(engine):
    m = as_model(lambda Z: np.c_[Z.sum(1), Z[:, 0]], outputs=2)
    X, R = np.ones((2, 3)), np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"explains one output; the model has H = 2 outputs "
                                         r"\(outputs=2\): run it per output with "
                                         r"insdel\.multi_output\.per_output"):
        engine(m, X, R)


def test_h_outputs_under_a_drawn_removal_refuse_a_client_here_naming_the_removal():
    """A removal that draws its rows gives one output's values: with a client the refusal is
    raised here, before anything is sent (``client=object()`` is never used), as serially."""
    m = as_model(lambda Z: np.c_[Z.sum(1), Z[:, 0]], outputs=2)
    rem = insdel.removal.build("conditional_gaussian",
                               data=np.random.default_rng(0).normal(size=(40, 3)), n_draws=2)
    for client in (None, object()):
        with pytest.raises(NotImplementedError, match=r"removal 'conditional_gaussian' draws "
                                                      r"its rows; a model with outputs=2 .*"
                                                      r"per_output"):
            insdel.evaluate(m, np.ones((2, 3)), None, {"a": np.ones((2, 3))}, n_random=0,
                            removal=rem, client=client)
    with pytest.raises(NotImplementedError, match=r"removal 'conditional_gaussian' draws"):
        insdel.trace(m, np.ones((2, 3)), None, np.tile(np.arange(3), (2, 1)), removal=rem,
                     client=object())


def test_h_outputs_bad_attributions_with_a_client_name_h_before_sending():
    """Per-output attributions whose second axis is not H are the serial error naming H (the
    client, never used, is not reached)."""
    m = as_model(lambda Z: np.c_[Z.sum(1), Z[:, 0]], outputs=2)
    with pytest.raises(ValueError, match=r"attributions\['a'\].*H = 2"):
        insdel.evaluate(m, np.ones((2, 3)), np.zeros((2, 3)), {"a": np.ones((2, 5, 3))},
                        n_random=0, client=object())
    with pytest.raises(ValueError, match=r"output_weights has 3 weights for the model's H = 2"):
        insdel.evaluate(m, np.ones((2, 3)), np.zeros((2, 3)), {"a": np.ones((2, 3))},
                        n_random=0, output_weights=[1, 1, 1], client=object())


def test_multi_evaluation_modes_and_expected_random(pairs):
    X, R, A, _ = pairs
    ev = insdel.evaluate(as_model(_f, outputs=H), X, R, {"one": A}, n_random=3,
                         modes=("deletion",))
    assert ev.modes == ("deletion",) == ev[0].modes
    er = ev.expected_random("deletion")
    assert er.shape == (B, H)
    for h in range(H):
        np.testing.assert_allclose(er[:, h], ev[h].random_mean("deletion"), atol=0, rtol=0)
