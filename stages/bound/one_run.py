"""Bound box `one_run`: the worst-case-prior bound, one count for all releases (the split one-run theorem).

The flipping probabilities use z*, the a-priori Bayes-optimal guesses (as many per target as the
attack makes), so the bound holds over the draw of the data and the release without looking at it.
The theorem is stages/bound/THEORY.md's Theorem 1, which replaces the paper's thm:eps_bound_f_comp
(exact DP mechanisms beat that one for n >= 2 targets). When a target's success set can hold more
than one value (k > 1 guesses, metric=within) the delta term is weighted by the prior's collision
probability instead of 1 - beta_i (``theorem`` says which).
"""
from __future__ import annotations

from stages.bound import registry
from stages.bound.box import (as_confidences, bound_theorem, count_dict, guesses_per_target, prior_collision,
                              prior_distributions, record_candidates, success_set_size)
from stages.bound.designated_run import check_designated
from stages.bound.profiles import for_game
from stages.bound.theorems import DEFAULT_BOUND_VERSION, count_bounds, winner
from stages.bound.prior_run import MAX_GROUPS, check_groups

__all__ = ["OneRunBound"]


#: The theorem's name in every output (an eps-DP profile gets Theorem 3.1 instead): the registry's names with the
#: guesses they read.
THEOREM = f"{registry.SPLIT.name}{registry.Z_STAR}"
PURE_THEOREM = f"{registry.PURE.name}{registry.Z_STAR}"
#: The theorems whose record name is the box's own (``theorem``: with the set-valued weights where they apply).
_OWN = (registry.SPLIT, registry.PURE)


class OneRunBound:
    """count_bound(profile, p*, confidence) with p*_i the prior success of the a-priori guess z*."""

    name = "one_run"

    def __init__(self, designated: bool = False, groups: int = MAX_GROUPS) -> None:
        """``designated``: add Theorems 5 and 6 (Theorem 4 with the law of the likeliest values, THEORY.md section 10)
        to the minimum where they apply (one exact guess, each target's prior known; Theorem 5 up to
        designated_run.DESIGNATED_RUN_MAX_TARGETS = 200 targets, Theorem 6 at any n with no work budget); tighter on
        skewed priors, seconds to minutes a count, so off by default (Theorem 6 joins by default above
        marginal_run.MARGINAL_RUN_DEFAULT_FROM = 200 targets, within marginal_run.WORK). ``groups``: Theorem 4 keeps
        at most this many groups of targets with their own constraints; on priors that differ (the tabular games) more
        are tighter and slower."""
        self.designated = check_designated(designated)
        self.groups = check_groups(groups)

    def compute(self, profile, prior, metric, trials, confidences) -> dict[float, int]:
        """{confidence: c}: with probability >= confidence at most c targets are attacked (trials give only k).

        trials: PlayedTrials or guesses (R, n, k) (stages.bound.box).
        """
        return self.compute_theorems(profile, prior, metric, trials, confidences)[0]

    def compute_theorems(self, profile, prior, metric, trials, confidences) -> tuple[dict[float, int], dict[float, str]]:
        """({confidence: c}, {confidence: the theorem that gave c}): the smallest count over every theorem that
        applies (stages.bound.theorems.count_bounds), the whole-prior theorem among them when success is one
        exact guess and the prior gives each target's distribution."""
        k = guesses_per_target(trials)
        p_star = prior.success_probability(prior.a_priori_guess(metric, k), metric)
        info = self.theorem(profile, prior, metric, trials)
        # set-valued success reads the whole prior only with the success sets' largest size (THEORY.md, Lemma 4')
        dists = prior_distributions(prior) if info.get("set_size", 1) is not None else None
        return self.counts(profile, p_star, confidences, info, prior_collision(prior), dists)

    def counts(self, profile, p_star, confidences, info: dict, collision=None, distributions=None):
        """({confidence: c}, {confidence: theorem}) for prior successes p_star under the theorem ``info``
        (``theorem`` / ``theorem_for`` say whether success is set-valued, and for set-valued success the sets'
        largest size ``set_size``), with each target's whole prior (``distributions``) where known."""
        levels = as_confidences(confidences)
        set_valued = info["set_valued"]
        whole = distributions is not None
        counts, by = count_bounds(profile, p_star if (set_valued or not whole) else None, levels,
                                  distributions=distributions, set_valued=set_valued,
                                  collision=collision if set_valued else None,
                                  set_size=info.get("set_size") if (set_valued and whole) else None,
                                  designated=self.designated, groups=self.groups)
        # the record's own names: the split theorem / Theorem 3.1 as ``theorem`` names them (with their suffixes)
        own = {t.name for t in _OWN}
        names = {name: info["theorem"] if name in own else name for name in by}
        return count_dict(levels, counts), {float(c): names[w] for c, w in zip(levels, winner(by))}

    def theorem(self, profile, prior, metric, trials) -> dict:
        """{"theorem", "set_valued", "reason", "version"}: the split one-run theorem (Theorem 3.1 if eps-DP)."""
        return self.theorem_for(profile, metric, guesses_per_target(trials), getattr(prior, "domain_size", None),
                                getattr(prior, "n_targets", None))

    def theorem_for(self, profile, metric, k: int, domain_size: int | None, n_targets: int | None = None) -> dict:
        """The theorem for k guesses per target scored by ``metric`` on a domain of ``domain_size`` values (``n_targets``
        of them, where known); with one exact guess the whole-prior theorem joins the minimum (``candidates``) where the
        prior gives distributions."""
        out = bound_theorem(profile, metric, k, domain_size, THEOREM, PURE_THEOREM)
        out["version"] = DEFAULT_BOUND_VERSION  # the minimum over the theorems that apply (THEORY.md)
        set_valued = out["set_valued"]
        if set_valued:
            # Theorem 3 with success sets of at most set_size values (Lemma 4'), where the size is known
            out["set_size"] = success_set_size(metric, k, domain_size)
        size = out["set_size"] if set_valued else 1
        # the theorems that may join: the priors and n are known only when the counts are computed
        prospect = registry.Setting(for_game(profile, "reconstruction"), p=registry.ANY,
                                    distributions=registry.ANY if size is not None else None, set_valued=set_valued,
                                    set_size=size, designated=self.designated, groups=self.groups,
                                    n_targets=n_targets)
        own = {t.name for t in _OWN}
        return record_candidates(out, registry.REGISTRY.candidates(prospect),
                                 lambda t: out["theorem"] if t.name in own else t.name, self.groups)

    def params(self) -> dict:
        return {"bound": self.name, "designated": self.designated, "groups": self.groups}
