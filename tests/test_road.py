"""ROAD for tabular regression (issue 36): MoRF / LeRF losses against a brute-force loop, the sign
of SRG when the attribution is the truth, the leakage diagnostic (a conditional Gaussian near
chance, a constant reference far above it), the figure and bad inputs.

The conditional Gaussian here is test-local (numpy, one row at a time): the package's own
removals are tested in their own files; ROAD only needs the SampledRemoval interface."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from insdel import plotting, road
from insdel.removal import Constant, Marginal, SampledRemoval, target_rng

matplotlib.use("Agg")


class GaussianConditional(SampledRemoval):
    """Removed features drawn from N(mu, S) conditioned on the kept ones (M draws per row)."""

    name = "test_gaussian"

    def __init__(self, mu, S, *, n_draws: int = 16, seed: int = 0):
        self.mu, self.S = np.asarray(mu, float), np.asarray(S, float)
        self.n_draws, self.seed = n_draws, seed

    def sample(self, X, keep, targets):
        X = np.asarray(X, float)
        B, n = X.shape
        out = np.repeat(X[:, None, :], self.n_draws, axis=1)
        for b in range(B):
            u, r = keep[b], ~keep[b]
            if not r.any():
                continue
            mean, cov = self.mu[r], self.S[np.ix_(r, r)]
            if u.any():
                K = np.linalg.solve(self.S[np.ix_(u, u)], self.S[np.ix_(u, r)]).T
                mean = mean + K @ (X[b, u] - self.mu[u])
                cov = cov - K @ self.S[np.ix_(u, r)]
            L = np.linalg.cholesky(cov + 1e-12 * np.eye(len(mean)))
            z = target_rng(self.seed, int(targets[b]), self.name).standard_normal(
                (self.n_draws, len(mean)))
            out[b][:, r] = mean + z @ L.T
        return out


class Shifts(SampledRemoval):
    """Deterministic, two draws: removed x_j becomes 0.5 x_j + j + 0.1 t and -x_j - 0.2 t
    (t the target's index: wrong targets give other numbers)."""

    name = "test_shifts"
    n_draws = 2

    def sample(self, X, keep, targets):
        X = np.asarray(X, float)
        t = np.asarray(targets, float)[:, None]
        j = np.arange(X.shape[1])[None, :]
        d0 = np.where(keep, X, 0.5 * X + j + 0.1 * t)
        d1 = np.where(keep, X, -X - 0.2 * t)
        return np.stack([d0, d1], axis=1)


def _f(X):
    X = np.asarray(X, float)
    return X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + X[:, 3] ** 2


def _brute(X, y, A, order, q, ranking):
    """The loss of one (order, q) by a loop over rows and draws."""
    N, n = X.shape
    k = min(n, math.ceil(q * n - 1e-9))
    preds = []
    for i in range(N):
        rel = np.abs(A[i]) if ranking == "absolute" else A[i]
        # MoRF: decreasing relevance; LeRF: increasing; ties by feature index
        sign = -1.0 if order == "morf" else 1.0
        gone = sorted(range(n), key=lambda j, r=rel, s=sign: (s * r[j], j))[:k]
        vals = []
        for d in range(2):
            row = X[i].copy()
            for j in gone:
                row[j] = 0.5 * X[i, j] + j + 0.1 * i if d == 0 else -X[i, j] - 0.2 * i
            vals.append(_f(row[None, :])[0])
        preds.append(np.mean(vals))
    err = np.array(preds) - y
    return {"mse": np.mean(err ** 2), "rmse": np.sqrt(np.mean(err ** 2)),
            "mae": np.mean(np.abs(err))}


@pytest.mark.parametrize("ranking", ["absolute", "signed"])
def test_losses_match_a_brute_force_loop(ranking):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 4))
    y = rng.normal(size=5)
    A = {"a": rng.normal(size=(5, 4)), "b": np.round(rng.normal(size=(5, 4)))}  # b has ties
    fr = (0.2, 0.5, 0.75)
    res = road.evaluate(_f, X, y, A, Shifts(), fractions=fr, ranking=ranking, loss="rmse")
    c = res.curves
    assert sorted(c["q"].unique()) == [0.0, 0.2, 0.5, 0.75, 1.0]
    assert set(c["method"]) == {"a", "b", "random"}
    for m in ("a", "b"):
        for o in ("morf", "lerf"):
            for q in (0.0, *fr, 1.0):
                row = c[(c["method"] == m) & (c["order"] == o) & (c["q"] == q)].iloc[0]
                want = _brute(X, y, A[m], o, q, ranking)
                for name in ("mse", "rmse", "mae"):
                    assert row[name] == pytest.approx(want[name], rel=1e-12), (m, o, q, name)
                assert row["loss"] == row["rmse"]
                assert row["k"] == min(4, math.ceil(q * 4 - 1e-9))
    # the summary: trapezoid areas of the chosen loss, SRG = MoRF area - LeRF area
    for m in ("a", "b", "random"):
        s = res.summary[res.summary["method"] == m].iloc[0]
        area = {}
        for o in ("morf", "lerf"):
            g = c[(c["method"] == m) & (c["order"] == o)].sort_values("q")
            q, L = g["q"].to_numpy(), g["rmse"].to_numpy()
            area[o] = sum((L[i] + L[i + 1]) / 2 * (q[i + 1] - q[i]) for i in range(len(q) - 1))
        assert s["morf_area"] == pytest.approx(area["morf"])
        assert s["lerf_area"] == pytest.approx(area["lerf"])
        assert s["srg"] == pytest.approx(area["morf"] - area["lerf"])
    assert sorted(res.summary["rank"]) == [1, 2, 3]
    assert "| Rank | Method |" in res.to_markdown()


