"""Bound box `expected`: Theorem 3.2 over R runs, for any privacy profile.

The flipping probabilities beta_i depend on the attack's guesses, which are random, so the tail is
averaged over R independent trials (fresh data, fresh release), plus n delta(eps) for approximate DP.
"""
from __future__ import annotations

import numpy as np

from stages.bound.box import as_confidences, count_dict, guesses_per_trial
from stages.bound.theorems import expected_count_bound

__all__ = ["ExpectedBound"]


class ExpectedBound:
    """expected_count_bound(profile, p_runs, confidence) with p_runs[r, i] the prior success of trial r's guesses."""

    name = "expected"

    def compute(self, profile, prior, metric, guesses, confidences) -> dict[float, int]:
        """{confidence: c} estimated over the trials in guesses (shape (R, n, k))."""
        levels = as_confidences(confidences)
        p_runs = np.stack([prior.success_probability(z, metric) for z in guesses_per_trial(guesses)])
        return count_dict(levels, expected_count_bound(profile, p_runs, levels))

    def params(self) -> dict:
        return {"bound": self.name}
