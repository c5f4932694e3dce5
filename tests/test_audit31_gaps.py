"""Audit 31 (gaps): no zero-length or silently missing error bar for an undefined standard error
in ``decomposition_figure`` and ``abc_bars``, no "± nan" in ``roar.to_markdown``, and
``progress=`` checked in the public functions that never reach ``progress_bar``."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from _plots import error_segments  # noqa: E402

import insdel  # noqa: E402
from insdel import models, plotting, roar  # noqa: E402
from insdel.attribution import InputXGradient, VanillaGrad, attribute  # noqa: E402
from insdel.policies import get as get_policy  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")




def _no_degenerate(segs) -> bool:
    """No NaN and no zero-length error bar among the segments."""
    return all(np.all(np.isfinite(g)) and not np.allclose(g[0], g[1]) for g in segs)


def _texts(ax) -> str:
    """The axes' texts and its x label (where the bar charts put their note)."""
    return " | ".join([t.get_text() for t in ax.texts] + [ax.get_xlabel()])


# --- 1. decomposition_figure -----------------------------------------------------------------------
def _dec(n_pairs: int) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    cols = {}
    for mode in ("insertion", "deletion"):
        cols[f"best_abc_{mode}"] = 1.0 + rng.random(n_pairs)
        cols[f"expected_abc_{mode}"] = 0.1 * rng.random(n_pairs)
        for m in ("kernel_shap", "random"):
            cols[f"abc_{mode}_{m}"] = rng.normal(size=n_pairs)
    return pd.DataFrame(cols)


def test_decomposition_figure_one_pair_draws_no_error_bar_and_says_so():
    fig = plotting.decomposition_figure(_dec(1), ["kernel_shap", "random"])
    assert len(fig.axes) == 2
    for ax in fig.axes:
        segs = error_segments(ax)
        assert segs == []  # was a zero-length bar per method: read as "no uncertainty"
        assert "1 pair: no standard error bars" in _texts(ax)
        assert ax.get_xlabel() == "mean ABC\n(1 pair: no standard error bars)"
        assert ax.get_title().endswith("(1 pair)")
        assert len(ax.patches) == 2  # the bars (means) are still drawn


def test_decomposition_figure_two_pairs_keeps_its_error_bars_and_no_note():
    fig = plotting.decomposition_figure(_dec(3), ["kernel_shap", "random"])
    for ax in fig.axes:
        segs = error_segments(ax)
        assert len(segs) == 2 and _no_degenerate(segs)
        assert "no standard error" not in _texts(ax)
        assert ax.get_xlabel() == "mean ABC ± s.e."
        assert ax.get_title().endswith("(3 pairs)")


def test_decomposition_figure_a_column_with_nan_is_named():
    dec = _dec(3)
    dec.loc[0, "abc_insertion_random"] = np.nan
    ins = plotting.decomposition_figure(dec, ["kernel_shap", "random"]).axes[0]
    segs = error_segments(ins)
    assert len(segs) == 1 and _no_degenerate(segs)  # kernel_shap's only
    text = _texts(ins)
    assert "NaN standard error: no standard error bars for Random" in text
    assert "1 pair" not in text


def test_decomposition_figure_refuses_an_empty_table():
    with pytest.raises(ValueError, match="dec has no rows"):
        plotting.decomposition_figure(_dec(0))


# --- 2. abc_bars -----------------------------------------------------------------------------------
def _evaluation(n_pairs: int):
    rng = np.random.default_rng(2)
    X, R = rng.normal(size=(n_pairs, 4)), rng.normal(size=(n_pairs, 4))
    A = X - R
    return insdel.evaluate(lambda Z: (Z ** 2).sum(axis=1), X, R,
                           {"kernel_shap": A, "random": rng.normal(size=A.shape)},
                           n_random=0, add_random=False)


def test_abc_bars_one_pair_draws_no_error_bar_and_says_so():
    ev = _evaluation(1)
    s = ev.summary()
    assert s["std_error"].isna().all() and (s["n"] == 1).all()  # the case being tested
    ax = plotting.abc_bars(ev)
    assert error_segments(ax) == []  # was yerr=NaN: matplotlib silently drew nothing
    assert "1 pair: no standard error bars" in _texts(ax)
    assert ax.get_ylabel() == "mean ABC"
    assert len(ax.patches) == 2 * len(ev.modes)  # every mean is still a bar


def test_abc_bars_several_pairs_keeps_its_error_bars_and_no_note():
    ax = plotting.abc_bars(_evaluation(5))
    segs = error_segments(ax)
    assert len(segs) == 2 * 2 and _no_degenerate(segs)
    assert ax.get_xlabel() == "attribution method" and not ax.texts
    assert ax.get_ylabel() == "mean ABC ± s.e."


