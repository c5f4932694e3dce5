"""Tree ensembles read exactly: one representation (:class:`TreeEnsemble`) written by each
library's parser and read by the tree game."""

from .ensemble import RULES, TreeEnsemble, check_ensemble, goes_left

__all__ = ["RULES", "TreeEnsemble", "check_ensemble", "goes_left"]
