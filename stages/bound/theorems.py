"""The theorems of the paper, turning (privacy guarantee, prior success) into bounds on attack success.

The paper: Swanberg, Annamalai, Hayes, Balle, Smith, "A Unified Framework for Adversary-Aware Differential
Privacy Bounds" (arXiv:2507.08158); the theorems that replace its one-run theorem, with proofs, are in
stages/bound/THEORY.md. Notation follows the paper: ``p[i]`` is the prior success probability of target i (the
chance that a fresh record from D_i counts as attacked by the guess), ``beta`` the per-target posterior cap,
``v`` a number of successes, ``S* = sum_i Bern(beta_i)``.

* ``beta``                Theorem 3.1's flipping probability e^eps / (e^eps - 1 + 1/p).
* ``pure_dp_tail``        Theorem 3.1 (pure DP, conditional on the release).
* ``tail_bound``          the split one-run theorem for (eps, delta)/f-DP with the a-priori Bayes-optimal guess
                          (THEORY.md, Theorem 1; it replaces the paper's one-run theorem and Steinke, Nasr &
                          Jagielski's Thm 5.2, arXiv:2305.08846), minimised over eps; with each target's whole
                          prior, Theorem 3 joins; on priors 1/k, MMC's bound (arXiv:2410.22235).
* ``expected_tail``       Theorem 3.2 (and Cor. "approx_simple"): beta from R runs of the mechanism.
* ``count_bound``         at most c successes with probability >= confidence.
* ``success_bound``, ``advantage_bound``, ``eps_protect``, ``calibrate_noise``: single-target views.
* ``Priors``              the n targets' prior successes grouped (distinct values, counts, collision
                          probabilities per group): every theorem taking ``p`` (n,) takes it too.

The searches over each theorem's free parameters (eps, J, the whole prior's threshold t, and count_bound's
search over (v, eps)) are ``search``'s; the priors and the per-target quantities at one eps are ``priors``'s. Which
theorems apply and their minimum (``tail_bound``, ``count_bounds``, ``expected_tail``, ``expected_count_bounds``, and
at a fixed eps ``pure_dp_tail``, ``pure_dp_count_bound``, ``tail_bound_at``) are ``registry``'s: every theorem is one
object there, with its name, numbers and operations.
"""
from __future__ import annotations

import math

import numpy as np

from stages._bisect import NOISE_RTOL, bisect, double_until, smallest_noise

from . import _validate, prior_run, registry, whole_prior  # noqa: F401 (whole_prior: T.whole_prior in callers)
from .priors import Distributions, Priors, beta, budget_weights, grouped, pure_tail
from .profiles import DPSGD, GAMES, ApproxDP, ComposedGaussian, PrivacyProfile, for_game, pure_epsilon_of
from .search import EPS_CEILING, OneRun, minimise_over_eps

__all__ = [
    "Priors", "beta", "budget_weights", "pure_epsilon_of", "EPS_CEILING",
    "pure_dp_tail", "pure_dp_count_bound", "tail_bound", "tail_bound_at", "split_tail_bound",
    "count_bound", "count_bounds", "winner", "expected_tail", "expected_count_bound", "expected_count_bounds",
    "EXPECTED_THEOREM", "EXPECTED_WHOLE_PRIOR_THEOREM", "EXPECTED_PRIOR_RUN_THEOREM", "EXPECTED_BOUND_VERSION",
    "success_bound", "advantage_bound", "eps_protect", "calibrate_noise",
    "SPLIT_THEOREM", "SPLIT_THEOREM_VERSION", "DEFAULT_BOUND_VERSION", "MMC_THEOREM", "MMC_MAX_TARGETS",
    "PURE_THEOREM",
]


# --------------------------------------------------------------------------------------------
# argument handling
# --------------------------------------------------------------------------------------------
#: The name and version of the theorem behind every non-pure bound here, recorded in metrics.json so
#: results computed under the paper's (invalid) one-run theorem can be told apart (registry.SPLIT).
SPLIT_THEOREM = registry.SPLIT.name
SPLIT_THEOREM_VERSION = registry.SPLIT_THEOREM_VERSION
#: The version of the default bound (the one_run box, count_bound): 2 = Theorem 1 alone; 3 = the minimum over
#: Theorem 1 (version 2), Theorem 3 (the whole prior, whole_prior.WHOLE_PRIOR_VERSION) and Theorem 3.1; 4 = also
#: Theorem 4 (MMC's one-run argument with the whole prior, prior_run.PRIOR_RUN_VERSION) at every n.
DEFAULT_BOUND_VERSION = 4
#: Theorem 2 (the expected box) and Corollaries 3.1 and 4.1 (Theorems 3 and 4 averaged over the trials).
EXPECTED_THEOREM = registry.EXPECTED.name
EXPECTED_WHOLE_PRIOR_THEOREM = registry.EXPECTED_WHOLE_PRIOR.name
EXPECTED_PRIOR_RUN_THEOREM = registry.EXPECTED_PRIOR_RUN.name
#: The expected box's version: 1 = Theorem 2 alone; 2 = with the targets' whole priors (one exact guess), the minimum
#: of Theorem 2 and, for one prior shared by every trial, count_bounds' theorems (a bound on every trial is one on
#: their mixture), for a prior per trial, Theorems 3 and 4 over the trials (THEORY.md sections 8 and 9).
EXPECTED_BOUND_VERSION = 2


def _check_set_valued(set_valued) -> bool:
    return _validate.boolean("set_valued", set_valued)


