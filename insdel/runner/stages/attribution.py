"""The attribution stage: every configured method's attributions, checkpointed in chunks.

One stage serves both commands: an experiment explains each policy's pairs
(:func:`experiment_plan`, :func:`run`), ROAR every training and test point (:func:`roar_plan`);
what differs between them (chunk size, checkpoint folder, random streams, the words in messages)
is an :class:`AttributionPlan`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ... import _checkpoint as ck
from ..._progress import progress_bar
from ..._validation import check_scalar
from ...config import RUN_GIVEN_METHOD_OPTIONS, observational_method
from ..chunks import chunk_seed, resolve_model, rows_text, run_chunks
from ..context import PolicyRun
from ..provenance import Stages
from ..removals import folder_name, observed_rows
from .data import groups_of

__all__ = ["AttributionPlan", "experiment_plan", "roar_plan", "attribute_all", "method_options",
           "options_key", "observed_options", "attribute_chunk", "attribution_task", "removal_plan",
           "by_removal", "method_engine", "attribution_engine", "run"]

#: Method options whose value ``"dataset"`` stands for an attribute of the data set.
_DATASET_VALUED = (("binary", "binary_mask"), ("binary_levels", "binary_levels"))


def observed_options(method: str, options: Mapping, cfg: Mapping) -> dict:
    """The options of a method read off the data (``cohort_shapley``, ``igcs``: it takes
    ``outcome``) as the run completes them: each option it shares with the ``cohort`` removal
    (``tolerance``, ``categorical``, ``empty``) that ``[methods.options.<method>]`` does not give
    is ``[removal.cohort]``'s when that table gives it (else the method's default), so the
    methods and the observational ABC read the same game. ``data`` and ``outcome`` are not
    among them: the run gives every row of the data set and its y
    (:func:`insdel.runner.removals.observed_rows`). Other methods' options are returned as they
    are."""
    from ... import attribution, removal

    opts = dict(options)
    if not observational_method(method):
        return opts
    given = [k for k in RUN_GIVEN_METHOD_OPTIONS if k in opts]
    if given:
        raise ValueError(f"methods.options.{method}.{given[0]}: the run gives {method} every row "
                         "of the data set (training and test) as data and their y as outcome; "
                         "remove the key.")
    game = dict((cfg.get("removal") or {}).get("cohort") or {})
    shared = set(attribution.options_of(method)) & set(removal.options_of("cohort"))
    for k in sorted(shared - set(RUN_GIVEN_METHOD_OPTIONS)):
        if k not in opts and k in game:
            opts[k] = game[k]
    return opts


def options_key(options: Mapping, dataset) -> dict:
    """A method's options as its chunks' key holds them: the value ``"dataset"`` replaced by what
    it stands for (the data set's binary features and levels change with ``data.options`` while
    the data set's arrays, and so the key's data hash, may not)."""
    key = dict(options)
    for name, attr in _DATASET_VALUED:
        if key.get(name) == "dataset":
            value = getattr(dataset, attr, None)
            key[name] = {"dataset": None if value is None else np.asarray(value).tolist()}
    return key


def method_options(method: str, options: Mapping, seed: int, dataset,
                   engine: str = "auto") -> dict:
    """Options of one method for one chunk: the per-chunk seed goes to seeded methods, progress
    bars inside a chunk are off, the value ``"dataset"`` of ``binary`` / ``binary_levels``
    takes the data set's binary features, and methods that take ``groups`` get the data set's
    groups (the others' per-column attributions are summed per group by :func:`evaluate`).
    ``engine``, the run's ``[model] engine``, is the method's ``engine=`` (:func:`method_engine`;
    absent when it is the default ``auto``)."""
    from ... import attribution

    accepted = attribution.options_of(method)
    kw = dict(options)
    grp = groups_of(dataset)
    if "groups" in kw:
        raise ValueError(f"methods.options.{method}.groups: the groups are the data set's "
                         "(its recipe declares them, e.g. bangalore's location = 'onehot'); "
                         "remove the option.")
    if grp is not None and "groups" in accepted:
        kw["groups"] = grp
    if "seed" in accepted:
        # a seed in the method's options replaces the run's seed for this method: each chunk
        # still draws its own stream from it (the same seed in every chunk would repeat the
        # first chunk's random draws in all the others)
        if "seed" in kw:  # 2.7, "2" or true are errors, not seeds 2, 2 and 1
            kw["seed"] = check_scalar(kw["seed"], f"methods.options.{method}.seed", int,
                                      min_val=0)
        kw["seed"] = seed if "seed" not in kw else chunk_seed(kw["seed"], seed)
    for key, attr in _DATASET_VALUED:
        if kw.get(key) == "dataset":
            kw[key] = getattr(dataset, attr, None)
    if "progress" in accepted:
        kw.setdefault("progress", False)
    engine = method_engine(method, engine, kw)
    if engine != "auto":
        kw["engine"] = engine
    return kw


def attribute_chunk(model, X, R, method: str, options: dict) -> tuple[np.ndarray, dict]:
    """One chunk of one method through :func:`insdel.attribute`: (A, info); a method given
    ``groups`` returns one column per group."""
    from ... import attribution

    A, info = attribution.attribute(model, X, R, method, return_info=True, **options)
    if X is None:  # a game holds the chunk's targets and units
        expected = (model.B, model.m)
    else:
        grp = options.get("groups")
        expected = X.shape if grp is None else (X.shape[0], grp.m)
    if A.shape != expected:
        raise ValueError(f"attribution method {method!r} returned shape {A.shape}; "
                         f"expected {expected}.")
    return A, info


def method_engine(method: str, engine: str, options: Mapping) -> str:
    """The ``engine=`` a run gives attribution method ``method`` for ``[model] engine``
    ``engine``: that engine for a method that reads the game's values (insdel's backend), else
    ``auto`` (a method that reads no coalition value runs on the model whatever the key says:
    ``tree`` there would refuse it)."""
    from ... import attribution

    cls = attribution.get(method)
    if cls.reads_rows is None and options.get("backend", "insdel") == "insdel":
        return engine
    return "auto"


def attribution_engine(model, X, R, method: str, options: Mapping) -> str:
    """What the run prints and records as the engine of ``method``'s attributions
    (:func:`insdel.game.engine_text`): ``black_box`` or ``tree (...)``, as its first chunk's game
    is built (``options`` hold ``engine`` and, under a further removal, ``removal``)."""
    from ... import attribution
    from ...game import as_game, engine_text

    if observational_method(method):
        return "black_box"
    obj = attribution.get(method)(resolve_model(model))
    engine = obj._engine(options.get("engine", "auto"), backend=options.get("backend", "insdel"))
    if engine == "black_box":
        return "black_box"
    return engine_text(as_game(obj.model, X[:1], None if R is None else R[:1],
                               removal=options.get("removal"), engine=engine))


def attribution_task(lo: int, hi: int, method: str, kw: dict, where: str, *, model, X, R):
    """One attribution chunk (rows lo..hi - 1): (A, model evaluations, seconds); an error names
    the method and the rows (``where`` formats them). A sampled ``removal`` in ``kw`` sees the
    chunk's targets by their indices among all rows (the draws of an unchunked call); the game
    is built with the method's engine (``kw["engine"]``, :meth:`Attribution._engine`)."""
    t0 = time.perf_counter()
    f, Xc, Rc = resolve_model(model), X[lo:hi], None if R is None else R[lo:hi]
    if kw.get("removal") is not None:
        from ... import attribution
        from ...adapter import as_model
        from ...game import as_game

        f = as_model(f)
        engine = attribution.get(method)(f)._engine(kw.get("engine", "auto"),
                                                    backend=kw.get("backend", "insdel"))
        game = as_game(f, Xc, Rc, removal=kw["removal"], groups=kw.get("groups"), offset=lo,
                       engine=engine)
        if game.references is None:  # drawn, read off the data or a tree game: targets keep
            f, Xc, Rc = game, None, None  # their run index
            kw = {k: v for k, v in kw.items() if k not in ("removal", "groups")}
    try:
        A, info = attribute_chunk(f, Xc, Rc, method, kw)
    except Exception as exc:
        raise type(exc)(f"{method} on {rows_text(where, lo, hi)}: {exc}") from exc
    return A, info["model_evaluations"], time.perf_counter() - t0


