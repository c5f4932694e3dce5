"""The data stage: the configured data set, its fingerprint and its feature groups, the target pool."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import _checkpoint as ck
from ... import config as _config
from ...groups import Groups
from ...report import missing_rows_text

__all__ = ["load_dataset", "dataset_info", "groups_of", "groups_text", "log_dataset",
           "select_pool", "refuse_groups", "ungroup_advice"]


def load_dataset(cfg: dict):
    """The data set of ``[data]`` (recipe and options) at the run's seed."""
    from ... import datasets

    d = cfg["data"]
    return datasets.load(d["recipe"], seed=cfg["seed"], **dict(d["options"]))


def dataset_info(cfg: dict, dataset) -> dict:
    """Name, file (path and sha256), rows, features and a hash of the arrays the run uses."""
    opts = cfg["data"]["options"]
    # a configuration file's relative paths are already absolute (insdel.config.load); a dict's
    # are relative to the current folder, and `~` is the user's home as the recipes read it
    path = next((opts[k] for k in _config.PATH_OPTIONS if opts.get(k)), None)
    path = None if path is None else Path(str(path)).expanduser()
    # the display name (a user's file: its name, not the recipe's "table")
    name = getattr(dataset, "label", None) or getattr(dataset, "name", cfg["data"]["recipe"])
    info = {"name": name, "recipe": cfg["data"]["recipe"],
            "file": None if path is None else str(path.resolve()),
            "file_sha256": None if path is None or not path.is_file()
            else ck.sha256_file(path),
            "rows_train": int(len(dataset.X_train)), "rows_test": int(len(dataset.X_test)),
            "features": int(np.asarray(dataset.X_test).shape[1]),
            "feature_names": list(getattr(dataset, "feature_names", []) or []),
            "arrays_sha256": ck.sha256_arrays(dataset.X_train, dataset.y_train, dataset.X_test,
                                              dataset.y_test)}
    rinfo = getattr(dataset, "info", None) or {}
    if "n_dropped_missing" in rinfo:  # rows the recipe read and dropped for missing values
        info["rows_read"] = rinfo.get("n_read")
        info["rows_dropped_missing"] = int(rinfo["n_dropped_missing"])
        if rinfo.get("missing_by_column") is not None:
            info["missing_by_column"] = dict(rinfo["missing_by_column"])
    grp = groups_of(dataset)
    if grp is not None:
        info["units"] = grp.m
        info["groups"] = {grp.names[g]: grp.columns(g).tolist() for g in range(grp.m)
                          if grp.sizes[g] > 1}
        info["groups_text"] = groups_text(grp)
    return info


def groups_of(dataset) -> Groups | None:
    """The data set's feature groups (``Dataset.groups``), None when absent or all singletons."""
    grp = getattr(dataset, "groups", None)
    if grp is None or grp.singleton:
        return None
    return grp


def groups_text(grp: Groups) -> str:
    """``"39 units: Location (one group of 30 columns), 38 single columns"``."""
    big = [f"{grp.names[g]} (one group of {int(grp.sizes[g])} columns)" for g in range(grp.m)
           if grp.sizes[g] > 1]
    single = int((grp.sizes == 1).sum())
    rest = [f"{single} single column{'s' if single != 1 else ''}"] if single else []
    return f"{grp.m} units: " + ", ".join(big + rest)


def refuse_groups(cfg: dict, dataset, why: str) -> None:
    """A command that works on single features refuses a data set with feature groups; ``why``
    says what it does ("ROAR removes single features"), and the advice names the option of the
    configuration's own recipe that made the groups (:func:`ungroup_advice`)."""
    grp = groups_of(dataset)
    if grp is not None:
        raise ValueError(f"data set {cfg['data']['recipe']!r} declares feature groups "
                         f"({groups_text(grp)}); {why} and does not support groups yet; "
                         f"{ungroup_advice(cfg, grp)}.")


def ungroup_advice(cfg: dict, grp: Groups) -> str:
    """How to load the configuration's data set without its groups, in its recipe's own terms:
    the table recipe's ``categorical`` columns, the housing recipes' ``location``."""
    opts = dict(cfg["data"]["options"])
    if opts.get("categorical"):
        cats = list(opts["categorical"]) if not isinstance(opts["categorical"], str) else [
            opts["categorical"]]
        return (f"leave the one-hot column(s) {cats} out: remove data.options.categorical and "
                f"add them to data.options.drop")
    if opts.get("location") == "onehot":
        return "set data.options.location = 'drop' (the recipe's default)"
    big = [grp.names[g] for g in range(grp.m) if grp.sizes[g] > 1]
    return (f"load the data set without the groups {big} (see the options of recipe "
            f"{cfg['data']['recipe']!r}: insdel datasets list)")


def policy_references(cfg: dict, model, X: np.ndarray, spec, progress, log, *, key: str,
                      rows: str, need: str) -> np.ndarray:
    """The references a policy (``spec``, read at ``key``) pairs with every row of X, in order:
    refused when it pairs fewer rows or reorders them (``need`` says why every row needs one)."""
    from ... import policies

    pol = policies.load(spec)
    pairing = pol.pair(model, X, seed=cfg["seed"], progress=progress)
    if len(pairing) != X.shape[0] or not np.array_equal(pairing.target_index,
                                                        np.arange(X.shape[0])):
        raise ValueError(f"{key} = {spec!r}: the policy paired {len(pairing)} of the "
                         f"{X.shape[0]} {rows} (or reordered them); {need}.")
    log(f"reference: policy {pol!r}, mean |D| {pairing.mean_diff():.2f}")
    return np.ascontiguousarray(pairing.R)


def log_dataset(data_info: dict, log, *, file: bool = True) -> None:
    """Say what data the run uses: name, recipe, the user's file (``file``) and its hash, rows,
    features, and the rows dropped for missing values."""
    log(f"data: {data_info['name']} (recipe {data_info['recipe']}"
        + (f", file {data_info['file']} sha256 {data_info['file_sha256'][:12]}"
           if file and data_info["file"] else "")
        + f"): {data_info['rows_train']} train / {data_info['rows_test']} test rows, "
        f"{data_info['features']} features")
    if "rows_dropped_missing" in data_info:
        log(f"data: {missing_rows_text(data_info)}")


def select_pool(dataset, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` test rows drawn at ``seed`` (all of them when there are fewer), in their order, and
    their indices into the test split."""
    X = np.asarray(dataset.X_test, dtype=np.float64)
    if n >= X.shape[0]:
        idx = np.arange(X.shape[0])
    else:
        rng = np.random.default_rng([seed, 7])
        idx = np.sort(rng.choice(X.shape[0], size=n, replace=False))
    return X[idx], idx
