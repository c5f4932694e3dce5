"""Verdicts a reader can trust, from a block's per-unit scores (no model evaluations).

A **block** is a (P, K) matrix of per-pair scores of K methods on the same P pairs (higher is
better; one data set x policy x removal x metric or mode), with optional ``clusters`` (pairs of
one unit, :func:`insdel._stats.unit_ids`): every procedure averages pairs per unit first and works
over the G independent units (docs/verdicts.md).

- :func:`compare` -> :class:`Comparisons`: every pairwise paired t test, Holm's adjustment, the
  resampling max-T (sign flips or bootstrap of units), effect sizes d_z, unadjusted and
  simultaneous intervals; ``.table()``, ``.verdicts()``.
- :func:`rank_intervals` -> :class:`RankIntervals`: simultaneous rank intervals and top-k sets
  (Neuhof & Benjamini, 2023); ``.verdicts()``.
- :func:`equivalence` -> :class:`Equivalence`: TOST within ±delta (ABC units or a fraction of
  the spread); ``.verdict()``.
- :func:`plan` -> :class:`Plan`: the units and pairs needed to tell two methods apart;
  :func:`simulated_power` / :func:`simulated_units` check it by simulation.
- :func:`variance_components`: where a mean's variance comes from (pairs, reference draws,
  removal draws, seeds).
- :func:`block_verdicts` (from scores) / :func:`verdict_lines` (from comparisons): the Markdown
  lines a summary or report prints beside a ranking.
"""

from ._block import Block, as_block, unit_means
from .equivalence import Equivalence, equivalence
from .paired import ADJUSTMENTS, RESAMPLING, Comparisons, compare, holm
from .planner import Plan, plan, power_of, simulated_power, simulated_units, units_needed
from .ranks import RankIntervals, rank_intervals, surely_better
from .text import block_verdicts, verdict_lines
from .variance import FACTORS, VarianceComponents, variance_components

__all__ = ["Block", "as_block", "unit_means", "Comparisons", "compare", "holm", "ADJUSTMENTS",
           "RESAMPLING", "RankIntervals", "rank_intervals", "surely_better", "Equivalence",
           "equivalence", "Plan", "plan", "power_of", "units_needed", "simulated_power",
           "simulated_units", "VarianceComponents", "variance_components", "FACTORS",
           "block_verdicts", "verdict_lines"]
