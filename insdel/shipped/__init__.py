"""Data folders that live at the top of the repository and ship inside the package.

One convention for all of them: the top-level folder ``F/`` installs as ``insdel.shipped.F``.

=====================  ===================================  ============================================
repository folder      package                              what it holds
=====================  ===================================  ============================================
``policies/``          ``insdel.shipped.policies``          TOML reference-point policy specifications
``data_recipes/``      ``insdel.shipped.data_recipes``      data recipes: raw files or simulators ->
                                                            model-ready data sets
=====================  ===================================  ============================================

``pyproject.toml`` maps each package to its folder, so a wheel carries them. In a source checkout used
without installing (``PYTHONPATH=.``), the repository root is added to this package's path below,
so the same names resolve there too. Read them with ``importlib.resources`` or by importing the
module, never by a path relative to the repository.
"""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
if (_ROOT / "policies").is_dir() and (_ROOT / "data_recipes").is_dir() \
        and str(_ROOT) not in __path__:
    __path__.append(str(_ROOT))  # source checkout: insdel/shipped/F -> <repo>/F
