"""scikit-learn's diabetes data (Efron et al. 2004): a small real data set shipped with an installed
package, so that tests run on data nobody here wrote.

442 patients, 10 baseline variables (age, sex, body-mass index, blood pressure and six serum
measurements s1..s6), target a quantitative measure of disease progression one year later. The raw
(unscaled) version is used: ``sex`` takes the two values 1 and 2 and is treated as a binary feature
with those raw levels. All 10 features are z-scored (fitted on the training split); the target is
divided by 100.
"""

from __future__ import annotations

import numpy as np

from ._base import RawData

NAME = "diabetes"
EMBEDDED = True
SUMMARY = "scikit-learn's diabetes data (442 patients, 10 features, 'sex' binary 1/2)"

FEATURES = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
TARGET = "progression"
TARGET_SCALE = 100.0


def build(*, seed: int = 0) -> RawData:
    """Load the raw diabetes data from scikit-learn.

    Parameters
    ----------
    seed : int
        Unused (the data are fixed); accepted so that every recipe takes the same options.
    """
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes(as_frame=True, scaled=False)
    X = bunch.data.astype(np.float64)
    if list(X.columns) != FEATURES:  # pragma: no cover - scikit-learn changed the data
        raise ValueError(f"recipe {NAME!r}: unexpected columns {list(X.columns)}.")
    levels = sorted(np.unique(X["sex"]).tolist())
    if len(levels) != 2:  # pragma: no cover
        raise ValueError(f"recipe {NAME!r}: 'sex' should have two levels; found {levels}.")
    return RawData(
        features=X,
        target=bunch.target.to_numpy(dtype=np.float64),
        target_name=TARGET,
        binary_levels={"sex": (float(levels[0]), float(levels[1]))},
        standardize=list(FEATURES),
        target_scale=TARGET_SCALE,
        description=(
            "scikit-learn's diabetes data (Efron et al. 2004), raw units: 442 patients, 10 "
            "features z-scored, 'sex' binary with raw levels 1/2; target disease progression / 100."
        ),
        info={"source": "sklearn.datasets.load_diabetes(scaled=False)", "n_kept": len(X)},
    )
