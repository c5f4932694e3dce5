"""The Dask backend (issue #18): the same bytes as a serial run, through worker deaths, driver
interruptions and backend changes; ``client=`` in the Python API; the missing-extra error."""

from __future__ import annotations

import builtins
import operator
import os
import shutil
import signal
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("dask.distributed")

import insdel  # noqa: E402
from insdel import cli, distributed, runner  # noqa: E402
from insdel import config as C  # noqa: E402

# the demo's configuration (dielectron_sim, quick_cern, the counterfactual policy, Kernel SHAP,
# IG, LIME, Random, the exact decomposition), at test sizes
TINY = {
    "name": "dask_tiny", "seed": 5,
    "data": {"recipe": "dielectron_sim", "options": {"n_events": 1000}},
    "model": {"preset": "quick_cern", "max_epochs": 1},
    "targets": {"n": 12},
    "policies": [{"spec": "cern_counterfactual", "label": "counterfactual",
                  "params": {"on_unmet": "relax"}}],
    "methods": {"names": ["kernel_shap", "integrated_gradients", "lime"],
                "options": {"kernel_shap": {"n_samples": 48}, "lime": {"n_samples": 48},
                            "integrated_gradients": {"n_steps": 8}}},
    "evaluation": {"n_random": 3, "targets_per_chunk": 3},
    "decomposition": {"n_pairs": 2, "pairs_per_chunk": 1},
    "figures": {"enabled": False},
}
N_CHUNKS = 3 * 4 + 2  # three methods x four attribution chunks, two decomposition chunks
DATA_SUFFIXES = (".parquet", ".npz", ".csv", ".md")


@pytest.fixture(scope="module", autouse=True)
def _workers_thread_count():
    """The serial references run with the workers' torch thread count (1): on some CPUs a float32
    matrix product rounds differently with another count (measured on an Intel Xeon: one curve
    value in 612 moved by one rounding unit with 2 threads against 1), and the byte-identity that
    these tests check holds for equal thread counts (docs/experiments.md). numba's threading
    layer is started first, as insdel starts it (on the OpenMP layer its start sets the count
    that torch reads)."""
    import torch

    from insdel._threads import start_numba_threads

    start_numba_threads()
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def client():
    dd = distributed.require_dask()
    with distributed.local_cluster(2, 1, dashboard_address=None) as cluster, \
            dd.Client(cluster) as cl:
        cl.run(distributed.set_torch_threads, 1)
        yield cl


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The reference: a serial run."""
    return runner.run_experiment(C.load(TINY), tmp_path_factory.mktemp("serial"), progress=False)


def _folder(serial, tmp_path: Path, name: str) -> Path:
    """A fresh output folder holding the serial run's trained model (no training again)."""
    out = tmp_path / name
    out.mkdir()
    for f in ("model.pt", "model.key"):
        shutil.copy(serial.out / f, out / f)
    return out


def _data(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix in DATA_SUFFIXES and "checkpoints" not in p.parts}


def _chunks(out: Path) -> set[str]:
    return {str(p.relative_to(out)) for p in (out / "checkpoints").rglob("chunk_*.npy")}


def _same(a: Path, b: Path) -> None:
    da, db = _data(a), _data(b)
    assert da.keys() == db.keys() and any(k.endswith("summary.csv") for k in da)
    assert [k for k in da if da[k] != db[k]] == []


def test_dask_run_is_byte_identical_to_serial(serial, client, tmp_path):
    out = _folder(serial, tmp_path, "dask")
    res = runner.run_experiment(C.load(TINY), out, progress=False, client=client)
    _same(serial.out, out)  # summary CSVs, ABC tables (abc.parquet), curves, attributions
    assert _chunks(out) == _chunks(serial.out)  # the checkpoint keys do not name the backend
    assert res.manifest["compute"]["backend"] == "dask"
    assert res.manifest["compute"]["workers"] == 2
    assert serial.manifest["compute"]["backend"] == "serial"
    assert res.manifest["compute"]["stages"]["counterfactual/attributions/lime"][
        "chunks_resumed"] == 0


