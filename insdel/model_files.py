"""A user's model from a file: torch.export, TorchScript, state_dict + preset, ONNX, scikit-learn,
XGBoost, LightGBM, CatBoost.

:func:`load_any` detects the format from the file's content and extension and returns ``(model,
info)``: an object :func:`insdel.as_model` accepts, and a record of what was loaded (format, path,
SHA-256, what the model offers attribution methods).

==========================================  ======================  ===========================
format                                      how it is saved         trust needed
==========================================  ======================  ===========================
insdel model (``insdel.models.save_model``)  ``.pt``                 no (weights only)
torch.export program                        ``torch.export.save``   no
                                            (``.pt2``)
TorchScript                                 ``torch.jit.save``      no
state_dict of an insdel preset MLP          ``torch.save(m.state_dict())``  no (``preset=``)
full torch module                           ``torch.save(m)``       **yes** (pickle)
ONNX                                        ``.onnx``               no (onnxruntime)
scikit-learn estimator / Pipeline, skops    ``skops.io.dump``       no (trusted types only)
scikit-learn estimator / Pipeline, joblib   ``joblib.dump``         **yes** (pickle)
XGBoost booster                             ``save_model``          no
                                            (``.json``, ``.ubj``)
LightGBM booster                            ``save_model``          no
                                            (``.txt``)
CatBoost model                              ``save_model``          no
                                            (``.cbm``, ``.json``)
==========================================  ======================  ===========================

A ``.json`` file is told apart by its content: an XGBoost model's JSON has a ``learner``, a
CatBoost model's ``oblivious_trees``. A booster comes back wrapped
(:mod:`insdel.trees.boosters`): ``predict`` takes a numpy 2-D array and returns the library's own
prediction as float64, and :func:`insdel.trees.read` reads its trees. These three need the
``trees`` extra (``pip install ".[trees]"``).

Pickle-based formats run arbitrary code when they are loaded, so they are refused unless the
caller opts in (``trust=True``; ``[model] trust = true`` in a configuration, ``--trust-model`` on
the command line). The torch formats carry input gradients; DeepLIFT needs hooks on an eager
module, which the insdel, state_dict and full-module formats give and TorchScript and torch.export
do not (:func:`insdel.adapter.model_capabilities`). torch deprecates TorchScript
(``torch.jit``) in favour of ``torch.export``: the ``.pt2`` format is the no-trust torch format
that stays; TorchScript files load while torch can read them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ._checkpoint import sha256_file
from .adapter import eval_mode, exported_input_shape, model_capabilities
from .trees._build import file_library

__all__ = ["load_any", "FORMATS", "OnnxModel", "gradient_support"]

FORMATS = ("insdel", "torch_export", "torchscript", "state_dict", "torch_module", "onnx", "skops",
           "joblib", "xgboost", "lightgbm", "catboost")

_PICKLE_WHY = ("loading a pickle runs whatever code the file contains, so insdel loads it only "
               "when you trust the file: pass trust=True (API), `trust = true` under [model] "
               "(configuration) or --trust-model (command line)")


class OnnxModel:
    """An ONNX model (onnxruntime) as a batch function ``(B, n) -> (B,)``; no input gradients."""

    def __init__(self, path: str | Path):
        try:
            import onnxruntime as ort
        except ImportError:
            raise ImportError('reading ONNX models needs onnxruntime: pip install ".[models]" '
                              "in the insdel clone (or pip install onnxruntime).") from None

        self.path = str(path)
        self.session = ort.InferenceSession(self.path, providers=["CPUExecutionProvider"])
        inputs = self.session.get_inputs()
        if len(inputs) != 1:
            raise ValueError(f"{path}: the ONNX model has {len(inputs)} inputs; insdel needs one "
                             "(a (B, n) array).")
        self.input_name = inputs[0].name
        self.dtype = np.float64 if "double" in inputs[0].type else np.float32
        self.output_name = self.session.get_outputs()[0].name

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=self.dtype)
        (y,) = self.session.run([self.output_name], {self.input_name: X})
        y = np.asarray(y, dtype=np.float64)
        return y[:, 0] if y.ndim == 2 and y.shape[1] == 1 else y

    def __repr__(self) -> str:
        return f"OnnxModel({self.path!r})"


def gradient_support(model: Any) -> bool:
    """Whether ``model`` has input gradients (a torch module: TorchScript and torch.export
    programs included)."""
    return "gradients" in model_capabilities(model)


def _is_pt2(path: Path) -> bool:
    """Whether ``path`` is a ``torch.export.save`` archive (a zip whose ``archive_format`` record
    says ``pt2``)."""
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as zf:
        names = [n for n in zf.namelist() if n.endswith("/archive_format") or n == "archive_format"]
        return any(zf.read(n).strip() == b"pt2" for n in names)


def _is_torchscript(path: Path) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    return any(n.endswith("/constants.pkl") for n in names) and any("/code/" in n for n in names)


def load_any(path: str | Path, *, trust: bool = False, preset: str | None = None,
             n_features: int | None = None, dataset=None) -> tuple[Any, dict[str, Any]]:
    """Load a model saved in any of :data:`FORMATS`.

    Parameters
    ----------
    path : path
        The file.
    trust : bool, default False
        Allow pickle-based formats (a full torch module, a joblib scikit-learn model), which run
        code from the file when loaded.
    preset : str, optional
        For a bare ``state_dict``: the insdel MLP preset it belongs to (``insdel.models.available()``).
    n_features : int, optional
        The data's number of features: a bare ``state_dict``'s number of inputs (default: read
        from the first layer), and checked against a scikit-learn model's ``n_features_in_`` (an
        error naming the columns, not scikit-learn's at the first prediction).
    dataset : Dataset, optional
        For a model saved by :func:`insdel.models.save_model`, which records its features and
        scaling: the data it will be fed, checked against them (an error when the feature names
        or the scaling differ, :func:`insdel.models.load_model`). The runner passes its data set.

    Returns
    -------
    (model, info) : tuple
        ``model``: something :func:`insdel.as_model` accepts (a torch.export program's module,
        ``ExportedProgram.module()``, for a ``.pt2`` file). ``info``: a dict of ``format`` (one
        of :data:`FORMATS`), ``path``, ``sha256`` (of the file), ``trusted`` (whether a pickle
        was loaded on trust), ``gradients`` (bool: input gradients) and ``capabilities`` (what
        attribution methods may ask of it: ``values``, ``gradients``, ``hooks``;
        :func:`insdel.adapter.model_capabilities`; :func:`insdel.attribution.supported` lists
        the methods).

    Raises
    ------
    FileNotFoundError
        No such file.
    PermissionError
        A pickle-based format without ``trust=True`` (the message says why and how to opt in).
    ValueError
        An unknown format, a state_dict without ``preset``, a torch.export program exported in
        training mode or for a fixed number of rows, or one whose input width differs from
        ``n_features``.
    """
    from ._validation import check_bool, check_positive_int

    trust = check_bool(trust, "trust")  # "no" is truthy: never load a pickle on a string
    if n_features is not None:
        n_features = check_positive_int(n_features, "n_features")
    if preset is not None and not isinstance(preset, str):
        raise ValueError(f"preset must be the name of an insdel MLP preset; got {preset!r}.")
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"model file {str(path)!r} does not exist.")
    info: dict[str, Any] = {"path": str(p.resolve()), "sha256": sha256_file(p), "trusted": False}
    suffix = p.suffix.lower()
    if suffix == ".onnx":
        model: Any = OnnxModel(p)
        info["format"] = "onnx"
    elif suffix == ".skops":
        model = _load_skops(p, trust, info)
    elif suffix in (".joblib", ".pkl", ".pickle"):
        if not trust:
            raise PermissionError(f"{p.name} is a pickle (joblib/pickle format): {_PICKLE_WHY}. "
                                  "Safer: save scikit-learn models with skops "
                                  "(skops.io.dump) or export them to ONNX.")
        import joblib

        model = joblib.load(p)
        info.update(format="joblib", trusted=True)
    elif suffix in (".json", ".ubj", ".txt", ".cbm") or file_library(p) is not None:
        model = _load_booster(p, info)
    elif suffix == ".pt2" or _is_pt2(p):
        model = _load_exported(p, n_features, info)
    elif suffix in (".pt", ".pth", ".ts", ".torchscript") or zipfile.is_zipfile(p):
        model = _load_torch(p, trust, preset, n_features, info, dataset)
    else:
        raise ValueError(f"{p.name}: unknown model format (suffix {suffix!r}); insdel reads "
                         f"{', '.join(FORMATS)} (.pt/.pth, .pt2, .onnx, .skops, .joblib, XGBoost .json/.ubj, "
                         "LightGBM .txt, CatBoost .cbm/.json).")
    if not (callable(model) or hasattr(model, "predict")):
        raise TypeError(f"{p.name} holds a {type(model).__name__}, not a model (no predict, not "
                        "callable).")
    if preset is not None and info["format"] != "state_dict":
        raise ValueError(f"{p.name}: preset={preset!r} ([model] architecture) names the "
                         f"architecture of a bare state_dict, but the file is a {info['format']} "
                         "model that carries its own architecture; drop the preset.")
    _check_fitted_features(model, p, n_features, dataset)
    info["gradients"] = gradient_support(model)
    info["capabilities"] = list(model_capabilities(model))
    return model, info


def _check_fitted_features(model: Any, p: Path, n_features: int | None, dataset) -> None:
    """A scikit-learn model fitted on another number of features than the data give is an error
    now, naming the columns (scikit-learn's own error comes only at the first prediction)."""
    fitted = getattr(model, "n_features_in_", None)
    if n_features is None or fitted is None or int(fitted) == int(n_features):
        return
    names = [str(c) for c in getattr(model, "feature_names_in_", [])]
    have = list(getattr(dataset, "feature_names", []) or [])
    detail = ""
    if names and have:
        lack = [c for c in names if c not in have]
        extra = [c for c in have if c not in names]
        detail = ((f"; the data lack {lack}" if lack else "")
                  + (f"; the data have {extra} the model was not fitted on" if extra else ""))
    info = getattr(dataset, "info", None) or {}
    left = list(info.get("ignored_columns") or [])
    hint = (f" (the recipe left out column(s) {left}: see its warning)" if left else "")
    raise ValueError(f"{p.name}: the model was fitted on {int(fitted)} features but the data set "
                     f"gives {int(n_features)}{detail}{hint}; the model must take the recipe's "
                     "features, in its column order.")


_BOOSTER_SUFFIX = {"xgboost": ".json or .ubj", "lightgbm": ".txt", "catboost": ".cbm or .json"}


def _load_booster(p: Path, info: dict) -> Any:
    """An XGBoost (``.json``, ``.ubj``), LightGBM (``.txt``) or CatBoost (``.cbm``, ``.json``)
    model file, told apart by its content and wrapped so that ``predict`` takes a numpy array
    (:mod:`insdel.trees.boosters`)."""
    from .trees import boosters

    kind = file_library(p)
    if kind is None:
        raise ValueError(
            f"{p.name}: not a model file of XGBoost (JSON / UBJSON with a 'learner'), LightGBM "
            "(a text model starting with a 'tree' line) or CatBoost (.cbm, or JSON with "
            "'oblivious_trees'); save the model with the library's own save_model.")
    if kind == "xgboost":
        from .trees.read_xgboost import load_booster

        model: Any = boosters.XGBoostModel(load_booster(p))
    elif kind == "lightgbm":
        from .trees.read_lightgbm import load_booster

        model = boosters.LightGBMModel(load_booster(p))
    else:
        from .trees.read_catboost import load_model

        model = boosters.CatBoostModel(load_model(p))
    info["format"] = kind
    if p.suffix.lower() not in _BOOSTER_SUFFIX[kind].split(" or "):
        info["note"] = (f"{p.name} holds a {kind} model (read by its content); {kind} saves "
                        f"its models as {_BOOSTER_SUFFIX[kind]}")
    return model


def _load_exported(p: Path, n_features, info: dict) -> Any:
    """A ``torch.export.save`` program (no pickle: a graph of aten operations and its weights):
    its module, checked to be in eval mode, for any number of rows and ``n_features`` inputs."""
    import torch

    try:
        program = torch.export.load(str(p))
    except Exception as exc:
        raise ValueError(f"{p.name}: not a torch.export program torch can read "
                         f"({type(exc).__name__}: {exc}).") from None
    model = program.module()
    try:
        eval_mode(model)  # refuses a program exported in training mode or for fixed rows
    except ValueError as exc:
        raise ValueError(f"{p.name}: {exc}") from None
    shape = exported_input_shape(model)
    if shape is None or len(shape) != 2:
        raise ValueError(f"{p.name}: the torch.export program takes "
                         f"{'inputs insdel cannot read' if shape is None else f'shape {shape}'}; "
                         "insdel needs one (B, n) tensor.")
    if n_features is not None and shape[1] is not None and shape[1] != int(n_features):
        raise ValueError(f"{p.name}: the torch.export program takes {shape[1]} inputs but the "
                         f"data have {n_features} features.")
    info["format"] = "torch_export"
    return model


def _load_skops(p: Path, trust: bool, info: dict) -> Any:
    try:
        import skops.io as sio
    except ImportError:
        raise ImportError('reading .skops models needs skops: pip install ".[models]" in the '
                          "insdel clone (or pip install skops).") from None

    untrusted = sio.get_untrusted_types(file=p)
    if untrusted and not trust:
        raise PermissionError(f"{p.name} (skops) holds types skops does not trust by default: "
                              f"{untrusted}; check them and pass trust=True (or `trust = true` / "
                              "--trust-model) to load it.")
    info.update(format="skops", trusted=bool(untrusted))
    return sio.load(p, trusted=untrusted or None)


def _load_torch(p: Path, trust: bool, preset, n_features, info: dict, dataset=None) -> Any:
    import torch

    if _is_torchscript(p):
        model = torch.jit.load(str(p), map_location="cpu")  # deprecated by torch 2.13, still read
        model.eval()
        info["format"] = "torchscript"
        return model
    try:
        obj = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # a full pickled module (or not a torch file)
        if not trust:
            raise PermissionError(f"{p.name} is a pickled torch object (torch.save of a module), "
                                  f"not weights only: {_PICKLE_WHY}. Safer: save the module with "
                                  "torch.export.save (.pt2), or its state_dict with an insdel "
                                  "preset.") \
                from exc
        obj = torch.load(p, map_location="cpu", weights_only=False)
        if not isinstance(obj, torch.nn.Module):
            raise ValueError(f"{p.name} holds a {type(obj).__name__}, not a torch module.") from None
        obj.eval()
        info.update(format="torch_module", trusted=True)
        return obj
    if isinstance(obj, dict) and obj.get("format") is not None and "state_dict" in obj:
        from .models import load_model

        model, _ = load_model(p, dataset=dataset)
        info["format"] = "insdel"
        return model
    if isinstance(obj, dict) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        if preset is None:
            raise ValueError(f"{p.name} is a bare state_dict: name the architecture with "
                             "preset= ([model] architecture = \"...\"), one of "
                             "insdel.models.available().")
        from .models import MLP
        from .models import get as get_preset

        spec = get_preset(preset)
        first = next(v for k, v in obj.items() if k.endswith("weight") and v.ndim == 2)
        if n_features is not None and int(n_features) != int(first.shape[1]):
            raise ValueError(f"{p.name}: the state_dict's first layer takes {first.shape[1]} "
                             f"inputs but n_features = {n_features} (the data's features).")
        n = int(n_features or first.shape[1])
        model = MLP(n, list(spec["hidden"]), float(spec.get("dropout", 0.0)))
        try:
            model.load_state_dict(obj)
        except RuntimeError as exc:
            raise ValueError(f"{p.name}: the state_dict does not fit preset {preset!r} "
                             f"({exc}).") from None
        model.eval()
        info["format"] = "state_dict"
        info["preset"] = preset
        return model
    raise ValueError(f"{p.name}: a torch file holding a {type(obj).__name__}; insdel reads "
                     "torch.export programs (.pt2), TorchScript, insdel model files, state_dicts "
                     "(with preset=) and, with trust, pickled modules.")
