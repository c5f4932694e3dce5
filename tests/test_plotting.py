"""Every plotting helper draws a labelled figure without error (Agg backend, no display)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from _plots import error_segments, overlaps_of_legends, overlaps_of_texts  # noqa: E402
from _runs import roar_table  # noqa: E402

import insdel  # noqa: E402
from insdel import plotting, roar  # noqa: E402


def _f(X):
    return X[:, 0] * 2.0 + X[:, 1] * X[:, 2] + np.tanh(X[:, 3]) + 0.5 * X[:, 4] ** 2


@pytest.fixture(scope="module")
def ev():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    R = rng.normal(size=(40, 6))
    good = np.column_stack([2 * (X[:, 0] - R[:, 0]), X[:, 1] * X[:, 2] - R[:, 1] * R[:, 2],
                            np.zeros(40), np.tanh(X[:, 3]) - np.tanh(R[:, 3]),
                            0.5 * (X[:, 4] ** 2 - R[:, 4] ** 2), np.zeros(40)])
    atts = {"kernel_shap": good, "integrated_gradients": good + 0.1 * rng.normal(size=good.shape)}
    return insdel.evaluate(_f, X, R, atts, n_random=5, seed=1)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _labelled(ax):
    assert ax.get_xlabel() and ax.get_ylabel()


def test_plot_curves_raw_and_shading():
    c = {"a": np.array([0.0, 2.0, 2.5, 3.0]), "b": np.array([0.0, -1.0, 1.0, 3.0])}
    ax = plotting.plot_curves(c, "insertion", random_curves=np.zeros((3, 4)), shade="b")
    _labelled(ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lbl.startswith("a (ABC") for lbl in labels)
    assert len(ax.collections) == 2  # positive and negative shaded regions
    ax = plotting.plot_curves(np.array([3.0, 1.0, 0.0]), "deletion", shade=None)
    _labelled(ax)
    with pytest.raises(KeyError, match="shade"):
        plotting.plot_curves(c, "insertion", shade="zzz")
    with pytest.raises(ValueError, match="points"):
        plotting.plot_curves({"a": np.zeros(3), "b": np.zeros(4)})


def test_plot_pair(ev):
    fig = plotting.plot_pair(ev, 3, methods=["kernel_shap", "random"], n_random=5)
    assert len(fig.axes) == 2
    assert [a.get_title().split(",")[0] for a in fig.axes] == ["Deletion", "Insertion"]
    for a in fig.axes:
        _labelled(a)
    with pytest.raises(IndexError):
        plotting.plot_pair(ev, 99)
    with pytest.raises(KeyError, match="unknown method"):
        plotting.plot_pair(ev, 0, methods=["nope"])


def test_many_pair_helpers(ev, tmp_path):
    for ax in (plotting.abc_histogram(ev, "kernel_shap", "insertion"),
               plotting.abc_histogram(ev.abc_array("kernel_shap", "deletion"), mode="deletion"),
               plotting.abc_scatter(ev, "kernel_shap", "integrated_gradients", "deletion"),
               plotting.random_abc_histogram(ev),
               plotting.insertion_deletion_scatter(ev, "integrated_gradients"),
               plotting.abc_bars(ev),
               plotting.abc_bars(ev.summary(), differences=True)):
        _labelled(ax)
    fig = plotting.figure4(ev)
    assert len(fig.axes) == 6
    fig.savefig(tmp_path / "f4.png")
    assert (tmp_path / "f4.png").stat().st_size > 1000
    fig = plotting.insertion_deletion_figure(ev, suptitle="x")
    assert len(fig.axes) == 2
    ax = plotting.insertion_deletion_scatter(ev, "kernel_shap")
    n_pts = sum(len(c.get_offsets()) for c in ax.collections)
    assert n_pts == ev.n_pairs


def test_image_variant():
    rng = np.random.default_rng(0)
    img = rng.random((8, 8, 3))
    att = rng.normal(size=(8, 8, 3))
    fig = plotting.plot_image_curves(img, att, {"ig": np.linspace(1, 0, 65)}, "deletion")
    assert len(fig.axes) == 4  # image, attribution, colorbar, curves
    assert not overlaps_of_legends(fig)
    _labelled(fig.axes[2] if fig.axes[2].get_xlabel() else fig.axes[-1])
    with pytest.raises(ValueError, match="attribution"):
        plotting.plot_image_curves(img, np.zeros((4, 4)), {"ig": np.zeros(3)})


def test_bars_rejects_bad_input():
    with pytest.raises(TypeError):
        plotting.abc_bars([1, 2])


@pytest.mark.parametrize("name_length", [1, 8, 12, 40])
def test_curve_legends_clear_the_rotated_feature_names_and_the_x_label(name_length):
    # plot_pair writes the moved features' names as rotated tick labels; with a legend anchored
    # at a fixed offset below the axes, names of 8+ characters put the legend under the x label
    rng = np.random.default_rng(0)
    n = 8
    X, R = rng.normal(size=(6, n)), rng.normal(size=(6, n))
    names = [f"{'f' * name_length}_{j}" for j in range(n)]
    ev = insdel.evaluate(lambda Z: Z.sum(1) + Z[:, 0] * Z[:, 1], X, R,
                         {"kernel_shap": X - R, "integrated_gradients": 1.1 * (X - R)},
                         n_random=5, seed=0, feature_names=names)
    fig = plotting.plot_pair(ev, 0, ["kernel_shap", "integrated_gradients"], n_random=5)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()][1].startswith("f" * name_length)
    assert not overlaps_of_legends(fig)
    ax = plotting.plot_curves({"a": np.linspace(0, 1, n + 1)}, "insertion",
                              random_curves=rng.normal(size=(3, n + 1)))
    ax.set_xticks(np.arange(n + 1), ["none", *names], rotation=45, ha="right")
    assert not overlaps_of_legends(ax.figure)


def test_scatters_draw_a_pair_and_its_mirror_once():
    """one_to_one's couples appear in both directions with equal ABCs (sign-changing
    attributions): the scatters drew every couple twice, and the deletion-insertion scatter drew
    the two directions in both colours on one spot with each counted in the legend. Each unit is
    one point now, and the legend says so."""
    from insdel import policies

    pool = np.random.default_rng(2).normal(size=(30, 4))
    f = lambda X: np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + X[:, 3] ** 2  # noqa: E731
    pairs = policies.build("one_to_one").pair(None, pool, seed=0)  # 30 points: 15 couples
    X, R = pairs.X, pairs.R
    atts = {"d": X - R, "e": (X - R) * X}
    ev = insdel.evaluate(f, X, R, atts, n_random=0, clusters=pairs.cluster)
    ax = plotting.abc_scatter(ev, "d", "e")
    pts = ax.collections[0].get_offsets()
    assert len(pts) == 15 and "15 units of 30 pairs" in ax.get_legend().get_texts()[0].get_text()
    np.testing.assert_allclose(sorted(pts[:, 0]), sorted(
        np.bincount(pairs.cluster, ev.abc_array("d")) / 2))
    plt.close(ax.figure)
    ax = plotting.insertion_deletion_scatter(ev, "d")
    assert sum(len(c.get_offsets()) for c in ax.collections) == 15
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "a pair and its mirror, drawn once (15)"]
    plt.close(ax.figure)
    plain = insdel.evaluate(f, X, R, atts, n_random=0)  # no clusters: every pair drawn
    ax = plotting.insertion_deletion_scatter(plain, "d")
    assert sum(len(c.get_offsets()) for c in ax.collections) == 30
    plt.close(ax.figure)


# -- plot_pair, plot_curves and the scatter with positions, groups and f(r) = f(x) -----------------
def _f_pair(X):
    return 2 * X[:, 0] + X[:, 1] * X[:, 2] + np.tanh(X[:, 3]) + X[:, 4] ** 2


def _data(B=5, n=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(B, n)), rng.normal(size=(B, n)), rng.normal(size=(B, n))


def _legend_abc(ax) -> str:
    last = [t.get_text() for t in ax.get_legend().get_texts()][-1]
    return last.split("(ABC ")[1].rstrip(")")


@pytest.mark.parametrize("kw", [{"max_fraction": 0.5}, {"step": 2}, {"fractions": [0.5, 0.8, 1.0]}])
def test_plot_pair_legend_abc_matches_the_evaluation_with_positions(kw):
    # the legend's ABC is the evaluation's: with max_fraction = 0.5 the partial curve's, not a
    # whole curve's; step = 2 with feature names draws as well
    X, R, A = _data()
    ev = insdel.evaluate(_f_pair, X, R, {"a": A}, feature_names=list("ABCDEF"), **kw)
    fig = plotting.plot_pair(ev, 0, ["a"])
    for ax in fig.axes:
        mode = ax.get_title().split(",")[0].lower()
        assert _legend_abc(ax) == f"{ev.abc_array('a', mode)[0]:.3g}"
    plt.close(fig)


def test_plot_curves_positions_draw_units_moved_and_the_line_of_the_ends():
    c = np.array([0.0, 1.0, 1.5, 3.0])
    ax = plotting.plot_curves({"a": c}, "insertion", positions=[0, 1, 2, 6], m=6)
    xs = {tuple(ln.get_xdata()) for ln in ax.get_lines()}
    assert (0, 1, 2, 6) in xs
    straight = next(ln for ln in ax.get_lines() if ln.get_linestyle() == "--")
    np.testing.assert_allclose(straight.get_ydata(), [0.0, 0.5, 1.0, 3.0])
    assert _legend_abc(ax) == f"{float(insdel.areas.abc(c, positions=[0, 1, 2, 6], m=6)):.3g}"
    with pytest.raises(ValueError):
        plotting.plot_curves({"a": c}, "insertion", m=6)
    plt.close(ax.figure)


def test_plot_pair_ticks_name_groups_not_columns():
    # the orders index groups: the ticks name the groups, not the columns of those indices
    X, R, A = _data()
    groups = {"g": [0, 1], "h": [2, 3], "i": [4], "j": [5]}
    ev = insdel.evaluate(_f_pair, X, R, {"a": A}, feature_names=list("ABCDEF"), groups=groups)
    fig = plotting.plot_pair(ev, 0, ["a"])
    names = list(ev.groups.names)
    want = ["none"] + [names[int(j)] for j in ev.orders[0, 0]]
    for ax in fig.axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == want
        assert set(want[1:]) == set(groups)
    plt.close(fig)


def test_insertion_deletion_scatter_says_so_when_f_r_equals_f_x():
    X, _, A = _data()
    R = X.copy()
    R[1:] = X[1:] + 1.0  # pair 0: r = x, so f(r) = f(x)
    ev = insdel.evaluate(_f_pair, X, R, {"a": A})
    ax = plotting.insertion_deletion_scatter(ev, "a")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lab.startswith("f(r) ≤ f(x)") for lab in labels)
    plt.close(ax.figure)


def test_abc_bars_refuses_a_method_not_in_the_summary():
    summ = pd.DataFrame({"mode": ["insertion"], "method": ["a"], "mean": [1.0],
                         "std_error": [0.1]})
    with pytest.raises(KeyError, match="kernel_shapp"):
        plotting.abc_bars(summ, methods=["a", "kernel_shapp"])


# -- decomposition_figure, abc_bars, policy_figures: error bars only with a standard error -------
def _no_degenerate(segs) -> bool:
    """No NaN and no zero-length error bar among the segments."""
    return all(np.all(np.isfinite(g)) and not np.allclose(g[0], g[1]) for g in segs)


def _note_texts(ax) -> str:
    """The axes' texts and its x label (where the bar charts put their note)."""
    return " | ".join([t.get_text() for t in ax.texts] + [ax.get_xlabel()])


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
        assert segs == []  # no zero-length bar, which reads as "no uncertainty"
        assert "1 pair: no standard error bars" in _note_texts(ax)
        assert ax.get_xlabel() == "mean ABC\n(1 pair: no standard error bars)"
        assert ax.get_title().endswith("(1 pair)")
        assert len(ax.patches) == 2  # the bars (means) are still drawn


