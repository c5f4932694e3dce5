"""The rules every option shares, over every registry and public entry point.

* ``progress=`` is None, True or False (numpy bools too); anything else is a TypeError that names
  ``progress`` and the value, raised before anything is written.
* ``seed=``, boolean and integer options follow scikit-learn's ``check_scalar``: a wrong type
  (2.7, "1", True for an integer; "no", 1 for a boolean) is a TypeError, an out-of-range value (-1)
  a ValueError; either names the argument.
* An unknown name (registry entry, configuration value) is an error that lists the valid
  names, and names the closest one where the registry does.
* An unknown option (a registry entry's option or parameter, a configuration key) is one error,
  ``insdel.UnknownOptionError`` (a TypeError and a ValueError; a ``ConfigError`` too for a
  configuration key), with one message: the thing, the option, the closest name and the valid
  ones.

The registries are read, not listed: a method, metric, policy, data set, preset or configuration
added later is checked too.
"""

from __future__ import annotations

import functools
import inspect
import operator
import re

import numpy as np
import pandas as pd
import pytest
import torch

import insdel
from insdel import (
    attribution,
    config,
    datasets,
    digits,
    distributed,
    functional,
    images,
    leaderboard,
    models,
    policies,
    removal,
    road,
    roar,
    runner,
)
from insdel import metrics as M
from insdel.decomposition import (
    anchored_decomposition,
    batch_decomposition,
    sampled_shapley,
    shapley_values,
)
from insdel.groups import positions
from insdel.hybrids import hybrid
from insdel.model_files import load_any
from insdel.paper_images import run_paper_images
from insdel.sanity import data_randomisation, metric_reliability, parameter_randomisation

_rng = np.random.default_rng(0)
X, R = _rng.normal(size=(4, 3)), _rng.normal(size=(4, 3))
A = X - R
ORDERS = np.tile(np.arange(3), (4, 1))
POOL = np.random.default_rng(1).random((6, 4))  # 2 x 2 images for the image policies
MLP = {"hidden": [2], "dropout": 0.0, "lr": 1e-3}


def f(Z):
    return np.asarray(Z).sum(axis=1) + np.asarray(Z)[:, 0] * np.asarray(Z)[:, 1]


@functools.cache
def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                               torch.nn.Linear(4, 1)).double()


@functools.cache
def classifier() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(4, 3)


@functools.cache
def tiny_data():
    """A 40-row simulated data set (3 features)."""
    rng = np.random.default_rng(0)
    Xd = rng.normal(size=(40, 3))
    lv = np.full((3, 2), np.nan)
    return datasets.Dataset("sim", Xd[:32], Xd[32:], Xd[:32, 0], Xd[32:, 0], ["a", "b", "c"], "y",
                            np.zeros(3, bool), lv, lv.copy(),
                            datasets.Scaler(np.zeros(3), np.ones(3)))


@functools.cache
def digits_data():
    return digits.load()


#: Files the calls read (written once per module by the fixture ``_files``).
_FILES: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("common")
    _FILES["state_dict"] = folder / "sd.pt"
    torch.save(models.MLP(3, models.get("quick_cern")["hidden"], 0.0).state_dict(),
               _FILES["state_dict"])
    yield
    _FILES.clear()


def _results() -> pd.DataFrame:
    return pd.DataFrame({"test": ["t"], "criterion": ["c"], "method": ["m"], "passed": [True]})


#: Parameters a policy needs to be built (the image policies' shape, ...); others take none.
POLICY_PARAMS = {"fixed": {"index": 0}, "black": {"shape": (1, 2, 2)},
                 "white": {"shape": (1, 2, 2)}, "channel_mean": {"shape": (1, 2, 2)},
                 "blurred": {"shape": (1, 2, 2), "klen": 3, "sigma": 1.0},
                 "noise": {"shape": (1, 2, 2)},
                 "image": {"shape": (1, 2, 2), "image": np.zeros(4)},
                 **{name: {"length": 2, "channels": 2}  # windows of 2 steps x 2 channels
                    for name in ("locf", "seasonal_naive", "series_mean", "interpolate",
                                 "nearest_window")}}


def _pair(name: str, **kw):
    """Policy ``name`` pairs the pool's rows (``kw`` to ``pair``): at least one pair."""
    pol = policies.build(name, **POLICY_PARAMS.get(name, {}))
    pairing = pol.pair(f if pol.needs_model else None, POOL, **kw)
    assert pairing.n_pairs > 0
    return pairing


