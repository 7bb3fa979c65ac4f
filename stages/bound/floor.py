"""The other end of the bracket: counts that a real mechanism with the privacy profile lets a real attack reach.

Every bound in this package is an upper bound on the worst case over all mechanisms with a privacy profile. This
module computes a lower bound on that same worst case: a concrete mechanism that satisfies the profile, an attack on
it, and the exact law of the attack's count. The worst case lies between the two, so a researcher sees how much of a
bound is the theorem's slack and how much is the mechanism's reach (THEORY.md section 11).

The mechanism (``floor_mixture``, Lemma 7) draws and releases a coin j with probability w_j, then applies component j
to every target independently: a product of per-target class mechanisms (the m likeliest values are classes of their
own, every other value joins "rest"), each releasing the class through randomized response at eps0, randomized
response revealing the class with probability d, or the Gaussian simplex at mu' (mu-GDP), or releasing every secret or
nothing. The coin correlates the targets, so the count's upper quantiles spread as the theorems allow. The weights are
a linear program per count, certified below the profile's delta(eps) between grid points. The attack reads the coin
and guesses each target's value of largest posterior.

This module holds the public entry points (among them the single product mechanisms: ``floor_success``,
``floor_successes``, per target the best member, Lemma 6; ``rr_epsilon``); ``_floor_product.py`` the product
mechanisms' machinery, which ``floor_mixture.py`` (the mixture and its program) reads too.

The count at confidence c is the largest v with Pr[N >= v] > 1 - c (certified, computed on the low side): any bound
at confidence c that holds for every mechanism with the profile is at least it.
"""
from __future__ import annotations

import numpy as np

from . import _validate
from ._floor_product import (_confidences, _members, _product, _profile_low, _replace_one, _rr_epsilon, _true_priors,
                             low_tail)
from ._floor_product import MAX_CLASSES  # noqa: F401  (read from this module by tests/stages/bound/test_floor.py)
from .floor_mixture import mixture_floor
from .profiles import DPSGD, PrivacyLossProfile, PrivacyProfile
from .whole_prior import Distributions

__all__ = ["FLOOR_MECHANISM", "counts_at", "floor_counts", "floor_mechanism", "floor_mixture", "floor_mixture_counts", "floor_success",
           "floor_successes", "low_tail", "rr_epsilon"]

#: The family of mechanisms and the attack (``floor_mechanism`` names the members a profile gets).
FLOOR_MECHANISM = ("the best certified mixture (a released coin) of product mechanisms, each a per-target class "
                   "mechanism (randomized response, randomized response revealing the class, the Gaussian simplex for "
                   "mu-GDP, the release of every secret or of nothing), its weights a linear program certified below the "
                   "profile's delta(eps) as computed (for an accountant's profile, DP-SGD or a DpEvent, the "
                   "accountant's pessimistic curve, an upper bound on the mechanism's exact one, not the mechanism's exact one), with the MAP attack given the coin (THEORY.md section 11)")


def rr_epsilon(profile: PrivacyProfile, classes: int = 2) -> float:
    """The largest eps0 (bisected to ~1e-12, capped at 20) at which randomized response over ``classes`` classes meets
    ``profile`` (its replace-one profile, as the bounds use): its delta_RR(eps) is at most the profile's delta(eps) at
    every eps >= 0, certified on a grid (on [g_k, g_{k+1}], delta_RR is at most its value at g_k, which is checked
    against the profile's least value there; above eps0 delta_RR is 0). delta_RR grows with eps0, so the certified
    eps0 form an interval and bisection finds its end. With two classes tanh(eps0 / 2) <= the profile's delta(0).

    Examples:
        >>> from stages.bound import ApproxDP
        >>> round(rr_epsilon(ApproxDP(1.0, 0.0)), 6)   # pure 1-DP: randomized response at 1, less one grid step
        0.999
    """
    m = _validate.integer("classes", classes, minimum=2) - 1
    return _rr_epsilon(_profile_low(_replace_one(profile)), m)


def floor_mechanism(profile: PrivacyProfile) -> str:
    """The family (``FLOOR_MECHANISM``) that ``profile`` gets, with its parameters, for every output; the mixture a
    game's floor uses (weights and parameters per confidence) is ``floor_mixture``'s record."""
    mem = _members(profile)
    rr = (f"randomized response over the m likeliest values and rest (every value read) at eps0 on a grid up to 20 "
          f"(alone: eps0 = {_rr_epsilon(mem.low, 1):.4g} for two classes, the largest whose hockey-stick curve is "
          f"certified below {mem.profile!r}'s delta(eps){_PESSIMISTIC if _pessimistic(mem.profile) else ''}"
          f"{_ASSUMED_MONOTONE if _function_given(mem.profile) else ''})")
    if mem.mu is not None:
        what = f"{rr}, and Gaussian simplex mechanisms with edge mu' <= mu = {mem.mu:.6g} (exactly mu-GDP at mu' = mu)"
    elif mem.approx is not None and mem.approx[1] > 0:
        what = (f"{rr}, randomized response revealing the class with probability delta = {mem.approx[1]:.3g} (at eps = "
                f"{mem.approx[0]:.6g} exactly (eps, delta)-DP), and the release of every secret (weight at most delta)")
    else:
        what = rr
    return (f"a certified mixture, by a released coin, of products of per-target {what}, or nothing; with the MAP "
            "attack given the coin (THEORY.md section 11)")


