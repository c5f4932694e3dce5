"""Models with H outputs: one evaluation of the distinct rows, one result per output
(docs/multi_output.md).

A model that returns (B, H) (a multi-horizon forecaster, a multi-target regressor) is wrapped
with ``insdel.as_model(f, outputs=H)``. Then:

* the curve engine (:func:`insdel.trace`, :func:`insdel.curves`, :func:`insdel.evaluate`) writes
  each distinct hybrid row once, evaluates its H values in one model call and gathers the curves
  once per output (a trailing H axis);
* every other engine (the decomposition, E[ABC], exact Shapley values, the attribution methods)
  runs unchanged on the H *output views* of :func:`output_views`: single-output Models that share
  one store of the model's (N, H) values, keyed by the rows' bytes, so each distinct batch of rows
  is evaluated once by the model whatever H is (:func:`per_output` runs a function on each view);
* :class:`MultiEvaluation` holds one :class:`insdel.Evaluation` per output and summarises them per
  output and aggregated over outputs (``output_weights=``: a mean, or e.g. a horizon discount),
  with standard errors over the pairs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._validation import as_float_array
from .adapter import Model, ModelLike, as_model

__all__ = ["output_views", "per_output", "MultiEvaluation", "check_output_weights",
           "aggregate_abc", "aggregate_scores"]


class _SharedValues:
    """The (N, H) values of a multi-output model per batch of rows, each distinct batch
    evaluated once (keyed by its shape, dtype and a 128-bit BLAKE2 digest of its bytes)."""

    def __init__(self, model: Model):
        self.model = model
        self.store: dict = {}

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(X)
        key = (X.shape, X.dtype.str, hashlib.blake2b(memoryview(X).cast("B"),
                                                     digest_size=16).digest())
        y = self.store.get(key)
        if y is None:
            y = self.store[key] = self.model(X, check_finite=False)
        return y


def _multi(f: ModelLike, outputs: int | None) -> Model:
    """``f`` as a Model that keeps its H outputs (an error naming ``outputs`` otherwise)."""
    model = as_model(f, outputs=outputs)
    if model.n_outputs is None:
        raise ValueError("the model keeps one output: give outputs=H (the number of outputs it "
                         "returns per row), or wrap it with insdel.as_model(f, outputs=H).")
    return model


def output_views(f: ModelLike, *, outputs: int | None = None) -> list[Model]:
    """H single-output Models, one per output of ``f``, sharing one store of its values.

    Parameters
    ----------
    f : model
        A Model with ``outputs=H``, or anything :func:`insdel.as_model` accepts with ``outputs``.
    outputs : int, optional
        H, when ``f`` is not yet a Model with H outputs.

    Returns
    -------
    list of Model
        View h evaluates output h. A batch of rows asked by any view is evaluated by the model
        once (its evaluations are counted on ``f``'s counters, ``n_evals``); the same batch
        asked by another view is read from the store. A torch module's views take input
        gradients of their own output (``value_and_grad``), so gradient methods work per output.
    """
    model = _multi(f, outputs)
    shared = _SharedValues(model)
    return [Model(shared, dtype=model.dtype, batch_size=model.batch_size,
                  torch_module=model.torch_module, name=f"{model.name}[output {h}]", output=h)
            for h in range(model.n_outputs)]


def per_output(func: Callable[..., Any], f: ModelLike, *args, outputs: int | None = None,
               **kwargs) -> Any:
    """``func(view_h, *args, **kwargs)`` for each output view of ``f`` (:func:`output_views`).

    Returns the H results stacked on a trailing axis when they are arrays of one shape (e.g.
    :func:`insdel.shapley_values` -> (B, n, H)), else their list (e.g. H decompositions). Each
    distinct batch of rows is evaluated by the model once for all H outputs, as long as ``func``
    asks the same rows of every view (insdel's engines are deterministic: they do).
    """
    results = [func(v, *args, **kwargs) for v in output_views(f, outputs=outputs)]
    if all(isinstance(r, np.ndarray) for r in results) \
            and len({r.shape for r in results}) == 1:
        return np.stack(results, axis=-1)
    return results


def check_output_weights(output_weights: ArrayLike | None, H: int) -> np.ndarray:
    """Weights of the H outputs, normalised to sum 1 (None: equal weights); an error naming
    ``output_weights`` for a wrong length, a negative or non-finite weight, or a zero sum."""
    if output_weights is None:
        return np.full(H, 1.0 / H)
    w = as_float_array("output_weights", output_weights, ndim=(1,))
    if w.shape[0] != H:
        raise ValueError(f"output_weights has {w.shape[0]} weights for the model's H = {H} "
                         "outputs.")
    if not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"output_weights must be finite, non-negative and not all zero; got "
                         f"{w.tolist()}.")
    return w / w.sum()


def aggregate_abc(abc: ArrayLike, weights: np.ndarray) -> np.ndarray:
    """Each pair's ABC aggregated over the outputs, ``sum_h w_h ABC_h``: ``abc`` (..., H), the
    outputs on the last axis, ``weights`` (H,) from :func:`check_output_weights`. The weighted
    ABC of :meth:`MultiEvaluation.aggregate` and :meth:`MultiEvaluation.summary` (and of
    :func:`insdel.leaderboard` over a multi-output run)."""
    return np.asarray(abc) @ weights


def aggregate_scores(values: ArrayLike, weights: np.ndarray) -> np.ndarray:
    """Each pair's metric score aggregated over the outputs, ``sum_h w_h score_h`` over the
    outputs of positive weight: ``values`` (H, ...), the outputs on the first axis; NaN where
    an output of positive weight has a NaN score (an output of weight 0 is left out, its NaN
    too). The weighted rows of a multi-output run's ``[metrics]``
    (:func:`insdel.runner.stages.metrics.metrics_per_output`) and of :func:`insdel.leaderboard`
    over such a run."""
    use = weights > 0
    return np.tensordot(weights[use], np.asarray(values)[use], axes=1)


@dataclass
class MultiEvaluation:
    """Result of :func:`insdel.evaluate` for a model with H outputs.

    Attributes
    ----------
    evaluations : list of Evaluation
        One per output (its curves, ABCs and summary are those of that output alone).
    output_weights : ndarray (H,)
        The weights of the aggregate (sum 1; equal unless ``evaluate(output_weights=...)``).
    stats : dict
        Compute used by the one trace of all outputs (curve points, distinct rows evaluated).
    """

    evaluations: list
    output_weights: np.ndarray
    stats: dict = field(default_factory=dict)

    @property
    def n_outputs(self) -> int:
        return len(self.evaluations)

    @property
    def methods(self) -> list:
        return self.evaluations[0].methods

    @property
    def modes(self) -> tuple:
        return self.evaluations[0].modes

    def __getitem__(self, h: int):
        """The :class:`insdel.Evaluation` of output h."""
        return self.evaluations[h]

    def abc_array(self, method: str, mode: str = "insertion") -> np.ndarray:
        """ABCs of one method and mode per pair and output, shape (B, H)."""
        return np.stack([e.abc_array(method, mode) for e in self.evaluations], axis=-1)

    def aggregate(self, method: str, mode: str = "insertion",
                  output_weights: ArrayLike | None = None) -> np.ndarray:
        """Each pair's ABC aggregated over the outputs, ``sum_h w_h ABC_h`` (B,), with the
        weights of the evaluation or ``output_weights`` (normalised to sum 1)."""
        w = self.output_weights if output_weights is None else check_output_weights(
            output_weights, self.n_outputs)
        return aggregate_abc(self.abc_array(method, mode), w)

    def summary(self, differences: Sequence[tuple[str, str]] | None | str = "auto", *,
                output_weights: ArrayLike | None = None) -> pd.DataFrame:
        """Each output's :meth:`insdel.Evaluation.summary` (column ``output`` = h) and the
        aggregate over the outputs (``output`` = ``"weighted"``): per method and mode the mean
        over pairs of the pair's weighted ABC and its standard error over the pairs' units."""
        from .evaluation import summarize

        frames = []
        for h, e in enumerate(self.evaluations):
            frames.append(e.summary(differences).assign(output=h))
        ev0 = self.evaluations[0]
        w = self.output_weights if output_weights is None else check_output_weights(
            output_weights, self.n_outputs)
        B = ev0.n_pairs
        rows = []
        for mode in ev0.modes:
            for method in ev0.methods:
                rows.append(pd.DataFrame({"pair": np.arange(B), "method": method, "mode": mode,
                                          "abc": self.aggregate(method, mode, w)}))
        agg = summarize(pd.concat(rows, ignore_index=True), differences, ev0.methods,
                        clusters=ev0.clusters)
        frames.append(agg.assign(output="weighted"))
        out = pd.concat(frames, ignore_index=True)
        return out[["output"] + [c for c in out.columns if c != "output"]]

    def expected_random(self, mode: str = "insertion") -> np.ndarray:
        """The random orderings' mean ABC per pair and output, (B, H)."""
        return np.stack([e.random_mean(mode) for e in self.evaluations], axis=-1)


def split_outputs(res, methods: list, modes: tuple, take: np.ndarray, Km: int, **common
                  ) -> list:
    """One :class:`insdel.Evaluation` per output from one multi-output trace ``res`` whose
    curves are (B, K', S, H), ``take`` (H, K') the orderings of each output: the first ``Km``
    its methods', the rest the further random orderings; ``common``: ``from_curves``' options
    (``orders`` (B, H, Km, m) is cut per output)."""
    from .evaluation import Evaluation

    orders = common.pop("orders")
    evs = []
    for h in range(take.shape[0]):
        curves = {mo: res.curves[mo][..., h] for mo in modes}
        evs.append(Evaluation.from_curves(
            methods=methods, modes=modes, curves={mo: c[:, :Km] for mo, c in curves.items()},
            random_curves={mo: c[:, Km:] for mo, c in curves.items()},
            fx=res.fx[:, h], fr=res.fr[:, h], orders=orders[:, h], **common))
    return evs
