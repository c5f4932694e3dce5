"""Reference-point policies (paper §2 and §5; conventions: *Reference-point policies*).

A *policy* decides which reference r is paired with each target x. insdel makes policies named,
parameterised and pluggable:

* :func:`build` returns a registered policy with its parameters (:func:`get` the registered class
  or function, :func:`options_of` its parameters and defaults); :func:`load` reads a TOML
  specification (a file, a spec shipped in ``insdel.shipped.policies``, the folder
  ``insdel/shipped/policies/``) or an inline dict;
* ``policy.pair(f, X_pool, *, targets=None, seed=0)`` returns a :class:`Pairing` (targets ``X``,
  references ``R``, their pool indices, the parameters used);
* :func:`register` adds a user policy (a function ``fn(f, X_pool, targets, seed, **params)`` or a
  :class:`Policy` subclass implementing ``select(f, X_pool, targets, seed)``).

Built-ins: ``counterfactual`` (§5.1, §5.2), ``one_to_one`` and ``average`` (§5.2), and the constant
references ``mean``, ``median``, ``mode`` (of a background set) and ``fixed`` (a given point);
for flattened images, the reference images ``black``, ``white``, ``channel_mean``, ``blurred``,
``noise`` and ``image`` (module ``images``; paper Table 5); for windows of a time series,
``locf``, ``seasonal_naive``, ``series_mean``, ``interpolate`` and ``nearest_window`` (module
``timeseries``; docs/multi_output.md).
The paper's Table 4 diagnostics of a pairing live in :mod:`insdel.diagnostics`.

Modules: ``base`` (Pairing, Policy), ``registry`` (names -> policies), ``counterfactual`` (with its
numba search kernel), ``simple`` (one-to-one, constants, fixed), ``specs`` (TOML specifications).
"""

from __future__ import annotations

from .base import FunctionPolicy, Pairing, Policy, UnknownPolicyError
from .counterfactual import Counterfactual
from .images import Black, Blurred, ChannelMean, Image, Noise, White
from .registry import available, build, get, options_of, register, unregister
from .simple import Average, Constant, Fixed, Mean, Median, Mode, OneToOne
from .specs import format_list, format_show, list_specs, load
from .timeseries import (
    Interpolate,
    LastObservation,
    NearestWindow,
    SeasonalNaive,
    SeriesMean,
)

__all__ = [
    "Policy", "Pairing", "FunctionPolicy", "UnknownPolicyError", "available", "get", "options_of",
    "build", "load", "register", "unregister", "list_specs", "format_list", "format_show", "Counterfactual", "OneToOne", "Average", "Constant", "Mean", "Median", "Mode",
    "Fixed", "Black", "White", "ChannelMean", "Blurred", "Noise", "Image", "LastObservation",
    "SeasonalNaive", "SeriesMean", "Interpolate", "NearestWindow",
]
