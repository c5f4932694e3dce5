"""Data recipes: raw public files or simulators -> model-ready data sets (installed as insdel.shipped.data_recipes)."""
