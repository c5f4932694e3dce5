"""Your own data and model: the table recipe, models from any file, the run end to end (issue 14).

Everything runs on scikit-learn's diabetes data, written to CSV in a temporary folder.
"""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import insdel  # noqa: E402
from insdel import datasets  # noqa: E402
from insdel.cli import main as cli_main  # noqa: E402
from insdel.model_files import load_any  # noqa: E402


@pytest.fixture(scope="module")
def diabetes_csv(tmp_path_factory):
    from sklearn.datasets import load_diabetes

    df = load_diabetes(as_frame=True, scaled=False).frame
    p = tmp_path_factory.mktemp("data") / "diabetes.csv"
    df.to_csv(p, index=False)
    return p


@pytest.fixture(scope="module")
def diabetes_xy():
    from sklearn.datasets import load_diabetes

    d = load_diabetes(scaled=False)
    return d.data.astype(np.float64), d.target.astype(np.float64)


# -- the table recipe --------------------------------------------------------------------------------
def test_table_recipe_reads_a_csv(diabetes_csv):
    ds = datasets.load("table", path=str(diabetes_csv), target="target")
    assert ds.feature_names == ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
    assert ds.info["binary_detected"] == ["sex"] and ds.binary_mask.tolist()[1]
    assert len(ds.X_train) + len(ds.X_test) == 442 and len(ds.X_test) == 89
    np.testing.assert_allclose(ds.X_train[:, [0, 2]].mean(axis=0), 0, atol=1e-10)  # scaled
    raw = datasets.load("table", path=str(diabetes_csv), target="target", scale="none",
                       features=["age", "bmi"], split=0.5, split_seed=3)
    assert raw.feature_names == ["age", "bmi"] and len(raw.X_test) == 221
    assert raw.X_train.max() > 10  # raw units


def test_table_split_column_missing_values_and_categorical(tmp_path, diabetes_csv):
    df = pd.read_csv(diabetes_csv)
    df["part"] = np.where(np.arange(len(df)) % 4 == 0, "test", "train")
    df.loc[[3, 7], "bp"] = 9.0          # a missing-value code
    df.loc[5, "s1"] = np.nan            # an empty cell
    df["site"] = np.array(["a", "b", "c"])[np.arange(len(df)) % 3]
    p = tmp_path / "d.csv"
    df.to_csv(p, index=False)
    ds = datasets.load("table", path=str(p), target="target", split="part", missing=[9],
                      categorical=["site"])
    assert ds.info["n_dropped_missing"] == 3 and ds.info["n_kept"] == 439
    assert "part" not in ds.feature_names
    assert ds.feature_names[-3:] == ["site=a", "site=b", "site=c"]
    assert ds.info["groups"] == {"site": [10, 11, 12]}
    assert ds.groups is not None and ds.groups.m == len(ds.feature_names) - 2  # one unit "site"
    g = ds.groups.names.index("site")
    assert ds.groups.columns(g).tolist() == [10, 11, 12]
    assert ds.binary_mask[-3:].all()
    assert len(ds.X_test) == int((df.drop(index=[3, 5, 7])["part"] == "test").sum())


def test_table_recipe_errors_name_row_column_and_option(tmp_path, diabetes_csv):
    df = pd.read_csv(diabetes_csv).astype(object)
    df.loc[10, "bmi"] = "tall"
    p = tmp_path / "bad.csv"
    df.to_csv(p, index=False)
    with pytest.raises(ValueError, match=r"column 'bmi' has a non-numeric value 'tall' at row 11 "
                                         r"\(file line 12\)"):
        datasets.load("table", path=str(p), target="target", features=["age", "bmi"])
    with pytest.raises(ValueError, match="unknown option 'traget'; did you mean 'target'"):
        datasets.load("table", path=str(diabetes_csv), traget="target")
    with pytest.raises(ValueError, match="target column 'targt' not in .*did you mean 'target'"):
        datasets.load("table", path=str(diabetes_csv), target="targt")
    with pytest.raises(ValueError, match="binary column 'bmi' has"):
        datasets.load("table", path=str(diabetes_csv), target="target", binary=["bmi"])


def test_table_recipe_reads_parquet(tmp_path, diabetes_csv):
    p = tmp_path / "d.parquet"
    pd.read_csv(diabetes_csv).to_parquet(p)
    a = datasets.load("table", path=str(p), target="target")
    b = datasets.load("table", path=str(diabetes_csv), target="target")
    np.testing.assert_allclose(a.X_train, b.X_train)


