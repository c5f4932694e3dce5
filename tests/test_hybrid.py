"""Hybrid points: the rows between a target and its reference."""

from __future__ import annotations

import numpy as np
import pytest

from insdel.hybrids import hybrid


# -- hybrid(): options checked ---------------------------------------------------------------------
def test_hybrid_outer_must_be_a_bool():
    X = np.arange(6.0).reshape(2, 3)
    with pytest.raises(TypeError, match="outer must be True or False"):
        hybrid(X, np.zeros(3), [1, 2], outer="no")
    assert hybrid(X, np.zeros(3), [1, 2], outer=True).shape == (2, 2, 3)
