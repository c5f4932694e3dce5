"""One representation of a tree ensemble, whatever library trained it.

Every parser of :mod:`insdel.trees` (XGBoost, LightGBM, CatBoost, scikit-learn) writes a
:class:`TreeEnsemble`; every engine that reads trees (the tree game, ``tree_shap``) reads only
this. The prediction of the ensemble at a row z is

    f(z) = base + sum over trees t of value[leaf_t(z)]

where ``leaf_t(z)`` is reached from ``roots[t]`` by taking, at each internal node i, the left
child when :func:`goes_left` says so and the right child otherwise. Learning rates, averaging
over a forest's trees and each library's leaf scaling are folded into ``value`` by the parser,
so the sum above is the model's own prediction (checked against each library's ``predict``).

A node's decision depends on one feature's value only (:func:`goes_left`): that is what makes
the leaf patterns of the tree game (``E_l``, ``R_l``) well defined.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba as nb
import numpy as np

#: decision rules of a numeric split: ``z < threshold`` (XGBoost) or ``z <= threshold``
#: (scikit-learn, LightGBM, CatBoost) goes left
RULES = ("lt", "le")


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """Flattened nodes of all trees of one single-output regression ensemble.

    Attributes (N nodes over all trees, T trees)
    ----------
    feature : (N,) int64
        the split feature of an internal node; -1 marks a leaf.
    threshold : (N,) float64
        the numeric split's threshold (unused for leaves and categorical splits).
    left, right : (N,) int64
        absolute indices of the children (-1 for leaves).
    missing_left : (N,) bool
        where a NaN goes (the library's default direction).
    is_categorical : (N,) bool
        a categorical split: the value goes left iff it is one of the node's categories
        ``categories[cat_ptr[i]:cat_ptr[i + 1]]`` (category codes as floats).
    cat_ptr : (N + 1,) int64, categories : (C,) float64
        the ragged category sets of the categorical splits. A numeric split may hold two
        entries ``lo <= hi`` there: its *missing interval*, whose values take the missing
        direction as NaN does (LightGBM's ``zero_as_missing``: ``[-1e-35, 1e-35]``); most
        numeric splits hold none.
    value : (N,) float64
        a leaf's contribution to the prediction (learning rate, averaging folded in); 0 for
        internal nodes.
    cover : (N,) float64
        the training rows (or hessian sum) that reached the node, the weights of the trees'
        path-dependent removal; NaN where the library does not record it.
    roots : (T,) int64
        each tree's root node.
    base : float
        the constant added to the sum of the leaves (base score, initial prediction).
    rule : str
        one of :data:`RULES`, for every numeric split of the ensemble.
    n_features : int
        the width of the rows the model takes.
    feature_names : tuple of str or None
        the names the library recorded, checked against the data's by the caller.
    source : str
        the library and model class it was read from, for messages and the manifest.
    extra : dict
        what the reader recorded besides the nodes (objective, loss...). ``"category_codes"``:
        ``(lo, hi)``, the integer codes the library reads in a categorical split's column
        (LightGBM and XGBoost truncate a row's value to an integer, so another value would not
        go where :func:`goes_left` sends it): :func:`check_category_codes` refuses rows with
        other values there.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_left: np.ndarray
    is_categorical: np.ndarray
    cat_ptr: np.ndarray
    categories: np.ndarray
    value: np.ndarray
    cover: np.ndarray
    roots: np.ndarray
    base: float
    rule: str
    n_features: int
    feature_names: tuple[str, ...] | None = None
    source: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_ensemble(self)

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_trees(self) -> int:
        return int(self.roots.shape[0])

    @property
    def strict(self) -> bool:
        """Whether a numeric split sends ``z < threshold`` left (XGBoost's rule)."""
        return self.rule == "lt"

    def max_depth(self) -> int:
        """The longest root-to-leaf path over all trees (number of internal nodes on it)."""
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        best = 0
        stack = [int(r) for r in self.roots]
        while stack:
            i = stack.pop()
            if self.feature[i] < 0:
                best = max(best, int(depth[i]))
                continue
            for c in (self.left[i], self.right[i]):
                depth[c] = depth[i] + 1
                stack.append(int(c))
        return best

    def predict(self, Z: np.ndarray) -> np.ndarray:
        """The ensemble's prediction at each row of ``Z`` (B, n), float64 (numba); a value that
        is not a category code in a categorical split's column is refused
        (:func:`check_category_codes`)."""
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != self.n_features:
            raise ValueError(f"Z must be 2-D with {self.n_features} columns (the ensemble's "
                             f"features); got shape {Z.shape}")
        check_category_codes(self, "Z", Z)
        return _predict(Z, *self.arrays()) + self.base

    def walk_arrays(self) -> tuple:
        """The node arrays in the order the walks of :mod:`insdel.trees.patterns` take them:
        ``(*packed_nodes(self), threshold, missing_left, is_categorical, cat_ptr, categories,
        value, roots, strict)`` (the packed rows for the plain numeric nodes, the rest for
        :func:`goes_left` at the others; ``categories`` is None when every node is plain)."""
        nodes, thr = packed_nodes(self)
        general = bool((nodes[:, 3] & GENERAL).any())
        # categories None: no node needs goes_left, and numba prunes that branch from the walks
        # at compile time (its mere presence slows the walk of plain nodes several-fold)
        return (nodes, thr, self.threshold, self.missing_left, self.is_categorical,
                self.cat_ptr, self.categories if general else None, self.value, self.roots,
                self.strict)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The node arrays in the order numba kernels take them: feature, threshold, left,
        right, missing_left, is_categorical, cat_ptr, categories, value, roots, strict."""
        return (self.feature, self.threshold, self.left, self.right, self.missing_left,
                self.is_categorical, self.cat_ptr, self.categories, self.value, self.roots,
                self.strict)


def check_ensemble(ens: TreeEnsemble) -> None:
    """Check the shapes, dtypes and links of a :class:`TreeEnsemble` (a parser's bug, or a
    hand-built ensemble, named here instead of a crash inside a numba kernel)."""
    N = ens.feature.shape[0]
    want = {"feature": np.int64, "threshold": np.float64, "left": np.int64, "right": np.int64,
            "missing_left": np.bool_, "is_categorical": np.bool_, "value": np.float64,
            "cover": np.float64}
    for name, dtype in want.items():
        a = getattr(ens, name)
        if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != (N,):
            raise ValueError(f"TreeEnsemble.{name} must be a ({N},) {np.dtype(dtype)} array")
    if ens.cat_ptr.dtype != np.int64 or ens.cat_ptr.shape != (N + 1,):
        raise ValueError(f"TreeEnsemble.cat_ptr must be a ({N + 1},) int64 array")
    if ens.categories.dtype != np.float64 or ens.categories.ndim != 1 \
            or ens.cat_ptr[-1] != ens.categories.shape[0]:
        raise ValueError("TreeEnsemble.categories must be float64 with cat_ptr[-1] entries")
    if ens.roots.dtype != np.int64 or ens.roots.ndim != 1 or ens.roots.size == 0:
        raise ValueError("TreeEnsemble.roots must be a non-empty 1-D int64 array")
    if ens.rule not in RULES:
        raise ValueError(f"TreeEnsemble.rule must be one of {RULES}; got {ens.rule!r}")
    if ens.n_features < 1:
        raise ValueError("TreeEnsemble.n_features must be >= 1")
    inner = ens.feature >= 0
    if (ens.feature >= ens.n_features).any():
        raise ValueError("TreeEnsemble: a split feature is >= n_features")
    for name in ("left", "right"):
        c = getattr(ens, name)[inner]
        if ((c < 0) | (c >= N)).any():
            raise ValueError(f"TreeEnsemble.{name}: an internal node has no valid child")
    if (ens.is_categorical & ~inner).any():
        raise ValueError("TreeEnsemble: a leaf is marked as a categorical split")
    sizes = np.diff(ens.cat_ptr)
    if (sizes < 0).any() or (sizes[~inner] != 0).any():
        raise ValueError("TreeEnsemble.cat_ptr must not decrease, and a leaf holds no categories")
    numeric = inner & ~ens.is_categorical & (sizes != 0)
    lo = ens.categories[ens.cat_ptr[:-1][numeric]] if (sizes[numeric] == 2).all() else None
    if lo is None or not (lo <= ens.categories[ens.cat_ptr[:-1][numeric] + 1]).all():
        raise ValueError("TreeEnsemble: a numeric split's missing interval must be two entries "
                         "lo <= hi")
    if ens.feature_names is not None and len(ens.feature_names) != ens.n_features:
        raise ValueError("TreeEnsemble.feature_names must have n_features names")


@nb.njit(cache=True)
def goes_left(node, z, threshold, missing_left, is_categorical, cat_ptr, categories,
              strict):  # pragma: no cover - numba
    """Whether the value ``z`` of the node's feature takes the node's left branch.

    The one decision rule every kernel of :mod:`insdel.trees` uses: NaN follows the node's
    default direction; a categorical split sends its categories left; a numeric split sends a
    value of its missing interval (if it has one) the default direction too, and ``z < t``
    (``strict``) or ``z <= t`` left."""
    if np.isnan(z):
        return missing_left[node]
    if is_categorical[node]:
        for k in range(cat_ptr[node], cat_ptr[node + 1]):
            if categories[k] == z:
                return True
        return False
    k = cat_ptr[node]
    if cat_ptr[node + 1] > k and categories[k] <= z and z <= categories[k + 1]:
        return missing_left[node]
    if strict:
        return z < threshold[node]
    return z <= threshold[node]


def categorical_features(ens: TreeEnsemble) -> np.ndarray:
    """The features (sorted, int64) some categorical split of the ensemble reads."""
    return np.unique(ens.feature[ens.is_categorical]).astype(np.int64)


def check_category_codes(ens: TreeEnsemble, name: str, A) -> None:
    """Refuse a value of ``A`` (rows (B, n) or references (B, K, n), named ``name``) that is
    not a category code in a column the ensemble splits on as categorical.

    Where the reader recorded the codes its library reads (``ens.extra["category_codes"]``,
    ``(lo, hi)``), a categorical split's column must hold NaN (missing) or an integer in
    ``lo..hi``: LightGBM and XGBoost truncate a value such as 2.5 to the code 2 (and XGBoost
    rounds to float32, exact up to 2^24), while :func:`goes_left` compares it with the
    node's codes exactly, so the two would part silently. An ensemble without the record (built
    by hand, or read from a library whose categories are values, as scikit-learn's) is not
    checked.

    Raises
    ------
    ValueError
        Naming ``name``, the row (and reference), the feature, the value and the codes.
    """
    codes = ens.extra.get("category_codes")
    if codes is None or not ens.is_categorical.any():
        return
    lo, hi = codes
    cols = categorical_features(ens)
    V = np.asarray(A, dtype=np.float64)[..., cols]
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(V) & ((V != np.floor(V)) | (V < lo) | (V > hi))
    if not bad.any():
        return
    at = np.argwhere(bad)[0]
    j = int(cols[at[-1]])
    where = f"row {int(at[0])}" + (f", reference {int(at[1])}" if len(at) == 3 else "")
    label = "" if ens.feature_names is None else f" ({ens.feature_names[j]!r})"
    raise ValueError(f"{name}: {where}, feature {j}{label} is {float(V[tuple(at)])!r}, but "
                     f"the ensemble ({ens.source or 'trees'}) splits on feature {j} as "
                     f"categorical: its values must be integer category codes {lo}..{hi} or "
                     "NaN (missing); the library would read another value as a different "
                     "category than the trees' codes say.")


#: the flags of a packed node (:func:`packed_nodes`): NaN goes left; the node needs
#: :func:`goes_left` (a categorical split, a missing interval or an infinite threshold)
MISSING_LEFT, GENERAL = 1, 2


def packed_nodes(ens: TreeEnsemble) -> tuple[np.ndarray, np.ndarray]:
    """The nodes in the layout the walks read, one row per node: ``nodes`` (N, 4) int32
    ``[feature (-1: leaf), left, right, flags]`` (:data:`MISSING_LEFT`, :data:`GENERAL`) and
    ``thr`` (N,) float64, the threshold with the rule folded in: a plain numeric node sends a
    non-NaN z left iff ``z < thr`` (``thr = threshold`` for ``lt``; for ``le``, ``z <= t`` is
    ``z < nextafter(t, inf)`` for every z but +inf, so a node with an infinite threshold is
    GENERAL). Read by :func:`goes_left_packed`."""
    N = ens.n_nodes
    if N >= 2**31:
        raise ValueError(f"TreeEnsemble: {N:,} nodes do not fit the walks' int32 node rows")
    inner = ens.feature >= 0
    general = inner & (ens.is_categorical | (np.diff(ens.cat_ptr) != 0)
                       | ~np.isfinite(ens.threshold))
    nodes = np.empty((N, 4), dtype=np.int32)
    nodes[:, 0] = ens.feature
    nodes[:, 1] = ens.left
    nodes[:, 2] = ens.right
    nodes[:, 3] = np.where(ens.missing_left, MISSING_LEFT, 0) | np.where(general, GENERAL, 0)
    thr = ens.threshold if ens.strict else np.nextafter(ens.threshold, np.inf)
    return nodes, np.where(general, 0.0, thr)


@nb.njit(cache=True, nogil=True, inline="always")
def goes_left_packed(node, z, nodes, thr, threshold, missing_left, is_categorical, cat_ptr,
                     categories, strict):  # pragma: no cover - numba
    """:func:`goes_left` on the packed rows of :func:`packed_nodes`: a plain numeric node
    compares z with its folded threshold; a GENERAL node asks :func:`goes_left` (never when
    ``categories`` is None: :meth:`TreeEnsemble.walk_arrays` passes None when no node is
    GENERAL)."""
    fl = nodes[node, 3]
    if categories is not None and fl & GENERAL:
        return goes_left(node, z, threshold, missing_left, is_categorical, cat_ptr, categories,
                         strict)
    if np.isnan(z):
        return (fl & MISSING_LEFT) != 0
    return z < thr[node]


@nb.njit(cache=True)
def _predict(Z, feature, threshold, left, right, missing_left, is_categorical, cat_ptr,
             categories, value, roots, strict):  # pragma: no cover - numba
    out = np.zeros(Z.shape[0])
    for b in range(Z.shape[0]):
        s = 0.0
        for t in range(roots.shape[0]):
            i = roots[t]
            while feature[i] >= 0:
                if goes_left(i, Z[b, feature[i]], threshold, missing_left, is_categorical,
                             cat_ptr, categories, strict):
                    i = left[i]
                else:
                    i = right[i]
            s += value[i]
        out[b] = s
    return out
