"""One model adapter used everywhere: torch modules, scikit-learn style estimators, plain callables.

Every part of insdel calls the model through :func:`as_model`, so the rules on batching, dtypes and
output shapes live in one place:

* a ``torch.nn.Module`` is put in eval mode and evaluated under ``torch.inference_mode`` in batches,
  in its own parameter dtype (float32 or float64) and on its own device; a TorchScript module runs
  with the JIT's optimisation off (:func:`script_scope`), so its values and gradients do not depend
  on how often it ran before;
* an object with a ``predict`` method (scikit-learn, xgboost, ...) is called as ``est.predict(X)``;
* any other callable is called on a float64 array of shape (B, n).

The output must have shape (B,) or (B, 1); anything else, or a non-finite value, raises an error that
names the rows. A model with H outputs (B, H) is tested column by column with ``output=``, or as a
whole with ``outputs=H`` (docs/multi_output.md): its values are then (B, H), each row evaluated
once for all H outputs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Union

import numpy as np

from ._threads import module_parameters, start_numba_threads, torch_threads, torch_threads_for
from ._validation import _first, all_finite, check_positive_int, check_scalar, writable

#: Attribution methods that need input gradients (a torch module).
GRADIENT_METHODS = ("integrated_gradients", "deeplift", "vanilla_grad", "input_x_gradient")

#: What attribution methods ask of a model (:func:`model_capabilities`): ``values`` (every model),
#: ``gradients`` (input gradients through autograd: any torch module, TorchScript and the module
#: of a ``torch.export`` program included), ``hooks`` (an eager ``torch.nn.Module`` whose
#: nonlinearities are modules: captum's DeepLift registers hooks on the module and on them),
#: ``trees`` (a tree ensemble :mod:`insdel.trees` reads: its exact tree game).
CAPABILITIES = ("values", "gradients", "hooks", "trees")

#: The kinds of torch model (:func:`torch_kind`), as named in messages.
TORCH_KINDS = {"module": "a torch.nn.Module", "torchscript": "a TorchScript module",
               "exported": "a torch.export program"}

#: What :func:`as_model` accepts: a torch module, an estimator with ``predict``, a callable
#: ``(B, n) -> (B,)`` or an insdel :class:`Model`.
ModelLike = Union["Model", Callable[[np.ndarray], Any], Any]

# Rows per model call. On CPU, MLP throughput peaks around 4k-16k rows (activations stay in cache;
# 65,536-row batches of the paper's CERN MLP ran 2x slower per row); raise it for GPUs.
DEFAULT_BATCH_SIZE = 8192


class _Counts:
    """The evaluation counters of a model, one object shared by a :class:`Model` and every Model
    :func:`as_model` derives from it (another batch size, dtype or output), so that rows evaluated
    through the derived one are counted on the caller's model too. Slots: an increment costs what
    one on a plain attribute does."""

    __slots__ = ("evals", "grad_evals", "calls")

    def __init__(self) -> None:
        self.evals = 0
        self.grad_evals = 0
        self.calls = 0

    def __repr__(self) -> str:
        return f"_Counts(evals={self.evals}, grad_evals={self.grad_evals}, calls={self.calls})"


def _counter(field: str, doc: str) -> property:
    """A Model attribute that reads and writes one field of its shared :class:`_Counts`."""

    def get(self) -> int:
        return getattr(self._counts, field)

    def set(self, value: int) -> None:
        setattr(self._counts, field, value)

    return property(get, set, doc=doc)


class Model:
    """A model f: R^n -> R evaluated in batches on NumPy arrays.

    Parameters
    ----------
    fn : callable
        Function taking a 2-D array (B, n) and returning an array of B values.
    dtype : numpy dtype
        The input dtype the model computes in (hybrid points are built directly in it).
    batch_size : int
        Rows per call of ``fn``.
    torch_module : torch.nn.Module or None
        The wrapped module, when there is one (gradient-based attributions need it).
    name : str
        Shown in error messages.

    Attributes
    ----------
    n_evals : int
        Number of rows evaluated so far, forward or forward + backward (the compute an
        experiment reports). Counted here and nowhere else.
    n_grad_evals : int
        Of those, rows whose input gradient was computed (:meth:`value_and_grad`).
    n_calls : int
        Number of calls of ``fn`` or of the module.
    estimator : object or None
        The estimator whose ``predict`` this model calls (:func:`as_model`): what the tree
        engine reads when it is a tree ensemble (capability ``trees``).

    A Model that :func:`as_model` derives from this one (``batch_size=``, ``dtype=`` or
    ``output=``) shares these counts with it, both ways: evaluations made through either are
    counted on both. A Model built by its constructor, or by another ``as_model`` call on the
    same function, has counts of its own.
    """

    n_evals = _counter("evals", "Rows evaluated so far (forward, or forward + backward).")
    n_grad_evals = _counter("grad_evals", "Rows whose input gradient was computed.")
    n_calls = _counter("calls", "Calls of ``fn`` or of the module.")
    estimator: Any = None

    def __init__(self, fn: Callable[[np.ndarray], Any], *, dtype=np.float64,
                 batch_size: int = DEFAULT_BATCH_SIZE, torch_module=None, name: str = "model",
                 output: int | Callable | None = None, outputs: int | None = None):
        start_numba_threads()  # numba's threads started now, keeping torch's count
        self._fn = fn
        self.output = _check_output(output)
        #: H, the number of outputs kept (``outputs=``), or None: one output per row
        self.n_outputs = None if outputs is None else check_scalar(
            outputs, "outputs (the number of outputs the model returns per row)", int, min_val=1)
        if self.n_outputs is not None and output is not None:
            raise ValueError(f"give output= (one column to test) or outputs= (all H columns), not "
                             f"both; got output={output!r}, outputs={outputs!r}.")
        self.dtype = np.dtype(dtype)
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.torch_module = torch_module
        #: whether the module is TorchScript: every call runs in :func:`script_scope`
        self._script = torch_kind(torch_module) == "torchscript"
        self.name = name
        self._counts = _Counts()  # n_evals, n_grad_evals, n_calls (as_model may share it)
        #: torch's intra-op threads while this model evaluates (:func:`insdel._threads.
        #: torch_threads_for` of its parameters and ``batch_size``, fixed per model so that
        #: every call rounds alike): 1 for a small module on the CPU, None (torch's setting) else
        self.threads = None
        if torch_module is not None:
            self.device, self.torch_dtype, _ = torch_spec(torch_module)
            if self.device.type == "cpu":
                self.threads = torch_threads_for(module_parameters(torch_module),
                                                 self.batch_size)
        # a module wrapped by as_model with no output selection: batches are slices of one tensor
        self._batches = (_torch_batches(torch_module, self.device, self.torch_dtype)
                         if torch_module is not None and output is None and outputs is None
                         and getattr(fn, "_insdel_module", None) is torch_module else None)

    def _select(self, y):
        """Apply ``output`` (an index into the last axis, or a callable) to raw model outputs."""
        if self.output is None:
            return y
        if callable(self.output):
            out = self.output(y)
            if hasattr(out, "detach"):
                out = out.detach().cpu().numpy()
            return np.asarray(out, dtype=np.float64)
        if y.ndim != 2:
            raise ValueError(f"output={self.output!r} selects a column, but {self.name} returned "
                             f"shape {y.shape}.")
        if not -y.shape[1] <= self.output < y.shape[1]:
            raise ValueError(f"output={self.output} is out of range for {self.name}'s "
                             f"{y.shape[1]} outputs.")
        return y[:, self.output]

    @property
    def value_shape(self) -> tuple:
        """The shape of one row's value: ``()`` for one output, ``(H,)`` with ``outputs=H``."""
        return () if self.n_outputs is None else (self.n_outputs,)

    @property
    def has_gradients(self) -> bool:
        """Whether input gradients are available (a torch module)."""
        return self.torch_module is not None

    @property
    def capabilities(self) -> tuple[str, ...]:
        """What the model offers attribution methods (:func:`model_capabilities`)."""
        caps = model_capabilities(self.torch_module)
        return caps + ("trees",) if _is_tree_ensemble(self.estimator) else caps

    def value_and_grad(self, X: np.ndarray, *, chunk_rows: int | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """f and its input gradient on the rows of ``X`` (N, n), chunked; float64 (N,), (N, n).

        The rows are converted to the module's dtype and device (the same rule as the forward
        pass); parameters get no ``.grad``. Raises ``TypeError`` for models without gradients.
        """
        if self.torch_module is None:
            raise TypeError(
                f"{self.name} has no input gradients (it is not a torch.nn.Module); the gradient "
                f"methods ({', '.join(GRADIENT_METHODS)}) need one. Model-agnostic methods: "
                "kernel_shap, exact_shapley, lime, random.")

        if self.n_outputs is not None:
            raise TypeError(f"{self.name} keeps its {self.n_outputs} outputs (outputs=); an input "
                            "gradient is taken of one output: as_model(model, output=h), or "
                            "insdel.multi_output.output_views(model)[h].")
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"the model takes a 2-D array (B, n); got shape {X.shape}.")
        N = X.shape[0]
        cs = self.batch_size if chunk_rows is None else int(chunk_rows)
        F = np.empty(N)
        G = np.empty(X.shape)
        with torch_threads(self.threads), script_scope(self._script):
            self._value_and_grad_chunks(X, F, G, cs)
        c = self._counts
        c.evals += N
        c.grad_evals += N
        return F, G

    def _value_and_grad_chunks(self, X: np.ndarray, F: np.ndarray, G: np.ndarray,
                               cs: int) -> None:
        """:meth:`value_and_grad`'s chunks of ``cs`` rows, values into F and gradients into G."""
        import torch

        N = X.shape[0]
        for s in range(0, N, cs):
            e = min(N, s + cs)
            with torch.inference_mode(False), torch.enable_grad():
                t = torch.from_numpy(writable(np.ascontiguousarray(X[s:e], dtype=self.dtype))).to(
                    device=self.device, dtype=self.torch_dtype).requires_grad_(True)
                try:
                    y = _one_tensor(self.torch_module(t), torch)
                except (RuntimeError, AssertionError) as exc:
                    self._raise_width_error(exc, X.shape[1])
                    raise
                if self.output is not None:
                    y = self.output(y) if callable(self.output) else y[:, self.output]
                y = _one_output(y, e - s, self.name)  # a tensor: the checks of the forward pass
                (g,) = torch.autograd.grad(y.sum(), t)
            F[s:e] = y.detach().to("cpu", torch.float64).numpy()
            G[s:e] = g.detach().to("cpu", torch.float64).numpy()
            self._counts.calls += 1

    def grad(self, X: np.ndarray, *, chunk_rows: int | None = None) -> np.ndarray:
        """Input gradient of f at the rows of ``X``, float64 (N, n); see :meth:`value_and_grad`."""
        return self.value_and_grad(X, chunk_rows=chunk_rows)[1]

    def count(self, rows: int) -> None:
        """Count ``rows`` evaluations done on the wrapped module by a library that calls it
        directly (captum's DeepLift runs its own forward and backward passes)."""
        c = self._counts
        c.evals += int(rows)
        c.grad_evals += int(rows)
        c.calls += 1

    def __call__(self, X: np.ndarray, *, out: np.ndarray | None = None,
                 check_finite: bool = True) -> np.ndarray:
        """Evaluate f on the rows of ``X`` (N, n); returns float64 values (N,), in ``out`` when
        given (a float64 array of shape (N,)); (N, H) for a model with ``outputs=H``.

        ``check_finite=False`` skips the NaN/inf check of the values, for a caller that makes it
        itself in a pass it does anyway (:func:`insdel.trace` checks while gathering its curves,
        and names the pairs); it is one more pass over the values, measurable on cheap models.
        """
        X = np.asarray(X)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2:
            raise ValueError(f"the model takes a 2-D array (B, n); got shape {X.shape}.")
        N = X.shape[0]
        shape = (N,) + self.value_shape
        if out is None:
            out = np.empty(shape, dtype=np.float64)
        elif out.shape != shape or out.dtype != np.float64:
            raise ValueError(f"out must be a float64 array of shape {shape}; got {out.dtype} "
                             f"{out.shape}.")
        bs = self.batch_size
        try:
            with torch_threads(self.threads), script_scope(self._script):
                self._forward(X, out, bs)
        except (RuntimeError, AssertionError) as exc:  # torch's shape errors, export's guards
            self._raise_width_error(exc, X.shape[1])
            raise
        if check_finite and not all_finite(out):  # one pass (a float32 inf stays inf in float64)
            rows = np.flatnonzero(~np.isfinite(out.reshape(N, -1)).any(axis=1))
            raise ValueError(
                f"{self.name} returned non-finite values for {len(rows)} input row(s) "
                f"(rows {_first(rows)} of this call)."
            )
        return out

    def _forward(self, X: np.ndarray, out: np.ndarray, bs: int) -> None:
        """The values of every batch of ``bs`` rows of X into ``out``."""
        N = X.shape[0]
        if self._batches is not None:
            if X.dtype != self.dtype:
                X = X.astype(self.dtype)
            c = self._counts
            c.calls += self._batches(X, out, bs, self.name)
            c.evals += N
        else:
            with self._forward_context():
                for start in range(0, N, bs):
                    stop = min(start + bs, N)
                    out[start:stop] = self._call_batch(X[start:stop])

    def _raise_width_error(self, exc: BaseException, n: int) -> None:
        """Raise a ValueError naming both widths when a torch module's forward pass failed
        (``exc``) on ``n`` features and its first layer takes another number; else return."""
        if self.torch_module is not None:
            err = input_width_error(self.torch_module, n, self.name, exc)
            if err is not None:
                raise err from exc

    def _forward_context(self):
        """torch's inference mode around all batches of a call for a torch module (entered once,
        not per batch), else nothing."""
        if self.torch_module is None:
            return contextlib.nullcontext()
        import torch

        return torch.inference_mode()

    def _call_batch(self, Xb: np.ndarray) -> np.ndarray:
        """Values of one batch (B,), shape-checked, in the model's own real dtype (the caller's
        float64 array converts them; :meth:`__call__` checks their finiteness)."""
        if Xb.dtype != self.dtype:
            Xb = Xb.astype(self.dtype)
        if self.torch_module is not None and callable(self.output):
            # a torch module's output= callable gets the output tensor, as in value_and_grad
            # (torch functions such as torch.sigmoid work in both)
            import torch

            t = torch.from_numpy(writable(np.ascontiguousarray(Xb))).to(device=self.device,
                                                                        dtype=self.torch_dtype)
            out = self.output(_one_tensor(self.torch_module(t), torch))
            y = _tensor_values(out, torch) if isinstance(out, torch.Tensor) \
                else np.asarray(out, dtype=np.float64)
        else:
            y = self._fn(np.ascontiguousarray(Xb))
            # float32 outputs stay float32 until they are written into the caller's float64 array
            y = np.asarray(y) if self.output is None else self._select(np.asarray(y, np.float64))
        if y.dtype.kind not in "fiu":
            if y.dtype.kind not in "bO":  # complex, strings, ...: no silent cast to float
                raise TypeError(f"{self.name} returned values of dtype {y.dtype}; a real "
                                "(float, int or bool) output is needed.")
            y = np.asarray(y, dtype=np.float64)
        B = Xb.shape[0]
        y = _one_output(y, B, self.name) if self.n_outputs is None else \
            _h_outputs(y, B, self.n_outputs, self.name)
        c = self._counts
        c.evals += B
        c.calls += 1
        return y

    def __repr__(self) -> str:
        h = "" if self.n_outputs is None else f", outputs={self.n_outputs}"
        return f"Model({self.name}, dtype={self.dtype}, batch_size={self.batch_size}{h})"


