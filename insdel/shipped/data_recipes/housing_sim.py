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

Variant (issue #16), ``location="onehot"``: a categorical ``Location`` with ``n_locations`` levels
(default 30, named ``Locality 01`` ...) is simulated as well, with Zipf-like frequencies
(P(level k) ∝ k^-0.8) and a location effect on log price (N(0, 0.25²) per level, tied to the
latent quality: better localities have more amenities), and kept as one-hot columns
``Location=<level>`` declared as ONE feature group, as in the ``bangalore`` recipe. The location
draws use their own random stream, so the 38 features of a seed are the same as the default's; the
price then includes the location effect. ``min_count`` pools rare levels into ``Location=other``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._base import RawData
from .bangalore import (
    AMENITIES,
    FEATURES,
    LOCATION,
    TARGET,
    add_location,
    check_location_options,
    housing_raw,
)

NAME = "housing_sim"
EMBEDDED = True
SUMMARY = ("Simulated Bangalore-like housing prices, 38 features (2 continuous + 36 binary); "
           "location='onehot' adds a one-hot Location group")

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


#: default number of simulated localities (``location="onehot"``)
N_LOCATIONS = 30
LOCATION_SD = 0.25


def simulate(n_samples: int = 1951, *, seed: int = 0, noise: float = 0.28,
             n_locations: int | None = None) -> pd.DataFrame:
    """Simulate ``n_samples`` houses with the columns of ``Bangalore.csv`` (without Location
    unless ``n_locations`` is given).

    Parameters
    ----------
    n_samples : int
        Number of rows (default 1,951, the complete rows of the real file).
    seed : int
        Seed (same seed, same rows).
    noise : float
        Standard deviation of the log-price noise.
    n_locations : int, optional
        Also simulate a ``Location`` column with this many levels and its effect on the price
        (own random stream: the other columns but Price are unchanged).

    Returns
    -------
    pandas.DataFrame
        Price (INR), Area, No. of Bedrooms and the 36 amenity columns (0/1) (and ``Location``).
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
    loc = None
    if n_locations is not None:
        loc, effect = _simulate_location(q, int(n_locations), seed)
        logp = logp + effect
    price = np.round(np.exp(logp), -3)
    data = {TARGET: price, "Area": area, "No. of Bedrooms": beds, **cols}
    if loc is None:
        return pd.DataFrame(data, columns=[TARGET] + FEATURES)
    data[LOCATION] = loc
    return pd.DataFrame(data, columns=[TARGET] + FEATURES + [LOCATION])


def _simulate_location(q: np.ndarray, n_locations: int, seed: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Locality of each house (Zipf-like frequencies, better localities for higher quality q) and
    its effect on log price; a random stream of its own."""
    if isinstance(n_locations, bool) or n_locations < 2:
        raise ValueError(f"recipe {NAME!r}: option n_locations must be an integer >= 2; got "
                         f"{n_locations!r}.")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 6207, 302]))
    K = n_locations
    effect = np.sort(rng.normal(0.0, LOCATION_SD, K))  # level k's effect, increasing in k
    freq = 1.0 / np.arange(1, K + 1) ** 0.8
    rank = rng.permutation(K)                         # which localities are the common ones
    p = freq[rank] / freq.sum()
    # tie to quality: the house's locality is drawn with weights tilted towards good localities
    # when q is high (a Gumbel-max draw with logits log p_k + 0.5 q z_k, z_k the standardised effect)
    z = (effect - effect.mean()) / effect.std()
    logits = np.log(p)[None, :] + 0.5 * q[:, None] * z[None, :]
    k = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)
    names = np.array([f"Locality {i + 1:02d}" for i in range(K)], dtype=object)
    return names[k], effect[k]


def build(*, seed: int = 0, n_samples: int = 1951, noise: float = 0.28,
          location: str = "drop", n_locations: int = N_LOCATIONS, min_count: int = 1) -> RawData:
    """Simulate houses and return them as the ``bangalore`` recipe would (38 features).

    ``location="onehot"`` adds the simulated ``Location`` (``n_locations`` levels, its effect in
    the price) as one-hot columns forming one feature group ``"Location"``; ``min_count`` pools
    the levels with fewer rows into ``Location=other`` (see the module docstring).
    """
    min_count = check_location_options(location, min_count, recipe=NAME)
    if isinstance(n_locations, bool) or not isinstance(n_locations, (int, np.integer)) \
            or n_locations < 2:
        raise ValueError(f"recipe {NAME!r}: option n_locations must be an integer >= 2; got "
                         f"{n_locations!r}.")
    if location == "drop" and n_locations != N_LOCATIONS:
        raise ValueError(f"recipe {NAME!r}: option n_locations applies to location='onehot' "
                         f"only; got n_locations={n_locations!r} with location='drop'.")
    keep_loc = location == "onehot"
    df = simulate(n_samples, seed=seed, noise=noise,
                  n_locations=int(n_locations) if keep_loc else None)
    features = df[FEATURES].astype(np.float64)
    levels = {c: (0.0, 1.0) for c in AMENITIES}
    info = {"simulator": NAME, "n_samples": int(n_samples), "noise": float(noise),
            "location": location}
    groups = None
    loc_text = ""
    if keep_loc:
        features, groups, loc_info, entries = add_location(df, features, levels, min_count)
        info.update({"n_locations": int(n_locations), **entries})
        loc_text = (f"; Location ({loc_info['levels']} simulated localities, effect sd "
                    f"{LOCATION_SD:g} on log price) kept as {loc_info['columns']} one-hot 0/1 "
                    f"columns forming one feature group")
    desc = (
        f"Simulated Bangalore-like housing data ({n_samples} rows, seed {seed}): Area and No. of "
        f"Bedrooms (standardised) plus 36 correlated binary amenities (0/1); right-skewed price "
        f"with main effects and {len(INTERACTIONS)} interactions{loc_text}; target Price / 1e7 "
        f"INR."
    )
    return housing_raw(df, features, levels, description=desc, info=info, groups=groups)
