"""Bound box `expected`: Theorem 3.2 over R runs, for any privacy profile.

The flipping probabilities beta_i depend on the attack's guesses, which are random, so the tail is
averaged over R independent trials (fresh data, fresh release), plus n delta(eps) for approximate DP.
The estimate needs every trial's prior successes at once: R x n floats while it is computed (the
played trials themselves keep only their grouped values, stages.bound.box.PlayedTrials).

Theorem 3.2 carries the one-run theorem's delta term, so for set-valued success (k > 1 guesses,
metric=within) with a mechanism that is not eps-DP it is not used (stages.bound.theorems.SET_VALUED_REASON):
the box gives KGK per target at the a-priori guesses' prior success p*, summed with Markov's inequality
(valid for any metric and any attack; ``theorem`` says which, and why).
"""
from __future__ import annotations

import numpy as np

from stages.bound.best import kgk_markov_count
from stages.bound.box import as_confidences, bound_theorem, count_dict, guesses_per_target, played_trials
from stages.bound.profiles import for_game
from stages.bound.theorems import expected_count_bound

__all__ = ["ExpectedBound"]


class ExpectedBound:
    """expected_count_bound(profile, p_runs, confidence) with p_runs[r, i] the prior success of trial r's guesses."""

    name = "expected"

    def compute(self, profile, prior, metric, trials, confidences) -> dict[float, int]:
        """{confidence: c} estimated over the trials (PlayedTrials, or guesses of shape (R, n, k))."""
        levels = as_confidences(confidences)
        if self.theorem(profile, prior, metric, trials)["theorem"] == "kgk_markov":
            p_star = prior.success_probability(prior.a_priori_guess(metric, guesses_per_target(trials)), metric)
            prof = for_game(profile, "reconstruction")
            return count_dict(levels, [kgk_markov_count(prof, p_star, float(c)) for c in levels])
        p_runs = np.stack(list(played_trials(prior, metric, trials)))
        return count_dict(levels, expected_count_bound(profile, p_runs, levels))

    def theorem(self, profile, prior, metric, trials) -> dict:
        """{"theorem", "set_valued", "reason"}: Theorem 3.2, or the KGK/Markov fallback for set-valued success."""
        return bound_theorem(profile, metric, guesses_per_target(trials), getattr(prior, "domain_size", None),
                             "expected (Theorem 3.2)",
                             "Theorem 3.1 at the profile's eps (eps-DP), averaged over the trials")

    def params(self) -> dict:
        return {"bound": self.name}
