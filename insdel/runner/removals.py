"""The removals of a run (``[removal]``, docs/experiments.md): what a removed feature becomes.

``removal.kinds`` lists them; the first is the *primary* removal, whose curves, tables and figures
go where they always went (a configuration without ``[removal]`` runs the paper's ``baseline``
alone, byte for byte the paper's run). Every other removal evaluates the same pairs and attributions;
its evaluation goes to ``<policy>/removal-<name>/`` and the run compares the removals' method
rankings (:mod:`insdel.robustness`).

A removal fitted on data (``marginal``'s background, ``conditional_*``'s training rows) gets the
training rows of the run's data set, ``dataset.X_train``: the space the model and the pairs are in.
The observational ``cohort`` game gets every row of the data set (training and test, so a target
is in its own cohort) and their outcome y.
A removal's ``seed`` is the run's seed unless ``[removal.<name>]`` gives one.
A removal that takes ``one_hot`` (``conditional_gaussian``, ``conditional_mean``,
``conditional_knn``, your own) gets the data set's one-hot groups (:func:`one_hot_of`) unless
``[removal.<name>] one_hot`` names them (group names of the data set; ``[]``: none).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import config as _config
from .._checkpoint import to_jsonable

__all__ = ["RunRemoval", "RUN_DEFAULTS", "check_available", "build_removal", "build_removals", "observed_rows",
           "one_hot_of", "removal_record", "attributions_text", "removals_text", "params_text", "folder_name"]

#: Options a run gives a removal when its ``[removal.<name>]`` table does not (the library's
#: ``Marginal`` has no default K: a run draws 20 training rows per target).
RUN_DEFAULTS: dict[str, dict[str, Any]] = {"marginal": {"n_references": 20}}


@dataclass(frozen=True)
class RunRemoval:
    """One removal of a run.

    Attributes
    ----------
    name : str
        Its registry name (``removal.kinds``).
    removal : insdel.removal.Removal
        Built with the run's options and training rows.
    primary : bool
        The first of ``removal.kinds``: its results are the run's main ones.
    """

    name: str
    removal: Any
    primary: bool

    @property
    def is_baseline(self) -> bool:
        """The paper's removal (one reference per target): the engines' unchanged path."""
        return self.removal.name == "baseline"

    @property
    def folder(self) -> str:
        """The policy's sub-folder of its evaluation ("" for the primary removal)."""
        return "" if self.primary else folder_name(self.name)

    def params(self) -> dict:
        """Its ``params()`` as plain JSON (large arrays as their SHA-256)."""
        return removal_record(self.removal)


def folder_name(name: str) -> str:
    """``removal-<name>``: the sub-folder of a policy's folder a non-primary removal writes."""
    return f"removal-{name}"


def check_available(cfg: Mapping) -> None:
    """Every removal of ``removal.kinds`` is registered here (a built-in whose module is not
    installed is named before the run starts)."""
    from .. import removal

    known = removal.available()
    for name in cfg["removal"]["kinds"]:
        if name not in known:
            raise _config.ConfigError(
                f"{cfg['source']}: removal.kinds: removal {name!r} is not available in this "
                f"installation of insdel (available: {', '.join(known)}); run the others with "
                f"--removal {','.join(k for k in cfg['removal']['kinds'] if k in known) or 'baseline'}.")


def observed_rows(dataset) -> tuple[np.ndarray, np.ndarray]:
    """(data, outcome) of a game read off the data (the ``cohort`` removal, the ``cohort_shapley``
    and ``igcs`` methods): every row of the data set, training then test (the targets among them,
    so no cohort is empty), and its outcome y."""
    data = np.ascontiguousarray(np.vstack([dataset.X_train, dataset.X_test]), dtype=np.float64)
    outcome = np.concatenate([np.asarray(dataset.y_train, np.float64),
                              np.asarray(dataset.y_test, np.float64)])
    return data, outcome


def one_hot_of(dataset) -> dict[str, list[int]]:
    """The data set's one-hot groups: its feature groups (``dataset.groups``) of two or more
    columns that are a complete one-hot block on the training rows (values 0/1, exactly one 1 per
    row), group name -> columns. A group of another kind (pixels, patches) is not one."""
    from ..removal._sampling import is_one_hot

    grp = getattr(dataset, "groups", None)
    if grp is None:
        return {}
    X = np.asarray(dataset.X_train, dtype=np.float64)
    return {grp.names[g]: grp.columns(g).tolist() for g in range(grp.m)
            if grp.sizes[g] > 1 and is_one_hot(X, grp.columns(g))}


def _named_one_hot(value, dataset) -> dict[str, list[int]]:
    """``one_hot`` of a configuration: a list of the data set's group names, as columns."""
    grp = getattr(dataset, "groups", None)
    names = [] if grp is None else [grp.names[g] for g in range(grp.m) if grp.sizes[g] > 1]
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError(f"one_hot must be a list of the data set's group names "
                         f"({', '.join(names) or 'it has none'}); got {value!r}.")
    out = {}
    for v in value:
        if v not in names:
            raise ValueError(f"one_hot: {v!r} is not a feature group of the data set "
                             f"(its groups: {', '.join(names) or 'none'}).")
        out[v] = grp.columns(grp.names.index(v)).tolist()
    return out


