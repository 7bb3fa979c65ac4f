"""Bound box `pure_dp`: Theorem 3.1, the bound conditional on the release, for eps-DP mechanisms.

Theorem 3.1 of Swanberg, Annamalai, Hayes, Balle, Smith, "A Unified Framework for Adversary-Aware Differential
Privacy Bounds" (arXiv:2507.08158).

Given the release a and the attack's actual guesses z = A(a), the number of attacked targets is
dominated by a sum of Bernoulli(beta_i) with beta_i = e^eps / (e^eps - 1 + 1 / p_i) and
p_i = Pr_{X ~ D_i}[l_i(X, z_i) = 1], so each trial has its own bound. The theorem record also gives
that sum's expectation, sum_i beta_i, averaged over the trials (`expected`; experiment=rr_tightness
compares it with the attack's exact expectation).
"""
from __future__ import annotations

import numpy as np

from stages.bound.box import as_confidences, bound_theorem, count_dict, guesses_per_target, played_trials
from stages.bound.theorems import beta, pure_dp_count_bound, pure_epsilon_of

__all__ = ["PureDPBound"]


def pure_epsilon(profile) -> float:
    """The eps of an eps-DP profile (PureDP, or ApproxDP with delta = 0), raising for any other profile.

    Examples:
        >>> from stages.bound import GaussianDP, PureDP
        >>> pure_epsilon(PureDP(2.0))
        2.0
        >>> pure_epsilon(GaussianDP(1.0))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: bound=pure_dp needs an eps-DP mechanism (profile PureDP), got GaussianDP(mu=1.0); use bound=one_run ...
    """
    eps = pure_epsilon_of(profile)
    if eps is None:
        raise ValueError(
            f"bound=pure_dp needs an eps-DP mechanism (profile PureDP), got {profile!r}; "
            "use bound=one_run or bound=expected for approximate or Gaussian DP."
        )
    return eps


class PureDPBound:
    """pure_dp_count_bound(eps, p, confidence) with p the prior success of each trial's actual guesses.

    Examples:
        The theorem it applies, for 100 guesses of prior success 0.1 each under 1-DP: each target is attacked
        with probability at most beta(1, 0.1), and the count is that Bernoulli sum's tail.

        >>> from stages.bound import beta, pure_dp_count_bound
        >>> round(float(beta(1.0, 0.1)), 4)
        0.232
        >>> pure_dp_count_bound(1.0, [0.1] * 100, [0.05, 0.5, 0.95])
        array([16, 23, 30])
    """

    name = "pure_dp"

    def check_profile(self, profile) -> None:
        """Refuse, before any trial is played, a mechanism that is not eps-DP (the game calls this first)."""
        pure_epsilon(profile)

    def compute_per_trial(self, profile, prior, metric, trials, confidences) -> dict[float, list[int]]:
        """{confidence: [c_1, ..., c_R]}: the count bound conditional on each trial's release.

        trials: PlayedTrials or guesses (R, n, k) (stages.bound.box); each trial's groups go to the theorem.
        """
        eps = pure_epsilon(profile)
        levels = as_confidences(confidences)
        played = played_trials(prior, metric, trials)
        per_trial = np.stack(
            [np.broadcast_to(pure_dp_count_bound(eps, played.priors(r), levels), levels.shape)
             for r in range(len(played))],
            axis=1,
        )
        return {float(c): [int(v) for v in row] for c, row in zip(levels, per_trial)}

    def compute(self, profile, prior, metric, trials, confidences) -> dict[float, int]:
        """{confidence: c}: the largest per-trial bound, which holds for every trial (exact for one trial)."""
        per_trial = self.compute_per_trial(profile, prior, metric, trials, confidences)
        levels = np.asarray(list(per_trial), dtype=float)
        return count_dict(levels, [max(v) for v in per_trial.values()])

    def expected(self, profile, prior, metric, trials) -> float:
        """sum_i beta(eps, p_i) averaged over the trials: the expected count of Theorem 3.1's Bernoulli sum."""
        eps = pure_epsilon(profile)
        played = played_trials(prior, metric, trials)
        per_trial = [np.sum(counts * beta(eps, values)) for values, counts in map(played.groups, range(len(played)))]
        return float(np.mean(per_trial))


    def compute_theorems(self, profile, prior, metric, trials, confidences) -> tuple[dict[float, int], dict[float, str]]:
        """({confidence: c}, {confidence: the theorem that gave c}): this box has one theorem (``theorem``)."""
        counts = self.compute(profile, prior, metric, trials, confidences)
        name = self.theorem(profile, prior, metric, trials)["theorem"]
        return counts, {c: name for c in counts}
    def theorem(self, profile, prior, metric, trials) -> dict:
        """{"theorem", "set_valued", "reason", "version"}: Theorem 3.1, valid for every success metric (set-valued
        too); for an eps-DP profile also `expected` (see `expected`) and `expected_trials`, the trials it averages."""
        out = bound_theorem(profile, metric, guesses_per_target(trials), getattr(prior, "domain_size", None),
                            "pure_dp (Theorem 3.1)")
        if pure_epsilon_of(profile) is not None:
            played = played_trials(prior, metric, trials)
            out.update(expected=self.expected(profile, prior, metric, played), expected_trials=len(played))
        return out

    def params(self) -> dict:
        return {"bound": self.name}
