"""Bound box `one_run`: the worst-case-prior bound, one count for all releases (Appendix C, thm:eps_bound_f_comp).

The flipping probabilities use z*, the a-priori Bayes-optimal guesses (as many per target as the
attack makes), so the bound holds over the draw of the data and the release without looking at it.
"""
from __future__ import annotations

from stages.bound.box import as_confidences, count_dict, guesses_per_target
from stages.bound.theorems import count_bound

__all__ = ["OneRunBound"]


class OneRunBound:
    """count_bound(profile, p*, confidence) with p*_i the prior success of the a-priori guess z*."""

    name = "one_run"

    def compute(self, profile, prior, metric, trials, confidences) -> dict[float, int]:
        """{confidence: c}: with probability >= confidence at most c targets are attacked (trials give only k).

        trials: PlayedTrials or guesses (R, n, k) (stages.bound.box).
        """
        k = guesses_per_target(trials)
        levels = as_confidences(confidences)
        p_star = prior.success_probability(prior.a_priori_guess(metric, k), metric)
        return count_dict(levels, count_bound(profile, p_star, levels))

    def params(self) -> dict:
        return {"bound": self.name}
