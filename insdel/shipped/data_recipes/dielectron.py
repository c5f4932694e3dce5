"""CERN dielectron events (paper §5.2, Appendix A.4), from a user's copy of ``dielectron.csv``.

Source: CERN Open Data record 304, "Events with two electrons from 2010" (McCauley 2014, CC0),
file ``dielectron.csv``: about 100,000 events with 2 <= M <= 110 GeV and 19 columns Run, Event,
E1, px1, py1, pz1, pt1, eta1, phi1, Q1, E2, px2, py2, pz2, pt2, eta2, phi2, Q2, M (the real header
spells ``px1 `` with a trailing blank; blanks around names are ignored).

Preprocessing, as in the paper: Run and Event are dropped; rows with missing values are dropped
(the count is reported); the target is the invariant mass M (GeV); the 16 other columns are the
features and are all z-scored (fitted on the training split). The charges Q1 and Q2 are binary with
raw levels -1 and +1, recorded so that integrated gradients can treat them as binary (paper §4).
"""

from __future__ import annotations

from ._base import RawData, check_binary, read_csv, sha256_file

NAME = "dielectron"
EMBEDDED = False
SOURCE = "CERN Open Data record 304, dielectron.csv"
SUMMARY = "CERN dielectron events (2010), 16 features, target M (GeV); needs path="

ID_COLUMNS = ["Run", "Event"]
TARGET = "M"
#: The 16 features in model order.
FEATURES = ["E1", "px1", "py1", "pz1", "pt1", "eta1", "phi1", "Q1",
            "E2", "px2", "py2", "pz2", "pt2", "eta2", "phi2", "Q2"]
#: All 19 columns of the public file (names stripped).
COLUMNS = ID_COLUMNS + FEATURES + [TARGET]
CHARGES = ("Q1", "Q2")


def build(*, path=None, seed: int = 0) -> RawData:
    """Read and clean a copy of ``dielectron.csv``.

    Parameters
    ----------
    path : path-like
        The user's copy of the CERN file (or a file written by
        ``insdel.shipped.data_recipes.dielectron_sim.write_csv``).
    seed : int
        Unused (the file is fixed); accepted so that every recipe takes the same options.

    Returns
    -------
    RawData
    """
    df = read_csv(path, recipe=NAME, source=SOURCE, required=COLUMNS,
                  numeric=FEATURES + [TARGET])
    n_read = len(df)
    levels = {c: (-1.0, 1.0) for c in CHARGES}
    check_binary(df, levels, recipe=NAME, where=str(path))
    cols = FEATURES + [TARGET]
    complete = df[cols].notna().all(axis=1).to_numpy()
    df = df.loc[complete, cols].reset_index(drop=True)
    n_drop = n_read - len(df)
    if len(df) == 0:
        raise ValueError(f"recipe {NAME!r}: {path} has no complete rows.")
    desc = (
        f"CERN dielectron events from {SOURCE}: {n_read} rows read, {n_drop} with missing values "
        f"dropped, {len(df)} kept; Run and Event dropped; target M (GeV); 16 features z-scored; "
        f"Q1, Q2 binary with raw levels -1/+1."
    )
    return RawData(
        features=df[FEATURES].astype("float64"),
        target=df[TARGET].to_numpy(dtype="float64"),
        target_name=TARGET,
        binary_levels=levels,
        standardize=list(FEATURES),
        target_scale=None,
        description=desc,
        info={"source": str(path), "sha256": sha256_file(path), "n_read": n_read,
              "n_dropped_missing": n_drop, "n_kept": len(df)},
    )