def test_table_typo_in_a_numeric_column_is_an_error_not_a_dropped_column(tmp_path, diabetes_csv):
    """One bad cell in a numeric column used to drop the whole column silently (features not
    given); it is an error naming the column, the value, the row and the file line."""
    df = pd.read_csv(diabetes_csv).astype(object)
    df.loc[5, "bmi"] = "1,5"
    p = tmp_path / "typo.csv"
    df.to_csv(p, index=False)
    with pytest.raises(ValueError, match=r"typo.csv: column 'bmi' has a non-numeric value '1,5' "
                                         r"at row 6 \(file line 7\).*missing = \['1,5'\].*"
                                         r"drop = \['bmi'\]"):
        datasets.load("table", path=str(p), target="target")
    q = tmp_path / "typo.parquet"
    df.astype(str).to_parquet(q)
    with pytest.raises(ValueError, match=r"column 'bmi' has a non-numeric value '1,5' at row 6"):
        datasets.load("table", path=str(q), target="target")
    # declared missing: the row is dropped, the column kept (also with features= given)
    for kw in ({}, {"features": ["age", "bmi"]}):
        ds = datasets.load("table", path=str(p), target="target", missing=["1,5"], **kw)
        assert "bmi" in ds.feature_names and ds.info["n_dropped_missing"] == 1
    ds = datasets.load("table", path=str(p), target="target", drop=["bmi"])  # explicit: no error
    assert "bmi" not in ds.feature_names and len(ds.feature_names) == 9


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_table_boolean_column_is_a_binary_0_1_feature(tmp_path, diabetes_csv, fmt):
    df = pd.read_csv(diabetes_csv)
    df["sex"] = df["sex"] == 2  # True/False in the CSV, a bool column in parquet
    p = tmp_path / f"b.{fmt}"
    df.to_csv(p, index=False) if fmt == "csv" else df.to_parquet(p)
    ds = datasets.load("table", path=str(p), target="target", scale="none")
    assert ds.feature_names == ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
    assert ds.info["binary_detected"] == ["sex"] and ds.binary_mask.tolist()[1]
    assert ds.raw_binary_levels[1].tolist() == [0.0, 1.0]
    np.testing.assert_array_equal(ds.X_train[:, 1], df["sex"].to_numpy(np.float64)[ds.train_index])
    assert "left out" not in ds.description


def test_table_left_out_columns_warn_and_are_named(tmp_path, diabetes_csv):
    import warnings

    df = pd.read_csv(diabetes_csv)
    df["site"] = np.array(["north", "south"])[np.arange(len(df)) % 2]
    df["note"] = ""
    p = tmp_path / "w.csv"
    df.to_csv(p, index=False)
    with pytest.warns(UserWarning, match=r"w.csv: column\(s\) \['site'\] \(text.*\['note'\] "
                                         r"\(no values\) are left out.*drop = \['site', 'note'\]"):
        ds = datasets.load("table", path=str(p), target="target")
    assert len(ds.feature_names) == 10 and ds.info["ignored_columns"] == ["site", "note"]
    assert "left out column(s) ['site']" in ds.description
    with warnings.catch_warnings():  # left out by the user: nothing to warn about
        warnings.simplefilter("error")
        a = datasets.load("table", path=str(p), target="target", drop=["site", "note"])
        b = datasets.load("table", path=str(p), target="target", features=["age", "bmi"])
        c = datasets.load("table", path=str(p), target="target", categorical=["site"],
                         drop=["note"])
    assert len(a.feature_names) == 10 and b.feature_names == ["age", "bmi"]
    assert c.feature_names[-2:] == ["site=north", "site=south"]


