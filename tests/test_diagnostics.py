"""Diagnostics of pairings and their evaluations (paper Table 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from insdel.diagnostics import abc_correlation


# -- abc_correlation: one row per pair, method and mode --------------------------------------------
def test_abc_correlation_refuses_repeated_rows():
    rng = np.random.default_rng(0)
    one = pd.DataFrame({"pair": np.repeat(np.arange(4), 2), "method": "a",
                        "mode": ["insertion", "deletion"] * 4, "abc": rng.normal(size=8)})
    assert np.isfinite(abc_correlation(one)["a"])
    two = pd.concat([one, one.assign(abc=rng.normal(size=8))], ignore_index=True)
    with pytest.raises(ValueError, match="repeated"):
        abc_correlation(two)