def _check_output(output):
    """``output`` is None, a callable or an integer column (never a bool or a float)."""
    if output is None or callable(output):
        return output
    return check_scalar(output, "output (a column of the model's outputs, or a callable)", int)


def _is_torch_module(f) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return False
    return isinstance(f, torch.nn.Module)


def _is_exported(module) -> bool:
    """Whether ``module`` is the module of a ``torch.export`` program
    (``ExportedProgram.module()``): a graph of aten operations, whose layers and nonlinearities
    are no longer modules."""
    import torch

    return isinstance(module, torch.fx.GraphModule) and any(
        isinstance(node.target, torch._ops.OpOverload) for node in module.graph.nodes
        if node.op == "call_function")


def torch_kind(f) -> str | None:
    """``"module"`` (an eager ``torch.nn.Module``), ``"torchscript"``, ``"exported"`` (the
    module of a ``torch.export`` program), or None for a model that is no torch module (a
    :class:`Model` is judged by the module it wraps)."""
    if isinstance(f, Model):
        f = f.torch_module
    if f is None or not _is_torch_module(f):
        return None
    import torch

    if isinstance(f, torch.jit.ScriptModule):
        return "torchscript"
    return "exported" if _is_exported(f) else "module"


def script_scope(script: bool) -> contextlib.AbstractContextManager:
    """The context insdel calls a TorchScript module in (``script`` true): the JIT's graph
    executor runs the module's unoptimised graph (``torch.jit.optimized_execution(False)``,
    a setting of the calling thread, restored on exit), else nothing.

    With optimisation on, TorchScript's profiling executor runs a function's first calls as
    written, then swaps in a graph it optimised from their profile (autodiff subgraphs, fusion),
    which rounds a float32 module's gradients differently (by a float32 rounding unit). A
    module a Dask worker has just loaded would then disagree with the driver's, which has run;
    unoptimised, every call rounds as the first one. It costs no speed on a 3-64-64-1 float32
    tanh MLP (unoptimised / optimised time, best of 5: forward of 8,192 rows 0.95, value and
    input gradient of 256 rows 0.81, integrated gradients of 256 pairs 0.60).
    """
    if not script:
        return contextlib.nullcontext()
    import torch

    return torch.jit.optimized_execution(False)


