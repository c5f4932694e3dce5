"""Attribution methods that all use the policy's reference r (paper §5, Appendix A.3; §4 for IG).

Every method returns an array (B, n) explaining ``f(x) - f(r)`` with captum's sign convention
(``inputs=x, baselines=r``; ``conventions.md``, *Points, attributions, orderings*), so its output can
be passed to :func:`insdel.evaluate` / :func:`insdel.curves` as it is.

========================  ====================  ==============================================
name                      model kinds           what it computes
========================  ====================  ==============================================
``kernel_shap``           any                   captum ``KernelShap``, baseline r, seeded
``exact_shapley``         any                   exact baseline Shapley (2^n evaluations/pair)
``lime``                  any                   captum ``Lime``, baseline r, seeded
``random``                any                   seeded random scores (a random ordering)
``integrated_gradients``  torch module          batched Riemann / Gauss IG, binary modes (§4)
``deeplift``              torch module          captum ``DeepLift``, baseline r, PReLU rescaled
``vanilla_grad``          torch module          gradient at x times a per-feature scale
``input_x_gradient``      torch module          x * gradient at x (binary zeros -> -1e-4 opt.)
========================  ====================  ==============================================

Use :func:`attribute` for one method, :func:`attribute_all` for several (with per-method seconds and
model evaluations), or the class form (``IntegratedGradients(model, n_steps=500).attribute(X, R)``).
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import _ig
from ._progress import progress_bar
from ._validation import check_pairs, check_positive_int
from .adapter import Model, as_model

__all__ = [
    "METHODS", "MODEL_AGNOSTIC", "GRADIENT_METHODS", "attribute", "attribute_all", "Attributions",
    "Attribution", "KernelShap", "ExactShapley", "IntegratedGradients", "DeepLift", "VanillaGrad",
    "InputXGradient", "Lime", "RandomAttribution", "completeness_gap",
]

MODEL_AGNOSTIC = ("kernel_shap", "exact_shapley", "lime", "random")
GRADIENT_METHODS = ("integrated_gradients", "deeplift", "vanilla_grad", "input_x_gradient")
ALIASES = {
    "ks": "kernel_shap", "kernelshap": "kernel_shap", "shap": "kernel_shap",
    "exact_ks": "exact_shapley", "shapley": "exact_shapley",
    "ig": "integrated_gradients", "integratedgradients": "integrated_gradients",
    "deep_lift": "deeplift", "saliency": "vanilla_grad", "vanilla": "vanilla_grad",
    "ixg": "input_x_gradient", "inputxgradient": "input_x_gradient",
}

DEFAULT_KS_SAMPLES = 2000
DEFAULT_LIME_SAMPLES = 1000
PAPER_KS_SAMPLES = 120_000


def completeness_gap(model, X, R, A) -> np.ndarray:
    """``sum_j a_j - (f(x) - f(r))`` per pair (B,): the completeness (efficiency) gap."""
    m = as_model(model)
    X, R = check_pairs(X, R)
    return np.asarray(A).sum(axis=1) - (m(X) - m(R))


# --------------------------------------------------------------------------------------------------
# base class
class Attribution:
    """Captum-like object form: ``Method(model, **options).attribute(X, R, **overrides)``.

    After :meth:`attribute`, ``info_`` holds method details (for gradient-path methods the
    completeness gap ``delta`` (B,) and ``max_abs_delta``), ``seconds_`` the wall time and
    ``n_evals_`` the model rows evaluated.
    """

    name = ""
    needs_torch = False
    defaults: dict[str, Any] = {}

    def __init__(self, model, **options):
        self.model = model
        unknown = set(options) - set(self.defaults)
        if unknown:
            raise TypeError(f"{self.name}: unknown option(s) {sorted(unknown)}; valid options: "
                            f"{sorted(self.defaults)}.")
        self.options = {**self.defaults, **options}
        self.info_: dict = {}
        self.seconds_ = float("nan")
        self.n_evals_ = 0

    def attribute(self, X, R, **overrides) -> np.ndarray:
        """Attributions (B, n) for targets ``X`` and references ``R`` (1-D R: one reference)."""
        unknown = set(overrides) - set(self.defaults)
        if unknown:
            raise TypeError(f"{self.name}: unknown option(s) {sorted(unknown)}; valid options: "
                            f"{sorted(self.defaults)}.")
        opts = {**self.options, **overrides}
        X, R = check_pairs(X, R)
        model = as_model(self.model)
        if self.needs_torch and model.torch_module is None:
            raise TypeError(
                f"method {self.name!r} needs gradients, so the model must be a torch.nn.Module "
                f"(got {type(self.model).__name__}, wrapped as {model.name!r}). Model-agnostic "
                f"methods: {', '.join(MODEL_AGNOSTIC)}.")
        e0 = model.n_evals
        t0 = time.perf_counter()
        A, info = self._attribute(model, X, R, opts)
        self.seconds_ = time.perf_counter() - t0
        self.n_evals_ = model.n_evals - e0
        self.info_ = info
        return A

    def _attribute(self, model: Model, X, R, opts) -> tuple[np.ndarray, dict]:  # pragma: no cover
        raise NotImplementedError


def _module_forward(model: Model):
    """A tensor -> tensor forward function for captum that goes through the adapter (counted)."""
    import torch

    def fwd(t):
        y = model(t.detach().to("cpu").numpy())
        return torch.from_numpy(y).to(t.device)

    return fwd


@contextlib.contextmanager
def _torch_seed(seed: int):
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        yield


def _captum_per_point(cls_obj, model: Model, X, R, n_samples, perturbations_per_eval, seed,
                      progress, desc):
    import torch

    B, n = X.shape
    A = np.empty((B, n))
    Xt = torch.from_numpy(np.ascontiguousarray(X))
    Rt = torch.from_numpy(np.ascontiguousarray(R))
    ppe = int(min(perturbations_per_eval, n_samples))
    with _torch_seed(seed), warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore", UserWarning)
        with progress_bar(B, desc, "point", enable=progress, auto=B * n_samples > 200_000) as bar:
            for b in range(B):  # captum fits one interpretable model per point
                a = cls_obj.attribute(Xt[b:b + 1], baselines=Rt[b:b + 1], n_samples=n_samples,
                                      perturbations_per_eval=ppe, show_progress=False)
                A[b] = a[0].to(torch.float64).numpy()
                bar.update(1)
    return A


# --------------------------------------------------------------------------------------------------
# model-agnostic methods
class KernelShap(Attribution):
    """Kernel SHAP (captum ``KernelShap``) with the single baseline r (paper §5).

    Options
    -------
    n_samples : int, default 2000
        Coalitions sampled per point (captum samples with the Shapley kernel; the all-ones and
        all-zeros coalitions get weight 10^6). The paper used 120,000 (``PAPER_KS_SAMPLES``) on the
        38-feature housing data; for small n, ``exact_shapley`` is exact with 2^n evaluations.
    perturbations_per_eval : int, default 4096
        Coalitions evaluated per model call.
    seed : int, default 0
        torch seed (captum samples with torch's RNG; the global RNG state is restored).
    engine : "captum" (default) or "insdel"
        ``"insdel"`` runs the same estimator vectorised over points (numpy sampling, one model
        call per chunk of ``chunk_rows`` rows, batched least squares): much faster for many points
        or large ``n_samples``; not bit-identical to captum (other random numbers).
    progress : bool or None
    """

    name = "kernel_shap"
    defaults = {"n_samples": DEFAULT_KS_SAMPLES, "perturbations_per_eval": 4096, "seed": 0,
                "engine": "captum", "chunk_rows": 1 << 18, "progress": None}

    def _attribute(self, model, X, R, o):
        ns = check_positive_int("n_samples", o["n_samples"], minimum=2)
        if o["engine"] == "insdel":
            A = _kernel_shap_batched(model, X, R, ns, o["seed"], o["chunk_rows"], o["progress"])
            return A, {"n_samples": ns, "engine": "insdel"}
        if o["engine"] != "captum":
            raise ValueError(f"kernel_shap: engine must be 'captum' or 'insdel'; got {o['engine']!r}.")
        from captum.attr import KernelShap as _KS

        A = _captum_per_point(_KS(_module_forward(model)), model, X, R, ns,
                              o["perturbations_per_eval"], o["seed"], o["progress"],
                              "kernel shap")
        return A, {"n_samples": ns, "engine": "captum"}


def _kernel_shap_batched(model: Model, X, R, n_samples: int, seed: int, chunk_rows: int,
                         progress) -> np.ndarray:
    """captum's Kernel SHAP estimator, vectorised over points (``engine="insdel"``).

    Same estimator as captum's ``KernelShap``: the all-ones and all-zeros coalitions with weight
    10^6, then ``n_samples - 2`` coalitions whose size k is drawn with probability proportional to
    (n - 1) / (k (n - k)) and whose members are uniform given k (weight 1), and a weighted least
    squares fit with intercept; the coefficients are the attributions. Hybrid rows are built by
    :func:`insdel.hybrid.build_rows` and evaluated in large model calls; the fits are batched
    normal equations in float64. Different random numbers from captum's (numpy's generator).
    """
    from .hybrid import build_rows, masks_to_words

    B, n = X.shape
    if n == 1:
        return (model(X) - model(R))[:, None]
    rng = np.random.default_rng(seed)
    k = np.arange(1, n)
    p = (n - 1) / (k * (n - k))
    p /= p.sum()
    S = n_samples
    Xd = np.ascontiguousarray(X, dtype=model.dtype)
    Rd = np.ascontiguousarray(R, dtype=model.dtype)
    w = np.ones(S)
    w[:2] = 1e6
    out = np.empty((B, n))
    step = max(1, int(chunk_rows) // S)
    with progress_bar(B, "kernel shap", "point", enable=progress, auto=B * S > 1 << 22) as bar:
        for b0 in range(0, B, step):
            b1 = min(B, b0 + step)
            P = b1 - b0
            sizes = rng.choice(k, size=(P, S - 2), p=p)
            ranks = rng.random((P, S - 2, n)).argsort(-1).argsort(-1)
            masks = np.empty((P, S, n), bool)
            masks[:, 0] = True
            masks[:, 1] = False
            masks[:, 2:] = ranks < sizes[..., None]
            words = masks_to_words(masks.reshape(P * S, n))
            pair_idx = np.repeat(np.arange(b0, b1), S)
            y = model(build_rows(Xd, Rd, pair_idx, words)).reshape(P, S)
            Z = np.concatenate([np.ones((P, S, 1)), masks], axis=2)
            Zw = Z * w[None, :, None]
            G = np.einsum("psi,psj->pij", Zw, Z)
            rhs = np.einsum("psi,ps->pi", Zw, y)
            beta = np.linalg.solve(G + 1e-12 * np.eye(n + 1), rhs[..., None])[..., 0]
            out[b0:b1] = beta[:, 1:]
            bar.update(P)
    return out


class Lime(Attribution):
    """LIME (captum ``Lime``) with baseline r: features off take r's value (Appendix A.3).

    captum's defaults otherwise: ``SkLearnLasso(alpha=0.01)`` as the interpretable model, an
    exponential kernel on the cosine distance, Bernoulli(1/2) perturbations.

    Options
    -------
    n_samples : int, default 1000
        captum's own default is 50 (the paper used captum "with default set arguments").
    perturbations_per_eval : int, default 4096
    seed : int, default 0
    interpretable_model : captum interpretable model, optional
    progress : bool or None
    """

    name = "lime"
    defaults = {"n_samples": DEFAULT_LIME_SAMPLES, "perturbations_per_eval": 4096, "seed": 0,
                "interpretable_model": None, "progress": None}

    def _attribute(self, model, X, R, o):
        from captum.attr import Lime as _Lime

        ns = check_positive_int("n_samples", o["n_samples"], minimum=2)
        lime = _Lime(_module_forward(model), interpretable_model=o["interpretable_model"])
        A = _captum_per_point(lime, model, X, R, ns, o["perturbations_per_eval"], o["seed"],
                              o["progress"], "lime")
        return A, {"n_samples": ns}


class ExactShapley(Attribution):
    """Exact baseline Shapley values from the anchored decomposition (conventions: *Anchored
    decomposition*; the paper's "exact KS" on the 16-feature CERN data): 2^n evaluations per pair,
    ``sum_j a_j = f(x) - f(r)`` exactly. Delegates to :func:`insdel.decomposition.shapley_values`.

    Options: ``batch_size``, ``progress``, ``max_n`` (refuse larger n).
    """

    name = "exact_shapley"
    defaults = {"batch_size": None, "progress": None, "max_n": None}

    def _attribute(self, model, X, R, o):
        try:
            from .decomposition import shapley_values
        except ImportError as exc:  # pragma: no cover - decomposition ships with insdel
            raise ImportError(f"exact_shapley needs insdel.decomposition ({exc}).") from exc
        kw = {"batch_size": o["batch_size"], "progress": o["progress"]}
        if o["max_n"] is not None:
            kw["max_n"] = o["max_n"]
        return shapley_values(model, X, R, **kw), {}


class RandomAttribution(Attribution):
    """Seeded random scores: a uniformly random ordering per pair (the paper's "Random" row).

    Options: ``seed`` (default 0). Independent of the model (no evaluations).
    """

    name = "random"
    defaults = {"seed": 0}

    def _attribute(self, model, X, R, o):
        rng = np.random.default_rng(o["seed"])
        return rng.random(X.shape), {}


# --------------------------------------------------------------------------------------------------
# gradient methods (torch)
class IntegratedGradients(Attribution):
    """Integrated gradients along the straight path from r to x (paper §4, eq. of IG), batched.

    ``a_j = (x_j - r_j) int_0^1 df/dx_j(r + t (x - r)) dt`` by a quadrature rule with ``n_steps``
    nodes, computed with torch autograd on chunks of (points x steps) rows. After ``attribute``,
    ``info_["delta"]`` is the completeness gap ``sum_j a_j - (f(x) - f(r))`` per pair.

    Options
    -------
    n_steps : int, default 500 (the paper's Riemann sum on 500 points)
    rule : str, default "riemann_middle"
        ``riemann_middle`` | ``riemann_right`` | ``riemann_left`` | ``riemann_trapezoid`` |
        ``gausslegendre`` (captum's default method, with captum's default n_steps = 50). The same
        names as captum's ``method=``; results agree with captum's for the same rule.
    binary : indices or boolean mask (n,), optional
        Binary features. Their values must be one of two levels (below).
    binary_levels : (n, 2) array, dict j -> (lo, hi), "infer" or None (= (0, 1))
        The two levels of each binary feature in model-input space (z-scored data: two arbitrary
        numbers lo < hi). The interpolation / jumps work in ``t_j = (x_j - lo) / (hi - lo)``.
    binary_mode : "cast" | "interpolate" | "jump", default "cast"
        See :mod:`insdel._ig` and ``conventions.md``. ``interpolate`` costs 2^m rows per path point
        (m = binaries differing between x and r) and refuses m > ``max_interpolate`` (default 12).
        ``jump`` averages over all m! jump orders exactly (2^m extra evaluations) when
        m <= ``all_orders_max_m`` (default 10), otherwise over ``n_orders`` (default 256) random
        orders drawn with ``seed``.
    chunk_rows : int, default 16384
        Rows per forward/backward pass (memory bound).
    progress : bool or None
    """

    name = "integrated_gradients"
    needs_torch = True
    defaults = {"n_steps": 500, "rule": "riemann_middle", "binary": None, "binary_levels": None,
                "binary_mode": "cast", "max_interpolate": 12, "all_orders_max_m": 10,
                "n_orders": 256, "seed": 0, "chunk_rows": _ig.DEFAULT_CHUNK_ROWS, "progress": None,
                "feature_names": None}

    def _attribute(self, model, X, R, o):
        check_positive_int("n_steps", o["n_steps"])
        check_positive_int("n_orders", o["n_orders"])
        A, info = _ig.integrated_gradients(model, X, R, **o)
        delta = A.sum(axis=1) - (model(X) - model(R))
        info.update(delta=delta, max_abs_delta=float(np.abs(delta).max()))
        return A, info


@contextlib.contextmanager
def _prelu_as_nonlinearity(enable: bool):
    """Temporarily register nn.PReLU with captum DeepLift's rescale rule (Appendix A.3)."""
    import torch
    from captum.attr._core import deep_lift as dl

    added = enable and torch.nn.PReLU not in dl.SUPPORTED_NON_LINEAR
    if added:
        dl.SUPPORTED_NON_LINEAR[torch.nn.PReLU] = dl.nonlinear
    try:
        yield
    finally:
        if added:
            dl.SUPPORTED_NON_LINEAR.pop(torch.nn.PReLU, None)


class DeepLift(Attribution):
    """DeepLIFT (captum ``DeepLift``, rescale rule) with baselines r (Appendix A.3).

    PReLU is treated as an ordinary elementwise nonlinearity (rescale multipliers Δy/Δx), as the
    paper did; captum alone would pass plain gradients through it (``prelu_rescale=False``).
    Nonlinearities must be modules (``nn.ReLU``, ``nn.PReLU``, ...), each used once.
    ``info_["delta"]`` holds the completeness gap.

    Options: ``chunk_rows`` (points per call, default 4096), ``prelu_rescale`` (default True),
    ``eps`` (captum's, default 1e-10), ``progress``.
    """

    name = "deeplift"
    needs_torch = True
    defaults = {"chunk_rows": 4096, "prelu_rescale": True, "eps": 1e-10, "progress": None}

    def _attribute(self, model, X, R, o):
        import torch
        from captum.attr import DeepLift as _DL

        module = model.torch_module
        device, tdtype, np_dtype = _ig.torch_info(module)
        B, n = X.shape
        A = np.empty((B, n))
        cs = check_positive_int("chunk_rows", o["chunk_rows"])
        with torch.no_grad():
            probe = module(torch.from_numpy(X[:1].astype(np_dtype)).to(device))
        target = 0 if probe.ndim == 2 else None
        dl = _DL(module, eps=o["eps"])
        with _prelu_as_nonlinearity(o["prelu_rescale"]), warnings.catch_warnings(), \
                progress_bar(B, "deeplift", "point", enable=o["progress"], auto=B > 1 << 16) as bar:
            warnings.simplefilter("ignore", UserWarning)
            for s in range(0, B, cs):
                e = min(B, s + cs)
                xt = torch.from_numpy(X[s:e].astype(np_dtype)).to(device)
                rt = torch.from_numpy(R[s:e].astype(np_dtype)).to(device)
                a = dl.attribute(xt, baselines=rt, target=target)
                A[s:e] = a.detach().to("cpu", torch.float64).numpy()
                bar.update(e - s)
        model.n_evals += 2 * B
        delta = A.sum(axis=1) - (model(X) - model(R))
        return A, {"delta": delta, "max_abs_delta": float(np.abs(delta).max())}


def _scale_vector(scale, X: np.ndarray) -> np.ndarray:
    n = X.shape[1]
    if scale is None:
        return np.ones(n)
    if isinstance(scale, str):
        if scale != "std":
            raise ValueError(f"scale must be None, 'std' or an array of length n; got {scale!r}.")
        return X.std(axis=0) if X.shape[0] > 1 else np.ones(n)
    s = np.asarray(scale, dtype=np.float64).reshape(-1)
    if s.shape != (n,):
        raise ValueError(f"scale must have length n = {n}; got shape {np.shape(scale)}.")
    return s


class VanillaGrad(Attribution):
    """Vanilla gradient ("saliency", Simonyan et al.) at x, scaled per feature (paper §5).

    ``a_j = s_j * df/dx_j(x)``. The paper scaled by each input's standard deviation: pass ``scale``
    (array (n,)) in model-input units; ``None`` (default) means 1, which *is* the standard-deviation
    scaling for z-scored inputs; ``"std"`` uses the standard deviation of the rows of X. r is
    ignored. ``abs=True`` returns ``|a_j|`` (captum ``Saliency``'s default).

    Options: ``scale``, ``abs`` (default False), ``chunk_rows``, ``progress``.
    """

    name = "vanilla_grad"
    needs_torch = True
    defaults = {"scale": None, "abs": False, "chunk_rows": _ig.DEFAULT_CHUNK_ROWS, "progress": None}

    def _attribute(self, model, X, R, o):
        s = _scale_vector(o["scale"], X)
        _, G = _ig.gradients(model.torch_module, X, chunk_rows=o["chunk_rows"],
                             progress=o["progress"])
        model.n_evals += X.shape[0]
        A = G * s
        return (np.abs(A) if o["abs"] else A), {}


class InputXGradient(Attribution):
    """Input x gradient (Shrikumar et al. 2016): ``a_j = x_j * df/dx_j(x)``; r is ignored.

    Paper Appendix A.3: zeros of binary inputs were replaced by a small negative value (-1e-4) so
    that they do not get attribution exactly 0. ``binary_zero=-1e-4`` with ``binary=`` (indices or
    mask) does that: every binary input equal to 0 is replaced by ``binary_zero`` (in the point
    where the gradient is taken and in the product). Default: no replacement.

    Options: ``binary``, ``binary_zero`` (float or None), ``chunk_rows``, ``progress``.
    """

    name = "input_x_gradient"
    needs_torch = True
    defaults = {"binary": None, "binary_zero": None, "chunk_rows": _ig.DEFAULT_CHUNK_ROWS,
                "progress": None}

    def _attribute(self, model, X, R, o):
        Xm = X
        if o["binary_zero"] is not None:
            if o["binary"] is None:
                raise ValueError("input_x_gradient: binary_zero needs binary= (the binary features).")
            spec = _ig.binary_spec(o["binary"], "infer", X, X)
            Xm = X.copy()
            cols = spec.is_bin
            sub = Xm[:, cols]
            sub[sub == 0] = float(o["binary_zero"])
            Xm[:, cols] = sub
        _, G = _ig.gradients(model.torch_module, Xm, chunk_rows=o["chunk_rows"],
                             progress=o["progress"])
        model.n_evals += X.shape[0]
        return Xm * G, {}


METHODS: dict[str, type[Attribution]] = {
    "kernel_shap": KernelShap,
    "exact_shapley": ExactShapley,
    "integrated_gradients": IntegratedGradients,
    "deeplift": DeepLift,
    "vanilla_grad": VanillaGrad,
    "input_x_gradient": InputXGradient,
    "lime": Lime,
    "random": RandomAttribution,
}


def _resolve(method: str) -> type[Attribution]:
    if not isinstance(method, str):
        raise TypeError(f"method must be a string; got {type(method).__name__}.")
    key = method.lower().replace("-", "_").replace(" ", "_")
    key = ALIASES.get(key, key)
    if key not in METHODS:
        raise ValueError(f"unknown attribution method {method!r}; choose from {sorted(METHODS)} "
                         f"(aliases: {sorted(ALIASES)}).")
    return METHODS[key]


def available() -> list[str]:
    """Names of the attribution methods (aliases such as ``"ig"`` resolve with :func:`get`)."""
    return list(METHODS)


def get(name: str) -> type[Attribution]:
    """The attribution class registered as ``name`` (or an alias: ``"ig"``, ``"ks"``, ...)."""
    return _resolve(name)


def options_of(name: str) -> dict[str, Any]:
    """The keyword options the method ``name`` takes, with their defaults."""
    return dict(_resolve(name).defaults)


def attribute(model, X, R, method: str, *, return_info: bool = False, **options):
    """Attributions of one method for B pairs, explaining ``f(x) - f(r)``.

    Parameters
    ----------
    model : torch.nn.Module, estimator, callable or insdel Model
        Gradient methods (``integrated_gradients``, ``deeplift``, ``vanilla_grad``,
        ``input_x_gradient``) need a torch module; the others accept anything :func:`insdel.as_model`
        accepts.
    X : array_like (B, n) or (n,)
        Targets.
    R : array_like (B, n) or (n,)
        References (the policy's choice; a 1-D R is used for every pair).
    method : str
        One of :func:`available` (or an alias such as ``"ig"``, ``"ks"``).
    return_info : bool, default False
        Also return a dict with ``method``, ``seconds``, ``model_evaluations`` and the method's
        details (for path methods the completeness gap).
    **options
        The method's options (see its class; :func:`options_of` lists them).

    Returns
    -------
    ndarray (B, n), float64; or ``(A, info)`` when ``return_info``.
    """
    cls = _resolve(method)
    obj = cls(model, **options)
    A = obj.attribute(X, R)
    if not return_info:
        return A
    return A, {"method": cls.name, "seconds": float(obj.seconds_),
               "model_evaluations": int(obj.n_evals_), **obj.info_}


class Attributions(dict):
    """``dict`` label -> attributions (B, n), with ``seconds``, ``n_evals`` and ``info`` per label."""

    def __init__(self):
        super().__init__()
        self.seconds: dict[str, float] = {}
        self.n_evals: dict[str, int] = {}
        self.info: dict[str, dict] = {}

    def timing_table(self):
        """pandas DataFrame: method, seconds, seconds per point, model evaluations."""
        import pandas as pd

        rows = [{"method": k, "seconds": self.seconds[k],
                 "seconds_per_point": self.seconds[k] / max(1, v.shape[0]),
                 "n_evals": self.n_evals[k]} for k, v in self.items()]
        return pd.DataFrame(rows)


def attribute_all(model, X, R, methods: Sequence[str] | Mapping[str, Any] | None = None,
                  options: Mapping[str, Mapping[str, Any]] | None = None, *,
                  skip_unsupported: bool = False) -> Attributions:
    """Run several methods on the same pairs; return label -> (B, n) with timings.

    Parameters
    ----------
    model, X, R
        As in :func:`attribute`.
    methods : list of str, or dict label -> method name or {"method": name, **options}
        Default: every method the model supports (gradient methods only for torch modules),
        ``exact_shapley`` only when n <= 16.
    options : dict label (or method name) -> dict of options
    skip_unsupported : bool
        Skip gradient methods for non-torch models instead of raising.

    Returns
    -------
    Attributions
        A dict label -> array (B, n); ``.seconds[label]`` wall time, ``.n_evals[label]`` model rows
        evaluated (forward rows; gradient rows count once), ``.info[label]`` method details.
    """
    m = as_model(model)
    X, R = check_pairs(X, R)
    options = dict(options or {})
    if methods is None:
        methods = [k for k in METHODS if (m.torch_module is not None or k in MODEL_AGNOSTIC)
                   and (k != "exact_shapley" or X.shape[1] <= 16)]
    spec: dict[str, tuple[str, dict]] = {}
    if isinstance(methods, Mapping):
        for label, v in methods.items():
            if isinstance(v, str):
                spec[label] = (v, {})
            else:
                v = dict(v)
                spec[label] = (v.pop("method", label), v)
    else:
        for name in methods:
            spec[name] = (name, {})
    out = Attributions()
    for label, (name, opts) in spec.items():
        cls = _resolve(name)
        o: dict = {}
        for key in dict.fromkeys((cls.name, name, label)):  # general to specific
            o.update(options.get(key, {}))
        o.update(opts)
        if cls.needs_torch and m.torch_module is None and skip_unsupported:
            continue
        obj = cls(m, **o)
        out[label] = obj.attribute(X, R)
        out.seconds[label] = obj.seconds_
        out.n_evals[label] = obj.n_evals_
        out.info[label] = obj.info_
    return out
