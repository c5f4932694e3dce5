"""Bangalore housing prices (paper §5.1, Appendix A.2), from a user's copy of Kaggle's file.

Source: Kaggle "Housing Prices in Metropolitan Areas of India" (ruchi798), file ``Bangalore.csv``
(6,207 rows, 40 columns: Price, Area, Location, No. of Bedrooms and 36 binary amenity columns).

Preprocessing, as in the paper:

* the ``Location`` column (free-text place names) is dropped;
* the value 9 in an amenity column means *missing*; only complete rows are kept (1,951 in the full
  file; the paper's text says 1,591 but holds out 391 = 20 % of 1,951 points);
* the target is ``Price / 10^7`` (INR);
* ``Area`` and ``No. of Bedrooms`` are continuous and standardised (z-scores fitted on the training
  split); the 36 amenity columns stay binary 0/1 — 38 features in all.

A 9 in Price, Area or No. of Bedrooms is read as a number (a nine-bedroom house is possible); the
missing code applies to the 0/1 amenity columns only.
"""

from __future__ import annotations

import numpy as np

from ._base import RawData, check_binary, read_csv, sha256_file

NAME = "bangalore"
EMBEDDED = False
SOURCE = "Kaggle's Bangalore.csv (ruchi798/housing-prices-in-metropolitan-areas-of-india)"
SUMMARY = "Bangalore housing prices (Kaggle), 38 features (2 continuous + 36 binary); needs path="

TARGET = "Price"
TARGET_SCALE = 1e7
CONTINUOUS = ["Area", "No. of Bedrooms"]
DROPPED = ["Location"]
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


def build(*, path=None, seed: int = 0) -> RawData:
    """Read and clean a copy of ``Bangalore.csv``.

    Parameters
    ----------
    path : path-like
        The user's copy of the Kaggle file.
    seed : int
        Unused (the file is fixed); accepted so that every recipe takes the same options.

    Returns
    -------
    RawData
    """
    df = read_csv(path, recipe=NAME, source=SOURCE, required=[TARGET] + FEATURES,
                  numeric=[TARGET] + FEATURES)
    n_read = len(df)
    amen = df[AMENITIES].to_numpy(dtype=np.float64)
    n_coded = int((amen == MISSING_CODE).any(axis=1).sum())
    df[AMENITIES] = df[AMENITIES].replace(MISSING_CODE, np.nan)
    levels = {c: (0.0, 1.0) for c in AMENITIES}
    check_binary(df, levels, recipe=NAME, where=str(path), missing_code=MISSING_CODE)
    cols = [TARGET] + FEATURES
    complete = df[cols].notna().all(axis=1).to_numpy()
    df = df.loc[complete, cols].reset_index(drop=True)
    if len(df) == 0:
        raise ValueError(f"recipe {NAME!r}: {path} has no complete rows (every row has a missing "
                         f"value or the missing code {MISSING_CODE:g}).")
    n_drop = n_read - len(df)
    desc = (
        f"Bangalore housing prices from {SOURCE}: {n_read} rows read, {n_drop} with missing values "
        f"dropped ({n_coded} with the missing code 9), {len(df)} complete rows kept; Location "
        f"dropped; target Price / 1e7 INR; Area and No. of Bedrooms standardised, 36 binary 0/1 "
        f"amenities (38 features)."
    )
    return RawData(
        features=df[FEATURES].astype(np.float64),
        target=df[TARGET].to_numpy(dtype=np.float64),
        target_name=TARGET,
        binary_levels=levels,
        standardize=list(CONTINUOUS),
        target_scale=TARGET_SCALE,
        description=desc,
        info={"source": str(path), "sha256": sha256_file(path), "n_read": n_read,
              "n_dropped_missing": n_drop, "n_missing_code": n_coded, "n_kept": len(df)},
    )
