"""Attribution methods that all use the policy's reference r (paper §5, Appendix A.3; §4 for IG).

Every method returns an array (B, n) explaining ``f(x) - f(r)`` with captum's sign convention
(``inputs=x, baselines=r``; conventions: *Points, attributions, orderings*), so its output can be
passed to :func:`insdel.evaluate` / :func:`insdel.curves` as it is.

========================  ====================  ==============================================
name                      model kinds           what it computes
========================  ====================  ==============================================
``kernel_shap``           any                   Kernel SHAP, baseline r, seeded (insdel's
                                                vectorised backend, exactly efficient; captum's
                                                per-point one with ``backend="captum"``)
``exact_shapley``         any                   exact baseline Shapley (anchored decomposition)
``lime``                  any                   captum ``Lime``'s estimator, baseline r, seeded
                                                (insdel's vectorised backend; captum's
                                                per-point one with ``backend="captum"``)
``random``                any                   seeded random scores (a random ordering)
``integrated_gradients``  torch module          batched IG, binary modes (§4)
``deeplift``              eager nn.Module       captum ``DeepLift``, baseline r, PReLU rescaled
``vanilla_grad``          torch module          gradient at x times a per-feature scale
``input_x_gradient``      torch module          x * gradient at x (binary zeros -> -1e-4 opt.)
``cohort_shapley``        none (data, outcome)  cohort Shapley: Shapley values of the
                                                observational cohort game (R ignored)
``igcs``                  none (data, outcome)  integrated gradients in the space of cohort
                                                indicators (R ignored)
========================  ====================  ==============================================

"torch module": an eager ``torch.nn.Module``, a TorchScript module or the module of a
``torch.export`` program (input gradients through autograd). DeepLIFT needs an eager module: captum
registers hooks on it and on its nonlinearity modules, which TorchScript refuses and an exported
program no longer has. Each class says what it needs (``requires``: values, gradients or hooks);
:func:`supported` lists the methods that run on a model and :func:`check_supported` refuses the
others before any work.

Every method takes ``removal=`` (:mod:`insdel.removal`; None is the baseline r, unchanged): the
attributions then explain ``v(all) - v(∅)`` of the value function under the removal; what the
reference means per method (coalition values for the Shapley methods and LIME, the
averaged-baseline form for IG and DeepLIFT, nothing for the gradient-at-x methods and random) is
in :mod:`insdel.attribution._removal` and docs/attribution.md (*Removal*).

Every method takes ``engine=`` (:func:`insdel.game.as_game`'s: ``auto``, ``tree``,
``black_box``): the methods that read the game's values (``kernel_shap``, ``exact_shapley``,
``lime``, ``occlusion``, ``tree_shap``) read a tree ensemble's closed forms under ``auto`` when
the model is one insdel reads (the same numbers to rounding; exact Shapley values at any |D|);
the others read no coalition value and refuse ``engine="tree"``. ``backend=`` (``kernel_shap``,
``lime``) chooses insdel's implementation or captum's.

One functional entry point, :func:`attribute` (``insdel.attribute``); one class per method, as
in captum: ``IntegratedGradients(f).attribute(X, R, n_steps=500)``, whose keyword arguments are
typed and documented (``help(IntegratedGradients.attribute)``). Registry verbs (CONTRIBUTING.md):
:func:`available`, :func:`get` (the class), :func:`options_of` (a method's options and defaults)
and :func:`build` (an instance for a model).

Modules: ``base`` (the base class, captum drivers), ``shapley`` (Kernel SHAP, exact Shapley),
``lime``, ``integrated_gradients``, ``deeplift``, ``gradients`` (vanilla, input x gradient),
``random_scores``, ``occlusion`` (leave-one-unit-out drops of v), ``cohort`` (cohort Shapley
and IGCS, model-free: they explain the data's outcome
through :class:`insdel.removal.Cohort` and accept ``f=None`` and ``R=None``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._registry import Registry, check_options, signature_options
from ..adapter import (
    GRADIENT_METHODS,
    TORCH_KINDS,
    Model,
    ModelLike,
    model_capabilities,
    torch_kind,
)
from ..game import Game
from .base import MODEL_AGNOSTIC, Attribution
from .cohort import IGCS, CohortShapley, _CohortAttribution
from .deeplift import DeepLift
from .gradients import InputXGradient, VanillaGrad
from .integrated_gradients import IntegratedGradients
from .lime import DEFAULT_LIME_SAMPLES, Lime
from .occlusion import Occlusion
from .random_scores import RandomAttribution
from .shapley import DEFAULT_KS_SAMPLES, PAPER_KS_SAMPLES, ExactShapley, KernelShap
from .tree_shap import TreeShap

__all__ = [
    "attribute", "available", "get", "options_of", "build", "supported", "check_supported", "Attribution",
    "External", "KernelShap", "ExactShapley",
    "IntegratedGradients", "DeepLift", "VanillaGrad", "InputXGradient", "Lime",
    "RandomAttribution", "CohortShapley", "IGCS", "Occlusion", "TreeShap", "METHODS", "MODEL_AGNOSTIC", "GRADIENT_METHODS", "DEFAULT_KS_SAMPLES",
    "DEFAULT_LIME_SAMPLES", "PAPER_KS_SAMPLES", "DEFAULT_PAIRS_PER_CHUNK",
]

#: name -> class.
METHODS: dict[str, type[Attribution]] = {cls.name: cls for cls in (
    KernelShap, ExactShapley, IntegratedGradients, DeepLift, VanillaGrad, InputXGradient, Lime,
    RandomAttribution, CohortShapley, IGCS, Occlusion, TreeShap)}

ALIASES = {
    "ks": "kernel_shap", "kernelshap": "kernel_shap", "shap": "kernel_shap",
    "exact_ks": "exact_shapley", "shapley": "exact_shapley",
    "ig": "integrated_gradients", "integratedgradients": "integrated_gradients",
    "deep_lift": "deeplift", "saliency": "vanilla_grad", "vanilla": "vanilla_grad",
    "ixg": "input_x_gradient", "inputxgradient": "input_x_gradient",
    "cohortshapley": "cohort_shapley", "cohort_ig": "igcs", "treeshap": "tree_shap",
    "feature_ablation": "occlusion", "ablation": "occlusion",
}


def _normalize(name: str) -> str:
    return name.lower().replace("-", "_").replace(" ", "_")


_REGISTRY = Registry("attribution method", METHODS, aliases=ALIASES, normalize=_normalize)


def available() -> list[str]:
    """Names of the attribution methods, sorted (aliases such as ``"ig"`` resolve with
    :func:`get`)."""
    return _REGISTRY.available()


def get(name: str) -> type[Attribution]:
    """The attribution class registered as ``name`` (or an alias: ``"ig"``, ``"ks"``, ...).

    Raises
    ------
    TypeError
        ``name`` is not a string.
    insdel.UnknownNameError
        An unknown name (a ``ValueError``; with the closest names and the available ones).
    """
    if not isinstance(name, str):
        raise TypeError(f"method must be a string; got {type(name).__name__}.")
    return _REGISTRY.get(name)


def build(name: str, f: ModelLike) -> Attribution:
    """The method ``name`` for the model ``f`` (``get(name)(f)``); its options go to its
    ``attribute(X, R, **options)`` (:func:`options_of`)."""
    return get(name)(f)


#: Why a torch model of each kind gives no hooks (:func:`insdel.adapter.model_capabilities`).
_NO_HOOKS = {"torchscript": "TorchScript modules refuse forward hooks",
             "exported": "an exported program's layers are aten operations, not modules"}


def supported(f: ModelLike) -> list[str]:
    """The registered methods that run on ``f``, sorted: each method's ``requires`` is among the
    model's capabilities (:func:`insdel.adapter.model_capabilities`: values, gradients, hooks)."""
    caps = model_capabilities(f)
    return [name for name in available() if METHODS[name].requires in caps]