def drop_optimised_plan(module) -> None:
    """Make a TorchScript module that already ran optimised (a call outside
    :func:`script_scope`, e.g. the user's own) plan its next call afresh, so that insdel's calls
    run its unoptimised graph: the executor keeps an optimised plan once made, whatever the
    setting. Nothing happens for a module with no optimised plan (every module insdel loads and
    calls only in :func:`script_scope`), nor for any other model."""
    if torch_kind(module) != "torchscript":
        return
    flush = getattr(getattr(module, "forward", None), "_debug_flush_compilation_cache", None)
    try:  # torch raises when the forward method has no optimised plan yet
        module._c.get_debug_state()
    except (RuntimeError, AttributeError):
        return
    if flush is not None:
        flush()


def model_capabilities(f) -> tuple[str, ...]:
    """What ``f`` offers attribution methods, a subset of :data:`CAPABILITIES`.

    Every model gives ``values``. Every torch module gives ``gradients`` (autograd through its
    forward pass). Only an eager ``torch.nn.Module`` gives ``hooks``: a TorchScript module
    refuses forward hooks, and a ``torch.export`` program's layers are aten operations, so
    captum's DeepLift finds no nonlinearity module to apply its rescale rule to."""
    if isinstance(f, Model):
        return f.capabilities
    kind = torch_kind(f)
    if kind is None:
        return ("values", "trees") if _is_tree_ensemble(f) else ("values",)
    return CAPABILITIES[:3] if kind == "module" else ("values", "gradients")


