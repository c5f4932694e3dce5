"""What both commands do around their stages: the configuration loaded, the output folder chosen,
locked and marked unfinished, and the Dask client (or none) the chunks run on."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from .. import config as _config
from ..distributed import driver_threads, make_client
from .context import logger
from .provenance import default_out, lock_folder, snapshot, unfinish

__all__ = ["loaded", "client_of", "opened"]


def loaded(config, quick: bool) -> dict:
    """The configuration, loaded by :func:`insdel.config.load` unless it already was (its
    ``source`` key); ``quick`` cannot apply to a loaded one (its ``[quick]`` table is gone)."""
    if isinstance(config, Mapping) and "source" in config:
        if quick and not config.get("quick"):
            raise ValueError("quick=True, but the configuration is already loaded without its "
                             "[quick] overrides; pass the file (or dict) itself, or load it with "
                             "insdel.config.load(..., quick=True).")
        return dict(config)
    return _config.load(config, quick=quick)


@contextlib.contextmanager
def client_of(cfg: Mapping, client, verbose: bool):
    """The given client, or the one ``[compute]`` describes (None: serial); with a client, torch
    on the driver uses the workers' thread count meanwhile (:func:`driver_threads`)."""
    log = logger(verbose)
    with contextlib.ExitStack() as stack:
        cl = client if client is not None else stack.enter_context(
            make_client(cfg["compute"], log=log))
        if cl is not None:
            stack.enter_context(driver_threads(cl, log=log))
        yield cl


@contextlib.contextmanager
def opened(cfg: Mapping, out: str | os.PathLike | None, wait: bool, client, verbose: bool, *,
           kind: str) -> Iterator[tuple[Path, dict, object]]:
    """The run's output folder, made, locked (:func:`lock_folder`: refused when it holds another
    ``kind`` of run) and marked unfinished
    (:func:`unfinish`) for the run's whole length, with a snapshot of the files already there
    (:func:`snapshot`: the manifest lists only what the run writes) and the client.

    Yields
    ------
    tuple
        (output folder, snapshot, client or None).
    """
    out = Path(out if out is not None else (cfg["out"] or default_out(cfg["name"])))
    out.mkdir(parents=True, exist_ok=True)
    lock = lock_folder(out, wait, kind=kind)
    try:
        unfinish(out)
        before = snapshot(out)
        with client_of(cfg, client, verbose) as cl:
            yield out, before, cl
    finally:
        lock.release()