def _policy_with(name: str, option: str, value):
    params = {**POLICY_PARAMS.get(name, {}), option: value}
    pol = policies.build(name, **params)
    return pol.pair(f if pol.needs_model else None, POOL)


def _metric_call(name: str, metric=None, **kw):
    m = metric if metric is not None else M.build(name)
    extra = {"ground_truth": A} if "ground_truth" in m.call_arguments() else {}
    return m(f, X, R, A, **extra, **kw)


# -- the options each registry's entries take, read from their signatures ---------------------------
def _kind(param: inspect.Parameter) -> str | None:
    """'bool', 'int' or None (another type) for an option, from its annotation (``bool``,
    ``int``, ``int | None``; ``int | str`` is another type) or, without one, its default."""
    d, ann = param.default, param.annotation
    if ann is param.empty:
        ann = {bool: "bool", int: "int"}.get(type(d), "")
    if ann == "bool" and isinstance(d, bool):
        return "bool"
    if ann in ("int", "int | None") and (d is None or type(d) is int):
        return "int"
    return None


def _options(fn, skip=()) -> dict[str, str]:
    """The boolean and integer options of ``fn`` (named parameters with defaults)."""
    return {k: kind for k, p in inspect.signature(fn).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and k not in skip
            and (kind := _kind(p))}


ATTRIBUTION_OPTIONS = {m: _options(attribution.get(m).attribute, skip=("seed",))
                       for m in attribution.available()}
METRIC_OPTIONS = {m: _options(M.get(m).__init__) for m in M.available()}
POLICY_OPTIONS = {p: _options(type(policies.build(p, **POLICY_PARAMS.get(p, {}))).__init__)
                  for p in policies.available()}


def _road(**kw):
    return road.evaluate(f, X, X.sum(axis=1), {"a": A}, insdel.removal.Constant(0.0), **kw)


def _attribute(method: str, **kw):
    return attribution.attribute(net(), X, R, method, **kw)


def _mprt(**kw):
    return parameter_randomisation(net(), X, R, ["vanilla_grad"], **{"abc": False, **kw})


def _data_rand(**kw):
    return data_randomisation(tiny_data(), ["vanilla_grad"], params=MLP, max_epochs=1,
                              **{"abc": False, "n_pairs": 3, **kw})


def _reliability(**kw):
    return metric_reliability(net(), X, R, {"a": A, "b": -A}, metrics=["insertion_abc"],
                              **{"n_perturbations": 1, **kw})


# -- progress= -------------------------------------------------------------------------------------
#: Entry points that take ``progress=``: (call with a value and a folder, cheap enough to run).
PROGRESS = {
    "trace": (lambda v, d: insdel.trace(f, X, R, ORDERS, progress=v), True),
    "curves": (lambda v, d: insdel.curves(f, X, R, A, progress=v), True),
    "evaluate": (lambda v, d: insdel.evaluate(f, X, R, {"a": A}, n_random=1, progress=v), True),
    "batch_decomposition": (lambda v, d: batch_decomposition(f, X, R, progress=v), True),
    "anchored_decomposition": (lambda v, d: anchored_decomposition(f, X[0], R[0], progress=v),
                               True),
    "shapley_values": (lambda v, d: shapley_values(f, X, R, progress=v), True),
    "evaluate_metrics": (lambda v, d: M.evaluate_metrics(f, X, R, {"a": A},
                                                         metrics=["insertion_abc"], progress=v),
                         True),
    "images.evaluate": (lambda v, d: images.evaluate(classifier(), POOL[:3], np.zeros((3, 4)),
                                                     {"a": POOL[:3]}, shape=(1, 2, 2), n_random=1,
                                                     progress=v), True),
    "run_chunked": (lambda v, d: distributed.run_chunked(operator.add, [(1, 2)], concat=None,
                                                         progress=v), True),
    "models.train_mlp": (lambda v, d: models.train_mlp(tiny_data(), MLP, max_epochs=1,
                                                       progress=v), False),
    "models.tune_mlp": (lambda v, d: models.tune_mlp(None, 1, progress=v), False),
    "roar.roar": (lambda v, d: roar.roar(tiny_data(), {}, params=MLP, orderings=("random",),
                                         fractions=(1.0,), replicates=1, max_epochs=1,
                                         progress=v), False),
    "road.evaluate": (lambda v, d: _road(progress=v), True),
    "run_experiment": (lambda v, d: runner.run_experiment({"name": "x"}, d / "out", progress=v),
                       False),
    "run_roar": (lambda v, d: runner.run_roar({"name": "x"}, d / "out", progress=v), False),
    "run_road": (lambda v, d: runner.run_road({"name": "x"}, d / "out", progress=v), False),
    "run_paper_images": (lambda v, d: run_paper_images(d / "pi", quick=True, progress=v), False),
    "run_sanity": (lambda v, d: runner.run_sanity({"name": "x"}, d / "out", progress=v), False),
    "sanity.parameter_randomisation": (lambda v, d: _mprt(progress=v), True),
    "sanity.data_randomisation": (lambda v, d: _data_rand(progress=v), False),
    "sanity.metric_reliability": (lambda v, d: _reliability(progress=v), True),
}
for _m in attribution.available():
    if "progress" in attribution.options_of(_m):
        _cls = attribution.get(_m)
        PROGRESS[f"attribute[{_m}]"] = (functools.partial(
            lambda m, v, d: _attribute(m, progress=v), _m), True)
        PROGRESS[f"{_cls.__name__}.attribute"] = (functools.partial(
            lambda c, v, d: c(net()).attribute(X, R, progress=v), _cls), True)