@dataclass(frozen=True)
class AttributionPlan:
    """How one command cuts its rows into attribution chunks and names them.

    Attributes
    ----------
    size : int
        Rows per chunk.
    size_key : str
        The chunk key's name for ``size`` (``"targets_per_chunk"``, ``"points_per_chunk"``).
    key_stage : str
        The chunk key's stage (``"attributions"``, ``"roar_attributions"``).
    folder : Path
        Checkpoint folder; each method's chunks go to ``folder / method``.
    stream : str
        The per-chunk random streams are ``chunk_seed(seed, stream, method, chunk)``.
    rows : str
        What a row is, in messages (``"pairs"``, ``"points"``).
    suffix : str
        Added to the rows in messages (``" of policy 'median'"``).
    record : str
        The manifest's stage name is ``record/method``.
    bar : str
        The progress bar's title.
    per_pair : bool
        Record ``seconds_per_pair`` in the manifest.
    """

    size: int
    size_key: str
    key_stage: str
    folder: Path
    stream: str
    rows: str
    suffix: str
    record: str
    bar: str
    per_pair: bool = False


def experiment_plan(cfg: Mapping, out: Path, label: str) -> AttributionPlan:
    """The plan of one policy of an experiment: ``evaluation.targets_per_chunk`` pairs a chunk,
    checkpoints in ``out/checkpoints/<label>/<method>``."""
    return AttributionPlan(size=cfg["evaluation"]["targets_per_chunk"],
                           size_key="targets_per_chunk", key_stage="attributions",
                           folder=out / "checkpoints" / label, stream=label, rows="pairs",
                           suffix=f" of policy {label!r}", record=f"{label}/attributions",
                           bar=f"attributions [{label}]", per_pair=True)


