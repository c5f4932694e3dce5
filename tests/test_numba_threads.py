"""Starting numba's threading layer keeps torch's intra-op thread count (on numba's OpenMP layer
the start sets the OpenMP count that torch reads to numba's: a user's torch.set_num_threads(1)
used to end up at the number of cores, silently, on insdel's first parallel kernel)."""

import os
import subprocess
import sys

import pytest

CODE = """
import torch
torch.set_num_threads(1)
assert torch.get_num_threads() == 1  # (torch reads its count: the case numba's start overrode)
import numpy as np
import insdel
rng = np.random.default_rng(0)
X = rng.normal(size=(3000, 8)); R = X + 1.0; A = rng.normal(size=X.shape)
insdel.curves(lambda Z: Z.sum(1), X, R, A)   # parallel kernels (B x n above their thresholds)
insdel.shapley_values(lambda Z: Z.sum(1), X[:4], R[:4])
import numba
print(torch.get_num_threads(), numba.get_num_threads())
"""


@pytest.mark.parametrize("layer", ["default", "omp"])
def test_torch_thread_count_survives_numba_start(layer):
    env = {**os.environ, "NUMBA_NUM_THREADS": "2"}
    env.pop("OMP_NUM_THREADS", None)
    if layer != "default":
        env["NUMBA_THREADING_LAYER"] = layer
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env,
                         timeout=300)
    if out.returncode != 0 and layer == "omp" and "threading layer" in out.stderr.lower():
        pytest.skip("numba's OpenMP threading layer is not available here")
    assert out.returncode == 0, out.stderr
    torch_threads, numba_threads = map(int, out.stdout.split())
    assert torch_threads == 1 and numba_threads == 2
