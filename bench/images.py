"""Grouped image deletion: insdel against Quantus ``PixelFlipping(features_in_step=4)`` and the bare
forward pass, on the digits CNN (issue #16).

Same run, same inputs: 1,000 digits images (8 x 8 = 64 pixels, one group per pixel), a saliency
map per image, the black reference (0) and the softmax probability of the class predicted at x;
4 pixels per step, so 16 deletion steps per image.

* (a) insdel: :func:`insdel.images.evaluate` (deletion only, no random row): hybrid rows for all
  images and steps at once, each distinct row evaluated once;
* (q) ``quantus.PixelFlipping(features_in_step=4, softmax=True)`` with a perturbation function
  that sets the chosen pixels to the reference, ``batch_size=64`` (Quantus' default) and
  (qB) one batch of all images;
* (c) the bare forward pass over the same distinct rows in one call (the limit of any engine).

The script first checks that insdel's curve equals Quantus' values step by step. Usage:
``python bench/images.py [--images 1000] [--repeats 3] [--threads N] [--tiny]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import fmt, machine_line, markdown_table, time_call  # noqa: E402

from insdel import digits, images  # noqa: E402


class RefPerturb:
    """Quantus perturbation: ``arr[i, indices[i]] = 0`` (the black reference)."""

    def __call__(self, arr: np.ndarray, indices: np.ndarray, **kwargs) -> np.ndarray:
        out = arr.copy()
        rows = np.arange(arr.shape[0])[:, None]
        out[rows, indices] = 0.0
        return out


def quantus_curves(net, X4: np.ndarray, A4: np.ndarray, y: np.ndarray, step: int,
                   batch_size: int) -> np.ndarray:
    import quantus

    metric = quantus.PixelFlipping(features_in_step=step, perturb_func=RefPerturb(),
                                   normalise=False, return_auc_per_sample=False,
                                   disable_warnings=True, display_progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = metric(model=net, x_batch=X4.astype(np.float32), y_batch=y,
                   a_batch=A4.astype(np.float32), batch_size=batch_size, softmax=True,
                   channel_first=True, device="cpu")
    return np.asarray(s, dtype=np.float64).reshape(X4.shape[0], -1)


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=1000)
    p.add_argument("--step", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    a = p.parse_args(argv)
    if a.tiny:
        a.images, a.repeats = 30, 1
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    data = digits.load(test_fraction=0.5, seed=0)
    net, info = digits.train_cnn(data, seed=0, epochs=2 if a.tiny else 10)
    X4 = np.concatenate([data.X_test, data.X_train])[:a.images]
    B = X4.shape[0]
    X = images.flatten(X4)
    fnet = images.flat_module(net, digits.SHAPE)
    y = images.predicted_class(fnet, X)
    A = np.random.default_rng(0).normal(size=X.shape) + X  # a saliency-like map, no ties
    R = np.zeros_like(X)
    # correctness first: insdel's deletion curve (after each step) = Quantus' values
    res = images.evaluate(fnet, X, R, {"saliency": A}, shape=digits.SHAPE, step=a.step,
                          modes=("deletion",), add_random=False, n_random=0)
    ours = res.evaluation.curves["deletion"][:, 0, 1:]
    theirs = quantus_curves(net, X4, A.reshape(X4.shape), y, a.step, 64)
    err = float(np.abs(ours - theirs).max())
    if err > 1e-5:  # float32 model: agreement to float32 rounding
        raise SystemExit(f"insdel and Quantus disagree: max |diff| = {err:.2e}")
    n_rows = int(res.evaluation.stats["model_evaluations"])
    rows_t = torch.as_tensor(np.repeat(X4, ours.shape[1] + 1, axis=0)[:n_rows], dtype=torch.float32)

    def bare():
        with torch.no_grad():
            return torch.softmax(net(rows_t), 1)

    t_a, _ = time_call(lambda: images.evaluate(fnet, X, R, {"saliency": A}, shape=digits.SHAPE,
                                               step=a.step, modes=("deletion",),
                                               add_random=False, n_random=0), a.repeats)
    t_q, _ = time_call(lambda: quantus_curves(net, X4, A.reshape(X4.shape), y, a.step, 64),
                       a.repeats)
    t_qb, _ = time_call(lambda: quantus_curves(net, X4, A.reshape(X4.shape), y, a.step, B),
                        a.repeats)
    t_c, _ = time_call(bare, a.repeats)
    row = {"images": B, "pixels": 64, "step": a.step, "distinct rows": n_rows,
           "(a) insdel s": t_a, "(q) Quantus b=64 s": t_q, "(qB) Quantus one batch s": t_qb,
           "(c) bare forward s": t_c, "(q)/(a)": t_q / t_a, "(qB)/(a)": t_qb / t_a,
           "(a)/(c)": t_a / t_c, "max |insdel - Quantus|": err}
    print(machine_line())
    print(f"# digits CNN ({info['epochs']} epochs, test accuracy {info['test_accuracy']:.3f}), "
          "black reference, probability of the predicted class, one group per pixel")
    print(markdown_table(list(row), [[fmt(v) for v in row.values()]]))
    return [row]


if __name__ == "__main__":
    main()
