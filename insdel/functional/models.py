"""Small torch models of the functional tests, with known Shapley values and orderings.

Every model is a float64 ``torch.nn.Module`` (its weights are buffers), so gradient methods
(integrated gradients, DeepLIFT, gradients) and model-agnostic methods run on the same object.
Nonlinearities are ``nn.ReLU`` / ``nn.Softplus`` modules, which captum's DeepLIFT recognises.
"""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn

__all__ = ["Quadratic", "ReluNet", "MonotoneAdditive"]


def _t(a: ArrayLike) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


class Quadratic(nn.Module):
    """``f(z) = b + w·z + sum_{a<b} C_ab z_a z_b`` (additive plus pure pairwise interactions).

    With target x, reference r and d = x - r its anchored decomposition has
    ``Delta_j = d_j (w_j + sum_k C_jk r_k)`` and ``Delta_{jk} = C_jk d_j d_k`` (C symmetrised), so
    the exact baseline Shapley values are ``phi_j = d_j (w_j + sum_k C_jk (x_k + r_k) / 2)``
    (:meth:`shapley`).

    Parameters
    ----------
    w : array_like (n,)
        Linear weights.
    C : array_like (n, n), optional
        Interaction weights; only the strict upper triangle is used.
    bias : float, default 0
    """

    def __init__(self, w: ArrayLike, C: ArrayLike | None = None, bias: float = 0.0) -> None:
        super().__init__()
        w = np.asarray(w, dtype=np.float64)
        n = w.shape[0]
        C = np.zeros((n, n)) if C is None else np.triu(np.asarray(C, dtype=np.float64), 1)
        self.register_buffer("w", _t(w))
        self.register_buffer("C", _t(C))
        self.register_buffer("bias", _t(bias))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.bias + z @ self.w + ((z @ self.C) * z).sum(dim=1)

    def shapley(self, X: np.ndarray, R: np.ndarray) -> np.ndarray:
        """Closed-form exact baseline Shapley values (B, n) of the pairs (X, R)."""
        w = self.w.numpy()
        C = self.C.numpy()
        S = C + C.T
        return (X - R) * (w + (X + R) @ S / 2.0)


class ReluNet(nn.Module):
    """``f(z) = b + w·z + sum_i s_i relu(v_i·z - c_i)``: one hidden ReLU layer plus a linear skip.

    Enough for saturation (``min(a, c) = a - relu(a - c)``), logical AND on binary inputs and
    off-manifold traps (``relu(|z_a - z_b| - eps)`` as two units).

    Parameters
    ----------
    w : array_like (n,)
        Skip weights.
    V : array_like (h, n)
        Hidden units' weights.
    c : array_like (h,)
        Hidden units' thresholds.
    s : array_like (h,)
        Output weights of the hidden units.
    bias : float, default 0
    """

    def __init__(self, w: ArrayLike, V: ArrayLike, c: ArrayLike, s: ArrayLike,
                 bias: float = 0.0) -> None:
        super().__init__()
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
        self.hidden = nn.Linear(V.shape[1], V.shape[0], dtype=torch.float64)
        self.out = nn.Linear(V.shape[0], 1, dtype=torch.float64)
        self.skip = nn.Linear(V.shape[1], 1, bias=False, dtype=torch.float64)
        self.relu = nn.ReLU()
        with torch.no_grad():
            self.hidden.weight.copy_(_t(V))
            self.hidden.bias.copy_(-_t(c))
            self.out.weight.copy_(_t(s).reshape(1, -1))
            self.out.bias.fill_(float(bias))
            self.skip.weight.copy_(_t(w).reshape(1, -1))
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return (self.out(self.relu(self.hidden(z))) + self.skip(z))[:, 0]


class MonotoneAdditive(nn.Module):
    """``f(z) = softplus(w·z)``: a strictly increasing function of an additive one (App. B.2).

    The exact Shapley ordering (and the integrated-gradients ordering) maximises the insertion AUC.

    Parameters
    ----------
    w : array_like (n,)
    """

    def __init__(self, w: ArrayLike) -> None:
        super().__init__()
        w = np.asarray(w, dtype=np.float64)
        self.lin = nn.Linear(w.shape[0], 1, bias=False, dtype=torch.float64)
        self.act = nn.Softplus()
        with torch.no_grad():
            self.lin.weight.copy_(_t(w).reshape(1, -1))
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.act(self.lin(z))[:, 0]
