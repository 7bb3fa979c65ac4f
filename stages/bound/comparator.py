"""Bound box `comparator`: a prior-work bound as a count bound in our game.

The comparators are those of ``stages.bound.best.COMPARATORS``, the one registry ``best_bound`` uses
too: each says whether its paper's preconditions hold here (``applies``) and gives its number
(``value``). Every comparator is fed p* (the prior success of the a-priori guess z*, with as many
guesses per target as the attack makes) and the mechanism's privacy profile, which says itself what it
is (eps-DP, mu-GDP, its Renyi curve, its (eps, delta) pairs):

* `mmc`: a one-run tail bound Pr[#attacked >= v] of its own (uniform priors 1/k only).
* `steinke`: refused for n > 1 targets, since exact DP mechanisms beat Steinke et al.'s one-run count
  (stages.bound.best.STEINKE_COUNT_REASON); at one target it is a valid success bound.
* `kgk`, `rero`, `narcissus`, `stock`, `cherubin`: bounds s_i on one target's success probability.
  Their papers say nothing about how successes on different targets combine, so the tail uses only
  what they give, E[#attacked] <= sum_i s_i, and Markov's inequality.

A comparator whose preconditions fail (a non-uniform prior for MMC, no Renyi guarantee for ReRo/Stock,
set-valued success for a comparator that scores one exact guess) is refused in one sentence with the
registry's reason. Counts read as in stages.bound.theorems.count_bound: the smallest c with
Pr[#attacked >= c + 1] <= 1 - confidence.

The pipeline's games are reconstruction games: a target's secret is its record (or part of it), and
changing it replaces the record. So every comparator gets the replace-one profile of the mechanism
(an add/remove DP-SGD profile is re-accounted for replace-one first: stages.bound.profiles.for_game).
For membership games use stages.bound.best.best_bound(..., game="membership").
"""
from __future__ import annotations

import numpy as np

from stages.bound.best import COMPARATORS, Setting
from stages.bound.box import as_confidences, count_dict, guesses_per_target, set_valued_success
from stages.bound.profiles import for_game

__all__ = ["ComparatorBound", "COMPARATOR_NAMES"]

#: The names bound.name takes: every comparator of stages.bound.best.COMPARATORS (one registry).
COMPARATOR_NAMES = tuple(COMPARATORS)


class ComparatorBound:
    """The count bound of one prior-work comparator: name is one of COMPARATOR_NAMES."""

    name = "comparator"

    def __init__(self, name: str = "kgk") -> None:
        if name not in COMPARATORS:
            raise ValueError(f"name must be one of {list(COMPARATORS)}, got {name!r}.")
        self.comparator = name

    def _setting(self, prior, metric, guesses) -> Setting:
        set_valued = set_valued_success(metric, guesses_per_target(guesses), getattr(prior, "domain_size", None))
        return Setting("reconstruction", set_valued, "count")

    def compute(self, profile, prior, metric, guesses, confidences) -> dict[float, int]:
        """{confidence: c} for p* = prior success of z*; guesses give only k (guesses per target).

        The game is a reconstruction game, so the replace-one profile is used (see the module docstring).
        A comparator whose preconditions do not hold here is refused in one sentence (the registry's reason).
        """
        profile = for_game(profile, "reconstruction")
        k = guesses_per_target(guesses)  # guesses: PlayedTrials or (R, n, k)
        levels = as_confidences(confidences)
        p_star = np.asarray(prior.success_probability(prior.a_priori_guess(metric, k), metric), dtype=float)
        comparator = COMPARATORS[self.comparator]
        setting = self._setting(prior, metric, guesses)
        why = comparator.applies(profile, p_star, setting)
        if why is not None:
            raise ValueError(f"bound.name={self.comparator} does not apply to this game ({profile!r}, n = {p_star.size}): "
                             f"{why}; pick another comparator or bound=one_run.")
        return count_dict(levels, [comparator.value(profile, p_star, setting, float(c)) for c in levels])


    def compute_theorems(self, profile, prior, metric, trials, confidences) -> tuple[dict[float, int], dict[float, str]]:
        """({confidence: c}, {confidence: the theorem that gave c}): this box has one theorem (``theorem``)."""
        counts = self.compute(profile, prior, metric, trials, confidences)
        name = self.theorem(profile, prior, metric, trials)["theorem"]
        return counts, {c: name for c in counts}
    def theorem(self, profile, prior, metric, guesses) -> dict:
        """{"theorem", "set_valued", "reason"} for the run's log and metrics.json."""
        setting = self._setting(prior, metric, guesses)
        if self.comparator in ("mmc", "steinke"):
            reason = f"{self.comparator}'s own one-run tail bound"
        else:
            reason = (f"{self.comparator} bounds one target's success probability; over the targets E[#attacked] <= "
                      "sum_i s_i and Markov's inequality")
        if setting.set_valued:
            reason += "; success is set-valued, and " + (
                "this comparator's game scores one exact guess (refused)" if COMPARATORS[self.comparator].one_exact_guess
                else "it bounds any success event from its prior probability")
        return {"theorem": f"comparator {self.comparator}", "set_valued": setting.set_valued, "reason": reason}

    def params(self) -> dict:
        return {"bound": self.name, "comparator": self.comparator}
