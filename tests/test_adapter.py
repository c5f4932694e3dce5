"""The model adapter (``insdel.as_model``): what a torch model of the wrong input width says, the
capabilities each kind of torch model offers attribution methods, and pandas' read-only arrays.

as_model: the one adapter's options and the outputs it accepts."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import insdel
from insdel import as_model
from insdel._validation import writable
from insdel.adapter import model_capabilities, torch_kind

ROOT = Path(__file__).resolve().parents[1]


def _net(n: int = 4) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(n, 8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 1)).eval()


def _exported(net: torch.nn.Module, n: int) -> torch.nn.Module:
    ep = torch.export.export(net, (torch.zeros(3, n),),
                             dynamic_shapes=({0: torch.export.Dim("batch")},))
    return ep.module()


def _scripted(net: torch.nn.Module) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.13 deprecates torch.jit
        return torch.jit.script(net)


@pytest.mark.parametrize("kind", ["module", "torchscript", "exported"])
def test_a_torch_model_of_another_width_names_both_widths(kind):
    net = _net(4)
    model = {"module": lambda: net, "torchscript": lambda: _scripted(net),
             "exported": lambda: _exported(net, 4)}[kind]()
    X = np.zeros((5, 6))
    expected = ("it was exported for inputs of shape \\(B, 4\\)" if kind == "exported"
                else "its first Linear layer \\('0'\\) takes 4 inputs")
    with pytest.raises(ValueError, match=f"does not take the data's 6 features: {expected}"):
        insdel.as_model(model)(X)
    for method in ("integrated_gradients", "vanilla_grad") + (("deeplift",) if kind == "module"
                                                              else ()):
        with pytest.raises(ValueError, match="data's 6 features.*4"):
            insdel.attribute(model, X, np.ones((5, 6)), method)


def test_a_model_error_of_the_right_width_is_left_as_it_is():
    class Broken(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 1)

        def forward(self, x):
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (in my own code)")

    with pytest.raises(RuntimeError, match="in my own code"):
        insdel.as_model(Broken())(np.zeros((2, 3)))


def test_capabilities_of_each_kind_of_torch_model():
    net = _net(4)
    assert model_capabilities(net) == ("values", "gradients", "hooks")
    assert model_capabilities(_scripted(net)) == ("values", "gradients")
    assert model_capabilities(_exported(net, 4)) == ("values", "gradients")
    assert model_capabilities(lambda X: X.sum(1)) == ("values",)
    assert torch_kind(insdel.as_model(_exported(net, 4))) == "exported"
    assert insdel.attribution.supported(_scripted(net)) == [
        m for m in insdel.attribution.available() if m not in ("deeplift", "tree_shap")]
    # a module symbolically traced keeps its layers as modules: hooks, DeepLIFT
    assert model_capabilities(torch.fx.symbolic_trace(net)) == ("values", "gradients", "hooks")


def test_an_exported_program_in_training_mode_or_for_fixed_rows_is_refused():
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))
    training = torch.export.export(net.train(), (torch.zeros(3, 4),),
                                   dynamic_shapes=({0: torch.export.Dim("batch")},)).module()
    with pytest.raises(ValueError, match=r"exported in training mode.*aten\.dropout"):
        insdel.as_model(training)
    fixed = torch.export.export(net.eval(), (torch.zeros(3, 4),)).module()
    with pytest.raises(ValueError, match="exported for exactly 3 rows.*dynamic_shapes"):
        insdel.as_model(fixed)


def test_writable_copies_only_read_only_arrays():
    a = np.zeros((3, 2))
    assert writable(a) is a
    a.flags.writeable = False
    b = writable(a)
    assert b is not a and b.flags.writeable and np.array_equal(a, b)


def test_pandas_inputs_raise_no_torch_warning():
    """Read-only arrays from pandas (a one-row Series, a one-column or copy=False DataFrame)
    reach torch through writable arrays: torch's "The given NumPy array is not writable" warning
    is never raised. In a fresh interpreter: torch raises that warning once per process."""
    code = """
