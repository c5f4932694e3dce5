"""The game: the value functions ``v_b(u)`` of B pairs, built once from a model and a removal
(conventions: *Removal*; docs/game.md).

Every engine that reads coalition values (curves, ``evaluate``, the decomposition, Shapley
values) takes a :class:`Game` and asks it questions; it never asks what removal, model or
grouping the game was built from. A game knows, per pair b:

* its units (``m``: the n columns, or the m groups of ``groups``) and ``D_b``, the units whose
  removal can change ``v_b`` (:meth:`Game.differing`);
* ``v_b(u)`` for any batch of (pair, coalition) requests (:meth:`Game.values`), each distinct
  coalition of a pair evaluated once; ``v_b(all)`` and ``v_b(∅)`` (:meth:`Game.v_all`,
  :meth:`Game.v_empty`).

A game may know more than its values. Two kinds of extra knowledge are read by the engines:

* ``references``: a game that is the mean of K single-reference games,
  ``v_b(u) = (1/K) sum_k f(hybrid(x_b, b_k, u))`` (``baseline``: K = 1; ``marginal``), exposes
  its targets, references and model, and the engines run their numba row writers on the pairs
  (x_b, b_k) (the curves' chain and set kernels, the decomposition's subset stream): the
  baseline's fast path.
* closed forms (:attr:`Game.closed_form`, the names of :data:`HOOKS`): a game that answers a whole
  question directly (:meth:`Game.curves`, :meth:`Game.shapley`, :meth:`Game.effects`) declares it
  there, and the engines take its answer instead of the value route.

:func:`as_game` is the front door: it checks the model, the targets, the references, the removal
and the groups once and returns a :class:`RemovalGame`, which is trusted from then on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ._validation import check_bool, check_choice, check_finite, check_scalar
from .adapter import Model, ModelLike, as_model
from .groups import Groups, check_groups
from .hybrids import build_rows, masks_to_words
from .removal import Baseline, GameRemoval, ReferenceRemoval, Removal, check_targets, resolve
from .removal.base import differing_from
from .removal.trees import ENGINES, NoTreeGame, PathDependent, tree_game_of, trees_of
from .removal.values import check_rows, coalition_values, imputed_rows, unique_coalitions

__all__ = ["Game", "RemovalGame", "as_game", "from_parts", "HOOKS", "ENGINES", "engine_text",
           "model_engine", "one_output", "refuse_drawn_outputs"]

#: The questions a game may answer in closed form (:attr:`Game.closed_form`).
HOOKS = ("curves", "shapley", "effects")


class Game:
    """The value functions ``v_b(u)`` of B pairs over m units (base class).

    Subclasses set ``X`` (the targets, (B, n) float64), ``groups`` (a :class:`insdel.groups.Groups`
    of more than singletons, or None: one unit per column) and ``unit_names`` (the groups' names,
    or None), and implement :meth:`_values` (and :meth:`subset` to be cut into chunks). A game
    that knows more overrides the hooks it lists in :attr:`closed_form`.

    Attributes
    ----------
    name : str
        What the values are (the removal's name for a :class:`RemovalGame`); messages use it.
    engine : str
        ``"black_box"`` (the model's values on rows) or ``"tree"`` (a tree ensemble's closed
        forms: :mod:`insdel.trees`).
    closed_form : frozenset of str
        The hooks of :data:`HOOKS` this game answers directly.
    references : ndarray (B, K, n) or None
        Set when v is the mean of K single-reference games (the engines' row-writer route).
    model : insdel.adapter.Model or None
        The adapted model of a game whose values are model rows (None: no model is evaluated).
    n_draws : int
        Model rows per coalition value (its cost; 0 for a game read off the data).
    offset : int
        The game's pairs are the run's pairs from this index on (a chunk of a larger game).
    """

    name: str = "game"
    #: which engine answers: ``"black_box"`` (the model's values on rows) or ``"tree"`` (the
    #: trees' closed forms)
    engine: str = "black_box"
    closed_form: ClassVar[frozenset[str]] = frozenset()
    references: np.ndarray | None = None
    model: Model | None = None
    n_draws: int = 1
    offset: int = 0
    X: np.ndarray
    groups: Groups | None = None
    unit_names: list | None = None

    @property
    def B(self) -> int:
        """Number of pairs."""
        return int(self.X.shape[0])

    @property
    def n(self) -> int:
        """Number of columns."""
        return int(self.X.shape[1])

    @property
    def m(self) -> int:
        """Number of units (the groups, or the n columns)."""
        return self.n if self.groups is None else self.groups.m

    def knows(self, question: str) -> bool:
        """Whether this game answers ``question`` (one of :data:`HOOKS`) in closed form."""
        return question in self.closed_form

    def differing(self) -> np.ndarray:
        """(B, m) bool: D_b, the units whose removal can change ``v_b`` (default: every unit)."""
        return np.ones((self.B, self.m), dtype=bool)

    def values(self, pairs: ArrayLike, keep: ArrayLike, *, unique: bool = False,
               clock: dict | None = None) -> np.ndarray:
        """``v_b(u)`` of each request: pair ``pairs[i]``, coalition ``keep[i]``.

        Parameters
        ----------
        pairs : array_like of int (N,)
            The pair of each request (an index into this game's pairs).
        keep : array_like of bool (N, m)
            The coalition u of each request, over the units: True keeps x's value.
        unique : bool, default False
            The caller guarantees the requests are distinct (an enumeration of subsets): they are
            evaluated in the order given. Otherwise each distinct (pair, coalition) is evaluated
            once, in sorted order, and the values are spread back.
        clock : dict, optional
            Adds ``model_s`` and ``sampling_s`` (seconds) and ``coalitions`` (the distinct
            coalitions evaluated).

        Returns
        -------
        ndarray of float64 (N,), or (N, H) for a model with H outputs (``outputs=H``)
        """
        pairs = np.asarray(pairs, dtype=np.int64)
        keep = np.asarray(keep, dtype=bool)
        if unique:
            up, uk, inv = pairs, keep, None
        else:
            up, uk, inv = unique_coalitions(pairs, keep)
        v = self._values(up, np.ascontiguousarray(uk), clock)
        if clock is not None:
            clock["coalitions"] = clock.get("coalitions", 0) + len(up)
        return v if inv is None else v[inv]

    def _values(self, pairs: np.ndarray, keep: np.ndarray, clock: dict | None) -> np.ndarray:
        """The values of distinct requests (units' coalitions)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _values(pairs, keep, "
                                  "clock).")

    def v_all(self) -> np.ndarray:
        """``v_b(all)`` (B,): every unit kept (f(x) under the baseline)."""
        return self.values(np.arange(self.B), np.ones((self.B, self.m), bool), unique=True)

    def v_empty(self) -> np.ndarray:
        """``v_b(∅)`` (B,): every unit removed (f(r) under the baseline)."""
        return self.values(np.arange(self.B), np.zeros((self.B, self.m), bool), unique=True)

    def subset(self, lo: int, hi: int) -> Game:
        """The game of pairs ``lo .. hi - 1`` (their values unchanged: a chunk of this game)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be cut into chunks.")

    def imputed(self, pairs: ArrayLike, keep: ArrayLike, *, shift: int = 0,
                draws: int | None = None) -> np.ndarray:
        """The rows whose mean model value is ``v_b(u)`` (what ROAD predicts and ROAR retrains
        on), checked: equal to x on the kept units, finite.

        Parameters
        ----------
        pairs : array_like of int (N,)
            The pair of each request.
        keep : array_like of bool (N, m)
            The coalition of each request, over the units: True keeps x's value.
        shift : int, default 0
            The draws of pair b are those of target ``offset + shift + b`` (a repeat of a
            sampled removal's draws starts at another ``shift``).
        draws : int, optional
            Only the first ``draws`` rows of each request (None: all M).

        Returns
        -------
        ndarray of float64 (N, M, n)
            The K hybrids of a game with ``references``; a sampled removal's M draws.
        """
        raise NotImplementedError(f"{type(self).__name__} has no rows: its values are not means "
                                  "of model rows.")

    def check_cost(self, n_coalitions: int, *, what: str) -> int:
        """Refuse, before any row is written, a request of ``n_coalitions`` coalition values
        whose model rows (``n_coalitions x n_draws``) exceed the removal's budget
        (:func:`insdel.removal.values.check_rows`: the error names the estimate and the option
        that raises it). Returns the rows."""
        return int(n_coalitions) * max(int(self.n_draws), 1)

    def params(self) -> dict[str, Any] | None:
        """What determines the values beyond the pairs, as plain JSON (None: nothing to record)."""
        return None

    def parts(self) -> dict[str, Any]:
        """What rebuilds this game on a Dask worker (:func:`from_parts`), as keyword arguments
        shared once by :func:`insdel.distributed.run_chunked`: the game itself by default."""
        return {"game": self}

    # -- closed forms: a game lists the ones it answers in ``closed_form`` ----------------------

    def curves(self, orders: np.ndarray, *, modes: tuple, positions: np.ndarray
               ) -> dict[str, np.ndarray]:
        """Insertion / deletion curves of every pair under every ordering, in closed form.

        ``orders`` (B, K, m) int64 (checked permutations of the units), ``modes`` a tuple of
        ``"insertion"`` / ``"deletion"``, ``positions`` (S,) the units moved at each recorded
        point. Returns mode -> (B, K, S) float64: ``v_b(S_k)`` (insertion) and
        ``v_b(complement(S_k))`` (deletion), S_k the first ``positions[s]`` units of the ordering.
        """
        raise self._unknown("curves")

    def shapley(self) -> np.ndarray:
        """Exact Shapley values of ``v_b`` over the units, (B, m), in closed form."""
        raise self._unknown("shapley")

    def effects(self, *, max_d: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The anchored decomposition's effects (Möbius dividends) in closed form, refused for a
        pair with |D_b| > ``max_d`` (None: the game's own limit).

        Returns ``dsz, Dflat, doff, delta``: |D_b| per pair (B,), the units of every D_b in
        increasing order (flat) with their offsets (B + 1,), and ``Delta_b(w)`` for the 2^|D_b|
        subsets w of D_b (bit t = the t-th unit of D_b), flat, pair after pair.
        """
        raise self._unknown("effects")

    def _unknown(self, hook: str) -> NotImplementedError:
        """The error of a closed-form hook this game does not answer."""
        return NotImplementedError(f"{type(self).__name__} ({self.name!r}) does not answer "
                                   f"{hook!r} in closed form (its closed_form: "
                                   f"{sorted(self.closed_form)}).")


class RemovalGame(Game):
    """The game of a model under a removal (built by :func:`as_game`; trusted: no checks here).

    ``v_b(u)`` is the removal's value function (conventions: *Removal*): the mean of f over the
    K references' hybrids (a :class:`insdel.removal.ReferenceRemoval`: ``references`` is set),
    the mean of f over the M rows a sampled removal draws, or a value read off the data.
    """

    def __init__(self, f, model: Model | None, X: np.ndarray, R, removal: Removal,
                 groups: Groups | None, *, unit_names: list | None = None, offset: int = 0,
                 references: np.ndarray | None = None, batch_size: int | None = None):
        self.f = f  # as given: what a chunk on a Dask worker adapts again
        self.model = model
        self.batch_size = batch_size
        self.X = X
        self.R = R
        self.removal = removal
        self.name = removal.name
        self.groups = groups
        self.unit_names = unit_names
        self.offset = offset
        self.n_draws = int(getattr(removal, "n_draws", 1))
        if references is None and isinstance(removal, Baseline):
            references = R[:, None, :]  # R checked (B, n) float64 by the front door: a view
        elif references is None and isinstance(removal, ReferenceRemoval):
            references = np.asarray(removal.references(X, R, offset=offset), dtype=np.float64)
        self.references = references
        self._rows = None  # the K pairs' targets and references in the model's dtype
        self.rows_only = False  # built without a model: rows, no values (as_game(rows_only=True))

    def differing(self) -> np.ndarray:
        if self.references is None:
            diff = self.removal.differing(self.X, self.R)
        elif self.references.shape[1] == 1:
            diff = self.X != self.references[:, 0, :]
        else:
            diff = differing_from(self.X, self.references)
        return diff if self.groups is None else self.groups.reduce_any(diff)

    def _values(self, pairs, keep, clock):
        if self.model is None and not isinstance(self.removal, GameRemoval):
            raise ValueError("this game has no model (as_game(None, ..., rows_only=True)): it "
                             "gives its imputed rows, not values.")
        if self.references is None:  # drawn, or read off the data
            refuse_drawn_outputs(self)
            cols = keep if self.groups is None else self.groups.expand(keep)
            return coalition_values(self.model, self.removal, self.X, pairs,
                                    np.ascontiguousarray(cols), clock=clock, offset=self.offset)
        K = self.references.shape[1]
        words = masks_to_words(keep)
        if K == 1:
            return self._hybrid_values(pairs, words)
        vals = self._hybrid_values(np.repeat(pairs * K, K) + np.tile(np.arange(K), len(pairs)),
                                   np.repeat(words, K, axis=0))
        return vals.reshape((len(pairs), K) + vals.shape[1:]).mean(axis=1)

    def _hybrid_values(self, rows_of: np.ndarray, words: np.ndarray) -> np.ndarray:
        """f at the hybrids of the K-expanded pairs ``rows_of`` (pair b, reference k: row
        b K + k), written by :func:`insdel.hybrids.build_rows` one batch at a time."""
        if self._rows is None:
            B, K, n = self.references.shape
            dt = self.model.dtype
            self._rows = (np.ascontiguousarray(np.repeat(self.X, K, axis=0) if K > 1 else self.X,
                                               dtype=dt),
                          np.ascontiguousarray(self.references.reshape(B * K, n), dtype=dt))
        Xr, Rr = self._rows
        bs = self.model.batch_size
        N = words.shape[0]
        out = np.empty((N,) + self.model.value_shape)  # (N, H) for a model with H outputs
        unit_of = None if self.groups is None else self.groups.labels
        buf = np.empty((min(bs, N), self.n), dtype=self.model.dtype)
        for s0 in range(0, N, bs):
            s1 = min(N, s0 + bs)
            rows = build_rows(Xr, Rr, rows_of[s0:s1], words[s0:s1], out=buf[:s1 - s0],
                              unit_of=unit_of)
            out[s0:s1] = self.model(rows)
        return out

    def imputed(self, pairs, keep, *, shift: int = 0, draws: int | None = None) -> np.ndarray:
        pairs = np.asarray(pairs, dtype=np.int64)
        keep = np.asarray(keep, dtype=bool)
        cols = keep if self.groups is None else self.groups.expand(keep)
        if self.references is not None:  # the K hybrids (the first ``draws`` of them)
            return np.where(cols[:, None, :], self.X[pairs][:, None, :],
                            self.references[pairs, :draws])
        if isinstance(self.removal, GameRemoval):
            raise ValueError(f"removal {self.name!r} reads its values off the data: it writes no "
                             "rows to impute.")
        Z = imputed_rows(self.removal, self.X[pairs], cols, self.offset + shift + pairs)
        return Z if draws is None else Z[:, :draws]

    def check_cost(self, n_coalitions: int, *, what: str) -> int:
        return check_rows(self.removal, n_coalitions, what=what, model=self.model, n=self.n)

    def subset(self, lo: int, hi: int) -> RemovalGame:
        R = self.R[lo:hi] if self.R is not None and np.ndim(self.R) >= 2 else self.R
        refs = None if self.references is None else self.references[lo:hi]
        sub = RemovalGame(self.f, self.model, self.X[lo:hi], R, self.removal, self.groups,
                          unit_names=self.unit_names, offset=self.offset + lo, references=refs,
                          batch_size=self.batch_size)
        sub.rows_only = self.rows_only
        return sub

    def parts(self) -> dict[str, Any]:
        """The model as given, the pairs, the removal, the groups (a torch module travels to the
        workers once, as :func:`insdel.distributed.run_chunked` ships a shared ``f``)."""
        return {"f": self.f, "X": self.X, "R": self.R, "removal": self.removal,
                "groups": self.groups, "references": self.references,
                "batch_size": self.batch_size, "offset": self.offset}

    @classmethod
    def from_parts(cls, f, X, R, removal, groups, references, batch_size, offset
                   ) -> RemovalGame:
        """The game :meth:`parts` describes, trusted (its parts were checked where it was
        built)."""
        return cls(f, _adapt(f, removal, batch_size), X, R, removal, groups, offset=offset,
                   references=references, batch_size=batch_size)

    def params(self) -> dict[str, Any] | None:
        return self.removal.params()

    def __repr__(self) -> str:
        return (f"RemovalGame(B={self.B}, n={self.n}, m={self.m}, removal={self.removal!r}"
                + ("" if self.offset == 0 else f", offset={self.offset}") + ")")


def from_parts(game: Game | None = None, **parts) -> Game:
    """The game that :meth:`Game.parts` describes (trusted: it was checked where it was built)."""
    return game if game is not None else RemovalGame.from_parts(**parts)


def _adapt(f, removal: Removal, batch_size: int | None) -> Model | None:
    """The adapted model; None for a game read off the data given no model."""
    if f is None and isinstance(removal, GameRemoval):
        return None
    return as_model(f, batch_size=batch_size)


def as_game(f: ModelLike | Game, X: ArrayLike | None = None, R: ArrayLike | None = None, *,
            removal=None, groups=None, batch_size: int | None = None,
            feature_names: Sequence[str] | None = None, rows_only: bool = False,
            offset: int = 0, engine: str = "auto") -> Game:
    """The game of f on the pairs (X, R) under ``removal``, checked once (the front door).

    Parameters
    ----------
    f : model or Game
        Anything :func:`insdel.as_model` accepts (None for a removal read off the data, e.g.
        ``cohort``), or a :class:`Game` already built: returned as it is (then X, R, removal
        and groups must not be given: the game holds them).
    X : array_like (B, n)
        Targets.
    R : array_like (B, n), (n,) or (B, K, n), optional
        References, where the removal reads them (:func:`insdel.removal.check_targets`).
    removal : str or insdel.removal.Removal, optional
        What a removed unit becomes (None: the paper's ``baseline``, R).
    groups : optional
        Units that move together (:mod:`insdel.groups`).
    batch_size : int, optional
        Rows per model call.
    feature_names : sequence of str, optional
        Column names, for groups given by name.
    rows_only : bool, default False
        Build the game without a model (``f`` None), for a caller that reads the removal's rows
        (:meth:`Game.imputed`: ROAR's retraining data, ROAD's leakage diagnostic) and no value.
        Such a game is refused where a game is taken in place of a model.
    offset : int, default 0
        The index of the first target in the whole run: a chunk of targets built on its own keeps
        the draws (seeded by the target's index) of the whole run, as :meth:`Game.subset` does.
    engine : {"auto", "tree", "black_box"}, default "auto"
        ``auto``: the exact tree game (:mod:`insdel.trees`) when f is a tree ensemble insdel
        reads (:func:`insdel.trees.recognise`) and the removal has one (``baseline``,
        ``marginal``, ``path_dependent``: :func:`insdel.removal.trees.tree_game_of`), else the
        model's values on hybrid rows; ``tree``: the tree game or an error naming the model and
        the removal; ``black_box``: the model's values (``path_dependent`` has none: an error).
        The game says which ran (:attr:`Game.engine`, :func:`engine_text`).

    Returns
    -------
    Game
    """
    if isinstance(f, Game):
        given = [k for k, v in (("X", X), ("R", R), ("removal", removal), ("groups", groups),
                                ("batch_size", batch_size)) if v is not None]
        if given:
            raise TypeError(f"a Game holds its pairs, removal, groups and model; do not give "
                            f"{', '.join(given)} with it.")
        if getattr(f, "rows_only", False):
            raise ValueError("this game was built without a model (as_game(None, ..., "
                             "rows_only=True)): it gives imputed rows, not values; build the "
                             "game from the model.")
        if engine != "auto" and engine != f.engine:
            raise ValueError(f"engine={engine!r}, but the game given was built with the "
                             f"{f.engine!r} engine.")
        return f
    engine = check_choice("engine", engine, ENGINES)
    if check_bool(rows_only, "rows_only") and f is not None:
        raise TypeError("as_game: rows_only=True builds a game without a model; give f=None.")
    rem = resolve(removal)
    offset = check_scalar(offset, "offset", int, min_val=0)
    if isinstance(rem, PathDependent):  # exact from the trees' structure: no value route
        if engine == "black_box":
            raise ValueError("engine='black_box': removal 'path_dependent' is read off a tree "
                             "ensemble's structure and has no value route; use engine='auto'.")
        return rem.tree_game(f, X, groups=groups, feature_names=feature_names, offset=offset,
                             rows_only=rows_only)
    if engine != "black_box" and not rows_only:
        try:
            return tree_game_of(f, rem, X, R, groups=groups, feature_names=feature_names,
                                offset=offset)
        except NoTreeGame as err:
            if engine == "tree":
                raise ValueError(f"engine='tree': {err}; use engine='auto' or "
                                 "'black_box' for the model's values on rows.") from None
    model = None if rows_only else _adapt(f, rem, batch_size)
    X, R = check_targets(X, R, rem)
    if not isinstance(rem, Baseline):  # the baseline's pairs are checked finite already
        check_finite("X", X)
    grp = check_groups(groups, X.shape[1], feature_names=feature_names)
    names = None if grp is None else list(grp.names)
    if grp is not None and grp.singleton:
        grp = None
    game = RemovalGame(f, model, X, R, rem, grp, unit_names=names, batch_size=batch_size,
                       offset=offset)
    game.rows_only = bool(rows_only)
    return game


def one_output(game: Game, what: str) -> Game:
    """``game`` when its model has one output; a model kept with ``outputs=H`` is an error naming
    ``what`` (an engine that explains one output) and the per-output route (its output views,
    :mod:`insdel.multi_output`)."""
    H = getattr(getattr(game, "model", None), "n_outputs", None)
    if H is not None:
        raise ValueError(f"{what} explains one output; the model has H = {H} outputs "
                         f"(outputs={H}): run it per output with insdel.multi_output.per_output"
                         "(func, model, ...) or on insdel.multi_output.output_views(model)[h] "
                         "(each distinct batch of rows is evaluated once for all outputs).")
    return game


def refuse_drawn_outputs(game: Game) -> None:
    """An error when ``game`` draws its rows (no references) and its model keeps H outputs
    (``outputs=H``): such a game's values are one output's; it is tested one output view at a
    time (:func:`insdel.multi_output.per_output`)."""
    H = getattr(getattr(game, "model", None), "n_outputs", None)
    if H is not None and getattr(game, "references", True) is None:
        raise NotImplementedError(
            f"removal {game.name!r} draws its rows; a model with outputs={H} is tested under it "
            "one output at a time: insdel.multi_output.per_output(...) (with client=, each "
            "output view's chunks run on the workers).")


def engine_text(game: Game) -> str:
    """What a run prints and records as its engine: ``"black_box"``, or ``"tree (xgboost, 500
    trees, depth 8)"`` for a tree game (the ensemble's library, trees and depth), followed by
    the game's route where it has one (the marginal game over (target, reference) pairs:
    ``"tree (...); marginal over 100 x 50 (target, reference) pairs"`` and why)."""
    ens = getattr(game, "ensemble", None)
    if game.engine != "tree" or ens is None:
        return game.engine
    route = getattr(game, "route", None)
    return _tree_text(ens) + ("" if route is None else f"; {route}")


def _tree_text(ens) -> str:
    lib = str(ens.source or "ensemble").split()[0].split(".")[0].lower()
    return f"tree ({lib}, {ens.n_trees} trees, depth {ens.max_depth()})"


def model_engine(f: Any, engine: str = "auto") -> str:
    """The engine the games of ``f`` take under a removal with a tree game (``baseline``,
    ``marginal``, ``path_dependent``), as :func:`engine_text` writes it (without a game's
    route):
    ``"tree (xgboost, 500 trees, depth 8)"`` or ``"black_box"``. What a run prints and records
    before it builds a game.

    Raises
    ------
    ValueError
        ``engine="tree"`` and f is not a tree ensemble insdel reads (the message names it).
    """
    from .removal.trees import is_ensemble

    engine = check_choice("engine", engine, ENGINES)
    if engine == "black_box":
        return "black_box"
    from .trees import UnsupportedModelError

    why = (f"a {type(f).__module__.split('.')[0]}.{type(f).__name__} is not a tree ensemble "
           "insdel reads")
    if is_ensemble(f):
        f = getattr(f, "estimator", None) if isinstance(f, Model) else f
        try:
            return _tree_text(trees_of(f))
        except UnsupportedModelError as err:
            why = str(err)
    if engine == "tree":
        raise ValueError(f"engine='tree': {why}; use engine='auto' or 'black_box'.")
    return "black_box"
