"""The base class of attribution methods and the helpers that drive captum's per-point methods."""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .._progress import progress_bar
from .._validation import check_choice, check_finite
from ..adapter import Model, ModelLike, as_model
from ..game import ENGINES, Game

#: Methods that need only model values (any model :func:`insdel.as_model` accepts).
MODEL_AGNOSTIC = ("kernel_shap", "exact_shapley", "lime", "random", "occlusion")

#: The implementations of the methods that have two (``backend=`` of ``kernel_shap`` and
#: ``lime``): insdel's, vectorised over points, or captum's, point by point.
BACKENDS = ("insdel", "captum")


def check_engine(engine: str, method: str) -> str:
    """``engine`` of a method, one of :data:`insdel.game.ENGINES` (checked as
    :func:`insdel.game.as_game` checks it); the implementation names ``"insdel"`` and
    ``"captum"`` are refused naming ``backend=``, the option that takes them."""
    if isinstance(engine, str) and engine in BACKENDS:
        raise ValueError(f"{method}: engine={engine!r}: engine= is the game's engine (one of "
                         f"{list(ENGINES)}: a tree ensemble's closed forms or the model's values "
                         f"on rows); insdel's or captum's implementation of a method is chosen "
                         f"with backend={engine!r} (kernel_shap, lime).")
    return check_choice("engine", engine, ENGINES)


def check_backend(backend: str, method: str) -> str:
    """``backend`` of ``method``: one of :data:`BACKENDS`."""
    if backend not in BACKENDS:
        raise ValueError(f"{method}: backend must be one of {list(BACKENDS)}; got {backend!r}.")
    return backend


class Attribution:
    """An attribution method with the policy's reference r, explaining ``f(x) - f(r)``.

    As in captum, the model is given to the constructor and the options to :meth:`attribute`,
    whose keyword arguments (typed, with documented defaults) are each method's options.
    After :meth:`attribute`:

    * ``seconds_`` — wall time of the method;
    * ``n_evals_`` — model rows it evaluated (forward, or forward + backward), counted by the model
      adapter;
    * ``completeness_gap_`` — ``sum_j a_j - (f(x) - f(r))`` per pair (B,), computed here once for
      every method (exact Shapley, IG and DeepLIFT satisfy completeness; the others need not);
    * ``info_`` — method details, with the gap as ``delta`` and ``max_abs_delta``.

    Parameters
    ----------
    f : torch.nn.Module, estimator, callable or insdel Model
        The model (see :func:`insdel.as_model`).
    """

    name: ClassVar[str] = ""
    #: What the method needs of the model, one of :data:`insdel.adapter.CAPABILITIES`:
    #: ``values`` (any model), ``gradients`` (a torch module), ``hooks`` (an eager nn.Module).
    requires: ClassVar[str] = "values"
    #: The revision of the method's numbers: raised whenever the same call gives other values, so
    #: that a run's checkpointed attribution chunks (keyed by it) are recomputed, never reused.
    revision: ClassVar[int] = 1
    #: What the method reads of the model, in the error of ``engine="tree"`` on a method that
    #: cannot use a tree game; None for the methods that read the game's values (coalition
    #: values, their ends), which a tree ensemble's game answers from its trees.
    reads_rows: ClassVar[str | None] = "model rows of its own (no coalition values)"
    _game: Game | None = None

    def __init__(self, f: ModelLike | Game) -> None:
        self.f = f
        # a game (insdel.game.as_game) holds the model, the pairs and the removal: attribute(None,
        # None, ...) explains it
        self._game: Game | None = f if isinstance(f, Game) else None
        if self._game is None:
            self.model: Model = as_model(f)
        elif f.model is None and getattr(f, "ensemble", None) is not None:
            self.model = as_model(f.ensemble)  # a tree game: its ensemble (never evaluated)
        else:
            self.model = f.model
        self.seconds_ = float("nan")
        self.n_evals_ = 0
        self.completeness_gap_: np.ndarray | None = None
        self.info_: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model.name})"

    def _engine(self, engine: str, *, backend: str = "insdel") -> str:
        """The engine the method's game is built with, from its ``engine=`` option.

        ``auto``: ``tree`` when the method reads the game's values (:attr:`reads_rows` None,
        through insdel's backend) and the model is a tree ensemble insdel reads, else
        ``black_box``; ``tree`` on a method that cannot use the tree game, or on a model that
        is not a tree ensemble, is an error naming the method and the engine."""
        from ..game import model_engine
        from ..removal.trees import is_ensemble

        engine = check_engine(engine, self.name)
        if self._game is not None:  # the game holds its engine (as_game checks engine= on it)
            return engine
        why = self.reads_rows if self.reads_rows is not None or backend == "insdel" else \
            "model rows through captum's implementation (backend='captum'), point by point"
        if why is not None:
            if engine == "tree":
                raise ValueError(f"{self.name}: engine='tree', but the method cannot use a tree "
                                 f"game: it reads {why}; use engine='auto' or 'black_box'.")
            return "black_box"
        if engine == "tree":
            try:
                est = self.model.estimator
                model_engine(est if est is not None else self.f, "tree")
            except ValueError as err:
                raise ValueError(f"{self.name}: {err}") from None
        if engine == "auto" and not is_ensemble(self.model):
            return "black_box"
        return engine

    def _run(self, X: ArrayLike | None, R: ArrayLike | None,
             compute: Callable[[Game], tuple[np.ndarray, dict]],
             m: int | None = None, removal: Any = None, groups: Any = None,
             batch_size: int | None = None, engine: str = "black_box") -> np.ndarray:
        """Build the game once, then time and count one call of ``compute(game) -> (A, info)``;
        then the completeness gap (from ``info["fx_minus_fr"]`` when the method has
        ``v(all) - v(∅)``, else from the game's ends, not counted as the method's). ``m``: the
        result has one column per unit (m of them) instead of one per feature; a game of groups
        has one per group.

        The game (:func:`insdel.game.as_game`, the one check of the model, X, R, ``removal``,
        ``groups`` and ``batch_size``): the method reads it (one reference per target, its
        empty rows or its values: :mod:`insdel.attribution._removal`). Under a removal other than
        the baseline the gap is taken against ``v(all) - v(∅)`` (``info_["v_all_minus_v_empty"]``);
        a removal given (or a game) is recorded as ``info_["removal"]`` (its ``params()``).
        ``engine``: the game's engine (:func:`insdel.game.as_game`, resolved by :meth:`_engine`):
        ``black_box`` for the methods that read model rows, ``tree`` / ``auto`` for those that
        read the game's values of a tree ensemble (a removal without a tree game falls back to
        the model's values under ``auto``); ``info_["engine"]`` records the one that ran
        (:func:`insdel.game.engine_text`)."""
        from ..game import as_game, engine_text, one_output
        from ._removal import single_reference, value_ends

        src = self._game if self._game is not None else self.model
        try:
            game = as_game(src, X, R, removal=removal, groups=groups,
                           batch_size=batch_size, engine=engine)
        except ValueError as err:
            if "engine=" not in str(err):
                raise
            raise ValueError(f"{self.name}: {err}") from None
        game = one_output(game, f"attribution method {self.name!r}")
        model = self.model
        if self.requires not in model.capabilities:
            from . import check_supported

            check_supported(model, [self.name])
        e0 = model.n_evals
        t0 = time.perf_counter()
        A, info = compute(game)
        self.seconds_ = time.perf_counter() - t0
        self.n_evals_ = model.n_evals - e0
        A = np.ascontiguousarray(A, dtype=np.float64)
        B, n = game.X.shape
        expected = (B, n) if m is None and game.groups is None else \
            (B, game.m if m is None else m)
        if A.shape != expected:
            raise ValueError(f"{self.name} returned shape {A.shape}; expected {expected}.")
        check_finite(f"{self.name}'s attributions", A)  # NaN / inf: an error naming the rows
        dfx = info.pop("fx_minus_fr", None)
        if game.name != "baseline":
            if dfx is None:
                v_all, v_empty = value_ends(game)
                dfx = v_all - v_empty
            info["v_all_minus_v_empty"] = dfx
        elif dfx is None:
            R1 = single_reference(game)
            if R1 is None:  # a tree game: its ends from the trees
                v_all, v_empty = value_ends(game)
                dfx = v_all - v_empty
            else:
                dfx = model(game.X) - model(R1)
        if removal is not None or self._game is not None:
            info["removal"] = game.params()
        info.setdefault("engine", engine_text(game))
        gap = A.sum(axis=1) - dfx
        self.completeness_gap_ = gap
        self.info_ = {**info, "delta": gap, "max_abs_delta": float(np.abs(gap).max())}
        return A


