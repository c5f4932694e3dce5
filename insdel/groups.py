"""Feature groups and curve positions: several columns moved as one unit, several units per step.

A *grouping* is a partition of the n columns into m groups (conventions: *Groups and steps*). A group
moves as one unit in insertion and deletion: every curve point takes whole groups from x. With
singleton groups (the default, ``groups=None``) everything reduces to the paper's one feature per
step. Groups are given as

* an integer label per column, shape (n,) (labels are any integers; group g is the g-th smallest
  label), or
* a list of index lists (group g holds the columns of ``groups[g]``), or
* a mapping ``name -> index list`` (the names become the group names), or
* a :class:`Groups` object.

A list or mapping may leave columns out: each column in no listed group stays a unit of its own
(a singleton group named after the column), after the listed groups. A column listed twice is an
error.

*Positions* are the numbers of groups moved at the curve's points, ``0 <= t_0 < t_1 < ... <= m``:
``step=k`` gives ``0, k, 2k, ..., m`` (m appended when k does not divide it), ``fractions=`` gives
``round(q * m)`` for each fraction q, and ``max_fraction=`` stops a curve early (a partial curve).
Areas on such curves use the trapezoid on the actual positions (:mod:`insdel.areas`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._validation import check_positive_int, check_scalar, repeated

__all__ = ["Groups", "check_groups", "group_attributions", "positions", "full_positions"]


@dataclass(frozen=True, eq=False)
class Groups:
    """A validated partition of n columns into m groups.

    Attributes
    ----------
    labels : ndarray of int64 (n,)
        Group of each column, 0 .. m - 1.
    starts : ndarray of int64 (m + 1,)
        Group g's columns are ``members[starts[g]:starts[g + 1]]``.
    members : ndarray of int64 (n,)
        Columns sorted by group, then by column index.
    names : list of str
        One name per group.
    """

    labels: np.ndarray
    starts: np.ndarray
    members: np.ndarray
    names: list

    @property
    def n(self) -> int:
        """Number of columns."""
        return int(self.labels.shape[0])

    @property
    def m(self) -> int:
        """Number of groups."""
        return int(self.starts.shape[0] - 1)

    @property
    def sizes(self) -> np.ndarray:
        """Columns per group, shape (m,)."""
        return np.diff(self.starts)

    @property
    def singleton(self) -> bool:
        """True when every group is one column and group g is column g (today's features)."""
        return self.m == self.n and bool(np.array_equal(self.labels, np.arange(self.n)))

    def columns(self, g: int) -> np.ndarray:
        """The columns of group g."""
        return self.members[self.starts[g]:self.starts[g + 1]]

    def reduce_any(self, mask: np.ndarray) -> np.ndarray:
        """Group-level "any": ``out[..., g] = mask[..., columns(g)].any()`` (e.g. which groups differ)."""
        mask = np.asarray(mask, dtype=bool)
        return np.logical_or.reduceat(mask[..., self.members], self.starts[:-1], axis=-1)

    def expand(self, mask: np.ndarray) -> np.ndarray:
        """Column-level mask from a group-level one: ``out[..., j] = mask[..., labels[j]]``."""
        return np.asarray(mask)[..., self.labels]

    def to_json(self) -> dict:
        return {"labels": self.labels.tolist(), "names": list(self.names)}

    def __eq__(self, other) -> bool:
        return (isinstance(other, Groups) and np.array_equal(self.labels, other.labels)
                and list(self.names) == list(other.names))

    def __repr__(self) -> str:
        return f"Groups(n={self.n}, m={self.m}, largest={int(self.sizes.max())})"

    @classmethod
    def from_labels(cls, labels: ArrayLike, names: Sequence[str] | None = None) -> Groups:
        """Groups from an integer label per column (see :func:`check_groups`)."""
        lab = np.asarray(labels)
        if lab.ndim != 1:
            raise ValueError(f"labels must be 1-D (one label per column); got shape {lab.shape}.")
        g = check_groups(lab, lab.shape[0], name="labels")
        if names is None:
            return g
        names = _check_names(names, g.m)
        return cls(labels=g.labels, starts=g.starts, members=g.members, names=names)

    @classmethod
    def singletons(cls, n: int, names: Sequence[str] | None = None) -> Groups:
        """One group per column (today's features)."""
        n = check_positive_int(n, "n")
        ar = np.arange(n, dtype=np.int64)
        return cls(labels=ar, starts=np.arange(n + 1, dtype=np.int64), members=ar.copy(),
                   names=_check_names(names, n) if names is not None
                   else [f"x{j}" for j in range(n)])


def _check_names(names: Sequence, m: int) -> list:
    """One distinct name per group."""
    names = [str(v) for v in names]
    if len(names) != m:
        raise ValueError(f"names: {len(names)} names for {m} groups.")
    dup = repeated(names)
    if dup:
        raise ValueError(f"names: group names must be distinct; {dup} repeated.")
    return names


def _from_lists(lists: Sequence, n: int, names: list,
                feature_names: Sequence[str] | None = None) -> Groups:
    owner = np.full(n, -1, dtype=np.int64)
    for g, cols in enumerate(lists):
        c = np.asarray(cols)
        if c.ndim != 1 or c.size == 0:
            raise ValueError(f"groups: group {names[g]!r} must be a non-empty list of column "
                             f"indices; got {cols!r}.")
        if c.dtype == bool or not np.issubdtype(c.dtype, np.integer):
            raise TypeError(f"groups: group {names[g]!r} must hold integer column indices; "
                            f"got dtype {c.dtype}.")
        bad = (c < 0) | (c >= n)
        if bad.any():
            raise ValueError(f"groups: group {names[g]!r} names column {int(c[bad][0])}, out of "
                             f"range for n = {n} columns.")
        u, cnt = np.unique(c, return_counts=True)
        if (cnt > 1).any():
            raise ValueError(f"groups: column {int(u[cnt > 1][0])} is listed twice in group "
                             f"{names[g]!r}.")
        taken = owner[c] >= 0
        if taken.any():
            j = int(c[taken][0])
            raise ValueError(f"groups: column {j} is in two groups ({names[owner[j]]!r} and "
                             f"{names[g]!r}); groups must be a partition of the columns.")
        owner[c] = g
    # columns in no listed group stay units of their own (singletons), after the listed groups,
    # in column order, named after the column
    rest = np.flatnonzero(owner < 0)
    if rest.size:
        owner[rest] = len(names) + np.arange(rest.size)
        names = list(names) + [feature_names[j] if feature_names is not None else f"x{j}"
                               for j in rest.tolist()]
        dup = repeated(names)
        if dup:
            raise ValueError(f"groups: group name(s) {dup} clash with the names of the columns "
                             "in no group (each such column is a group of its own, named after "
                             "it); rename the group(s).")
    return _from_owner(owner, names)


def _from_owner(owner: np.ndarray, names: list) -> Groups:
    members = np.argsort(owner, kind="stable").astype(np.int64)
    m = len(names)
    starts = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=m), out=starts[1:])
    return Groups(labels=owner.astype(np.int64), starts=starts, members=members, names=list(names))