def test_decomposition_figure_two_pairs_keeps_its_error_bars_and_no_note():
    fig = plotting.decomposition_figure(_dec(3), ["kernel_shap", "random"])
    for ax in fig.axes:
        segs = error_segments(ax)
        assert len(segs) == 2 and _no_degenerate(segs)
        assert "no standard error" not in _note_texts(ax)
        assert ax.get_xlabel() == "mean ABC ± s.e."
        assert ax.get_title().endswith("(3 pairs)")


def test_decomposition_figure_a_column_with_nan_is_named():
    dec = _dec(3)
    dec.loc[0, "abc_insertion_random"] = np.nan
    ins = plotting.decomposition_figure(dec, ["kernel_shap", "random"]).axes[0]
    segs = error_segments(ins)
    assert len(segs) == 1 and _no_degenerate(segs)  # kernel_shap's only
    text = _note_texts(ins)
    assert "NaN standard error: no standard error bars for Random" in text
    assert "1 pair" not in text


def test_decomposition_figure_refuses_an_empty_table():
    with pytest.raises(ValueError, match="dec has no rows"):
        plotting.decomposition_figure(_dec(0))


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
    assert error_segments(ax) == []  # no yerr=NaN, which draws nothing
    assert "1 pair: no standard error bars" in _note_texts(ax)
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
    assert "1 pair: no standard error bars for Random (insertion)" in _note_texts(ax)
    assert ax.get_ylabel() == "mean ABC ± s.e."
    s.loc[pick, "n"] = 4  # a NaN that does not come from one pair is not called one
    text = _note_texts(plotting.abc_bars(s))
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
    assert titles["one_mean_abc.png"] == [title]  # no "± s.e." over bars that have none


