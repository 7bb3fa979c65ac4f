"""Bound box `expected`: Theorem 3.2 over R runs, for any privacy profile (THEORY.md, Theorem 2).

The flipping probabilities beta_i depend on the attack's guesses, which are random, so the tail is
averaged over R independent trials (fresh data, fresh release), with an extra-success budget
n delta(eps) for approximate DP spread over the shortfall (the J-average of THEORY.md). Valid for one
exact guess and for set-valued success alike. Each trial's prior successes go to the theorem grouped
(stages.bound.box.PlayedTrials.priors), so memory and time follow the distinct values, not R x n.
"""
from __future__ import annotations

from stages.bound.box import as_confidences, bound_theorem, count_dict, guesses_per_target, played_trials
from stages.bound.theorems import expected_count_bound

__all__ = ["ExpectedBound"]

THEOREM = "Theorem 3.2 with the split budget (THEORY.md Thm 2), averaged over the trials"


class ExpectedBound:
    """expected_count_bound(profile, p_runs, confidence) with p_runs[r, i] the prior success of trial r's guesses."""

    name = "expected"
    #: Its bound is over the mixture of the trials and reads the law only through the played p_i: with a law per
    #: trial (prior=baynet) the game computes it once over all trials (valid for the mixture: THEORY.md Thm 2,
    #: the minimum over J and eps taken after averaging), not trial by trial (one release is not an average).
    mixes_trials = True

    def compute(self, profile, prior, metric, trials, confidences) -> dict[float, int]:
        """{confidence: c} estimated over the trials (PlayedTrials, or guesses of shape (R, n, k))."""
        levels = as_confidences(confidences)
        played = played_trials(prior, metric, trials)
        p_runs = [played.priors(r) for r in range(len(played))]
        set_valued = self.theorem(profile, prior, metric, trials)["set_valued"]
        return count_dict(levels, expected_count_bound(profile, p_runs, levels, set_valued=set_valued))


    def compute_theorems(self, profile, prior, metric, trials, confidences) -> tuple[dict[float, int], dict[float, str]]:
        """({confidence: c}, {confidence: the theorem that gave c}): this box has one theorem (``theorem``)."""
        counts = self.compute(profile, prior, metric, trials, confidences)
        name = self.theorem(profile, prior, metric, trials)["theorem"]
        return counts, {c: name for c in counts}
    def theorem(self, profile, prior, metric, trials) -> dict:
        """{"theorem", "set_valued", "reason", "version"}: Theorem 3.2 (Theorem 3.1 averaged if eps-DP)."""
        out = bound_theorem(profile, metric, guesses_per_target(trials), getattr(prior, "domain_size", None),
                            THEOREM, "Theorem 3.1 at the profile's eps (eps-DP), averaged over the trials")
        if out["set_valued"] and "eps-DP" not in out["reason"]:
            out["reason"] = "success is set-valued: each target's extra-success budget is still <= delta(eps)"
        return out

    def params(self) -> dict:
        return {"bound": self.name}