def _is_model_with_trees(f) -> bool:
    """Whether f is an :class:`insdel.trees.ModelWithTrees` (imported only when f is insdel's)."""
    if not type(f).__module__.startswith("insdel"):
        return False
    from .trees import ModelWithTrees

    return isinstance(f, ModelWithTrees)


def _is_tree_ensemble(f) -> bool:
    """Whether f is a tree ensemble :mod:`insdel.trees` reads (its type only; nothing read)."""
    if f is None:
        return False
    from .trees import TreeEnsemble, recognise

    return isinstance(f, TreeEnsemble) or recognise(f)


def exported_input_shape(module) -> tuple[int | None, ...] | None:
    """The input shape a ``torch.export`` program was exported for, None for a dynamic
    dimension (its one input's ``(batch, n)``); None when ``module`` is not exported or its
    inputs are not one tensor."""
    if torch_kind(module) != "exported":
        return None
    inputs = [node for node in module.graph.nodes if node.op == "placeholder"]
    val = inputs[0].meta.get("val") if len(inputs) == 1 else None
    shape = getattr(val, "shape", None)
    if shape is None:
        return None
    return tuple(d if isinstance(d, int) else None for d in shape)


def _training_ops(module) -> list[str]:
    """The operations of an exported program that run in training mode (dropout, batch-norm
    with batch statistics): each call_function whose ``train`` / ``training`` argument is True."""
    import torch

    found = []
    for node in module.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        for i, arg in enumerate(target._schema.arguments):
            if arg.name in ("train", "training"):
                value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
                if value is True:
                    found.append(str(target))
    return found