def test_same_row_same_draws_whatever_the_method():
    # k = 0 and k = n are shared; a method equal to another gives the same curve, bit for bit
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    A = rng.normal(size=(30, 3))
    rem = GaussianConditional(np.zeros(3), np.eye(3), n_draws=4, seed=3)
    c = road.evaluate(_lin([1.0, 2.0, 3.0]), X, y, {"a": A, "b": A.copy()}, rem, random=False).curves
    a, b = (c[c["method"] == m].reset_index(drop=True) for m in ("a", "b"))
    pd.testing.assert_series_equal(a["loss"], b["loss"])


def _lin(w):
    w = np.asarray(w, float)
    return lambda X: np.asarray(X, float) @ w


def test_srg_is_positive_for_the_true_relevance():
    rng = np.random.default_rng(0)
    n, N = 5, 400
    w = np.array([3.0, 2.0, 1.0, 0.5, 0.0])
    X = rng.normal(size=(N, n))
    y = X @ w + 0.05 * rng.normal(size=N)
    truth = w * X  # exact Shapley values of a linear model against the mean 0
    rem = GaussianConditional(np.zeros(n), np.eye(n), n_draws=8)
    res = road.evaluate(_lin(w), X, y, {"truth": truth, "inverse": 1.0 / (np.abs(truth) + 1e-3)},
                    rem, fractions=(0.2, 0.4, 0.6, 0.8))
    s = res.summary.set_index("method")
    c = res.curves.set_index(["method", "order", "q"])["loss"]
    # MoRF rises faster: the truth's MoRF loss is above its LeRF loss at every interior q
    for q in (0.2, 0.4, 0.6, 0.8):
        assert c[("truth", "morf", q)] > c[("truth", "lerf", q)]
    assert s.loc["truth", "srg"] > 0
    assert s.loc["inverse", "srg"] < 0  # the reversed ranking: worse than random
    assert abs(s.loc["random", "srg"]) < 0.2 * s.loc["truth", "srg"]
    assert s.loc["truth", "rank"] == 1 and s.loc["inverse", "rank"] == 3
    assert s.loc["truth", "rank_morf"] == 1 and s.loc["truth", "rank_lerf"] == 1
    # q = 0 is the model's own loss and q = 1 every feature imputed: the same for every curve
    for q in (0.0, 1.0):
        assert c.xs(q, level="q").nunique() == 1


