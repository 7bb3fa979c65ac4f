"""The expected box and ``expected_*`` with each target's whole prior (issue 21 item 1; THEORY.md section 8, "Over the
trials").

* One prior shared by every trial: ``expected_count_bounds`` is the minimum of Theorem 2 and ``count_bounds``' theorems
  (each bounds every trial, hence their mixture), per confidence, and names the winner.
* A prior per trial: Theorem 3 with its tails and budgets averaged over the trials and Theorem 4 with its conjugates
  averaged over the trials (blocks of fixed size), never below a certified mechanism's mixture (the simplex Gaussian
  mechanism on every target, the trials' priors differing); Theorem 3 over the trials never below the mean of the
  trials' own Theorem 3 values (a common threshold for all of them can only cost); and never below the EXACT worst case
  of a mixture (the LP over every mechanism shared by the trials, n = 2).
* The box hands every trial's law to the theorem (``TrialLaws``), and the game does so under per-trial laws.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import lp_oracle as L
from stages.bound import prior_run as R
from stages.bound import theorems as T
from stages.bound.box import TrialLaws
from stages.bound.expected import ExpectedBound
from stages.bound.profiles import GaussianDP, PureDP
from stages.bound import search as S
from stages.bound.search import whole_prior_tail
from stages.bound.whole_prior import Distributions
from stages.metric import Exact
from stages.prior.base import Prior

CONFS = np.array([0.05, 0.5, 0.95])


def zipf(d: int, s: float) -> np.ndarray:
    w = np.arange(1, d + 1.0) ** -s
    return w / w.sum()


def _per_trial_priors(trials=4, n=100, seed=0):
    rng = np.random.default_rng(seed)
    return [np.stack([zipf(10, s) for s in rng.uniform(1.0, 2.2, n)]) for _ in range(trials)]


@pytest.mark.slow
def test_one_shared_prior_is_the_minimum_of_theorem_2_and_the_one_run_theorems():
    prior = zipf(10, 1.84)
    profile = GaussianDP(0.268)  # the quickstart's Gaussian at eps = 1, delta = 1e-5
    p_runs = np.full((20, 100), prior.max())
    alone, alone_by = T.expected_count_bounds(profile, p_runs, CONFS)
    counts, by = T.expected_count_bounds(profile, p_runs, CONFS, distributions=[prior] * 100)
    one_run, one_run_by = T.count_bounds(profile, None, CONFS, distributions=[prior] * 100)
    assert list(alone_by) == [T.EXPECTED_THEOREM]
    assert np.array_equal(by[T.EXPECTED_THEOREM], alone)
    for name, value in one_run_by.items():
        assert np.array_equal(by[name], value)
    assert np.array_equal(counts, np.minimum(alone, one_run))
    assert np.all(counts < alone)  # the whole prior wins at every confidence on the quickstart's Zipf rows
    assert np.array_equal(T.expected_count_bound(profile, p_runs, CONFS, distributions=[prior] * 100), counts)
    # the same prior given once per run is the shared prior
    again, _ = T.expected_count_bounds(profile, p_runs, CONFS, distributions=[np.tile(prior, (100, 1))] * 20)
    assert np.array_equal(again, counts)


@pytest.mark.parametrize("mu,groups", [(0.268, 2), (1.0, 2), (0.268, 1)])
def test_a_prior_per_trial_never_below_a_certified_mechanisms_mixture(mu, groups):
    """Trial r's targets have Zipf priors of different exponents; the simplex Gaussian mechanism (mu-GDP for every
    target's change) makes trial r's right MAP guesses a sum of independent Bernoulli(t_ri): the mixture's tail is the
    mean over the trials of their Poisson-binomial tails, and a valid count c has mixture Pr[N >= c + 1] <= 1 - conf
    (Theorem 4 over the trials with the default 2 groups of ranks by p, and with 1)."""
    runs = _per_trial_priors(trials=3, n=60)
    p_runs = np.stack([r.max(axis=1) for r in runs])
    counts, by = T.expected_count_bounds(GaussianDP(mu), p_runs, CONFS, distributions=runs, groups=groups)
    assert set(by) == {T.EXPECTED_THEOREM, T.EXPECTED_WHOLE_PRIOR_THEOREM, T.EXPECTED_PRIOR_RUN_THEOREM}
    tails = []
    for r in runs:
        t = np.array([L.gaussian_simplex_success(mu, row) for row in r])
        pmf = np.array([1.0])
        for ti in t:
            pmf = np.convolve(pmf, [1 - ti, ti])
        tails.append(np.cumsum(pmf[::-1])[::-1])  # tails[v] = Pr[N >= v]
    mixture = np.mean(tails, axis=0)
    for c, conf in zip(counts, CONFS):
        assert mixture[c + 1] <= 1 - conf + 1e-12, (c, conf)
    assert np.all(by[T.EXPECTED_WHOLE_PRIOR_THEOREM] <= by[T.EXPECTED_THEOREM])
    assert np.all(by[T.EXPECTED_PRIOR_RUN_THEOREM] <= by[T.EXPECTED_WHOLE_PRIOR_THEOREM])


def test_the_pooled_conjugate_is_the_mean_over_the_runs_in_blocks_of_fixed_size():
    """Theorem 4 over the trials (THEORY.md section 9): block g of every run holds the same number of targets (ranks by
    p), and its conjugate is the mean over the runs of the block's mean; the total is the mean of the runs' totals."""
    runs = [Distributions.of(r) for r in _per_trial_priors(trials=3, n=25, seed=4)]
    profile, s = GaussianDP(1.0), np.geomspace(0.01, 100, 9)
    pooled = R.pooled_conjugate(profile, runs)
    assert pooled.counts.tolist() == [13.0, 12.0]
    totals = np.array([R.Conjugate(profile, d)(s) for d in runs])
    assert np.allclose(pooled(s), totals.mean(axis=0), rtol=1e-12)
    # one run repeated is that run's conjugate, its blocks the lowest and highest p
    again = R.pooled_conjugate(profile, [runs[0]] * 3)
    assert np.allclose(again(s), totals[0], rtol=1e-12)
    low = np.argsort([sh.p for sh in runs[0].shapes], kind="stable")
    first = R.Conjugate(profile, runs[0], [list(low[:13])])  # the 13 lowest p (each prior here is one target's)
    assert np.all(runs[0].counts == 1)
    assert np.allclose(again.per_target(s)[0], first.per_target(s)[0], rtol=1e-12)


@pytest.mark.slow
def test_theorem_3_over_the_trials_is_never_below_the_trials_own_and_the_tail_takes_the_minimum():
    """Theorem 3 over the trials: min over a common (t, J) of the trials' mean >= the mean of each trial's own
    minimum. expected_tail with a prior per run: the smallest of Theorem 2 and Theorems 3 and 4 over the runs."""
    runs = _per_trial_priors(trials=3, n=30, seed=1)
    dists = [Distributions.of(r) for r in runs]
    p_runs = np.stack([r.max(axis=1) for r in runs])
    profile = GaussianDP(1.0)
    for v in (10, 15, 20):
        value, _, se = S.expected_whole_prior_tail(profile, dists, v)
        own = [whole_prior_tail(profile, d, v)[0] for d in dists]
        assert value >= np.mean(own) - 1e-12
        assert se >= 0.0
    v = 15
    value, se = T.expected_tail(profile, p_runs, v, distributions=runs)
    split, _ = T.expected_tail(profile, p_runs, v)
    whole = S.expected_whole_prior_tail(profile, dists, v)[0]
    pooled = R.PriorRun(profile, None, R.pooled_conjugate(profile, dists)).tail(v)
    assert value == pytest.approx(min(split, whole, pooled), abs=1e-12)


def test_eps_dp_profiles_and_argument_errors():
    runs = _per_trial_priors(trials=2, n=20, seed=2)
    p_runs = np.stack([r.max(axis=1) for r in runs])
    counts, by = T.expected_count_bounds(PureDP(1.0), p_runs, CONFS, distributions=runs)
    assert np.array_equal(counts, np.min(np.stack(list(by.values())), axis=0)) and len(by) == 3
    with pytest.raises(ValueError, match=r"distributions must give one prior per run \(2 runs\)"):
        T.expected_count_bounds(GaussianDP(1.0), p_runs, CONFS, distributions=runs[:1] * 3)
    with pytest.raises(ValueError, match=r"distributions\[0\] and p_runs must describe the same targets, got 10 distributions and 20 targets"):
        T.expected_count_bounds(GaussianDP(1.0), p_runs, CONFS, distributions=[r[:10] for r in runs])
    with pytest.raises(ValueError, match="set_valued=True"):
        T.expected_count_bounds(GaussianDP(1.0), p_runs, CONFS, distributions=runs, set_valued=True)
    with pytest.raises(ValueError, match="no fixed eps"):
        T.expected_tail(GaussianDP(1.0), p_runs, 5, eps=1.0, distributions=runs)


class _Law(Prior):
    """A fixed prior whose probability matrix is given (the game's TrialLaw for one trial)."""


@pytest.mark.slow
def test_the_box_reads_every_trials_law():
    runs = _per_trial_priors(trials=3, n=30, seed=3)
    laws = TrialLaws(tuple(_Law(r) for r in runs))
    guesses = np.stack([np.argmax(r, axis=1)[:, None] for r in runs])  # the MAP guesses, one per target
    profile = GaussianDP(1.0)
    box = ExpectedBound()
    counts, winners = box.compute_theorems(profile, laws, Exact(), guesses, CONFS)
    p_runs = np.stack([r.max(axis=1) for r in runs])
    want, by = T.expected_count_bounds(profile, p_runs, CONFS, distributions=runs)
    assert counts == {float(c): int(v) for c, v in zip(CONFS, want)}
    assert set(winners.values()) <= {T.EXPECTED_WHOLE_PRIOR_THEOREM, T.EXPECTED_PRIOR_RUN_THEOREM,
                                     box.theorem(profile, laws, Exact(), guesses)["theorem"]}
    # the first trial's law read as every trial's (what the game handed the box before TrialLaws) is another bound
    assert box.compute(profile, _Law(runs[0]), Exact(), guesses, CONFS) != counts
    info = box.theorem(profile, laws, Exact(), guesses)
    assert info["version"] == T.EXPECTED_BOUND_VERSION
    assert T.EXPECTED_WHOLE_PRIOR_THEOREM in info["candidates"]
    with pytest.raises(ValueError, match=r"one trial per law \(3 laws\)"):
        box.compute(profile, laws, Exact(), guesses[:2], CONFS)


def test_a_membership_game_keeps_its_add_remove_profile():
    """game='membership' reaches the one-run theorems too: an add/remove DP-SGD profile is used as it is (mu = 1), not
    converted to replace-one (mu = 2), so the shared-prior counts equal count_bounds' in the membership game."""
    from stages.bound.profiles import DPSGD

    profile = DPSGD(1.0, 1.0, 1, "add_remove")
    prior = np.array([0.7, 0.3])  # a membership bit, member with probability 0.3
    p_runs = np.full((4, 20), 0.7)
    _, by = T.expected_count_bounds(profile, p_runs, CONFS, distributions=[prior] * 20, game="membership")
    _, member = T.count_bounds(profile, None, CONFS, distributions=[prior] * 20, game="membership")
    _, replace = T.count_bounds(profile, None, CONFS, distributions=[prior] * 20)
    for name, value in member.items():
        assert np.array_equal(by[name], value)
    assert any(not np.array_equal(member[name], replace[name]) for name in member)


def _mixture_oracle(runs, v, constraints):
    """The EXACT worst case over the trials' mixture: max over every mechanism meeting the (eps, delta) constraints
    (one mechanism for all trials) of (1/R) sum_r Pr_r[at least v of n right], trial r's targets independent with
    priors runs[r] (one exact guess; lp_oracle's linear program with the mixture's weights)."""
    import itertools
    import math

    n, d = runs[0].shape
    datasets = list(itertools.product(range(d), repeat=n))
    outputs = list(itertools.product(range(d), repeat=n))
    px = np.mean([[math.prod(r[i][xi] for i, xi in enumerate(x)) for x in datasets] for r in runs], axis=0)
    win = np.array([[sum(a == b for a, b in zip(x, o)) >= v for o in outputs] for x in datasets], dtype=float)
    return L._solve_lp(n, d, datasets, outputs, px[:, None] * win, constraints)[0]


MIXTURES = {
    "binary": [np.array([[0.7, 0.3], [0.55, 0.45]]), np.array([[0.9, 0.1], [0.6, 0.4]])],
    "ternary": [np.array([[0.6, 0.3, 0.1], [0.5, 0.25, 0.25]]), np.array([[0.8, 0.15, 0.05], [0.4, 0.35, 0.25]]),
                np.array([zipf(3, 1.0), zipf(3, 2.0)])],
}


@pytest.mark.parametrize("name", sorted(MIXTURES))
@pytest.mark.parametrize("eps,delta", [(1.0, 0.0), (1.0, 0.01), (0.5, 0.05), (2.0, 1e-3)])
def test_over_the_trials_never_below_the_exact_lp_over_the_mixture(name, eps, delta):
    """Corollaries 3.1 and 4.1 against the exact worst case of the trials' mixture (n = 2 targets, priors that differ
    per trial and per target, one mechanism for all trials): never below it, at v = 1 and v = 2."""
    from stages.bound.profiles import ApproxDP

    runs = MIXTURES[name]
    profile = PureDP(eps) if delta == 0.0 else ApproxDP(eps, delta)
    dists = [Distributions.of(r) for r in runs]
    for v in (1, 2):
        exact = _mixture_oracle(runs, v, [(eps, delta)])
        cor3 = S.expected_whole_prior_tail(profile, dists, v)[0]
        cor4 = R.PriorRun(profile, None, R.pooled_conjugate(profile, dists)).tail(v)
        assert cor3 >= exact - 1e-7, (v, cor3, exact)
        assert cor4 >= exact - 1e-7, (v, cor4, exact)