def check_supported(f: ModelLike, methods: Sequence[str]) -> None:
    """Refuse, before any work, methods that cannot run on the model ``f``.

    Parameters
    ----------
    f : model
        Anything :func:`insdel.as_model` accepts.
    methods : sequence of str
        Method names (aliases resolve as in :func:`get`).

    Raises
    ------
    TypeError
        Naming the methods that cannot run, what they need, and the methods that do run on ``f``
        (all of them, and those of ``methods``).
    """
    names = [get(m).name for m in methods]
    caps = model_capabilities(f)
    bad = [m for m in names if METHODS[m].requires not in caps]
    if not bad:
        return
    kind = torch_kind(f)
    label = f.name if isinstance(f, Model) else type(f).__name__
    what = f"{label}, {TORCH_KINDS[kind]}" if kind else label
    parts = []
    trees = [m for m in bad if METHODS[m].requires == "trees"]
    grads = [m for m in bad if METHODS[m].requires == "gradients"
             or (METHODS[m].requires == "hooks" and "gradients" not in caps)]
    hooks = [m for m in bad if m not in grads and m not in trees]
    if trees:
        parts.append(f"methods {trees} need a tree ensemble insdel reads (scikit-learn trees, "
                     "forests and boosting, XGBoost, LightGBM, CatBoost: insdel.trees), but the "
                     f"model is {what}")
    if grads:
        parts.append(f"methods {grads} need input gradients, but the model ({what}) has none "
                     "(a torch.nn.Module has them: eager, TorchScript or torch.export)")
    if hooks:
        parts.append(f"methods {hooks} need an eager torch.nn.Module (captum's DeepLift "
                     "registers hooks on the module and on its nonlinearity modules), but the "
                     f"model is {what}: {_NO_HOOKS.get(kind, 'it gives no hooks')}")
    ok = supported(f)
    yours = [m for m in names if m in ok]
    raise TypeError("; ".join(parts) + f". Methods that work with it: {', '.join(ok)}"
                    + (f" (of yours: {yours})" if yours else "") + ".")