# -- models from any file ------------------------------------------------------------------------
def _net(n=10):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(n, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def _f(net, X):
    with torch.no_grad():
        return net(torch.as_tensor(X, dtype=torch.float32)).numpy()[:, 0]


def test_sklearn_joblib_needs_trust_and_skops_does_not(tmp_path, diabetes_xy):
    import joblib
    import skops.io as sio
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = diabetes_xy
    est = make_pipeline(StandardScaler(), Ridge()).fit(X, y)
    joblib.dump(est, tmp_path / "m.joblib")
    with pytest.raises(PermissionError, match="pickle.*runs whatever code.*--trust-model"):
        load_any(tmp_path / "m.joblib")
    m, info = load_any(tmp_path / "m.joblib", trust=True)
    assert info["format"] == "joblib" and info["trusted"] and not info["gradients"]
    np.testing.assert_allclose(insdel.as_model(m)(X), est.predict(X))
    sio.dump(est, tmp_path / "m.skops")
    m2, info2 = load_any(tmp_path / "m.skops")
    assert info2["format"] == "skops" and not info2["trusted"]
    np.testing.assert_allclose(insdel.as_model(m2)(X), est.predict(X))


def test_torch_formats(tmp_path):
    net = _net().eval()
    X = np.random.default_rng(0).normal(size=(7, 10))
    torch.save(net, tmp_path / "full.pt")
    with pytest.raises(PermissionError, match="pickled torch object"):
        load_any(tmp_path / "full.pt")
    m, info = load_any(tmp_path / "full.pt", trust=True)
    assert info["format"] == "torch_module" and info["gradients"]
    np.testing.assert_allclose(insdel.as_model(m)(X), _f(net, X), atol=1e-6)
    torch.jit.save(torch.jit.script(net), tmp_path / "ts.pt")
    m, info = load_any(tmp_path / "ts.pt")
    assert info["format"] == "torchscript" and info["gradients"]
    np.testing.assert_allclose(insdel.as_model(m)(X), _f(net, X), atol=1e-6)
    A = insdel.attribute(m, X, X[::-1].copy(), "integrated_gradients", n_steps=16)
    assert A.shape == X.shape


def test_state_dict_with_preset(tmp_path):
    from insdel.models import MLP
    from insdel.models import get as preset

    spec = preset("quick_cern")
    net = MLP(10, list(spec["hidden"]), float(spec.get("dropout", 0.0))).eval()
    torch.save(net.state_dict(), tmp_path / "sd.pt")
    with pytest.raises(ValueError, match="bare state_dict: name the architecture with preset"):
        load_any(tmp_path / "sd.pt")
    m, info = load_any(tmp_path / "sd.pt", preset="quick_cern")
    X = np.random.default_rng(1).normal(size=(5, 10))
    assert info["format"] == "state_dict"
    np.testing.assert_allclose(insdel.as_model(m)(X), insdel.as_model(net)(X), atol=1e-6)


def _export_onnx(net, n: int, path) -> None:
    """Write ``net`` (n inputs) as ONNX with a dynamic batch axis, as a user would."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(2, n),), str(path), input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "b"}, "y": {0: "b"}},
                          dynamo=False)


def test_onnx_model_matches_torch(tmp_path):
    net = _net().eval()
    _export_onnx(net, 10, tmp_path / "m.onnx")
    m, info = load_any(tmp_path / "m.onnx")
    X = np.random.default_rng(2).normal(size=(9, 10))
    assert info["format"] == "onnx" and not info["gradients"]
    np.testing.assert_allclose(insdel.as_model(m)(X), _f(net, X), atol=1e-5)
    with pytest.raises(TypeError, match=r"\['integrated_gradients'\] need input gradients.*"
                       "Methods that work with it: cohort_shapley, exact_shapley, igcs, kernel_shap, lime, occlusion, random"):
        insdel.attribute(m, X, X[::-1].copy(), "integrated_gradients")


def test_unknown_format_and_missing_file(tmp_path):
    (tmp_path / "m.xyz").write_text("x")
    with pytest.raises(ValueError, match="unknown model format"):
        load_any(tmp_path / "m.xyz")
    with pytest.raises(FileNotFoundError):
        load_any(tmp_path / "nope.onnx")


# -- end to end: insdel run on your CSV and your model ------------------------------------------
CONFIG = """
name = "diabetes"
seed = 0
[data]
recipe = "table"
[data.options]
path = "{csv}"
target = "target"
[model]
path = "{model}"
{trust}
[targets]
n = 30
[[policies]]
spec = "one_to_one"
[methods]
names = ["kernel_shap", "lime"]
[methods.options.kernel_shap]
n_samples = 64
backend = "insdel"
[methods.options.lime]
n_samples = 64
[evaluation]
n_random = 3
[figures]
enabled = {figures}
"""


def _fit_on_table(diabetes_csv):
    """A model of the data set as the table recipe scales it (what a user would train)."""
    ds = datasets.load("table", path=str(diabetes_csv), target="target")
    return ds


@pytest.mark.parametrize("kind", ["joblib", "onnx"])
def test_run_on_your_csv_and_model(tmp_path, diabetes_csv, kind, capsys):

    ds = _fit_on_table(diabetes_csv)
    if kind == "joblib":
        import joblib
        from sklearn.ensemble import GradientBoostingRegressor

        est = GradientBoostingRegressor(n_estimators=30, random_state=0)
        est.fit(ds.X_train, ds.y_train)
        model_path = tmp_path / "model.joblib"
        joblib.dump(est, model_path)
    else:
        net = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.Tanh(),
                                  torch.nn.Linear(16, 1)).eval()
        model_path = tmp_path / "model.onnx"
        _export_onnx(net, 10, model_path)
    cfg = tmp_path / "my.toml"
    cfg.write_text(CONFIG.format(csv=diabetes_csv.as_posix(), model=model_path.as_posix(),
                                 trust="", figures="true" if kind == "onnx" else "false"))
    out = tmp_path / "out"
    if kind == "joblib":  # a pickle: refused without trust, with the reason
        assert cli_main(["run", str(cfg), "--out", str(out), "--no-progress"]) == 1
        assert "runs whatever code" in capsys.readouterr().err
        args = ["run", str(cfg), "--out", str(out), "--no-progress", "--trust-model"]
    else:
        args = ["run", str(cfg), "--out", str(out), "--no-progress"]
    assert cli_main(args) == 0
    printed = capsys.readouterr()
    assert "Policy: one_to_one (30 pairs, 15 independent units)" in printed.out and "kernel_shap" in printed.out
    assert "data: diabetes.csv (recipe table" in printed.err
    m = json.loads((out / "manifest.json").read_text())
    assert m["data"]["file"].endswith("diabetes.csv") and len(m["data"]["file_sha256"]) == 64
    assert m["model"]["format"] == kind and m["data"]["features"] == 10
    if kind == "onnx":
        assert (out / "figures").is_dir() and list((out / "figures").glob("*.png"))


def test_gradient_methods_on_a_model_without_gradients_is_a_clear_error(tmp_path, diabetes_csv,
                                                                        capsys):
    import skops.io as sio
    from sklearn.linear_model import Ridge

    ds = _fit_on_table(diabetes_csv)
    sio.dump(Ridge().fit(ds.X_train, ds.y_train), tmp_path / "m.skops")
    cfg = tmp_path / "g.toml"
    cfg.write_text(CONFIG.format(csv=diabetes_csv.as_posix(), model=(tmp_path / "m.skops")
                                 .as_posix(), trust="", figures="false")
                   .replace('names = ["kernel_shap", "lime"]',
                            'names = ["kernel_shap", "lime", "integrated_gradients"]'))
    assert cli_main(["run", str(cfg), "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "['integrated_gradients'] need input gradients" in err
    assert "of yours: ['kernel_shap', 'lime']" in err


# -- the API speaks the ecosystem -----------------------------------------------------------------
def _frame_and_net(n=5, B=12, seed=0):
    rng = np.random.default_rng(seed)
    cols = [f"f{j}" for j in range(n)]
    X = pd.DataFrame(rng.normal(size=(B, n)), columns=cols)
    R = pd.DataFrame(rng.normal(size=(B, n)), columns=cols)
    return X, R, _net(n).double().eval()


def test_dataframe_names_reach_the_evaluation_and_a_plot(tmp_path):
    import matplotlib.pyplot as plt

    from insdel import plotting

    X, R, net = _frame_and_net()
    A = insdel.attribute(net, X, R, "ig", n_steps=20)
    ev = insdel.evaluate(net, X, R, {"a": A, "b": -A}, n_random=2)
    assert ev.feature_names == list(X.columns)
    steps = ev.ordering(0, "a")
    assert steps["name"].tolist()[1:] == [X.columns[j] for j in np.argsort(-A[0], kind="stable")]
    assert {"insertion", "deletion"} <= set(steps.columns)
    ev.save(tmp_path)
    assert insdel.Evaluation.load(tmp_path).feature_names == list(X.columns)
    fig = plotting.plot_pair(ev, 0)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[1:] == steps["name"].tolist()[1:]
    plt.close(fig)
    named = insdel.evaluate(net, X.to_numpy(), R.to_numpy(), {"a": A},
                            feature_names=["p", "q", "r", "s", "t"], n_random=0)
    assert named.ordering(1, "a")["name"].iloc[1] in {"p", "q", "r", "s", "t"}
    with pytest.raises(ValueError, match="feature_names has 2 names for n = 5"):
        insdel.evaluate(net, X, R, {"a": A}, feature_names=["p", "q"])


def test_labelled_inputs_are_matched_by_name_not_position():
    """A DataFrame R, a Series reference row and DataFrame attributions are matched to X's
    columns by name (reordered when their order differs: they were read by position); other
    names are an error naming them."""
    X, R, net = _frame_and_net()
    shuffled = R[list(reversed(X.columns))]
    want = insdel.trace(net, X, R, np.tile(np.arange(5), (12, 1)))
    got = insdel.trace(net, X, shuffled, np.tile(np.arange(5), (12, 1)))
    np.testing.assert_array_equal(got.fr, want.fr)
    np.testing.assert_array_equal(insdel.attribute(net, X, shuffled, "exact_shapley"),
                                  insdel.attribute(net, X, R, "exact_shapley"))
    row = R.iloc[0]
    one = X.iloc[:1]
    np.testing.assert_array_equal(insdel.trace(net, one, row[::-1], np.arange(5)[None]).fr,
                                  insdel.trace(net, one, row, np.arange(5)[None]).fr)
    A = pd.DataFrame(np.random.default_rng(1).normal(size=X.shape), columns=X.columns)
    ev = insdel.evaluate(net, X, R, {"a": A}, n_random=0)
    ev_shuffled = insdel.evaluate(net, X, R, {"a": A[list(reversed(X.columns))]}, n_random=0)
    np.testing.assert_array_equal(ev_shuffled.orders, ev.orders)
    from insdel.metrics import evaluate_metrics

    m1 = evaluate_metrics(net, X, R, {"a": A}, metrics=["faithfulness_correlation"], seed=0)
    m2 = evaluate_metrics(net, X, R, {"a": A[list(reversed(X.columns))]},
                          metrics=["faithfulness_correlation"], seed=0)
    np.testing.assert_array_equal(m1.scores["value"], m2.scores["value"])
    with pytest.raises(ValueError, match=r"R is labelled by other columns than X.*"
                                         r"missing \['f4'\], unexpected \['zz'\]"):
        insdel.trace(net, X, R.rename(columns={"f4": "zz"}), np.tile(np.arange(5), (12, 1)))
    with pytest.raises(ValueError, match=r"attributions\['a'\] is labelled by other columns"):
        insdel.evaluate(net, X, R, {"a": A.rename(columns={"f0": "zz"})}, n_random=0)


def test_plots_work_with_any_method_names(tmp_path):
    import matplotlib.pyplot as plt

    from insdel import plotting

    X, R, net = _frame_and_net(seed=1)
    A = insdel.attribute(net, X, R, "ig", n_steps=10)
    ev = insdel.evaluate(net, X, R, {"a": A, "b": np.abs(A)}, n_random=3)
    figs = [plotting.figure4(ev), plotting.insertion_deletion_figure(ev),
            plotting.plot_pair(ev, 1), plotting.abc_scatter(ev).figure,
            plotting.insertion_deletion_scatter(ev).figure]
    for fig in figs:
        for ax in fig.axes:
            title = ax.get_title()
            assert title or ax.get_xlabel()
    assert "Insertion" in figs[2].axes[1].get_title() or "Insertion" in figs[2].axes[0].get_title()
    paths = plotting.policy_figures(ev, "mine", tmp_path, n_random=2, dpi=40)
    assert paths and all(p.is_file() for p in paths)
    plt.close("all")


def test_attribute_accepts_captum_objects_callables_and_shap_explanations():
    from captum.attr import IntegratedGradients as CIG

    X, R, net = _frame_and_net(seed=2)
    ours = insdel.attribute(net, X, R, "ig", rule="gausslegendre", n_steps=50)
    theirs, info = insdel.attribute(net, X, R, CIG(net), return_info=True)
    np.testing.assert_allclose(theirs, ours, atol=1e-10)
    assert info["method"] == "IntegratedGradients" and info["completeness_gap"].shape == (12,)
    grad_x_diff = insdel.attribute(net, X, R, lambda X, R: (X - R) * 2.0)
    np.testing.assert_allclose(grad_x_diff, (X.to_numpy() - R.to_numpy()) * 2.0)

    class Explanation:  # the shape of shap.Explanation: attributions in .values
        def __init__(self, values):
            self.values = values

    ev = insdel.evaluate(net, X, R, {"shap": Explanation(ours), "tensor": torch.tensor(ours)},
                         n_random=0, add_random=False)
    np.testing.assert_allclose(ev.abc_array("shap"), ev.abc_array("tensor"))


def test_output_selects_one_output_and_R_of_one_row_broadcasts():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                              torch.nn.Linear(8, 3)).double().eval()
    X = np.random.default_rng(3).normal(size=(6, 4))
    r = np.zeros((1, 4))
    with torch.no_grad():
        logits = net(torch.from_numpy(X)).numpy()
    m2 = insdel.as_model(net, output=2)
    np.testing.assert_allclose(m2(X), logits[:, 2])
    prob = insdel.as_model(net, output=lambda y: torch.softmax(torch.as_tensor(y), -1)[:, 0])
    np.testing.assert_allclose(prob(X), np.exp(logits[:, 0]) / np.exp(logits).sum(1), rtol=1e-6)
    A = insdel.attribute(prob, X, r, "ig", n_steps=64)  # gradients flow through the selection
    assert A.shape == (6, 4)
    c1 = insdel.curves(m2, X, r, A)
    c2 = insdel.curves(m2, X, np.zeros(4), A)
    np.testing.assert_array_equal(c1, c2)
    with pytest.raises(ValueError, match="out of range"):
        insdel.as_model(net, output=5)(X)


def test_every_panel_of_the_run_figures_names_its_mode(tmp_path):
    import matplotlib.pyplot as plt

    from insdel import plotting
    from insdel.plotting import runs as run_figures  # policy_figures' module: it saves there

    X, R, net = _frame_and_net(seed=4)
    A = insdel.attribute(net, X, R, "ig", n_steps=10)
    ev = insdel.evaluate(net, X, R, {"a": A, "b": -A}, n_random=2)
    seen = []
    orig = run_figures.save_figure

    def spy(fig, path, dpi=110):
        seen.append([ax.get_title() for ax in fig.axes if ax.lines])
        return orig(fig, path, dpi)

    run_figures.save_figure = spy
    try:
        plotting.policy_figures(ev, "p", tmp_path, dpi=30)
    finally:
        run_figures.save_figure = orig
        plt.close("all")
    pair_figs = [t for t in seen if any("pair" in x for x in t)]
    assert pair_figs
    for titles in pair_figs:
        for t in titles:
            if "pair" in t:
                assert t.startswith(("Insertion", "Deletion")), t


def test_run_on_a_csv_with_a_categorical_moves_it_as_one_unit(tmp_path, diabetes_csv, capsys):
    """``categorical=`` columns become one feature group end to end: the run's curves have one
    point per unit (11 = 10 columns + the 3-level one-hot as one), as the housing recipes'
    one-hot Location does."""
    df = pd.read_csv(diabetes_csv)
    df["site"] = np.array(["a", "b", "c"])[np.arange(len(df)) % 3]
    csv = tmp_path / "d.csv"
    df.to_csv(csv, index=False)
    net = torch.nn.Sequential(torch.nn.Linear(13, 8), torch.nn.Tanh(),
                              torch.nn.Linear(8, 1)).eval()
    model_path = tmp_path / "model.onnx"
    _export_onnx(net, 13, model_path)
    text = CONFIG.format(csv=csv.as_posix(), model=model_path.as_posix(), trust="",
                         figures="false").replace('target = "target"',
                                                  'target = "target"\ncategorical = ["site"]')
    cfg = tmp_path / "cat.toml"
    cfg.write_text(text)
    out = tmp_path / "out"
    assert cli_main(["run", str(cfg), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    curves = [np.load(f) for f in sorted(out.rglob("*.npz"))]
    shapes = {a.shape[-1] for z in curves for k, a in z.items() if "curves" in k}
    assert shapes == {12}, shapes  # 11 units -> 12 curve points


def test_table_error_names_the_true_file_line(tmp_path):
    """A quoted cell spanning lines, or a blank line, before the bad row used to shift the file
    line in the error (it was the row number + 1); it is the line the row starts on."""
    lines = ["a,b,note,y", "1,2,plain,3", '4,5,"two', 'lines",6', "", "7,8,x,9", "oops,1,x,2",
             "2,3,x,4"]
    p = tmp_path / "multi.csv"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"column 'a' has a non-numeric value 'oops' at row 4 "
                                         r"\(file line 7\)"):
        datasets.load("table", path=str(p), target="y", features=["a", "b"])
    # the usual missing-value tokens are missing, documented: the row is dropped and counted
    p2 = tmp_path / "na.csv"
    p2.write_text("a,b,y\n1,2,3\nNA,5,6\n7,None,9\n2,3,4\n5,6,8\n")
    with pytest.warns(UserWarning, match=r"2 of 5 rows \(40.0 %, more than 5 %\) are dropped"):
        ds = datasets.load("table", path=str(p2), target="y")
    assert ds.info["n_dropped_missing"] == 2
    assert ds.info["missing_by_column"] == {"a": 1, "b": 1}


def test_table_columns_equal_after_stripping_are_an_error(tmp_path):
    p = tmp_path / "dup.csv"
    for header in ("a,a ,y", "a,a,y"):  # pandas reads the second as 'a.1'
        p.write_text(header + "\n1,2,3\n4,5,6\n7,8,9\n")
        with pytest.raises(ValueError, match=r"duplicated column\(s\) \['a'\]"):
            datasets.load("table", path=str(p), target="y")


def test_table_non_finite_cell_names_the_row_and_the_file_line(tmp_path, diabetes_csv):
    """An 'inf' cell was reported from the cleaned table, 0-based and without the file line
    ("row 5"), where a text cell gives the 1-based row and the file line; both give both now."""
    df = pd.read_csv(diabetes_csv).astype(object)
    df.loc[5, "bmi"] = "inf"
    df.loc[9, "bmi"] = "-inf"
    p = tmp_path / "inf.csv"
    df.to_csv(p, index=False)
    with pytest.raises(ValueError, match=r"inf.csv: column 'bmi' has a non-finite value 'inf' at "
                                         r"row 6 \(file line 7\) and 1 more row\(s\).*"
                                         r"missing = \['inf'\]"):
        datasets.load("table", path=str(p), target="target")
    q = tmp_path / "inf.parquet"
    pd.read_csv(diabetes_csv).assign(bmi=lambda d: d["bmi"].where(d.index != 5, np.inf)) \
        .to_parquet(q)
    with pytest.raises(ValueError, match=r"column 'bmi' has a non-finite value 'inf' at row 6[;.]"):
        datasets.load("table", path=str(q), target="target")
    # declared missing: dropped and counted like any missing value
    ds = datasets.load("table", path=str(p), target="target", missing=["inf", "-inf"])
    assert ds.info["n_dropped_missing"] == 2


def test_table_empty_column_is_named_not_advised_as_text(tmp_path, diabetes_csv):
    """A column with no values got the text-column advice (one-hot encode it) when left out, and
    failed with 'only 0 complete row(s)' when listed in features; a model fitted with it failed
    only at its first prediction with scikit-learn's feature-count error. Each is now a clear
    message naming the column."""
    import warnings

    import joblib
    from sklearn.linear_model import Ridge

    df = pd.read_csv(diabetes_csv)
    df.insert(3, "note", np.nan)
    p = tmp_path / "empty.csv"
    df.to_csv(p, index=False)
    with pytest.raises(ValueError, match=r"empty.csv: feature column 'note' has no values.*"
                                         r"leave 'note' out of features"):
        datasets.load("table", path=str(p), target="target", features=["age", "note"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = datasets.load("table", path=str(p), target="target")
    text = " ".join(str(w.message) for w in caught)
    assert "['note'] (no values) are left out" in text and "no values (['note']" in text
    assert "one-hot" not in text
    assert ds.info["empty_columns"] == ["note"] and ds.n_features == 10
    X = df.drop(columns="target").fillna(0.0)
    model = tmp_path / "ridge.joblib"
    joblib.dump(Ridge().fit(X, df["target"]), model)
    with pytest.raises(ValueError, match=r"ridge.joblib: the model was fitted on 11 features but "
                                         r"the data set gives 10; the data lack \['note'\].*"
                                         r"left out column\(s\) \['note'\]"):
        load_any(model, trust=True, n_features=ds.n_features, dataset=ds)
