"""Images in the insertion/deletion test (paper Figure 1, Appendix A.1, Table 5).

An image batch (B, C, H, W) is flattened to rows (B, C*H*W) (C-order: channel, row, column), the
layout every insdel function takes; a pixel→group map makes a pixel (all its channels), a square
patch or a superpixel move as one unit (:mod:`insdel.groups`). References come from the image
policies (``black``, ``white``, ``channel_mean``, ``blurred``, ``noise``, ``image``;
:mod:`insdel.policies.images`). :func:`evaluate` runs the test on a classifier's probability of the
class predicted at x and reports Petsiuk et al.'s AUC (the paper's Table 5 definition: small
deletion AUC and large insertion AUC are good) beside insdel's ABC.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._validation import check_positive_int, check_scalar
from .groups import Groups, check_groups, check_positions, group_attributions
from .groups import positions as make_positions

__all__ = ["check_shape", "flatten", "unflatten", "pixel_groups", "patch_groups",
           "superpixel_groups", "blur", "rise_kernel", "flat_module", "predicted_class",
           "evaluate", "ImageEvaluation", "RISE_KLEN", "RISE_SIGMA"]

#: Petsiuk et al.'s blur for the insertion substrate (RISE's evaluation code: ``gkern(klen=11,
#: nsig=5)``): an 11 x 11 kernel made by Gaussian-filtering a unit impulse with sigma 5.
RISE_KLEN = 11
RISE_SIGMA = 5.0


def check_shape(shape, n: int | None = None, *, name: str = "shape") -> tuple[int, int, int]:
    """An image shape (C, H, W) of positive integers; with ``n``, C*H*W must equal n."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__"):
        raise TypeError(f"{name} must be (C, H, W), three integers; got {shape!r}.")
    if len(shape) != 3:
        raise ValueError(f"{name} must be (C, H, W), three integers; got {shape!r}.")
    # each size an integer >= 1: 2.5 (or True) must not silently become 2 (or 1)
    C, H, W = (check_positive_int(v, f"{name}[{i}] (C, H, W, three integers)")
               for i, v in enumerate(shape))
    if n is not None and C * H * W != n:
        raise ValueError(f"{name} = {(C, H, W)} holds {C * H * W} values but the rows have n = {n} "
                         "columns (images are flattened channel, row, column).")
    return C, H, W


def flatten(images: ArrayLike) -> np.ndarray:
    """(B, C, H, W) or (C, H, W) images -> rows (B, C*H*W) (a single image -> (1, n))."""
    a = np.asarray(images)
    if hasattr(images, "detach"):
        a = images.detach().cpu().numpy()
    if a.ndim == 3:
        a = a[None]
    if a.ndim != 4:
        raise ValueError(f"images must be (B, C, H, W) or (C, H, W); got shape {a.shape}.")
    return np.ascontiguousarray(a.reshape(a.shape[0], -1), dtype=np.float64)


def unflatten(X: ArrayLike, shape) -> np.ndarray:
    """Rows (B, n) -> images (B, C, H, W)."""
    X = np.asarray(X)
    C, H, W = check_shape(shape, X.shape[-1])
    return X.reshape(X.shape[:-1] + (C, H, W))


def _pixel_labels(H: int, W: int) -> np.ndarray:
    return np.arange(H * W, dtype=np.int64).reshape(H, W)


def _to_groups(pix: np.ndarray, C: int, names=None) -> Groups:
    """Pixel labels (H, W) -> a grouping of the C*H*W columns (each label across all channels)."""
    labels = np.broadcast_to(pix[None], (C,) + pix.shape).reshape(-1)
    g = check_groups(np.ascontiguousarray(labels), labels.shape[0], name="pixel labels")
    if names is not None:
        return Groups(labels=g.labels, starts=g.starts, members=g.members, names=list(names))
    return g


def pixel_groups(shape) -> Groups:
    """One group per pixel across channels: m = H*W groups of C columns (group names ``"r,c"``)."""
    C, H, W = check_shape(shape)
    return _to_groups(_pixel_labels(H, W), C, [f"{i},{j}" for i in range(H) for j in range(W)])