for _p in policies.available():
    PROGRESS[f"policy[{_p}].pair"] = (functools.partial(
        lambda p, v, d: _pair(p, progress=v), _p), True)

BAD_PROGRESS = ["no", "yes", "False", 0, 1, 0.0, [], np.int64(1)]


def _folder(request, entry: str):
    """A folder for the entry points that write one (the runs); None for the others."""
    return request.getfixturevalue("tmp_path") if entry in WRITERS else None


#: Entry points that write an output folder: a refused value writes nothing there.
WRITERS = {"run_experiment", "run_roar", "run_road", "run_paper_images", "run_sanity"}


@pytest.mark.parametrize("bad", BAD_PROGRESS, ids=repr)
@pytest.mark.parametrize("entry", list(PROGRESS))
def test_progress_must_be_none_true_or_false(entry, bad, request):
    folder = _folder(request, entry)
    with pytest.raises(TypeError, match=r"progress must be None, True or False; got "
                                        + re.escape(repr(bad))):
        PROGRESS[entry][0](bad, folder)
    assert folder is None or not any(folder.iterdir())  # refused before anything is written


@pytest.mark.parametrize("ok", [None, True, False, np.False_], ids=repr)
@pytest.mark.parametrize("entry", [k for k, (_, cheap) in PROGRESS.items() if cheap])
def test_progress_accepts_none_true_false(entry, ok):
    PROGRESS[entry][0](ok, None)


# -- seed=, booleans and integers: check_scalar's vocabulary ---------------------------------------
#: Entry points that take ``seed=``.
SEED = {
    "evaluate": lambda v, d: insdel.evaluate(f, X, R, {"a": A}, n_random=1, seed=v),
    "random_orderings": lambda v, d: insdel.random_orderings(4, 2, 3, seed=v),
    "Metric.__call__": lambda v, d: _metric_call("insertion_abc", seed=v),
    "evaluate_metrics": lambda v, d: M.evaluate_metrics(f, X, R, {"a": A},
                                                        metrics=["insertion_abc"], seed=v),
    "images.evaluate": lambda v, d: images.evaluate(classifier(), POOL[:3], np.zeros((3, 4)),
                                                    {"a": POOL[:3]}, shape=(1, 2, 2),
                                                    n_random=1, seed=v),
    "digits.load": lambda v, d: digits.load(seed=v),
    "digits.train_cnn": lambda v, d: digits.train_cnn(digits_data(), seed=v, epochs=1),
    "models.train_mlp": lambda v, d: models.train_mlp(tiny_data(), MLP, max_epochs=1, seed=v,
                                                      progress=False),
    "models.tune_mlp": lambda v, d: models.tune_mlp(tiny_data(), 1, seed=v, max_epochs=1,
                                                    progress=False),
    "roar.roar": lambda v, d: roar.roar(tiny_data(), {}, params=MLP, orderings=("random",),
                                        fractions=(1.0,), replicates=1, max_epochs=1, seed=v),
    "road.evaluate": lambda v, d: _road(seed=v),
    "road.leakage": lambda v, d: road.leakage(X, insdel.removal.Constant(0.0), seed=v),
    "leaderboard": lambda v, d: leaderboard.leaderboard([], seed=v),
    "functional.run_catalogue": lambda v, d: functional.run_catalogue(["random"], seed=v,
                                                                      cases=["additive"]),
    "functional.grade_metrics": lambda v, d: functional.grade_metrics(["insertion_abc"], seed=v,
                                                                      cases=["additive"]),
    "Case.truth": lambda v, d: functional.get("additive").truth(seed=v),
    "run_paper_images": lambda v, d: run_paper_images(d / "pi", quick=True, seed=v,
                                                      progress=False),
    "sanity.parameter_randomisation": lambda v, d: _mprt(seed=v),
    "sanity.data_randomisation": lambda v, d: _data_rand(seed=v, progress=False),
    "sanity.metric_reliability": lambda v, d: _reliability(seed=v),
}
for _m in attribution.available():
    if "seed" in attribution.options_of(_m):
        SEED[f"attribute[{_m}]"] = functools.partial(lambda m, v, d: _attribute(m, seed=v), _m)
