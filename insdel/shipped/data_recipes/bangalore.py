"""Bangalore housing prices (paper §5.1, Appendix A.2), from a user's copy of Kaggle's file.

Source: Kaggle "Housing Prices in Metropolitan Areas of India" (ruchi798), file ``Bangalore.csv``
(6,207 rows, 40 columns: Price, Area, Location, No. of Bedrooms and 36 binary amenity columns).

Preprocessing, as in the paper:

* the ``Location`` column (free-text place names, 302 levels in the full file) is dropped
  (``location="drop"``, the default);
* the value 9 in an amenity column means *missing*; only complete rows are kept (1,951 in the full
  file; the paper's text says 1,591 but holds out 391 = 20 % of 1,951 points);
* the target is ``Price / 10^7`` (INR);
* ``Area`` and ``No. of Bedrooms`` are continuous and standardised (z-scores fitted on the training
  split); the 36 amenity columns stay binary 0/1 — 38 features in all.

A 9 in Price, Area or No. of Bedrooms is read as a number (a nine-bedroom house is possible); the
missing code applies to the 0/1 amenity columns only.

Variant (issue #16), ``location="onehot"``: ``Location`` is kept as one-hot 0/1 columns named
``Location=<level>`` (levels stripped of blanks and sorted; the encoding is fitted on the complete
rows of the whole file, so a level seen only in the test split is still a column), placed after the
38 paper features, declared binary and declared as ONE feature group named ``Location``: in
insertion/deletion curves, the decomposition and exact Shapley values the block moves as one unit
(39 units). Rows with an empty Location are then incomplete and dropped. ``min_count=k`` (default 1)
pools the levels with fewer than k complete rows into one column ``Location=other``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ._base import RawData, check_binary, read_csv, sha256_file

NAME = "bangalore"
EMBEDDED = False
SOURCE = "Kaggle's Bangalore.csv (ruchi798/housing-prices-in-metropolitan-areas-of-india)"
SUMMARY = ("Bangalore housing prices (Kaggle), 38 features (2 continuous + 36 binary); needs path=; "
           "location='onehot' keeps Location as one group")

TARGET = "Price"
TARGET_SCALE = 1e7
CONTINUOUS = ["Area", "No. of Bedrooms"]
DROPPED = ["Location"]
LOCATION = "Location"
#: values of the ``location`` option: drop the column (the paper) or keep it as a one-hot group
LOCATION_MODES = ("drop", "onehot")
#: name of the pooled level of ``min_count``
OTHER_LEVEL = "other"
MISSING_CODE = 9.0

#: The 36 binary amenity columns, in the file's order.
AMENITIES = [
    "Resale", "MaintenanceStaff", "Gymnasium", "SwimmingPool", "LandscapedGardens",
    "JoggingTrack", "RainWaterHarvesting", "IndoorGames", "ShoppingMall", "Intercom",
    "SportsFacility", "ATM", "ClubHouse", "School", "24X7Security", "PowerBackup", "CarParking",
    "StaffQuarter", "Cafeteria", "MultipurposeRoom", "Hospital", "WashingMachine",
    "Gasconnection", "AC", "Wifi", "Children'splayarea", "LiftAvailable", "BED",
    "VaastuCompliant", "Microwave", "GolfCourse", "TV", "DiningTable", "Sofa", "Wardrobe",
    "Refrigerator",
]

#: The 38 features in model order.
FEATURES = CONTINUOUS + AMENITIES


def check_location_options(location, min_count, *, recipe: str) -> int:
    """Validate the ``location`` and ``min_count`` options (shared with ``housing_sim``); returns
    ``min_count`` as an int."""
    if not isinstance(location, str) or location not in LOCATION_MODES:
        raise ValueError(f"recipe {recipe!r}: option location must be one of "
                         f"{', '.join(repr(m) for m in LOCATION_MODES)}; got {location!r}.")
    if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)) \
            or min_count < 1:
        raise ValueError(f"recipe {recipe!r}: option min_count must be an integer >= 1 (levels "
                         f"with fewer rows are pooled into {LOCATION}={OTHER_LEVEL}); got "
                         f"{min_count!r}.")
    if location == "drop" and min_count != 1:
        raise ValueError(f"recipe {recipe!r}: option min_count applies to location='onehot' "
                         f"only; got min_count={min_count!r} with location='drop'.")
    return int(min_count)


def onehot_location(values, min_count: int = 1) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One-hot 0/1 columns ``Location=<level>`` (levels sorted) of the location strings ``values``.

    Levels with fewer than ``min_count`` rows are pooled into ``Location=other`` (last column).
    Returns the columns and a dict of counts (levels, pooled levels and rows).
    """
    v = pd.Series(values, dtype=object).astype(str).str.strip().to_numpy()
    levels, counts = np.unique(v, return_counts=True)
    rare = counts < min_count
    kept = [str(lev) for lev in levels[~rare]]
    other = f"{LOCATION}={OTHER_LEVEL}"
    if rare.any() and OTHER_LEVEL in kept:  # a real level called "other": keep the names apart
        other = f"{LOCATION}={OTHER_LEVEL} (pooled)"
    cols = {f"{LOCATION}={lev}": (v == lev).astype(np.float64) for lev in kept}
    if rare.any():
        cols[other] = np.isin(v, levels[rare]).astype(np.float64)
    info = {"levels": int(levels.size), "columns": len(cols), "pooled_levels": int(rare.sum()),
            "pooled_rows": int(counts[rare].sum()), "min_count": int(min_count)}
    return pd.DataFrame(cols, index=range(len(v))), info


def location_groups(columns) -> dict[str, list[str]]:
    """The one feature group ``{"Location": [its one-hot columns]}``."""
    return {LOCATION: list(columns)}


