"""How many pairs a study needs, from a finished run as its pilot: ``insdel plan RUN``.

:func:`plan_run` reads one block of a finished run (a policy's per-pair ABC of one mode, or a
further removal's, or a ``[metrics]`` metric, as :func:`insdel.leaderboard_runs.read_run` reads
them, with the pairs' independent units) and hands it to :func:`insdel.verdicts.plan`: the units
(and pairs) whose paired t test tells two methods apart at a true difference ``margin`` with
the given power. No model evaluation (docs/verdicts.md, "How many pairs a study needs").
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._validation import check_bool, check_positive_int, check_scalar
from .leaderboard_runs import read_run
from .verdicts import Plan, plan, unit_means

__all__ = ["RunPlan", "plan_run"]


@dataclass
class RunPlan:
    """:func:`plan_run`'s answer: the :class:`insdel.verdicts.Plan` and the block it read."""

    plan: Plan
    run: str
    policy: str
    metric: str
    methods: list
    margin: float
    relative: bool
    delta: float

    def text(self) -> str:
        """The plan in plain words, with the block it was planned from."""
        what = (f"{self.margin:g} of the spread of the scores = {self.delta:.4g}" if self.relative
                else f"{self.delta:.4g}")
        return (f"Pilot: run {self.run}, policy {self.policy}, {self.metric} "
                f"({len(self.methods)} methods: {', '.join(self.methods)}); margin {what}.\n"
                + self.plan.text())


def plan_run(run: str | os.PathLike, a: str, b: str, *, margin: float,
             policy: str | None = None, metric: str = "insertion", relative: bool = False,
             power: float = 0.8, alpha: float = 0.05, all_pairs: bool = False,
             output: str | None = None) -> RunPlan:
    """The units and pairs needed to tell methods ``a`` and ``b`` apart, with a finished run as
    the pilot.

    Parameters
    ----------
    run : path
        A finished insertion/deletion run folder.
    a, b : str
        Two of its methods.
    margin : float
        The true difference to detect (> 0): in the scores' units, or with ``relative`` a
        fraction of their spread (sqrt((s_a^2 + s_b^2) / 2) of the unit means, as
        :func:`insdel.verdicts.equivalence` reads a relative margin).
    policy : str, optional
        The policy (default: the run's only one; an error when it has several).
    metric : str, default "insertion"
        ``"insertion"``, ``"deletion"``, ``"total"``, ``"insertion@<removal>"`` or a
        ``[metrics]`` metric; a lower-is-better metric is planned on its negation.
    relative : bool, default False
    power, alpha : float
    all_pairs : bool, default False
        Plan for all K (K - 1) / 2 comparisons of the block (tests at alpha / that number:
        Holm's worst case) instead of this one comparison.
    output : str, optional
        A run with ``model.outputs = H``: the output to plan on, ``"0"`` .. ``"H-1"`` or
        ``"weighted"`` (required there; its outputs are never pooled); None for a run of one
        output.

    Returns
    -------
    RunPlan

    Raises
    ------
    ValueError
        An unknown policy, metric or method (the error lists what the run has), a margin <= 0,
        fewer than 2 units.
    """
    margin = check_scalar(margin, "margin", float, min_val=0.0, include_boundaries="neither",
                          finite=True)
    relative = check_bool(relative, "relative")
    all_pairs = check_bool(all_pairs, "all_pairs")
    info = read_run(run)
    if info.outputs:
        if output is None or str(output) not in info.outputs:
            raise ValueError(f"output: run {info.path} has model.outputs = "
                             f"{len(info.outputs) - 1}; name one of {info.outputs}"
                             + ("" if output is None else f" (got {output!r})") + ".")
        info.abc = info.abc[info.abc["output"] == str(output)]
    elif output is not None:
        raise ValueError(f"output: run {info.path} has one output (no model.outputs); got "
                         f"output={output!r}.")
    pols = list(dict.fromkeys(info.abc["policy"]))
    if policy is None:
        if len(pols) != 1:
            raise ValueError(f"policy: run {info.path} has policies {pols}; name one.")
        policy = pols[0]
    if policy not in pols:
        raise ValueError(f"policy: run {info.path} has no policy {policy!r}; it has {pols}.")
    d = info.abc[info.abc["policy"] == policy]
    metrics = list(dict.fromkeys(d["metric"]))
    if metric not in metrics:
        raise ValueError(f"metric: policy {policy!r} of run {info.path} has no {metric!r}; it "
                         f"has {metrics}.")
    d = d[d["metric"] == metric]
    W = d.pivot_table(index="pair", columns="method", values="score", aggfunc="first",
                      sort=False)
    methods = [str(m) for m in W.columns]
    for name, m in (("a", a), ("b", b)):
        if m not in methods:
            raise ValueError(f"{name}: method {m!r} is not in {policy}/{metric}; it has "
                             f"{methods}.")
    W = W[[a, b]].dropna()
    sign = 1.0 if info.directions.get(metric, True) else -1.0
    clusters = d.groupby("pair")["cluster"].first().reindex(W.index).to_numpy()
    scores = pd.DataFrame(sign * W.to_numpy(dtype=np.float64), columns=[a, b])
    delta = margin
    if relative:
        y = unit_means(scores.to_numpy(), clusters)
        spread = float(np.sqrt((y[:, 0].var(ddof=1) + y[:, 1].var(ddof=1)) / 2.0)) \
            if len(y) > 1 else float("nan")
        if not spread > 0:
            raise ValueError(f"relative: the spread of {a!r} and {b!r} over the units is "
                             f"{spread}; give the margin in score units.")
        delta = margin * spread
    K = len(methods)
    n_comp = check_positive_int(K * (K - 1) // 2 if all_pairs else 1, "n_comparisons")
    p = plan(scores, a, b, margin=delta, clusters=clusters, power=power, alpha=alpha,
             n_comparisons=n_comp)
    return RunPlan(plan=p, run=str(info.path), policy=policy, metric=metric, methods=methods,
                   margin=margin, relative=relative, delta=delta)
