"""Bound box `expected`: Theorem 3.2 over R runs, for any privacy profile (THEORY.md, Theorem 2).

The flipping probabilities beta_i depend on the attack's guesses, which are random, so the tail is
averaged over R independent trials (fresh data, fresh release), with an extra-success budget
n delta(eps) for approximate DP spread over the shortfall (the J-average of THEORY.md). Valid for one
exact guess and for set-valued success alike. Each trial's prior successes go to the theorem grouped
(stages.bound.box.PlayedTrials.priors), so memory and time follow the distinct values, not R x n.

With one exact guess and each target's whole prior known (a fixed prior's probability matrix, or every trial's law
under per-trial laws: TrialLaws), the count is the minimum of Theorem 2 and the theorems that bound the mixture of the
trials (stages.bound.theorems.expected_count_bounds; THEORY.md sections 8 and 9, "Over the trials").
"""
from __future__ import annotations

from stages.bound import registry
from stages.bound.box import (TrialLaws, as_confidences, bound_theorem, count_dict, guesses_per_target, played_trials,
                              prior_distributions, record_candidates, success_set_size)
from stages.bound.designated_run import check_designated
from stages.bound.prior_run import MAX_GROUPS, check_groups
from stages.bound.profiles import for_game, pure_epsilon_of
from stages.bound.theorems import EXPECTED_BOUND_VERSION, expected_count_bounds, winner

__all__ = ["ExpectedBound"]

#: The theorem's name in every output (an eps-DP profile: Theorem 3.1 averaged over the trials).
THEOREM = registry.EXPECTED.name
PURE_THEOREM = f"{registry.PURE.name}{registry.AVERAGED}"
#: The names of the theorems of one release in the record: with the guesses they read (the shared prior's z*).
_Z_STAR = {t.name: f"{t.name}{registry.Z_STAR}" for t in (registry.SPLIT, registry.PURE)}


class ExpectedBound:
    """expected_count_bounds(profile, p_runs, confidence) with p_runs[r, i] the prior success of trial r's guesses,
    and for one exact guess each target's whole prior where the prior gives it (``distributions``)."""

    name = "expected"
    #: Its bound is over the mixture of the trials: with a law per trial (prior=baynet) the game computes it once
    #: over all trials (valid for the mixture: THEORY.md Thm 2, the minimum over J and eps taken after averaging;
    #: Theorem 3 likewise, section 8), not trial by trial (one release is not an average), and hands it every
    #: trial's law (``TrialLaws``).
    mixes_trials = True

    def __init__(self, designated: bool = False, groups: int = MAX_GROUPS) -> None:
        """``designated``: with one prior shared by every trial, add Theorems 5 and 6 (THEORY.md section 10, a bound on
        every trial) to the minimum; seconds to minutes a count, so off by default (a prior per trial: not offered;
        Theorem 6 joins by default above 200 targets, within its work budget).
        ``groups``: Theorem 4's most groups of targets (more: tighter on priors that differ, and slower)."""
        self.designated = check_designated(designated)
        self.groups = check_groups(groups)

    def compute(self, profile, prior, metric, trials, confidences) -> dict[float, int]:
        """{confidence: c} estimated over the trials (PlayedTrials, or guesses of shape (R, n, k))."""
        return self.compute_theorems(profile, prior, metric, trials, confidences)[0]

    def compute_theorems(self, profile, prior, metric, trials, confidences) -> tuple[dict[float, int], dict[float, str]]:
        """({confidence: c}, {confidence: the theorem that gave c}): Theorem 2 over the trials, with the whole prior
        (one exact guess; ``prior`` a fixed prior or TrialLaws) the minimum over the theorems that bound the trials'
        mixture (stages.bound.theorems.expected_count_bounds)."""
        levels = as_confidences(confidences)
        played = played_trials(prior, metric, trials)
        p_runs = [played.priors(r) for r in range(len(played))]
        info = self.theorem(profile, prior, metric, trials)
        set_valued = info["set_valued"]
        # set-valued success reads the whole prior only with the success sets' largest size (THEORY.md, Lemma 4')
        size = info.get("set_size") if set_valued else 1
        dists = prior_distributions(prior) if size is not None else None
        counts, by = expected_count_bounds(profile, p_runs, levels, distributions=dists, set_valued=set_valued,
                                           set_size=size if (set_valued and dists is not None) else None,
                                           designated=self.designated, groups=self.groups)
        names = {name: _record_name(name, info) for name in by}
        return count_dict(levels, counts), {float(c): names[w] for c, w in zip(levels, winner(by))}

    def theorem(self, profile, prior, metric, trials) -> dict:
        """{"theorem", "set_valued", "reason", "version"}: Theorem 3.2 (Theorem 3.1 averaged if eps-DP); with one
        exact guess the theorems using the whole prior join the minimum (``candidates``) where the prior gives it."""
        first = prior.first if isinstance(prior, TrialLaws) else prior
        out = bound_theorem(profile, metric, guesses_per_target(trials), getattr(first, "domain_size", None),
                            THEOREM, PURE_THEOREM)
        profile = for_game(profile, "reconstruction")
        set_valued = out["set_valued"]
        if set_valued and pure_epsilon_of(profile) is None:
            out["reason"] = "success is set-valued: each target's extra-success budget is still <= delta(eps)"
        if set_valued:
            # Theorem 3 with success sets of at most set_size values (Lemma 4'), shared or averaged over the trials
            out["set_size"] = success_set_size(metric, guesses_per_target(trials), getattr(first, "domain_size", None))
        else:
            out["version"] = EXPECTED_BOUND_VERSION
        size = out["set_size"] if set_valued else 1
        known = registry.ANY if size is not None else None
        # the theorems that may join: one prior shared by every trial (a fixed prior, or trials' laws that are all
        # equal) brings the theorems of one release (its a-priori guesses for one exact guess), laws per trial the
        # corollaries over the trials
        prospect = registry.Setting(profile, p=None if set_valued else known, distributions=known,
                                    set_valued=set_valued, set_size=size, runs=registry.ANY,
                                    per_run=known if isinstance(prior, TrialLaws) else None,
                                    designated=self.designated, groups=self.groups,
                                    n_targets=getattr(first, "n_targets", None))
        return record_candidates(out, registry.REGISTRY.candidates(prospect), lambda t: _record_name(t.name, out),
                                 self.groups)

    def params(self) -> dict:
        return {"bound": self.name, "designated": self.designated, "groups": self.groups}


def _record_name(name: str, info: dict) -> str:
    """A theorem's name in the box's record: Theorem 2 as ``theorem`` names it, the theorems of one release with the
    a-priori guesses they read, the others as they are."""
    return info["theorem"] if name == registry.EXPECTED.name else _Z_STAR.get(name, name)