def _check_set_size(set_size, set_valued: bool) -> int | None:
    """The most values a success set holds, for Theorem 3 with set-valued success (Lemma 4'): 1 for one exact
    guess; for set-valued success the given size, or None (then the whole prior is not used: Theorem 3 needs it)."""
    if set_size is None:
        return None if set_valued else 1
    k = _validate.integer("set_size", set_size, minimum=1)
    if not set_valued and k != 1:
        raise ValueError(f"set_size must be None or 1 for one exact guess (set_valued=False), got {set_size!r}; pass "
                         "set_valued=True for success sets of more than one value.")
    return k


def _profile(profile, game: str = "reconstruction") -> PrivacyProfile:
    """The profile checked and made valid for ``game`` (an add/remove profile becomes replace-one
    in a reconstruction game: see ``profiles.for_game``)."""
    if not isinstance(profile, PrivacyProfile):
        raise ValueError(
            f"profile must be a PrivacyProfile (PureDP, ApproxDP, GaussianDP, DPSGD, ComposedGaussian), got {profile!r}."
        )
    return for_game(profile, game)



# --------------------------------------------------------------------------------------------
# Theorem 3.1: pure DP, conditional on the release
# --------------------------------------------------------------------------------------------
def pure_dp_tail(eps, p=None, v=None, *, distributions=None) -> float:
    """Theorem 3.1: Pr[successes >= v | release] <= Pr[sum_i Bern(beta_i(eps, p_i)) >= v].

    With ``distributions`` (each target's whole prior; p may then be None for one exact guess) the
    whole-prior theorem for PureDP(eps) (THEORY.md, Theorem 3) joins and the smaller bound is returned
    (that one is over the release, not conditional on it).

    ``p`` is the prior success of the attack's *actual* guesses for this release (an array (n,), or
    ``Priors``). ``eps`` is the
    mechanism's replace-one eps (the theorem replaces target i's record); an eps quoted for add/remove
    neighbours implies replace-one 2 eps (``profiles.replace_one_from_add_remove``).
    """
    e = float(_validate.positive("eps", eps, allow_zero=True, allow_inf=True))
    if v is None:
        raise ValueError("v must be given (a number of successes), got None.")
    g, dists = _targets_priors(p, distributions, False)
    v = _validate.integer("v", v)
    # every registered theorem that evaluates at a fixed eps, for an eps-DP mechanism known by eps alone (no profile:
    # Theorem 3.1 at eps; with the whole priors Theorem 3 for ApproxDP(eps, 0), finite eps)
    return registry.REGISTRY.minimum(registry.Setting(None, g, dists), "tail", v, at=e).value


def pure_dp_count_bound(eps, p=None, confidence=0.95, *, distributions=None):
    """Theorem 3.1 as a count: the smallest c with pure_dp_tail(eps, p, c + 1) <= 1 - confidence.

    With ``distributions`` the whole-prior theorem's count for PureDP(eps) joins and the smaller is returned.
    """
    e = float(_validate.positive("eps", eps, allow_zero=True, allow_inf=True))
    g, dists = _targets_priors(p, distributions, False)
    conf = _validate.confidence("confidence", confidence)
    # pure_dp_tail's theorems (registry), as counts
    setting = registry.Setting(None, g, dists)
    out = registry.REGISTRY.minimum(setting, "counts", np.atleast_1d(conf).ravel(), at=e).value
    return int(out[0]) if conf.ndim == 0 else out.reshape(conf.shape)


# --------------------------------------------------------------------------------------------
# The one-run theorem for (eps, delta) / f-DP profiles (its search over eps: search.OneRun, minimise_over_eps)
# --------------------------------------------------------------------------------------------
def tail_bound_at(profile, p, v, eps, *, distributions=None, game: str = "reconstruction", set_valued: bool = False,
                  collision=None) -> float:
    """The split one-run theorem at a fixed eps (no minimisation over eps):

    min_{J >= 0} (sum_{i=0}^{J} Pr[S*_eps >= v - i] + delta(eps) sum_i w_i(eps)) / (J + 1).

    For an eps-DP profile only eps >= the profile's eps is allowed (there delta(eps) = 0 and this is
    Theorem 3.1); below it the point is not a valid bound (see ``pure_epsilon_of``).
    ``p``, ``set_valued``, ``collision`` and ``distributions`` as in tail_bound; with ``distributions`` (one
    exact guess) the whole-prior theorem at thresholds q_i = beta(eps, p_i) joins (the smaller is returned).
    """
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    g, dists = _targets_priors(p, distributions, set_valued, collision)
    v = _validate.integer("v", v)
    e = float(_validate.positive("eps", eps, allow_zero=True, allow_inf=True))
    pure = pure_epsilon_of(profile)
    if pure is not None and e < pure:
        raise ValueError(f"eps must be >= the profile's eps = {pure!r} for {profile!r} (Theorem 3.1 holds at the "
                         f"profile's eps, the one-run point below it is not a valid bound), got {e!r}.")
    # every registered theorem that evaluates at a fixed eps (the split theorem; with the whole priors Theorem 3 at
    # t = eps, finite eps)
    setting = registry.Setting(profile, g, dists, set_valued, _check_set_size(None, set_valued), game)
    return registry.REGISTRY.minimum(setting, "tail", v, at=e).value


