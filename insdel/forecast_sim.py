"""A forecasting experiment with known structure (``insdel reproduce forecast-sim``,
docs/multi_output.md).

The simulator: per series, a target ``y`` (channel 0), a covariate ``u`` (channel 1) that leads
the target by ``lead`` steps, and ``channels - 2`` distractor channels::

    u_t = 0.5 u_{t-1} + e_t,    d_t = 0.5 d_{t-1} + e'_t,
    y_t = ar y_{t-1} + 0.5 sin(2 pi t / period + phase) + 0.8 u_{t - lead} + 0.1 e''_t.

Windows of ``length`` steps (all channels; layout of :mod:`insdel.timeseries`) forecast the next
``horizon`` values of y with a small torch MLP on the flattened window (H outputs). Output h
forecasts ``y_{T+h}``; its covariate term ``u_{T+h-lead}`` is in the window at lag
``lead - 1 - h`` for ``h < lead``: the check that the leading covariate is found.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._threads import torch_threads
from ._validation import check_positive_int
from .timeseries import sliding_windows

__all__ = ["simulate", "windowed", "Forecaster", "train_forecaster", "lead_found"]


def simulate(n_series: int, steps: int, *, channels: int = 3, lead: int = 3, period: int = 12,
             ar: float = 0.6, seed: int = 0) -> np.ndarray:
    """``n_series`` series of ``steps`` steps x ``channels`` channels (n_series, steps, C),
    float64 (the model above; a burn-in of 50 steps is dropped)."""
    n_series = check_positive_int(n_series, "n_series")
    steps = check_positive_int(steps, "steps")
    C = check_positive_int(channels, "channels", minimum=2)
    lead = check_positive_int(lead, "lead")
    period = check_positive_int(period, "period")
    rng = np.random.default_rng(seed)
    T = steps + 50 + lead
    e = rng.normal(size=(T, n_series, C))
    phase = rng.uniform(0, 2 * np.pi, size=n_series)
    S = np.zeros((T, n_series, C))
    for t in range(1, T):
        S[t, :, 1:] = 0.5 * S[t - 1, :, 1:] + e[t, :, 1:]
        u = S[t - lead, :, 1] if t >= lead else 0.0
        S[t, :, 0] = (ar * S[t - 1, :, 0] + 0.5 * np.sin(2 * np.pi * t / period + phase)
                      + 0.8 * u + 0.1 * e[t, :, 0])
    return np.ascontiguousarray(S[T - steps:].transpose(1, 0, 2))


def windowed(series: np.ndarray, length: int, horizon: int, *, stride: int = 1
             ) -> tuple[np.ndarray, np.ndarray]:
    """The windows (N, L C) of every series and their next ``horizon`` target values (N, H)."""
    parts = [sliding_windows(s, length, horizon=horizon, target=0, stride=stride)
             for s in series]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def Forecaster(n: int, horizon: int, hidden: int = 32):
    """A small torch MLP on the flattened window: n -> hidden -> ReLU -> hidden -> horizon."""
    import torch

    return torch.nn.Sequential(torch.nn.Linear(n, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, horizon))


def train_forecaster(X: np.ndarray, Y: np.ndarray, *, hidden: int = 32, epochs: int = 30,
                     batch_size: int = 256, lr: float = 3e-3, seed: int = 0,
                     num_threads: int | None = 1, start: tuple[int, np.ndarray] | None = None,
                     on_epoch: Callable[[int, np.ndarray], None] | None = None):
    """The :func:`Forecaster` trained by Adam on mean squared error (float32, seeded), in eval
    mode.

    Parameters
    ----------
    X, Y : numpy.ndarray
        Flattened windows (N, n) and their targets (N, H).
    hidden, epochs, batch_size, lr, seed
        The MLP's width, the number of passes over the shuffled rows, the minibatch size, Adam's
        learning rate (its other settings: torch's defaults) and the seed of the initial weights
        and of the shuffles.
    num_threads : int or None, default 1
        torch's intra-op thread count while training (the caller's count is restored
        afterwards); None trains under torch's current setting. The trained floats can depend on
        it (a matrix product's sums split over threads round differently), so a fixed count
        gives the same weights on every machine whatever its cores; one thread is also the
        fastest for a model this small (:data:`insdel._threads.SMALL_WORK`).
    start : (int, numpy.ndarray), optional
        Resume after ``start[0]`` finished epochs from the training state that ``on_epoch`` gave
        after that epoch (with the same data and settings): the result is the bytes of an
        uninterrupted training. ``start[0] == epochs`` trains nothing and returns the trained
        network.
    on_epoch : callable, optional
        ``on_epoch(k, state)`` after each epoch trained here, ``k`` the number of finished
        epochs and ``state`` the training state (float32: the weights, then Adam's first and
        second moments, each in the order of ``parameters()``).

    Returns
    -------
    torch.nn.Module
        The trained network, in eval mode.
    """
    import torch  # noqa: F401 (torch_threads sets the count of an imported torch)

    epochs = check_positive_int(epochs, "epochs")
    if num_threads is not None:
        num_threads = check_positive_int(num_threads, "num_threads")
    with torch_threads(num_threads):
        return _train(X, Y, hidden=hidden, epochs=epochs, batch_size=batch_size, lr=lr,
                      seed=seed, start=start, on_epoch=on_epoch)


def _train(X, Y, *, hidden, epochs, batch_size, lr, seed, start, on_epoch):
    """:func:`train_forecaster`'s training, under the thread count it set."""
    import torch

    torch.manual_seed(seed)
    net = Forecaster(X.shape[1], Y.shape[1], hidden)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    Xt = torch.as_tensor(X, dtype=torch.float32)
    Yt = torch.as_tensor(Y, dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    done = 0
    if start is not None:
        done = start[0]
        if not 0 <= done <= epochs:
            raise ValueError(f"start = ({done}, ...): the finished epochs must be between 0 and "
                             f"epochs = {epochs}.")
        _set_training_state(net, opt, start[1], steps=done * -(-len(Xt) // batch_size))
        for _ in range(done):  # the shuffles' generator where the finished epochs left it
            torch.randperm(len(Xt), generator=g)
    for epoch in range(done, epochs):
        perm = torch.randperm(len(Xt), generator=g)
        for s in range(0, len(Xt), batch_size):
            i = perm[s:s + batch_size]
            opt.zero_grad()
            loss = ((net(Xt[i]) - Yt[i]) ** 2).mean()
            loss.backward()
            opt.step()
        if on_epoch is not None:
            on_epoch(epoch + 1, _training_state(net, opt))
    return net.eval()


def _training_state(net, opt) -> np.ndarray:
    """The weights, then Adam's first and second moments, as one float32 vector."""
    import torch

    params = list(net.parameters())
    parts = [p.detach() for p in params]
    parts += [opt.state[p][name] for name in ("exp_avg", "exp_avg_sq") for p in params]
    return torch.cat([t.reshape(-1) for t in parts]).numpy().astype(np.float32, copy=True)


def _set_training_state(net, opt, state: np.ndarray, *, steps: int) -> None:
    """Load a :func:`_training_state` vector (taken after ``steps`` optimiser steps)."""
    import torch

    params = list(net.parameters())
    sizes = [p.numel() for p in params]
    state = np.asarray(state)
    if state.dtype != np.float32 or state.shape != (3 * sum(sizes),):
        raise ValueError(f"a training state of this forecaster is float32 of shape "
                         f"({3 * sum(sizes)},); got {state.dtype} of shape {state.shape}.")
    chunks = torch.from_numpy(state.copy()).split(sizes * 3)
    with torch.no_grad():
        for p, w in zip(params, chunks[:len(params)], strict=True):
            p.copy_(w.reshape(p.shape))
    if steps:  # Adam's state as its own first step sets it up (a float scalar step count)
        for k, p in enumerate(params):
            opt.state[p] = {"step": torch.tensor(float(steps)),
                            "exp_avg": chunks[len(params) + k].reshape(p.shape).clone(),
                            "exp_avg_sq": chunks[2 * len(params) + k].reshape(p.shape).clone()}


def lead_found(heat: np.ndarray, lead: int) -> dict:
    """Whether the leading covariate is found in a (lag, channel) heat map of output 0's mean
    absolute attributions (``heat[k, c]``, lag k): channel 1 must hold the largest total among
    the non-target channels and its largest cell must be at lag ``lead - 1``."""
    totals = heat.sum(axis=0)
    top_channel = 1 + int(np.argmax(totals[1:]))
    top_lag = int(np.argmax(heat[:, 1]))
    return {"top_covariate_channel": top_channel, "top_covariate_lag": top_lag,
            "expected_lag": lead - 1,
            "found": bool(top_channel == 1 and top_lag == lead - 1)}
