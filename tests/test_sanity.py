"""Randomisation sanity checks (issue 38): the model parameter randomisation test and its flags,
the efficient MPRT's complexity rise, data randomisation, errors, determinism, and agreement with
Quantus' MPRT on the same model and attributions."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from _plots import overlaps_of_legends, overlaps_of_texts

from insdel.sanity import (
    SanityResult,
    data_randomisation,
    parameter_randomisation,
    randomisable_layers,
)

N = 8


def x_minus_r(X, R):
    """An "attribution" that ignores the model: x - r itself."""
    return X - R


@pytest.fixture(scope="module")
def trained():
    """A small MLP trained on a smooth target, and 30 pairs against the zero reference."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    Xtr = rng.normal(size=(400, N))
    w = np.linspace(2.0, -1.0, N)
    y = np.tanh(Xtr @ w / 2) + 0.3 * Xtr[:, 0] * Xtr[:, 1]
    net = torch.nn.Sequential(torch.nn.Linear(N, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16),
                              torch.nn.ReLU(), torch.nn.Linear(16, 1)).double()
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    Xt, yt = torch.tensor(Xtr), torch.tensor(y)[:, None]
    for _ in range(200):
        opt.zero_grad()
        loss = ((net(Xt) - yt) ** 2).mean()
        loss.backward()
        opt.step()
    net.eval()
    X = rng.normal(size=(30, N))
    return net, X, np.zeros(N)


@pytest.fixture(scope="module")
def result(trained):
    net, X, R = trained
    return parameter_randomisation(net, X, R, {"ig": "integrated_gradients",
                                               "x_minus_r": x_minus_r})


def test_flags_carry_their_interval_and_say_whether_they_hold_beyond_the_noise(result):
    """Each flag's 95 % t interval over the units (the similarity's from its standard error; the
    ABC check's from the change's) and its verdict in words: x - r's similarity is exactly 1 on
    every pair (no spread): flagged beyond the noise; IG's similarity is far below the
    threshold: passes beyond it; the Markdown table shows both."""
    from scipy.stats import t as t_dist

    f = result.flags.set_index(["method", "check"])
    sim = "similarity (spearman)"
    assert {"std_error", "ci_low", "ci_high", "verdict"} <= set(result.flags.columns)
    r = f.loc[("ig", sim)]
    row = result.table[(result.table["method"] == "ig") & (result.table["measure"] == "spearman")
                       & (result.table["step"] == result.table["step"].max())].iloc[0]
    q = t_dist.ppf(0.975, row["n_units"] - 1)
    assert r["value"] == row["mean"] and r["std_error"] == row["std_error"]
    assert r["ci_low"] == pytest.approx(row["mean"] - q * row["std_error"])
    assert r["ci_high"] < result.threshold and r["verdict"].startswith("passes: no part")
    assert f.loc[("x_minus_r", sim), "verdict"].startswith("flagged: its 95 % interval lies")
    # x - r's ordering never moves: its ABC change is 0 on every pair (paired: no spread)
    abc = f.loc[("x_minus_r", "insertion_abc_on_trained")]
    assert abc["std_error"] == 0 and abc["ci_low"] == abc["ci_high"] == abc["reference"]
    assert abc["verdict"].startswith("flagged: its 95 % interval lies wholly within")
    ig = f.loc[("ig", "insertion_abc_on_trained")]
    assert ig["ci_low"] <= ig["value"] <= ig["ci_high"]
    md = result.to_markdown()
    assert "95 % interval | in words |" in md and "passes: no part" in md


def test_model_blind_attribution_is_flagged_and_ig_is_not(result, trained):
    assert isinstance(result, SanityResult)
    assert result.layers == ["4", "2", "0"]
    flags = result.flags.set_index(["method", "check"])["flagged"]
    assert flags[("x_minus_r", "similarity (spearman)")]
    assert not flags[("ig", "similarity (spearman)")]
    assert "x_minus_r" in result.flagged and "ig" not in result.flagged
    last = result.curve("ig")["mean"].iloc[-1]
    assert last < result.threshold
    # x - r never changes: similarity 1 and sign agreement 1 at every step, no complexity rise
    for measure in ("spearman", "sign_agreement"):
        assert np.all(result.curve("x_minus_r", measure)["mean"] == 1.0)
    assert np.all(result.curve("x_minus_r", "complexity_rise")["mean"] == 0.0)
    # the efficient MPRT: IG's explanations' entropy moves with the model, x - r's does not
    assert abs(result.curve("ig", "complexity_rise")["mean"].iloc[-1]) > 0
    # the model given is untouched
    net = trained[0]
    assert torch.equal(net[4].weight, trained[0][4].weight)