def _slow_model_calls(delay: float):
    """Run on the workers: every model call sleeps ``delay`` seconds first (0: as before). The
    values are untouched; chunks only take long enough that one is still running when another
    finishes (at full speed a whole stage can finish before the driver has written its first
    chunk, and then no worker is busy to kill)."""
    import time as _time

    from insdel import adapter

    fast = adapter.Model.__dict__.get("_insdel_fast_call")
    if fast is not None:
        adapter.Model.__call__ = fast
        del adapter.Model._insdel_fast_call
    if delay > 0:
        fast = adapter.Model.__call__

        def slow(self, *args, **kwargs):
            _time.sleep(delay)
            return fast(self, *args, **kwargs)

        adapter.Model._insdel_fast_call = fast
        adapter.Model.__call__ = slow


def test_a_worker_killed_mid_run_changes_nothing(serial, client, tmp_path):
    out = _folder(serial, tmp_path, "killed")
    pids = client.run(os.getpid)
    killed: list[int] = []

    def kill_a_busy_worker():
        if killed:
            return
        busy = [w for w, tasks in client.processing().items() if tasks and w in pids]
        if busy:
            killed.append(pids[busy[0]])
            os.kill(pids[busy[0]], signal.SIGKILL)

    client.run(_slow_model_calls, 0.02)
    try:
        runner.run_experiment(C.load(TINY), out, progress=False, client=client,
                              _interrupt=kill_a_busy_worker)
    finally:
        client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed one (unslowed)
        client.run(_slow_model_calls, 0.0)
    assert killed, "no worker was busy when a chunk finished"
    _same(serial.out, out)


@pytest.mark.parametrize("first", ["serial", "dask"])
def test_driver_interrupted_resumes_on_the_other_backend(serial, client, tmp_path, first):
    out = _folder(serial, tmp_path, f"from-{first}")
    count = [0]

    def interrupt():
        count[0] += 1
        if count[0] == 5:  # the driver dies after five chunks
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(C.load(TINY), out, progress=False, _interrupt=interrupt,
                              client=client if first == "dask" else None)
    done = _chunks(out)
    assert 5 <= len(done) < N_CHUNKS and not (out / "manifest.json").exists()
    if first == "serial":  # finish on Dask, through the configuration's scheduler address
        over = {"compute": {"backend": "dask", "address": client.scheduler.address}}
        res = runner.run_experiment(C.load(TINY, overrides=over), out, progress=False)
        assert res.manifest["compute"]["scheduler"] == client.scheduler.address
    else:  # finish serially, with a chunk deleted as well
        os.unlink(out / sorted(done)[0])
        res = runner.run_experiment(C.load(TINY), out, progress=False)
        assert res.manifest["compute"]["backend"] == "serial"
    resumed = sum(s.get("chunks_resumed", 0) for s in res.manifest["compute"]["stages"].values())
    assert resumed >= 4
    _same(serial.out, out)


def test_local_cluster_workers_keep_large_arrays_on_the_heap(client):
    """Workers get glibc's mmap threshold (through Dask's pre-spawn-environ, so that malloc reads
    it at start-up; Dask's MALLOC_TRIM_THRESHOLD_ alone made every large array an mmap and a
    worker 1.5x slower than a plain process: bench/dask_scaling.py)."""
    envs = client.run(lambda: {k: os.environ.get(k) for k in
                               ("MALLOC_MMAP_THRESHOLD_", "OMP_NUM_THREADS")})
    assert all(e == {"MALLOC_MMAP_THRESHOLD_": str(256 << 20), "OMP_NUM_THREADS": "1"}
               for e in envs.values())


