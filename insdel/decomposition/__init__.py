"""Anchored decomposition of a pair (x, r): exact AUC/ABC algebra, Shapley values, best ordering.

Implements paper §3.2–3.4 and Appendix B (conventions: *Anchored decomposition*). For a pair
(x, r) let ``g(u) = f(hybrid(x, r, u))`` for the subsets u of the features (index = bitmask, bit j =
feature j taken from the target x). The anchored decomposition with anchor r is the Möbius transform

    Delta_u = sum_{v ⊆ u} (-1)^{|u| - |v|} g(v),   Delta_∅ = f(r),   sum_u Delta_u = f(x),

(the Harsanyi dividends of the game g). Everything else follows from the Delta_u alone:

* Theorem 1: insertion ``AUC = sum_u (n - ceil(u) + 1) Delta_u``;
* Appendix B.1: deletion ``AUC' = sum_u floor(u) Delta_u``;
* §3.3 with Proposition 1: ``E[ABC] = (n + 1)/2 sum_{u≠∅} (1 - |u|)/(|u| + 1) Delta_u`` under a
  uniformly random ordering, and ``E[ABC + ABC'] = 0``;
* exact baseline Shapley values ``phi_j = sum_{u ∋ j} Delta_u / |u|`` (what exact Kernel SHAP with
  the single background point r computes; the paper's "exact KS", 2^16 evaluations per CERN pair);
* the best achievable ordering (insdel's addition): the chain through the subset lattice with the
  largest (insertion) or smallest (deletion) sum of g, by dynamic programming.

**Everything works in each pair's differing subspace** D = {j : x_j != r_j}. A hybrid depends on u
only through u ∩ D, so Delta_u = 0 unless u ⊆ D and a feature outside D has Shapley value 0: a pair
costs 2^|D| model evaluations and 2^|D| stored values, whatever n is. The limit ``max_d`` is on |D|.
Orderings stay orderings of all n features (a feature outside D keeps its position in ceil/floor);
the full 2^n layout of g and Delta is available for n <= 22 (:meth:`BatchDecomposition.full_values`,
:meth:`~BatchDecomposition.full_delta`). The hybrids of many pairs are built by a numba kernel and
evaluated through :func:`insdel.as_model` in large batches; the transforms, Theorem 1, the Shapley
accumulation and the best-path search are ragged numba kernels over all pairs at once
(:mod:`insdel._decomposition_kernels`).

Modules: ``_subspace`` (each pair's D, limits, the hybrids' evaluation), ``algebra`` (Proposition 1,
Möbius and zeta transforms), ``batch`` (:class:`BatchDecomposition`, :class:`AnchoredDecomposition`
and their constructors), ``shapley`` (exact Shapley values streamed, serially or on Dask),
``surrogate`` (the order-k surrogate curves of Theorem 1, pairwise effects), ``interaction_orders``
(interaction-greedy and group orderings, the Shapley-to-best gap they close); every
public name is importable from ``insdel.decomposition``.
"""

from __future__ import annotations

from ._subspace import DEFAULT_MAX_D, FULL_LAYOUT_MAX_N
from .algebra import Interaction, expected_last_position, mobius, zeta
from .batch import (
    AnchoredDecomposition,
    BatchDecomposition,
    anchored_decomposition,
    batch_decomposition,
)
from .interaction_orders import (
    ORDERING_NAMES,
    InteractionOrderings,
    bound_groups,
    gap_closed,
    greedy_orders,
    group_orders,
    interaction_orderings,
    order_scores,
    orderings_of_decomposition,
)
from .shapley import sampled_shapley, shapley_values, subspace_shapley
from .surrogate import SurrogateCurves, pairwise_effects, surrogate_curves, truncated_values

__all__ = [
    "DEFAULT_MAX_D", "FULL_LAYOUT_MAX_N", "AnchoredDecomposition", "BatchDecomposition",
    "Interaction", "anchored_decomposition", "batch_decomposition", "shapley_values",
    "subspace_shapley", "sampled_shapley", "expected_last_position", "mobius", "zeta",
    "ORDERING_NAMES", "InteractionOrderings", "SurrogateCurves", "bound_groups", "gap_closed",
    "greedy_orders", "group_orders", "interaction_orderings", "order_scores",
    "orderings_of_decomposition", "pairwise_effects", "surrogate_curves", "truncated_values",
]
