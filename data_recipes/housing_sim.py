"""Embedded simulator shaped like the Bangalore housing data (paper §5.1); no download needed.

Columns and preprocessing match the ``bangalore`` recipe: Area (sq. ft) and No. of Bedrooms are
continuous and standardised, the 36 amenity columns are binary 0/1 (38 features), the target is
Price / 10^7 INR.

The generator (seeded, vectorised):

* ``log Area ~ N(log 1300, 0.42²)``; bedrooms = round(Area / 520 + noise), clipped to 1..6;
* a latent "project quality" q ~ N(0, 1), tied to Area; amenity j is present when
  ``a_j q + sqrt(1 - a_j²) e_j > t_j`` (a Gaussian copula), so amenities are positively
  correlated in blocks (sports, security, furnishings), with prevalences from 3 % to 75 %;
* ``log Price = log(4.5e6) + 1.05 log(Area / 1300) + 0.06 (bedrooms - 2.5)
  + Σ β_j amenity_j + interactions + ε``, ε ~ N(0, 0.28²): the price is right-skewed
  (log-normal-like). Interactions: SwimmingPool × ClubHouse, Gymnasium × JoggingTrack,
  Resale × log Area, AC × Wifi, GolfCourse × LandscapedGardens.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._base import RawData
from .bangalore import AMENITIES, CONTINUOUS, FEATURES, TARGET, TARGET_SCALE

NAME = "housing_sim"
EMBEDDED = True
SUMMARY = "Simulated Bangalore-like housing prices, 38 features (2 continuous + 36 binary)"

# block of each amenity (loading on the latent quality), its prevalence, and its price effect
_SPORTS = {"Gymnasium", "SwimmingPool", "JoggingTrack", "IndoorGames", "SportsFacility",
           "ClubHouse", "LandscapedGardens", "Children'splayarea", "MultipurposeRoom",
           "GolfCourse"}
_SERVICES = {"MaintenanceStaff", "RainWaterHarvesting", "Intercom", "24X7Security", "PowerBackup",
             "CarParking", "LiftAvailable", "StaffQuarter", "Cafeteria", "ATM", "ShoppingMall",
             "School", "Hospital", "Gasconnection", "VaastuCompliant"}
_FURNISHING = {"WashingMachine", "AC", "Wifi", "BED", "Microwave", "TV", "DiningTable", "Sofa",
               "Wardrobe", "Refrigerator"}

_PREVALENCE = {
    "Resale": 0.35, "MaintenanceStaff": 0.35, "Gymnasium": 0.55, "SwimmingPool": 0.5,
    "LandscapedGardens": 0.45, "JoggingTrack": 0.45, "RainWaterHarvesting": 0.5,
    "IndoorGames": 0.45, "ShoppingMall": 0.1, "Intercom": 0.5, "SportsFacility": 0.4, "ATM": 0.12,
    "ClubHouse": 0.55, "School": 0.08, "24X7Security": 0.65, "PowerBackup": 0.6,
    "CarParking": 0.3, "StaffQuarter": 0.15, "Cafeteria": 0.12, "MultipurposeRoom": 0.35,
    "Hospital": 0.05, "WashingMachine": 0.04, "Gasconnection": 0.3, "AC": 0.06, "Wifi": 0.05,
    "Children'splayarea": 0.7, "LiftAvailable": 0.75, "BED": 0.04, "VaastuCompliant": 0.4,
    "Microwave": 0.03, "GolfCourse": 0.04, "TV": 0.04, "DiningTable": 0.03, "Sofa": 0.04,
    "Wardrobe": 0.05, "Refrigerator": 0.04,
}
_EFFECT = {  # main effects on log price
    "Resale": -0.06, "MaintenanceStaff": 0.04, "Gymnasium": 0.07, "SwimmingPool": 0.12,
    "LandscapedGardens": 0.05, "JoggingTrack": 0.02, "RainWaterHarvesting": 0.0,
    "IndoorGames": 0.03, "ShoppingMall": 0.05, "Intercom": 0.02, "SportsFacility": 0.03,
    "ATM": 0.02, "ClubHouse": 0.08, "School": 0.02, "24X7Security": 0.05, "PowerBackup": 0.03,
    "CarParking": 0.04, "StaffQuarter": 0.06, "Cafeteria": 0.03, "MultipurposeRoom": 0.02,
    "Hospital": 0.01, "WashingMachine": 0.02, "Gasconnection": 0.03, "AC": 0.08, "Wifi": 0.03,
    "Children'splayarea": 0.02, "LiftAvailable": 0.09, "BED": 0.01, "VaastuCompliant": 0.02,
    "Microwave": 0.01, "GolfCourse": 0.2, "TV": 0.01, "DiningTable": 0.01, "Sofa": 0.02,
    "Wardrobe": 0.02, "Refrigerator": 0.01,
}
#: (feature a, feature b, coefficient) on log price; "logArea" means log(Area / 1300)
INTERACTIONS = [("SwimmingPool", "ClubHouse", 0.15), ("Gymnasium", "JoggingTrack", -0.08),
                ("Resale", "logArea", -0.25), ("AC", "Wifi", 0.2),
                ("GolfCourse", "LandscapedGardens", 0.25)]


def simulate(n_samples: int = 1951, *, seed: int = 0, noise: float = 0.28) -> pd.DataFrame:
    """Simulate ``n_samples`` houses with the columns of ``Bangalore.csv`` (without Location).

    Parameters
    ----------
    n_samples : int
        Number of rows (default 1,951, the complete rows of the real file).
    seed : int
        Seed (same seed, same rows).
    noise : float
        Standard deviation of the log-price noise.

    Returns
    -------
    pandas.DataFrame
        Price (INR), Area, No. of Bedrooms and the 36 amenity columns (0/1).
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer >= 2; got {n_samples!r}.")
    from statistics import NormalDist

    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 6207]))
    n = int(n_samples)
    log_area = rng.normal(np.log(1300.0), 0.42, n)
    area = np.round(np.exp(log_area))
    beds = np.clip(np.round(area / 520.0 + rng.normal(0.0, 0.45, n)), 1, 6)
    la = np.log(area / 1300.0)
    q = 0.45 * la / 0.42 + np.sqrt(1 - 0.45 ** 2) * rng.standard_normal(n)
    block = {"sports": rng.standard_normal(n), "services": rng.standard_normal(n),
             "furnishing": rng.standard_normal(n)}
    cols: dict[str, np.ndarray] = {}
    for name in AMENITIES:
        if name in _SPORTS:
            b, load = block["sports"], 0.55
        elif name in _SERVICES:
            b, load = block["services"], 0.45
        elif name in _FURNISHING:
            b, load = block["furnishing"], 0.75
        else:
            b, load = np.zeros(n), 0.0
        aq = 0.4 if name != "Resale" else -0.2
        rest = max(1.0 - aq ** 2 - load ** 2, 0.05)
        z = aq * q + load * b + np.sqrt(rest) * rng.standard_normal(n)
        z = z / np.sqrt(aq ** 2 + load ** 2 + rest)
        cols[name] = (z > NormalDist().inv_cdf(1.0 - _PREVALENCE[name])).astype(np.float64)
    logp = np.log(4.5e6) + 1.05 * la + 0.06 * (beds - 2.5)
    for name in AMENITIES:
        logp += _EFFECT[name] * cols[name]
    for a, b, coef in INTERACTIONS:
        va = la if a == "logArea" else cols[a]
        vb = la if b == "logArea" else cols[b]
        logp += coef * va * vb
    logp += rng.normal(0.0, noise, n)
    price = np.round(np.exp(logp), -3)
    data = {TARGET: price, "Area": area, "No. of Bedrooms": beds, **cols}
    return pd.DataFrame(data, columns=[TARGET] + FEATURES)


def build(*, seed: int = 0, n_samples: int = 1951, noise: float = 0.28) -> RawData:
    """Simulate houses and return them as the ``bangalore`` recipe would (38 features)."""
    df = simulate(n_samples, seed=seed, noise=noise)
    desc = (
        f"Simulated Bangalore-like housing data ({n_samples} rows, seed {seed}): Area and No. of "
        f"Bedrooms (standardised) plus 36 correlated binary amenities (0/1); right-skewed price "
        f"with main effects and {len(INTERACTIONS)} interactions; target Price / 1e7 INR."
    )
    return RawData(
        features=df[FEATURES].astype(np.float64),
        target=df[TARGET].to_numpy(dtype=np.float64),
        target_name=TARGET,
        binary_levels={c: (0.0, 1.0) for c in AMENITIES},
        standardize=list(CONTINUOUS),
        target_scale=TARGET_SCALE,
        description=desc,
        info={"simulator": NAME, "n_samples": int(n_samples), "noise": float(noise)},
    )
