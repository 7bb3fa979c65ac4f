"""Uniform prior: every target's secret is uniform over its m candidates (random canaries)."""
from __future__ import annotations

import numpy as np

from stages.bound import _validate
from stages.prior.base import Prior

__all__ = ["UniformPrior"]


class UniformPrior(Prior):
    """D_i = Uniform{0..m-1} for each of n targets, as for the uniform random canaries of Section 4.1."""

    name = "uniform"

    def __init__(self, n_targets: int = 100, domain_size: int = 10) -> None:
        n = _validate.integer("n_targets", n_targets, minimum=1)
        m = _validate.integer("domain_size", domain_size, minimum=1)
        super().__init__(np.full((n, m), 1.0 / m))
