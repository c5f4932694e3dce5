"""The curves stage: every method's insertion and deletion curves and ABCs of a policy's pairs
(:func:`insdel.evaluate`) under each removal of the run, saved with the pairing and the
attributions.

The primary removal's evaluation goes to the policy's folder (as it always did); every other
removal's to ``<policy>/removal-<name>/``. Each removal's curves are one checkpoint chunk keyed by
everything that determines them, the removal's ``params()`` included (its options, seed and the
hash of its training rows): a resumed run loads a finished removal's curves, and a chunk is never
read by another removal.
"""

from __future__ import annotations

import time

import numpy as np

from ... import _checkpoint as ck
from ..._progress import bars_shown, progress_bar
from ...evaluation import Evaluation, evaluate
from ...game import as_game, engine_text
from ..chunks import chunk_seed, run_chunks
from ..context import PolicyRun
from ..removals import RunRemoval

__all__ = ["run", "evaluate_removal", "curves_key", "attributions_of", "n_random", "pack",
           "unpack_arrays", "to_test_rows"]


def pack(ev: Evaluation) -> np.ndarray:
    """One float64 array (B, W) of what an evaluation is rebuilt from: f(x), f(r), each method's
    ordering and, per mode, the methods' and the random orderings' curves."""
    B = ev.n_pairs
    parts = [ev.fx[:, None], ev.fr[:, None], ev.orders.reshape(B, -1).astype(np.float64)]
    for m in ev.modes:
        parts += [ev.curves[m].reshape(B, -1), ev.random_curves[m].reshape(B, -1)]
    return np.concatenate(parts, axis=1)


def unpack(arr: np.ndarray, p: PolicyRun, methods: list[str], rem: RunRemoval,
           stats: dict) -> Evaluation:
    """The :class:`Evaluation` :func:`pack` stored (the same arrays, bit for bit)."""
    ev_cfg = p.cfg["evaluation"]
    return unpack_arrays(arr, methods=methods, modes=tuple(dict.fromkeys(ev_cfg["modes"])),
                         n_random=n_random(p, rem), normalize=ev_cfg["normalize"],
                         order=ev_cfg["order"], groups=p.groups, n_features=p.X.shape[1],
                         clusters=p.pairing.cluster, feature_names=_feature_names(p),
                         removal=None if rem.is_baseline else rem.params(), stats=stats,
                         where=f"of removal {rem.name!r} of policy {p.label!r}")


def unpack_arrays(arr: np.ndarray, *, methods: list[str], modes: tuple, n_random: int,
                  normalize: bool, order: str, groups, n_features: int, clusters=None,
                  feature_names=None, removal=None, stats: dict | None = None,
                  where: str = "") -> Evaluation:
    """The :class:`Evaluation` :func:`pack` stored, from what the evaluation was run with
    (``where`` names the checkpoint in the error of an array of the wrong width)."""
    B = arr.shape[0]
    m = n_features if groups is None else groups.m
    Km, S = len(methods), m + 1
    col = 2
    orders = arr[:, col:col + Km * m].reshape(B, Km, m).astype(np.int64)
    col += Km * m
    curves, rand = {}, {}
    for mode in modes:
        curves[mode] = np.ascontiguousarray(arr[:, col:col + Km * S].reshape(B, Km, S))
        col += Km * S
        rand[mode] = np.ascontiguousarray(arr[:, col:col + n_random * S].reshape(B, n_random, S))
        col += n_random * S
    if col != arr.shape[1]:
        raise ValueError(f"the curves checkpoint {where} has {arr.shape[1]} columns; expected "
                         f"{col}.")
    return Evaluation.from_curves(
        methods=methods, modes=modes, curves=curves, random_curves=rand,
        fx=np.ascontiguousarray(arr[:, 0]), fr=np.ascontiguousarray(arr[:, 1]),
        normalize=normalize, orders=orders, stats=dict(stats or {}),
        feature_names=feature_names, order=order, groups=groups, clusters=clusters,
        removal=removal)


def _feature_names(p: PolicyRun):
    return list(getattr(p.dataset, "feature_names", None) or []) or None