import warnings
import numpy as np, pandas as pd, torch
import insdel
warnings.simplefilter("error")
torch.manual_seed(0)
for n, make in [(4, lambda a, c: pd.DataFrame(a, columns=c, copy=False)),
                (1, lambda a, c: pd.DataFrame(a, columns=c)),
                (4, lambda a, c: pd.Series(a[0], index=c))]:
    net = torch.nn.Sequential(torch.nn.Linear(n, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    net = net.double().eval()
    cols = [f"f{j}" for j in range(n)]
    rng = np.random.default_rng(0)
    X, R = make(rng.normal(size=(6, n)), cols), make(rng.normal(size=(6, n)), cols)
    insdel.as_model(net)(X.to_numpy().reshape(-1, n))
    A = {m: insdel.attribute(net, X, R, m) for m in ("vanilla_grad", "integrated_gradients",
                                                     "deeplift")}
    insdel.evaluate(net, X, R, A, n_random=1)
print("no warning")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0 and "no warning" in proc.stdout, proc.stderr[-2000:]


# -- as_model: batch_size, output and the output's dtype checked -----------------------------------
def _f(Z):
    return Z[:, 0] + 2.0 * Z[:, 1] * Z[:, 2]


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 3)), rng.normal(size=(4, 3))


@pytest.mark.parametrize("bs, err", [(2.7, TypeError), (4.0, TypeError), (True, TypeError),
                                     ("3", TypeError), (0, ValueError)])
def test_as_model_batch_size_not_coerced(bs, err):
    with pytest.raises(err, match="batch_size"):
        as_model(_f, batch_size=bs)
    assert as_model(_f, batch_size=np.int64(4)).batch_size == 4


@pytest.mark.parametrize("out", [True, 1.0, "a"])
def test_as_model_output_must_be_int_or_callable(out):
    with pytest.raises(TypeError, match="output"):
        as_model(lambda Z: Z[:, :2], output=out)


@pytest.mark.parametrize("fn", [lambda Z: Z[:, 0] + 1j, lambda Z: np.array(["1"] * len(Z))])
def test_as_model_refuses_complex_or_string_outputs(pairs, fn):
    with pytest.raises(TypeError, match="dtype"):
        as_model(fn)(pairs[0])


def test_torch_module_complex_output_refused(pairs):
    """A torch module's complex output is an error on the whole-call path too (never copied into
    float64 values as its real part)."""

    class Cplx(torch.nn.Module):
        def forward(self, z):
            return torch.complex(z[:, 0], z[:, 1])

    m = as_model(Cplx().double())
    with pytest.raises(TypeError, match="dtype"):
        m(pairs[0])
    with pytest.raises(TypeError, match="dtype"):
        as_model(Cplx().double(), output=lambda y: y)(pairs[0])


def test_has_gradients_is_whether_the_model_is_a_torch_module():
    import torch

    assert insdel.as_model(torch.nn.Linear(2, 1)).has_gradients
    assert not insdel.as_model(lambda Z: Z.sum(1)).has_gradients


class _Tanh(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return torch.tanh(self.lin(x)) + x[:, :1] * x[:, 2:3]


def _script_file(tmp_path) -> Path:
    torch.manual_seed(0)
    path = tmp_path / "tanh.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.13 deprecates torch.jit
        torch.jit.save(torch.jit.script(_Tanh()), str(path))
    return path


def _load(path: Path) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.jit.load(str(path))


def _script_bytes(module, X, R) -> tuple[bytes, ...]:
    model = as_model(module, output=0)
    F, G = model.value_and_grad(X)
    ig = insdel.attribute(model, X, R, "integrated_gradients")
    return model(X).tobytes(), F.tobytes(), G.tobytes(), np.asarray(ig).tobytes()


def test_a_torchscript_module_gives_the_same_bytes_whatever_ran_before(tmp_path):
    """A float32 TorchScript module's values, input gradients and integrated gradients are the
    bytes of a module just loaded after 20 calls through insdel and after 20 forward and
    backward passes of the user's own (the profiling executor's optimised graph rounds the
    gradients differently; insdel runs the unoptimised one)."""
    path = _script_file(tmp_path)
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(2, 12, 3)).astype(np.float32)
    first = _script_bytes(_load(path), X, R)
    ran = _load(path)
    for _ in range(20):
        _script_bytes(ran, X, R)
    assert _script_bytes(ran, X, R) == first
    own = _load(path)
    for _ in range(20):
        x = torch.from_numpy(X).requires_grad_(True)
        torch.autograd.grad(own(x)[:, 0].sum(), x)
    assert _script_bytes(own, X, R) == first


def test_script_scope_turns_the_jit_optimisation_off_and_restores_it():
    from insdel.adapter import script_scope

    assert torch._C._get_graph_executor_optimize()
    with script_scope(True):
        assert not torch._C._get_graph_executor_optimize()
    assert torch._C._get_graph_executor_optimize()
    with pytest.raises(KeyError), script_scope(True):
        raise KeyError("a model error")
    assert torch._C._get_graph_executor_optimize()
    with script_scope(False):  # any other model: the setting is left alone
        assert torch._C._get_graph_executor_optimize()
    assert as_model(_scripted(_net()))._script and not as_model(_net())._script
