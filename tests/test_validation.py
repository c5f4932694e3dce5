"""insdel._validation: errors name the argument, the row and the feature.

The shared checks of insdel._validation: labelled columns matched by name, progress=."""


from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import insdel
from insdel import policies
from insdel._validation import check_pairs, check_progress


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


# -- align_attributions / align_columns: integer column names --------------------------------------
def test_integer_labelled_attributions_are_matched_by_name():
    """A DataFrame X with columns 0, 1, 2 and attributions labelled 2, 1, 0 are matched by name
    (compared as text, looked up by the original labels: no KeyError)."""

    from insdel._validation import align_attributions, align_columns

    A = pd.DataFrame(np.arange(6.0).reshape(2, 3), columns=[2, 0, 1])
    got = align_attributions("A", A, ["0", "1", "2"])
    assert list(got.columns) == [0, 1, 2]
    np.testing.assert_array_equal(got.to_numpy(), A[[0, 1, 2]].to_numpy())
    s = pd.Series([1.0, 2.0, 3.0], index=["b", "c", "a"])
    like = pd.DataFrame(np.zeros((1, 3)), columns=["a", "b", "c"])
    assert align_columns("R", s, like).tolist() == [3.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="repeated names"):
        align_attributions("A", pd.DataFrame(np.zeros((1, 2)), columns=[0, "0"]), ["0", "1"])
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    X = pd.DataFrame(np.random.default_rng(0).normal(size=(5, 3)))
    A = insdel.attribute(net, X.to_numpy(), np.zeros(3), "input_x_gradient")
    named = insdel.evaluate(net, X, np.zeros(3), {"m": pd.DataFrame(A[:, ::-1], columns=[2, 1, 0])})
    plain = insdel.evaluate(net, X, np.zeros(3), {"m": A})
    np.testing.assert_allclose(named.summary()["mean"], plain.summary()["mean"])


# -- check_progress --------------------------------------------------------------------------------
def test_check_progress():
    assert check_progress(None) is None
    assert check_progress(True) is True and check_progress(False) is False
    assert check_progress(np.True_) is True and check_progress(np.False_) is False
    with pytest.raises(TypeError, match=r"progress must be None, True or False; got 'no' \(str\)"):
        check_progress("no")
