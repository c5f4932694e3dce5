"""Your own table: a CSV or parquet file -> a model-ready data set (``recipe = "table"``).

Options (the names are the interface; see docs/your_own_data.md):

``path``
    The CSV or parquet file (required).
``target``
    The column to predict (required).
``features``
    The feature columns (default: every other numeric column, after ``drop``; one-hot columns of
    ``categorical`` are added). True/False columns (CSV text or parquet booleans) are read as 0/1.
    Without ``features``, a column with no number in it (text, or only empty cells) is left out
    with a warning; a column with numbers and some other text is an error (see below).
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
    Values that mean missing (e.g. ``[9]`` or ``["?", -1]``); rows with a missing value in a used
    column are dropped and counted in ``info`` (``n_dropped_missing``, and ``missing_by_column``:
    rows missing per column); more than ``MISSING_WARN_FRACTION`` (5 %) of the rows dropped is
    also a warning. Empty cells and the usual missing-value tokens (``NA``, ``NaN``, ``N/A``,
    ``null``, ``None``, any case) are always missing.

Bad cells (text in a numeric feature other than a ``missing`` code, or ``inf``) raise an error that
names the column, the value, the row (1-based) and the file line, and says how to leave the column
out or declare the value missing; a feature or target column with no values is an error naming it;
an unknown option is an error with the closest valid name.
"""

from __future__ import annotations

import csv
import difflib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from insdel import UnknownOptionError

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
    """The file as text cells (a parquet file's missing values as empty cells), column names
    stripped and unique."""
    if p.suffix.lower() in (".parquet", ".pq"):
        df = pd.read_parquet(p)
        df = df.astype(object).where(df.notna(), "")
    else:
        try:
            df = pd.read_csv(p, dtype=str, keep_default_na=False)
        except pd.errors.EmptyDataError:
            _fail(f"{p} is empty.")
    df.columns = [str(c).strip() for c in df.columns]
    names = list(df.columns) if p.suffix.lower() in (".parquet", ".pq") else _csv_header(p)
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        _fail(f"{p} has duplicated column(s) {dup} (names compared without surrounding spaces).")
    return df


def _csv_header(p: Path) -> list[str]:
    """A CSV's column names as written (pandas renames a repeated name ``a`` to ``a.1``), stripped."""
    with open(p, newline="", encoding="utf-8-sig", errors="replace") as fh:
        header = next((rec for rec in csv.reader(fh) if rec), [])
    return [c.strip() for c in header]


_NA_TOKENS = ("na", "nan", "n/a", "null", "none")

#: Above this share of the rows read, rows dropped for missing values are also a warning.
MISSING_WARN_FRACTION = 0.05


def missing_text(by_column: dict[str, int]) -> str:
    """``"bmi 40, bp 30"``: rows missing per column, largest first."""
    return ", ".join(f"{c} {k}" for c, k in sorted(by_column.items(), key=lambda kv: -kv[1]))

_BOOL = {"true": 1.0, "false": 0.0}


def _numeric(txt: pd.Series, str_codes: list[str] = ()) -> pd.Series:
    """Parse a column's stripped text to float; empty cells -> NaN; other text -> NaN marked by the
    caller. A column whose every non-empty cell is True or False (any case; a CSV of booleans, or a
    parquet bool column) becomes 1.0 / 0.0 (empty cells, NA tokens and the declared missing codes
    aside)."""
    t = txt.to_numpy(dtype=object).copy()
    low = np.array([v.lower() for v in t], dtype=object)
    filled = (t != "") & ~np.isin(low, _NA_TOKENS) & ~np.isin(t, list(str_codes))
    if filled.any() and np.isin(low[filled], list(_BOOL)).all():
        return pd.Series([_BOOL.get(v, np.nan) for v in low], index=txt.index, dtype=np.float64)
    t[t == ""] = None
    out = pd.to_numeric(pd.Series(t, index=txt.index, dtype=object), errors="coerce")
    return out.astype(np.float64)


def _bad_cells(txt: pd.Series, parsed: pd.Series, str_codes: list[str]) -> np.ndarray:
    """Rows whose (stripped) cell is text that is neither empty, an NA token nor a declared
    missing code."""
    return np.flatnonzero(parsed.isna().to_numpy() & (txt != "").to_numpy()
                          & ~txt.str.lower().isin(_NA_TOKENS).to_numpy()
                          & ~txt.isin(str_codes).to_numpy())