def eval_mode(module) -> None:
    """Put a torch module in eval mode (dropout off, batch-norm statistics frozen).

    The module of a ``torch.export`` program keeps the mode it was exported in (its ``eval()``
    raises NotImplementedError): one exported in training mode, or for a fixed number of rows,
    is refused with the reason."""
    if torch_kind(module) != "exported":
        module.eval()
        return
    ops = _training_ops(module)
    if ops:
        raise ValueError(f"the torch.export program was exported in training mode (it runs "
                         f"{sorted(set(ops))} with train=True, so its values would be random or "
                         "depend on the batch); export the module after module.eval().")
    shape = exported_input_shape(module)
    if shape is not None and shape[0] is not None:
        raise ValueError(
            f"the torch.export program was exported for exactly {shape[0]} rows (input shape "
            f"{tuple(shape)}); insdel calls it on batches of any size: export it with a dynamic "
            "batch dimension, torch.export.export(net, (x,), dynamic_shapes=({0: "
            "torch.export.Dim('batch')},)).")


def _first_layer_width(module) -> tuple[str, int] | None:
    """``(description, inputs)`` of the first layer of a torch module, when it can be read: the
    input shape of an exported program, else the first ``Linear`` (or ``LazyLinear`` once
    initialised) among its modules, in registration order."""
    shape = exported_input_shape(module)
    if shape is not None:
        if len(shape) != 2 or shape[1] is None:
            return None
        return f"it was exported for inputs of shape (B, {shape[1]})", shape[1]
    for name, sub in module.named_modules():
        width = getattr(sub, "in_features", None)
        if isinstance(width, int) and width > 0:
            kind = getattr(sub, "original_name", None) or type(sub).__name__
            return f"its first {kind} layer ({name or 'the module itself'!r}) takes {width} " \
                   "inputs", width
    return None