def test_python_api_client_equals_serial(serial, client):
    model = serial.model
    X, R = serial.pairings["counterfactual"].X, serial.pairings["counterfactual"].R
    atts = {"kernel_shap": insdel.attribute(model, X, R, "kernel_shap", n_samples=32,
                                            pairs_per_chunk=5)}
    np.testing.assert_array_equal(
        atts["kernel_shap"],
        insdel.attribute(model, X, R, "kernel_shap", n_samples=32, pairs_per_chunk=5,
                         client=client))
    ig, info = insdel.attribute(model, X, R, "ig", n_steps=8, pairs_per_chunk=4,
                                return_info=True, client=client)
    np.testing.assert_array_equal(ig, insdel.attribute(model, X, R, "ig", n_steps=8,
                                                       pairs_per_chunk=4))
    assert info["chunks"] == 3 and info["completeness_gap"].shape == (X.shape[0],)
    atts["integrated_gradients"] = ig
    a = insdel.evaluate(model, X, R, atts, n_random=3, seed=2, chunk_size=400)
    b = insdel.evaluate(model, X, R, atts, n_random=3, seed=2, chunk_size=400, client=client)
    for m in a.modes:
        np.testing.assert_array_equal(a.curves[m], b.curves[m])
        np.testing.assert_array_equal(a.random_curves[m], b.random_curves[m])
    assert a.abc.equals(b.abc) and a.summary().equals(b.summary())
    phi = insdel.shapley_values(model, X, R, max_rows=256)
    np.testing.assert_array_equal(phi, insdel.shapley_values(model, X, R, max_rows=256,
                                                             client=client))
    # groups and steps (issue #16) take the same road
    n = X.shape[1]
    groups = [list(range(0, n, 2)), list(range(1, n, 2))] if n < 4 else \
        [[0, 1], list(range(2, n // 2)), list(range(n // 2, n))]
    a = insdel.evaluate(model, X, R, atts, groups=groups, points=insdel.CurvePoints(step=2), n_random=2, chunk_size=60)
    b = insdel.evaluate(model, X, R, atts, groups=groups, points=insdel.CurvePoints(step=2), n_random=2, chunk_size=60,
                        client=client)
    assert a.abc.equals(b.abc) and b.positions is not None
    np.testing.assert_array_equal(
        insdel.shapley_values(model, X, R, groups=groups, max_rows=64),
        insdel.shapley_values(model, X, R, groups=groups, max_rows=64, client=client))


#: Small options for every registered attribution method (the defaults of the rest).
_COHORT = {"data": np.random.default_rng(1).uniform(-4, 4, (60, 5)),
           "y": np.arange(60.0), "tolerance": 0.5}  # the model-free methods' cohort game
_SMALL = {"kernel_shap": {"n_samples": 24}, "lime": {"n_samples": 24},
          "integrated_gradients": {"n_steps": 8}, "cohort_shapley": _COHORT, "igcs": _COHORT}


def test_every_attribution_method_runs_on_dask_and_equals_serial(client):
    """Every registered method, DeepLIFT included (captum hooks the module: the scattered module
    must unpickle with its hook registries), gives on the workers the values of the same chunks
    computed here."""
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.PReLU(), torch.nn.Linear(8, 1))
    net = net.double().eval()
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    for method in insdel.attribution.available():
        if method == "tree_shap":  # a tree ensemble's: tests/test_tree_shap.py
            continue
        opts = _SMALL.get(method, {})
        np.testing.assert_array_equal(
            insdel.attribute(net, X, R, method, pairs_per_chunk=3, client=client, **opts),
            insdel.attribute(net, X, R, method, pairs_per_chunk=3, **opts), err_msg=method)


def test_a_model_error_names_the_pairs(client):
    def model(X):
        if np.any(X[:, 0] > 1e5):
            raise ValueError("the model refuses these points")
        return X.sum(axis=1)

    X = np.zeros((10, 4))
    X[7, 0] = 1e6
    with pytest.raises(ValueError, match=r"kernel_shap on pairs 5\.\.9: .*refuses"):
        insdel.attribute(model, X, np.ones((10, 4)), "kernel_shap", n_samples=16,
                         pairs_per_chunk=5, client=client)


def test_compute_keys_are_validated_and_the_cli_sets_them():
    base = {"data": {"recipe": "dielectron_sim"}, "model": {"preset": "quick_cern"}}
    for bad, msg in [({"backend": "daks"}, "did you mean 'dask'"),
                     ({"address": "tcp://h:8786"}, "compute.address is only read"),
                     ({"backend": "dask", "address": "h:8786"}, "tcp://host:8786"),
                     ({"backend": "dask", "address": "tcp://h:1", "n_workers": 2},
                      "compute.n_workers"),
                     ({"backend": "dask", "threads_per_worker": 0}, "threads_per_worker"),
                     ({"backend": "dask", "nworkers": 2}, "did you mean 'n_workers'")]:
        with pytest.raises(C.ConfigError, match=msg):
            C.load({**base, "compute": bad})
    p = cli.build_parser()
    for cmd in (["run", "x.toml"], ["reproduce", "paper-cern"], ["demo"]):
        args = p.parse_args([*cmd, "--scheduler", "tcp://h:8786"])
        assert cli._device(args, {})["compute"] == {"backend": "dask", "address": "tcp://h:8786",
                                                    "n_workers": None,
                                                    "threads_per_worker": None}
    args = p.parse_args(["run", "x.toml", "--scheduler", "local"])
    cfg = C.load({**base, "compute": {"backend": "dask", "n_workers": 3}},
                 overrides=cli._device(args, {}))
    assert cfg["compute"]["backend"] == "dask" and cfg["compute"]["n_workers"] == 3
    with pytest.raises(ValueError, match="--scheduler"):
        cli._device(p.parse_args(["demo", "--scheduler", "h:8786"]), {})


def test_without_dask_the_error_names_the_extra(monkeypatch, tmp_path, capsys):
    real = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name == "dask" or name.startswith("dask."):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)  # as if dask were not installed
    with pytest.raises(ImportError, match=r'pip install "\.\[dask\]" in the insdel clone'):
        with distributed.make_client({"backend": "dask"}):
            pass
    with distributed.make_client({"backend": "serial"}) as cl:  # serial needs no dask
        assert cl is None
    cfg = tmp_path / "c.toml"
    cfg.write_text('[data]\nrecipe = "dielectron_sim"\n[model]\npreset = "quick_cern"\n'
                   '[compute]\nbackend = "dask"\n')
    assert cli.main(["run", str(cfg), "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    assert 'pip install ".[dask]"' in capsys.readouterr().err


def test_client_equals_serial_within_rounding_at_another_thread_count(serial, client):
    """With torch on 2 threads here and 1 on the workers, the values agree to float32 rounding
    (byte for byte where the CPU's matrix products do not depend on the thread count), and the
    serial manifest records the thread count it ran with."""
    import torch

    model = serial.model
    X, R = serial.pairings["counterfactual"].X, serial.pairings["counterfactual"].R
    A = {"ig": insdel.attribute(model, X, R, "ig", n_steps=8)}
    b = insdel.evaluate(model, X, R, A, n_random=3, seed=2, chunk_size=400, client=client)
    torch.set_num_threads(2)
    try:
        a = insdel.evaluate(model, X, R, A, n_random=3, seed=2, chunk_size=400)
    finally:
        torch.set_num_threads(1)
    for m in a.modes:
        np.testing.assert_allclose(a.curves[m], b.curves[m], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(a.random_curves[m], b.random_curves[m], rtol=1e-6, atol=1e-6)
    assert serial.manifest["compute"]["backend"] == "serial"
    assert serial.manifest["compute"]["threads"] == 1


#: The demo's run at test sizes, as a file for the command line (TINY in TOML).
TINY_TOML = """
name = "dask_recipe"
seed = 5
[data]
recipe = "dielectron_sim"
options = {n_events = 1000}
[model]
preset = "quick_cern"
max_epochs = 1
[targets]
n = 12
[[policies]]
spec = "cern_counterfactual"
label = "counterfactual"
params = {on_unmet = "relax"}
[methods]
names = ["kernel_shap", "integrated_gradients", "lime"]
[methods.options]
kernel_shap = {n_samples = 48}
lime = {n_samples = 48}
integrated_gradients = {n_steps = 8}
[evaluation]
n_random = 3
targets_per_chunk = 3
[decomposition]
n_pairs = 2
pairs_per_chunk = 1
[figures]
enabled = false
"""


def _insdel(args: list[str], env: dict[str, str], cwd: Path) -> str:
    """``python -m insdel *args`` in a fresh interpreter with ``env`` added to a clean environment
    (no thread-count variables of this process); fails the test on a non-zero exit, else returns
    what it printed."""
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                         "NUMBA_NUM_THREADS")}
    root = str(Path(insdel.__file__).resolve().parents[1])
    base.update(PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
                MPLBACKEND="Agg", INSDEL_PROGRESS="0", **env)
    proc = subprocess.run([sys.executable, "-m", "insdel", *args], cwd=cwd, env=base,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def test_the_documented_serial_recipe_reproduces_a_dask_runs_bytes(tmp_path):
    """docs/experiments.md: a serial run with the default settings (no thread variables) gives
    the bytes of a Dask run on a LocalCluster of single-threaded workers, both started from the
    command line as a user would: the small model trains and evaluates on one torch thread
    everywhere (the size rule of insdel._threads), and the run prints so."""
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY_TOML)
    _insdel(["run", str(cfg), "--out", str(tmp_path / "dask"), "--scheduler", "local",
             "--no-progress"], {}, tmp_path)
    log = _insdel(["run", str(cfg), "--out", str(tmp_path / "serial"), "--no-progress"], {},
                  tmp_path)
    assert "compute: the model evaluates on 1 torch thread(s)" in log
    _same(tmp_path / "serial", tmp_path / "dask")
    from insdel.models import load_model

    trained = [load_model(tmp_path / run / "model.pt")[0].state_dict()
               for run in ("serial", "dask")]  # both trained their model: the same weights
    assert all(trained[0][k].equal(trained[1][k]) for k in trained[0])


def test_the_driver_evaluates_the_model_with_the_workers_thread_count(serial, client, tmp_path,
                                                                     monkeypatch):
    """The driver's own model evaluations (here the curves) run with the workers' torch thread
    count, whatever this process's count is, and get it back afterwards: a Dask run's bytes are a
    serial run's at the workers' count on CPUs whose float32 rounding depends on the count."""
    import torch

    seen = []
    from insdel.runner.stages import curves as curves_stage

    evaluate = curves_stage.evaluate

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(curves_stage, "evaluate", spy)
    torch.set_num_threads(2)
    try:
        res = runner.run_experiment(C.load(TINY), _folder(serial, tmp_path, "threads"),
                                    progress=False, client=client)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)
    assert seen == [1] and res.manifest["compute"]["driver_threads"] == 1
    _same(serial.out, res.out)


def test_an_address_with_no_scheduler_is_one_error_line(tmp_path, capsys):
    """A closed loopback port: the run gives up after compute.connect_timeout seconds (5 by
    default, not Dask's 30) with one line naming the address, not a traceback."""
    import socket
    import time

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    cfg = tmp_path / "c.toml"
    cfg.write_text('[data]\nrecipe = "dielectron_sim"\n[model]\npreset = "quick_cern"\n')
    t0 = time.perf_counter()
    assert cli.main(["run", str(cfg), "--out", str(tmp_path / "o"), "--no-progress",
                     "--scheduler", address]) == 1
    assert time.perf_counter() - t0 < 15
    err = capsys.readouterr().err
    assert err.startswith("insdel: error: no Dask scheduler answered at " + address)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    over = {"compute": {"backend": "dask", "address": address, "connect_timeout": 0.5}}
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError, match=r"within 0\.5 s"):
        runner.run_experiment(C.load(str(cfg), overrides=over), tmp_path / "o2", progress=False)
    assert time.perf_counter() - t0 < 5
    with pytest.raises(C.ConfigError, match="compute.connect_timeout must be a number"):
        C.load(str(cfg), overrides={"compute": {"backend": "dask", "connect_timeout": 0}})


