"""Bound box `one_run`: the worst-case-prior bound, one count for all releases (Appendix C, thm:eps_bound_f_comp).

The flipping probabilities use z*, the a-priori Bayes-optimal guesses (as many per target as the
attack makes), so the bound holds over the draw of the data and the release without looking at it.

When a target's success set can hold more than one value (k > 1 guesses, metric=within) and the
mechanism is not eps-DP, that theorem is not valid (stages.bound.theorems.SET_VALUED_REASON): the box
then gives KGK per target summed with Markov's inequality instead (``theorem`` says which, and why).
"""
from __future__ import annotations

from stages.bound.best import kgk_markov_count
from stages.bound.box import as_confidences, bound_theorem, count_dict, guesses_per_target
from stages.bound.profiles import for_game
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
        if self.theorem(profile, prior, metric, trials)["theorem"] == "kgk_markov":
            prof = for_game(profile, "reconstruction")
            return count_dict(levels, [kgk_markov_count(prof, p_star, float(c)) for c in levels])
        return count_dict(levels, count_bound(profile, p_star, levels))

    def theorem(self, profile, prior, metric, trials) -> dict:
        """{"theorem", "set_valued", "reason"}: the one-run theorem, or the KGK/Markov fallback for set-valued success."""
        return bound_theorem(profile, metric, guesses_per_target(trials), getattr(prior, "domain_size", None),
                             "one_run (thm:eps_bound_f_comp)",
                             "Theorem 3.1 at the profile's eps (eps-DP), a-priori guesses z*")

    def params(self) -> dict:
        return {"bound": self.name}