for _p in policies.available():
    SEED[f"policy[{_p}].pair"] = functools.partial(lambda p, v, d: _pair(p, seed=v), _p)
for _d in datasets.available():
    SEED[f"datasets.get[{_d}]"] = functools.partial(lambda n, v, d: datasets.load(n, seed=v), _d)
#: the removals that draw: seeded like everything else (the background is the pool)
SEED["removal.build[marginal]"] = lambda v, d: removal.build("marginal", background=POOL,
                                                             n_references=2, seed=v)
for _r in ("conditional_gaussian", "conditional_knn"):
    SEED[f"removal.build[{_r}]"] = functools.partial(
        lambda r, v, d: removal.build(r, data=POOL, seed=v), _r)
SEED["sampled_shapley"] = lambda v, d: sampled_shapley(f, X, R, n_orderings=4, seed=v)

#: Boolean options: (entry point, option) -> call with a value.
BOOL = {
    ("evaluate", "normalize"): lambda v: insdel.evaluate(f, X, R, {"a": A}, normalize=v),
    ("evaluate", "add_random"): lambda v: insdel.evaluate(f, X, R, {"a": A}, add_random=v),
    ("abc", "normalize"): lambda v: insdel.abc(np.arange(4.0), normalize=v),
    ("auc", "normalize"): lambda v: insdel.auc(np.arange(4.0), normalize=v),
    ("aul", "normalize"): lambda v: insdel.aul(np.arange(4.0), normalize=v),
    ("hybrid", "outer"): lambda v: hybrid(X, R[0], [1, 2], outer=v),
    ("batch_decomposition", "dedup"): lambda v: batch_decomposition(f, X, R, dedup=v),
    ("AnchoredDecomposition.abc", "normalize"): lambda v: anchored_decomposition(
        f, X[0], R[0]).abc([0, 1, 2], normalize=v),
    ("BatchDecomposition.abc", "normalize"): lambda v: batch_decomposition(f, X, R).abc(
        [0, 1, 2], normalize=v),
    ("attribute", "return_info"): lambda v: attribution.attribute(f, X, R, "random",
                                                                   return_info=v),
    ("images.evaluate", "probability"): lambda v: images.evaluate(
        classifier(), POOL[:3], np.zeros((3, 4)), {"a": POOL[:3]}, shape=(1, 2, 2), n_random=1,
        probability=v),
    ("images.evaluate", "add_random"): lambda v: images.evaluate(
        classifier(), POOL[:3], np.zeros((3, 4)), {"a": POOL[:3]}, shape=(1, 2, 2),
        add_random=v),
    ("load_any", "trust"): lambda v: load_any(_FILES["state_dict"], preset="quick_cern", trust=v),
    ("run_paper_images", "quick"): lambda v: run_paper_images("pi", quick=v, progress=False),
    ("functional.exit_code", "strict"): lambda v: functional.exit_code(_results(), strict=v),
    ("road.evaluate", "random"): lambda v: _road(random=v),
    ("sanity.parameter_randomisation", "abc"): lambda v: _mprt(abc=v),
}
for _m, _opts in ATTRIBUTION_OPTIONS.items():
    for _o in (o for o, kind in _opts.items() if kind == "bool"):
        BOOL[(f"attribute[{_m}]", _o)] = functools.partial(
            lambda m, o, v: _attribute(m, **{o: v}), _m, _o)
for _n, _opts in METRIC_OPTIONS.items():
    for _o in (o for o, kind in _opts.items() if kind == "bool"):
        BOOL[(f"metrics.get[{_n}]", _o)] = functools.partial(
            lambda n, o, v: _metric_call(n, M.build(n, **{o: v})), _n, _o)
