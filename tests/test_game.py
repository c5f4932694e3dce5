"""insdel.game: the game built once (as_game), its values, and the closed-form hooks the engines
read (curves, Shapley values, the decomposition's effects)."""

import re
from pathlib import Path

import numpy as np
import pytest

import insdel
from insdel.decomposition import batch_decomposition, sampled_shapley, shapley_values
from insdel.game import HOOKS, Game, RemovalGame, as_game


class Linear(Game):
    """The game of ``f(z) = c + w . z`` under the baseline removal, every quantity in closed
    form: ``v_b(u) = f(r_b) + sum_{j in u} w_j (x_bj - r_bj)``."""

    closed_form = frozenset(HOOKS)

    def __init__(self, w, c, X, R, *, closed=True):
        self.w, self.c = np.asarray(w, float), float(c)
        self.X, self.R = np.asarray(X, float), np.asarray(R, float)
        self.d = self.w * (self.X - self.R)  # each feature's contribution
        if not closed:
            self.closed_form = frozenset()

    def f(self, Z):
        return self.c + Z @ self.w

    def differing(self):
        return self.X != self.R

    def _values(self, pairs, keep, clock):
        return self.f(np.where(keep, self.X[pairs], self.R[pairs]))

    def subset(self, lo, hi):
        return Linear(self.w, self.c, self.X[lo:hi], self.R[lo:hi],
                      closed=bool(self.closed_form))

    def curves(self, orders, *, modes, positions):
        gained = np.take_along_axis(self.d[:, None, :], orders, axis=2)
        cum = np.concatenate([np.zeros(orders.shape[:2] + (1,)), np.cumsum(gained, axis=2)],
                             axis=2)[:, :, positions]
        fr, fx = self.f(self.R)[:, None, None], self.f(self.X)[:, None, None]
        return {mo: fr + cum if mo == "insertion" else fx - cum for mo in modes}

    def shapley(self):
        return self.d.copy()

    def effects(self):
        diff = self.differing()
        dsz = diff.sum(axis=1).astype(np.int64)
        Dflat = np.nonzero(diff)[1].astype(np.int64)
        doff = np.concatenate([[0], np.cumsum(dsz)]).astype(np.int64)
        off = np.concatenate([[0], np.cumsum(1 << dsz)])
        delta = np.zeros(off[-1])
        delta[off[:-1]] = self.f(self.R)
        for b in range(self.B):  # the singletons' effects: bit t = the t-th unit of D_b
            delta[off[b] + (1 << np.arange(dsz[b]))] = self.d[b, Dflat[doff[b]:doff[b + 1]]]
        return dsz, Dflat, doff, delta


@pytest.fixture
def linear():
    rng = np.random.default_rng(3)
    B, n = 6, 5
    X = rng.normal(size=(B, n))
    R = rng.normal(size=(B, n))
    R[0, 2] = X[0, 2]  # a unit outside D
    w, c = rng.normal(size=n), 0.7
    return Linear(w, c, X, R), Linear(w, c, X, R, closed=False), (lambda Z: c + Z @ w), X, R


def test_closed_form_curves_agree_with_the_value_route_and_the_model(linear):
    closed, plain, f, X, R = linear
    orders = np.stack([np.argsort(np.random.default_rng(b).random((3, 5)), axis=1)
                       for b in range(6)])
    a = insdel.trace(closed, None, None, orders)
    b = insdel.trace(plain, None, None, orders)
    c = insdel.trace(f, X, R, orders)
    assert a.n_unique == 0 and b.n_unique > 0  # the closed form evaluated nothing
    for mo in ("insertion", "deletion"):
        np.testing.assert_allclose(a.curves[mo], b.curves[mo], rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.curves[mo], c.curves[mo], rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.fx, c.fx, atol=1e-12)
    np.testing.assert_allclose(a.fr, c.fr, atol=1e-12)
    pos = np.array([0, 2, 5])
    a = insdel.trace(closed, None, None, orders, positions=pos, modes=("deletion",))
    b = insdel.trace(plain, None, None, orders, positions=pos, modes=("deletion",))
    np.testing.assert_allclose(a.curves["deletion"], b.curves["deletion"], atol=1e-12)


def test_closed_form_evaluate_agrees_with_the_model(linear):
    closed, plain, f, X, R = linear
    A = {"d": closed.d, "neg": -closed.d}
    evs = [insdel.evaluate(g, None, None, A, n_random=3) for g in (closed, plain)]
    evs.append(insdel.evaluate(f, X, R, A, n_random=3))
    for ev in evs[1:]:
        for mo in ("insertion", "deletion"):
            for m in ("d", "neg", "random"):
                np.testing.assert_allclose(evs[0].abc_array(m, mo), ev.abc_array(m, mo), rtol=0,
                                           atol=1e-12)


