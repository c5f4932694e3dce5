"""Every plotting helper draws a labelled figure without error (Agg backend, no display)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from _plots import overlaps_of_legends  # noqa: E402

import insdel  # noqa: E402
from insdel import plotting  # noqa: E402


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
    pairs = policies.get("one_to_one").pair(None, pool, seed=0)  # 30 points: 15 couples
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