# -- map_chunks ids and make_client options --------------------------------------------------------
def test_map_chunks_refuses_repeated_ids():
    """Chunk ids are distinct: equal ids would be equal task keys, one chunk's result for both."""
    dd = pytest.importorskip("dask.distributed")
    with dd.Client(processes=False, n_workers=1, threads_per_worker=1,
                   dashboard_address=None) as client:
        with pytest.raises(ValueError, match="ids must be distinct"):
            list(distributed.map_chunks(client, operator.add, [(1, 1), (10, 10)], ids=[0, 0]))
        got = dict(distributed.map_chunks(client, operator.add, [(1, 1), (10, 10)], ids=[4, 7]))
        assert got == {4: 2, 7: 20}


@pytest.mark.parametrize("compute, match", [
    ({"backend": "serial", "n_workers": 4}, "backend = 'serial' ignores"),
    ({"backend": "dask", "address": "tcp://h:1", "n_workers": 2}, "give one or the other"),
    ({"backend": "dask", "threads_per_worker": 0}, "threads_per_worker must be an integer"),
])
def test_make_client_refuses_ignored_options(compute, match):
    with pytest.raises(ValueError, match=match):
        with distributed.make_client(compute):
            pass


# -- run_chunked: the one helper every engine's parallelism goes through ---------------------------
def _seeded_rows(lo: int, hi: int, scale: float, *, X, seed):
    """A chunk task: its rows of X plus draws from the chunk's own stream."""
    return X[lo:hi] * scale + np.random.default_rng(seed).normal(size=(hi - lo, X.shape[1]))


