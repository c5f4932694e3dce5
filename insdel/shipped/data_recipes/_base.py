"""Shared pieces of the data recipes: the raw-data record and a strict CSV reader.

A recipe turns a public file (or a simulator) into a :class:`RawData`: features in their raw units,
the raw target, which features are binary (with their two levels) and which are standardised.
:func:`insdel.datasets.load` then splits, scales and wraps it in a ``Dataset``.

The CSV reader fails early with messages that name the file, the column and the row, so that a
user's copy of a public file that was edited, truncated or exported with other column names is
caught before a model is trained on it.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from insdel.datasets import sha256_file  # noqa: F401  (re-exported for the recipes)

_MISSING_STRINGS = ("", "na", "nan", "n/a", "null", "none", "?")
_MAX_LISTED = 5


@dataclass
class RawData:
    """What a recipe returns: model-ready columns in raw units, before splitting and scaling.

    Attributes
    ----------
    features : pandas.DataFrame
        One float column per feature, in raw units, no missing values.
    target : numpy.ndarray
        Raw target values (before division by ``target_scale``).
    target_name : str
        Name of the target column.
    binary_levels : dict
        Binary feature name -> its two raw levels ``(lo, hi)``.
    standardize : list of str
        Features that are centred and divided by their standard deviation (fitted on the training
        split).
    target_scale : float or None
        The model's target is ``target / target_scale`` (Bangalore: 10^7 INR).
    description : str
        Human-readable provenance and preprocessing.
    info : dict
        Counts (rows read, rows dropped and why), source file and its SHA-256, simulator options.
    test_mask : numpy.ndarray of bool, optional
        The recipe's own train/test split (True = test row); default: insdel's seeded 80/20 split.
    groups : dict, optional
        Feature groups moved as one unit in insertion/deletion (issue #16): group name -> its
        feature names (e.g. ``{"Location": ["Location=A", "Location=B", ...]}``, a one-hot
        block). Features in no group are groups of their own; None (default): every feature is
        its own unit, as in the paper.
    label : str, optional
        The data set's display name in titles, tables and leaderboards (the ``table`` recipe:
        the file's name, e.g. ``"diabetes.csv"``); default the recipe's name.
    """

    features: pd.DataFrame
    target: np.ndarray
    target_name: str
    binary_levels: dict[str, tuple[float, float]]
    standardize: list[str]
    target_scale: float | None = None
    description: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    test_mask: np.ndarray | None = None
    groups: dict[str, list[str]] | None = None
    label: str | None = None


def _row_list(rows: Sequence[int]) -> str:
    shown = ", ".join(f"{int(r) + 1} (line {int(r) + 2})" for r in rows[:_MAX_LISTED])
    more = f" and {len(rows) - _MAX_LISTED} more" if len(rows) > _MAX_LISTED else ""
    return shown + more


def check_path(path, *, recipe: str, source: str) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path`; raise if it is missing or not a file."""
    if path is None:
        raise ValueError(
            f"recipe {recipe!r} needs path= (your copy of {source}); the file is not shipped with "
            f"insdel. For data that needs no download use the simulators "
            f"('dielectron_sim', 'housing_sim')."
        )
    p = Path(os.fspath(path)).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"recipe {recipe!r}: path={str(path)!r} does not exist.")
    if not p.is_file():
        raise ValueError(f"recipe {recipe!r}: path={str(path)!r} is not a file.")
    return p