def build_removal(cfg: Mapping, name: str, options: Mapping, dataset, *,
                  where: str | None = None, run_seed: bool = True, sampled: bool = False):
    """One removal of a run: the one place a configured removal is built (``[removal]``'s kinds,
    ``roar.removal``, ``road.removal``).

    It gets ``options`` (then :data:`RUN_DEFAULTS`), ``dataset.X_train`` where it takes training
    rows (``background`` or ``data``), the data set's one-hot groups where it takes ``one_hot``
    (:func:`one_hot_of`; the options' ``one_hot`` names them instead: group names of the data
    set, ``[]`` for none), and for a game read off the data every observed row and its y.

    Parameters
    ----------
    cfg : mapping
        The loaded configuration (its ``seed`` and ``source``).
    name : str
        A registered removal.
    options : mapping
        Its options from the configuration.
    dataset : insdel.datasets.Dataset
        The run's data set.
    where : str, optional
        The options' key, named in an error (default ``removal.<name>``).
    run_seed : bool
        Where the removal takes a ``seed`` the options do not give: the run's seed (True: the
        experiments' and ROAR's rule) or the removal's own default (False: ROAD's rule, so its
        draws under a configuration stay the same).
    sampled : bool
        Refuse a removal that is not a :class:`~insdel.removal.SampledRemoval` (ROAD imputes a
        removed feature from the kept ones).

    Raises
    ------
    insdel.config.ConfigError
        An unknown removal, a bad option value or, with ``sampled``, a removal of another kind;
        the message names ``where``.
    """
    from .. import removal

    where = where or f"removal.{name}"
    try:
        cls = removal.get(name)
    except ValueError as exc:
        raise _config.ConfigError(f"{cfg['source']}: {where}: {exc} (a removal of another insdel "
                                  "version, or your own not registered with "
                                  "insdel.removal.register before the run?)") from None
    accepted = removal.options_of(name)
    opts = dict(options or {})
    if not (name == "marginal" and opts.get("how") == "all"):  # K = every row: none to give
        for k, v in RUN_DEFAULTS.get(name, {}).items():
            if k in accepted:
                opts.setdefault(k, v)
    if run_seed and "seed" in accepted:
        opts.setdefault("seed", int(cfg["seed"]))
    if issubclass(cls, removal.GameRemoval) and "outcome" in accepted:
        # the observational game: every observed row (the targets among them, so no cohort is
        # empty) and its outcome y
        opts["data"], opts["outcome"] = observed_rows(dataset)
    for k in ("background", "data"):
        if k in accepted and k not in opts:
            opts[k] = np.ascontiguousarray(np.asarray(dataset.X_train, dtype=np.float64))
    try:
        if "one_hot" in accepted:
            opts["one_hot"] = (_named_one_hot(opts["one_hot"], dataset)
                               if opts.get("one_hot") is not None else one_hot_of(dataset)) \
                or None
        rem = removal.build(name, **opts)
    except (TypeError, ValueError) as exc:
        raise _config.ConfigError(f"{cfg['source']}: {where}: {exc}") from None
    if sampled and not removal.draws_rows(rem):
        raise _config.ConfigError(f"{cfg['source']}: {where}: {name!r} ({cls.__name__}) is not "
                                  "a SampledRemoval (it draws no rows): ROAD imputes removed "
                                  "features from the kept ones.")
    return rem


def build_removals(cfg: Mapping, dataset) -> list[RunRemoval]:
    """The run's removals, built in the order of ``removal.kinds`` (:func:`build_removal`)."""
    check_available(cfg)
    return [RunRemoval(name=name, primary=i == 0, removal=build_removal(
        cfg, name, cfg["removal"].get(name, {}) or {}, dataset))
        for i, name in enumerate(cfg["removal"]["kinds"])]


def attributions_text(mode: str) -> str:
    """What the attributions a removal's curves score are (``removal.attributions``), in words:
    the line the log, ``summary.md`` and the robustness report print."""
    if mode == "per_removal":
        return ("attributions: each removal's own, computed under that removal's game "
                "(removal.attributions = \"per_removal\"; a further removal's are in "
                "<policy>/removal-<name>/attributions.npz)")
    return ("attributions: one set per policy, computed for the pairs' reference r (the baseline "
            "game) and scored under every removal (removal.attributions = \"baseline\")")


def removal_record(rem) -> dict:
    """A removal's ``params()`` as plain JSON for the log and the manifest: arrays enter as their
    SHA-256 (:func:`insdel._checkpoint.to_jsonable`), never their values."""
    return to_jsonable(rem.params())


def params_text(params: Mapping, sep: str = "=") -> str:
    """``"how=random, n_references=20, seed=0, background_sha256=aa86fd8e8ba4, ..."``: a
    removal's params without its name, hashes cut to 12 characters (the manifest has them
    whole)."""
    return ", ".join(f"{k}{sep}{str(v)[:12] if k.endswith('sha256') else v}"
                     for k, v in params.items() if k != "name")


def removals_text(removals: list[RunRemoval]) -> list[str]:
    """One line per removal: what it is and where its results go."""
    lines = []
    for r in removals:
        opts = params_text(r.params())
        where = "the policy folders (primary)" if r.primary else f"<policy>/{r.folder}/"
        lines.append(f"removal {r.name}: {opts} -> {where}")
    return lines