def test_run_chunked_gives_the_serial_chunks_seeds_and_order_on_dask(client):
    X = np.arange(22.0).reshape(11, 2)
    bounds = distributed.chunk_bounds(11, 3)
    chunks = [(lo, hi, 2.0) for lo, hi in bounds]
    kw = {"shared": {"X": X}, "seed": 5, "seed_names": ("m",)}
    here = distributed.run_chunked(_seeded_rows, chunks, **kw)
    np.testing.assert_array_equal(here, distributed.run_chunked(_seeded_rows, chunks,
                                                                client=client, **kw))
    # chunk k draws from chunk_seed(seed, *seed_names, k), whoever runs it
    lo, hi = bounds[2]
    np.testing.assert_array_equal(here[lo:hi], _seeded_rows(lo, hi, 2.0, X=X,
                                                            seed=distributed.chunk_seed(5, "m", 2)))
    # a subset of chunks (a resumed stage): each result reported once, the others left None
    seen = {}
    out = distributed.run_chunked(_seeded_rows, chunks, client=client, todo=[1, 3], concat=None,
                                  on_result=seen.__setitem__, **kw)
    assert sorted(seen) == [1, 3] and out[0] is None and out[2] is None
    np.testing.assert_array_equal(out[3], here[9:11])


def test_run_chunked_names_the_failed_chunk_here_and_on_dask(client):
    def describe(k):
        return f"chunk {k}"

    for c in (None, client):
        with pytest.raises(TypeError, match=r"^chunk 1: "):
            distributed.run_chunked(operator.add, [(1, 2), (1, "a")], concat=None, client=c,
                                    describe=describe)


