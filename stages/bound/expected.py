"""Bound box `expected`: Theorem 3.2 over R runs, for any privacy profile.

The flipping probabilities beta_i depend on the attack's guesses, which are random, so the tail is
averaged over R independent trials (fresh data, fresh release), plus n delta(eps) for approximate DP.
The estimate needs every trial's prior successes at once: R x n floats while it is computed (the
played trials themselves keep only their grouped values, stages.bound.box.PlayedTrials).
"""
from __future__ import annotations

import numpy as np

from stages.bound.box import as_confidences, count_dict, played_trials
from stages.bound.theorems import expected_count_bound

__all__ = ["ExpectedBound"]


class ExpectedBound:
    """expected_count_bound(profile, p_runs, confidence) with p_runs[r, i] the prior success of trial r's guesses."""

    name = "expected"

    def compute(self, profile, prior, metric, trials, confidences) -> dict[float, int]:
        """{confidence: c} estimated over the trials (PlayedTrials, or guesses of shape (R, n, k))."""
        levels = as_confidences(confidences)
        p_runs = np.stack(list(played_trials(prior, metric, trials)))
        return count_dict(levels, expected_count_bound(profile, p_runs, levels))

    def params(self) -> dict:
        return {"bound": self.name}