def test_abc_bars_names_the_bars_without_standard_error():
    s = _evaluation(5).summary()
    s = s[s["kind"] != "difference"].copy()
    pick = (s["method"] == "random") & (s["mode"] == "insertion")
    s.loc[pick, ["std_error", "n"]] = [np.nan, 1]
    ax = plotting.abc_bars(s)
    segs = error_segments(ax)
    assert len(segs) == 3 and _no_degenerate(segs)
    assert "1 pair: no standard error bars for Random (insertion)" in _texts(ax)
    assert ax.get_ylabel() == "mean ABC ± s.e."
    s.loc[pick, "n"] = 4  # a NaN that does not come from one pair is not called one
    text = _texts(plotting.abc_bars(s))
    assert "NaN standard error: no standard error bars for Random (insertion)" in text


@pytest.mark.parametrize(("n_pairs", "title"), [(1, "one: mean ABC"), (3, "one: mean ABC ± s.e.")])
def test_policy_figures_mean_abc_title_follows_the_bars(tmp_path, monkeypatch, n_pairs, title):
    from insdel.plotting import runs as run_figures  # policy_figures' module: it saves there

    titles = {}
    save = run_figures.save_figure

    def record(fig, path, dpi=110):
        titles[path.name] = [ax.get_title() for ax in fig.axes]
        return save(fig, path, dpi)

    monkeypatch.setattr(run_figures, "save_figure", record)
    plotting.policy_figures(_evaluation(n_pairs), "one", tmp_path, n_random=0)
    assert titles["one_mean_abc.png"] == [title]  # was "± s.e." over bars that have none


# --- 3. roar.to_markdown ---------------------------------------------------------------------------
def _roar_table(replicates: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for r in range(replicates):
        rows.append(("none", "none", 0.0, r, 1.0 + 0.1 * rng.random(), 10))
        for m, o in (("good", "signed"), ("random", "random")):
            for q in (0.5, 1.0):
                rows.append((m, o, q, r, 2.0 + q + 0.1 * rng.random(), 10))
    return pd.DataFrame(rows, columns=roar.TABLE_COLUMNS)


def test_roar_to_markdown_one_replicate_has_no_plus_minus_nan():
    s = roar.summarize(_roar_table(1))
    assert s["std_error"].isna().all()
    md = roar.to_markdown(s)
    assert "nan" not in md.lower() and "±" not in md.split("\n\n")[1]  # the table
    row = next(ln for ln in md.splitlines() if ln.startswith("| good | signed |"))
    cells = [c.strip() for c in row.strip("|").split("|")][2:]
    g = s[s["method"] == "good"]
    want = [f"{v:.4f}" for v in g.dropna(subset=["q"]).sort_values("q")["mean"]]
    assert cells == [*want, f"{g[g['q'].isna()]['mean'].iloc[0]:+.4f}"]
    assert ("Cells without ± s.e. come from one replicate: the standard error needs at least "
            "two replicates") in md
    assert "area vs line" in md and "Area = ∫" in md


def test_roar_to_markdown_two_replicates_is_unchanged():
    s = roar.summarize(_roar_table(2))
    md = roar.to_markdown(s, digits=3)
    assert "Cells without" not in md and "nan" not in md.lower()
    g = s[s["method"] == "good"]
    pts = g.dropna(subset=["q"]).sort_values("q")
    area = g[g["q"].isna()].iloc[0]
    want = ("| good | signed | "
            + " | ".join(f"{r['mean']:.3f} ± {r['std_error']:.3f}" for _, r in pts.iterrows())
            + f" | {area['mean']:+.3f} ± {area['std_error']:.3f} |")
    assert want in md.splitlines()


def test_roar_to_markdown_only_the_nan_cells_lose_their_se():
    s = roar.summarize(_roar_table(2))
    s.loc[(s["method"] == "good") & (s["q"] == 0.5), "std_error"] = np.nan
    md = roar.to_markdown(s)
    row = next(ln for ln in md.splitlines() if ln.startswith("| good | signed |"))
    cells = [c.strip() for c in row.strip("|").split("|")][2:]
    assert "±" in cells[0] and "±" not in cells[1] and "±" in cells[2] and "±" in cells[3]
    assert "± nan" not in md and "nan" not in md.split("\n\n")[1]  # the table
    assert "Cells without ± s.e.: the standard error is NaN there" in md  # n = 2: not one


# --- 4. progress= where no progress_bar is reached -------------------------------------------------
BAD = ["no", "False", 0, 1, [], np.int64(1)]


@pytest.fixture(scope="module")
def lin():
    import torch

    torch.manual_seed(0)
    return torch.nn.Linear(3, 1).double()


def _xr():
    rng = np.random.default_rng(3)
    return rng.normal(size=(4, 3)), rng.normal(size=(4, 3))


@pytest.mark.parametrize("cls", [VanillaGrad, InputXGradient])
@pytest.mark.parametrize("bad", BAD)
def test_gradient_methods_refuse_a_progress_that_is_not_a_bool(lin, cls, bad):
    X, R = _xr()
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        cls(lin).attribute(X, R, progress=bad)
    with pytest.raises(TypeError, match="progress"):
        attribute(lin, X, R, cls.name, progress=bad)


@pytest.mark.parametrize("cls", [VanillaGrad, InputXGradient])
@pytest.mark.parametrize("ok", [None, True, False, np.True_, np.False_])
def test_gradient_methods_accept_none_true_false(lin, cls, ok):
    X, R = _xr()
    np.testing.assert_array_equal(cls(lin).attribute(X, R, progress=ok),
                                  cls(lin).attribute(X, R))


_POLICIES = [("one_to_one", {}), ("mean", {}), ("median", {}), ("mode", {}), ("average", {}),
             ("fixed", {"index": 0}), ("black", {"shape": (1, 2, 2)}),
             ("white", {"shape": (1, 2, 2)}), ("channel_mean", {"shape": (1, 2, 2)}),
             ("blurred", {"shape": (1, 2, 2), "klen": 3, "sigma": 1.0}),
             ("noise", {"shape": (1, 2, 2)}), ("image", {"shape": (1, 2, 2), "image": np.zeros(4)}),
             ("counterfactual", {})]


def _f4(X):
    return X.sum(axis=1)


@pytest.mark.parametrize(("name", "params"), _POLICIES, ids=[p[0] for p in _POLICIES])
def test_every_policy_refuses_a_progress_that_is_not_a_bool(name, params):
    pool = np.random.default_rng(4).random((6, 4))
    pol = get_policy(name, **params)
    f = _f4 if pol.needs_model else None
    for bad in ("no", 0, 1):
        with pytest.raises(TypeError, match="progress must be None, True or False"):
            pol.pair(f, pool, progress=bad)
    for ok in (None, False, np.False_):
        assert pol.pair(f, pool, progress=ok).n_pairs > 0


def test_a_registered_function_policy_gets_the_check_too():
    from insdel.policies import register, unregister

    register("audit31_first_row", lambda f, X_pool, targets, seed: X_pool[0])
    try:
        pol = get_policy("audit31_first_row")
        pool = np.random.default_rng(5).random((3, 2))
        with pytest.raises(TypeError, match="progress"):
            pol.pair(None, pool, progress="yes")
        assert pol.pair(None, pool, progress=False).n_pairs == 3
    finally:
        unregister("audit31_first_row")


@pytest.mark.parametrize("bad", BAD)
def test_tune_mlp_refuses_a_progress_that_is_not_a_bool(bad):
    # checked first: before the data set, before optuna (was `if not progress` / bool(progress))
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        models.tune_mlp(None, 1, progress=bad)


def test_evaluation_markdown_leaves_an_undefined_standard_error_blank():
    import insdel

    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(1, 3)), np.zeros(3)
    ev = insdel.evaluate(lambda Z: Z.sum(axis=1) + Z[:, 0] * Z[:, 1], X, R,
                         {"m": rng.normal(size=(1, 3))}, n_random=2)
    text = ev.to_markdown()
    assert "nan" not in text.lower()
    assert "needs at least two pairs" in text