for _p, _opts in POLICY_OPTIONS.items():
    for _o in (o for o, kind in _opts.items() if kind == "bool"):
        BOOL[(f"policies.get[{_p}]", _o)] = functools.partial(_policy_with, _p, _o)

#: Integer options: (entry point, option) -> call with a value.
INT = {
    ("evaluate", "n_random"): lambda v: insdel.evaluate(f, X, R, {"a": A}, n_random=v),
    ("evaluate", "step"): lambda v: insdel.evaluate(f, X, R, {"a": A}, n_random=1,
                                                    points=insdel.CurvePoints(step=v)),
    ("evaluate", "chunk_size"): lambda v: insdel.evaluate(f, X, R, {"a": A}, n_random=1,
                                                          chunk_size=v),
    ("curves", "step"): lambda v: insdel.curves(f, X, R, A, step=v),
    ("curves", "chunk_size"): lambda v: insdel.curves(f, X, R, A, chunk_size=v),
    ("trace", "batch_size"): lambda v: insdel.trace(f, X, R, ORDERS, batch_size=v),
    ("random_orderings", "K"): lambda v: insdel.random_orderings(4, v, 3),
    ("removal.build[marginal]", "n_references"): lambda v: removal.build(
        "marginal", background=POOL, n_references=v),
    ("removal.build[conditional_gaussian]", "n_draws"): lambda v: removal.build(
        "conditional_gaussian", data=POOL, n_draws=v),
    ("removal.build[conditional_knn]", "n_neighbors"): lambda v: removal.build(
        "conditional_knn", data=POOL, n_neighbors=v),
    ("sampled_shapley", "n_orderings"): lambda v: sampled_shapley(f, X, R, n_orderings=v),
    ("positions", "m"): lambda v: positions(v),
    ("positions", "step"): lambda v: positions(6, step=v),
    ("abc", "m"): lambda v: insdel.abc(np.arange(4.0), positions=[0, 1, 2, 3], m=v),
    ("as_model", "batch_size"): lambda v: insdel.as_model(f, batch_size=v),
    ("batch_decomposition", "max_d"): lambda v: batch_decomposition(f, X, R, max_d=v),
    ("batch_decomposition", "batch_size"): lambda v: batch_decomposition(f, X, R, batch_size=v),
    ("shapley_values", "max_rows"): lambda v: shapley_values(f, X, R, max_rows=v),
    ("attribute", "pairs_per_chunk"): lambda v: attribution.attribute(f, X, R, "random",
                                                                       pairs_per_chunk=v),
    ("images.evaluate", "n_random"): lambda v: images.evaluate(
        classifier(), POOL[:3], np.zeros((3, 4)), {"a": POOL[:3]}, shape=(1, 2, 2), n_random=v),
    ("digits.train_cnn", "epochs"): lambda v: digits.train_cnn(digits_data(), epochs=v),
    ("run_paper_images", "n_images"): lambda v: run_paper_images("pi", n_images=v,
                                                                 progress=False),
    ("run_paper_images", "epochs"): lambda v: run_paper_images("pi", epochs=v, progress=False),
    ("run_paper_images", "step"): lambda v: run_paper_images("pi", step=v, progress=False),
    ("models.train_mlp", "max_epochs"): lambda v: models.train_mlp(tiny_data(), MLP,
                                                                   max_epochs=v, progress=False),
    ("roar.roar", "replicates"): lambda v: roar.roar(tiny_data(), {}, params=MLP,
                                                     orderings=("random",), fractions=(1.0,),
                                                     replicates=v, max_epochs=1),
    ("leaderboard", "n_boot"): lambda v: leaderboard.leaderboard([], n_boot=v),
    ("road.evaluate", "batch_size"): lambda v: _road(batch_size=v),
    ("road.evaluate", "n_seeds"): lambda v: _road(n_seeds=v),
    ("road.leakage", "folds"): lambda v: road.leakage(X, insdel.removal.Constant(0.0), folds=v),
    ("road.leakage", "n_rows"): lambda v: road.leakage(X, insdel.removal.Constant(0.0), n_rows=v),
    ("sanity.metric_reliability", "n_perturbations"): lambda v: _reliability(n_perturbations=v),
    ("sanity.data_randomisation", "n_pairs"): lambda v: _data_rand(n_pairs=v, progress=False),
    ("load_any", "n_features"): lambda v: load_any(_FILES["state_dict"], preset="quick_cern",
                                                   n_features=v),
}
for _m, _opts in ATTRIBUTION_OPTIONS.items():
    for _o in (o for o, kind in _opts.items() if kind == "int"):
        INT[(f"attribute[{_m}]", _o)] = functools.partial(
            lambda m, o, v: _attribute(m, **{o: v}), _m, _o)
