"""Test-local removals shared by the removal and attribution tests: a constant fill and a
draw of pool rows per target (common random numbers)."""

from __future__ import annotations

import numpy as np

from insdel import removal as RM


class MeanImpute(RM.SampledRemoval):
    """Removed features set to a constant (a deterministic sampled removal, M = 1)."""

    name = "mean_impute"

    def __init__(self, mu):
        self.mu = np.asarray(mu, dtype=np.float64)

    def sample(self, X, keep, targets):
        return np.where(keep, X, self.mu)[:, None, :]


class Shuffled(RM.SampledRemoval):
    """Removed features from M rows drawn per target (common random numbers), for the sampled
    route's bookkeeping: v depends on the coalition through the kept features only."""

    name = "shuffled"

    def __init__(self, pool, n_draws=3, seed=0):
        self.pool, self.n_draws, self.seed = np.asarray(pool, float), n_draws, seed

    def sample(self, X, keep, targets):
        out = np.empty((len(X), self.n_draws, X.shape[1]))
        for i, t in enumerate(targets):
            rows = self.pool[RM.target_rng(self.seed, int(t), "shuffled").integers(
                len(self.pool), size=self.n_draws)]
            out[i] = np.where(keep[i], X[i], rows)
        return out