def roar_plan(cfg: Mapping, out: Path) -> AttributionPlan:
    """The plan of ROAR: ``roar.points_per_chunk`` points a chunk, checkpoints in
    ``out/checkpoints/attributions/<method>``."""
    return AttributionPlan(size=cfg["roar"]["points_per_chunk"], size_key="points_per_chunk",
                           key_stage="roar_attributions",
                           folder=out / "checkpoints" / "attributions", stream="roar",
                           rows="points", suffix="", record="attributions",
                           bar="roar attributions")


def attribute_all(cfg, model, dataset, X, R, plan: AttributionPlan, base_key: Mapping,
                  stages: Stages, log, progress, interrupt: Callable[[], None] | None,
                  given: Mapping[str, np.ndarray] | None = None, client=None,
                  remote: Mapping | None = None, removal=None,
                  task: Callable = attribution_task) -> dict[str, np.ndarray]:
    """Every method's attributions of (X, R), chunk by chunk (checkpointed, resumed).

    Parameters
    ----------
    plan : AttributionPlan
        Chunk size, checkpoint folder, random streams and the words of messages.
    base_key : mapping
        What every chunk's key holds besides the method, its options and the chunk size (data,
        model, seed, pairs, device, ...).
    given : mapping, optional
        Methods already computed by another stage (exact Shapley from the decomposition).
    client, remote
        A Dask client and the model, X and R scattered to its workers (None: serial).
    removal : insdel.runner.removals.RunRemoval, optional
        Compute the attributions under this removal's game (``removal=`` of every method but
        the observational ones, which read the data's game): their chunks' key holds the
        removal's ``params()``. None or the baseline: the pairs' reference r.

    Returns
    -------
    dict
        Method -> attributions (one row per row of X).
    """
    from ... import attribution

    B = X.shape[0]
    cs = plan.size
    n_chunks = -(-B // cs)
    given = dict(given or {})
    names = cfg["methods"]["names"]
    where = plan.rows + " {lo}..{hi}" + plan.suffix
    result = {}
    observed = None  # (data, outcome) of the methods read off the data, built once
    under, R_used = None, R
    if removal is not None and not removal.is_baseline:
        under, R_used = _removal_inputs(removal.removal, X, R)
        model_shared = model if client is None else remote["model"]
    with progress_bar((len(names) - len(given)) * n_chunks, plan.bar, unit="chunk",
                      enable=progress, auto=True, log=log) as bar:
        for method in names:
            if method in given:
                result[method] = given[method]
                log(f"  {method}: from the exact decomposition (same values, no extra model "
                    f"evaluations)")
                continue
            opts = observed_options(method, cfg["methods"]["options"].get(method, {}) or {}, cfg)
            key_of = {**base_key, "stage": plan.key_stage, "method": method,
                      "revision": attribution.get(method).revision,
                      "options": options_key(opts, dataset), plan.size_key: cs}
            game: dict = {}
            if under is not None:  # absent under the baseline: its keys as without removals
                key_of["removal"] = removal.params()
                if not observational_method(method):
                    game = {"removal": under}
            if observational_method(method):
                if observed is None:
                    observed = observed_rows(dataset)
                game = {**game, "data": observed[0], "outcome": observed[1]}
                # what the run gives it (absent for the other methods: their keys without it)
                defaults = attribution.options_of(method)
                key_of["observed"] = {"rows": "X_train + X_test", "outcome": "y_train + y_test",
                                      "sha256": ck.sha256_arrays(*observed),
                                      "game": {k: opts.get(k, defaults[k]) for k in
                                               ("tolerance", "categorical", "empty")
                                               if k in defaults}}
            tree_run = "engine" in base_key  # the run's model is read by the tree engine
            engine_text = attribution_engine(
                model, X, R_used, method,
                {**opts, **game, "engine": method_engine(method, cfg["model"]["engine"], opts)}) \
                if tree_run else "black_box"
            if tree_run:  # the trees' or the model rows' numbers (absent: a black-box run's keys)
                key_of["attribution_engine"] = engine_text
            key = ck.config_hash(key_of)
            store = ck.ChunkStore(plan.folder / method, key)
            opts = attribution.resolve_std_scale(method, opts, X)  # over all rows, not a chunk

            def args_of(i, method=method, opts=opts, game=game):
                lo, hi = i * cs, min(B, (i + 1) * cs)
                kw = method_options(method, opts, chunk_seed(cfg["seed"], plan.stream, method, i),
                                    dataset, cfg["model"]["engine"])
                return lo, hi, method, {**kw, **game}, where

            shared = {"model": model, "X": X, "R": R} if client is None else remote
            if under is not None:  # R as the removal reads it (None: a sampled one reads none)
                shared = {"model": model_shared, "X": X if client is None else remote["X"],
                          "R": R_used}
            chunks, secs, evals, resumed = run_chunks(
                store, n_chunks, task, args_of, shared, bar, interrupt, client,
                describe=lambda i, method=method: f"{method} on {plan.rows} {i * cs}.."
                f"{min(B, (i + 1) * cs) - 1}{plan.suffix}")
            extra = {"seconds_per_pair": secs / max(B - resumed * cs, 1)} if plan.per_pair else {}
            if tree_run:  # which engine each method's attributions ran on (black_box or trees)
                extra["engine"] = engine_text
            stages.add(f"{plan.record}/{method}", secs, model_evaluations=evals,
                       chunks=n_chunks, chunks_resumed=resumed, **extra)
            result[method] = np.concatenate(chunks, axis=0)
            log(f"  {method}: {secs:.1f} s, {evals:,} model evaluations"
                + (f", engine {engine_text}" if tree_run else "")
                + (f" ({resumed} of {n_chunks} chunks resumed)" if resumed else ""))
    return result


def _removal_inputs(rem, X: np.ndarray, R: np.ndarray):
    """(the removal each chunk's methods take, the R they read) for attributions under ``rem``,
    as its game (without a model) holds them: a game with references gives every target's
    references once (``marginal``'s random draws are seeded by the target's index), read as R
    (B, K, n) under :class:`~insdel.removal.Marginal` without a background; a removal that draws
    rows is taken itself with no R, one read off the data with R as given."""
    from ...game import as_game
    from ...removal import Marginal

    game = as_game(None, X, R, removal=rem, rows_only=True)
    if game.references is not None:
        return Marginal(), np.ascontiguousarray(game.references, dtype=np.float64)
    return rem, (None if game.n_draws >= 1 else R)


def removal_plan(cfg: Mapping, out: Path, label: str, rem) -> AttributionPlan:
    """The plan of one policy's attributions under a further removal ``rem``
    (``removal.attributions = "per_removal"``): checkpoints in
    ``out/checkpoints/<label>/attributions-removal-<name>/<method>``."""
    base = experiment_plan(cfg, out, label)
    return dataclasses.replace(base, folder=base.folder / f"attributions-{folder_name(rem.name)}",
                               record=f"{label}/attributions/{folder_name(rem.name)}",
                               bar=f"attributions [{label}, removal {rem.name}]")


def by_removal(p: PolicyRun, *, cfg: Mapping | None = None,
               given: Mapping[str, np.ndarray] | None = None,
               task: Callable = attribution_task) -> tuple[dict, dict]:
    """A policy's attributions under ``removal.attributions``: (by removal name, the primary
    removal's).

    ``"baseline"`` (or only baseline removals): one set, the pairs' reference r's, scored under
    every removal (by removal name: empty). ``"per_removal"``: each removal's own, computed under
    its game (the baseline's as without removals, checkpointed in
    ``checkpoints/<policy>/<method>``; a further removal's in
    ``checkpoints/<policy>/attributions-removal-<name>/<method>``, :func:`removal_plan`).
    ``cfg`` (default ``p.cfg``) names the methods, ``given`` the methods another stage computed
    (baseline game only), ``task`` computes one chunk (:func:`attribution_task`; the
    multi-output run's computes every output of a chunk)."""
    cfg = p.cfg if cfg is None else cfg

    def under(rem):
        if rem is None or rem.is_baseline:
            return attribute_all(cfg, p.model, p.dataset, p.X, p.R,
                                 experiment_plan(cfg, p.out, p.label), p.base_key, p.stages,
                                 p.log, p.progress, p.interrupt, given, p.client, p.remote,
                                 task=task)
        p.log(f"  attributions under removal {rem.name} (removal.attributions = "
              "'per_removal'):")
        return attribute_all(cfg, p.model, p.dataset, p.X, p.R,
                             removal_plan(cfg, p.out, p.label, rem), p.base_key, p.stages,
                             p.log, p.progress, p.interrupt, None, p.client, p.remote,
                             removal=rem, task=task)

    if cfg["removal"].get("attributions", "baseline") != "per_removal" \
            or all(r.is_baseline for r in p.removals):
        return {}, under(None)
    byrem = {rem.name: under(rem) for rem in p.removals}
    return byrem, byrem[p.removals[0].name]


def run(p: PolicyRun) -> None:
    """A policy's attributions (``p.attributions``); methods in ``p.given`` (exact Shapley from
    the decomposition stage) are taken as they are.

    With ``removal.attributions = "per_removal"``, each removal's curves score attributions under
    that removal's own game (``p.removal_attributions``, by removal name; the baseline's are
    the pairs' reference r's, computed as without removals), and ``p.attributions`` are the
    primary removal's (:func:`by_removal`)."""
    p.removal_attributions, p.attributions = by_removal(p, given=p.given)