for _n, _opts in METRIC_OPTIONS.items():
    for _o in (o for o, kind in _opts.items() if kind == "int"):
        INT[(f"metrics.get[{_n}]", _o)] = functools.partial(
            lambda n, o, v: _metric_call(n, M.build(n, **{o: v})), _n, _o)
for _p, _opts in POLICY_OPTIONS.items():
    for _o in (o for o, kind in _opts.items() if kind == "int"):
        INT[(f"policies.get[{_p}]", _o)] = functools.partial(_policy_with, _p, _o)




def _cases(table: dict, values: dict) -> list:
    """pytest params (entry, value, error) for every entry of ``table`` and every bad value
    (``values``: ``{error: [values]}``)."""
    out = []
    for key in table:
        for err, vals in values.items():
            for v in vals:
                name = key if isinstance(key, str) else f"{key[0]}({key[1]}=)"
                out.append(pytest.param(key, v, err, id=f"{name}-{v!r}"))
    return out


def _check(call, value, error, name: str, folder) -> None:
    """``call(value)`` raises ``error`` naming ``name``, and writes nothing. Any other outcome
    fails with one line, without the library's traceback (formatting it for
    a thousand cases would be slow)."""
    try:
        call(value)
    except Exception as exc:  # noqa: BLE001 - which exception is what is checked
        got = exc
    else:
        got = None
    if not (isinstance(got, error) and re.search(rf"\b{name}\b", str(got))):
        pytest.fail(f"expected {error.__name__} naming {name!r}; got {got!r}", pytrace=False)
    assert folder is None or not any(folder.iterdir())  # refused before anything is written


def _writes(entry) -> bool:
    return (entry if isinstance(entry, str) else entry[0]) in WRITERS


@pytest.mark.parametrize("entry, value, error",
                         _cases(SEED, {TypeError: [2.7, "1", True], ValueError: [-1]}))
def test_seed_is_an_integer_at_least_zero(entry, value, error, request):
    folder = _folder(request, entry)
    _check(lambda v: SEED[entry](v, folder), value, error, "seed", folder)


@pytest.mark.parametrize("entry, value, error", _cases(BOOL, {TypeError: ["no", 1]}))
def test_boolean_options_are_true_or_false(entry, value, error, request, monkeypatch):
    folder = _folder(request, entry[0])
    if folder is not None:
        monkeypatch.chdir(folder)  # a relative output folder lands here
    _check(BOOL[entry], value, error, entry[1], folder)


@pytest.mark.parametrize("entry, value, error",
                         _cases(INT, {TypeError: [2.5, "3", True], ValueError: [-1]}))
def test_integer_options_are_integers_in_range(entry, value, error, request, monkeypatch):
    folder = _folder(request, entry[0])
    if folder is not None:
        monkeypatch.chdir(folder)
    _check(INT[entry], value, error, entry[1], folder)


# -- unknown names ---------------------------------------------------------------------------------
def _typo(name: str) -> str:
    """``name`` with its last letter doubled: the closest valid name is ``name`` itself."""
    return name + name[-1]


@pytest.mark.parametrize("name", attribution.available())
def test_an_unknown_method_names_the_closest(name):
    with pytest.raises(ValueError, match=rf"(?i)did you mean '{re.escape(name)}'"):
        attribution.attribute(f, X, R, _typo(name))


@pytest.mark.parametrize("name", M.available())
def test_an_unknown_metric_names_the_closest(name):
    with pytest.raises(ValueError, match=rf"(?i)did you mean [^?]*'{re.escape(name)}'"):
        M.build(_typo(name))


@pytest.mark.parametrize("name", functional.available())
def test_an_unknown_functional_test_names_the_closest(name):
    with pytest.raises(ValueError, match=rf"(?i)did you mean '{re.escape(name)}'"):
        functional.get(_typo(name))


_CONFIG = {"data": {"recipe": "diabetes"}, "model": {"preset": "quick_housing"}}
CONFIG_NAMES = ([("data.recipe", n, {"data": {"recipe": _typo(n)}}) for n in datasets.available()]
                + [("model.preset", n, {"model": {"preset": _typo(n)}}) for n in models.available()]
                + [("methods.names", n, {"methods": {"names": [_typo(n)]}})
                   for n in attribution.available()]
                + [("metrics.names", n, {"metrics": {"names": [_typo(n)]}})
                   for n in M.available()])


