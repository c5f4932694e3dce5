"""insdel._validation: errors name the argument, the row and the feature.

The shared checks of insdel._validation: labelled columns matched by name, progress=."""


from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import insdel
from insdel import config as C
from insdel import policies
from insdel._validation import (
    check_bool,
    check_pairs,
    check_positive_int,
    check_progress,
    check_scalar,
)


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
        policies.build("one_to_one").pair(None, X)


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
# -- one vocabulary for scalar options (scikit-learn's check_scalar) ------------------------------
@pytest.mark.parametrize("bad", [True, np.True_, 2.0, 2.5, np.float64(3.0), "3", None, [3]])
def test_wrong_type_for_an_int_is_a_type_error_naming_the_argument(bad):
    """A bool is not an int, and a float (even 2.0) is never truncated nor taken as one."""
    with pytest.raises(TypeError, match=r"^n_steps must be an integer; got "):
        check_scalar(bad, "n_steps", int, min_val=1)
    with pytest.raises(TypeError, match=r"^n_steps must be an integer; got "):
        check_positive_int(bad, "n_steps")


@pytest.mark.parametrize("bad, bound", [(0, ">= 1"), (-3, ">= 1"), (np.int64(0), ">= 1")])
def test_int_out_of_range_is_a_value_error_naming_the_argument_and_the_bound(bad, bound):
    with pytest.raises(ValueError, match=rf"^n_steps must be an integer {bound}; got "):
        check_scalar(bad, "n_steps", int, min_val=1)
    with pytest.raises(ValueError, match=rf"^n_steps must be an integer {bound}; got "):
        check_positive_int(bad, "n_steps")


def test_ints_come_back_as_python_ints():
    out = check_scalar(np.int32(7), "seed", int, min_val=0)
    assert out == 7 and type(out) is int
    assert type(check_positive_int(np.uint8(0), "seed", minimum=0)) is int


def test_float_options_take_ints_but_not_bools_and_name_their_range():
    assert check_scalar(2, "alpha", float) == 2.0 and type(check_scalar(2, "alpha", float)) is float
    with pytest.raises(TypeError, match=r"alpha must be a number; got True \(bool\)"):
        check_scalar(True, "alpha", float)
    with pytest.raises(TypeError, match="alpha must be a number"):
        check_scalar("0.5", "alpha", float)
    with pytest.raises(ValueError, match=r"^alpha must be a number > 0; got 0\.$"):
        check_scalar(0, "alpha", float, min_val=0.0, include_boundaries="neither")
    with pytest.raises(ValueError, match=r"^q must be a number in \(0, 1\]; got 1\.5\.$"):
        check_scalar(1.5, "q", float, min_val=0.0, max_val=1.0, include_boundaries="right")
    with pytest.raises(ValueError, match=r"^q must be a number < 1; got 1\.$"):
        check_scalar(1, "q", float, max_val=1.0, include_boundaries="left")
    with pytest.raises(ValueError, match="alpha must be a finite number"):
        check_scalar(float("nan"), "alpha", float, min_val=0.0, finite=True)
    assert check_scalar(float("inf"), "alpha", float, min_val=0.0) == float("inf")  # finite=False


def test_bool_options_refuse_truthy_values_with_a_type_error():
    assert check_bool(np.False_, "abs") is False and check_bool(True, "abs") is True
    for bad in (0, 1, "no", None):
        with pytest.raises(TypeError, match=r"^abs must be True or False; got "):
            check_bool(bad, "abs")
    assert check_progress(None) is None and check_progress(np.True_) is True
    with pytest.raises(TypeError, match=r"^progress must be None, True or False; got 0 \(int\)"):
        check_progress(0)


def test_public_options_follow_the_same_semantics():
    """The shared helper is what the public functions use: a float size is a TypeError, a size
    below its bound a ValueError, both naming the argument."""
    f = lambda Z: Z.sum(1)  # noqa: E731
    with pytest.raises(TypeError, match="batch_size must be an integer"):
        insdel.as_model(f, batch_size=8.0)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1; got 0"):
        insdel.as_model(f, batch_size=0)
    X, R = np.ones((2, 3)), np.zeros((2, 3))
    with pytest.raises(TypeError, match="seed must be an integer"):
        insdel.evaluate(f, X, R, {"a": np.ones((2, 3))}, seed=1.5)
    with pytest.raises(ValueError, match="seed must be an integer >= 0; got -1"):
        insdel.evaluate(f, X, R, {"a": np.ones((2, 3))}, seed=-1)


_CFG = {"data": {"recipe": "dielectron_sim"}, "model": {"preset": "quick_cern"}}


@pytest.mark.parametrize("over, message", [
    ({"targets": {"n": 1}}, r"targets\.n must be an integer >= 2; got 1\."),
    ({"seed": -1}, r"seed must be an integer >= 0; got -1\."),
    ({"figures": {"dpi": 5}}, r"figures\.dpi must be an integer >= 10; got 5\."),
    ({"decomposition": {"max_d": 0}}, r"decomposition\.max_d must be an integer >= 1; got 0\."),
    ({"compute": {"backend": "dask", "threads_per_worker": 0}},
     r"compute\.threads_per_worker must be an integer >= 1; got 0\."),
    ({"compute": {"backend": "dask", "connect_timeout": 0}},
     r"compute\.connect_timeout must be a number > 0; got 0\."),
    ({"roar": {"replicates": 0}}, r"roar\.replicates must be an integer >= 1; got 0\."),
])
def test_a_config_value_out_of_its_leaf_range_names_the_key_and_the_bound(over, message):
    with pytest.raises(C.ConfigError, match=r"<dict>: " + message):
        C.load({**_CFG, **over})


def test_a_quick_override_out_of_range_names_its_key_under_quick():
    with pytest.raises(C.ConfigError, match=r"quick\.targets\.n must be an integer >= 2; got 0"):
        C.load({**_CFG, "quick": {"targets": {"n": 0}}}, quick=True)


def test_every_numeric_leaf_default_is_in_its_range():
    """The ranges live in the schema's leaves; each default passes its own leaf's check."""
    def leaves(schema, prefix=""):
        for k, spec in schema.items():
            if isinstance(spec, dict):
                yield from leaves(spec, f"{prefix}{k}.")
            elif isinstance(spec, tuple) and len(spec) > 2:
                yield f"{prefix}{k}", spec
    found = list(leaves(C.SCHEMA))
    assert {"seed", "targets.n", "compute.connect_timeout", "roar.replicates"} <= {k for k, _ in found}
    for key, (types, default, bounds) in found:
        if default is not None:
            check_scalar(default, key, float if float in types else int, **bounds)