def n_random(p: PolicyRun, rem: RunRemoval) -> int:
    """Random orderings traced under a removal: ``evaluation.n_random`` for the primary one,
    ``removal.n_random`` (when set) for the others (the report reads the methods' means and the
    ``random`` method; the further random orderings only serve the primary's plots)."""
    own = p.cfg["removal"].get("n_random")
    return int(p.cfg["evaluation"]["n_random"] if rem.primary or own is None else own)


def attributions_of(p: PolicyRun, rem: RunRemoval) -> dict:
    """The attributions removal ``rem``'s curves score: its own (``removal.attributions =
    "per_removal"``), else the policy's one set."""
    return p.removal_attributions.get(rem.name, p.attributions)


def curves_key(p: PolicyRun, rem: RunRemoval) -> str:
    """The checkpoint key of one removal's curves: the policy's key, the evaluation's options, the
    hashes of the attributions it scores and the removal's ``params()``."""
    ev_cfg = p.cfg["evaluation"]
    return ck.config_hash({
        **p.base_key, "stage": "curves", "removal": rem.params(),
        "attributions": [[name, ck.sha256_arrays(np.asarray(a))]
                         for name, a in attributions_of(p, rem).items()],
        "modes": list(ev_cfg["modes"]), "n_random": n_random(p, rem),
        "normalize": ev_cfg["normalize"], "order": ev_cfg["order"],
        "orders_seed": chunk_seed(p.cfg["seed"], p.label, "orders")})


def evaluate_removal(p: PolicyRun, rem: RunRemoval, *, output_weights: np.ndarray | None = None):
    """The evaluation of the policy's pairs and attributions under one removal (checkpointed in
    ``checkpoints/<policy>/removal-<name>``; loaded when a run with the same key finished it).

    With ``output_weights`` (H,) the model has H outputs (``insdel run`` with ``model.outputs``):
    one trace gives every output's curves, stored as one chunk (the outputs' packed evaluations
    side by side; the weights are not in the key: they weigh the aggregate alone), and the
    result is a :class:`insdel.multi_output.MultiEvaluation` with those weights."""
    atts = attributions_of(p, rem)
    methods = list(atts)
    if "random" not in methods:
        methods.append("random")
    store = ck.ChunkStore(p.out / "checkpoints" / p.label / f"removal-{rem.name}",
                          curves_key(p, rem))
    ev_cfg = {**p.cfg["evaluation"], "n_random": n_random(p, rem)}
    stats: dict = {}
    common = {"modes": ev_cfg["modes"], "n_random": ev_cfg["n_random"],
              "seed": chunk_seed(p.cfg["seed"], p.label, "orders"),
              "normalize": ev_cfg["normalize"], "order": ev_cfg["order"],
              "progress": p.progress, "feature_names": _feature_names(p),
              "clusters": p.pairing.cluster}
    # the paper's removal runs the engines' unchanged one-reference path
    removal = None if rem.is_baseline else rem.removal

    def curves_task(i: int):
        """The evaluation under the removal, packed: (array, model evaluations, seconds)."""
        t0 = time.perf_counter()
        try:
            if output_weights is None:
                # the stage builds the game (the front door) once; evaluate reads it
                game = as_game(p.model, p.X, p.R, groups=p.groups,
                               feature_names=_feature_names(p), removal=removal,
                               engine=p.cfg["model"]["engine"])
                stats["engine"] = engine_text(game)
                ev = evaluate(game, None, None, atts, **common)
                packed = pack(ev)
            else:
                ev = _evaluate_outputs(p, atts, removal, output_weights, common)
                packed = np.concatenate([pack(e) for e in ev.evaluations], axis=1)
        except Exception as exc:
            if rem.is_baseline:
                raise
            raise type(exc)(f"curves of policy {p.label!r} under removal {rem.name!r}: "
                            f"{exc}") from exc
        stats.update(ev.stats)
        return packed, int(ev.stats.get("model_evaluations", 0)), time.perf_counter() - t0

    # evaluate's own bar shows the progress; without a bar, one plain line names the stage
    with progress_bar(len(p.X), f"  curves [{p.label}, removal {rem.name}]", unit="pair",
                      enable=False, log=None if bars_shown(p.progress) else p.log) as bar:
        chunks, secs, evals, resumed = run_chunks(store, 1, curves_task, lambda i: (i,), {},
                                                  bar, p.interrupt, None)
    if output_weights is None:
        ev = unpack(chunks[0], p, methods, rem, stats)
    else:
        from ...multi_output import MultiEvaluation

        H = len(output_weights)
        W = chunks[0].shape[1] // H
        ev = MultiEvaluation([unpack(chunks[0][:, h * W:(h + 1) * W], p, methods, rem,
                                     dict(stats)) for h in range(H)], output_weights, stats)
    name = "curves" if rem.primary else f"curves/{rem.folder}"
    p.stages.add(f"{p.label}/{name}", secs, model_evaluations=evals,
                 curve_points=int(stats.get("curve_points", 0)), chunks_resumed=resumed)
    what = "" if rem.primary and rem.is_baseline and len(p.removals) == 1 else \
        f" (removal {rem.name})"
    p.log(f"  curves{what}: " + ("resumed from the checkpoint" if resumed else
                                 f"{evals:,} model evaluations, {secs:.1f} s"))
    return ev


