"""Figures of interactions (insdel.plotting.interactions): the heat map and the surrogate curves."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from _plots import overlaps_of_texts  # noqa: E402

import insdel  # noqa: E402
from insdel.decomposition import surrogate_curves  # noqa: E402
from insdel.plotting import interaction_figure, interaction_heatmap, plot_surrogate  # noqa: E402


def _dec(B=3, n=6):
    def f(Z):
        return Z[:, 0] * Z[:, 1] + np.sin(Z[:, 2]) * Z[:, 3] + Z[:, 4] - Z[:, 2] * Z[:, 4] * Z[:, 5]

    rng = np.random.default_rng(0)
    return insdel.batch_decomposition(f, rng.normal(size=(B, n)), rng.normal(size=(B, n)),
                                      feature_names=[f"feature {j}" for j in range(n)])


def test_interaction_figure_saves_without_overlaps(tmp_path):
    dec = _dec()
    fig = interaction_figure(dec, dec.shapley().argsort(axis=1)[:, ::-1].copy(), pair=1, k=3)
    assert overlaps_of_texts(fig) == []
    fig.savefig(tmp_path / "interactions.png")
    assert (tmp_path / "interactions.png").stat().st_size > 10_000
    heat, curve = fig.axes[0], fig.axes[1]
    assert len(heat.texts) == 6 * 5  # every off-diagonal cell annotated
    assert len(curve.get_lines()) == 1 + 3  # the real curve and orders 1..3
    plt.close(fig)


def test_heatmap_of_a_batch_and_top_units(tmp_path):
    dec = _dec(B=4, n=6)
    ax = interaction_heatmap(dec, top=4)
    assert len(ax.get_xticklabels()) == 4
    assert "mean |Δ_ij| over 4 pairs" in ax.figure.axes[-1].get_ylabel()
    assert overlaps_of_texts(ax.figure) == []
    ax.figure.savefig(tmp_path / "heat.png")
    plt.close(ax.figure)
    # one pair: the signed effect in the cell of the units 0 and 1 (f = x0 x1 + ...)
    ax = interaction_heatmap(dec, 0, top=6)
    P = insdel.decomposition.pairwise_effects(dec)[0]
    assert any(t.get_text() == f"{P[0, 1]:.2g}" for t in ax.texts)
    plt.close(ax.figure)


def test_plot_surrogate_labels_and_bad_index(tmp_path):
    dec = _dec(B=2, n=6)
    sur = surrogate_curves(dec, np.arange(6), k=2, mode="deletion")
    ax = plot_surrogate(sur, 1)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == "real curve" and labels[1].startswith("order ≤ 1: ") and "of ABC, gap" in labels[1]
    assert overlaps_of_texts(ax.figure) == []
    ax.figure.savefig(tmp_path / "sur.png")
    plt.close(ax.figure)
    with pytest.raises(IndexError, match="pair 5"):
        plot_surrogate(sur, 5)
