"""The runner's interactions stage ([interactions] in a configuration, insdel run): one
interactions.parquet per policy, equal to insdel.interactions on the policy's pairs, resumed
from its checkpoints, and its keys checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import insdel
from insdel import config as C


def _csv(path: Path) -> Path:
    rng = np.random.default_rng(1)
    N = 80
    a, b, c, d = rng.normal(size=(4, N))
    y = 2 * a * b - c + np.sin(d) * a + 0.1 * rng.normal(size=N)
    path.write_text("a,b,c,d,y\n" + "\n".join(
        f"{a[i]:.6f},{b[i]:.6f},{c[i]:.6f},{d[i]:.6f},{y[i]:.6f}" for i in range(N)) + "\n")
    return path


def _cfg(csv: Path, **interactions) -> dict:
    return {"name": "inter", "seed": 0,
            "data": {"recipe": "table", "options": {"path": str(csv), "target": "y",
                                                    "scale": "none"}},
            "model": {"params": {"hidden": [8], "dropout": 0.0, "lr": 3e-3}, "max_epochs": 2},
            "targets": {"n": 8}, "policies": [{"spec": {"policy": "median"}}],
            "methods": {"names": ["vanilla_grad"]},
            "evaluation": {"n_random": 2, "targets_per_chunk": 8}, "figures": {"enabled": False},
            "interactions": {"n_pairs": 5, "pairs_per_chunk": 2, **interactions}}


def test_interactions_file_per_policy_equals_the_front_door(tmp_path):
    csv = _csv(tmp_path / "t.csv")
    out = tmp_path / "out"
    res = insdel.run_experiment(_cfg(csv, index="STII", order=2), out, verbose=False)
    df = pd.read_parquet(out / "median" / "interactions.parquet")
    assert list(df.columns) == ["pair", "subset", "size", "value", "se"]
    pairing = res.pairings["median"]
    want = insdel.interactions(res.model, pairing.X[:5], pairing.R[:5], index="STII", order=2,
                               feature_names=["a", "b", "c", "d"])
    ref = want.to_frame()
    assert df["pair"].tolist() == ref["pair"].tolist()
    assert df["subset"].tolist() == [" x ".join(s) for s in ref["subset"]]
    np.testing.assert_allclose(df["value"], ref["value"], rtol=1e-9, atol=1e-9)
    assert (df["se"] == 0).all()
    assert (out / "checkpoints" / "median" / "interactions").is_dir()
    insdel.run_experiment(_cfg(csv, index="STII", order=2), out, verbose=False)  # resumes
    pd.testing.assert_frame_equal(pd.read_parquet(out / "median" / "interactions.parquet"), df)


def test_interactions_keys_are_checked(tmp_path):
    csv = _csv(tmp_path / "t.csv")
    with pytest.raises(C.ConfigError, match="Did you mean 'k-SII'"):
        C.load(_cfg(csv, index="k-SIII"))
    with pytest.raises(C.ConfigError, match="interactions.ordr"):
        C.load(_cfg(csv, ordr=2))
    with pytest.raises(C.ConfigError, match="has order 1"):
        C.load(_cfg(csv, index="SV", order=2))
    assert C.load(_cfg(csv))["interactions"]["index"] == "k-SII"