def module_forward(model: Model):
    """A tensor -> tensor forward function for captum that goes through the adapter (counted)."""
    import torch

    def fwd(t):
        y = model(t.detach().to("cpu").numpy())
        return torch.from_numpy(y).to(t.device)

    return fwd


@contextlib.contextmanager
def torch_seed(seed: int):
    """Seed torch's global generator inside the block and restore its state afterwards."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        yield


def captum_per_point(cls_obj, X, R, n_samples: int, perturbations_per_eval: int, seed: int,
                     progress, desc: str, groups=None) -> np.ndarray:
    """Run a captum perturbation method (KernelShap, Lime) point by point with baseline r.

    With ``groups`` (:class:`insdel.groups.Groups`) the players are the m groups (captum's
    ``feature_mask``, each group's columns moved together); returns (B, m), one value per group.
    """
    import torch

    B, n = X.shape
    A = np.empty((B, n))
    Xt = torch.from_numpy(np.ascontiguousarray(X))
    Rt = torch.from_numpy(np.ascontiguousarray(R))
    ppe = int(min(perturbations_per_eval, n_samples))
    extra = {} if groups is None else {
        "feature_mask": torch.from_numpy(np.asarray(groups.labels, dtype=np.int64))[None, :]}
    with torch_seed(seed), warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore", UserWarning)
        with progress_bar(B, desc, "point", enable=progress, auto=B * n_samples > 200_000) as bar:
            for b in range(B):  # captum fits one interpretable model per point
                a = cls_obj.attribute(Xt[b:b + 1], baselines=Rt[b:b + 1], n_samples=n_samples,
                                      perturbations_per_eval=ppe, show_progress=False, **extra)
                A[b] = a[0].to(torch.float64).numpy()
                bar.update(1)
    if groups is not None:  # captum gives every column its group's value: one column per group
        return np.ascontiguousarray(A[:, groups.members[groups.starts[:-1]]])
    return A
