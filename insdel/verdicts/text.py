"""The verdict lines printed beside a ranking: one call from a block to Markdown."""

from __future__ import annotations

from collections.abc import Sequence

from numpy.typing import ArrayLike

from .equivalence import equivalence
from .paired import Comparisons, compare
from .ranks import rank_intervals

__all__ = ["block_verdicts", "verdict_lines", "EQUIVALENCE_PAIRS", "DEFAULT_MARGIN"]

#: The pairs tested for equivalence when both are in a block: the paper's "integrated gradients
#: is nearly as good as Kernel SHAP" (and exact Shapley, which Kernel SHAP estimates).
EQUIVALENCE_PAIRS = (("integrated_gradients", "kernel_shap"),
                     ("integrated_gradients", "exact_shapley"))
#: The default equivalence margin: 0.1 of the spread of ABC (relative, docs/verdicts.md).
DEFAULT_MARGIN = 0.1


def block_verdicts(scores, methods: Sequence[str] | None = None, *,
                   clusters: ArrayLike | None = None, level: float = 0.95,
                   adjust: str = "holm", equivalence_pairs: Sequence[tuple[str, str]] | None
                   = EQUIVALENCE_PAIRS, margin: float = DEFAULT_MARGIN, relative: bool = True,
                   n_resamples: int = 2000, seed: int = 0, higher_is_better: bool = True,
                   title: str | None = None) -> str:
    """Markdown verdict lines for one block: the orderings that are significant (``adjust``:
    "holm" or "maxt"), the simultaneous rank intervals (max-T) and, for each pair of
    ``equivalence_pairs`` present in the block, the TOST verdict at ``margin`` (relative: a
    fraction of the spread of ABC). Arguments as :func:`insdel.verdicts.compare`; ``title``: a
    bold lead-in. A block with fewer than 2 units or 2 methods gets one line saying so."""
    lead = f"**{title}.** " if title else ""
    try:
        comp = compare(scores, methods, clusters=clusters, level=level,
                       n_resamples=n_resamples, seed=seed, higher_is_better=higher_is_better)
    except ValueError as exc:
        return f"- {lead}No verdicts: {exc}"
    return verdict_lines(comp, scores=scores, clusters=clusters, adjust=adjust,
                         equivalence_pairs=equivalence_pairs, margin=margin, relative=relative,
                         title=title)


def verdict_lines(comparisons: Comparisons, *, scores=None, clusters: ArrayLike | None = None,
                  adjust: str = "holm", equivalence_pairs: Sequence[tuple[str, str]] | None
                  = EQUIVALENCE_PAIRS, margin: float = DEFAULT_MARGIN, relative: bool = True,
                  title: str | None = None) -> str:
    """:func:`block_verdicts` from comparisons already made; the equivalence lines need the
    block's ``scores`` (and ``clusters``) as :func:`compare` read them (none without)."""
    comp = comparisons
    lead = f"**{title}.** " if title else ""
    level = comp.level
    sig = [v for v in comp.verdicts(adjust) if " > " in v]
    tied = [v for v in comp.verdicts(adjust) if " > " not in v]
    ranks = rank_intervals(comp)  # max-T simultaneous intervals
    name = {"holm": "Holm-adjusted paired t tests", "maxt": "max-T", "none": "unadjusted"}
    lines = [f"- {lead}Significant orderings ({name.get(adjust, adjust)}, α = "
             f"{1 - level:g}, {len(comp.pairs)} comparisons over {comp.n_units} units): "
             + ("; ".join(sig) if sig else "none") + "."]
    if tied:
        lines.append("- Cannot be told apart: " + "; ".join(
            v.replace(" cannot be told apart", "") for v in tied) + ".")
    lines.append(f"- Ranks ({100 * level:g} % simultaneous intervals, Neuhof & Benjamini): "
                 + "; ".join(ranks.verdicts()) + ".")
    for a, b in (equivalence_pairs or ()) if scores is not None else ():
        if a in comp.methods and b in comp.methods:
            eq = equivalence(scores, a, b, margin=margin, methods=comp.methods,
                             clusters=clusters, relative=relative, alpha=1 - level)
            lines.append(f"- Equivalence (TOST): {eq.verdict()}.")
    return "\n".join(lines)