def input_width_error(module, n: int, name: str, exc: BaseException) -> Exception | None:
    """A ValueError naming the data's width ``n`` and the width the module's first layer takes,
    when a forward pass failed (``exc``) and the two differ; None otherwise (the caller re-raises
    ``exc`` as it is)."""
    try:
        found = _first_layer_width(module)
    except Exception:  # reading the layers must never hide the model's own error
        return None
    if found is None or found[1] is None or found[1] == n:
        return None
    return ValueError(f"{name} does not take the data's {n} features: {found[0]} (torch: "
                      f"{str(exc).strip().splitlines()[-1]}).")


def torch_spec(module) -> tuple[Any, Any, Any]:
    """(device, torch dtype, numpy input dtype) of a module: the one dtype rule of insdel.

    Inputs are sent to the module in the dtype and on the device of its first floating parameter
    or buffer (float32 when it has none). Hybrid rows are built on the NumPy side in float64 for
    float64 modules and float32 otherwise (float16 and bfloat16 modules included: NumPy has no
    bfloat16, and float32 holds every float16 value exactly).
    """
    import torch

    floating = [p for p in list(module.parameters()) + list(module.buffers())
                if p.is_floating_point()]
    tdtype = floating[0].dtype if floating else torch.float32
    device = floating[0].device if floating else torch.device("cpu")
    np_dtype = np.float64 if tdtype == torch.float64 else np.float32
    return device, tdtype, np_dtype


