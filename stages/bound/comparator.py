"""Bound box `comparator`: a prior-work bound (stages.bound.prior_work) as a count bound in our game.

Every comparator is fed p* (the prior success of the a-priori guess z*, with as many guesses per
target as the attack makes) and the mechanism's privacy profile, translated into the privacy
description its paper uses:

* `mmc`, `steinke`: one-run tail bounds Pr[#attacked >= v] of their own (uniform priors 1/k, and
  1/2, only). Steinke's count is refused for n > 1 targets: exact DP mechanisms beat it
  (stages.bound.best.STEINKE_COUNT_REASON); at one target it is a valid success bound.
* `kgk`, `rero`, `narcissus`, `stock`, `cherubin`: bounds s_i on one target's success probability.
  Their papers say nothing about how successes on different targets combine, so the tail uses only
  what they give, E[#attacked] <= sum_i s_i, and Markov's inequality: Pr[#attacked >= v] <= sum_i s_i / v.
  For one target this is exactly "success <= s".

Counts read as in stages.bound.theorems.count_bound: the smallest c with Pr[#attacked >= c + 1]
<= 1 - confidence, i.e. "with probability >= confidence the attack succeeds on at most c targets".

Where a comparator needs a fixed (eps, delta) and the profile is a curve, each eps on a grid gives a
valid bound and the smallest one is kept.

The pipeline's games are reconstruction games: a target's secret is its record (or part of it), and
changing it replaces the record. So every comparator gets the replace-one profile of the mechanism
(an add/remove DP-SGD profile is re-accounted for replace-one first: stages.bound.profiles.for_game).
That is what makes `mmc` and `steinke` valid here: with an add/remove profile, MMC's k > 2 game and
Steinke's Theorem 5.2 cover only membership games (canaries added or removed); with the replace-one
profile, MMC's k-ary game and Steinke's binary game (p = 1/2) are reconstruction games in the paper's
encoding. For membership games use stages.bound.best.best_bound(..., game="membership").
"""
from __future__ import annotations

import numpy as np

from stages.bound import prior_work
from stages.bound.box import as_confidences, count_dict, guesses_per_target, set_valued_success
from stages.bound.profiles import DPSGD, ApproxDP, GaussianDP, PureDP, for_game

__all__ = ["ComparatorBound", "COMPARATORS"]

COUNT_COMPARATORS = ("mmc", "steinke")
TARGET_COMPARATORS = ("kgk", "rero", "narcissus", "stock", "cherubin")
COMPARATORS = COUNT_COMPARATORS + TARGET_COMPARATORS
_EPS_GRID = np.concatenate([[0.0], np.geomspace(1e-3, 60.0, 241)])
_RDP_ORDERS = 1.0 + 2.0 ** (np.arange(-80, 81) / 8.0)


def _eps_delta_pairs(profile) -> list[tuple[float, float]]:
    """(eps, delta) pairs the profile satisfies: its own for (approximate) DP, else a grid of its curve."""
    if isinstance(profile, ApproxDP):
        return [(profile.eps, profile.delta_)]
    deltas = np.asarray(profile.delta(_EPS_GRID), dtype=float)
    return [(float(e), float(d)) for e, d in zip(_EPS_GRID, deltas) if d < 1.0]


def _renyi(profile, name: str) -> dict:
    """The Renyi description rero_bound and stock_bound take: eps for pure DP, rho or rdp otherwise."""
    if isinstance(profile, GaussianDP):
        return {"rho": profile.mu**2 / 2.0}  # mu-GDP is (mu^2 / 2)-zCDP
    if isinstance(profile, PureDP):
        if name == "rero":
            return {"eps": profile.eps}
        # eps-DP is (alpha, eps)-RDP and (eps^2 / 2)-zCDP (Bun and Steinke 2016, Proposition 3.3).
        return {"rdp": (_RDP_ORDERS, np.minimum(profile.eps, _RDP_ORDERS * profile.eps**2 / 2.0))}
    raise ValueError(
        f"comparator {name} needs a pure-DP or Gaussian-DP mechanism, got profile {profile!r}; pick another comparator."
    )


