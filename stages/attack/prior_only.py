"""The prior-only baseline: ignore the release and guess z*, the a-priori Bayes-optimal guesses."""
from __future__ import annotations

import numpy as np

from stages.bound import _validate

__all__ = ["PriorOnlyAttack"]


class PriorOnlyAttack:
    """Guess, for each target, the k candidates that maximise the prior success Pr_{X ~ D_i}[l_i(X, z) = 1]."""

    name = "prior_only"
    needs_prior = ("records", "table")  # stages.protocols

    def __init__(self, k: int = 1) -> None:
        self.k = _validate.integer("k", k, minimum=1)

    def guess(self, a, prior, mechanism, metric) -> np.ndarray:
        """z* of shape (n_targets, k); a and mechanism are ignored."""
        return prior.a_priori_guess(metric, self.k)

    def params(self) -> dict:
        return {"attack": self.name, "k": self.k}