def test_a_policy_returning_the_wrong_shape_names_n():
    from insdel.policies import base

    T = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"or \(3,\)"):
        base._to_pairing(np.zeros((2, 2)), None, np.arange(2), T, "p", {}, 0)


def test_abc_bars_refuses_a_method_without_a_mode():
    import pandas as pd

    from insdel import plotting

    summary = pd.DataFrame({"mode": ["insertion", "insertion", "deletion"],
                            "method": ["a", "b", "a"], "mean": [1.0, 2.0, 3.0],
                            "std_error": [0.1, 0.1, 0.1]})
    with pytest.raises(KeyError, match=r"\('b', 'deletion'\)"):
        plotting.abc_bars(summary)
    plotting.abc_bars(summary, methods=["a"])  # both modes: drawn


def test_roar_markdown_names_a_missing_area_row():
    import pandas as pd

    from insdel import roar

    summary = pd.DataFrame({"method": ["m"], "ordering": ["signed"], "q": [0.5], "mean": [1.0],
                            "std_error": [0.1], "n": [2]})
    with pytest.raises(ValueError, match="no area row.*'m'.*'signed'"):
        roar.to_markdown(summary)


@pytest.mark.parametrize("entry", ["run_experiment", "run_roar"])
def test_runs_refuse_a_bad_progress_before_any_work(tmp_path, entry):
    from insdel import runner

    with pytest.raises(TypeError, match="progress"):
        getattr(runner, entry)({"name": "x"}, tmp_path / "out", progress="no")
    assert not (tmp_path / "out").exists()  # refused before the folder, data or model


def test_paper_images_refuses_a_bad_progress_before_training(tmp_path):
    from insdel.paper_images import run_paper_images

    with pytest.raises(TypeError, match="progress"):
        run_paper_images(tmp_path / "pi", quick=True, progress="no")
    assert not (tmp_path / "pi").exists()
