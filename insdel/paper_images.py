"""``insdel reproduce paper-images``: the paper's image test (Figure 1, Appendix A.1, Table 5) on
scikit-learn's 8 x 8 digits, with no download.

A small CNN (:mod:`insdel.digits`) is trained in seconds; SmoothGrad (captum's ``NoiseTunnel`` over
integrated gradients, black baseline), integrated gradients (black baseline), integrated gradients
with the test's own reference as baseline, and the seeded random ordering are tested by deleting and
inserting pixels (4 per step, every pixel one group) against five reference images (blurred as in
RISE, per-channel mean, white, black, uniform noise). The traced output is the probability of the
class predicted at x, as in the paper's Figure 1. The table has Table 5's layout (reference image x
deletion AUC x insertion AUC, Petsiuk's AUC: small deletion AUC and large insertion AUC are good)
with insdel's ABC beside it, and says whether the reference image changes the ranking of methods.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["run_paper_images", "PaperImagesResult", "REFERENCES", "METHODS"]

#: Reference images of the table, in the paper's Table 5 order (plus uniform noise).
REFERENCES = ("blurred", "channel_mean", "white", "black", "noise")
#: Methods of the table (``random`` is added by the evaluation).
METHODS = ("smoothgrad", "integrated_gradients", "ig_reference")
LABELS = {"blurred": "Blurred", "channel_mean": "Mean", "white": "White", "black": "Black",
          "noise": "Uniform noise"}


@dataclass
class PaperImagesResult:
    """Tables, figure and manifest of one run."""

    out: Path
    table: pd.DataFrame
    rankings: pd.DataFrame
    manifest: dict
    figures: list = field(default_factory=list)

    def to_markdown(self, digits: int = 3) -> str:
        return _markdown(self.table, self.rankings, self.manifest, digits)


def _attributions(fnet, X: np.ndarray, R: np.ndarray | None, classes: np.ndarray, *,
                  method: str, seed: int, nt_samples: int, n_steps: int) -> np.ndarray:
    """Saliency (B, 64) of one method for the predicted classes (captum)."""
    import torch
    from captum.attr import IntegratedGradients, NoiseTunnel

    Xt = torch.as_tensor(X, dtype=torch.float32)
    base = torch.zeros_like(Xt) if R is None else torch.as_tensor(R, dtype=torch.float32)
    target = torch.as_tensor(classes)
    ig = IntegratedGradients(fnet)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        if method == "smoothgrad":
            a = NoiseTunnel(ig).attribute(Xt, baselines=base, target=target, nt_type="smoothgrad",
                                          nt_samples=nt_samples, stdevs=0.15, n_steps=n_steps,
                                          nt_samples_batch_size=nt_samples)
        else:
            a = ig.attribute(Xt, baselines=base, target=target, n_steps=n_steps)
    return a.detach().double().numpy()


def _rank_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per reference: the methods ranked by deletion AUC (small first) and insertion AUC (large
    first); ``random`` is ranked too."""
    rows = []
    for ref, t in table.groupby("reference", sort=False):
        dele = t.sort_values("deletion_auc")["method"].tolist()
        ins = t.sort_values("insertion_auc", ascending=False)["method"].tolist()
        rows.append({"reference": ref, "deletion_ranking": " > ".join(dele),
                     "insertion_ranking": " > ".join(ins)})
    return pd.DataFrame(rows)