def test_abc_bars_refuses_a_method_without_a_mode():
    import pandas as pd

    from insdel import plotting

    summary = pd.DataFrame({"mode": ["insertion", "insertion", "deletion"],
                            "method": ["a", "b", "a"], "mean": [1.0, 2.0, 3.0],
                            "std_error": [0.1, 0.1, 0.1]})
    with pytest.raises(KeyError, match=r"\('b', 'deletion'\)"):
        plotting.abc_bars(summary)
    plotting.abc_bars(summary, methods=["a"])  # both modes: drawn


# -- roar_figure: error bars only where there is a standard error ----------------------------------
def _legend_texts(ax) -> str:
    legend = ax.get_legend()
    return " | ".join([t.get_text() for t in ax.texts]
                      + ([t.get_text() for t in legend.get_texts()] if legend else []))


def test_roar_figure_one_replicate_draws_no_error_bars_and_says_so():
    s = roar.summarize(roar_table(1))
    assert s["std_error"].isna().all() and (s["n"] == 1).all()  # the case being tested
    fig = plotting.roar_figure(s)
    ax = fig.axes[0]
    segs = error_segments(ax)
    assert not [g for g in segs if not np.all(np.isfinite(g)) or np.allclose(g[0], g[1])]
    assert segs == []  # no error bar at all: there is no standard error anywhere
    assert "1 replicate: no standard error" in _legend_texts(ax)
    assert "± s.e." not in ax.get_ylabel()
    # the curves are still drawn, through every point (q = 0, 0.5, 1)
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith(("good", "random"))]
    assert len(lines) == 2 and all(len(ln.get_xdata()) == 3 for ln in lines)