def test_abc_flag_is_free_of_the_randomised_models_output_scale(result):
    """The randomised network's outputs are far smaller than the trained one's, so its own ABCs
    collapse for every method; the ABC check scores each step's ordering on the trained model,
    where an ordering that ignores the model keeps its ABC exactly."""
    t = result.table.set_index(["method", "step", "measure"])["mean"]
    last = len(result.layers)
    # the collapse the check must not read: x - r's own-model ABC falls with the output scale
    assert abs(t[("x_minus_r", last, "insertion_abc")]) < 0.1 * t[("x_minus_r", 0,
                                                                    "insertion_abc")]
    flags = result.flags.set_index(["method", "check"])
    for mode in ("insertion", "deletion"):
        row = flags.loc[("x_minus_r", f"{mode}_abc_on_trained")]
        assert row["flagged"] and row["value"] == row["reference"]
        assert not flags.loc[("ig", f"{mode}_abc_on_trained"), "flagged"]
        assert t[("ig", 0, f"{mode}_abc_on_trained")] == t[("ig", 0, f"{mode}_abc")]


def test_table_markdown_and_figure(result):
    import matplotlib

    matplotlib.use("Agg")
    from insdel.plotting import plot_sanity

    t = result.table
    assert {"method", "step", "layer", "measure", "mean", "std_error", "n"} <= set(t.columns)
    assert set(t["measure"]) >= {"spearman", "sign_agreement", "complexity", "complexity_rise",
                                 "insertion_abc", "deletion_abc", "insertion_abc_change"}
    md = result.to_markdown()
    assert "| ig |" in md and "**yes**" in md and "0: trained" in md
    ax = plot_sanity(result)
    assert len(ax.get_lines()) >= 2 and "(flagged)" in " ".join(
        t.get_text() for t in ax.get_legend().get_texts())
    assert overlaps_of_texts(ax.figure) == [] and overlaps_of_legends(ax.figure) == []
    matplotlib.pyplot.close("all")