def options_of(name: str) -> dict[str, Any]:
    """The keyword options of method ``name`` (of its ``attribute``) with their defaults."""
    return signature_options(get(name).attribute, keyword_only=True)


#: Pairs per chunk of :func:`attribute` with a Dask ``client`` and no ``pairs_per_chunk``.
DEFAULT_PAIRS_PER_CHUNK = 50


def attribute(f: ModelLike | Game, X: ArrayLike | None, R: ArrayLike | None, method: str | Any, *,
              engine: str = "auto", return_info: bool = False, client: Any = None,
              pairs_per_chunk: int | None = None, **options: Any):
    """Attributions of one method for B pairs, explaining ``f(x) - f(r)``.

    Parameters
    ----------
    f : torch.nn.Module, estimator, callable or insdel Model
        Gradient methods (``integrated_gradients``, ``vanilla_grad``, ``input_x_gradient``)
        need a torch module (TorchScript and ``torch.export`` programs included), ``deeplift``
        an eager ``torch.nn.Module``; the others accept anything :func:`insdel.as_model`
        accepts (:func:`supported`). Or a game (:func:`insdel.game.as_game`) that holds the
        model, the pairs, the removal and the groups: then X and R are None, and ``removal=``,
        ``groups=`` and ``batch_size=`` are not given.
    X : array_like (B, n) or (n,)
        Targets.
    R : array_like (B, n) or (n,)
        References (the policy's choice; a 1-D R is used for every pair). Ignored by the cohort
        methods (``cohort_shapley``, ``igcs``), which accept None, as they accept ``f=None``.
    method : str, captum attribution object or callable
        One of :func:`available` (or an alias such as ``"ig"``, ``"ks"``); or a captum attribution
        object (``captum.attr.IntegratedGradients(net)``: called with ``inputs=X, baselines=R``),
        or any callable ``(X, R) -> A`` (see :class:`External`).
    engine : {"auto", "tree", "black_box"}, default "auto"
        The game's engine (:func:`insdel.game.as_game`). ``auto``: the methods that read the
        game's values (``kernel_shap``, ``exact_shapley``, ``lime``, ``occlusion``,
        ``tree_shap``) read them from a tree ensemble's closed forms when f is one insdel reads
        (:mod:`insdel.trees`) and the removal has a tree game, else from the model's values on
        rows; ``tree``: the closed forms, or an error naming the method (a method that reads no
        coalition value, or a model that is not a tree ensemble); ``black_box``: model rows.
        Not captum's or insdel's implementation of a method: that is ``backend=``
        (``kernel_shap``, ``lime``). ``info["engine"]`` records the engine that ran.
    return_info : bool, default False
        Also return a dict: ``method``, ``seconds``, ``model_evaluations``, ``completeness_gap``
        (B,), ``engine`` and the method's details.
    client : dask.distributed.Client, optional
        Compute chunks of ``pairs_per_chunk`` pairs (default 50) on the client's workers; the
        model and the pairs are sent to each worker once.
    pairs_per_chunk : int, optional
        Split the pairs into chunks of this many, computed one after the other (``client=None``)
        or on the workers: the results are identical either way. A seeded method (``seed``
        option) draws one random stream per chunk, seeded by ``seed`` and the chunk's index, so
        its values depend on ``pairs_per_chunk`` (not on the client, the workers or the order
        chunks finish in); ``attribute(..., client=c)`` equals
        ``attribute(..., pairs_per_chunk=50)``. Unseeded methods give the values of an unchunked
        call up to the model's own rounding on other batch sizes.
    **options
        The method's keyword options (:func:`options_of`; its class's ``attribute`` documents
        them). Every method takes ``removal=`` (:mod:`insdel.removal`; None is the baseline r):
        the attributions then explain ``v(all) - v(∅)`` of the value function under the
        removal, each method stating what its reference means (docs/attribution.md, *Removal*);
        R is then read as the removal reads it (``marginal`` without a background: (B, K, n);
        a sampled removal: not at all, ``R=None``). ``info`` records the removal's ``params()``
        as ``removal`` and ``v_all_minus_v_empty``; ``completeness_gap`` is taken against it.

    Returns
    -------
    ndarray (B, n), float64; or ``(A, info)`` when ``return_info``.

    Raises
    ------
    TypeError
        An option the method does not take (with the closest valid one), or a method the model
        cannot run (:func:`check_supported`: a gradient method on a model without gradients,
        DeepLIFT on TorchScript or an exported program).
    """
    from .._validation import check_bool
    from .base import check_engine

    return_info = check_bool(return_info, "return_info")
    label = method if isinstance(method, str) else "attribute"
    engine = check_engine(engine, label)
    if client is not None or pairs_per_chunk is not None:
        return _attribute_chunked(f, X, R, method, return_info, client, pairs_per_chunk, options,
                                  engine)
    if not isinstance(method, str):
        if engine == "tree":
            raise ValueError(f"{getattr(method, '__name__', None) or type(method).__name__}: "
                             "engine='tree', but an external method is called with (X, R) and "
                             "reads the model itself; use engine='auto' or 'black_box'.")
        if "removal" in options:
            from ..game import as_game
            from ._removal import refuse, single_reference

            game = as_game(f, X, R, removal=options.pop("removal"))
            R1 = single_reference(game)
            if R1 is None:
                refuse(getattr(method, "__name__", None) or type(method).__name__, game,
                       "by an external method (it is called with one reference per target, "
                       "(X, R) -> A)", f"use one of insdel's methods ({', '.join(available())}:"
                       " each states what its reference means under a removal), or call it "
                       "once per reference and average")
            X, R = game.X, R1
        obj = External(f, method)
        A = obj.attribute(X, R, **options)
        if not return_info:
            return A
        return A, {"method": obj.name, "seconds": float(obj.seconds_),
                   "model_evaluations": int(obj.n_evals_),
                   "completeness_gap": np.asarray(obj.completeness_gap_),
                   "engine": obj.info_.get("engine", "black_box")}
    cls = get(method)
    _check_options(cls, options)
    obj = cls(f)
    A = obj.attribute(X, R, engine=engine, **options)
    if not return_info:
        return A
    info = {k: v for k, v in obj.info_.items() if k not in ("delta", "max_abs_delta")}
    return A, {"method": cls.name, "seconds": float(obj.seconds_),
               "model_evaluations": int(obj.n_evals_),
               "completeness_gap": np.asarray(obj.completeness_gap_), **info}