def _file_line(p: Path, r: int) -> int | None:
    """The line of a CSV on which data row ``r`` (0-based) starts, counted as the file's reader
    does: blank lines skipped (as pandas skips them), a quoted cell spanning several lines counted
    in full. Read only to word an error, so only then."""
    try:
        with open(p, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            start, seen = 1, -1  # the line the next record starts on; records read (header: -1)
            for rec in reader:
                if rec:
                    if seen == r:
                        return start
                    seen += 1
                start = reader.line_num + 1
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return None


def _where(p: Path, r: int) -> str:
    """Row ``r`` (0-based data row) as the user finds it: row number, and the line of a CSV."""
    line = None if p.suffix.lower() in (".parquet", ".pq") else _file_line(p, r)
    return f"row {r + 1}" + ("" if line is None else f" (file line {line})")


def _bad_cell_error(p: Path, c: str, raw: pd.Series, bad: np.ndarray, hint: str) -> None:
    r = int(bad[0])
    _fail(f"{p.name}: column {c!r} has a non-numeric value {raw.iloc[r]!r} at {_where(p, r)}"
          + (f" and {bad.size - 1} more row(s)" if bad.size > 1 else "") + f"{hint}.")


def build(*, seed: int = 0, **options) -> RawData:
    """Read the user's table (see the module docstring for the options)."""
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise UnknownOptionError.of("recipe 'table'", unknown, OPTIONS)
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
    codes = _as_list("missing", options.get("missing"))
    num_codes = [float(x) for x in codes if isinstance(x, (int, float)) and not isinstance(x, bool)]
    str_codes = [str(x) for x in codes if isinstance(x, str)]
    txt = {c: df[c].astype(str).str.strip() for c in cols}  # each cell's text, stripped once
    parsed = {c: _numeric(txt[c], str_codes) for c in cols}
    text_cols: list[str] = []
    empty_cols: list[str] = []
    if options.get("features") is None:
        features = []
        for c in cols:
            if c in excluded:
                continue
            bad = _bad_cells(txt[c], parsed[c], str_codes)
            n_num = int((parsed[c].notna() & ~parsed[c].isin(num_codes)
                         & ~txt[c].isin(str_codes)).sum())
            if bad.size and n_num:
                # Numbers and text in one column: a typo in a numeric feature, or a text column
                # with a few numbers. Either way not safe to guess: say so and how to choose.
                _bad_cell_error(p, c, df[c], bad,
                                f"; the column's other {n_num} cell(s) are numbers, so it is read "
                                f"as a numeric feature. Fix the cell, declare the value missing "
                                f"(missing = [{txt[c].iloc[int(bad[0])]!r}]), or leave "
                                f"the column out (drop = [{c!r}], or list the columns you want "
                                f"in features = [...]) or one-hot encode it "
                                f"(categorical = [{c!r}])")
            if bad.size:
                text_cols.append(c)
            elif not parsed[c].notna().any():
                empty_cols.append(c)
            else:
                features.append(c)
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
        bad = _bad_cells(txt[c], parsed[c], str_codes)
        if bad.size:
            _bad_cell_error(p, c, df[c], bad,
                            "" if c == target else
                            f"; fix the cell, declare the value missing (missing = "
                            f"[{txt[c].iloc[int(bad[0])]!r}]) or leave {c!r} out of "
                            f"features")
        coded = parsed[c].isin(num_codes) | txt[c].isin(str_codes)
        if not (parsed[c].notna() & ~coded).any():
            _fail(f"{p.name}: {'target' if c == target else 'feature'} column {c!r} has no "
                  f"values (every cell is empty, a missing-value token or a declared missing "
                  f"code), so every row would be dropped"
                  + ("." if c == target else f"; leave {c!r} out of features."
                     if options.get("features") is not None else f"; leave it out "
                     f"(drop = [{c!r}])."))
        inf = np.flatnonzero(np.isinf(parsed[c].to_numpy()) & ~coded.to_numpy())
        if inf.size:
            r = int(inf[0])
            _fail(f"{p.name}: column {c!r} has a non-finite value {txt[c].iloc[r]!r} at "
                  f"{_where(p, r)}" + (f" and {inf.size - 1} more row(s)" if inf.size > 1 else "")
                  + f"; fix the cell or declare the value missing "
                  f"(missing = [{txt[c].iloc[r]!r}]).")
    # missing values
    used = [*features, target, *categorical]
    miss = np.zeros(len(df), bool)
    by_column: dict[str, int] = {}  # rows missing in each used column (a row may count twice)
    for c in used:
        if c in categorical:
            v = txt[c]
            col = (v == "").to_numpy() | v.isin([str(x) for x in codes]).to_numpy()
        else:
            v = parsed[c]
            col = v.isna().to_numpy()
            if num_codes:
                col = col | v.isin(num_codes).to_numpy()
            if str_codes:
                col = col | txt[c].isin(str_codes).to_numpy()
        miss |= col
        if col.any():
            by_column[c] = int(col.sum())
    keep = ~miss
    n_read, n_missing = len(df), int(miss.sum())
    if keep.sum() < 2:
        _fail(f"{p.name}: only {int(keep.sum())} complete row(s) after dropping {n_missing} with "
              f"missing values (by column: {missing_text(by_column)}); need at least 2.")
    if n_missing > MISSING_WARN_FRACTION * n_read:
        warnings.warn(f"recipe 'table': {p.name}: {n_missing} of {n_read} rows "
                      f"({100 * n_missing / n_read:.1f} %, more than "
                      f"{100 * MISSING_WARN_FRACTION:g} %) are dropped for missing values (by "
                      f"column: {missing_text(by_column)}); the rows kept may not represent the "
                      f"file. Leave a mostly empty column out (drop = [...]) or fill the cells.",
                      UserWarning, stacklevel=3)
    rows = np.flatnonzero(keep)
    X = pd.DataFrame({c: parsed[c].to_numpy()[rows] for c in features})
    groups: dict[str, list[int]] = {}
    for c in categorical:
        vals = txt[c].to_numpy()[rows]
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
        v = txt[split_col].str.lower().to_numpy()[rows]
        bad = np.flatnonzero(~np.isin(v, ["train", "test"]))
        if bad.size:
            r = int(rows[bad[0]])
            _fail(f"split column {split_col!r} must hold 'train' or 'test'; {_where(p, r)} has "
                  f"{df[split_col].iloc[r]!r}.")
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
    left_out = (([f"{text_cols} (text: no numbers in them)"] if text_cols else [])
                + ([f"{empty_cols} (no values)"] if empty_cols else []))
    desc = (f"{p.name}: {len(rows)} rows ({n_missing} dropped for missing values"
            + (f": {missing_text(by_column)}" if by_column else "") + "), "
            f"{X.shape[1]} features ({len(levels)} binary), target {target!r}"
            + (f"; one-hot groups {list(groups)}" if groups else "")
            + (f"; left out column(s) {' and '.join(left_out)}" if left_out else "")
            + (f"; columns not in features {ignored}"
               if options.get("features") is not None and ignored else "") + ".")
    if left_out:
        both = text_cols + empty_cols
        advice = ((["to use a text column, one-hot encode it (categorical = [...])"]
                   if text_cols else [])
                  + ([f"a column with no values ({empty_cols}: every cell empty or missing) "
                      f"holds nothing to learn from; a model trained on a table that had it "
                      f"as a feature expects {len(empty_cols)} more input(s) than this data "
                      f"set gives"] if empty_cols else []))
        warnings.warn(f"recipe 'table': {p.name}: column(s) {' and '.join(left_out)} are left out "
                      f"of the features; the model sees {X.shape[1]} feature(s). "
                      f"{'; '.join(advice)[:1].upper()}{'; '.join(advice)[1:]}. To silence this "
                      f"warning, leave the column(s) out yourself (drop = {both!r}) or list the "
                      f"features (features = [...]).", UserWarning, stacklevel=3)
    return RawData(
        features=X, target=y, target_name=target, binary_levels=levels,
        standardize=standardize, target_scale=None, description=desc, test_mask=test_mask,
        groups={c: [X.columns[i] for i in idx] for c, idx in groups.items()} or None,
        label=p.name,
        info={"source": str(p.resolve()), "sha256": sha256_file(p), "n_read": n_read,
              "n_dropped_missing": n_missing, "missing_by_column": by_column,
              "n_kept": int(len(rows)), "groups": groups,
              "binary_detected": detected, "ignored_columns": ignored,
              "text_columns": text_cols, "empty_columns": empty_cols,
              "split": split_col or float(split)},
    )
