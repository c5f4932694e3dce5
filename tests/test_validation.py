"""insdel._validation: errors name the argument, the row and the feature."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import insdel
from insdel import policies
from insdel._validation import check_pairs


def test_nan_in_a_dataframe_is_named_by_its_column():
    """NaN in a DataFrame input was named by the column's position alone ("feature(s) 2"); the
    message names the column too."""
    X = pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["age", "sex", "bmi"])
    X.loc[2, "bmi"] = np.nan
    with pytest.raises(ValueError, match=r"X contains non-finite values \(NaN\) in 1 row\(s\): 2; "
                                         r"row 2 at feature\(s\) 2 \('bmi'\)"):
        check_pairs(X, np.zeros(3))
    with pytest.raises(ValueError, match=r"feature\(s\) 2 \('bmi'\)"):
        insdel.evaluate(lambda Z: Z.sum(1), X, np.zeros(3), {"a": np.ones((4, 3))})
    with pytest.raises(ValueError, match=r"X_pool contains .* feature\(s\) 2 \('bmi'\)"):
        policies.get("one_to_one").pair(None, X)