def _two_outputs(Z):
    return np.c_[np.tanh(Z).sum(1), Z[:, 0] * Z[:, 1]]


def test_an_output_view_runs_on_a_client_as_its_column_does(client):
    """One output view of a model with several outputs runs on a client and gives the serial
    numbers of that output."""
    from insdel.multi_output import output_views

    rng = np.random.default_rng(0)
    X, R, A = rng.normal(size=(6, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    view = output_views(_two_outputs, outputs=2)[1]
    got = insdel.evaluate(view, X, R, {"a": A}, n_random=2, client=client)
    want = insdel.evaluate(insdel.as_model(_two_outputs, outputs=2), X, R, {"a": A},
                           n_random=2)[1]
    for mode in ("insertion", "deletion"):
        np.testing.assert_allclose(got.curves[mode], want.curves[mode], rtol=0, atol=1e-12)


def _three_outputs(Z):
    W = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    return np.tanh(Z @ W) + Z[:, :1] * Z[:, 1:2]


def _three_output_module():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 3)).double().eval()


def _h_pairs(removal: str):
    """Eleven pairs of 4 features (feature 2 equal in x and r), attributions for all outputs
    and per output, and the removal (``marginal``: R is None)."""
    rng = np.random.default_rng(4)
    X, R = rng.normal(size=(11, 4)), rng.normal(size=(11, 4))
    R[:, 2] = X[:, 2]
    atts = {"one": rng.normal(size=(11, 4)), "per_output": rng.normal(size=(11, 3, 4))}
    if removal == "baseline":
        return X, R, atts, None
    return X, None, atts, insdel.removal.build("marginal", background=rng.normal(size=(30, 4)),
                                               n_references=3)


