"""Images: pixel/patch/superpixel groups, reference images, the classifier test (issue #16)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import insdel
from insdel import images, policies
from insdel.areas import petsiuk_auc

SHAPE = (3, 32, 32)


def _net(seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 5, stride=2, padding=2), torch.nn.ReLU(),
                              torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
                              torch.nn.Linear(64, 5)).double()
    return images.flat_module(net, SHAPE)


def _batch(B=4, seed=0):
    return np.random.default_rng(seed).random((B,) + SHAPE)


def test_pixel_and_patch_groups():
    g = images.pixel_groups(SHAPE)
    assert g.m == 32 * 32 and (g.sizes == 3).all()
    # pixel (i, j) holds channels c at column c*H*W + i*W + j
    np.testing.assert_array_equal(g.columns(5 * 32 + 7), [5 * 32 + 7 + c * 1024 for c in range(3)])
    p = images.patch_groups(SHAPE, 8)
    assert p.m == 16 and (p.sizes == 3 * 64).all()
    q = images.patch_groups((1, 10, 10), 4)  # 3 x 3 patches, the last row/column smaller
    assert q.m == 9 and sorted(q.sizes.tolist()) == [4] + [8] * 4 + [16] * 4
    with pytest.raises(ValueError, match="patch size"):
        images.patch_groups(SHAPE, 0)


def test_superpixels_partition_the_image():
    img = np.zeros(SHAPE)  # four coloured quadrants
    img[0, :16, :16] = img[1, 16:, :16] = img[2, :16, 16:] = 1.0
    img += 0.01 * _batch(1)[0]
    g = images.superpixel_groups(img, n_segments=20)
    assert g.n == 3 * 32 * 32 and 5 <= g.m <= 40
    lab = g.labels.reshape(SHAPE)
    assert (lab[0] == lab[1]).all() and (lab[1] == lab[2]).all()  # across channels


def test_reference_images():
    X = images.flatten(_batch(3))
    kw = {"shape": SHAPE}
    assert (policies.build("black", **kw).pair(None, X).R == 0).all()
    assert (policies.build("white", **kw).pair(None, X).R == 1).all()
    assert (policies.build("black", shape=SHAPE, value=-2.1).pair(None, X).R == -2.1).all()
    bg = images.flatten(_batch(10, seed=1))
    R = policies.build("channel_mean", shape=SHAPE, background=bg).pair(None, X).R
    want = bg.reshape(10, 3, -1).mean(axis=(0, 2))
    np.testing.assert_allclose(R.reshape(3, 3, -1)[1], np.repeat(want[:, None], 1024, axis=1))
    # blurred: RISE's substrate, a conv2d with the 11 x 11 sigma-5 kernel and zero padding 5
    R = policies.build("blurred", **kw).pair(None, X).R
    k = torch.as_tensor(images.rise_kernel())[None, None].repeat(3, 1, 1, 1)
    want = torch.nn.functional.conv2d(torch.as_tensor(X.reshape((-1,) + SHAPE)), k, padding=5,
                                      groups=3).numpy()
    np.testing.assert_allclose(R, want.reshape(3, -1), atol=1e-12)
    assert images.RISE_KLEN == 11 and images.RISE_SIGMA == 5.0
    n1 = policies.build("noise", **kw).pair(None, X, seed=3).R
    n2 = policies.build("noise", **kw).pair(None, X, seed=3).R
    n3 = policies.build("noise", **kw).pair(None, X, seed=4).R
    assert np.array_equal(n1, n2) and not np.array_equal(n1, n3)
    assert 0 <= n1.min() and n1.max() <= 1
    img = _batch(1, seed=9)[0]
    R = policies.build("image", shape=SHAPE, image=img).pair(None, X).R
    np.testing.assert_array_equal(R, np.tile(img.reshape(-1), (3, 1)))


@pytest.mark.parametrize("name", ["black", "white", "channel_mean", "blurred", "noise"])
def test_reference_images_check_the_shape(name):
    X = images.flatten(_batch(2))
    with pytest.raises(ValueError, match="shape"):
        policies.build(name, shape=(3, 16, 16)).pair(None, X)
    with pytest.raises(ValueError, match="shape"):
        policies.build(name).pair(None, X)


def test_classifier_test_on_patches_equals_brute_force():
    f = _net()
    X = images.flatten(_batch(4))
    R = policies.build("blurred", shape=SHAPE).pair(None, X).R
    A = {"sal": np.random.default_rng(0).normal(size=X.shape)}
    res = images.evaluate(f, X, R, A, shape=SHAPE, groups="patch", patch=8, step=2, n_random=2)
    ev = res.evaluation
    assert ev.groups.m == 16 and ev.positions.tolist() == [0, 2, 4, 6, 8, 10, 12, 14, 16]
    with torch.no_grad():
        scores = f(torch.as_tensor(X)).numpy()
    cls = scores.argmax(1)
    np.testing.assert_array_equal(res.classes, cls)
    grp = images.patch_groups(SHAPE, 8)
    order = insdel.orderings(insdel.groups.group_attributions(A["sal"], grp))
    k = ev.methods.index("sal")
    for b in range(4):
        for s, t in enumerate(ev.positions):
            mask = grp.expand(np.isin(np.arange(16), order[b, :t]))
            for mode, mk in (("insertion", mask), ("deletion", ~mask)):
                row = np.where(mk, X[b], R[b])
                with torch.no_grad():
                    p = torch.softmax(f(torch.as_tensor(row[None])), 1)[0, cls[b]].item()
                assert abs(ev.curves[mode][b, k, s] - p) < 1e-10
    # the insertion curve ends at the predicted class's probability at x
    p_x = torch.softmax(torch.as_tensor(scores), 1).numpy()[np.arange(4), cls]
    np.testing.assert_allclose(ev.curves["insertion"][:, k, -1], p_x, atol=1e-12)
    auc = res.auc[(res.auc["method"] == "sal") & (res.auc["mode"] == "deletion")]["auc"]
    np.testing.assert_allclose(auc, petsiuk_auc(ev.curves["deletion"][:, k],
                                                positions=ev.positions), atol=1e-14)
    t = res.table()
    assert set(t.columns) == {"method", "mode", "auc", "auc_se", "abc", "abc_se"}


def test_image_errors():
    f = _net()
    X = images.flatten(_batch(2))
    with pytest.raises(ValueError, match="holds"):
        images.evaluate(f, X, X, {"a": X}, shape=(3, 16, 16))
    with pytest.raises(ValueError, match="needs patch"):
        images.evaluate(f, X, X, {"a": X}, shape=SHAPE, groups="patch")
    with pytest.raises(ValueError, match="output"):
        images.evaluate(f, X, X, {"a": X}, shape=SHAPE, output="max")


def test_paper_images_small(tmp_path):
    from insdel.paper_images import run_paper_images

    res = run_paper_images(tmp_path, quick=True, n_images=12, epochs=3, verbose=False)
    assert set(res.table["reference"]) == {"blurred", "channel_mean", "white", "black", "noise"}
    assert set(res.table["method"]) == {"smoothgrad", "integrated_gradients", "ig_reference",
                                        "random"}
    for name in ("table5.csv", "table5.md", "rankings.csv", "figure1.png", "manifest.json"):
        assert (tmp_path / name).is_file()
    assert "ranking of methods" in res.to_markdown()
    # IG with the row's reference as baseline is IG with the black baseline on the black row
    blk = res.table[res.table["reference"] == "black"].set_index("method")
    assert abs(blk.loc["ig_reference", "deletion_auc"] - blk.loc["integrated_gradients",
                                                                 "deletion_auc"]) < 1e-9


def test_paper_images_table_header_matches_its_cells():
    """Table 5's printed header promises mean ± se in every metric column, and every cell of those
    columns holds the table's mean and its standard error (the ABC columns showed means only)."""
    import pandas as pd

    from insdel.paper_images import _markdown

    rng = np.random.default_rng(0)
    cols = ("deletion_auc", "insertion_auc", "deletion_abc", "insertion_abc")
    table = pd.DataFrame([{"reference": ref, "method": m,
                           **{c: v for c in cols for v in [rng.normal()]},
                           **{c + "_se": v for c in cols for v in [rng.uniform(0.001, 0.1)]}}
                          for ref in ("black", "white") for m in ("smoothgrad", "random")])
    rankings = pd.DataFrame([{"reference": r, "deletion_ranking": "a > b",
                              "insertion_ranking": "b > a"} for r in ("black", "white")])
    manifest = {"model": {"test_accuracy": 0.9}, "n_images": 4, "step": 4,
                "ranking_changes": "no change"}
    lines = _markdown(table, rankings, manifest, 3).splitlines()
    header = [h.strip() for h in lines[2].strip("|").split("|")]
    assert header == ["reference", "method", "deletion AUC (mean ± se)",
                      "insertion AUC (mean ± se)", "deletion ABC (mean ± se)",
                      "insertion ABC (mean ± se)"]
    assert "mean ± its standard error" in lines[0]
    for i, (_, r) in enumerate(table.iterrows()):
        cells = [c.strip() for c in lines[4 + i].strip("|").split("|")]
        assert cells[2:] == [f"{r[c]:.3f} ± {r[c + '_se']:.3f}" for c in cols]


# -- shapes are integers; class indices in range ---------------------------------------------------
@pytest.mark.parametrize("shape, err", [((1, 2.5, 2), TypeError), ((1, 2, 2, 1), ValueError),
                                        ((True, 2, 2), TypeError), ((1.0, 2, 2), TypeError),
                                        ((1, 0, 2), ValueError)])
def test_check_shape_refuses_non_integers(shape, err):
    with pytest.raises(err, match="three integers"):
        images.check_shape(shape)


def test_image_evaluate_class_index_in_range():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3)
    rng = np.random.default_rng(0)
    X = rng.random((3, 4))
    A = {"a": rng.normal(size=(3, 4))}
    for out in (-1, 3):
        with pytest.raises(ValueError, match=f"output = {out} is not a class index"):
            images.evaluate(net, X, np.zeros_like(X), A, shape=(1, 2, 2), output=out)
    res = images.evaluate(net, X, np.zeros_like(X), A, shape=(1, 2, 2), output=2)
    assert (res.classes == 2).all()


def test_unflatten_is_the_inverse_of_flattening_channel_row_column():
    imgs = np.arange(2 * 3 * 4 * 5, dtype=float).reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(images.unflatten(imgs.reshape(2, -1), (3, 4, 5)), imgs)