@pytest.mark.parametrize("key, name, over", CONFIG_NAMES,
                         ids=[f"{k}={n}" for k, n, _ in CONFIG_NAMES])
def test_an_unknown_name_in_a_configuration_names_the_closest(key, name, over):
    with pytest.raises(config.ConfigError,
                       match=rf"{re.escape(key)}: .*did you mean '{re.escape(name)}'"):
        config.load({**_CONFIG, **over})


# -- the registries: one meaning per verb (CONTRIBUTING.md, "Registry verbs") ---------------------
REGISTRIES = {"attribution": attribution, "metrics": M, "policies": policies,
              "datasets": datasets, "models": models, "digits": digits, "config": config,
              "functional": functional, "grading": functional.grading, "removal": removal}


def _is_entry(registry: str, entry) -> bool:
    """Whether ``entry`` is what ``get`` of ``registry`` documents (nothing built or loaded)."""
    if registry == "attribution":
        return isinstance(entry, type) and issubclass(entry, attribution.Attribution)
    if registry == "metrics":
        return isinstance(entry, type) and issubclass(entry, M.Metric)
    if registry == "policies":
        return (isinstance(entry, type) and issubclass(entry, policies.Policy)) or (
            inspect.isfunction(entry))
    if registry == "datasets":
        return callable(entry) and not isinstance(entry, datasets.Dataset)
    if registry in ("models", "digits"):
        return isinstance(entry, dict)
    if registry == "config":
        return isinstance(entry, str) and "[" in entry  # the TOML text as shipped
    if registry == "functional":
        return isinstance(entry, functional.Case)
    if registry == "removal":
        return isinstance(entry, type) and issubclass(entry, removal.Removal)
    return callable(entry)  # grading: a scoring callable (f, X, R, A) -> (B,)


REGISTRY_NAMES = [(r, n) for r, mod in REGISTRIES.items() for n in mod.available()]


@pytest.mark.parametrize("registry", list(REGISTRIES))
def test_available_is_a_sorted_list_of_names(registry):
    names = REGISTRIES[registry].available()
    assert isinstance(names, list) and names and all(isinstance(n, str) for n in names)
    assert names == sorted(set(names))


@pytest.mark.parametrize("registry, name", REGISTRY_NAMES,
                         ids=[f"{r}.{n}" for r, n in REGISTRY_NAMES])
def test_get_returns_the_entry_and_options_of_a_dict(registry, name):
    mod = REGISTRIES[registry]
    entry = mod.get(name)
    assert _is_entry(registry, entry), (registry, name, entry)
    if isinstance(entry, dict):  # presets: a copy the caller may edit
        entry["__edited__"] = 1
        assert "__edited__" not in mod.get(name)
    opts = mod.options_of(name)
    assert isinstance(opts, dict) and all(isinstance(k, str) for k in opts)


def _round_trip_entries():
    class Extra(M.Metric):
        name = "zz_registry_metric"

    def extra_policy(f, X_pool, targets, seed, *, shift=1.0):
        return X_pool[targets] + shift

    def extra_recipe(*, seed=0, size=3):
        raise AssertionError("get and options_of never run a recipe")

    class ExtraRemoval(removal.SampledRemoval):
        name = "zz_registry_removal"

        def __init__(self, *, fill=0.0):
            self.fill = fill

    return {"removal": ("zz_registry_removal", ExtraRemoval, {"fill": 0.0}),
            "metrics": ("zz_registry_metric", Extra, {}),
            "policies": ("zz_registry_policy", extra_policy, {"shift": 1.0}),
            "datasets": ("zz_registry_recipe", extra_recipe, {"size": 3}),
            "grading": ("zz_registry_grade", lambda f, X, R, A: np.zeros(len(X)), {})}


@pytest.mark.parametrize("registry", ["metrics", "policies", "datasets", "grading", "removal"])
def test_register_get_unregister_round_trip(registry):
    mod = REGISTRIES[registry]
    name, entry, options = _round_trip_entries()[registry]
    mod.register(name, entry)
    try:
        assert name in mod.available() and mod.available() == sorted(mod.available())
        assert mod.get(name) is entry
        assert mod.options_of(name) == options
        with pytest.raises(ValueError, match="already registered"):
            mod.register(name, _round_trip_entries()[registry][1])
        mod.register(name, entry, overwrite=True)
    finally:
        mod.unregister(name)
    assert name not in mod.available()
    with pytest.raises(insdel.UnknownNameError):
        mod.get(name)
    with pytest.raises(insdel.UnknownNameError):
        mod.unregister(name)