@pytest.mark.parametrize("removal", ["baseline", "marginal"])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_h_outputs_on_a_client_equal_serial(client, kind, removal):
    """A model with H = 3 outputs (an H-column NumPy function, a float64 torch module) on worker
    processes: each chunk of pairs gives every output's curves (the worker wraps the model with
    its 3 outputs again), joined here into the serial MultiEvaluation and TraceResult, byte for
    byte at the same chunk_size (the same rows in the same batches); each output's ABC summary
    and the weighted aggregate are the serial ones."""
    from insdel.multi_output import MultiEvaluation

    model = insdel.as_model(_three_outputs if kind == "numpy" else _three_output_module(),
                            outputs=3)
    X, R, atts, rem = _h_pairs(removal)
    kw = dict(n_random=2, seed=1, chunk_size=300, removal=rem, output_weights=[1.0, 0.5, 0.25])
    a = insdel.evaluate(model, X, R, atts, **kw)
    b = insdel.evaluate(model, X, R, atts, client=client, **kw)
    assert isinstance(b, MultiEvaluation) and b.n_outputs == 3
    for h in range(3):
        for mode in a.modes:
            np.testing.assert_array_equal(a[h].curves[mode], b[h].curves[mode])
            np.testing.assert_array_equal(a[h].random_curves[mode], b[h].random_curves[mode])
        np.testing.assert_array_equal(a[h].fx, b[h].fx)
        np.testing.assert_array_equal(a[h].fr, b[h].fr)
        assert a[h].abc.equals(b[h].abc) and a[h].summary().equals(b[h].summary())
    assert a.summary().equals(b.summary())
    assert set(b.summary()["output"]) == {0, 1, 2, "weighted"}
    assert a.stats["model_evaluations"] == b.stats["model_evaluations"] > 0
    orders = np.stack([insdel.orderings(atts["per_output"][:, h]) for h in range(3)], axis=1)
    ta = insdel.trace(model, X, R, orders, chunk_size=100, removal=rem)
    tb = insdel.trace(model, X, R, orders, chunk_size=100, removal=rem, client=client)
    assert tb.curves["insertion"].shape == (11, 3, 5, 3) and tb.fx.shape == (11, 3)
    for mode in ("insertion", "deletion"):
        np.testing.assert_array_equal(ta.curves[mode], tb.curves[mode])
    np.testing.assert_array_equal(ta.fx, tb.fx)
    np.testing.assert_array_equal(ta.fr, tb.fr)
    assert (ta.n_points, ta.n_unique) == (tb.n_points, tb.n_unique)


