"""Reference images as policies (paper Appendix A.1, Table 5; Petsiuk et al. 2018).

Images are flattened rows (channel, row, column; :mod:`insdel.images`). Every policy takes the
image ``shape`` (C, H, W) and checks it against the rows:

* ``black`` / ``white``: a constant image (``value``, default 0.0 / 1.0: give the values of black and
  white in the model's input space when images are normalised);
* ``channel_mean``: each channel at its mean over a background set of images (default the pool);
* ``blurred``: each target blurred with RISE's kernel (11 x 11, sigma 5: :func:`insdel.images.blur`);
* ``noise``: uniform noise in [``low``, ``high``], seeded by the pairing seed and the target (its
  pool index, or its position when targets are given as rows), so a target's noise does not depend
  on which other targets are paired with it;
* ``image``: any given image.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_scalar
from .base import Pairing, Policy
from .registry import _builtin
from .simple import _constant_pairing


def _shape(params, n: int, name: str):
    from ..images import check_shape

    shape = params.get("shape")
    if shape is None:
        raise ValueError(f"{name}: give shape = (C, H, W), the image shape of the flattened rows.")
    return check_shape(shape, n, name=f"{name}: shape")


class _ImagePolicy(Policy):
    accepts_rows = True

    def __init__(self, shape=None, **params):
        if shape is not None:  # checked now: (1, 8.5, 8) must not become (1, 8, 8)
            from ..images import check_shape

            shape = list(check_shape(shape, name=f"{self.name}: shape"))
        self.params = {"shape": shape, **params}


@_builtin("black")
class Black(_ImagePolicy):
    """A constant black image (``value`` in the model's input space, default 0.0)."""

    default_value = 0.0

    def __init__(self, shape=None, value: float | None = None):
        v = self.default_value if value is None else check_scalar(value, f"{self.name}: value",
                                                                  float, finite=True)
        super().__init__(shape, value=v)

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        n = T.shape[1]
        _shape(self.params, n, self.name)
        return _constant_pairing(self.name, np.full(n, self.params["value"]), T, tidx)


@_builtin("white")
class White(Black):
    """A constant white image (``value``, default 1.0)."""

    default_value = 1.0


@_builtin("channel_mean")
class ChannelMean(_ImagePolicy):
    """Each channel at its mean over a background set of images (default: the pool)."""

    def __init__(self, shape=None, background=None):
        if background is not None:
            background = as_float_array("background", background, ndim=(2,))
        super().__init__(shape, background=background)

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        n = T.shape[1]
        C, H, W = _shape(self.params, n, self.name)
        B = self.params["background"]
        B = pool if B is None else B
        if B.shape[1] != n:
            raise ValueError(f"channel_mean: background has {B.shape[1]} columns, the images {n}.")
        means = B.reshape(-1, C, H * W).mean(axis=(0, 2))
        ref = np.repeat(means, H * W)
        return _constant_pairing(self.name, ref, T, tidx, {"channel_means": means.tolist()})


@_builtin("blurred")
class Blurred(_ImagePolicy):
    """Each target blurred (RISE's insertion substrate: ``klen`` x ``klen`` kernel, ``sigma``)."""

    def __init__(self, shape=None, klen: int = 11, sigma: float = 5.0):
        from ..images import rise_kernel

        rise_kernel(klen, sigma)  # validates: klen a positive odd integer (11.7 is not 11)
        super().__init__(shape, klen=int(klen), sigma=float(sigma))

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        from ..images import blur

        n = T.shape[1]
        C, H, W = _shape(self.params, n, self.name)
        R = blur(T.reshape(-1, C, H, W), klen=self.params["klen"],
                 sigma=self.params["sigma"]).reshape(T.shape)
        return Pairing(X=T.copy(), R=R, target_index=tidx.copy(),
                       reference_index=np.full(T.shape[0], -1, np.int64), name=self.name,
                       params={})


_NOISE_STREAM = 0x1A6E  # the noise policy's word in its seed sequences


@_builtin("noise")
class Noise(_ImagePolicy):
    """Uniform noise in [``low``, ``high``], one seeded image per target.

    Each target's image comes from its own stream, ``SeedSequence([seed, 0x1A6E, kind, key])``
    with ``key`` the target's pool index (``kind`` 0) or, for targets given as rows, its position
    among them (``kind`` 1): pairing targets ``[0, 1]`` or ``[1]`` gives target 1 the same image.
    """

    def __init__(self, shape=None, low: float = 0.0, high: float = 1.0):
        if not float(low) < float(high):
            raise ValueError(f"noise: need low < high; got low={low!r}, high={high!r}.")
        super().__init__(shape, low=float(low), high=float(high))

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        n = T.shape[1]
        _shape(self.params, n, self.name)
        # pool indices (kind 0), or positions among targets given as rows (tidx == -1: kind 1)
        rows_given = bool(tidx.size) and bool((tidx < 0).all())
        keys = np.arange(T.shape[0]) if rows_given else tidx
        R = np.empty(T.shape, dtype=np.float64)
        for i, k in enumerate(keys):
            rng = np.random.default_rng(np.random.SeedSequence(
                [int(seed), _NOISE_STREAM, int(rows_given), int(k)]))
            R[i] = rng.uniform(self.params["low"], self.params["high"], size=n)
        return Pairing(X=T.copy(), R=R, target_index=tidx.copy(),
                       reference_index=np.full(T.shape[0], -1, np.int64), name=self.name,
                       params={})


@_builtin("image")
class Image(_ImagePolicy):
    """A given reference image (C, H, W) or its flattened row, for every target."""

    def __init__(self, shape=None, image=None):
        if image is None:
            raise ValueError("image: give image = the reference image (C, H, W) or its row.")
        img = as_float_array("image", np.asarray(image, dtype=np.float64).reshape(-1), ndim=(1,))
        super().__init__(shape, image=img)

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        n = T.shape[1]
        _shape(self.params, n, self.name)
        img = self.params["image"]
        if img.shape[0] != n:
            raise ValueError(f"image: the reference image has {img.shape[0]} values, the images "
                             f"{n}.")
        return _constant_pairing(self.name, img, T, tidx)