def _correlated(N=1000, seed=0):
    rng = np.random.default_rng(seed)
    S = np.array([[1.0, 0.6, 0.3, 0.0], [0.6, 1.0, 0.5, 0.2], [0.3, 0.5, 1.0, 0.4],
                  [0.0, 0.2, 0.4, 1.0]])
    mu = np.array([1.0, -2.0, 0.5, 3.0])
    return rng.multivariate_normal(mu, S, size=N), mu, S


def test_leakage_near_chance_for_a_conditional_gaussian():
    X, mu, S = _correlated()
    res = road.leakage(X, GaussianConditional(mu, S, n_draws=1), n_rows=800, seed=1)
    assert res.n_rows == 800 and len(res.table) == 4
    assert res.table["chance"].between(0.5, 0.6).all()
    assert abs(res.excess) < 0.1
    assert (res.table["accuracy"] - res.table["chance"]).abs().max() < 0.1
    lg = road.leakage(X, GaussianConditional(mu, S, n_draws=1), n_rows=800, seed=1,
                      classifier="logistic")
    assert abs(lg.excess) < 0.1


def test_leakage_of_a_constant_reference_is_clear():
    X, mu, S = _correlated()
    # the training mean: continuous features never take it, the forest isolates it
    res = road.leakage(X, Constant(mu), n_rows=800, seed=1)
    assert res.accuracy > 0.9 and (res.table["accuracy"] > 0.9).all()
    # far outside the data: even a linear classifier sees it
    lg = road.leakage(X, Constant(mu + 10.0), n_rows=800, classifier="logistic",
                      feature_names=["a", "b", "c", "d"])
    assert lg.accuracy > 0.9
    assert list(lg.table["feature"]) == ["a", "b", "c", "d"]
    # a random background row per target (the marginal): drawn values ignore the kept ones'
    # correlations (a faint leak, 0.53 against 0.51 here), far less than the constant
    mres = road.leakage(X[200:], _MarginalRows(X[:200]), n_rows=800, seed=1)
    assert mres.accuracy < res.accuracy - 0.3


class _MarginalRows(SampledRemoval):
    """Removed features from one random background row per target (a Marginal-like imputer)."""

    name = "test_marginal_rows"

    def __init__(self, bg, seed=0):
        self.bg, self.seed = np.asarray(bg, float), seed

    def sample(self, X, keep, targets):
        rows = np.stack([self.bg[target_rng(self.seed, int(t), self.name).integers(len(self.bg))]
                         for t in targets])
        return np.where(keep, X, rows)[:, None, :]


def test_constant_removal_is_deprecated_for_the_removal_constant():
    """road.constant_removal and road.ConstantRemoval: the registered removal ``constant`` with a
    DeprecationWarning, the same rows."""
    X = np.zeros((2, 3))
    keep = np.array([[True, False, True], [False, False, False]])
    with pytest.warns(DeprecationWarning, match="insdel.removal.Constant"):
        old = road.constant_removal([1.0, 2.0, 3.0])
    with pytest.warns(DeprecationWarning, match="insdel.removal.Constant"):
        assert road.ConstantRemoval is Constant
    assert isinstance(old, Constant) and old.params() == Constant([1.0, 2.0, 3.0]).params()
    np.testing.assert_array_equal(old.sample(X, keep, np.arange(2)),
                                  Constant([1.0, 2.0, 3.0]).sample(X, keep, np.arange(2)))


