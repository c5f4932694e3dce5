"""Agreement with a known attribution (OpenXAI's ground-truth faithfulness; Krishna et al. 2022,
*The Disagreement Problem in Explainable Machine Learning*; Agarwal et al., OpenXAI, Appendix A).

Each metric compares the attributions ``A`` of a pair with a ground truth ``G`` (``ground_truth=``,
per pair, e.g. the exact Shapley values of :mod:`insdel.decomposition` or a linear model's
``w * (x - r)``); no model calls. As OpenXAI, units are ranked by ``|a|`` (rank 1 the largest;
dense ranks, so tied units share a rank) and the top k are the first k of the ranking (ties by
index):

- FA: ``|top_k(A) ∩ top_k(G)| / k``;
- RA: positions i < k where both rankings hold the same unit with the same rank, ``/ k``;
- SA: units in both top-k sets with the same sign, ``/ k``;
- SRA: positions where both hold the same unit with the same rank and sign, ``/ k``;
- RC: Spearman's correlation of the ranks (Pearson on dense ranks) over all units;
- PRA: the fraction of unit pairs ``{i, j}`` ordered the same way (``rank_i < rank_j``).

OpenXAI reports FA, RA, SA and SRA as the area over all k (``k="auc"`` here: the mean over
k = 1..m) and RC and PRA over all features.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from .base import Metric, MetricContext, pearson_rows, rank_of, top_units
from .openxai_family import check_k, resolve_k

__all__ = ["FeatureAgreement", "RankAgreement", "SignAgreement", "SignedRankAgreement",
           "RankCorrelation", "PairwiseRankAgreement"]


def _dense_ranks(A: np.ndarray) -> np.ndarray:
    return rankdata(-np.abs(A), method="dense", axis=-1)


def _ground_truth(ctx: MetricContext, A: np.ndarray, ground_truth) -> np.ndarray:
    if ground_truth is None:
        raise ValueError("ground-truth metrics need ground_truth= (B, n) or per group (B, m).")
    G = ctx.unit_attributions(ground_truth, name="ground_truth")
    if G.shape != A.shape:
        raise ValueError(f"ground_truth has shape {G.shape}; the attributions {A.shape}.")
    return G


class _GroundTruthMetric(Metric):
    family = "openxai"
    needs_ground_truth = True
    higher_is_better = True


class _TopKAgreement(_GroundTruthMetric):
    use_rank = False
    use_sign = False
    positional = False

    def __init__(self, *, k: int | float | str = 0.25):
        self.k = check_k(k)

    def compute(self, ctx: MetricContext, A: np.ndarray, *, ground_truth=None,
                **kwargs) -> np.ndarray:
        G = _ground_truth(ctx, A, ground_truth)
        ks = resolve_k(self.k, ctx.m)
        oa, og = rank_of(A, order="absolute"), rank_of(G, order="absolute")
        if self.positional:
            same = oa == og  # (B, m): the same unit at position i
            if self.use_rank:
                ra = np.take_along_axis(_dense_ranks(A), oa, axis=1)
                rg = np.take_along_axis(_dense_ranks(G), og, axis=1)
                same &= ra == rg
            if self.use_sign:
                same &= (np.take_along_axis(np.sign(A), oa, axis=1)
                         == np.take_along_axis(np.sign(G), og, axis=1))
            hits = np.cumsum(same, axis=1)[:, ks - 1]  # (B, K): positions < k
        else:
            both = top_units(oa, ks) & top_units(og, ks)  # (B, K, m)
            if self.use_sign:
                both &= (np.sign(A) == np.sign(G))[:, None, :]
            hits = both.sum(axis=-1)
        return (hits / ks[None, :]).mean(axis=1)


class FeatureAgreement(_TopKAgreement):
    """Feature agreement (FA): the share of the top-k units common to A and the ground truth.

    Source: OpenXAI (Agarwal et al. 2022) App. A; Krishna et al. (2022). Ranked by ``|a|``.

    Parameters
    ----------
    k : int, float or "auc", default 0.25
        Top-k size: an int (capped at m), a fraction q (``ceil(q m)``), or ``"auc"`` (the mean
        over k = 1..m, OpenXAI's reported area per unit).
    """

    name = "feature_agreement"
    source = "OpenXAI (Agarwal et al. 2022) App. A (FA); Krishna et al. (2022)"


class RankAgreement(_TopKAgreement):
    """Rank agreement (RA): the share of top-k positions holding the same unit (with the same
    dense rank) in A and the ground truth. Options as :class:`FeatureAgreement`."""

    name = "rank_agreement"
    source = "OpenXAI (Agarwal et al. 2022) App. A (RA); Krishna et al. (2022)"
    positional, use_rank = True, True


class SignAgreement(_TopKAgreement):
    """Sign agreement (SA): the share of top-k units common to both with the same sign. Options as
    :class:`FeatureAgreement`."""

    name = "sign_agreement"
    source = "OpenXAI (Agarwal et al. 2022) App. A (SA); Krishna et al. (2022)"
    use_sign = True


class SignedRankAgreement(_TopKAgreement):
    """Signed rank agreement (SRA): the share of top-k positions holding the same unit with the
    same rank and sign. Options as :class:`FeatureAgreement`."""

    name = "signed_rank_agreement"
    source = "OpenXAI (Agarwal et al. 2022) App. A (SRA); Krishna et al. (2022)"
    positional, use_rank, use_sign = True, True, True


class RankCorrelation(_GroundTruthMetric):
    """Rank correlation (RC): Spearman's correlation between the ``|a|`` ranks of A and of the
    ground truth, over all units (OpenXAI: Pearson on dense ranks). NaN where a ranking is
    constant.

    Source: OpenXAI (Agarwal et al. 2022) App. A (RC); Krishna et al. (2022).
    """

    name = "rank_correlation"
    source = "OpenXAI (Agarwal et al. 2022) App. A (RC); Krishna et al. (2022)"

    def compute(self, ctx: MetricContext, A: np.ndarray, *, ground_truth=None,
                **kwargs) -> np.ndarray:
        G = _ground_truth(ctx, A, ground_truth)
        return pearson_rows(_dense_ranks(A).astype(float), _dense_ranks(G).astype(float))


class PairwiseRankAgreement(_GroundTruthMetric):
    """Pairwise rank agreement (PRA): the fraction of unit pairs ``{i, j}`` whose relative order
    (``rank_i < rank_j`` by ``|a|``, dense ranks) is the same in A and the ground truth. NaN for
    m < 2.

    Source: OpenXAI (Agarwal et al. 2022) App. A (PRA); Krishna et al. (2022).
    """

    name = "pairwise_rank_agreement"
    source = "OpenXAI (Agarwal et al. 2022) App. A (PRA); Krishna et al. (2022)"

    def compute(self, ctx: MetricContext, A: np.ndarray, *, ground_truth=None,
                **kwargs) -> np.ndarray:
        G = _ground_truth(ctx, A, ground_truth)
        m = A.shape[1]
        if m < 2:
            return np.full(A.shape[0], np.nan)
        ra, rg = _dense_ranks(A), _dense_ranks(G)
        i, j = np.triu_indices(m, k=1)
        out = np.empty(A.shape[0])
        step = max(1, 10_000_000 // i.size)  # pairs of rows at a time: bounded memory
        for s in range(0, A.shape[0], step):
            a, g = ra[s:s + step], rg[s:s + step]
            out[s:s + step] = ((a[:, i] < a[:, j]) == (g[:, i] < g[:, j])).mean(axis=1)
        return out