def _check_options(cls: type[Attribution], options: dict) -> None:
    check_options(f"method {cls.name!r}", options, options_of(cls.name))


def _attribute_task(lo: int, hi: int, method: str, options: dict, *, seed=None, f=None, X=None,
                    R=None, **parts):
    """One chunk of :func:`attribute` (pairs lo..hi - 1), on a Dask worker or here; ``seed`` (the
    chunk's own, from :func:`insdel.distributed.run_chunked`) replaces the method's option.

    ``parts`` (shared): the game's (:meth:`insdel.game.Game.parts`); the chunk is its
    :meth:`~insdel.game.Game.subset` (a sampled removal's draws keep the run's indices, a
    reference game's references are the run's). Without them (the cohort methods, which play
    their own game): the model and the pairs ``f, X, R``."""
    if seed is not None:
        options = {**options, "seed": seed}
    if not parts:
        return attribute(f, X[lo:hi], None if R is None else R[lo:hi], method, return_info=True,
                         **options)
    from ..game import from_parts

    game = from_parts(f=f, X=X, R=R, **parts).subset(lo, hi)
    return attribute(game, None, None, method, return_info=True, **options)


def _concat_attributions(parts: list) -> tuple[np.ndarray, dict]:
    """The chunks' ``(A, info)`` of :func:`attribute` joined along the pairs, in chunk order."""
    info = {"seconds": float(sum(p[1]["seconds"] for p in parts)),
            "model_evaluations": int(sum(p[1]["model_evaluations"] for p in parts)),
            "completeness_gap": np.concatenate([p[1]["completeness_gap"] for p in parts]),
            "chunks": len(parts)}
    if "engine" in parts[0][1]:
        info["engine"] = parts[0][1]["engine"]
    if "v_all_minus_v_empty" in parts[0][1]:
        info["v_all_minus_v_empty"] = np.concatenate([p[1]["v_all_minus_v_empty"]
                                                      for p in parts])
    return np.concatenate([p[0] for p in parts], axis=0), info