def test_plot_road():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    res = road.evaluate(_lin([1.0, 0.0, 2.0]), X, y, {"a": X}, Constant(0.0),
                    fractions=(0.5,))
    ax = plotting.plot_road(res)
    from matplotlib.axes import Axes
    from matplotlib.pyplot import subplots

    assert isinstance(ax, Axes)  # a single panel, as every other one
    _, given = subplots()
    assert plotting.plot_road(res, ax=given) is given
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert len(lines) == 4  # a and random, MoRF and LeRF each
    morf = next(ln for lab, ln in lines.items() if lab.startswith("a, MoRF"))
    assert "SRG" in morf.get_label() and morf.get_linestyle() == "-"
    assert next(ln for lab, ln in lines.items() if lab.startswith("a, LeRF")).get_linestyle() \
        == "--"
    assert list(morf.get_xdata()) == [0.0, 0.5, 1.0]
    assert plotting.plot_road(res.curves).get_lines()  # the table alone
    with pytest.raises(ValueError, match="curves table"):
        plotting.plot_road(pd.DataFrame({"x": [1]}))
    matplotlib.pyplot.close("all")


# -- bad inputs name the argument ------------------------------------------------------------------
def _args(**kw):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    a = dict(f=_lin([1.0, 1.0, 1.0]), X=X, y=rng.normal(size=6),
             attributions={"a": rng.normal(size=(6, 3))}, removal=Constant(0.0))
    a.update(kw)
    return a


def _road(f, X, y, attributions, removal, **kw):
    return road.evaluate(f, X, y, attributions, removal, **kw)


@pytest.mark.parametrize("kw,exc,match", [
    (dict(y=np.zeros(5)), ValueError, r"^y must have shape \(N,\) = \(6,\)"),
    (dict(y=np.zeros((6, 2))), ValueError, r"^y must have shape"),
    (dict(fractions=(1.5,)), ValueError, r"fractions\[0\] must be a number in \(0, 1\]"),
    (dict(fractions=(-0.1, 0.5)), ValueError, r"fractions\[0\]"),
    (dict(fractions=(0.0,)), ValueError, r"fractions\[0\]"),
    (dict(fractions=(0.5, 0.5)), ValueError, "fractions has repeated"),
    (dict(orders=("morf", "middle")), ValueError, r"^orders: unknown ordering 'middle'.*Available: morf, lerf"),
    (dict(orders=()), ValueError, "^orders must name"),
    (dict(orders=("lerf", "lerf")), ValueError, "orders names an order twice"),
    (dict(removal=Marginal(np.zeros((4, 3)), n_references=2)), TypeError,
     "^removal must be a SampledRemoval"),
    (dict(removal="conditional_gaussian"), TypeError, "^removal must be a SampledRemoval"),
    (dict(attributions={"a": np.zeros((6, 2))}), ValueError, r"attributions\['a'\] has shape"),
    (dict(attributions={"random": np.zeros((6, 3))}), ValueError, "'random' is the seeded"),
    (dict(attributions=[np.zeros((6, 3))]), TypeError, "^attributions must be a mapping"),
    (dict(attributions={}, random=False), ValueError, "nothing to evaluate"),
    (dict(ranking="abs"), ValueError, "^ranking must be one of"),
    (dict(loss="huber"), ValueError, "^loss must be one of"),
    (dict(seed=-1), ValueError, "^seed must be"),
    (dict(random=1), TypeError, "^random must be"),
])
def test_bad_inputs_name_the_argument(kw, exc, match):
    a = _args(**{k: v for k, v in kw.items() if k in ("f", "X", "y", "attributions", "removal")})
    opts = {k: v for k, v in kw.items() if k not in a}
    with pytest.raises(exc, match=match):
        _road(**a, **opts)


class _Broken(SampledRemoval):
    name = "broken"

    def __init__(self, how):
        self.how = how

    def sample(self, X, keep, targets):
        if self.how == "shape":
            return np.asarray(X)[:, None, :-1]
        Z = np.asarray(X, float).copy()
        Z[keep] += 1.0  # changes kept features
        return Z[:, None, :]


