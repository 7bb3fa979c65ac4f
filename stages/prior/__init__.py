"""Priors D_1..D_n over each target's candidate secrets: one module per config option."""
from stages.prior.base import Prior, data_path, validate_probabilities

__all__ = ["Prior", "data_path", "validate_probabilities"]