def tail_bound(profile, p=None, v=None, *, distributions=None, return_eps: bool = False, rtol: float = 1e-7,
               game: str = "reconstruction", set_valued: bool = False, collision=None, set_size=None):
    """The split one-run theorem (stages/bound/THEORY.md, Theorem 1): for every attack,

    Pr[successes >= v] <= min_{eps >= 0} min_{J >= 0} (sum_{i=0}^{J} Pr[S*_eps >= v - i] + m(eps)) / (J + 1)

    with S*_eps = sum_i Bern(beta(eps, p_i)), p_i the prior success of the a-priori Bayes-optimal
    guess z* (the largest prior mass of a success set of target i), and the budget
    m(eps) = delta(eps) sum_i w_i(eps) of "extra" successes: w_i = (1 - p_i) / (e^eps p_i + 1 - p_i)
    = 1 - beta_i for one exact guess, w_i = (1 - c_i) / (e^eps p_i + 1 - p_i) when success is
    set-valued (k > 1 guesses, a distance window), c_i = sum_x D_i(x)^2 the prior's collision
    probability (``collision``; None means 0, valid for every prior).

    ``p`` is the per-target array (n,) or the same grouped, ``Priors`` (which then carries the
    collision probabilities); a per-target array is grouped once, so both give the same bound.

    This replaces the paper's (arXiv:2507.08158) thm:eps_bound_approx_comp / f_comp and Steinke, Nasr &
    Jagielski's Thm 5.2 (arXiv:2305.08846), which exact DP mechanisms beat (THEORY.md, section 5). The J = 0 term is the additive
    form Pr[S* >= v] + m(eps); larger J spread the budget over the shortfall, which is the exact LP
    max Pr[S* + F >= v] over all couplings of S* with extra successes F, E[F] <= m.

    The objective is not unimodal in eps, so the outer minimum is found on a grid that resolves every
    valley (``search.OneRun.scan_grid``) and Brent's method in each valley, to ``rtol`` relative; the value
    returned is attained at the returned eps (a valid bound, never an interpolation).

    ``game``: "reconstruction" (the default; also attribute inference) or "membership" (X_i is a
    membership bit); in a reconstruction game an add/remove profile is replaced by the replace-one
    profile of the same mechanism (``profiles.for_game``), as the theorem compares datasets that
    differ by replacing target i's record.

    An eps-DP profile (PureDP, ApproxDP with delta = 0) gets Theorem 3.1 at its own eps instead
    (``pure_dp_tail``; returned eps = the profile's): valid for every success metric, whereas the scan
    over its curve's eps' < eps is not (``pure_epsilon_of``).

    ``distributions``: each target's whole prior (a 2-d array (n, d), a sequence of 1-d arrays, or
    ``priors.Distributions``). With them, for one exact guess, p may be None (p_i = max pi_i) and
    the whole-prior theorem (THEORY.md, Theorem 3) joins: the smaller bound is returned, and
    ``return_eps`` returns the winning theorem's parameter (eps for Theorems 1 and 3.1, the threshold
    parameter t for Theorem 3, nan for MMC's tail bound (Mahloujifar, Melis & Chaudhuri, arXiv:2410.22235),
    which joins for one exact guess on priors 1/k: stages/bound/MMC_CHECK.md, and nan for Theorem 4, MMC's argument
    with the whole prior, which joins with ``distributions`` for one exact guess at every n: THEORY.md section 9).

    ``set_size``: with ``set_valued=True`` and ``distributions``, the most values a target's success set holds (k
    guesses of windows of w values: k w); Theorem 3 then joins with Lemma 4' (THEORY.md section 8), its thresholds
    placed by the mass of the k largest probabilities. Without it set-valued success keeps Theorem 1 (p and the
    collision probabilities only).
    """
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    k = _check_set_size(set_size, set_valued)
    pure = pure_epsilon_of(profile)
    if v is None:
        raise ValueError("v must be given (a number of successes), got None.")
    # Theorem 3.1 needs no collision
    g, dists = _targets_priors(p, distributions, set_valued, collision, set_size=k, use_collision=pure is None)
    return_eps = _validate.boolean("return_eps", return_eps)
    v = _validate.integer("v", v)
    if v <= 0 or v > g.n:
        return _trivial_tail(v, return_eps)
    # every registered theorem that applies (one target on two values: Theorem 3's closed form alone, the exact
    # worst case; registry._two_values)
    best = registry.REGISTRY.minimum(registry.Setting(profile, g, dists, set_valued, k, game), "tail", v, rtol=rtol)
    return (best.value, best.parameter) if return_eps else best.value


def split_tail_bound(profile, p, v, *, return_eps: bool = False, rtol: float = 1e-7, game: str = "reconstruction",
                     set_valued: bool = False, collision=None):
    """Theorem 1 (the split theorem; Theorem 3.1 for an eps-DP profile) alone: ``tail_bound`` without the
    whole-prior theorem and MMC. Arguments as in tail_bound; the eps returned certifies the value
    (``tail_bound_at(profile, p, v, eps)`` gives it back)."""
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    pure = pure_epsilon_of(profile)
    g, _ = _targets_priors(p, None, set_valued, collision, use_collision=pure is None)
    return_eps = _validate.boolean("return_eps", return_eps)
    v = _validate.integer("v", v)
    if v <= 0 or v > g.n:
        return _trivial_tail(v, return_eps)
    value, best = _split_tail(profile, g, v, pure, set_valued, rtol)
    return (value, best) if return_eps else value


def _trivial_tail(v: int, return_eps: bool):
    """Pr[successes >= v] where no theorem is needed: 1 for v <= 0, 0 for v > n (eps 0)."""
    value = 1.0 if v <= 0 else 0.0
    return (value, 0.0) if return_eps else value


def _split_tail(profile, g: Priors, v: int, pure, set_valued: bool, rtol: float) -> tuple[float, float]:
    if pure is not None:
        return pure_tail(pure, g).value(v), pure
    return minimise_over_eps(OneRun(profile, g, set_valued), v, rtol)