def patch_groups(shape, size: int) -> Groups:
    """Square ``size`` x ``size`` patches across channels (the last row/column of patches is
    smaller when ``size`` does not divide H or W); groups numbered row-major, named ``"pr,pc"``."""
    C, H, W = check_shape(shape)
    size = check_positive_int(size, "patch size")
    pw = -(-W // size)
    ii, jj = np.meshgrid(np.arange(H) // size, np.arange(W) // size, indexing="ij")
    pix = ii * pw + jj
    names = [f"{a},{b}" for a in range(-(-H // size)) for b in range(pw)]
    return _to_groups(pix.astype(np.int64), C, names)


def superpixel_groups(image: ArrayLike, *, n_segments: int = 50, compactness: float = 10.0,
                      sigma: float = 0.0, **slic_options) -> Groups:
    """Superpixels of one image (C, H, W) by scikit-image's SLIC, each across all channels.

    A superpixel partition belongs to its image: evaluate each image with its own groups.

    Parameters
    ----------
    image : array_like (C, H, W)
    n_segments, compactness, sigma, **slic_options :
        Passed to :func:`skimage.segmentation.slic` (``channel_axis=-1``; one channel is treated as
        grayscale, ``start_label=0``). SLIC is deterministic.
    """
    from skimage.segmentation import slic

    img = np.asarray(image, dtype=np.float64)
    if img.ndim != 3:
        raise ValueError(f"image must be (C, H, W); got shape {img.shape}.")
    C = img.shape[0]
    hwc = np.moveaxis(img, 0, -1)
    if C == 1:
        seg = slic(hwc[..., 0], n_segments=n_segments, compactness=compactness, sigma=sigma,
                   channel_axis=None, start_label=0, **slic_options)
    else:
        seg = slic(hwc, n_segments=n_segments, compactness=compactness, sigma=sigma,
                   channel_axis=-1, start_label=0, **slic_options)
    _, pix = np.unique(seg, return_inverse=True)
    return _to_groups(pix.reshape(seg.shape).astype(np.int64), C)


def rise_kernel(klen: int = RISE_KLEN, sigma: float = RISE_SIGMA) -> np.ndarray:
    """RISE's blur kernel: a unit impulse at the centre of a ``klen`` x ``klen`` grid filtered by
    :func:`scipy.ndimage.gaussian_filter` with ``sigma`` (Petsiuk et al.'s ``gkern``)."""
    from scipy.ndimage import gaussian_filter

    klen = check_positive_int(klen, "klen")
    if klen % 2 == 0:
        raise ValueError(f"klen must be a positive odd integer; got {klen!r}.")
    sigma = check_scalar(sigma, "sigma", float, min_val=0.0, include_boundaries="neither",
                         finite=True)
    inp = np.zeros((int(klen), int(klen)))
    inp[int(klen) // 2, int(klen) // 2] = 1.0
    return gaussian_filter(inp, float(sigma))


def blur(images: ArrayLike, *, klen: int = RISE_KLEN, sigma: float = RISE_SIGMA) -> np.ndarray:
    """Blur (B, C, H, W) images channel by channel as RISE's insertion substrate does: a 2-D
    convolution with :func:`rise_kernel` and zero padding of ``klen // 2`` (the image keeps its
    size; borders darken towards 0, as in RISE)."""
    from scipy.signal import fftconvolve

    a = np.asarray(images, dtype=np.float64)
    single = a.ndim == 3
    if single:
        a = a[None]
    if a.ndim != 4:
        raise ValueError(f"images must be (B, C, H, W) or (C, H, W); got shape {a.shape}.")
    k = rise_kernel(klen, sigma)
    out = fftconvolve(a, k[None, None], mode="same", axes=(2, 3))
    return out[0] if single else out


def flat_module(net, shape):
    """A torch module taking flattened rows (N, C*H*W) for an image network taking (N, C, H, W)
    (gradients flow through it, so every attribution method works on rows)."""
    import torch

    C, H, W = check_shape(shape)
    return torch.nn.Sequential(torch.nn.Unflatten(1, (C, H, W)), net)


def predicted_class(f, X: ArrayLike, *, batch_size: int | None = None) -> np.ndarray:
    """The class a classifier predicts at each row of X (argmax of its outputs), shape (B,)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be rows (B, n); got shape {X.shape}.")
    bs = 4096 if batch_size is None else int(batch_size)
    cls = np.empty(X.shape[0], dtype=np.int64)
    for s in range(0, X.shape[0], bs):
        y = _raw_outputs(f, X[s:s + bs])
        if y.ndim != 2 or y.shape[1] < 2:
            raise ValueError("output='predicted' needs a classifier returning scores (N, k) with "
                             f"k >= 2; got shape {y.shape}.")
        cls[s:s + bs] = np.argmax(y, axis=1)
    return cls


def _raw_outputs(f, X: np.ndarray) -> np.ndarray:
    import torch

    if isinstance(f, torch.nn.Module):
        p = next(f.parameters(), None)
        dtype = p.dtype if p is not None else torch.float32
        dev = p.device if p is not None else "cpu"
        with torch.no_grad():
            return f(torch.as_tensor(X, dtype=dtype, device=dev)).detach().cpu().double().numpy()
    y = f.predict_proba(X) if hasattr(f, "predict_proba") else f(X)
    return np.asarray(y, dtype=np.float64)


def _probability_of(c: int, probability: bool):
    """``output=`` for the adapter: the softmax probability (or the raw score) of class c."""
    def out(y):
        if hasattr(y, "softmax"):
            return y.softmax(dim=1)[:, c] if probability else y[:, c]
        y = np.asarray(y)
        if probability:
            z = y - y.max(axis=1, keepdims=True)
            e = np.exp(z)
            return (e / e.sum(axis=1, keepdims=True))[:, c]
        return y[:, c]
    out.__name__ = f"{'softmax' if probability else 'score'}[{c}]"
    return out


@dataclass
class ImageEvaluation:
    """Result of :func:`evaluate`: the :class:`insdel.Evaluation` (curves of the class
    probability, ABCs), the class tested per image and Petsiuk's AUC per image, method and mode.

    Attributes
    ----------
    evaluation : insdel.Evaluation
    classes : ndarray (B,)
        The class whose probability is traced (predicted at x).
    auc : pandas.DataFrame
        Columns ``pair, method, mode, auc`` (Petsiuk's AUC on the actual positions).
    """

    evaluation: object
    classes: np.ndarray
    auc: pd.DataFrame

    def table(self) -> pd.DataFrame:
        """Per method and mode: mean Petsiuk AUC and mean ABC (with standard errors)."""
        ev = self.evaluation
        a = self.auc.groupby(["method", "mode"])["auc"].agg(["mean", "sem"]).add_suffix("_auc")
        b = ev.abc.groupby(["method", "mode"])["abc"].agg(["mean", "sem"]).add_suffix("_abc")
        t = a.join(b).reset_index()
        t.columns = ["method", "mode", "auc", "auc_se", "abc", "abc_se"]
        return t


def evaluate(f, X: ArrayLike, R: ArrayLike, attributions: Mapping[str, ArrayLike], *, shape,
             groups="pixel", patch: int | None = None, step: int | None = None,
             fractions: ArrayLike | None = None, max_fraction: float | None = None,
             output: str | int = "predicted", probability: bool = True,
             order: str = "signed", modes: Sequence[str] = ("insertion", "deletion"),
             n_random: int = 5, add_random: bool = True, seed: int = 0,
             batch_size: int | None = None, progress: bool | None = None) -> ImageEvaluation:
    """The image insertion/deletion test on a classifier (paper Figure 1 and Table 5).

    Parameters
    ----------
    f : torch.nn.Module or callable
        Takes flattened rows (N, C*H*W) (see :func:`flat_module`) and returns class scores (N, k).
    X, R : array_like (B, C*H*W)
        Images and references (from an image policy), flattened.
    attributions : mapping name -> array (B, C*H*W) or (B, m)
        Saliency per column (summed per group) or per group.
    shape : (C, H, W)
    groups : "pixel", "patch", Groups or any grouping :func:`insdel.groups.check_groups` takes
        ``"pixel"``: one group per pixel across channels; ``"patch"``: ``patch`` x ``patch``
        squares.
    patch : int, optional
        Patch size for ``groups="patch"``.
    step, fractions, max_fraction :
        Groups per step, curve points at fractions, partial curves (:func:`insdel.groups.positions`).
    output : "predicted" or int, default "predicted"
        The class whose probability is traced: the one predicted at x (the paper's Figure 1), or a
        fixed class index.
    probability : bool, default True
        Trace the softmax probability (else the raw score).
    order : {"signed", "absolute", "ascending"}
    modes, n_random, add_random, seed, batch_size, progress :
        As in :func:`insdel.evaluate`.

    Returns
    -------
    ImageEvaluation
    """
    from .evaluation import CurvePoints, Evaluation
    from .evaluation import evaluate as _evaluate
    from .tracing import check_order

    check_order(order)
    from ._validation import check_bool, check_seed

    probability = check_bool(probability, "probability")
    seed = check_seed(seed)
    X = np.asarray(X, dtype=np.float64)
    R = np.asarray(R, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be flattened images (B, C*H*W); got shape {X.shape}.")
    if R.shape != X.shape:
        raise ValueError(f"R must have the shape of X {X.shape}; got {R.shape}.")
    n = X.shape[1]
    shp = check_shape(shape, n)
    if isinstance(groups, str):
        if groups == "pixel":
            grp = pixel_groups(shp)
        elif groups == "patch":
            if patch is None:
                raise ValueError("groups='patch' needs patch= (the patch size in pixels).")
            grp = patch_groups(shp, patch)
        else:
            raise ValueError(f"groups must be 'pixel', 'patch' or a grouping; got {groups!r}.")
    else:
        grp = check_groups(groups, n)
    m = n if grp is None else grp.m
    if step is not None or fractions is not None or max_fraction is not None:  # validate early
        make_positions(m, step=step, fractions=fractions, max_fraction=max_fraction)
    if output == "predicted":
        classes = predicted_class(f, X, batch_size=batch_size)
    elif isinstance(output, (int, np.integer)) and not isinstance(output, (bool, np.bool_)):
        k = _raw_outputs(f, X[:1]).reshape(1, -1).shape[1]
        if not 0 <= int(output) < k:  # -1 would silently trace the last class
            raise ValueError(f"output = {output} is not a class index of this classifier "
                             f"(0..{k - 1}).")
        classes = np.full(X.shape[0], int(output), dtype=np.int64)
    else:
        raise ValueError(f"output must be 'predicted' or a class index; got {output!r}.")
    atts = {k: group_attributions(np.asarray(v, dtype=np.float64), grp,
                                  name=f"attributions[{k!r}]") for k, v in attributions.items()}
    from .adapter import as_model

    parts = []
    for c in np.unique(classes):
        idx = np.flatnonzero(classes == c)
        model = as_model(f, batch_size=batch_size, output=_probability_of(int(c), probability))
        parts.append((idx, _evaluate(model, X[idx], R[idx], {k: a[idx] for k, a in atts.items()},
                                     groups=grp, points=CurvePoints(step, fractions, max_fraction),
                                     order=order, modes=modes, n_random=n_random,
                                     add_random=add_random, seed=seed + int(c),
                                     progress=progress)))
    B = X.shape[0]
    first = parts[0][1]
    curves = {mo: np.empty((B,) + first.curves[mo].shape[1:]) for mo in first.modes}
    rcurves = {mo: np.empty((B,) + first.random_curves[mo].shape[1:]) for mo in first.modes}
    fx, fr = np.empty(B), np.empty(B)
    orders = np.empty((B,) + first.orders.shape[1:], dtype=np.int64)
    for idx, e in parts:
        for mo in first.modes:
            curves[mo][idx] = e.curves[mo]
            rcurves[mo][idx] = e.random_curves[mo]
        fx[idx], fr[idx], orders[idx] = e.fx, e.fr, e.orders
    stats = {k: sum(e.stats.get(k, 0) for _, e in parts) for k in first.stats}
    ev = Evaluation.from_curves(methods=first.methods, modes=first.modes, curves=curves,
                                random_curves=rcurves, fx=fx, fr=fr, normalize=True,
                                orders=orders, stats=stats, order=order, groups=grp,
                                positions=first.positions)
    from .areas import petsiuk_auc

    p = ev.positions if ev.positions is not None else np.arange(m + 1)
    frames = []
    for mo in ev.modes:
        a = petsiuk_auc(ev.curves[mo], positions=check_positions(p, m), m=m)  # (B, K)
        K = a.shape[1]
        frames.append(pd.DataFrame({"pair": np.repeat(np.arange(B), K),
                                    "method": np.tile(np.array(ev.methods, dtype=object), B),
                                    "mode": mo, "auc": a.reshape(-1)}))
    return ImageEvaluation(evaluation=ev, classes=classes,
                           auc=pd.concat(frames, ignore_index=True))