@pytest.mark.parametrize("registry", ["policies", "datasets", "removal"])
def test_a_built_in_cannot_be_replaced_or_removed(registry):
    mod = REGISTRIES[registry]
    name = mod.available()[0]
    with pytest.raises(ValueError, match="built-in"):
        mod.register(name, _round_trip_entries()[registry][1], overwrite=True)
    with pytest.raises(ValueError, match="built-in"):
        mod.unregister(name)


#: The verb that builds or loads an entry, per registry that has one.
MAKE = {"attribution": lambda n: attribution.build(n, f), "metrics": M.build,
        "policies": policies.build, "datasets": datasets.load, "config": config.load,
        "removal": removal.build}


@pytest.mark.parametrize("registry, name", REGISTRY_NAMES,
                         ids=[f"{r}.{n}" for r, n in REGISTRY_NAMES])
def test_an_unknown_name_is_one_error_with_the_closest_and_the_valid_ones(registry, name):
    mod = REGISTRIES[registry]
    verbs = [mod.get, mod.options_of] + ([MAKE[registry]] if registry in MAKE else [])
    for verb in verbs:
        with pytest.raises(insdel.UnknownNameError) as exc:
            verb(_typo(name))
        assert isinstance(exc.value, ValueError)
        msg = str(exc.value)
        assert re.search(rf"Did you mean [^?]*'{re.escape(name)}'", msg), msg
        assert repr(_typo(name)) in msg and all(n in msg for n in mod.available())
        assert exc.value.name == _typo(name) and exc.value.available == mod.available()


def test_unknown_policy_error_is_the_unknown_name_error():
    assert issubclass(policies.UnknownPolicyError, insdel.UnknownNameError)
    with pytest.raises(policies.UnknownPolicyError, match="Did you mean 'average'"):
        policies.load("averagee")


def test_a_missing_configuration_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        config.load(tmp_path / "nope.toml")
    with pytest.raises(FileNotFoundError):
        config.load("nope.toml")
    with pytest.raises(insdel.UnknownNameError, match="Did you mean 'demo'"):
        config.load("demoo")


#: One unknown-option rule for every registry's options: (registry, entry, option) -> the call
#: with the option misspelt, the thing the message names and its noun.
UNKNOWN_OPTION = (
    [("attribution", m, o, lambda m, k: attribution.attribute(f, X, R, m, **{k: 1}),
      f"method '{m}'", "option") for m in attribution.available()
     for o in attribution.options_of(m)]
    + [("metrics", m, o, lambda m, k: M.build(m, **{k: 1}), f"metric '{m}'", "option")
       for m in M.available() for o in M.options_of(m)]
    + [("policies", p, o, lambda p, k: policies.build(p, **POLICY_PARAMS.get(p, {}), **{k: 1}),
        f"policy '{p}'", "parameter") for p in policies.available() for o in policies.options_of(p)]
    + [("removal", r, o, lambda r, k: removal.build(r, **{k: 1}), f"removal '{r}'", "option")
       for r in removal.available() for o in removal.options_of(r)]
    + [("datasets", d, o, lambda d, k: datasets.load(d, **{k: 1}), f"data set '{d}'", "option")
       for d in datasets.available() for o in datasets.options_of(d)]
    + [("config", t, o, lambda t, k: config.load({**_CONFIG, t: {k: 1}}), "<dict>", "key")
       for t in ("evaluation", "compute", "roar", "road") for o in config.DEFAULTS[t]])


@pytest.mark.parametrize("registry, entry, option, call, thing, noun", UNKNOWN_OPTION,
                         ids=[f"{r}.{e}.{o}" for r, e, o, *_ in UNKNOWN_OPTION])
def test_an_unknown_option_is_one_error_with_the_closest_and_the_valid_ones(
        registry, entry, option, call, thing, noun):
    typo = _typo(option)
    with pytest.raises(insdel.UnknownOptionError) as exc:
        call(entry, typo)
    err = exc.value
    assert isinstance(err, TypeError) and isinstance(err, ValueError)
    shown = f"{entry}.{typo}" if registry == "config" else typo
    assert re.match(rf"{re.escape(thing)}: unknown {noun} '{re.escape(shown)}'; did you mean "
                    rf"'{re.escape(option)}'\? \(valid {noun}s: [^)]*\b{re.escape(option)}\b",
                    str(err)), str(err)
    assert err.unknown == [typo] and err.closest == [option] and option in err.valid
    if registry == "config":
        assert isinstance(err, config.ConfigError)