# --------------------------------------------------------------------------------------------
# Counts: the smallest c with a bound <= 1 - confidence, the minimum over every theorem that applies
# --------------------------------------------------------------------------------------------
def count_bound(profile, p=None, confidence=0.95, *, distributions=None, game: str = "reconstruction",
                set_valued: bool = False, collision=None, set_size=None):
    """The smallest c with tail_bound(profile, p, c + 1) <= 1 - confidence, for each confidence: the smallest
    count over every theorem that applies (``count_bounds``, which also says which theorem gave each count).

    "With probability >= confidence, the attack succeeds on at most c of the n targets." Every
    count returned is certified by a point at which a proven bound is <= 1 - confidence (evaluated
    exactly), so it is valid whatever the searches do. The split theorem (Theorem 1): up to n = 1e4
    targets its search over eps (see search.count_search) evaluates the bound exactly and visits every valley
    tail_bound does, so c agrees with the definition; beyond, it runs on a normal approximation of S*
    and only the eps it ends at is evaluated exactly (``search._count_fast``), which may return c up to about
    one target above the definition (measured: at most 1 on Beta and uniform priors, n = 2e4 - 1e6;
    0.2 s at n = 1e5, 1-1.5 s at 1e6 for three confidences). ``p``, ``game``, ``set_valued`` and
    ``collision`` as in tail_bound (an add/remove profile is made replace-one for reconstruction; an
    eps-DP profile gets Theorem 3.1, ``pure_dp_count_bound``, at its own eps).

    ``distributions``: each target's whole prior (a 2-d array (n, d), a sequence of 1-d arrays, or
    ``priors.Distributions``); with them, for one exact guess, ``p`` may be None (p_i = max pi_i)
    and the whole-prior theorem (THEORY.md, Theorem 3) joins the minimum; for set-valued success it joins when
    ``set_size`` (the most values a success set holds) is given too (``tail_bound``).
    """
    counts, _ = count_bounds(profile, p, confidence, distributions=distributions, game=game, set_valued=set_valued,
                             collision=collision, set_size=set_size)
    return counts


def count_bounds(profile, p=None, confidence=0.95, *, distributions=None, game: str = "reconstruction",
                 set_valued: bool = False, collision=None, set_size=None, designated: bool = False,
                 groups: int = prior_run.MAX_GROUPS):
    """(counts, {theorem name: counts}): ``count_bound``'s counts and every applicable theorem's own.

    The theorems: Theorem 3.1 (eps-DP profiles), the split theorem (Theorem 1, every other profile), with
    ``distributions`` for one exact guess the whole-prior theorem (Theorem 3, skipped on uniform priors), and for
    one exact guess on priors 1/k (abstentions 0) MMC's one-run count (arXiv:2410.22235; checked step by step in
    stages/bound/MMC_CHECK.md; up to MMC_MAX_TARGETS guessed targets), and with ``distributions`` for one exact guess
    Theorem 4 (MMC's argument with each target's whole prior, THEORY.md section 9; at every n, through count blocks
    above 300 targets (Corollary 9.3), uniform priors included). ``counts`` is their
    minimum, per confidence; ``winner(by_theorem)`` names the theorem that gave it. Theorems 4, 5 and 6 are searched only
    below the theorems listed before them, so their entries are at most those theorems' minimum (equal to it where
    they certify nothing smaller; ``prior_run.prior_run_counts`` gives Theorem 4's own count). Shapes follow
    ``confidence`` (an int for a scalar). ``set_size``: as in ``tail_bound`` (Theorem 3 for set-valued success).
    Theorem 6 (Theorem 4 with the law of the likeliest values, summed over M; THEORY.md section 10) joins by default
    above marginal_run.MARGINAL_RUN_DEFAULT_FROM = 200 targets, its search within marginal_run.WORK. ``designated=True``
    adds Theorem 5 (up to designated_run.DESIGNATED_RUN_MAX_TARGETS targets) and Theorem 6 at any n with no budget
    (one exact guess, each target's prior known): tighter on skewed priors, but seconds to minutes a count.
    ``groups``: Theorem 4's LP keeps at most this many groups of targets with their own constraints
    (prior_run.MAX_GROUPS by default); on priors that differ, more groups are tighter and slower (THEORY.md section 9).
    """
    groups = prior_run.check_groups(groups)
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    k = _check_set_size(set_size, set_valued)
    pure = pure_epsilon_of(profile)
    g, dists = _targets_priors(p, distributions, set_valued, collision, set_size=k, use_collision=pure is None)
    designated = _validate.boolean("designated", designated)
    conf = _validate.confidence("confidence", confidence)
    confs = np.atleast_1d(conf).ravel()
    setting = registry.Setting(profile, g, dists, set_valued, k, game, designated=designated, groups=groups)
    best = registry.REGISTRY.minimum(setting, "counts", confs, memo=_COUNTS_MEMO)
    shape = lambda a: int(a[0]) if conf.ndim == 0 else np.array(a).reshape(conf.shape)
    return shape(best.value), {name: shape(v) for name, v in best.by.items()}


#: Each theorem's counts by what it reads (registry.Registry.minimum's memo): the same targets bounded again (an
#: attack's variants share the prior and the release's profile; the expected box's variants, the shared prior).
_COUNTS_MEMO: dict = {}


def winner(by_theorem: dict) -> list[str] | str:
    """The theorem giving the smallest value (per entry for arrays; the first listed wins a tie)."""
    names = list(by_theorem)
    vals = np.stack([np.atleast_1d(np.asarray(v, dtype=float)) for v in by_theorem.values()])
    best = [names[i] for i in np.argmin(vals, axis=0)]
    return best[0] if np.ndim(next(iter(by_theorem.values()))) == 0 else best


#: MMC's count (Mahloujifar, Melis & Chaudhuri, "Auditing f-Differential Privacy in One Run", arXiv:2410.22235) in the
#: theorem records, and the most guessed targets it runs on (registry.MMC, registry.mmc_applies).
MMC_THEOREM = registry.MMC.name
MMC_MAX_TARGETS = registry.MMC_MAX_TARGETS

#: Theorem 3.1's name in the theorem records (registry.PURE; the boxes add what they read: registry.Z_STAR ...).
PURE_THEOREM = registry.PURE.name