def test_h_outputs_on_a_client_equal_serial_at_another_chunk_size(client):
    """The serial default chunk_size evaluates the rows in other batches than the client's small
    chunks: a float64 NumPy model gives the same curves to 1e-12."""
    model = insdel.as_model(_three_outputs, outputs=3)
    X, R, atts, _ = _h_pairs("baseline")
    a = insdel.evaluate(model, X, R, atts, n_random=2)
    b = insdel.evaluate(model, X, R, atts, n_random=2, chunk_size=300, client=client)
    for h in range(3):
        for mode in a.modes:
            np.testing.assert_allclose(a[h].curves[mode], b[h].curves[mode], rtol=0, atol=1e-12)


def test_shipped_module_unpickles_its_module_once():
    import pickle

    import torch

    net = torch.nn.Linear(3, 1)
    sm = distributed.ShippedModule(net)
    assert sm.get() is net  # the sender keeps its own module
    there = pickle.loads(pickle.dumps(sm))  # what a worker receives: the payload only
    assert there._module is None
    got = there.get()
    assert got is there.get()  # unpickled once, then the same module for every chunk
    assert got is not net and isinstance(got, torch.nn.Linear)
    torch.testing.assert_close(got.weight, net.weight)
    got.register_forward_pre_hook(lambda m, a: None)  # hooks work (captum's DeepLift needs them)
    with pytest.raises(TypeError, match="cannot be sent to Dask workers"):
        distributed.ShippedModule(_unpicklable())


def _unpicklable():
    import threading

    return threading.Lock()  # an object that does not pickle


def test_a_multi_output_run_on_worker_processes_equals_serial(client, tmp_path):
    """``insdel run`` with ``model.outputs = 2`` on a LocalCluster of processes: the module
    (pickled whole, loaded on trust) reaches the workers as a ShippedModule and keeps its two
    outputs there; the attributions under each removal (``per_removal``) and each output's
    decomposition are the serial run's, byte for byte, as are all the data files."""
    import torch

    from tests._runs import small_cfg, small_csv
    from tests.test_runner_multi_output import _TwoOut

    torch.manual_seed(0)
    path = tmp_path / "two.pt"
    torch.save(_TwoOut(), str(path))
    cfg = small_cfg(small_csv(tmp_path / "small.csv"), "multi_dask",
                    model={"path": str(path), "trust": True, "outputs": 2},
                    methods={"names": ["vanilla_grad", "integrated_gradients"]},
                    removal={"kinds": ["baseline", {"name": "marginal",
                                                    "options": {"n_references": 3}}],
                             "attributions": "per_removal"},
                    decomposition={"n_pairs": 3, "pairs_per_chunk": 2})
    runner.run_experiment(cfg, tmp_path / "serial", progress=False)
    res = runner.run_experiment(cfg, tmp_path / "dask", progress=False, client=client)
    assert res.manifest["compute"]["workers"] == 2
    assert "median/removal-marginal/attributions.npz" in _data(tmp_path / "serial")
    _same(tmp_path / "serial", tmp_path / "dask")
    assert _chunks(tmp_path / "serial") == _chunks(tmp_path / "dask")


def test_client_info_asks_the_scheduler_for_its_workers():
    """The manifest's worker count comes from the scheduler, not the client's cached identity
    (whose periodic refresh holds no per-worker information)."""

    class _Client:
        class scheduler:  # noqa: N801 - the attribute a dask Client has
            address = "tcp://127.0.0.1:1"

        def scheduler_info(self):
            return {"workers": {}}  # what the cache holds right after a periodic refresh

        def nthreads(self):
            return {"tcp://127.0.0.1:2": 1, "tcp://127.0.0.1:3": 1}

    info = distributed.client_info(_Client())
    assert info["workers"] == 2 and info["threads"] == 2 and info["backend"] == "dask"