def add_location(df: pd.DataFrame, features: pd.DataFrame, levels: dict, min_count: int
                 ) -> tuple[pd.DataFrame, dict[str, list[str]], dict[str, Any], dict[str, Any]]:
    """Append the one-hot ``Location`` columns of ``df`` to ``features`` as one feature group.

    The new columns are declared binary in ``levels`` (in place). Returns the widened features,
    the feature groups, the counts of :func:`onehot_location` and the entries the recipe's
    ``info`` records about them.
    """
    onehot, loc_info = onehot_location(df[LOCATION], min_count)
    levels.update({c: (0.0, 1.0) for c in onehot.columns})
    entries = {"location_levels": loc_info["levels"],
               "location_columns": loc_info["columns"],
               "location_pooled_levels": loc_info["pooled_levels"],
               "location_pooled_rows": loc_info["pooled_rows"],
               "min_count": min_count}
    return (pd.concat([features, onehot], axis=1), location_groups(onehot.columns), loc_info,
            entries)


def housing_raw(df: pd.DataFrame, features: pd.DataFrame, levels: dict, *, description: str,
                info: dict[str, Any], groups: dict[str, list[str]] | None) -> RawData:
    """The :class:`RawData` of a Bangalore-shaped table: target ``Price`` / 1e7, Area and No. of
    Bedrooms standardised, the amenities (and Location columns) binary per ``levels``."""
    return RawData(
        features=features,
        target=df[TARGET].to_numpy(dtype=np.float64),
        target_name=TARGET,
        binary_levels=levels,
        standardize=list(CONTINUOUS),
        target_scale=TARGET_SCALE,
        description=description,
        info=info,
        groups=groups,
    )


def build(*, path=None, seed: int = 0, location: str = "drop", min_count: int = 1) -> RawData:
    """Read and clean a copy of ``Bangalore.csv``.

    Parameters
    ----------
    path : path-like
        The user's copy of the Kaggle file.
    seed : int
        Unused (the file is fixed); accepted so that every recipe takes the same options.
    location : {"drop", "onehot"}, default "drop"
        ``"drop"``: the paper's 38 features. ``"onehot"``: Location kept as one-hot 0/1 columns
        ``Location=<level>`` (sorted), one feature group ``"Location"`` moved as one unit.
    min_count : int, default 1
        With ``location="onehot"``: levels with fewer complete rows are pooled into
        ``Location=other``.

    Returns
    -------
    RawData
    """
    min_count = check_location_options(location, min_count, recipe=NAME)
    keep_loc = location == "onehot"
    df = read_csv(path, recipe=NAME, source=SOURCE,
                  required=[TARGET] + FEATURES + ([LOCATION] if keep_loc else []),
                  numeric=[TARGET] + FEATURES)
    n_read = len(df)
    amen = df[AMENITIES].to_numpy(dtype=np.float64)
    n_coded = int((amen == MISSING_CODE).any(axis=1).sum())
    df[AMENITIES] = df[AMENITIES].replace(MISSING_CODE, np.nan)
    levels = {c: (0.0, 1.0) for c in AMENITIES}
    check_binary(df, levels, recipe=NAME, where=str(path), missing_code=MISSING_CODE)
    cols = [TARGET] + FEATURES
    complete = df[cols].notna().all(axis=1).to_numpy().copy()
    n_loc_missing = 0
    if keep_loc:
        loc_text = df[LOCATION].astype(str).str.strip()
        no_loc = (loc_text == "").to_numpy() | loc_text.str.lower().isin(
            ("na", "nan", "n/a", "null", "none", "?")).to_numpy()
        n_loc_missing = int((no_loc & complete).sum())
        complete &= ~no_loc
    df = df.loc[complete, cols + ([LOCATION] if keep_loc else [])].reset_index(drop=True)
    if len(df) == 0:
        raise ValueError(f"recipe {NAME!r}: {path} has no complete rows (every row has a missing "
                         f"value or the missing code {MISSING_CODE:g}).")
    n_drop = n_read - len(df)
    features = df[FEATURES].astype(np.float64)
    info = {"source": str(path), "sha256": sha256_file(path), "n_read": n_read,
            "n_dropped_missing": n_drop, "n_missing_code": n_coded, "n_kept": len(df),
            "location": location}
    groups = None
    if keep_loc:
        features, groups, loc_info, entries = add_location(df, features, levels, min_count)
        info.update({"n_dropped_location_missing": n_loc_missing, **entries})
        pooled = (f", {loc_info['pooled_levels']} level(s) with < {min_count} rows pooled into "
                  f"{LOCATION}={OTHER_LEVEL}" if loc_info["pooled_levels"] else "")
        loc_text = (f"Location kept as {loc_info['columns']} one-hot 0/1 columns "
                    f"({loc_info['levels']} levels{pooled}), one feature group")
        n_feat = f"{len(FEATURES)} + {loc_info['columns']} features, {len(FEATURES) + 1} units"
        missing = (f" ({n_coded} with the missing code 9, {n_loc_missing} with no Location)")
    else:
        loc_text = "Location dropped"
        n_feat = "38 features"
        missing = f" ({n_coded} with the missing code 9)"
    desc = (
        f"Bangalore housing prices from {SOURCE}: {n_read} rows read, {n_drop} with missing values "
        f"dropped{missing}, {len(df)} complete rows kept; {loc_text}; target Price / 1e7 INR; Area "
        f"and No. of Bedrooms standardised, 36 binary 0/1 amenities ({n_feat})."
    )
    return housing_raw(df, features, levels, description=desc, info=info, groups=groups)