@pytest.mark.parametrize("how,match", [("shape", "sample\\(\\) returned shape"),
                                       ("kept", "changed kept features")])
def test_a_removal_that_breaks_its_contract_is_named(how, match):
    with pytest.raises(ValueError, match=match):
        _road(**_args(removal=_Broken(how)))


@pytest.mark.parametrize("kw,exc,match", [
    (dict(fraction=1.0), ValueError, r"^fraction must be a number in \(0, 1\)"),
    (dict(fraction=0), ValueError, "^fraction must be"),
    (dict(classifier="svm"), ValueError, "^classifier must be one of"),
    (dict(folds=1), ValueError, "^folds must be"),
    (dict(n_rows=0), ValueError, "^n_rows must be"),
    (dict(n_rows=5), ValueError, "at least 2 \\* folds"),
    (dict(removal=None), TypeError, "^removal must be a SampledRemoval"),
    (dict(feature_names=["a"]), ValueError, "feature_names has 1 names"),
])
def test_leakage_bad_inputs(kw, exc, match):
    X = np.random.default_rng(0).normal(size=(50, 3))
    removal = kw.pop("removal", Constant(0.0))
    with pytest.raises(exc, match=match):
        road.leakage(X, removal, **kw)


# -- the spread of SRG, ties within noise, repeats of the draws ------------------------------------
def _linear_problem(N=300, n=5, seed=0):
    rng = np.random.default_rng(seed)
    w = np.array([3.0, 2.0, 1.0, 0.5, 0.0])[:n]
    X = rng.normal(size=(N, n))
    return w, X, X @ w + 0.05 * rng.normal(size=N)


def test_srg_standard_error_is_over_rows():
    """Under mse, SRG is the mean of each row's own SRG: srg_se is their s.d. / sqrt(N) (a
    deterministic removal, so a one-row run gives that row's SRG)."""
    w, X, y = _linear_problem(N=40)
    A = {"truth": w * X}
    rem = Constant(0.0)
    res = road.evaluate(_lin(w), X, y, A, rem, fractions=(0.4, 0.8), random=False)
    per_row = [road.evaluate(_lin(w), X[i:i + 1], y[i:i + 1], {"truth": A["truth"][i:i + 1]}, rem,
                         fractions=(0.4, 0.8), random=False).summary["srg"].iloc[0]
               for i in range(len(X))]
    s = res.summary.iloc[0]
    assert s["srg"] == pytest.approx(np.mean(per_row), rel=1e-12)
    assert s["srg_se"] == pytest.approx(np.std(per_row, ddof=1) / np.sqrt(len(X)), rel=1e-10)
    assert s["n_seeds"] == 1 and np.isnan(s["srg_sd_seeds"])
    assert list(res.summary.columns) == road.SUMMARY_COLUMNS


def test_ties_within_noise_are_shown_as_ties():
    w, X, y = _linear_problem()
    truth = w * X
    noise = np.random.default_rng(1).normal(size=(2, *truth.shape))
    # two methods of the same quality (the truth plus independent noise of one size)
    A = {"truth": truth, "noisy1": truth + noise[0], "noisy2": truth + noise[1],
         "inverse": 1.0 / (np.abs(truth) + 1e-3)}
    rem = GaussianConditional(np.zeros(5), np.eye(5), n_draws=4)
    res = road.evaluate(_lin(w), X, y, A, rem, fractions=(0.2, 0.6))
    s = res.summary.set_index("method")
    assert s.loc["noisy1", "srg"] != s.loc["noisy2", "srg"]  # two point estimates...
    assert "noisy2" in s.loc["noisy1", "tied_with"].split(";")  # ...that noise cannot order
    assert "noisy1" in s.loc["noisy2", "tied_with"].split(";")
    assert "inverse" not in str(s.loc["truth", "tied_with"])  # a real difference is not a tie
    assert "noisy1" not in str(s.loc["truth", "tied_with"])
    assert (s["srg_se"] > 0).all()
    md = res.to_markdown()
    assert "| SE | Within noise of | SRG 95 % interval |" in md
    assert "their order is not established" in md
    r = s.loc["noisy1"]
    z = 1.959963984540054
    assert f"[{r['srg'] - z * r['srg_se']:+.4f}, {r['srg'] + z * r['srg_se']:+.4f}]" in md
    top = res.summary.sort_values("rank").iloc[0]
    assert md.rstrip().endswith(res.verdict()) and res.verdict().startswith(
        f"Verdict: {top['method']} has the highest SRG")