# --------------------------------------------------------------------------------------------
# Theorem 3: the whole prior (stages/bound/THEORY.md, section 8; search.WholePriorRun, whole_prior.py)
# --------------------------------------------------------------------------------------------
def _targets_priors(p, distributions, set_valued: bool, collision=None, name: str = "p", set_size: int | None = None,
                    use_collision: bool = True):
    """(the split theorem's Priors, the targets' whole priors as priors.Distributions or None).

    Without ``distributions`` this is ``grouped(p, collision)``. With them, for one exact guess p may be
    None (p_i = max pi_i is derived) or must agree with it; for set-valued success p is required (it
    depends on the success sets) and the collision probabilities come from the distributions.
    ``collision`` is checked against p (a probability no prior with that p has is refused) whether or not the
    theorem reads it: only set-valued success with ``use_collision`` (not Theorem 3.1) keeps it.
    """
    if distributions is None:
        if p is None:
            raise _validate.ArgumentError(name, f"{name} must be given (the targets' prior successes) unless "
                                                "distributions= gives their whole priors, got None.")
        g = grouped(p, collision, exact_guess=not set_valued)
        if g.collision is not None and not (set_valued and use_collision):
            g = Priors._unchecked(g.values, g.counts)
        return g, None
    dists = Distributions.of(distributions)
    if set_valued:
        if p is None:
            raise ValueError(f"{name} must be given for set-valued success (the prior mass of the best success set "
                             "depends on the metric), got None; pass p with distributions=.")
        # the split theorem's set-valued weights: each target's collision probability where given with p (paired
        # target by target), else the smallest of any target's (the pairing of p_i to distributions is unknown)
        g = grouped(p, collision) if collision is not None else grouped(p)
        _validate.same_targets(name, g.n, "distributions", dists.n)
        if collision is None or not use_collision:
            c = float(np.min(dists.collision))
            g = Priors._unchecked(g.values, g.counts, np.full(g.values.shape, c))
        # Theorem 3 reads the whole priors for set-valued success only with the sets' largest size (Lemma 4')
        return g, (dists if set_size else None)
    if collision is not None:
        raise _validate.ArgumentError("collision", f"collision must be None when distributions are given for one exact "
                                                   f"guess (it does not enter the bound), got {collision!r}.")
    derived = _derived(dists)
    if p is not None:
        g = grouped(p)
        _validate.same_targets(name, g.n, "distributions", derived.n)
        if g.values.shape != derived.values.shape or not (
                np.allclose(g.values, derived.values, rtol=1e-9, atol=1e-12) and np.array_equal(g.counts, derived.counts)):
            raise _validate.ArgumentError(name, f"{name} must be the largest probability of each target's distribution (one exact guess), "
                             f"got prior successes that differ from max(distribution); pass p=None to derive them.")
    return derived, dists


def _derived(dists: Distributions) -> Priors:
    """The prior successes of one exact a-priori guess, p_i = max pi_i, from the whole priors."""
    return Priors._unchecked(*_merge(dists.p, dists.counts))


