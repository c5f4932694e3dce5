"""The data insdel ships: plain package folders, read with ``importlib.resources``.

=====================================  =======================================================
package (folder ``insdel/shipped/F``)  what it holds
=====================================  =======================================================
``insdel.shipped.configs``             the shipped experiment configurations (TOML), read by
                                       :mod:`insdel.config`
``insdel.shipped.policies``            TOML reference-point policy specifications, read by
                                       :mod:`insdel.policies.specs`
``insdel.shipped.data_recipes``        data recipes: raw files or simulators -> model-ready data
                                       sets, imported by :mod:`insdel.datasets`
=====================================  =======================================================

Each folder is a package listed in ``pyproject.toml`` (its data files in ``package-data``), so a
wheel, an editable install and a source checkout on ``PYTHONPATH`` hold the same files at the same
names. Read them through ``importlib.resources.files("insdel.shipped.F")`` or by importing the
module, never by a path relative to the repository.
"""
