"""insdel's interaction values to and from shapiq's ``InteractionValues`` (shapiq imported
lazily: ``pip install ".[interactions]"`` in the insdel clone), and an insdel game as a shapiq ``Game``.

Score shapiq's approximators (KernelSHAP-IQ, SVARM-IQ, permutation sampling, ...) against
insdel's exact values, or draw insdel's values with shapiq's plots. Conventions
(docs/interactions.md, *shapiq*):

* index names are shapiq's (``Moebius``, ``SII``, ``k-SII``, ``STII``, ``FSII``, ``FBII``, ``BII``,
  ``SV``, ``BV``); shapiq itself renames an order-1 ``SII`` / ``BII`` to ``SV`` / ``BV``, and so
  does :func:`to_shapiq` (the values are the same; ``SV``'s empty set is v(∅));
* players are the units 0..m-1; only the subsets inside the pair's D are stored (shapiq returns
  0 for an absent interaction, which is the exact value of every other subset);
* ``baseline_value`` is v(∅); standard errors have no place in ``InteractionValues`` and are
  dropped; ``estimated`` is True for a sampled result.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .indices import INDICES, check_index
from .result import InteractionResult

__all__ = ["to_shapiq", "from_shapiq", "shapiq_game", "shapiq_trees", "require_shapiq"]


def require_shapiq():
    """The shapiq module, or an ImportError naming the extra."""
    try:
        import shapiq
    except ImportError as err:  # pragma: no cover - shapiq is a test dependency
        raise ImportError('shapiq is needed for this: pip install ".[interactions]" in the '
                          'insdel clone (or pip install "shapiq>=1.4").') from err
    return shapiq


def _shapiq_index(name: str, order: int) -> str:
    if order == 1 and name == "SII":
        return "SV"
    if order == 1 and name == "BII":
        return "BV"
    return INDICES[name].shapiq


def to_shapiq(result: InteractionResult, pair: int = 0):
    """Pair ``pair`` of ``result`` as a ``shapiq.InteractionValues`` (players = the units)."""
    shapiq = require_shapiq()
    b = result._pair(pair)
    values = result.to_dict(b)
    index = _shapiq_index(result.index, result.order)
    if index == "SV":  # shapiq's SV holds v(∅) at the empty set
        values[()] = float(result.v_empty[b])
    lookup = {S: i for i, S in enumerate(values)}
    iv = shapiq.InteractionValues(
        np.array(list(values.values()), dtype=np.float64), index=index,
        max_order=result.order, min_order=0, n_players=result.m, interaction_lookup=lookup,
        estimated=not result.exact, estimation_budget=result.n_evals or None,
        baseline_value=float(result.v_empty[b]))
    iv.interactions = dict(values)  # exactly ours: shapiq's constructor rewrites the empty set
    iv.baseline_value = float(result.v_empty[b])
    return iv


def from_shapiq(iv, *, units: Sequence[str] | None = None, v_all: float | None = None,
                removal: str = "baseline") -> InteractionResult:
    """A one-pair :class:`InteractionResult` from a ``shapiq.InteractionValues``.

    D is the players that appear in a stored interaction (all of them for shapiq's exact
    computer); ``v_empty`` is ``iv.baseline_value``; ``v_all`` is taken as given, or, for an
    efficient index (k-SII, STII, FSII, SV), ``baseline + sum`` of the nonempty values, else NaN.
    """
    spec = check_index(str(iv.index))
    n, k = int(iv.n_players), int(iv.max_order)
    items = {tuple(sorted(int(j) for j in S)): float(v) for S, v in iv.interactions.items()}
    if any(len(S) > k for S in items):
        raise ValueError(f"from_shapiq: an interaction is larger than max_order = {k}.")
    items.setdefault((), float(iv.baseline_value))
    keys = sorted(items, key=lambda S: (len(S), S[::-1]))
    D = np.array(sorted({j for S in keys for j in S}), dtype=np.int64)
    members = np.full((len(keys), k), -1, dtype=np.int64)
    for e, S in enumerate(keys):
        members[e, :len(S)] = S
    base = float(iv.baseline_value)
    if v_all is None:
        v_all = (base + sum(v for S, v in items.items() if S)) if spec.efficient else np.nan
    return InteractionResult(
        index=spec.name, order=k, units=units or [f"x{j}" for j in range(n)],
        dsz=np.array([D.size]), Dflat=D, doff=np.array([0, D.size]),
        eoff=np.array([0, len(keys)]), members=members,
        sizes=np.array([len(S) for S in keys]), values=np.array([items[S] for S in keys]),
        v_empty=np.array([base]), v_all=np.array([float(v_all)]),
        exact=not bool(getattr(iv, "estimated", False)),
        method="exact" if not getattr(iv, "estimated", False) else "shapiq",
        removal=removal)


def shapiq_game(f, x, R=None, *, removal=None, groups=None, pair: int = 0):
    """The value function of one pair as a ``shapiq.Game`` (not normalised: v(∅) is the
    removal's value of the empty coalition), players = the units: shapiq's exact computer and
    approximators then run on exactly insdel's game.

    ``f, x, R, removal, groups`` as :func:`insdel.game.as_game` takes them (``x`` may be the
    targets (B, n) with ``pair`` choosing one, or a game)."""
    shapiq = require_shapiq()
    from ..game import as_game

    game = as_game(f, x, R, removal=removal, groups=groups)
    b = int(pair)

    class _InsdelGame(shapiq.Game):
        def value_function(self, coalitions: np.ndarray) -> np.ndarray:
            keep = np.asarray(coalitions, dtype=bool)
            return game.values(np.full(keep.shape[0], b, dtype=np.int64), keep)

    return _InsdelGame(n_players=game.m, normalize=False,
                       player_names=list(game.unit_names) if game.unit_names else None)


def shapiq_trees(ensemble, r: np.ndarray, *, eps: float = 1e-12) -> list:
    """A tree ensemble as shapiq ``TreeModel`` s whose covers follow the reference ``r``: at
    every split the child ``r`` goes to holds a fraction ``1 - eps`` of its parent's cover, the
    other ``eps``. shapiq's path-dependent ``TreeExplainer`` (TreeSHAP-IQ) then computes, up to
    O(eps), the indices of the baseline game ``v(u) = f(x_u : r_-u)`` (a removed feature follows
    r at every node), the game of :func:`insdel.trees.tree_game` with the reference ``r``.

    ``ensemble`` is an :class:`insdel.trees.TreeEnsemble` with numeric splits only (a categorical
    split is an error); XGBoost's rule ``z < t`` becomes shapiq's ``z <= t'`` with t' the float
    below t. The ensemble's base and its single-leaf trees are not carried (no index of a
    non-empty subset depends on a constant). Each tree's ``feature_ids`` are given sorted: shapiq
    maps its internal feature ids back in sorted order, and its default (a set of the ids,
    iterated in hash order) mislabels features above the set's table size.
    """
    from shapiq.explainer.tree.base import TreeModel

    require_shapiq()
    if ensemble.is_categorical.any():
        raise ValueError("shapiq_trees: the ensemble has categorical splits; shapiq's tree "
                         "models take numeric splits only.")
    r = np.asarray(r, dtype=np.float64)
    out = []
    for root in ensemble.roots.tolist():
        nodes, pos = [root], {root: 0}
        for i in nodes:  # breadth first: a parent before its children
            if ensemble.feature[i] >= 0:
                for c in (int(ensemble.left[i]), int(ensemble.right[i])):
                    pos[c] = len(nodes)
                    nodes.append(c)
        if len(nodes) == 1:  # a leaf alone adds a constant: no index of a non-empty subset
            continue
        idx = np.asarray(nodes, dtype=np.int64)
        feat = ensemble.feature[idx]
        leaf = feat < 0
        thr = ensemble.threshold[idx].astype(np.float64)
        if ensemble.strict:
            thr = np.nextafter(thr, -np.inf)
        left = np.array([pos.get(int(c), -1) if not lf else -1
                         for c, lf in zip(ensemble.left[idx], leaf, strict=True)])
        right = np.array([pos.get(int(c), -1) if not lf else -1
                          for c, lf in zip(ensemble.right[idx], leaf, strict=True)])
        w = np.zeros(idx.size)
        w[0] = 1.0
        for j in range(idx.size):
            if leaf[j]:
                continue
            go_left = r[feat[j]] <= thr[j] if not np.isnan(r[feat[j]]) \
                else bool(ensemble.missing_left[idx[j]])
            w[left[j]] = w[j] * ((1.0 - eps) if go_left else eps)
            w[right[j]] = w[j] * (eps if go_left else (1.0 - eps))
        out.append(TreeModel(children_left=left, children_right=right,
                             features=np.where(leaf, -2, feat), thresholds=np.where(leaf, np.nan, thr),
                             values=np.where(leaf, ensemble.value[idx], 0.0),
                             node_sample_weight=w,
                             feature_ids=sorted(int(j) for j in np.unique(feat[~leaf]))))
    return out
