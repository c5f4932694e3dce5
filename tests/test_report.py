"""The run's Markdown tables (insdel.report)."""

from __future__ import annotations

import numpy as np
import torch

import insdel
from insdel.report import model_sha256_text, sampled_vs_exact, sampled_vs_exact_table
from insdel.runner.provenance import model_hash, model_hash_of


def _f(Z):
    return Z[:, 0] * Z[:, 1] + Z[:, 2]


def test_sampled_vs_exact_table_says_when_kernel_shap_was_exact():
    """Kernel SHAP that enumerated every coalition equals exact Shapley: one line says so instead
    of a table of zero differences; a sampled one gets the table."""
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    exact = insdel.attribute(_f, X, R, "exact_shapley")
    enumerated = insdel.attribute(_f, X, R, "kernel_shap", n_samples=64)  # 2^4 <= 64: exact road
    np.testing.assert_array_equal(enumerated, exact)
    ev = insdel.evaluate(_f, X, R, {"kernel_shap": enumerated, "exact_shapley": exact},
                         n_random=0)
    text = sampled_vs_exact_table(sampled_vs_exact(ev, enumerated, exact))
    assert "enumerated every coalition" in text and "| Policy |" not in text
    sampled = insdel.attribute(_f, X, R, "kernel_shap", n_samples=8, exact="never", seed=1)
    ev = insdel.evaluate(_f, X, R, {"kernel_shap": sampled, "exact_shapley": exact}, n_random=0)
    text = sampled_vs_exact_table(sampled_vs_exact(ev, sampled, exact))
    assert "| Policy | Mode |" in text and "enumerated" not in text


def test_the_model_hash_says_what_it_hashes():
    """A torch module's hash is its parameters' (whatever file it came from), printed as such
    beside the file's; another model's is its file's."""
    net = torch.nn.Linear(3, 1)
    assert model_hash_of(net) == "parameters" and model_hash_of(_f) == "file"
    torch_file = {"path": "m.pt", "sha256": model_hash(net, "b" * 64), "sha256_of": "parameters",
                  "file_sha256": "b" * 64}
    assert torch_file["sha256"] != "b" * 64
    assert model_sha256_text(torch_file) == (f"parameters sha256 {torch_file['sha256']}, "
                                             f"file sha256 {'b' * 64}")
    assert model_sha256_text(torch_file, 12) == (f"parameters sha256 {torch_file['sha256'][:12]}"
                                                 f", file sha256 {'b' * 12}")
    onnx = {"path": "m.onnx", "sha256": "c" * 64, "sha256_of": "file", "file_sha256": "c" * 64}
    assert model_sha256_text(onnx) == f"file sha256 {'c' * 64}"