def check_groups(groups, n: int, *, name: str = "groups",
                 feature_names: Sequence[str] | None = None) -> Groups | None:
    """Validate a grouping of n columns; ``None`` (one feature per unit) is returned as None.

    A list of index lists or a mapping need not name every column: a column in no listed group
    is a group of its own (a singleton, named after the column), placed after the listed groups
    in column order. A column listed twice (in one group or in two) is an error.

    Parameters
    ----------
    groups : None, Groups, array of int (n,), list of index lists, or mapping name -> index list
        See the module docstring.
    n : int
        Number of columns.
    name : str
        Argument name used in errors.
    feature_names : sequence of str, optional
        Column names, for the singleton groups of columns in no listed group (default ``x<j>``).

    Returns
    -------
    Groups or None

    Raises
    ------
    ValueError
        A column in two groups, an index out of range, a label vector of the wrong length, an
        empty group, a group name equal to the name of a column left as a singleton.
    """
    if groups is None:
        return None
    if isinstance(groups, Groups):
        if groups.n != n:
            raise ValueError(f"{name} covers {groups.n} columns but the data have n = {n}.")
        return groups
    if isinstance(groups, Mapping):
        names = [str(k) for k in groups]
        if not names:
            raise ValueError(f"{name} is empty.")
        return _from_lists(list(groups.values()), n, names, feature_names)
    if isinstance(groups, np.ndarray) and groups.ndim == 1 and groups.dtype != object:
        lab = groups
        if lab.dtype == bool or not np.issubdtype(lab.dtype, np.integer):
            raise TypeError(f"{name}: a label vector must hold integers; got dtype {lab.dtype}.")
        if lab.shape[0] != n:
            raise ValueError(f"{name}: a label vector needs one label per column (n = {n}); got "
                             f"{lab.shape[0]}.")
        uniq, owner = np.unique(lab, return_inverse=True)
        return _from_owner(owner.astype(np.int64), [f"g{int(u)}" for u in uniq])
    if isinstance(groups, Sequence) and not isinstance(groups, str):
        items = list(groups)
        if not items:
            raise ValueError(f"{name} is empty.")
        if all(np.ndim(c) == 0 for c in items):  # a plain list of labels
            return check_groups(np.asarray(items), n, name=name)
        return _from_lists(items, n, [f"g{g}" for g in range(len(items))],
                           feature_names)
    raise TypeError(f"{name} must be None, a label vector (n,), a list of index lists or a mapping "
                    f"name -> index list; got {type(groups).__name__}.")