def test_roar_figure_two_replicates_keeps_its_error_bars_and_no_note():
    s = roar.summarize(roar_table(2))
    assert s["std_error"].notna().all()
    ax = plotting.roar_figure(s).axes[0]
    segs = error_segments(ax)
    assert len(segs) == 2 * 3  # two curves, three points each
    assert all(np.all(np.isfinite(g)) and not np.allclose(g[0], g[1]) for g in segs)
    assert "no standard error" not in _legend_texts(ax)
    assert "± s.e." in ax.get_ylabel()


def test_roar_figure_some_points_without_standard_error_are_named():
    s = roar.summarize(roar_table(2))
    s.loc[(s["method"] == "good") & s["q"].notna(), "std_error"] = np.nan
    ax = plotting.roar_figure(s).axes[0]
    segs = error_segments(ax)
    assert len(segs) == 3  # the random curve's only
    assert all(np.all(np.isfinite(g)) and not np.allclose(g[0], g[1]) for g in segs)
    text = _legend_texts(ax)
    assert "no standard error" in text and "no s.e." in text
    assert "1 replicate" not in text  # n = 2 there: the NaN is not from one replicate


def _robustness_table(removals: list[str], policies=("counterfactual", "average")) -> pd.DataFrame:
    """A robustness table (insdel.robustness.robustness_table's columns) of four methods."""
    rng = np.random.default_rng(0)
    methods = ["kernel_shap", "integrated_gradients", "lime", "random"]
    rows = []
    for p in policies:
        for mode in ("insertion", "deletion"):
            for rem in removals:
                means = rng.normal(size=len(methods))
                for m, v, k in zip(methods, means, pd.Series(-means).rank(), strict=True):
                    rows.append({"policy": p, "mode": mode, "removal": rem, "method": m,
                                 "mean": v, "std_error": 0.1, "n": 10, "rank": k})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("removals", [
    ["baseline", "marginal"],
    ["baseline", "marginal", "conditional_gaussian"],  # paper-cern-removals' three
    ["baseline", "marginal", "conditional_gaussian", "conditional_knn", "cohort"]])