class DeadTop(torch.nn.Module):
    """A linear model whose last-registered layer (``unused``, the "top" one) is never called:
    randomising it must leave every attribution and ABC exactly as trained."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.lin = torch.nn.Linear(N, 1).double()
        self.unused = torch.nn.Linear(3, 3).double()

    def forward(self, x):
        return self.lin(x)


def test_a_layer_the_output_does_not_use_changes_nothing(trained):
    _, X, R = trained
    net = DeadTop()
    res = parameter_randomisation(net, X, R, ["integrated_gradients"])
    assert res.layers == ["unused", "lin"]
    step1 = res.table[res.table["step"] == 1].set_index("measure")["mean"]
    assert step1["spearman"] == 1.0 and step1["sign_agreement"] == 1.0
    assert step1["insertion_abc_change"] == 0.0 and step1["deletion_abc_change"] == 0.0
    # IG of a linear model is w * (x - r): after lin is re-initialised, it is the new w's
    with torch.no_grad():
        w0 = net.lin.weight.numpy().ravel().copy()
    from insdel.sanity import randomised_models

    *_, (_, rand) = randomised_models(net, ["unused", "lin"], seed=0)
    w1 = rand.lin.weight.detach().numpy().ravel()
    exp = np.mean(np.sign(w0 * X) == np.sign(w1 * X), axis=1).mean()
    got = res.table[(res.table["step"] == 2) & (res.table["measure"] == "sign_agreement")]
    assert got["mean"].iloc[0] == pytest.approx(exp)


def test_same_seed_same_bytes(trained):
    net, X, R = trained
    kw = dict(order="independent", abc=True, similarity=("spearman", "spearman_abs"))
    a = parameter_randomisation(net, X[:10], R, ["vanilla_grad", "input_x_gradient"], **kw)
    b = parameter_randomisation(net, X[:10], R, ["vanilla_grad", "input_x_gradient"], **kw)
    c = parameter_randomisation(net, X[:10], R, ["vanilla_grad", "input_x_gradient"], seed=1,
                                **kw)
    assert a.pairs["value"].to_numpy().tobytes() == b.pairs["value"].to_numpy().tobytes()
    assert a.table.equals(b.table)
    assert a.pairs["value"].to_numpy().tobytes() != c.pairs["value"].to_numpy().tobytes()


def test_bad_inputs_give_clear_errors(trained):
    net, X, R = trained
    with pytest.raises(ValueError, match=r"unknown layer '5'.*Randomisable layers: \['0', '2', "
                                         r"'4'\]"):
        parameter_randomisation(net, X, R, ["ig"], layers=["5"])
    with pytest.raises(ValueError, match="layer '1' has no parameters of its own"):
        parameter_randomisation(net, X, R, ["ig"], layers=["1"])
    with pytest.raises(ValueError, match="no parameters to randomise"):
        parameter_randomisation(torch.nn.Sequential(torch.nn.ReLU()), X, R, ["ig"])
    with pytest.raises(TypeError, match="needs an eager torch.nn.Module"):
        parameter_randomisation(lambda Z: Z.sum(axis=1), X, R, ["kernel_shap"],
                                order="cascading")
    with warnings.catch_warnings():  # torch.jit.script's deprecation warning
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(net)
    with pytest.raises(TypeError, match="TorchScript"):
        parameter_randomisation(scripted, X, R, ["ig"])
    with pytest.raises(ValueError, match="order must be one of"):
        parameter_randomisation(net, X, R, ["ig"], order="bottom_up")
    with pytest.raises(ValueError, match="similarity must be one of"):
        parameter_randomisation(net, X, R, ["ig"], similarity=("pearson",))
    with pytest.raises(ValueError, match="unknown attribution method|Did you mean"):
        parameter_randomisation(net, X, R, ["integrated_gradient"])
    with pytest.raises(TypeError, match="seed"):
        parameter_randomisation(net, X, R, ["ig"], seed=1.5)
    assert randomisable_layers(net) == ["0", "2", "4"]


@pytest.mark.parametrize("order", ["cascading", "independent"])
def test_agrees_with_quantus_mprt(order, monkeypatch):
    """Quantus' MPRT on the same model and gradient attributions gives the same per-pair Spearman
    correlations of |a| layer by layer (insdel's per-layer seed replaced by Quantus' seed + 1)."""
    quantus = pytest.importorskip("quantus")
    import insdel.sanity.randomisation as sr

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(N, 12), torch.nn.ReLU(), torch.nn.Linear(12, 12),
                              torch.nn.ReLU(), torch.nn.Linear(12, 1)).double().eval()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, N))

    def grad(model, inputs, targets, **kw):
        x = torch.tensor(np.asarray(inputs), dtype=torch.float64, requires_grad=True)
        model(x).sum().backward()
        return x.grad.numpy()

    metric = quantus.MPRT(layer_order="top_down" if order == "cascading" else "independent",
                          seed=3, disable_warnings=True, display_progressbar=False)
    q = metric(model=net, x_batch=X, y_batch=np.zeros(20, int), a_batch=grad(net, X, None),
               explain_func=grad, device="cpu", softmax=False)
    monkeypatch.setattr(sr, "_layer_seed", lambda seed, name: seed + 1)
    res = parameter_randomisation(net, X, np.zeros(N), ["vanilla_grad"], order=order, seed=3,
                                  abc=False, similarity=("spearman_abs",))
    p = res.pairs[res.pairs["measure"] == "spearman_abs"]
    ours = {lay: d["value"].to_numpy() for lay, d in p.groupby("layer", sort=False)}
    assert set(ours) == {"trained"} | (set(q) - {"original"})
    np.testing.assert_allclose(ours["trained"], q["original"], atol=1e-12)
    for lay in res.layers:
        np.testing.assert_allclose(ours[lay], q[lay], atol=1e-12)
    if order == "cascading":  # Quantus' top_down order: output side first
        assert res.layers == [k for k in q if k != "original"]


def test_data_randomisation_retrains_on_permuted_labels():
    from insdel import datasets

    ds = datasets.load("dielectron_sim", n_events=800)
    seen = []

    def train(d, params, seed):
        from insdel.models import train_mlp

        seen.append(np.asarray(d.y_train).copy())
        return train_mlp(d, {"hidden": [16], "dropout": 0.0, "lr": 3e-3}, seed=seed,
                         max_epochs=15, progress=False)[0]

    res = data_randomisation(ds, ["integrated_gradients", "vanilla_grad"], n_pairs=20,
                             train=train, abc=True)
    assert len(seen) == 2 and not np.array_equal(seen[0], seen[1])
    assert sorted(seen[0]) == pytest.approx(sorted(seen[1]))
    assert res.kind == "data" and res.layers == ["permuted labels"]
    assert set(res.table["step"]) == {0, 1}
    assert set(res.flags["method"]) == {"integrated_gradients", "vanilla_grad"}


def test_docs_example_runs():
    text = (Path(__file__).resolve().parents[1] / "docs" / "sanity.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    import matplotlib

    matplotlib.use("Agg")
    for code in blocks:
        exec(compile(code, "docs/sanity.md", "exec"), {"__name__": "__docs__"})
    matplotlib.pyplot.close("all")


def test_data_randomisation_refits_a_clone_of_a_scikit_learn_estimator():
    """model= a fitted estimator: step 0 is that model, step 1 a clone fitted on the permuted
    labels, with its unset random_state taken from the seed (the same seed, the same bytes)."""
    from sklearn.ensemble import GradientBoostingRegressor

    from insdel import datasets
    from insdel.sanity import refit_clone

    ds = datasets.load("dielectron_sim", n_events=600)
    est = GradientBoostingRegressor(n_estimators=15, max_depth=2, subsample=0.7)
    est.fit(ds.X_train, ds.y_train)
    train = refit_clone(est)
    a, b = train(ds, None, 3), train(ds, None, 3)
    assert a is not est and a.random_state == 3 and est.random_state is None
    np.testing.assert_array_equal(a.predict(ds.X_test), b.predict(ds.X_test))
    with pytest.raises(ValueError, match="params: a scikit-learn estimator is refitted"):
        train(ds, "quick_cern", 0)
    res = data_randomisation(ds, {"x_minus_r": x_minus_r, "ks": "kernel_shap"}, model=est,
                             n_pairs=8, method_options={"ks": {"n_samples": 64}})
    again = data_randomisation(ds, {"x_minus_r": x_minus_r, "ks": "kernel_shap"}, model=est,
                               n_pairs=8, method_options={"ks": {"n_samples": 64}})
    pd.testing.assert_frame_equal(res.table, again.table)
    assert "x_minus_r" in res.flagged and res.layers == ["permuted labels"]
    with pytest.raises(ValueError, match="max_epochs caps insdel's MLP"):
        data_randomisation(ds, ["random"], model=est, n_pairs=4, max_epochs=2)


def test_groups_are_the_units_of_the_measures_and_the_curves(trained):
    """With groups, per-column attributions are summed per group: x - r's group sums, the
    ABCs of curves that move whole groups (insdel.evaluate with the same groups)."""
    from insdel import evaluate
    from insdel.groups import check_groups, group_attributions

    net, X, R = trained
    groups = [[0, 1, 2], [3, 4]]
    res = parameter_randomisation(net, X, R, {"x_minus_r": x_minus_r}, groups=groups,
                                  layers=["4"])
    grp = check_groups(groups, N)
    A = group_attributions(X - R, grp)
    ev = evaluate(net, X, R, {"x_minus_r": A}, n_random=0, add_random=False, groups=grp)
    t = res.table.set_index(["method", "step", "measure"])["mean"]
    assert t[("x_minus_r", 0, "insertion_abc")] == pytest.approx(
        ev.abc_array("x_minus_r", "insertion").mean(), rel=1e-12)
    assert "x_minus_r" in res.flagged