def read_csv(path: str | os.PathLike, *, recipe: str, source: str, required: Sequence[str],
             numeric: Iterable[str] | None = None) -> pd.DataFrame:
    """Read a CSV strictly: header names stripped, required columns present, numbers parsed.

    Parameters
    ----------
    path : path-like
        The user's copy of the public file.
    recipe : str
        Recipe name (for the messages).
    source : str
        What the file is (for the messages), e.g. ``"Kaggle's Bangalore.csv"``.
    required : sequence of str
        Column names that must be present (after stripping blanks from the header).
    numeric : iterable of str, optional
        Columns parsed as numbers (default: ``required``). Empty cells and ``NA``-like strings are
        missing (NaN); any other text is an error naming the column and the row.

    Returns
    -------
    pandas.DataFrame
        All columns of the file; the ``numeric`` ones as float64.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Empty file, no data rows, missing or renamed columns, duplicated columns, non-numeric cells.
    """
    p = check_path(path, recipe=recipe, source=source)
    if p.stat().st_size == 0 or not p.read_bytes()[:65536].strip():
        raise ValueError(f"recipe {recipe!r}: {p} is empty (expected {source}).")
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False, skipinitialspace=False)
    except pd.errors.EmptyDataError:
        raise ValueError(f"recipe {recipe!r}: {p} is empty (expected {source}).") from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"recipe {recipe!r}: {p} is not a readable CSV file ({exc}).") from None
    stripped = [str(c).strip() for c in df.columns]
    dup = sorted({c for c in stripped if stripped.count(c) > 1})
    if dup:
        raise ValueError(f"recipe {recipe!r}: {p} has duplicated column(s) {dup}.")
    df.columns = stripped
    missing = [c for c in required if c not in df.columns]
    if missing:
        extra = [c for c in df.columns if c not in required]
        hints = []
        for c in missing:
            close = difflib.get_close_matches(c, extra, n=1, cutoff=0.6)
            if close:
                hints.append(f"{c!r} (renamed to {close[0]!r}?)")
            else:
                hints.append(repr(c))
        raise ValueError(
            f"recipe {recipe!r}: {p} lacks {len(missing)} required column(s): {', '.join(hints)}. "
            f"Expected the columns of {source}; the file has {list(df.columns)}."
        )
    if len(df) == 0:
        raise ValueError(f"recipe {recipe!r}: {p} has a header but no data rows.")
    for col in (required if numeric is None else list(numeric)):
        df[col] = _parse_numeric(df[col], col, recipe=recipe, path=p)
    return df


def _parse_numeric(s: pd.Series, col: str, *, recipe: str, path: Path) -> pd.Series:
    text = s.astype(str).str.strip()
    is_missing = text.str.lower().isin(_MISSING_STRINGS)
    values = pd.to_numeric(text.where(~is_missing, None), errors="coerce").astype(np.float64)
    bad = np.flatnonzero(values.isna().to_numpy() & ~is_missing.to_numpy())
    if len(bad):
        r0 = int(bad[0])
        raise ValueError(
            f"recipe {recipe!r}: {path} column {col!r} has non-numeric cell(s) at data row(s) "
            f"{_row_list(bad)}; e.g. data row {r0 + 1} holds {s.iloc[r0]!r}."
        )
    inf = np.flatnonzero(~np.isfinite(values.to_numpy()) & ~values.isna().to_numpy())
    if len(inf):
        raise ValueError(
            f"recipe {recipe!r}: {path} column {col!r} has infinite value(s) at data row(s) "
            f"{_row_list(inf)}."
        )
    return values


def check_binary(df: pd.DataFrame, levels: Mapping[str, tuple[float, float]], *, recipe: str,
                 where: str, missing_code: float | None = None) -> None:
    """Raise ``ValueError`` if a binary column holds a value other than its two levels.

    NaN (missing) is allowed here; rows with missing values are dropped by the recipe.
    """
    for col, (lo, hi) in levels.items():
        v = df[col].to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isnan(v) & (v != lo) & (v != hi))
        if len(bad):
            r0 = int(bad[0])
            third = sorted({float(x) for x in v[bad][:50]})
            code = f" ({missing_code:g} = missing)" if missing_code is not None else ""
            raise ValueError(
                f"recipe {recipe!r}: {where} binary column {col!r} has a third value "
                f"{third[0]:g} at data row(s) {_row_list(bad)} (data row {r0 + 1} holds "
                f"{v[r0]:g}); allowed values are {lo:g} and {hi:g}{code}."
            )
