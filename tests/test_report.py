"""The run's Markdown tables (insdel.report)."""

from __future__ import annotations

import numpy as np

import insdel
from insdel.report import sampled_vs_exact, sampled_vs_exact_table


def _f(Z):
    return Z[:, 0] * Z[:, 1] + Z[:, 2]


def test_sampled_vs_exact_table_says_when_kernel_shap_was_exact():
    """Kernel SHAP that enumerated every coalition equals exact Shapley: one line says so instead
    of a table of zero differences; a sampled one gets the table."""
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    exact = insdel.attribute(_f, X, R, "exact_shapley")
    enumerated = insdel.attribute(_f, X, R, "kernel_shap", n_samples=64)  # 2^4 <= 64: exact road
    np.testing.assert_array_equal(enumerated, exact)
    ev = insdel.evaluate(_f, X, R, {"kernel_shap": enumerated, "exact_shapley": exact},
                         n_random=0)
    text = sampled_vs_exact_table(sampled_vs_exact(ev, enumerated, exact))
    assert "enumerated every coalition" in text and "| Policy |" not in text
    sampled = insdel.attribute(_f, X, R, "kernel_shap", n_samples=8, exact="never", seed=1)
    ev = insdel.evaluate(_f, X, R, {"kernel_shap": sampled, "exact_shapley": exact}, n_random=0)
    text = sampled_vs_exact_table(sampled_vs_exact(ev, sampled, exact))
    assert "| Policy | Mode |" in text and "enumerated" not in text
