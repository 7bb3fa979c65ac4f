"""Theorem 5, Theorem 4 with the law of the likeliest values (THEORY.md section 10; stages/bound/designated_run.py).

* Never below the EXACT worst case: the LP over all mechanisms (lp_oracle) on (eps, delta)-DP and eps-DP cases with
  skewed, uniform and per-target priors, n = 2 and 3.
* Never below what real mechanisms achieve: the simplex Gaussian mechanism on every target (independent successes,
  certified mu-GDP) and the release that says nothing (N = M when every guess is the likeliest value).
* Tighter than Theorem 4 on skewed priors (its count search is checked with Theorem 6's, test_marginal_run.py).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import lp_oracle as L
from stages.bound import designated_run as D
from stages.bound import theorems as T
from stages.bound import prior_run as R
from stages.bound.profiles import ApproxDP, GaussianDP, PureDP
from stages.bound.whole_prior import Distributions

#: A certified value may sit below the exact LP optimum by the LP solver's tolerance only.
TOL = 1e-7

PROFILES = [(1.0, 1e-2), (0.5, 0.1), (2.0, 1e-3), (1.0, 0.0)]
PRIORS = [(0.7, 0.3), (0.6, 0.25, 0.15), (0.8, 0.1, 0.1), (0.5, 0.5)]


def _profile(eps_delta):
    eps, delta = eps_delta
    return PureDP(eps) if delta == 0.0 else ApproxDP(eps, delta)


@pytest.mark.parametrize("eps_delta", PROFILES, ids=str)
@pytest.mark.parametrize("prior", PRIORS, ids=str)
def test_never_below_the_exact_worst_case(eps_delta, prior):
    """n = 2 (v = 2) and n = 3 (v = 2, 3): the certified tail against the LP over every mechanism meeting the profile."""
    profile = _profile(eps_delta)
    for n, v in [(2, 2), (3, 2), (3, 3)]:
        exact, _ = L.worst_case_success(n, len(prior), list(prior), v, [eps_delta])
        dists = Distributions.of(np.tile(np.asarray(prior), (n, 1)))
        value = D.designated_run_tail(profile, dists, v)
        assert value >= exact - TOL, (n, v, value, exact)
        assert value <= 1.0


@pytest.mark.parametrize("eps_delta", [(1.0, 0.05), (1.0, 0.0)], ids=str)
def test_never_below_the_exact_worst_case_with_a_prior_per_target(eps_delta):
    """Targets with different priors (M is then Poisson-binomial; Psi sums each target's own conjugate)."""
    profile = _profile(eps_delta)
    priors = [(0.7, 0.2, 0.1), (0.5, 0.3, 0.2)]
    exact, _ = L.worst_case_success(2, 3, [list(p) for p in priors], 2, [eps_delta])
    value = D.designated_run_tail(profile, Distributions.of([np.asarray(p) for p in priors]), 2)
    assert value >= exact - TOL
    priors = [(0.8, 0.2, 0.0), (0.6, 0.3, 0.1), (0.5, 0.25, 0.25)]
    for v in (2, 3):
        exact, _ = L.worst_case_success(3, 3, [list(p) for p in priors], v, [eps_delta])
        value = D.designated_run_tail(profile, Distributions.of([np.asarray(p) for p in priors]), v)
        assert value >= exact - TOL, (v, value, exact)


def test_tighter_than_theorem_4_on_skewed_priors():
    """(0.8, 0.1, 0.1) at (2, 1e-3)-DP, n = 3, v = 3: exact 0.512, Theorem 4 0.714; Theorem 5 within 0.02 of exact."""
    profile, prior = ApproxDP(2.0, 1e-3), np.array([0.8, 0.1, 0.1])
    dists = Distributions.of(np.tile(prior, (3, 1)))
    exact, _ = L.worst_case_success(3, 3, list(prior), 3, [(2.0, 1e-3)])
    t4 = R.prior_run_tail(profile, dists, 3)
    t5 = D.designated_run_tail(profile, dists, 3)
    assert exact - TOL <= t5 <= exact + 0.02
    assert t5 < t4 - 0.15


def test_never_below_real_mechanisms_at_twelve_targets():
    """12 targets with the quickstart's Zipf prior at mu = 1: the simplex Gaussian mechanism on each target (certified
    mu-GDP, successes independent, Binomial(12, t)) and the empty release (N = M, Binomial(12, p)) are both attacks the
    bound must cover. The rounds stop only when the bound stalls or falls below the larger of the two (a failure)."""
    mu = 1.0
    prior = np.arange(1, 11.0) ** -1.84
    prior /= prior.sum()
    t = L.gaussian_simplex_success(mu, prior)
    run = D.DesignatedRun(GaussianDP(mu), Distributions.of(np.tile(prior, (12, 1))))
    for v in (9, 11):
        floor = max(stats.binom.sf(v - 1, 12, t), stats.binom.sf(v - 1, 12, prior[0]))
        assert run.tail(v, target=floor - 1e-9) >= floor - 1e-9


@pytest.mark.parametrize("eps_delta", [(1.0, 1e-2), (2.0, 1e-3), (1.0, 0.0)], ids=str)
def test_states_below_j_from_are_one_sum_and_the_bound_stays_above_the_exact_worst_case(eps_delta):
    """``j_from``: the states with N < j_from become one variable per m and the events only j' >= j_from (a
    subfamily): still never below the exact worst case for every c > j_from; 1 for c <= j_from (not bounded)."""
    profile = _profile(eps_delta)
    for prior in [(0.8, 0.1, 0.1), (0.6, 0.25, 0.15)]:
        dists = Distributions.of(np.tile(np.asarray(prior), (3, 1)))
        for j_from in (1, 2):
            run = D.DesignatedRun(profile, dists, j_from=j_from)
            assert run.nlow == run.nm and run.ns == (3 + 1 - j_from) * run.nm
            for v in range(j_from + 1, 4):
                exact, _ = L.worst_case_success(3, 3, list(prior), v, [eps_delta])
                assert run.tail(v) >= exact - TOL, (prior, j_from, v)
            assert run.tail(j_from) == 1.0


@pytest.mark.slow
def test_states_below_j_from_only_relax_the_lp():
    """12 Zipf targets at mu = 1, tail(10) with the cutting planes run to the end: the LP with j_from = 3, 5 or 7 has
    fewer constraints, so its bound is not below the full LP's (up to the rounds' tolerance) and stays above the
    simplex Gaussian mechanism's Binomial tail. Measured: 0.23802 (full), 0.23803 (j_from = 3), 0.23953 (5), 0.26294
    (7): seven counts below c lose nothing, three lose 0.025 (the search keeps twenty)."""
    prior = np.arange(1, 11.0) ** -1.84
    prior /= prior.sum()
    dists = Distributions.of(np.tile(prior, (12, 1)))
    floor = stats.binom.sf(9, 12, L.gaussian_simplex_success(1.0, prior))
    full = D.DesignatedRun(GaussianDP(1.0), dists).tail(10)
    for j_from, looser in [(3, 1e-4), (5, 5e-3), (7, 0.05)]:
        part = D.DesignatedRun(GaussianDP(1.0), dists, j_from=j_from).tail(10)
        assert full - 2e-3 * full <= part <= full + looser
        assert part >= floor


@pytest.mark.slow
def test_the_count_search_keeps_the_states_from_twenty_below_the_hint():
    """At 40 targets the search keeps N >= min(hint) - 20 (``_BELOW_HINT``); its counts are certified by that LP
    and cover the release that says nothing (N = M, Binomial(40, p))."""
    prior = np.arange(1, 11.0) ** -1.84
    prior /= prior.sum()
    profile, dists = GaussianDP(0.268), Distributions.of(np.tile(prior, (40, 1)))
    targets = np.array([0.05])
    hint = np.array(R.prior_run_counts(profile, dists, targets))
    counts = D.designated_run_counts(profile, dists, targets, hint)
    run = D.DesignatedRun(profile, dists, j_from=int(hint.min()) - D._BELOW_HINT)
    assert run.j0 == int(hint.min()) - 20 > 0
    assert counts[0] <= hint[0]
    if counts[0] < hint[0]:
        assert run.tail(counts[0] + 1, target=float(targets[0])) <= targets[0] + 1e-12  # certified once below
    assert counts[0] >= stats.binom.ppf(0.95, 40, prior[0]) - 1


@pytest.mark.slow
def test_an_lp_the_interior_point_fails_goes_to_the_dual_simplex():
    """The quickstart's Zipf prior at eps = 0.5 (mu = 0.1422), 100 targets, the states from N = 35: the interior point
    ends the second round's LP in HiGHS's "solve error" (scipy 1.17). That round used to give a bound of 1; the dual
    simplex solves it, and tail(55) is certified below 0.95 as with every state kept (0.94860)."""
    prior = np.arange(1, 11.0) ** -1.84
    prior /= prior.sum()
    dists = Distributions.of(np.tile(prior, (100, 1)))
    run = D.DesignatedRun(GaussianDP(0.1422105586692618), dists, j_from=35)
    assert run.tail(55, target=0.95) == pytest.approx(0.94860, abs=5e-4)


def test_truncated_states_carry_their_mass_into_the_bound():
    """At n = 100 the law of M keeps only the m with Pr[M = m] > 1e-13; the mass left out is added to the bound."""
    prior = np.arange(1, 11.0) ** -1.84
    prior /= prior.sum()
    run = D.DesignatedRun(GaussianDP(0.268), Distributions.of(np.tile(prior, (100, 1))))
    pmf = stats.binom.pmf(np.arange(101), 100, prior[0])
    assert 0 < run.m_lo and run.m_hi < 100
    assert run.eta == pytest.approx(pmf[: run.m_lo].sum() + pmf[run.m_hi + 1:].sum(), rel=1e-6)
    assert 0 < run.eta < 1e-11
    assert run.tail(0) == 1.0 and run.tail(101) == 0.0


@pytest.mark.slow
def test_count_bounds_adds_theorem_5_only_when_asked():
    """``designated=True``: Theorem 5 joins the minimum (one exact guess, priors known) and wins at 0.95 on 30 Zipf
    targets at mu = 0.268; by default it stays out, and it never applies to p-only input or set-valued success."""
    prior = np.arange(1, 11.0) ** -1.84
    prior /= prior.sum()
    dists = np.tile(prior, (30, 1))
    confs = [0.5, 0.95]
    plain, by = T.count_bounds(GaussianDP(0.268), None, confs, distributions=dists)
    assert D.DESIGNATED_RUN_THEOREM not in by
    counts, by = T.count_bounds(GaussianDP(0.268), None, confs, distributions=dists, designated=True)
    assert D.DESIGNATED_RUN_THEOREM in by
    assert np.array_equal(counts, np.min(np.stack(list(by.values())), axis=0))
    assert counts[1] < plain[1] and T.winner(by)[1] == D.DESIGNATED_RUN_THEOREM
    _, by = T.count_bounds(GaussianDP(0.268), [0.6] * 10, 0.95, designated=True)
    assert D.DESIGNATED_RUN_THEOREM not in by


def test_the_one_run_box_records_theorem_5_when_asked():
    from stages.bound.one_run import OneRunBound
    from stages.metric import Exact
    info = OneRunBound(designated=True).theorem_for(GaussianDP(1.0), Exact(), 1, 10)
    assert D.DESIGNATED_RUN_THEOREM in info["candidates"]
    assert info["designated_run_version"] == D.DESIGNATED_RUN_VERSION
    assert D.DESIGNATED_RUN_THEOREM not in OneRunBound().theorem_for(GaussianDP(1.0), Exact(), 1, 10)["candidates"]
    assert OneRunBound(designated=True).params() == {"bound": "one_run", "designated": True, "groups": 2}
    with pytest.raises(ValueError, match="designated must be true or false, got 'yes'"):
        OneRunBound(designated="yes")


def test_the_expected_box_takes_theorem_5_for_one_shared_prior():
    """One prior shared by every trial: Theorem 5 bounds every trial, hence their mixture, and joins the expected box's
    minimum when asked (``expected_count_bounds(..., designated=True)``); a prior per trial is not offered."""
    from stages.bound.expected import ExpectedBound
    from stages.metric import Exact
    prior = np.arange(1, 11.0) ** -1.84
    prior /= prior.sum()
    runs = np.full((3, 30), prior[0])
    counts, by = T.expected_count_bounds(GaussianDP(0.268), runs, [0.5, 0.95], distributions=np.tile(prior, (30, 1)),
                                         designated=True)
    assert D.DESIGNATED_RUN_THEOREM in by
    assert np.array_equal(counts, np.min(np.stack(list(by.values())), axis=0))
    _, by = T.expected_count_bounds(GaussianDP(0.268), runs, [0.5, 0.95], distributions=np.tile(prior, (30, 1)))
    assert D.DESIGNATED_RUN_THEOREM not in by
    box = ExpectedBound(designated=True)
    assert box.params() == {"bound": "expected", "designated": True, "groups": 2}
    with pytest.raises(ValueError, match="designated must be true or false"):
        ExpectedBound(designated=1)