def test_closed_form_shapley_and_effects_agree_with_the_value_route(linear):
    closed, plain, f, X, R = linear
    phi = shapley_values(closed, None, None)
    np.testing.assert_allclose(phi, shapley_values(plain, None, None), atol=1e-12)
    np.testing.assert_allclose(phi, shapley_values(f, X, R), atol=1e-12)
    dc, dp, dm = (batch_decomposition(closed, None, None), batch_decomposition(plain, None, None),
                  batch_decomposition(f, X, R))
    assert dc.n_evals == 0 and dp.n_evals > 0
    for d in (dp, dm):
        np.testing.assert_array_equal(dc.d, d.d)
        for i in range(closed.B):
            np.testing.assert_allclose(dc.subspace_delta(i), d.subspace_delta(i), atol=1e-12)
            np.testing.assert_allclose(dc.subspace_values(i), d.subspace_values(i), atol=1e-12)
        np.testing.assert_allclose(dc.shapley(), d.shapley(), atol=1e-12)
        np.testing.assert_allclose(dc.expected_abc(), d.expected_abc(), atol=1e-12)
    # sampled Shapley values telescope along each ordering: exact for an additive game
    np.testing.assert_allclose(sampled_shapley(closed, None, None, n_orderings=4)[0], phi,
                               atol=1e-12)


def test_a_game_holds_its_pairs():
    g = as_game(lambda Z: Z.sum(1), np.ones((2, 3)), np.zeros((2, 3)))
    assert as_game(g) is g
    with pytest.raises(TypeError, match="removal"):
        insdel.trace(g, None, None, np.arange(3)[None].repeat(2, 0), removal="marginal")
    with pytest.raises(TypeError, match="X"):
        as_game(g, np.ones((2, 3)))


def test_values_evaluate_each_distinct_coalition_once():
    calls = []

    def f(Z):
        calls.append(len(Z))
        return Z[:, 0] * Z[:, 1] + Z[:, 2]

    X, R = np.array([[1.0, 2, 3], [4, 5, 6]]), np.zeros((2, 3))
    g = as_game(f, X, R)
    keep = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [1, 1, 0]], bool)
    clock = {}
    v = g.values([0, 0, 1, 1], keep, clock=clock)
    assert clock["coalitions"] == 3 and sum(calls) == 3
    np.testing.assert_array_equal(v, [2.0, 2.0, 6.0, 20.0])
    np.testing.assert_array_equal(g.v_all(), f(X))
    np.testing.assert_array_equal(g.v_empty(), [0.0, 0.0])


def test_values_of_a_reference_game_average_the_references():
    rng = np.random.default_rng(0)
    X, R3 = rng.normal(size=(3, 4)), rng.normal(size=(3, 2, 4))

    def f(Z):
        return np.sin(Z).sum(1) * Z[:, 0]

    g = as_game(f, X, R3, removal="marginal")
    assert g.references.shape == (3, 2, 4)
    keep = rng.random((5, 4)) < 0.5
    pairs = np.array([0, 1, 2, 2, 0])
    want = np.mean([f(np.where(keep, X[pairs], R3[pairs, k])) for k in range(2)], axis=0)
    np.testing.assert_allclose(g.values(pairs, keep), want, rtol=0, atol=1e-15)
    sub = g.subset(1, 3)
    assert sub.offset == 1 and isinstance(sub, RemovalGame)
    np.testing.assert_array_equal(sub.values([0], keep[:1]), g.values([1], keep[:1]))


def test_imputed_rows_of_a_coalition():
    """game.imputed: a reference game's K hybrids, a sampled removal's M draws (seeded by
    offset + shift + pair, equal to x on the kept units, over groups), the first ``draws`` of
    them; a rows-only game (no model) gives rows and refuses values and engines."""
    from insdel.removal import Constant, build

    rng = np.random.default_rng(0)
    X, R3 = rng.normal(size=(3, 4)), rng.normal(size=(3, 2, 4))
    keep = np.array([[True, False, True, False], [False] * 4])
    g = as_game(lambda Z: Z.sum(1), X, R3, removal="marginal")
    Z = g.imputed([2, 0], keep)
    assert Z.shape == (2, 2, 4)
    np.testing.assert_array_equal(Z[0, 1], np.where(keep[0], X[2], R3[2, 1]))
    np.testing.assert_array_equal(g.imputed([2, 0], keep, draws=1), Z[:, :1])
    rem = build("conditional_gaussian", data=rng.normal(size=(50, 4)), n_draws=3)
    rows = as_game(None, X, None, removal=rem, rows_only=True)
    Z = rows.imputed([1, 2], keep)
    np.testing.assert_array_equal(Z, rem.sample(X[[1, 2]], keep, np.array([1, 2])))
    np.testing.assert_array_equal(rows.imputed([1], keep[:1], shift=5),
                                  rem.sample(X[[1]], keep[:1], np.array([6])))
    np.testing.assert_array_equal(rows.subset(1, 3).imputed([0], keep[:1]), Z[:1])
    grouped = as_game(None, X, None, removal=Constant(0.0), groups=[[0, 1], [2, 3]],
                      rows_only=True)
    np.testing.assert_array_equal(grouped.imputed([0], [[True, False]])[0, 0],
                                  [X[0, 0], X[0, 1], 0.0, 0.0])
    with pytest.raises(ValueError, match="no model"):
        rows.values([0], keep[:1])
    with pytest.raises(ValueError, match="without a model"):
        insdel.trace(rows, None, None, np.arange(4)[None].repeat(3, 0))
    with pytest.raises(TypeError, match="give f=None"):
        as_game(lambda Z: Z.sum(1), X, None, removal=rem, rows_only=True)
    with pytest.raises(ValueError, match="needs one reference per target"):
        as_game(None, X, None, rows_only=True)


