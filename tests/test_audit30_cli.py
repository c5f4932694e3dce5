"""Audit 30: the command line, checkpoints and figures (silent wrong results turned into errors or
correct results)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import insdel  # noqa: E402
from insdel import _checkpoint as ck  # noqa: E402
from insdel import cli, plotting  # noqa: E402


def _f(X):
    return 2 * X[:, 0] + X[:, 1] * X[:, 2] + np.tanh(X[:, 3]) + X[:, 4] ** 2


def _data(B=5, n=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(B, n)), rng.normal(size=(B, n)), rng.normal(size=(B, n))


def _legend_abc(ax) -> str:
    last = [t.get_text() for t in ax.get_legend().get_texts()][-1]
    return last.split("(ABC ")[1].rstrip(")")


@pytest.mark.parametrize("kw", [{"max_fraction": 0.5}, {"step": 2}, {"fractions": [0.5, 0.8, 1.0]}])
def test_plot_pair_legend_abc_matches_the_evaluation_with_positions(kw):
    # max_fraction = 0.5: the legend said insertion ABC 0.0062 where the evaluation has 0.0031
    # (the partial curve's ABC taken as a whole curve's); step = 2 with feature names crashed
    X, R, A = _data()
    ev = insdel.evaluate(_f, X, R, {"a": A}, feature_names=list("ABCDEF"), **kw)
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
    # the orders index groups: the ticks read the column names 'D', 'B', 'A', 'C' for groups
    X, R, A = _data()
    groups = {"g": [0, 1], "h": [2, 3], "i": [4], "j": [5]}
    ev = insdel.evaluate(_f, X, R, {"a": A}, feature_names=list("ABCDEF"), groups=groups)
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
    ev = insdel.evaluate(_f, X, R, {"a": A})
    ax = plotting.insertion_deletion_scatter(ev, "a")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lab.startswith("f(r) ≤ f(x)") for lab in labels)
    plt.close(ax.figure)


def test_abc_bars_refuses_a_method_not_in_the_summary():
    summ = pd.DataFrame({"mode": ["insertion"], "method": ["a"], "mean": [1.0],
                         "std_error": [0.1]})
    with pytest.raises(KeyError, match="kernel_shapp"):
        plotting.abc_bars(summ, methods=["a", "kernel_shapp"])


def test_config_hash_keys_arrays_by_their_contents():
    # str() of an array elides (> 1000 values) and rounds (8 digits): different options, one key
    a = np.zeros(2000)
    b = a.copy()
    b[500] = 1.0
    assert ck.config_hash({"o": a}) != ck.config_hash({"o": b})
    assert (ck.config_hash({"o": np.array([0.1234567891])})
            != ck.config_hash({"o": np.array([0.1234567892])}))
    assert ck.config_hash({"o": a}) != ck.config_hash({"o": a.astype(np.float32)})
    assert ck.config_hash({"o": a}) != ck.config_hash({"o": a.reshape(40, 50)})
    assert ck.config_hash({"o": np.int64(3)}) == ck.config_hash({"o": 3})
    torch = pytest.importorskip("torch")
    t1 = torch.tensor([0.1234567891], dtype=torch.float64)
    t2 = torch.tensor([0.1234567892], dtype=torch.float64)
    assert ck.config_hash({"o": t1}) != ck.config_hash({"o": t2})


@pytest.mark.parametrize("cut", [0, 10, -8])
def test_truncated_chunk_is_an_error_naming_the_file(tmp_path, cut):
    store = ck.ChunkStore(tmp_path, "abc123")
    store.save(0, np.arange(20.0).reshape(4, 5))
    p = store.path(0)
    data = p.read_bytes()
    p.write_bytes(data[:cut])
    with pytest.raises(ValueError, match="chunk_0000"):
        store.run(1, lambda i: np.zeros((4, 5)))


def test_cli_functional_no_metrics_with_metrics_is_an_error(capsys):
    rc = cli.main(["functional", "--methods", "random", "--tests", "additive", "--no-metrics",
                   "--metrics", "insertion_abc"])
    assert rc == 1
    assert "--no-metrics" in capsys.readouterr().err


def test_cli_empty_name_list_is_an_error(capsys):
    # --tests "" ran no test (an empty table, or a KeyError) instead of naming the mistake
    with pytest.raises(SystemExit) as exc:
        cli.main(["functional", "--tests", "", "--no-metrics"])
    assert exc.value.code == 2
    assert "names nothing" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["functional", "--methods", "random", "--tests", "additive", "--no-metrics", "--out", ""],
    ["leaderboard", "somewhere", "--out", " "],
    ["run", "demo", "--out", ""],
])
def test_cli_empty_out_is_an_error(capsys, argv):
    # functional --out "" wrote nothing without a word; run --out "" wrote into the current folder
    assert cli.main(argv) == 1
    assert "--out is empty" in capsys.readouterr().err


def test_cli_datasets_prepare_conflicting_options(tmp_path, capsys):
    rc = cli.main(["datasets", "prepare", "housing_sim", "--out", str(tmp_path / "d"),
                   "--option", "n=1", "--option", "n=2"])
    assert rc == 1 and "more than once" in capsys.readouterr().err
    rc = cli.main(["datasets", "prepare", "bangalore", "--out", str(tmp_path / "d"),
                   "--path", "a.csv", "--option", "path=b.csv"])
    assert rc == 1 and "--path and --option path" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_cli_paper_images_locks_its_output_folder(tmp_path, capsys):
    # two paper-images runs (say --seed 1 and --seed 2) wrote one folder at once: table5.csv of
    # one beside the manifest of the other
    from filelock import FileLock

    out = tmp_path / "imgs"
    out.mkdir()
    (out / "manifest.json").write_text("{}\n")
    lock = FileLock(str(out / ".insdel.lock"))
    lock.acquire()
    try:
        rc = cli.main(["reproduce", "paper-images", "--quick", "--out", str(out),
                       "--no-progress"])
    finally:
        lock.release()
    assert rc == 1
    assert "in use by another insdel run" in capsys.readouterr().err
    assert (out / "manifest.json").exists()  # the other run's files are left alone
