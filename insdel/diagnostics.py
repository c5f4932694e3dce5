"""Diagnostics of a policy's pairs and their evaluation (paper Table 4): the mean number of
features with x_j != r_j and, per attribution method, the correlation between insertion and
deletion ABCs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .groups import check_groups
from .policies.base import Pairing

__all__ = ["abc_correlation", "diagnostics"]



def abc_correlation(evaluation, methods: Sequence[str] | None = None) -> pd.Series:
    """Pearson correlation over pairs between insertion and deletion ABCs, per method (Table 4).

    ``evaluation`` is an :class:`insdel.evaluation.Evaluation` (or its long ``abc`` DataFrame with
    columns pair, method, mode, abc) holding both modes. NaN where fewer than 2 pairs or a constant
    column.
    """
    # a long DataFrame has an "abc" column, so ``.abc`` would be that column, not the frame
    df = evaluation if isinstance(evaluation, pd.DataFrame) else evaluation.abc
    modes = set(df["mode"])
    if not {"insertion", "deletion"} <= modes:
        raise ValueError(f"the correlation needs both insertion and deletion ABCs; got modes {sorted(modes)}.")
    all_methods = list(dict.fromkeys(df["method"]))
    methods = all_methods if methods is None else list(methods)
    for m in methods:
        if m not in all_methods:
            raise ValueError(f"unknown method {m!r}; evaluated: {all_methods}.")
    dup = df.duplicated(["pair", "mode", "method"])
    if dup.any():  # pivot_table would average them silently (e.g. two evaluations concatenated)
        r = df[dup].iloc[0]
        raise ValueError(f"the ABCs hold {int(dup.sum())} repeated (pair, mode, method) row(s), "
                         f"e.g. pair {r['pair']!r}, {r['mode']}, {r['method']!r}; give one "
                         "evaluation's ABCs (one row per pair, mode and method).")
    w = df.pivot_table(index="pair", columns=["mode", "method"], values="abc", dropna=False)
    out = {}
    for m in methods:
        a = w[("insertion", m)].to_numpy()
        b = w[("deletion", m)].to_numpy()
        ok = np.isfinite(a) & np.isfinite(b)
        a, b = a[ok] - a[ok].mean(), b[ok] - b[ok].mean()
        den = np.sqrt((a * a).sum() * (b * b).sum())
        out[m] = float((a * b).sum() / den) if a.size > 1 and den > 0 else float("nan")
    return pd.Series(out, name="abc_correlation", dtype=float)


def diagnostics(pairings, evaluations=None, *, methods: Sequence[str] | None = None,
                tol: float | None = None, groups=None) -> pd.DataFrame:
    """Per-policy diagnostics of paper Table 4.

    Parameters
    ----------
    pairings : Pairing, mapping label -> Pairing, or sequence of Pairing
        One pairing per policy (labels default to the spec or policy name).
    evaluations : Evaluation, mapping label -> Evaluation, sequence, or None
        The evaluations of those pairings (same labels / order); adds one ``corr_<method>`` column
        per method with the correlation between insertion and deletion ABCs.
    methods : list of str, optional
        Methods whose correlation to report (default: all evaluated ones).
    tol : float, optional
        Tolerance for "x_j != r_j" (default: each policy's ``tol``, else exact).
    groups : optional
        Feature groups (anything :func:`insdel.groups.check_groups` takes): adds the columns
        ``units`` (number of groups) and ``mean_n_diff_units`` (mean number of groups with a
        differing column: the units the curves move).

    Returns
    -------
    pandas.DataFrame
        Index ``policy``; columns ``pairs``, ``features``, ``mean_n_diff``, with groups ``units``
        and ``mean_n_diff_units``, and ``corr_<method>``.
    """
    P = _labelled(pairings, Pairing, "pairings")
    E = None if evaluations is None else _labelled(evaluations, None, "evaluations",
                                                   labels=list(P))
    rows = []
    for label, p in P.items():
        row: dict[str, Any] = {"policy": label, "pairs": len(p), "features": p.n_features,
                               "mean_n_diff": p.mean_diff(tol)}
        grp = check_groups(groups, p.n_features)
        if grp is not None:
            row["units"] = grp.m
            row["mean_n_diff_units"] = p.mean_diff(tol, groups=grp)
        if E is not None:
            if label not in E:
                raise ValueError(f"no evaluation for policy {label!r}; evaluations: {list(E)}.")
            ev = E[label]
            n_ev = getattr(ev, "n_pairs", None)
            if n_ev is not None and n_ev != len(p):
                raise ValueError(f"policy {label!r}: the evaluation has {n_ev} pairs but the pairing "
                                 f"has {len(p)}.")
            for m, v in abc_correlation(ev, methods).items():
                row[f"corr_{m}"] = v
        rows.append(row)
    return pd.DataFrame(rows).set_index("policy")


def _labelled(obj, cls, what, labels=None) -> dict:
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, (list, tuple)):
        if labels is not None:
            if len(obj) != len(labels):
                raise ValueError(f"{what}: got {len(obj)} items for {len(labels)} pairings.")
            return dict(zip(labels, obj, strict=True))
        out = {}
        for p in obj:
            lab = p.label
            if lab in out:
                raise ValueError(f"{what}: two pairings are labelled {lab!r}; pass a dict.")
            out[lab] = p
        return out
    if labels is not None:
        return {labels[0]: obj} if len(labels) == 1 else _labelled([obj], cls, what, labels)
    if cls is not None and not isinstance(obj, cls):
        raise TypeError(f"{what} must be a Pairing, a dict of them or a list of them.")
    return {obj.label: obj}