def _success_bounds(name: str, profile, p: np.ndarray) -> np.ndarray:
    """Per-target success probability bounds s_i of a one-target comparator."""
    if name == "kgk":
        return np.asarray(prior_work.kgk_bound(profile, p), dtype=float)
    if name in ("rero", "stock"):
        function = prior_work.rero_bound if name == "rero" else prior_work.stock_bound
        return np.asarray(function(p, **_renyi(profile, name)), dtype=float)
    if name == "narcissus":
        return np.min([np.asarray(prior_work.narcissus_bound(e, d, p)) for e, d in _eps_delta_pairs(profile)], axis=0)
    if name == "cherubin":
        if not isinstance(profile, DPSGD):
            raise ValueError(f"comparator cherubin needs a DP-SGD mechanism, got profile {profile!r}; pick another comparator.")
        return np.asarray(
            prior_work.cherubin_bound(profile.noise_multiplier, profile.sample_rate, profile.steps, p), dtype=float
        )
    raise AssertionError(name)


def _markov_count(total: float, n: int, levels: np.ndarray) -> np.ndarray:
    """Smallest c in 0..n with total / (c + 1) <= 1 - confidence: Markov on E[#attacked] <= total."""
    return np.clip(np.ceil(total / (1.0 - levels)) - 1, 0, n).astype(np.int64)


def _count_from_tail(tail, n: int, levels: np.ndarray) -> np.ndarray:
    """Smallest c in 0..n with tail(c + 1) <= 1 - confidence, for a tail nonincreasing in v (tail(n + 1) = 0)."""
    cache = {n + 1: 0.0}

    def t(v: int) -> float:
        if v not in cache:
            cache[v] = float(tail(v))
        return cache[v]

    out = []
    for level in levels:
        lo, hi = 0, n  # c = hi always passes; search the smallest passing c
        while lo < hi:
            mid = (lo + hi) // 2
            if t(mid + 1) <= 1.0 - level:
                hi = mid
            else:
                lo = mid + 1
        out.append(lo)
    return np.asarray(out, dtype=np.int64)


class ComparatorBound:
    """The count bound of one prior-work comparator: name is one of COMPARATORS."""

    name = "comparator"

    def __init__(self, name: str = "kgk") -> None:
        if name not in COMPARATORS:
            raise ValueError(f"name must be one of {list(COMPARATORS)}, got {name!r}.")
        self.comparator = name

    def compute(self, profile, prior, metric, guesses, confidences) -> dict[float, int]:
        """{confidence: c} for p* = prior success of z*; guesses give only k (guesses per target).

        The game is a reconstruction game, so the replace-one profile is used (see the module docstring).
        """
        profile = for_game(profile, "reconstruction")
        k = guesses_per_target(guesses)  # guesses: PlayedTrials or (R, n, k)
        levels = as_confidences(confidences)
        p_star = np.asarray(prior.success_probability(prior.a_priori_guess(metric, k), metric), dtype=float)
        n = p_star.size
        if self.comparator == "mmc":
            counts = _count_from_tail(lambda v: prior_work.mmc_tail_bound(profile, p_star, v), n, levels)
        elif self.comparator == "steinke":
            if n > 1:
                from stages.bound.best import STEINKE_COUNT_REASON
                raise ValueError(f"bound.name must not be steinke for n = {n} targets: {STEINKE_COUNT_REASON}; use "
                                 "bound=one_run, or bound.name=mmc or kgk.")
            pairs = _eps_delta_pairs(profile)
            counts = np.min(
                [_count_from_tail(lambda v: prior_work.steinke_tail_bound(e, d, p_star, v), n, levels) for e, d in pairs],
                axis=0,
            )
        else:
            total = float(np.sum(_success_bounds(self.comparator, profile, p_star)))
            counts = _markov_count(total, n, levels)
        return count_dict(levels, counts)

    def theorem(self, profile, prior, metric, guesses) -> dict:
        """{"theorem", "set_valued", "reason"} for the run's log and metrics.json.

        kgk, narcissus, rero and stock bound the probability of any success event from its prior
        probability, so they hold for set-valued success (k > 1 guesses, metric=within) too; mmc,
        steinke and cherubin score one exact guess among candidates, and for set-valued success their
        count is reported with that caveat (stages.bound.best lists them as not applicable there).
        """
        set_valued = set_valued_success(metric, guesses_per_target(guesses), getattr(prior, "domain_size", None))
        if not set_valued:
            reason = "one exact guess per target"
        elif self.comparator in ("mmc", "steinke", "cherubin"):
            reason = (f"success is set-valued, and {self.comparator}'s game scores one exact guess among candidates: "
                      "its validity for set-valued success is not shown (use kgk)")
        else:
            reason = f"success is set-valued; {self.comparator} bounds any success event from its prior probability"
        return {"theorem": f"comparator {self.comparator}", "set_valued": set_valued, "reason": reason}

    def params(self) -> dict:
        return {"bound": self.name, "comparator": self.comparator}