def test_the_game_refuses_a_costly_request():
    rem = insdel.removal.build("conditional_gaussian", data=np.ones((5, 3)) + np.eye(5, 3),
                               n_draws=4, max_rows=10)
    g = as_game(lambda Z: Z.sum(1), np.zeros((2, 3)), None, removal=rem)
    assert g.check_cost(2, what="test") == 8
    with pytest.raises(ValueError, match="12 model rows.*max_rows = 10"):
        g.check_cost(3, what="test")


def test_trace_validate_is_deprecated():
    X, R = np.ones((2, 3)), np.zeros((2, 3))
    with pytest.warns(DeprecationWarning, match="validate"):
        insdel.trace(lambda Z: Z.sum(1), X, R, np.arange(3)[None].repeat(2, 0), validate=True)


ENGINES = ["tracing.py", "evaluation.py", "decomposition/batch.py", "decomposition/shapley.py",
           "decomposition/_subspace.py", "decomposition/__init__.py"]


@pytest.mark.parametrize("module", ENGINES)
def test_engines_never_ask_a_removals_kind(module):
    src = (Path(insdel.__file__).parent / module).read_text(encoding="utf-8")
    assert not re.findall(r"isinstance\(.*(Removal|Baseline|Marginal|Cohort)", src)
    assert "resolve(" not in src and "check_targets(" not in src


READERS = ["road.py", "roar.py", "runner/stages/attribution.py", "sanity/meta.py",
           "sanity/randomisation.py", "metrics/quantus_family.py"]


@pytest.mark.parametrize("module", READERS)
def test_road_roar_sanity_read_rows_through_the_game(module):
    """ROAD, ROAR, the runner's attribution stage, sanity and the ROAD metric build no removal
    of their own, never switch on a removal's kind and never draw a removal's rows themselves."""
    src = (Path(insdel.__file__).parent / module).read_text(encoding="utf-8")
    assert not re.findall(r"isinstance\(.*(Removal|Baseline|Marginal|Cohort)", src)
    assert "resolve(" not in src and "check_targets(" not in src
    assert ".sample(" not in src and "check_rows(" not in src


def test_docs_game_md_runs_as_written(capsys):
    doc = Path(insdel.__file__).parents[1] / "docs" / "game.md"
    blocks = re.findall(r"^```python\n(.*?)^```", doc.read_text(encoding="utf-8"), re.S | re.M)
    assert len(blocks) == 2
    for code in blocks:
        exec(compile(code, str(doc), "exec"), {"__name__": "docs_game"})
    out = capsys.readouterr().out
    assert "RemovalGame(B=5, n=4, m=4, removal=Baseline())" in out
    assert out.count("True") >= 3 and "0 True" in out


class Minimal(Game):
    """A game implementing only ``_values``: ``v_b(u)`` = the number of kept units plus b."""

    name = "count"

    def __init__(self, B, m):
        self.X = np.zeros((B, m))

    def _values(self, pairs, keep, clock):
        return keep.sum(axis=1) + pairs.astype(float)


def test_the_base_game_defaults():
    g = Minimal(3, 4)
    assert (g.B, g.n, g.m) == (3, 4, 4)
    assert g.differing().shape == (3, 4) and g.differing().all()  # every unit may matter
    np.testing.assert_array_equal(g.v_all(), [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(g.v_empty(), [0.0, 1.0, 2.0])
    assert g.check_cost(10, what="values") == 10  # n_draws = 1: one row per coalition
    g.n_draws = 0  # a game read off the data still counts one row per coalition
    assert g.check_cost(7, what="values") == 7
    g.n_draws = 5
    assert g.check_cost(7, what="values") == 35
    assert g.params() is None
    assert g.parts() == {"game": g} and g.parts()["game"] is g
    assert not any(g.knows(h) for h in HOOKS)


def test_the_base_game_refuses_what_it_does_not_know():
    g = Minimal(2, 3)
    with pytest.raises(NotImplementedError, match="Minimal cannot be cut into chunks"):
        g.subset(0, 1)
    with pytest.raises(NotImplementedError, match="Minimal has no rows"):
        g.imputed([0], np.ones((1, 3), bool))
    orders = np.tile(np.arange(3), (2, 1, 1))
    calls = {"curves": lambda: g.curves(orders, modes=("insertion",), positions=np.arange(4)),
             "shapley": g.shapley, "effects": g.effects}
    for hook, call in calls.items():
        with pytest.raises(NotImplementedError,
                           match=rf"Minimal \('count'\) does not answer '{hook}' in closed form"):
            call()


def test_a_game_without_values_names_what_to_implement():
    class Empty(Game):
        X = np.zeros((1, 2))

    with pytest.raises(NotImplementedError, match=r"Empty must implement _values"):
        Empty().v_all()