def test_repeats_of_the_draws_give_the_spread_over_seeds():
    w, X, y = _linear_problem(N=60)
    A = {"truth": w * X}
    rem = GaussianConditional(np.zeros(5), np.eye(5), n_draws=2)
    one = road.evaluate(_lin(w), X, y, A, rem, fractions=(0.2, 0.6))
    three = road.evaluate(_lin(w), X, y, A, rem, fractions=(0.2, 0.6), n_seeds=3)
    rep = three.repeats
    assert list(rep.columns) == ["seed", *road.CURVE_COLUMNS] and sorted(rep["seed"].unique()) \
        == [0, 1, 2]
    # repeat 0 is the single run; the curves are the means over the repeats
    pd.testing.assert_frame_equal(rep[rep["seed"] == 0].drop(columns="seed")
                                  .reset_index(drop=True), one.curves)
    mean = rep.groupby(["method", "order", "q"], sort=False)["loss"].mean().to_numpy()
    assert np.allclose(three.curves["loss"].to_numpy(), mean, rtol=1e-12)
    s = three.summary.set_index("method")
    srgs = [road.srg_table(g.drop(columns="seed")).set_index("method")["srg"]
            for _, g in rep.groupby("seed")]
    for m in ("truth", "random"):
        sd = np.std([v[m] for v in srgs], ddof=1)
        assert sd > 0 and s.loc[m, "srg_sd_seeds"] == pytest.approx(sd, rel=1e-10)
    assert (s["n_seeds"] == 3).all() and "SD over seeds" in three.to_markdown()
    # a deterministic removal: the repeats differ only by the random control's scores
    c = road.evaluate(_lin(w), X, y, A, Constant(0.0), n_seeds=2).summary
    assert c.set_index("method").loc["truth", "srg_sd_seeds"] == 0.0
    with pytest.raises(ValueError, match="^n_seeds must be"):
        road.evaluate(_lin(w), X, y, A, rem, n_seeds=0)


class _Recording(SampledRemoval):
    """The constant 0 removal, recording every keep mask it is given."""

    name = "test_recording"

    def __init__(self):
        self.keeps = []

    def sample(self, X, keep, targets):
        self.keeps.append(np.asarray(keep, bool).copy())
        return np.where(keep, np.asarray(X, float), 0.0)[:, None, :]