def _markdown(table: pd.DataFrame, rankings: pd.DataFrame, manifest: dict, digits: int) -> str:
    f = f"{{:.{digits}f}}"
    cols = ("deletion_auc", "insertion_auc", "deletion_abc", "insertion_abc")
    lines = [f"Digits CNN (test accuracy {manifest['model']['test_accuracy']:.3f}), "
             f"{manifest['n_images']} test images, {manifest['step']} pixels per step; Petsiuk AUC "
             "of the predicted class's probability (small deletion / large insertion is good) and "
             "insdel's ABC, each the mean ± its standard error over the images.", "",
             "| reference | method | " + " | ".join(
                 f"{c.split('_')[0]} {c.split('_')[1].upper()} (mean ± se)" for c in cols) + " |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for _, r in table.iterrows():
        cells = [f"{f.format(r[c])} ± {f.format(r[c + '_se'])}" for c in cols]
        lines.append(f"| {LABELS.get(r['reference'], r['reference'])} | {r['method']} | "
                     + " | ".join(cells) + " |")
    lines += ["", "| reference | ranking by deletion AUC | ranking by insertion AUC |",
              "| --- | --- | --- |"]
    for _, r in rankings.iterrows():
        lines.append(f"| {LABELS.get(r['reference'], r['reference'])} | {r['deletion_ranking']} | "
                     f"{r['insertion_ranking']} |")
    lines += ["", manifest["ranking_changes"]]
    return "\n".join(lines)


def run_paper_images(out: str | Path = "runs/paper-images", *, quick: bool = False, seed: int = 0,
                     step: int = 4, n_images: int | None = None, epochs: int | None = None,
                     progress: bool | None = None, verbose: bool = True) -> PaperImagesResult:
    """Run the digits image test and write ``table5.csv``, ``table5.md``, ``figure1.png``,
    ``manifest.json`` into ``out`` (atomically).

    Parameters
    ----------
    out : path
    quick : bool
        100 test images, 15 epochs, 10 SmoothGrad samples (about 10 s); else all 360 test
        images, 30 epochs, 50 samples.
    seed : int
        Seeds the split, the training, SmoothGrad's noise, the noise reference and the random
        orderings (an integer >= 0).
    step : int, default 4
        Pixels per step (an integer >= 1).
    n_images, epochs : int, optional
        Override the number of test images and training epochs (for a fast check); integers >= 1
        (2.7 is an error, not 2).
    """
    import torch

    from . import _checkpoint as ck
    from . import digits, images, policies
    from ._validation import check_bool, check_positive_int, check_progress, check_scalar
    from .groups import check_positions

    seed = check_positive_int(seed, "seed", minimum=0)
    step = check_positive_int(step, "step")
    quick = check_bool(quick, "quick")
    check_progress(progress)  # before the model is trained, not at the first bar
    if n_images is not None:  # 2.7 images must not become 2
        n_images = check_positive_int(n_images, "n_images")
    if epochs is not None:
        epochs = check_positive_int(epochs, "epochs")
    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = digits.load(seed=seed)
    net, minfo = digits.train_cnn(data, seed=seed,
                                  epochs=epochs if epochs is not None else 15 if quick else None)
    fnet = images.flat_module(net, digits.SHAPE)
    n_img = (100 if quick else data.X_test.shape[0]) if n_images is None else n_images
    check_scalar(n_img, "n_images", int, min_val=1, max_val=data.X_test.shape[0])
    X = images.flatten(data.X_test[:n_img])
    classes = images.predicted_class(fnet, X)
    nt = 10 if quick else 50
    n_steps = 32
    base_atts = {m: _attributions(fnet, X, None, classes, method=m, seed=seed, nt_samples=nt,
                                  n_steps=n_steps)
                 for m in ("smoothgrad", "integrated_gradients")}
    pool_train = images.flatten(data.X_train)
    rows, evals = [], {}
    refs_used = {}
    for ref in REFERENCES:
        kw = {"shape": digits.SHAPE}
        if ref == "channel_mean":
            kw["background"] = pool_train
        pol = policies.build(ref, **kw)
        pairing = pol.pair(None, X, seed=seed)
        R = pairing.R
        refs_used[ref] = {k: v for k, v in pairing.params.items() if k != "background"}
        atts = dict(base_atts)
        atts["ig_reference"] = _attributions(fnet, X, R, classes, method="ig_reference",
                                             seed=seed, nt_samples=nt, n_steps=n_steps)
        res = images.evaluate(fnet, X, R, atts, shape=digits.SHAPE, groups="pixel", step=step,
                              output="predicted", n_random=5, seed=seed, progress=progress)
        evals[ref] = (res, R, atts)
        t = res.table()
        for method in res.evaluation.methods:
            r = {"reference": ref, "method": method}
            for mode in ("deletion", "insertion"):
                s = t[(t["method"] == method) & (t["mode"] == mode)].iloc[0]
                r[f"{mode}_auc"], r[f"{mode}_auc_se"] = float(s["auc"]), float(s["auc_se"])
                r[f"{mode}_abc"], r[f"{mode}_abc_se"] = float(s["abc"]), float(s["abc_se"])
            rows.append(r)
        if verbose:
            print(f"[paper-images] reference {ref}: done", flush=True)
    table = pd.DataFrame(rows)
    rankings = _rank_table(table)
    changes = []
    for col in ("deletion_ranking", "insertion_ranking"):
        distinct = rankings[col].nunique()
        changes.append(f"{col.split('_')[0]}: {distinct} distinct ranking(s) over "
                       f"{len(rankings)} reference images")
    change_text = ("The reference image " + ("changes" if any(
        rankings[c].nunique() > 1 for c in ("deletion_ranking", "insertion_ranking"))
        else "does not change") + " the ranking of methods (" + "; ".join(changes) + ").")
    manifest = {
        "experiment": "paper-images", "quick": bool(quick), "seed": int(seed), "step": int(step),
        "n_images": int(n_img), "data": "sklearn.datasets.load_digits (8x8, scaled to [0, 1])",
        "model": minfo, "methods": {
            "smoothgrad": {"captum": "NoiseTunnel(IntegratedGradients)", "nt_samples": nt,
                           "stdevs": 0.15, "baseline": "black", "n_steps": n_steps},
            "integrated_gradients": {"baseline": "black", "n_steps": n_steps},
            "ig_reference": {"baseline": "the reference image of the row", "n_steps": n_steps},
            "random": {"seed": int(seed)}},
        "references": refs_used, "output": "softmax probability of the class predicted at x",
        "groups": "pixel (64 groups)", "ranking_changes": change_text,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "numpy": np.__version__},
    }
    with ck.atomic_write(out / "table5.csv", suffix=".csv") as tmp:
        table.to_csv(tmp, index=False)
    with ck.atomic_write(out / "rankings.csv", suffix=".csv") as tmp:
        rankings.to_csv(tmp, index=False)
    result = PaperImagesResult(out=out, table=table, rankings=rankings, manifest=manifest)
    ck.atomic_write_text(out / "table5.md", result.to_markdown() + "\n")
    # Figure 1: the first correctly classified image, black reference as in the paper
    from .plotting import figure1, save_figure

    res, R, atts = evals["black"]
    ok = np.flatnonzero(classes == data.y_test[:n_img])
    i = int(ok[0]) if ok.size else 0
    ev = res.evaluation
    k = ev.methods.index("smoothgrad")
    pos = check_positions(ev.positions if ev.positions is not None else np.arange(65), 64)
    fig = figure1(X[i].reshape(8, 8), atts["smoothgrad"][i].reshape(8, 8),
                  {mo: ev.curves[mo][i, k] for mo in ev.modes}, positions=pos, m=64,
                  title=f"digit {int(data.y_test[i])}, class {int(classes[i])} probability, "
                        "black reference, SmoothGrad")
    result.figures.append(save_figure(fig, out / "figure1.png"))
    manifest["seconds"] = time.perf_counter() - t0
    from .runner.provenance import write_manifest

    write_manifest(out, manifest)  # the last file, as every run's
    return result