def _merge(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, np.bincount(inverse, weights=counts, minlength=len(uniq)).astype(np.int64)


# --------------------------------------------------------------------------------------------
# Theorem 3.2: beta estimated from R runs of the mechanism
# --------------------------------------------------------------------------------------------
def _runs(p_runs) -> list[Priors]:
    """One Priors per run: from a sequence of Priors (or one), or an array (R, n) (or (n,), one run)."""
    if isinstance(p_runs, Priors):
        return [p_runs]
    if isinstance(p_runs, (list, tuple)) and p_runs and all(isinstance(r, Priors) for r in p_runs):
        runs = list(p_runs)
        _same_n([r.n for r in runs])
        return runs
    if isinstance(p_runs, (list, tuple)) and p_runs and all(_validate.ndim(r) == 1 for r in p_runs):
        _same_n([len(r) for r in p_runs])
    takes = "one prior success per target for each trial, shape (R, n) (or (n,) for one trial)"
    if _validate.ndim(p_runs) not in (1, 2) or np.size(p_runs) == 0:
        raise _validate.shape_error("p_runs", p_runs, takes)
    arr = _validate.probability("p_runs", p_runs)
    return [Priors._unchecked(*np.unique(row, return_counts=True)) for row in np.atleast_2d(arr)]


def _same_n(sizes: list[int]) -> None:
    """Refuse trials that attack different numbers of targets, naming them."""
    if len(set(sizes)) > 1:
        raise _validate.ArgumentError(
            "p_runs", f"p_runs must give every run the same number of targets n (every trial must attack the same n "
                      f"targets, one row of n prior successes per trial), got trials of different numbers of targets: "
                      f"{sizes}.")


def _run_distributions(distributions, runs: list[Priors]):
    """(one Distributions shared by every run, or None; one per run, or None) from expected_*'s ``distributions``.

    One prior for every run: a Distributions, a 2-d array (n, d) or a sequence of 1-d arrays (one per target). A
    prior per run: a 3-d array (R, n, d) or a sequence of R Distributions / 2-d arrays. Runs whose priors are all
    equal share them."""
    if distributions is None:
        return None, None
    per_run = None
    if _validate.ndim(distributions) == 3:
        per_run = list(distributions)
    elif isinstance(distributions, (list, tuple)) and distributions and all(
            isinstance(d, Distributions) or _validate.ndim(d) in (2, None) for d in distributions):
        per_run = list(distributions)  # each a set of targets' priors (None: rows of different lengths)
    n = runs[0].n
    if per_run is None:
        shared = Distributions.of(distributions)
        _validate.same_targets("distributions", shared.n, "p_runs", n, "distributions", "targets in each run")
        return shared, None
    if len(per_run) != len(runs):
        raise _validate.ArgumentError("distributions", f"distributions must give one prior per run ({len(runs)} runs) or one for all of them, got "
                         f"{len(per_run)}.")
    dists = [Distributions.of(d, name=f"distributions[{r}]") for r, d in enumerate(per_run)]
    for r, d in enumerate(dists):
        _validate.same_targets(f"distributions[{r}]", d.n, "p_runs", n, "distributions", "targets in each run")
    key = lambda d: (tuple(sh.key for sh in d.shapes), d.counts.tobytes())
    if len({key(d) for d in dists}) == 1:
        return dists[0], None
    return None, dists


def expected_tail(profile, p_runs, v, *, eps=None, distributions=None, game: str = "reconstruction",
                  set_valued: bool = False, set_size=None):
    """Theorem 3.2 (THEORY.md, Theorem 2), estimated from R runs of the mechanism:

    Pr[successes >= v] <= min_J (sum_{i=0}^{J} E_a[Pr[S*_eps(a) >= v - i]] + n delta(eps)) / (J + 1)

    with S*_eps(a) = sum_i Bern(beta(eps, p_i(a))), p_i(a) the prior success of the guess the attack
    made on target i for release a. The J = 0 term is the paper's form E[...] + n delta(eps). Valid for
    one exact guess and for set-valued success alike (the extra-success budget of each target is at
    most delta(eps) for every success metric).

    ``p_runs[r, i]`` is the prior success of the guess of run r on target i (or ``p_runs`` is one
    ``Priors`` per run, the same n targets each: the runs grouped); the expectation is
    replaced by the mean over runs, and ``(value, standard_error)`` is returned, the standard error
    that of the mean of the J = 0 tail at the eps found. eps is minimised like tail_bound's (every
    valley refined) unless given (the minimum of a noisy estimate is slightly optimistic; fix eps in
    advance for a strict test). An eps-DP profile uses its own eps only (Theorem 3.1 averaged over
    the runs); an ``eps`` below it is refused (see ``pure_epsilon_of``).

    ``distributions`` (one exact guess only): each target's whole prior, one for every run or one per run (as
    ``expected_count_bounds`` takes them); the value is then the smaller of Theorem 2's and, for one shared prior,
    ``tail_bound``'s with it (a bound on every run; standard error 0), for a prior per run, Theorem 3 averaged over
    the runs (standard error of the runs' own values at its t and J) and Theorem 4 over the runs (standard error 0). Without ``eps``.
    """
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    k = _check_set_size(set_size, set_valued)
    runs = _runs(p_runs)
    n = runs[0].n
    v = _validate.integer("v", v)
    shared, per_run = _run_distributions(distributions, runs)
    _check_expected_whole(shared, per_run, set_valued, k, eps)
    if v <= 0:
        return 1.0, 0.0
    if v > n:
        return 0.0, 0.0
    # Theorem 2, then for one shared prior tail_bound's theorems (a bound on every run: standard error 0), for a
    # prior per run Corollaries 3.1 and 4.1 (registry)
    best = registry.REGISTRY.minimum(_expected_setting(profile, runs, shared, per_run, set_valued, k, game), "tail",
                                     v, eps=eps)
    return float(best.value), best.standard_error


def _expected_setting(profile, runs, shared, per_run, set_valued: bool, k, game: str, designated: bool = False,
                      groups: int = prior_run.MAX_GROUPS) -> registry.Setting:
    """The expected_* functions' Setting: the runs, and one prior shared by every run (whose one exact a-priori guess
    the theorems of one release read) or a prior per run."""
    p = _derived(shared) if shared is not None and not set_valued else None
    return registry.Setting(profile, p, shared, set_valued, k, game, runs=tuple(runs),
                            per_run=None if per_run is None else tuple(per_run), designated=designated, groups=groups)


def expected_count_bound(profile, p_runs, confidence=0.95, *, distributions=None, game: str = "reconstruction",
                         set_valued: bool = False, set_size=None):
    """The smallest c with expected_tail(profile, p_runs, c + 1) <= 1 - confidence (an estimate).

    ``game`` and ``set_valued`` as in expected_tail; an eps-DP profile uses its own eps only. ``distributions``
    and ``set_size`` as in ``expected_count_bounds``, whose minimum this returns.
    """
    return expected_count_bounds(profile, p_runs, confidence, distributions=distributions, game=game,
                                 set_valued=set_valued, set_size=set_size)[0]


def _check_expected_whole(shared, per_run, set_valued: bool, set_size, eps) -> None:
    """expected_*'s whole priors need no fixed eps, and for set-valued success the sets' largest size."""
    if shared is None and per_run is None:
        return
    if eps is not None:
        raise ValueError(f"distributions= takes no fixed eps (the whole-prior theorem has its own threshold), got "
                         f"eps={eps!r}; drop one of them.")
    if set_valued and set_size is None:
        raise ValueError("distributions= with set_valued=True needs set_size= (the most values a success set holds: "
                         "THEORY.md, Lemma 4'), got None; pass set_size or drop distributions=.")


def expected_count_bounds(profile, p_runs, confidence=0.95, *, distributions=None, game: str = "reconstruction",
                          set_valued: bool = False, set_size=None, designated: bool = False,
                          groups: int = prior_run.MAX_GROUPS):
    """(counts, {theorem name: counts}): Theorem 2's counts over the runs and, with ``distributions`` (each target's
    whole prior; one exact guess only), the other theorems that bound the mixture of the runs; ``counts`` is their
    minimum per confidence, ``winner`` names the theorem that gave it.

    ``distributions``: one prior for every run (a 2-d array (n, d), a sequence of 1-d arrays or a Distributions):
    every theorem of ``count_bounds`` with it bounds each run, hence their mixture, and joins; or a prior per run (a
    3-d array (R, n, d) or a sequence of R 2-d arrays / Distributions, in the order of ``p_runs``): Theorem 3 with
    its tails and budgets averaged over the runs at each threshold t (THEORY.md section 8, "Over the trials"), and
    Theorem 4 with its conjugates averaged over the runs (section 9).
    ``p_runs`` stays the prior success of each run's actual guesses (Theorem 2's). For set-valued success
    (``set_valued=True``) the whole priors need ``set_size`` (the most values a success set holds): Theorem 3 with
    Lemma 4' joins, for one shared prior (it bounds every run) or averaged over the runs; Theorem 4 and MMC's count
    are for one exact guess only. ``designated=True`` passes Theorems 5 and 6 to ``count_bounds`` for one shared prior (it
    bounds every run); with a prior per run it is not offered (its averaging over the runs is not proved).
    ``groups``: Theorem 4's groups of targets, as in ``count_bounds`` (with a prior per run: blocks of ranks by p).
    """
    groups = prior_run.check_groups(groups)
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    designated = _validate.boolean("designated", designated)
    k = _check_set_size(set_size, set_valued)
    runs = _runs(p_runs)
    conf = _validate.confidence("confidence", confidence)
    confs = np.atleast_1d(conf).ravel()
    shared, per_run = _run_distributions(distributions, runs)
    _check_expected_whole(shared, per_run, set_valued, k, None)
    # Theorem 2, then for one shared prior count_bounds' theorems (each bounds every run: Theorems 4 and 5 searched
    # below those of one release only, as count_bounds searches them), for a prior per run Corollaries 3.1 and 4.1
    setting = _expected_setting(profile, runs, shared, per_run, set_valued, k, game, designated, groups)
    best = registry.REGISTRY.minimum(setting, "counts", confs, memo=_COUNTS_MEMO)
    shape = lambda a: int(np.asarray(a).reshape(-1)[0]) if conf.ndim == 0 else np.array(a, dtype=int).reshape(conf.shape)
    return shape(best.value), {name: shape(v) for name, v in best.by.items()}


# --------------------------------------------------------------------------------------------
# Single-target views
# --------------------------------------------------------------------------------------------
def success_bound(profile, p=None, *, distribution=None, game: str = "reconstruction", set_valued: bool = False,
                  collision=None) -> float:
    """n = 1 posterior bound: min_eps beta(eps, p) + delta(eps) w(eps) (tail_bound with one target, v = 1).

    w = 1 - beta(eps, p) for one exact guess, which makes this the paper's single-target bound and
    tight (an exact LP over all (eps, delta)-DP mechanisms attains it); for p = 1/2 and mu-GDP it
    equals Phi(mu / 2), the optimal membership-inference accuracy. For set-valued success (``set_valued``)
    w = (1 - c) / (e^eps p + 1 - p), c the prior's collision probability (``collision``, None: 0).
    An eps-DP profile gives beta(eps, p) at its own eps (Theorem 3.1), attained by an eps-DP mechanism
    when success is a set. ``game`` as in tail_bound.

    ``distribution``: the target's whole prior (a 1-d array summing to 1). With it, for one exact guess,
    p may be None (p = max pi) and the result is the smaller of the above and the whole-prior theorem's
    one-target worst case (THEORY.md, Theorem 3 at n = 1: the relaxed LP over every mechanism with the
    profile, exact for (eps, delta)-DP and eps-DP, and for two-valued priors under f-DP).
    """
    one = None if p is None else [_validate.scalar("p", p, _validate.probability, fix=_ONE_TARGET)]
    c = None if collision is None else [_validate.scalar("collision", collision, _validate.probability, fix=_ONE_TARGET)]
    if distribution is not None:
        _check_set_valued(set_valued)
        d = _validate.vector("distribution", distribution, what="one target's prior, probabilities",
                             fix="use count_bound(..., distributions=...) for many targets")
        return tail_bound(profile, one, 1, distributions=[d], game=game, set_valued=set_valued, collision=c)
    if p is None:
        raise _validate.ArgumentError("p", "p must be given (the target's prior success) unless distribution= gives "
                                           "its whole prior, got None.")
    return tail_bound(profile, one, 1, game=game, set_valued=set_valued, collision=c)


#: The fix named when a single-target view gets many targets.
_ONE_TARGET = "this bounds one target; for many targets use count_bound or tail_bound"


def advantage_bound(profile, p=None, *, distribution=None, game: str = "reconstruction", set_valued: bool = False,
                    collision=None) -> float:
    """Generalised advantage bound (posterior - prior) / (1 - prior) (Cherubin et al. 2017); arguments as in success_bound
    (with ``distribution`` and p None, the prior success is max pi)."""
    if p is None and distribution is not None and not set_valued:
        p = float(np.max(_validate.vector("distribution", distribution, _validate.probability,
                                          what="one target's prior, probabilities",
                                          fix="use count_bound(..., distributions=...) for many targets")))
    if p is None:
        raise _validate.ArgumentError("p", "p must be given (the target's prior success) unless distribution= gives "
                                           "its whole prior, got None.")
    q = _validate.scalar("p", p, _validate.probability, open_high=True, fix=_ONE_TARGET)
    bound = success_bound(profile, q, distribution=distribution, game=game, set_valued=set_valued, collision=collision)
    return max(0.0, (bound - q) / (1.0 - q))


def eps_protect(p, threshold: float = 0.05, delta: float = 1e-5, *, set_valued: bool = False, collision=None) -> float:
    """The largest eps at which (eps, delta)-DP keeps the advantage bound <= threshold for prior p.

    eps_protect(p) = max{eps >= 0 : advantage_bound(ApproxDP(eps, delta), p, set_valued=...) <= threshold}
    (paper, Fig. eps_protect). The advantage bound is continuous and non-decreasing in eps and at
    least delta at eps = 0 (exactly delta for one exact guess), so:

    * delta > threshold: no eps protects (the set is empty): ValueError.
    * delta == threshold: 0.0, exactly (eps = 0 is the only protecting value).
    * otherwise a bracket lo < hi with bound(lo) <= threshold < bound(hi) is found by doubling hi from 1
      and bisected to 1e-9 relative; lo, which meets the threshold, is returned. inf if the bound stays
      <= threshold up to eps = 1e4 (it tends to 1, so only a threshold close to 1 can get there).

    One exact guess (the default): for p >= 1/2 the bound's minimum over eps' sits at eps' = 0, where
    the advantage is the total variation delta + (1 - delta) tanh(eps / 2) of f_{eps,delta}, whatever
    p, so eps_protect(p) = 2 artanh((threshold - delta) / (1 - delta)) for every p >= 1/2 (0.10006 at
    the defaults). That is valid but very conservative for large p: the exact worst case over all
    (eps, delta)-DP mechanisms (an LP over a two-value prior) allows eps = 0.4895 at p = 0.6, 2.254 at
    0.9, 4.647 at 0.99 (issue 13's LP). Set-valued success (k > 1 guesses, windows): the split theorem's
    weight (1 - c) / (e^eps p + 1 - p) replaces 1 - beta, and there is no plateau (an eps-DP subset
    mechanism reaches advantage 0.0865 at eps = 0.10006, p = 0.9, so the plateau would be wrong there).
    With delta = 0 the profile is eps-DP and Theorem 3.1's beta(eps, p) is used for every metric.
    """
    q = _validate.scalar("p", p, _validate.probability, open_low=True, open_high=True, fix=_ONE_TARGET)
    thr = _validate.scalar("threshold", threshold, _validate.probability, open_low=True, open_high=True)
    d = _validate.delta("delta", delta)
    set_valued = _check_set_valued(set_valued)
    if d > thr:
        raise ValueError(f"threshold must be >= delta = {d!r}: the advantage bound of (eps, delta)-DP is at least "
                         f"delta at every eps, so no eps keeps it <= {thr!r}; lower delta or raise the threshold.")
    if d == thr and not set_valued:
        return 0.0
    adv = lambda e: advantage_bound(ApproxDP(e, d), q, set_valued=set_valued, collision=collision)
    if adv(0.0) > thr:
        raise ValueError(f"threshold {thr!r} is below the advantage bound at eps = 0 ({adv(0.0)!r}) for p = {q!r} with "
                         "set-valued success: no eps protects; lower delta or raise the threshold.")
    above = lambda e: adv(e) > thr
    bracket = double_until(above, 0.0, 1.0, limit=1e4)
    if bracket is None:
        return math.inf
    return bisect(above, *bracket, rtol=1e-9)[0]


def calibrate_noise(
    p,
    target: float,
    *,
    kind: str = "advantage",
    mechanism: str = "gaussian",
    confidence: float = 0.95,
    sensitivity: float = 1.0,
    compositions: int = 1,
    sample_rate: float = 1.0,
    steps: int = 1,
    neighboring: str = "replace_one",
    rtol: float = NOISE_RTOL,
    game: str = "reconstruction",
) -> float:
    """The smallest noise multiplier whose bound keeps the risk under ``target`` for prior ``p``.

    kind="advantage": advantage_bound(profile, max(p)) <= target (the most exposed target decides).
    kind="count": count_bound(profile, p, confidence) <= target successes.
    mechanism="gaussian": ComposedGaussian(sigma, compositions, sensitivity);
    mechanism="dpsgd": DPSGD(sigma, sample_rate, steps, neighboring); in a reconstruction ``game`` (the
    default) its replace-one accounting is what the bound uses, whatever ``neighboring`` says.
    Bounds only weaken as noise shrinks, so a bisection on log sigma finds the threshold, to ``rtol``
    relative (``stages._bisect.smallest_noise``, the calibration DP-SGD's noise shares); the sigma
    returned satisfies the target (it is the upper end of the final bracket). ``p``: a number (one target), an
    array (n,) or ``Priors``, grouped once for all the bounds the bisection evaluates.
    """
    q = p if isinstance(p, Priors) else grouped(np.atleast_1d(_validate.vector(
        "p", p, _validate.probability, what="one prior success per target", allow_scalar=True)))
    if kind not in ("advantage", "count"):
        raise ValueError(f"kind must be 'advantage' or 'count', got {kind!r}.")
    if game not in GAMES:
        raise ValueError(f"game must be one of {list(GAMES)}, got {game!r}.")
    if mechanism not in ("gaussian", "dpsgd"):
        raise ValueError(f"mechanism must be 'gaussian' or 'dpsgd', got {mechanism!r}.")
    if kind == "advantage":
        tgt = _validate.scalar("target", target, _validate.probability, open_low=True, open_high=True)
    else:
        tgt = _validate.integer("target", target, minimum=0)
        confidence = _validate.scalar("confidence", confidence, _validate.confidence)

    def profile_for(sigma: float) -> PrivacyProfile:
        if mechanism == "gaussian":
            return ComposedGaussian(sigma, compositions, sensitivity)
        return DPSGD(sigma, sample_rate, steps, neighboring)

    def ok(sigma: float) -> bool:
        prof = profile_for(sigma)
        if kind == "advantage":
            return advantage_bound(prof, float(q.values[-1]), game=game) <= tgt
        return count_bound(prof, q, confidence, game=game) <= tgt

    if kind == "count" and tgt >= q.n:
        raise ValueError(f"target must be < n = {q.n} successes to constrain anything, got {tgt}.")
    bracket = double_until(ok, 0.05, 1.0, limit=1e6)
    if bracket is None:
        raise ValueError(f"target {target!r} cannot be met by any noise multiplier up to 1e6.")
    return smallest_noise(ok, *bracket, floor=1e-6, rtol=rtol)