def resolve_std_scale(method: str, options: Mapping, X) -> dict:
    """``options`` of ``method`` for a computation chunk by chunk: ``scale="std"`` becomes the
    standard deviation over all rows of ``X`` (as an unchunked call takes it)."""
    options = dict(options)
    scale = options.get("scale")
    if isinstance(scale, str) and scale == "std" and "scale" in options_of(method):
        from .gradients import std_scale

        options["scale"] = std_scale(X)
    return options


def _attribute_chunked(f, X, R, method, return_info: bool, client, pairs_per_chunk, options,
                       engine: str = "auto"):
    """:func:`attribute` chunk by chunk (``pairs_per_chunk``), here or on a Dask client; the
    game is built once with the method's engine (:meth:`Attribution._engine`)."""
    from .._validation import check_pairs, check_positive_int
    from ..distributed import chunk_bounds, run_chunked

    if not isinstance(method, str):
        raise TypeError("client= and pairs_per_chunk= need a method name (one of "
                        f"{', '.join(available())}); got {type(method).__name__}.")
    cls = get(method)
    _check_options(cls, options)
    removal = options.pop("removal", None)
    game = None
    if issubclass(cls, _CohortAttribution):  # their own game: the pairs as given
        cls(f)._engine(engine)  # engine='tree': an error naming the method
        if R is None:  # R is ignored: any stand-in
            R = X
        X, R = check_pairs(X, R)
        shared: dict[str, Any] = {"f": f, "X": X, "R": R}
        if removal is not None:
            options["removal"] = removal
    else:  # the game, built once; each chunk is a subset of it
        from ..game import as_game

        probe = cls(f)
        engine = probe._engine(engine, backend=options.get("backend", "insdel"))
        src = f if isinstance(f, Game) else probe.model
        try:
            game = as_game(src, X, R, removal=removal, groups=options.pop("groups", None),
                           batch_size=options.pop("batch_size", None), engine=engine)
        except ValueError as err:
            if "engine=" not in str(err):
                raise
            raise ValueError(f"{cls.name}: {err}") from None
        X = game.X
        shared = game.parts()
    options = resolve_std_scale(cls.name, options, X)
    size = DEFAULT_PAIRS_PER_CHUNK if pairs_per_chunk is None else pairs_per_chunk
    bounds = chunk_bounds(X.shape[0], size)
    seeded = "seed" in options_of(cls.name)
    seed = options.get("seed", options_of(cls.name).get("seed", 0)) if seeded else None
    if seeded:  # chunk_seed would truncate 2.7 to 2: check it as the method does
        check_positive_int(seed, "seed", minimum=0)
    A, info = run_chunked(
        _attribute_task, [(lo, hi, cls.name, options) for lo, hi in bounds],
        shared=shared, client=client, seed=seed,
        seed_names=(cls.name,),
        concat=_concat_attributions, progress=options.get("progress"), desc=cls.name,
        name=f"insdel-{cls.name}",
        describe=lambda k: f"{cls.name} on pairs {bounds[k][0]}..{bounds[k][1] - 1}")
    if not return_info:
        return A
    if removal is not None and game is not None:
        info["removal"] = game.params()
    return A, {"method": cls.name, **info, "pairs_per_chunk": int(size)}


