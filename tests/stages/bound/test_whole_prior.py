"""The whole-prior theorem (THEORY.md, Theorem 3; stages/bound/whole_prior.py): its pieces and its entry points.

The oracle comparisons (an LP over every mechanism, certified mu-GDP mechanisms, riskcal) are in
test_whole_prior_vs_oracle.py; here: the prior's reduction (grouping, rounding up, merging), the one-target
curve's properties (convex, non-increasing, certified, the dual and chord bounds above the LP), the entry
points' arguments, that the default never rises above the p-only bound, and a Monte Carlo check of a real
mechanism against the count.
"""
from __future__ import annotations

import numpy as np
import pytest

from stages.bound import ApproxDP, GaussianDP, PureDP, count_bound, success_bound, tail_bound, tail_bound_at
from stages.bound import theorems as T
from stages.bound import whole_prior as W


def zipf(k: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1) ** s
    return w / w.sum()


# ---------------------------------------------------------------- the prior's reduction
def test_prior_shape_groups_equal_probabilities_in_descending_order():
    shape = W.prior_shape([0.1, 0.4, 0.1, 0.4])
    assert shape.probs.tolist() == [0.4, 0.1] and shape.mult.tolist() == [2, 2]
    assert shape.p == 0.4 and shape.collision == pytest.approx(0.34) and not shape.rounded


def test_rounding_the_tail_dominates_the_prior_entry_by_entry():
    pi = zipf(1000, 1.1)
    shape = W.prior_shape(pi, max_groups=40)
    assert shape.rounded and shape.probs.size <= 40 and int(shape.mult.sum()) == 1000
    rounded = np.repeat(shape.probs, shape.mult)
    assert np.all(rounded >= np.sort(pi)[::-1] * (1 - 1e-12))  # every value rounded up (THEORY.md section 8)
    assert np.allclose(rounded[:20], np.sort(pi)[::-1][:20])  # the head is exact


def test_rounded_prior_bound_is_never_below_the_exact_one():
    pi = zipf(100, 1.3)
    exact = W.ExcessCurve(GaussianDP(1.0), W.prior_shape(pi, max_groups=200))
    rounded = W.ExcessCurve(GaussianDP(1.0), W.prior_shape(pi, max_groups=24))
    for q in (0.0, 0.2, 0.5):
        assert rounded(q) >= exact(q) - 1e-9


def test_distributions_group_permutations_and_coarsen_by_dominance():
    rows = np.array([[0.7, 0.3], [0.3, 0.7], [0.5, 0.5], [0.7, 0.3]])
    d = W.Distributions.of(rows)
    assert d.n == 4 and sorted(d.counts.tolist()) == [1, 3]
    many = W.Distributions.of([zipf(5, s) for s in np.linspace(0.5, 2.0, 40)])
    small = many.coarsened(8)
    assert len(small.shapes) == 8 and small.n == 40
    # every member's sorted prior lies below its run's representative
    order = np.argsort([s.p for s in many.shapes], kind="stable")
    for run, rep in zip(np.array_split(order, 8), small.shapes):
        top = np.repeat(rep.probs, rep.mult)
        for i in run:
            member = np.repeat(many.shapes[i].probs, many.shapes[i].mult)
            assert np.all(top[: member.size] >= member - 1e-15)