def group_attributions(A: np.ndarray, groups: Groups | None, *, name: str = "A") -> np.ndarray:
    """Attributions per group: the sum of the group's columns (last axis n), or as given (last
    axis m). With m == n the columns reading is used (the two agree for singleton groups).

    Parameters
    ----------
    A : ndarray (..., n) or (..., m)
    groups : Groups or None
    name : str
        Argument name used in errors.

    Returns
    -------
    ndarray (..., m) of float64
    """
    A = np.asarray(A, dtype=np.float64)
    if groups is None:
        return A
    if A.shape[-1] == groups.n:
        if groups.singleton:
            return A
        return np.add.reduceat(A[..., groups.members], groups.starts[:-1], axis=-1)
    if A.shape[-1] == groups.m:
        return A
    raise ValueError(f"{name} must have last dimension n = {groups.n} (per column) or m = "
                     f"{groups.m} (per group); got shape {A.shape}.")


def full_positions(m: int) -> np.ndarray:
    """``0, 1, ..., m``: one unit per step, the whole curve (the paper's curves)."""
    return np.arange(m + 1, dtype=np.int64)


def positions(m: int, *, step: int | None = None, fractions: ArrayLike | None = None,
              max_fraction: float | None = None) -> np.ndarray:
    """Numbers of units (groups) moved at each curve point.

    Parameters
    ----------
    m : int
        Number of units (groups, or features without groups).
    step : int, optional
        Units moved per step: points at ``0, k, 2k, ...`` and at the end (m, or the partial end).
    fractions : array_like of float, optional
        Points at these fractions of the m units (``round(q * m)``, halves up), strictly
        increasing in [0, 1] and still strictly increasing after rounding (Quantus' and RISE's
        protocols). Not combined with ``step`` or ``max_fraction``.
    max_fraction : float, optional
        A partial curve: stop after ``floor(max_fraction * m)`` units (at least one), in (0, 1].

    Returns
    -------
    ndarray of int64 (S,)
        Strictly increasing; ``full_positions(m)`` when nothing is given.

    Raises
    ------
    ValueError
        Bad values, and positions that would be only the two end points 0 and m (``step >= m``
        for m > 1, or ``fractions`` giving 0 and m alone): such a curve is f(r), f(x) for every
        ordering, and its ABC is 0 by definition.
    """
    m = check_positive_int(m, "m")
    if fractions is not None:
        if step is not None or max_fraction is not None:
            raise ValueError("give fractions= alone (it fixes every point), not with step= or "
                             "max_fraction=.")
        q = np.asarray(fractions, dtype=np.float64)
        if q.ndim != 1 or q.size < 2:
            raise ValueError(f"fractions must be a 1-D sequence of at least 2 values; got {q!r}.")
        if not np.all(np.isfinite(q)) or (q < 0).any() or (q > 1).any():
            raise ValueError(f"fractions must lie in [0, 1]; got {q.tolist()}.")
        if (np.diff(q) <= 0).any():
            i = int(np.flatnonzero(np.diff(q) <= 0)[0])
            raise ValueError(f"fractions must be strictly increasing; fractions[{i}] = {q[i]} and "
                             f"fractions[{i + 1}] = {q[i + 1]}.")
        # halves up on the decimal value the user wrote: q * m of a float q such as 0.58 can fall
        # just below the half (0.58 * 25 = 14.4999...), which must still round to 15
        t = np.floor(q * m + 0.5 + 1e-9).astype(np.int64)
        if (np.diff(t) <= 0).any():
            i = int(np.flatnonzero(np.diff(t) <= 0)[0])
            raise ValueError(f"fractions[{i}] = {q[i]} and fractions[{i + 1}] = {q[i + 1]} both "
                             f"round to {int(t[i])} of the m = {m} units; use fewer fractions.")
        if t.size == 2 and t[0] == 0 and t[1] == m and m > 1:
            raise ValueError(f"fractions {q.tolist()} give only the curve's two end points (0 and "
                             f"m = {m} units moved), f(r) and f(x), the same for every ordering: "
                             f"every ABC would be 0; add fractions in between.")
        return t
    end = m
    if max_fraction is not None:
        q = check_scalar(max_fraction, "max_fraction", float, min_val=0.0, max_val=1.0,
                         include_boundaries="right")
        end = max(1, int(np.floor(q * m + 1e-9)))
    if step is None:
        k = 1
    else:
        k = check_positive_int(step, "step")  # units moved per step
        if k > 1 and k >= m:
            # positions 0 and m only: both end points are shared by every ordering
            raise ValueError(f"step={k} is not smaller than the number of units m = {m} "
                             f"(features, or groups when groups are given): the curve would "
                             f"hold only its two end points, f(r) and f(x), the same for every "
                             f"ordering, so every method's ABC (random included) would be 0; "
                             f"use 1 <= step < {m}.")
    t = np.arange(0, end + 1, k, dtype=np.int64)
    if t[-1] != end:
        t = np.append(t, end)
    return t


def is_full(pos: np.ndarray, m: int) -> bool:
    """Whether positions are ``0, 1, ..., m`` (the paper's whole one-per-step curve)."""
    return pos.shape[0] == m + 1 and bool(pos[0] == 0) and bool(pos[-1] == m) and bool(
        (np.diff(pos) == 1).all())


def check_positions(pos: ArrayLike, m: int, *, name: str = "positions") -> np.ndarray:
    """Validate explicit positions: integers, strictly increasing, within [0, m], at least 2."""
    p = np.asarray(pos)
    if p.ndim != 1 or p.size < 2:
        raise ValueError(f"{name} must be a 1-D array of at least 2 positions; got shape {p.shape}.")
    if p.dtype == bool or not np.issubdtype(p.dtype, np.integer):
        raise TypeError(f"{name} must hold integers (units moved); got dtype {p.dtype}.")
    if (p < 0).any() or (p > m).any():
        raise ValueError(f"{name} must lie in [0, m] = [0, {m}]; got {p.tolist()}.")
    if (np.diff(p) <= 0).any():
        raise ValueError(f"{name} must be strictly increasing; got {p.tolist()}.")
    return np.ascontiguousarray(p, dtype=np.int64)
