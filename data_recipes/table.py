"""Your own table: a CSV or parquet file -> a model-ready data set (``recipe = "table"``).

Options (the names are the interface; see docs/your_own_data.md):

``path``
    The CSV or parquet file (required).
``target``
    The column to predict (required).
``features``
    The feature columns (default: every other numeric column, after ``drop``; one-hot columns of
    ``categorical`` are added).
``drop``
    Columns to leave out.
``binary``
    ``"auto"`` (default: numeric columns with exactly two distinct values, reported in
    ``info["binary_detected"]``), a list of column names, or ``[]`` (none).
``categorical``
    Columns one-hot encoded (one 0/1 feature ``"col=level"`` per level, in sorted order); the
    columns of each form a feature group, moved as one unit in insertion and deletion (the data
    set's ``groups``, as the housing recipes' one-hot ``Location``), and are listed in
    ``info["groups"]`` (name -> feature indices).
``scale``
    ``"standard"`` (default: continuous features centred and divided by their standard deviation,
    fitted on the training split; binary and one-hot features are not scaled) or ``"none"``.
``split``
    A fraction (default 0.2) of rows for the test split, drawn with ``split_seed`` (default: the
    run's seed), or the name of a column holding ``"train"`` / ``"test"`` (that column is then not
    a feature).
``missing``
    Values that mean missing (e.g. ``[9]`` or ``["NA", -1]``); rows with a missing value in a used
    column (and rows with empty cells there) are dropped and counted in ``info``.

Bad cells (text in a numeric feature) raise an error that names the row, the file line and the
column; an unknown option is an error with the closest valid name.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np
import pandas as pd

from ._base import RawData, check_path, sha256_file

NAME = "table"
EMBEDDED = False
SUMMARY = "your own CSV or parquet file (options: path, target, features, binary, categorical, ...)"

OPTIONS = ("path", "target", "features", "drop", "binary", "categorical", "scale", "split",
           "split_seed", "missing")


def _fail(msg: str) -> None:
    raise ValueError(f"recipe 'table': {msg}")


def _as_list(name: str, v) -> list:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if not isinstance(v, (list, tuple)):
        _fail(f"{name} must be a list of column names; got {v!r}.")
    return list(v)


def _read(p: Path) -> pd.DataFrame:
    if p.suffix.lower() in (".parquet", ".pq"):
        df = pd.read_parquet(p)
        df.columns = [str(c).strip() for c in df.columns]
        return df.astype(object).where(df.notna(), "")
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        _fail(f"{p} is empty.")
    df.columns = [str(c).strip() for c in df.columns]
    dup = sorted({c for c in df.columns if list(df.columns).count(c) > 1})
    if dup:
        _fail(f"{p} has duplicated column(s) {dup}.")
    return df


def _numeric(s: pd.Series) -> pd.Series:
    """Parse to float; empty cells -> NaN; other text -> NaN marked by the caller."""
    if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        return s.astype(np.float64)
    t = np.array([str(v).strip() for v in s.to_numpy(dtype=object)], dtype=object)
    t[t == ""] = None
    out = pd.to_numeric(pd.Series(t, index=s.index, dtype=object), errors="coerce")
    return out.astype(np.float64)


def _bad_cells(raw: pd.Series, parsed: pd.Series) -> np.ndarray:
    txt = raw.astype(str).str.strip()
    return np.flatnonzero(parsed.isna().to_numpy() & (txt != "").to_numpy()
                          & ~txt.str.lower().isin(["na", "nan", "n/a", "null", "none"]).to_numpy())


def build(*, seed: int = 0, **options) -> RawData:
    """Read the user's table (see the module docstring for the options)."""
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        k = unknown[0]
        close = difflib.get_close_matches(k, OPTIONS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        _fail(f"unknown option {k!r}{hint} (options: {', '.join(OPTIONS)}).")
    p = check_path(options.get("path"), recipe=NAME, source="your CSV or parquet file")
    target = options.get("target")
    if not isinstance(target, str) or not target:
        _fail("target= (the column to predict) is required.")
    df = _read(p)
    cols = list(df.columns)
    if target not in cols:
        close = difflib.get_close_matches(target, cols, n=1)
        _fail(f"target column {target!r} not in {p.name}"
              + (f"; did you mean {close[0]!r}?" if close else f" (columns: {cols})."))
    drop = _as_list("drop", options.get("drop"))
    categorical = _as_list("categorical", options.get("categorical"))
    split = options.get("split", 0.2)
    split_col = split if isinstance(split, str) else None
    for c in drop + categorical + ([split_col] if split_col else []):
        if c not in cols:
            close = difflib.get_close_matches(c, cols, n=1)
            _fail(f"column {c!r} not in {p.name}" + (f"; did you mean {close[0]!r}?" if close
                                                     else f" (columns: {cols})."))
    excluded = {target, *drop, *categorical, *([split_col] if split_col else [])}
    parsed = {c: _numeric(df[c]) for c in cols}
    if options.get("features") is None:
        features = [c for c in cols if c not in excluded
                    and _bad_cells(df[c], parsed[c]).size == 0 and parsed[c].notna().any()]
        ignored = [c for c in cols if c not in excluded and c not in features]
    else:
        features = _as_list("features", options["features"])
        for c in features:
            if c not in cols:
                close = difflib.get_close_matches(c, cols, n=1)
                _fail(f"feature column {c!r} not in {p.name}"
                      + (f"; did you mean {close[0]!r}?" if close else "."))
            if c in excluded:
                _fail(f"column {c!r} is both a feature and the target, dropped, categorical or the "
                      "split column.")
        ignored = [c for c in cols if c not in excluded and c not in features]
    for c in [*features, target]:
        bad = _bad_cells(df[c], parsed[c])
        if bad.size:
            r = int(bad[0])
            _fail(f"{p.name}: column {c!r} has a non-numeric value {df[c].iloc[r]!r} at row {r + 1} "
                  f"(file line {r + 2})" + (f" and {bad.size - 1} more row(s)" if bad.size > 1
                                            else "") + ".")
    # missing values
    codes = _as_list("missing", options.get("missing"))
    used = [*features, target, *categorical]
    miss = np.zeros(len(df), bool)
    for c in used:
        if c in categorical:
            v = df[c].astype(str).str.strip()
            miss |= (v == "").to_numpy() | v.isin([str(x) for x in codes]).to_numpy()
        else:
            v = parsed[c]
            miss |= v.isna().to_numpy()
            num_codes = [float(x) for x in codes if isinstance(x, (int, float))
                         and not isinstance(x, bool)]
            if num_codes:
                miss |= v.isin(num_codes).to_numpy()
            str_codes = [str(x) for x in codes if isinstance(x, str)]
            if str_codes:
                miss |= df[c].astype(str).str.strip().isin(str_codes).to_numpy()
    keep = ~miss
    n_read, n_missing = len(df), int(miss.sum())
    if keep.sum() < 2:
        _fail(f"{p.name}: only {int(keep.sum())} complete row(s) after dropping {n_missing} with "
              "missing values; need at least 2.")
    rows = np.flatnonzero(keep)
    X = pd.DataFrame({c: parsed[c].to_numpy()[rows] for c in features})
    groups: dict[str, list[int]] = {}
    for c in categorical:
        vals = df[c].astype(str).str.strip().to_numpy()[rows]
        for lev in sorted(set(vals)):
            name = f"{c}={lev}"
            groups.setdefault(c, []).append(len(X.columns))
            X[name] = (vals == lev).astype(np.float64)
    if X.shape[1] == 0:
        _fail(f"{p.name}: no feature columns (target {target!r}; numeric columns: "
              f"{[c for c in cols if c not in excluded]}).")
    # binary features
    b_opt = options.get("binary", "auto")
    onehot = [n for c in categorical for n in X.columns if n.startswith(f"{c}=")]
    levels: dict[str, tuple[float, float]] = {n: (0.0, 1.0) for n in onehot}
    detected: list[str] = []
    if b_opt == "auto":
        for c in features:
            u = np.unique(X[c].to_numpy())
            if u.size == 2:
                levels[c] = (float(u[0]), float(u[1]))
                detected.append(c)
    else:
        for c in _as_list("binary", b_opt):
            if c not in features:
                _fail(f"binary column {c!r} is not a feature (features: {features}).")
            u = np.unique(X[c].to_numpy())
            if u.size > 2:
                _fail(f"binary column {c!r} has {u.size} distinct values "
                      f"({u[:5].tolist()}...); a binary feature has two.")
            lo, hi = (float(u[0]), float(u[-1])) if u.size == 2 else (float(u[0]), float(u[0]) + 1)
            levels[c] = (lo, hi)
    scale = options.get("scale", "standard")
    if scale not in ("standard", "none"):
        _fail(f"scale must be 'standard' or 'none'; got {scale!r}.")
    standardize = [c for c in X.columns if c not in levels] if scale == "standard" else []
    # split
    test_mask = None
    if split_col is not None:
        v = df[split_col].astype(str).str.strip().str.lower().to_numpy()[rows]
        bad = np.flatnonzero(~np.isin(v, ["train", "test"]))
        if bad.size:
            r = int(rows[bad[0]])
            _fail(f"split column {split_col!r} must hold 'train' or 'test'; row {r + 1} (file line "
                  f"{r + 2}) has {df[split_col].iloc[r]!r}.")
        test_mask = v == "test"
        if test_mask.all() or not test_mask.any():
            _fail(f"split column {split_col!r} puts every row in one split.")
    else:
        if isinstance(split, bool) or not isinstance(split, (int, float)) or not 0 < split < 1:
            _fail(f"split must be a fraction in (0, 1) or a column name; got {split!r}.")
        split_seed = options.get("split_seed", seed)
        rng = np.random.default_rng(np.random.SeedSequence([int(split_seed), 8021]))
        m = len(rows)
        n_test = min(max(int(np.ceil(float(split) * m)), 1), m - 1)
        test_mask = np.zeros(m, bool)
        test_mask[rng.permutation(m)[:n_test]] = True
    y = parsed[target].to_numpy()[rows]
    desc = (f"{p.name}: {len(rows)} rows ({n_missing} dropped for missing values), "
            f"{X.shape[1]} features ({len(levels)} binary), target {target!r}"
            + (f"; one-hot groups {list(groups)}" if groups else "")
            + (f"; ignored non-numeric columns {ignored}" if ignored else "") + ".")
    return RawData(
        features=X, target=y, target_name=target, binary_levels=levels,
        standardize=standardize, target_scale=None, description=desc, test_mask=test_mask,
        groups={c: [X.columns[i] for i in idx] for c, idx in groups.items()} or None,
        info={"source": str(p.resolve()), "sha256": sha256_file(p), "n_read": n_read,
              "n_dropped_missing": n_missing, "n_kept": int(len(rows)), "groups": groups,
              "binary_detected": detected, "ignored_columns": ignored,
              "split": split_col or float(split)},
    )