class External(Attribution):
    """Attributions from outside insdel, timed and checked like insdel's own methods.

    ``source`` is a captum attribution object (``IntegratedGradients(net)``, ...), called as
    ``source.attribute(inputs=X, baselines=R, **options)`` on tensors, or any callable
    ``source(X, R) -> A`` (Quantus' ``explain_func`` habit). Its result may be an array, a tensor
    or a shap ``Explanation``.

    Parameters
    ----------
    f : model
        The model the attributions explain (used for the completeness gap).
    source : captum attribution object or callable
    """

    name = "external"

    def __init__(self, f: ModelLike, source: Any) -> None:
        super().__init__(f)
        if not (hasattr(source, "attribute") or callable(source)):
            raise TypeError("method must be a method name, a captum attribution object or a "
                            f"callable (X, R) -> A; got {type(source).__name__}.")
        self.source = source
        self.name = getattr(type(source), "__name__", "external")

    def attribute(self, X: ArrayLike, R: ArrayLike, **options: Any) -> np.ndarray:
        """Attributions (B, n) from the external source; ``options`` go to it unchanged."""
        from ..evaluation import attribution_values
        from ._removal import refuse, single_reference

        def compute(game):
            model, X, R = game.model, game.X, single_reference(game)
            if R is None:
                refuse(self.name, game, "by an external method (it is called with one "
                       "reference per target, (X, R) -> A)", "give it a game of one reference "
                       "per target")
            if hasattr(self.source, "attribute"):
                import torch

                kw = dict(options)
                Xt = torch.as_tensor(np.ascontiguousarray(X, dtype=model.dtype))
                Rt = torch.as_tensor(np.ascontiguousarray(R, dtype=model.dtype))
                fwd = getattr(self.source, "forward_func", None)
                if "target" not in kw and fwd is not None:
                    with torch.no_grad():
                        out = fwd(Xt[:1])
                    if getattr(out, "ndim", 1) == 2:
                        kw["target"] = 0 if model.output is None else model.output
                A = self.source.attribute(inputs=Xt, baselines=Rt, **kw)
            else:
                A = self.source(X, R, **options)
            return np.asarray(attribution_values(A), dtype=np.float64), {}

        return self._run(X, R, compute)