@pytest.mark.parametrize("bad, match", [
    (lambda: W.prior_shape([0.5, 0.4]), r"^distribution must sum to 1"),
    (lambda: W.prior_shape([[0.5, 0.5]]), r"^distribution must be one target's prior, .*\(1-D\); got shape \(1, 2\)"),
    (lambda: W.prior_shape([1.2, -0.2]), r"^distribution must be a probability"),
    (lambda: W.Distributions.of([]), r"^distributions must be one prior per target .*\(empty\)"),
    (lambda: count_bound(GaussianDP(1.0), [0.6, 0.6], 0.5, distributions=[[0.7, 0.3], [0.7, 0.3]]),
     r"^p must be the largest probability of each target's distribution"),
    (lambda: count_bound(GaussianDP(1.0), None, 0.5, distributions=[[0.7, 0.3]], set_valued=True),
     r"^p must be given for set-valued success"),
    (lambda: count_bound(GaussianDP(1.0), None, 0.5), r"^p must be given"),
    (lambda: success_bound(GaussianDP(1.0), distribution=[[0.7, 0.3]]), r"^distribution must be one target's prior"),
])
def test_bad_whole_prior_input_is_one_sentence(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()


# ---------------------------------------------------------------- one target: phi
@pytest.mark.parametrize("profile", [GaussianDP(1.0), ApproxDP(1.0, 1e-3), PureDP(0.7)])
def test_excess_curve_is_convex_non_increasing_and_certified(profile):
    pi = zipf(8, 1.5)
    curve = W.ExcessCurve(profile, W.prior_shape(pi))
    qs = np.linspace(0.0, 0.95, 12)
    phi = np.array([curve(q) for q in qs])
    assert phi[0] >= pi.max() - 1e-12 and phi[0] <= 1.0 and curve(1.0) == 0.0
    assert np.all(np.diff(phi) <= 1e-9)  # non-increasing
    # the true phi is convex with slope >= -1, so a value exact at 0 bounds phi(q) >= phi(0) - q from above too
    assert np.all(phi >= phi[0] - qs - 1e-9)
    # the chords and the Lagrangian dual bounds between solved points are never below a fresh LP there (up to the
    # relaxations' own difference under f-DP: the fresh curve has fewer lines, so it may sit ~1e-6 higher)
    tol = 1e-9 if T.pure_epsilon_of(profile) is not None or isinstance(profile, ApproxDP) else 1e-5
    for q in (0.03, 0.31, 0.58, 0.77):
        fresh = W.ExcessCurve(profile, W.prior_shape(pi))(q)
        assert curve.upper(q) >= fresh - tol
        assert curve.dual(q) >= fresh - tol


def test_one_target_whole_prior_success_is_phi_at_zero():
    pi = [0.6, 0.3, 0.1]
    value = success_bound(GaussianDP(1.0), distribution=pi)
    assert value == pytest.approx(W.whole_prior_success(GaussianDP(1.0), W.prior_shape(pi)), abs=1e-12)
    assert value < success_bound(GaussianDP(1.0), 0.6)


# ---------------------------------------------------------------- the entry points
PRIORS = {"zipf": zipf(10, 1.84), "binary": np.array([0.7, 0.3]), "ternary": np.array([0.5, 0.3, 0.2])}


@pytest.mark.parametrize("profile", [GaussianDP(0.268), GaussianDP(1.0), ApproxDP(1.0, 1e-4), PureDP(1.0)])
@pytest.mark.parametrize("name", sorted(PRIORS))
def test_the_default_is_never_above_the_p_only_bound(profile, name):
    pi = PRIORS[name]
    rows = np.tile(pi, (40, 1))
    levels = [0.05, 0.5, 0.95]
    with_prior, by = T.count_bounds(profile, None, levels, distributions=rows)
    p_only = count_bound(profile, np.full(40, pi.max()), levels)
    assert np.all(with_prior <= p_only)
    assert np.array_equal(with_prior, np.min(np.stack(list(by.values())), axis=0))
    assert set(T.winner(by)) <= set(by)
    assert tail_bound(profile, None, 25, distributions=rows) <= tail_bound(profile, np.full(40, pi.max()), 25) + 1e-12
    if T.pure_epsilon_of(profile) is None:
        assert tail_bound_at(profile, None, 25, 0.5, distributions=rows) <= tail_bound_at(
            profile, np.full(40, pi.max()), 25, 0.5) + 1e-12


def test_p_may_be_given_with_the_distributions_and_uniform_priors_skip_theorem_3():
    rows = np.tile(PRIORS["ternary"], (30, 1))
    assert np.array_equal(count_bound(GaussianDP(1.0), np.full(30, 0.5), [0.5, 0.9], distributions=rows),
                          count_bound(GaussianDP(1.0), None, [0.5, 0.9], distributions=rows))
    _, by = T.count_bounds(GaussianDP(1.0), None, 0.5, distributions=np.full((30, 4), 0.25))
    # no Theorem 3 on uniform priors; MMC on 1/k; Theorem 4 with every known prior
    assert list(by) == [T.SPLIT_THEOREM, T.MMC_THEOREM, T.prior_run.PRIOR_RUN_THEOREM]


def test_pure_dp_functions_take_distributions():
    rows = np.tile(PRIORS["binary"], (50, 1))
    assert np.all(T.pure_dp_count_bound(1.0, None, [0.05, 0.5], distributions=rows)
                  <= T.pure_dp_count_bound(1.0, np.full(50, 0.7), [0.05, 0.5]))
    assert T.pure_dp_tail(1.0, None, 40, distributions=rows) <= T.pure_dp_tail(1.0, np.full(50, 0.7), 40) + 1e-12


def test_set_valued_success_keeps_the_split_theorem_with_the_derived_collision():
    rows = np.tile(PRIORS["ternary"], (20, 1))
    got = count_bound(GaussianDP(1.0), np.full(20, 0.8), 0.9, distributions=rows, set_valued=True)
    want = count_bound(GaussianDP(1.0), np.full(20, 0.8), 0.9, set_valued=True, collision=np.full(20, 0.38))
    assert got == want


# ---------------------------------------------------------------- a real mechanism against the count
def test_k_ary_randomized_response_with_the_bayes_attack_stays_under_the_count():
    """eps-DP randomized response on a skewed prior over 4 values, n = 60 targets, the Bayes-optimal guess: the
    fraction of 4000 runs above the count at confidence c is at most 1 - c plus 4 standard errors."""
    rng = np.random.default_rng(7)
    pi = np.array([0.55, 0.25, 0.15, 0.05])
    eps, n, runs, k = 1.5, 60, 4000, 4
    keep = np.exp(eps) / (np.exp(eps) + k - 1)
    x = rng.choice(k, size=(runs, n), p=pi)
    flip = rng.random((runs, n)) >= keep
    other = (x + rng.integers(1, k, size=(runs, n))) % k
    a = np.where(flip, other, x)
    # posterior of each value given a: pi(v) (keep if v == a else (1 - keep) / 3); guess its argmax
    lik = np.where(np.arange(k)[None, None, :] == a[..., None], keep, (1 - keep) / (k - 1))
    guess = np.argmax(pi[None, None, :] * lik, axis=2)
    successes = np.sum(guess == x, axis=1)
    levels = np.array([0.5, 0.9, 0.99])
    counts = count_bound(PureDP(eps), None, levels, distributions=np.tile(pi, (n, 1)))
    for c, level in zip(counts, levels):
        above = np.mean(successes > c)
        assert above <= (1 - level) + 4 * np.sqrt((1 - level) * level / runs) + 1e-12, (level, c, above)


@pytest.mark.parametrize("mu,s,q", [(1.0, 1.0, 0.8), (1.0, 1.0, 0.6), (2.0, 1.5, 0.5), (0.268, 1.9, 0.5)])
def test_cutting_planes_reach_the_lp_with_every_line(mu, s, q):
    """The cutting planes (with tangents at continuous eps) end no higher than the LP that imposes every line of
    the profile's grid on every group at once (a dense LP). Before version 2 a violated tangent line added for
    another group ended the cuts early: Zipf(10, 1.0), mu = 1, q = 0.8 gave 0.00168 where the dense LP gives 0.00137."""
    from scipy import optimize

    from stages.bound.whole_prior import Distributions

    shape = Distributions.of(zipf(10, s)[None, :]).shapes[0]
    curve = W.ExcessCurve(GaussianDP(mu), shape)
    for warm in (0.0, q / 2):  # the curve's history: lines kept from earlier thresholds
        curve(warm)
    value = curve(q)
    E = len(curve._eps)
    slopes, offsets = curve._all_s[: 2 * E], curve._all_c[: 2 * E]
    keep = np.isfinite(slopes) & np.isfinite(offsets)
    slopes, offsets = slopes[keep], offsets[keep]
    pi, m = shape.probs, shape.mult.astype(float)
    G, R = pi.size, slopes.size
    c = -np.concatenate([m * (1 - q) * pi, -m * q * (1 - pi)])
    rows = np.hstack([np.eye(G), np.tile(m, (G, 1)) - np.eye(G)])
    lines = np.zeros((G * R, 2 * G))
    g = np.repeat(np.arange(G), R)
    lines[np.arange(G * R), g] = np.tile(slopes, G)
    lines[np.arange(G * R), G + g] = -1.0
    dense = optimize.linprog(c, A_ub=np.vstack([rows, lines]), b_ub=np.concatenate([np.ones(G), np.tile(offsets, G)]),
                             bounds=(0, 1), method="highs")
    assert dense.status == 0
    assert value <= -dense.fun + 1e-7


def test_large_n_steers_on_the_normal_approximation_and_certifies_exactly(monkeypatch):
    """From search._FAST_FROM targets Theorem 3's search over t reads S_t's normal approximation; every count it
    returns is the exact objective's at the t it found, and within 0.2% of n of the search on the exact law."""
    from stages.bound import search as S

    shapes = [np.arange(1, 11.0) ** -s for s in (1.0, 1.4, 1.8)]
    n = S._FAST_FROM + 2
    dists = W.Distributions.of(np.repeat(np.stack([w / w.sum() for w in shapes]), n // 3 + 1, axis=0)[:n])
    profile, targets = GaussianDP(1.0), np.array([0.95, 0.5, 0.05])
    final = []
    steer = S.WholePriorRun.smallest_passing

    def spy(self, t, target, exact=True):
        out = steer(self, t, target, exact)
        if exact:
            assert self.approximate and self.cache[float(t)][3]  # the exact law of S_t, not its approximation
            final.append((t, target, out))
        return out

    monkeypatch.setattr(S.WholePriorRun, "smallest_passing", spy)
    counts = S.whole_prior_counts(profile, dists, targets)
    assert [c for *_, c in final] == [c + 1 for c in counts]
    fresh = S.WholePriorRun(profile, dists)
    fresh.approximate = False
    for (t, target, v) in final:
        assert fresh.objective(t, v) <= target
    monkeypatch.setattr(S.WholePriorRun, "smallest_passing", steer)
    monkeypatch.setattr(S, "_FAST_FROM", 10 * n)  # the search on the exact law
    exact = S.whole_prior_counts(profile, dists, targets)
    assert np.all(np.abs(np.array(counts) - np.array(exact)) <= 0.002 * n), (counts, exact)


def test_the_one_target_worst_case_builds_no_envelope():
    """The envelope of the grid's lines (12 ms for a new profile) is built on first use: the one-target worst case
    (q = 0 by cutting planes) never reads it, and a threshold q > 0 (closed form) builds it with the same lines."""
    shape = W.prior_shape([0.5, 0.3, 0.2])
    curve = W.ExcessCurve(GaussianDP(1.37), shape)
    curve(0.0)
    assert "_hull" not in vars(curve)
    curve(0.3, fine=False)
    half = len(curve._eps)
    assert curve._hull is W._hull(GaussianDP(1.37), curve._all_s[: 2 * half], curve._all_c[: 2 * half])