def _evaluate_outputs(p: PolicyRun, atts: dict, removal, output_weights: np.ndarray,
                      common: dict):
    """Every output's evaluation under ``removal`` (None: the baseline), a
    :class:`insdel.multi_output.MultiEvaluation`: one trace of all outputs where the removal's
    game has references (the baseline, ``marginal``, ...); else (a removal that draws its rows,
    or one read off the data) each output view's own trace
    (:func:`insdel.multi_output.output_views`: they share one store of the model's values, and
    each view asks the same rows, so each distinct batch is evaluated once), its
    ``model_evaluations`` those the model made."""
    from ...multi_output import MultiEvaluation, output_views

    kw = {"groups": p.groups, "removal": removal, "engine": p.cfg["model"]["engine"], **common}
    if removal is None or as_game(None, p.X, p.R, removal=removal,
                                  rows_only=True).references is not None:
        return evaluate(p.model, p.X, p.R, atts, output_weights=output_weights, **kw)
    e0 = p.model.n_evals
    evs = [evaluate(v, p.X, p.R, {m: a[:, h] for m, a in atts.items()}, **kw)
           for h, v in enumerate(output_views(p.model))]
    stats = {**evs[0].stats, "curve_points": sum(e.stats.get("curve_points", 0) for e in evs),
             "model_evaluations": int(p.model.n_evals - e0)}
    return MultiEvaluation(evs, output_weights, stats)


def to_test_rows(pairing, pool_idx: np.ndarray) -> None:
    """The pairs are explained from the pool, their indices into the pool sample: translate them
    (in place) to rows of the data set's test split, as the saved pairing gives them (-1 stays
    -1: a reference that is no row)."""
    pairing.target_index = np.where(pairing.target_index >= 0,
                                    pool_idx[np.maximum(pairing.target_index, 0)], -1)
    pairing.reference_index = np.where(pairing.reference_index >= 0,
                                       pool_idx[np.maximum(pairing.reference_index, 0)], -1)


def run(p: PolicyRun) -> None:
    """Evaluate the attributions under each removal (``p.evaluation``: the primary one's;
    ``p.removal_evaluations``: every removal's, by name), then save each evaluation
    (``abc.parquet``, ``curves.npz``, the pairing) in its folder, and ``attributions.npz`` in the
    policy's folder."""
    pairing = p.pairing
    if not p.removals:  # a PolicyRun built without removals: the paper's baseline alone
        from ...removal import Baseline

        p.removals = [RunRemoval(name="baseline", removal=Baseline(), primary=True)]
    evs = {rem.name: evaluate_removal(p, rem) for rem in p.removals}
    to_test_rows(pairing, p.pool_idx)
    for rem in p.removals:
        ev = evs[rem.name]
        folder = p.folder / rem.folder if rem.folder else p.folder
        ev.save(folder, pairing=pairing)
        if not rem.primary:
            ck.atomic_write_text(folder / "summary.csv", ev.summary().to_csv(index=False))
            if rem.name in p.removal_attributions:  # its own attributions, beside its curves
                ck.save_npz(folder / "attributions.npz", p.removal_attributions[rem.name])
    ck.save_npz(p.folder / "attributions.npz", p.attributions)
    p.evaluation = evs[p.removals[0].name]
    p.removal_evaluations = evs