#: What a label adds for a profile read off an accountant (``_pessimistic``).
_PESSIMISTIC = (" as dp_accounting computes it: its pessimistic curve, an upper bound on the mechanism's exact one, so "
                "this member is certified below the accountant's curve, not the exact one")


#: What a label adds for a profile given as a user's function of eps (``_function_given``): the grid check holds between
#: grid points only where the curve does not rise there (THEORY.md section 11, Lemma 6), which no finite set of
#: evaluations can check.
_ASSUMED_MONOTONE = (", a user's function read on a grid: certified on the assumption that it is non-increasing between "
                     "the grid's points, as every true privacy profile is")


def _function_given(profile: PrivacyProfile) -> bool:
    """Whether the profile's delta(eps) is a user's function (accountants.DeltaCurve, or group privacy over one)."""
    from .accountants import DeltaCurve, ReplaceOneByGroupPrivacy

    if isinstance(profile, ReplaceOneByGroupPrivacy):
        return _function_given(profile.add_remove)
    return isinstance(profile, DeltaCurve)


def _pessimistic(profile: PrivacyProfile) -> bool:
    """Whether the profile's delta(eps) is an accountant's pessimistic curve (a privacy-loss distribution: DPSGD with
    sample rate < 1, accountants.DpEventProfile, or group privacy over one) rather than the mechanism's exact one."""
    from .accountants import ReplaceOneByGroupPrivacy

    if isinstance(profile, ReplaceOneByGroupPrivacy):
        return _pessimistic(profile.add_remove)
    if isinstance(profile, DPSGD):
        return profile.full_batch_mu is None  # full batch: the exact GDP closed form
    return isinstance(profile, PrivacyLossProfile)


def floor_success(profile: PrivacyProfile, distribution) -> tuple[float, int]:
    """(success, m): the MAP attack's success on one target with prior ``distribution`` against the best class
    mechanism of the module's family (m: its number of singleton classes), at least the prior's largest
    probability (the attack that ignores the release)."""
    one = _validate.vector("distribution", distribution, what="one target's prior, probabilities",
                           fix="use floor_counts for many targets")
    succ, best_m = floor_successes(profile, Distributions.of([one], name="distribution"))
    return float(succ[0]), int(best_m[0])


def floor_successes(profile: PrivacyProfile, distributions) -> tuple[np.ndarray, np.ndarray]:
    """(success, m) per group of ``Distributions.of(distributions)`` (see ``floor_success``)."""
    return _successes(profile, _true_priors(distributions))


def _successes(profile: PrivacyProfile, dists: Distributions) -> tuple[np.ndarray, np.ndarray]:
    """``floor_successes`` of priors already checked by ``_true_priors``."""
    succ, best_m, _, _ = _product(_members(profile), dists.shapes)
    return succ, best_m


def counts_at(low: np.ndarray, confidences) -> list[int]:
    """For each confidence c the smallest k with low[k + 1] <= 1 - c (``low`` as ``low_tail`` gives it)."""
    levels = _confidences(confidences)
    return [int(np.flatnonzero(low[1:] <= 1.0 - c)[0]) for c in levels]



def floor_mixture(profile: PrivacyProfile, distributions, confidences, *, over_trials: bool = False):
    """The floor with the mechanism that reaches it (``floor_mixture.MixtureFloor``): for each confidence c the count,
    the certified Pr[N >= count] (> 1 - c) and the mixture (each component's kind, parameters, classes, weight,
    one-target successes and own count). ``.record()`` is what metrics.json's worst_case_floor holds. With
    ``over_trials``, ``distributions`` is one per trial and the law is their mixture's (``floor_mixture_counts``)."""
    _confidences(confidences)  # refused before any work
    return mixture_floor(profile, list(distributions) if over_trials else [distributions], confidences)


def floor_counts(profile: PrivacyProfile, distributions, confidences) -> list[int]:
    """For each confidence c, the largest v at which a real mechanism with ``profile`` lets the MAP attack get at
    least v targets right with probability above 1 - c (the best certified mixture of product mechanisms, THEORY.md
    section 11): no count bound valid at c is below it. The law is computed on the low side."""
    return floor_mixture(profile, distributions, confidences).counts


def floor_mixture_counts(profile: PrivacyProfile, runs, confidences) -> list[int]:
    """``floor_counts`` for the mixture of R trials, each with its own targets' priors (``runs``: one
    ``distributions`` per trial, the same number of targets): one mixture (the same weights in every trial) whose count
    law is the mean of the trials' laws, as for the bounds over the trials (Theorem 2, Corollaries 3.1 and 4.1), so no
    bound on the mixture's count is below it."""
    return floor_mixture(profile, runs, confidences, over_trials=True).counts