def _torch_fn(module):
    import torch

    device, tdtype, np_dtype = torch_spec(module)

    def fn(X: np.ndarray) -> np.ndarray:  # called by Model.__call__ inside inference mode
        t = torch.from_numpy(writable(X))
        if t.dtype != tdtype or t.device != device:
            t = t.to(device=device, dtype=tdtype, non_blocking=True)
        return _tensor_values(module(t), torch)  # the adapter converts to float64

    fn._insdel_module = module  # Model's whole-call path (_torch_batches) may stand in for fn
    return fn, np_dtype


def _one_tensor(y, torch):
    """``y`` when it is one tensor, else an error naming what the module returned."""
    if not isinstance(y, torch.Tensor):
        raise ValueError(f"the torch module returned a {type(y).__name__}; it must return one "
                         "tensor.")
    return y


def _tensor_values(y, torch) -> np.ndarray:
    """A module's output tensor as a NumPy array: a view where NumPy has the dtype (float32 stays
    float32), else (a GPU tensor, bfloat16, a tensor that requires grad) a CPU float64 copy. A
    complex output is an error (its copy into the float64 values would drop the imaginary part
    with only a NumPy warning; the callable path refuses it in ``_call_batch``)."""
    _one_tensor(y, torch)
    if y.is_complex():
        raise TypeError(f"the torch module returned values of dtype {y.dtype}; a real (float, int "
                        "or bool) output is needed.")
    try:
        return y.numpy()
    except (TypeError, RuntimeError):
        return y.detach().to("cpu", torch.float64).numpy()


def _one_output(y: np.ndarray, B: int, name: str) -> np.ndarray:
    """The values of one batch of B rows as shape (B,) (a (B, 1) output's column), or an error
    naming the model and the shape it returned."""
    if y.shape == (B, 1):
        return y[:, 0]
    if y.shape == (B,):
        return y
    raise ValueError(
        f"{name} must return an array of shape (B,) or (B, 1) for B = {B} input rows; got shape "
        f"{tuple(y.shape)}. Models with several outputs: pass output= (a column or a function of "
        "the outputs) or wrap them so that they return the one output to explain.")


def _h_outputs(y: np.ndarray, B: int, H: int, name: str) -> np.ndarray:
    """The values of one batch of B rows of a model with ``outputs=H`` as shape (B, H) (a (B,)
    output when H = 1), or an error naming the model, H and the shape it returned."""
    if y.shape == (B, H):
        return y
    if H == 1 and y.shape == (B,):
        return y[:, None]
    raise ValueError(f"{name} was declared with outputs={H}: it must return an array of shape "
                     f"(B, {H}) for B = {B} input rows; got shape {tuple(y.shape)}.")


def _torch_batches(module, device, tdtype):
    """The forward pass of a torch module over all batches of one call, values into ``out``:
    one tensor view of the rows, sliced per batch, one inference-mode context, and per batch only
    the module call, its output as a NumPy view and the copy into ``out`` (measured on a cheap
    model: a torch-side ``y[:, 0]`` or a finiteness check per batch each cost about 10 us, as
    much as a sixth of the batch's forward pass). Returns the number of module calls."""
    import torch

    def run(X: np.ndarray, out: np.ndarray, bs: int, name: str) -> int:
        t_all = torch.from_numpy(writable(np.ascontiguousarray(X)))
        convert = t_all.dtype != tdtype or device.type != "cpu"
        N = X.shape[0]
        calls = 0
        with torch.inference_mode():
            for start in range(0, N, bs):
                stop = min(start + bs, N)
                t = t_all[start:stop]
                if convert:
                    t = t.to(device=device, dtype=tdtype, non_blocking=True)
                # float32 stays float32 until the copy into ``out``
                out[start:stop] = _one_output(_tensor_values(module(t), torch), stop - start, name)
                calls += 1
        return calls

    return run