def test_removal_robustness_texts_do_not_overlap(removals):
    """Every panel's τ list fits above it: on one line, three removals' titles ran into each
    other and off the figure."""
    fig = plotting.removal_robustness(_robustness_table(removals))
    assert overlaps_of_texts(fig) == []
    k = len(removals) * (len(removals) - 1) // 2
    assert fig.axes[0].get_title().count("τ(") == k  # every pair's τ is still there
    plt.close(fig)


def test_overlaps_of_texts_finds_texts_over_each_other_and_off_the_figure():
    fig, (a, b) = plt.subplots(1, 2, figsize=(4, 2), layout="constrained")
    a.set_title("a long title that runs on into the next panel's own title")
    b.set_title("b")
    clashes = overlaps_of_texts(fig)
    assert any(c.endswith("over title of 'b'") for c in clashes), clashes
    assert any("reaches outside the figure" in c for c in clashes), clashes
    plt.close(fig)


def test_policy_figures_draw_the_saved_comparisons_beside_the_bars(tmp_path):
    """With the policy's comparisons.csv, a critical-difference panel per mode is written beside
    the mean-ABC bars; without one, none."""
    ev = _evaluation(6)
    comp = ev.comparisons(n_resamples=100)
    paths = plotting.policy_figures(ev, "one", tmp_path, n_random=0, comparisons=comp)
    cd = tmp_path / "one_critical_difference.png"
    assert cd in paths and cd.read_bytes()[:4] == b"\x89PNG"
    cd.unlink()
    paths = plotting.policy_figures(ev, "one", tmp_path / "b", n_random=0)
    assert not any(p.name.endswith("critical_difference.png") for p in paths)


def test_abc_by_output_draws_each_outputs_mean_and_standard_error():
    """The error bars of abc_by_output are MultiEvaluation.summary's mean and standard error of
    each output; curves_by_output draws one panel per output, of one pair or the mean; a mode,
    method, pair or output the evaluation lacks is an error naming it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import insdel
    from insdel.plotting import abc_by_output, curves_by_output

    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(8, 3)), np.zeros((8, 3))
    W = rng.normal(size=(3, 3))

    def f(Z):
        return np.tanh(Z @ W)

    A = rng.normal(size=(8, 3, 3))
    mev = insdel.evaluate(insdel.as_model(f, outputs=3), X, R, {"a": A}, n_random=2)
    ax = abc_by_output(mev, "deletion", methods=["a"])
    t = mev.summary(differences=None)
    t = t[(t["method"] == "a") & (t["mode"] == "deletion") & (t["output"] != "weighted")]
    line = ax.lines[0]
    np.testing.assert_allclose(line.get_ydata(), t["mean"].to_numpy(float))
    seg = ax.collections[0].get_segments()
    np.testing.assert_allclose([s[1, 1] - s[0, 1] for s in seg],
                               2 * t["std_error"].to_numpy(float))
    plt.close(ax.figure)
    fig = curves_by_output(mev, pair=1, outputs=[0, 2])
    assert len(fig.axes) == 2
    np.testing.assert_allclose(fig.axes[1].lines[0].get_ydata(),
                               mev[2].curves["insertion"][1, 0])
    plt.close(fig)
    with pytest.raises(ValueError, match="outputs"):
        curves_by_output(mev, outputs=[3])
    with pytest.raises(ValueError, match="pair"):
        curves_by_output(mev, pair=8)
    with pytest.raises(ValueError, match="methods"):
        abc_by_output(mev, methods=["b"])
