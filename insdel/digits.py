"""A real image example with no download: scikit-learn's 8 x 8 ``digits`` and a small CNN.

``load()`` is the data recipe (1,797 images, pixel values scaled to [0, 1], 0 = background, a
seeded stratified train/test split); ``PRESETS["digits_cnn"]`` the model preset; ``train_cnn``
trains it in seconds on the CPU (seeded, one thread). The network takes images (N, 1, 8, 8);
:func:`insdel.images.flat_module` wraps it for flattened rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._registry import Registry

__all__ = ["DigitsData", "load", "PRESETS", "available", "get", "options_of", "DigitsCNN",
           "train_cnn", "SHAPE"]

SHAPE = (1, 8, 8)

#: Model presets: the small CNN of the paper-images example.
PRESETS: dict[str, dict[str, Any]] = {
    "digits_cnn": {"channels": (16, 32), "hidden": 64, "epochs": 30, "lr": 3e-3,
                   "batch_size": 64, "weight_decay": 1e-4},
}
_PRESETS = Registry("digits preset", PRESETS, copy=True)


@dataclass
class DigitsData:
    """The digits images and labels, split into train and test.

    Attributes
    ----------
    X_train, X_test : ndarray (N, 1, 8, 8) float64 in [0, 1]
    y_train, y_test : ndarray (N,) int64
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def load(*, test_fraction: float = 0.2, seed: int = 0) -> DigitsData:
    """scikit-learn's ``load_digits`` as images (N, 1, 8, 8) in [0, 1] with a stratified split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from ._validation import check_positive_int, check_scalar

    test_fraction = check_scalar(test_fraction, "test_fraction", float, min_val=0.0, max_val=1.0,
                                 include_boundaries="neither", finite=True)
    seed = check_positive_int(seed, "seed", minimum=0)  # random_state: 1.5 must not become 1
    d = load_digits()
    X = (d.images / 16.0).astype(np.float64)[:, None, :, :]
    y = d.target.astype(np.int64)
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=float(test_fraction), random_state=int(seed),
                                      stratify=y)
    return DigitsData(np.ascontiguousarray(Xa), ya, np.ascontiguousarray(Xb), yb)


def _module(channels, hidden):
    import torch.nn as nn

    c1, c2 = channels
    return nn.Sequential(
        nn.Conv2d(1, c1, 3, padding=1), nn.ReLU(),
        nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * 4 * 4, hidden), nn.ReLU(), nn.Linear(hidden, 10),
    )


def DigitsCNN(preset: str = "digits_cnn"):  # noqa: N802 - a factory named like the class it makes
    """An untrained CNN of a preset: conv 3x3 -> ReLU -> conv 3x3 -> ReLU -> max-pool 2 -> dense
    -> ReLU -> 10 class scores (logits), float32."""
    p = get(preset)
    return _module(tuple(p["channels"]), int(p["hidden"]))


def available() -> list[str]:
    """Names of the model presets, sorted."""
    return _PRESETS.available()


def get(name: str) -> dict[str, Any]:
    """A copy of model preset ``name``. Raises :class:`insdel.UnknownNameError` (a
    ``ValueError``) for an unknown name."""
    return _PRESETS.get(name)


def options_of(name: str) -> dict[str, Any]:
    """The settings of model preset ``name`` with their values (a copy, as :func:`get`)."""
    return _PRESETS.get(name)


def train_cnn(data: DigitsData, *, preset: str = "digits_cnn", seed: int = 0,
              epochs: int | None = None):
    """Train the preset's CNN on ``data.X_train`` (Adam, cross-entropy; seeded, one thread).

    Parameters
    ----------
    data : DigitsData
    preset : str, default "digits_cnn"
    seed : int, default 0
        An integer >= 0.
    epochs : int, optional
        An integer >= 1 (2.7 is an error, not 2); default the preset's.

    Returns
    -------
    (net, info) : the trained torch module in eval mode and a dict with the preset, epochs, seed
    and the test accuracy.
    """
    import torch

    from ._validation import check_positive_int

    p = get(preset)
    seed = check_positive_int(seed, "seed", minimum=0)
    ep = int(p["epochs"]) if epochs is None else check_positive_int(epochs, "epochs")  # 2.7 != 2
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            net = _module(tuple(p["channels"]), int(p["hidden"]))
            opt = torch.optim.Adam(net.parameters(), lr=p["lr"], weight_decay=p["weight_decay"])
            Xt = torch.as_tensor(data.X_train, dtype=torch.float32)
            yt = torch.as_tensor(data.y_train)
            gen = torch.Generator().manual_seed(int(seed))
            loss_fn = torch.nn.CrossEntropyLoss()
            net.train()
            for _ in range(ep):
                perm = torch.randperm(Xt.shape[0], generator=gen)
                for s in range(0, Xt.shape[0], p["batch_size"]):
                    i = perm[s:s + p["batch_size"]]
                    opt.zero_grad()
                    loss_fn(net(Xt[i]), yt[i]).backward()
                    opt.step()
            net.eval()
            with torch.no_grad():
                pred = net(torch.as_tensor(data.X_test, dtype=torch.float32)).argmax(1).numpy()
    finally:
        torch.set_num_threads(threads)
    acc = float((pred == data.y_test).mean())
    return net, {"preset": preset, "epochs": ep, "seed": int(seed), "test_accuracy": acc}
