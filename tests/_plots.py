"""Helpers for the figure tests: what matplotlib drew."""

from __future__ import annotations

import matplotlib
import numpy as np


def error_segments(ax) -> list[np.ndarray]:
    """Every error-bar segment ((2, 2) array of end points) drawn on ax."""
    segs = []
    for c in ax.containers:
        if isinstance(c, matplotlib.container.ErrorbarContainer):
            for coll in c.lines[2]:
                segs.extend(np.asarray(s, dtype=float) for s in coll.get_segments())
    return segs