def test_groups_are_removed_and_ranked_as_units():
    """A one-hot block is one unit: removed as a whole, ranked by its columns' summed
    attributions, k counted in units, as the insertion/deletion curves do."""
    rng = np.random.default_rng(0)
    N = 50
    level = rng.integers(0, 3, N)
    X = np.column_stack([rng.normal(size=N), np.eye(3)[level], rng.normal(size=N)])
    w = np.array([1.0, 2.0, -1.0, 0.5, 3.0])
    y = X @ w
    A = w * X
    rem = _Recording()
    res = road.evaluate(_lin(w), X, y, {"a": A}, rem, groups={"region": [1, 2, 3]},
                    fractions=(0.3, 0.6), random=False)
    assert res.units == ["region", "x0", "x4"]
    assert sorted(res.curves["k"].unique()) == [0, 1, 2, 3]
    for keep in rem.keeps:  # the block's three columns are kept or removed together
        assert (keep[:, 1:4] == keep[:, [1]]).all()
    # the first unit removed (MoRF, k = 1) is each row's largest |group sum|
    first = rem.keeps[1]  # after the all-removed call: the MoRF k = 1 call
    G = np.column_stack([A[:, 0], A[:, 1:4].sum(axis=1), A[:, 4]])
    top = np.argmax(np.abs(G), axis=1)
    cols = {0: [0], 1: [1, 2, 3], 2: [4]}
    for i in range(N):
        assert not first[i, cols[top[i]]].any() and first[i].sum() == 5 - len(cols[top[i]])
    # attributions given per group (in the groups' order: region, x0, x4) give the same result
    per_group = road.evaluate(_lin(w), X, y, {"a": G[:, [1, 0, 2]]}, Constant(0.0),
                          groups={"region": [1, 2, 3]}, fractions=(0.3, 0.6), random=False)
    pd.testing.assert_frame_equal(per_group.curves, res.curves)


# -- the leakage verdict and its interval ----------------------------------------------------------
def test_leakage_interval_and_verdict_say_when_rows_are_too_few():
    X, mu, S = _correlated()
    rem = GaussianConditional(mu, S, n_draws=1)
    few = road.leakage(X, rem, n_rows=30, folds=3, seed=1)
    assert few.ci_low <= few.accuracy <= few.ci_high
    assert few.ci_high >= few.chance + road.LEAK_MARGIN
    assert few.verdict() == "too few rows" and "too few rows to tell" in few.verdict_text()
    assert list(few.table.columns) == road.LEAKAGE_COLUMNS
    from scipy.stats import binomtest

    row = few.table.iloc[0]
    want = binomtest(round(row["accuracy"] * 30), 30).proportion_ci(method="wilson")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((want.low, want.high), rel=1e-12)
    many = road.leakage(X, rem, n_rows=None, seed=1)
    assert many.n_rows == 1000 and many.verdict() == "no leak"
    assert "no clear leakage" in many.verdict_text()
    const = road.leakage(X, Constant(mu), n_rows=100, folds=3, seed=1)
    assert const.verdict() == "leaks"
    # more rows asked for than X has: capped, and the result says so
    capped = road.leakage(X[:90], rem, n_rows=300, folds=3, seed=1)
    assert capped.n_rows == 90 and capped.n_rows_requested == 300 and capped.capped
    assert not many.capped and not few.capped


def test_leakage_removes_groups_as_units():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=120), np.eye(3)[rng.integers(0, 3, 120)]])
    rem = _Recording()
    res = road.leakage(X, rem, groups={"region": [1, 2, 3]}, folds=3, feature_names=list("abcd"))
    assert list(res.table["feature"]) == ["region", "a"]
    keep = rem.keeps[0]
    assert (keep[:, 1:4] == keep[:, [1]]).all()


def test_a_removal_costing_more_than_max_rows_is_refused_before_any_draw():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 4))
    calls = []

    class Huge(SampledRemoval):
        name = "huge"
        n_draws = 10_000_000

        def sample(self, X, keep, targets):
            calls.append(len(X))
            raise AssertionError("drawn")

    with pytest.raises(ValueError, match=r"ROAD: .* x n_draws = 10,000,000 of removal 'huge' = "
                                         r"[\d,]+ model rows.*more than max_rows = 100,000,000\. "
                                         r".*max_rows="):
        road.evaluate(_f, X, _f(X), {"a": X}, Huge())
    assert calls == []


def test_the_former_name_road_road_warns_and_gives_the_same_result():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 5))
    y = _f(X)
    want = road.evaluate(_f, X, y, {"a": X}, Constant(0.0), random=False)
    with pytest.warns(DeprecationWarning, match="insdel.road.evaluate"):
        got = road.road(_f, X, y, {"a": X}, Constant(0.0), random=False)
    pd.testing.assert_frame_equal(got.curves, want.curves)