def as_model(f: ModelLike, *, batch_size: int | None = None, dtype=None,
             output: int | Callable | None = None, outputs: int | None = None) -> Model:
    """Wrap ``f`` in the :class:`Model` adapter.

    Parameters
    ----------
    f : torch.nn.Module, estimator with ``predict``, callable, or Model
        The prediction function to test.
    batch_size : int, optional
        Rows per model call (default 8,192; larger batches help on a GPU).
    dtype : numpy dtype, optional
        Override the input dtype (default: the module's parameter dtype, else float64).
    output : int or callable, optional
        For models with several outputs (B, k), like captum's ``target``: the column to test, or a
        function of the outputs (e.g. a class probability: ``lambda y: softmax(y)[:, c]``; for a
        torch module it receives the output tensor, so gradients flow through it).
    outputs : int, optional
        H: keep all H outputs of a model that returns (B, H) (a torch module, a multi-output
        estimator, an H-column function); its values are (B, H), each row evaluated once for all
        outputs, and the engines give one result per output (docs/multi_output.md). A model that
        returns another shape is an error naming ``outputs``.

    Returns
    -------
    Model
        ``f`` itself when it is a Model and nothing changes; a Model with another batch size,
        dtype or output derived from it shares its counts (``n_evals``, ``n_calls``,
        ``n_grad_evals``), so the caller's model counts the evaluations made through the copy.
    """
    if batch_size is not None:
        batch_size = check_positive_int(batch_size, "batch_size")
    if isinstance(f, Model):
        if (batch_size is not None and batch_size != f.batch_size) or output is not None \
                or (dtype is not None and np.dtype(dtype) != f.dtype) \
                or (outputs is not None and outputs != f.n_outputs):
            derived = Model(f._fn, dtype=f.dtype if dtype is None else dtype,
                            batch_size=f.batch_size if batch_size is None else batch_size,
                            torch_module=f.torch_module, name=f.name,
                            output=f.output if output is None else output,
                            outputs=(f.n_outputs if output is None else None)
                            if outputs is None else outputs)
            derived._counts = f._counts  # its evaluations count on the caller's model too
            derived.estimator = f.estimator
            return derived
        return f
    bs = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
    if _is_torch_module(f):
        eval_mode(f)  # dropout off, batch-norm statistics frozen
        drop_optimised_plan(f)  # a TorchScript module's calls made before count for nothing
        fn, np_dtype = _torch_fn(f)
        return Model(fn, dtype=np_dtype if dtype is None else dtype, batch_size=bs,
                     torch_module=f, name=type(f).__name__, output=output, outputs=outputs)
    if hasattr(f, "predict") and callable(f.predict):
        # a model with its trees read (insdel.trees.ModelWithTrees) predicts as the model; the
        # tree engine reads the trees off the estimator
        inner = getattr(f, "model", f) if _is_model_with_trees(f) else f
        model = Model(inner.predict, dtype=np.float64 if dtype is None else dtype,
                      batch_size=bs, name=type(inner).__name__, output=output, outputs=outputs)
        model.estimator = f
        return model
    if callable(f):
        return Model(f, dtype=np.float64 if dtype is None else dtype, batch_size=bs,
                     name=getattr(f, "__name__", type(f).__name__), output=output,
                     outputs=outputs)
    raise TypeError(
        "f must be a torch.nn.Module, an estimator with a predict method, or a callable taking a "
        f"(B, n) array; got {type(f).__name__}."
    )
