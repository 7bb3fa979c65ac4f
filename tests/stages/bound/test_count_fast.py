"""count_bound's fast path for large n (issue 13 item 7) and the pieces it is made of.

* search.budget_value (the split theorem's min over J, found by a bracketed test on suffix sums) against
  the brute-force minimum over every J, on exact, trimmed and normal-approximation tails;
* smallest_passing (interpolation search over v) against a scan over every v;
* budget_weights' direct formula against the log-space one;
* the wide convolution tree (leaves of 15, FFT from width 16, used from tails._WIDE_FROM Bernoullis):
  its tails are upper bounds on the narrow tree's and within 1e-6 of them;
* search._count_fast (search on the normal approximation, one exact certification per count): never below
  the exact search's count (every count is certified) and at most one target above it, on random
  priors at n = 2e4 - 5e4; the counts it returns pass tail_bound;
* the exact fast paths of the split theorem's search (issue 40: search._FAST, tails._FAST: budget_value's test at
  every a at once, the count search's queue sorted once, one-binomial tails, Boost's binomial kernels) against the
  plain search: the same counts, certifying eps and minima, bit for bit, on a fixed-seed sample of cases.
"""
from __future__ import annotations

import numpy as np
import pytest

from stages.bound import search, tails
from stages.bound import theorems as T
from stages.bound.priors import beta_unchecked
from stages.bound.profiles import DPSGD, ApproxDP, GaussianDP


def brute_budget_value(tail: tails.Tail, v: int, m: float) -> float:
    """min over J = 0..v+1 of (sum_{i<=J} T(v - i) + m) / (J + 1), capped at 1, every J evaluated."""
    if m <= 0:
        return float(tail(np.array([v]))[0])
    terms = tail(v - np.arange(v + 2))
    return float(min(1.0, np.min((np.cumsum(terms) + m) / np.arange(1, v + 3))))


def check_budget(tail: tails.Tail, vs, ms) -> None:
    for v in vs:
        for m in ms:
            got, want = search.budget_value(tail, int(v), m), brute_budget_value(tail, int(v), m)
            # every J gives a valid bound, so the value may never be below the minimum (up to rounding)
            assert got >= want * (1 - 1e-12), (v, m, got, want)
            assert got <= want * (1 + 1e-9) + 1e-300, (v, m, got, want)


@pytest.mark.parametrize("seed", range(4))
def test_budget_value_matches_brute_force_on_exact_tails(seed):
    rng = np.random.default_rng(seed)
    for n in (1, 7, 60, 400, 2500):  # 400 and 2500: trimmed distributions (offset > 0, trimmed mass)
        tail = tails.distribution(rng.beta(0.5, 2.0, n)).tail()
        vs = list(rng.integers(0, n + 3, 6)) + [0, 1, n, n + 1]
        check_budget(tail, vs, (1e-9, 1e-3, 0.1, 0.7, 1.5, 12.0, 300.0))


@pytest.mark.parametrize("seed", range(4))
def test_budget_value_matches_brute_force_on_normal_tails(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(5):
        n = int(rng.integers(50, 50000))
        mean = float(rng.uniform(0, n))
        var = float(rng.uniform(1e-3, mean * (1 - mean / n) + 1e-3))
        tail = search._normal_tail(mean, var, n)
        sd = var ** 0.5
        vs = list(rng.integers(max(0, int(mean - 15 * sd)), min(n + 2, int(mean + 15 * sd) + 2), 5)) + [0, n + 1]
        check_budget(tail, vs, (1e-9, 0.05, 0.7, 3.0, float(rng.uniform(0, 500))))


def test_budget_value_warm_start_does_not_change_values():
    """The search for J starts from the previous call's J (and a hint): any start gives the same value."""
    rng = np.random.default_rng(7)
    d = tails.distribution(rng.beta(0.5, 5.0, 3000))
    for hint in (None, 0, 5, 400, 10**6):
        tail = d.tail()
        for v in rng.permutation(np.arange(0, 900, 7)):
            for m in (0.01, 2.0, 40.0):
                got = search.budget_value(tail, int(v), m, hint)
                want = brute_budget_value(tail, int(v), m)
                assert want * (1 - 1e-12) <= got <= want * (1 + 1e-9) + 1e-300


def test_budget_weights_direct_formula_matches_log_space():
    p = np.concatenate([[0.0, 1.0, 1e-300, 1e-12, 1 - 1e-12], np.random.default_rng(0).random(500)])
    num = 1.0 - p
    for eps in (0.0, 1e-12, 0.3, 5.0, 50.0, 200.0, 699.0):
        with np.errstate(divide="ignore"):
            ref = num * np.exp(-np.logaddexp(eps + np.log(p), np.log1p(-p)))
        got = T.budget_weights(eps, p, num)
        assert np.allclose(got, ref, rtol=1e-13, atol=0.0)
    inner = (p > 0) & (p < 1)  # beyond eps = 700 the log-space formula is used
    assert np.array_equal(T.budget_weights(800.0, p[inner], num[inner]), ref_far := num[inner] * np.exp(
        -np.logaddexp(800.0 + np.log(p[inner]), np.log1p(-p[inner])))) and np.all(ref_far >= 0)


def test_wide_tree_tails_are_upper_bounds(monkeypatch):
    """From _WIDE_FROM Bernoullis the tree uses FFTs from width 16: its tails (with the round-off bound
    added) stay above the narrow tree's and within 1e-6 of them."""
    rng = np.random.default_rng(3)
    beta = beta_unchecked(1.3, rng.beta(0.5, 5.0, 40000))
    assert len(beta) >= tails._WIDE_FROM
    wide = tails.distribution(beta).sf_all()
    monkeypatch.setattr(tails, "_WIDE_FROM", 10**12)
    narrow = tails.distribution(beta).sf_all()
    assert np.all(wide >= narrow - 1e-13)
    assert np.max(wide - narrow) < 1e-6


CASES = [  # (n, prior, profile): a few random cases at the sizes the fast path starts from
    (20000, "beta", "gdp"),
    (35000, "uniform", "dpsgd"),
    (50000, "tiny", "gdp"),
    (50000, "beta", "dpsgd"),
]


def priors(kind: str, n: int, rng) -> np.ndarray:
    if kind == "beta":
        return rng.beta(0.5, 5.0, n)
    if kind == "uniform":
        return rng.uniform(0.0, 1.0, n)
    return rng.beta(0.3, 30.0, n)  # "tiny": most p_i below 0.02


PROFILES = {"gdp": GaussianDP(1.0), "dpsgd": DPSGD(1.0, 0.01, 1000)}


@pytest.mark.parametrize("n, kind, which", CASES)
def test_fast_count_is_within_one_target_of_exact(monkeypatch, n, kind, which):
    p = priors(kind, n, np.random.default_rng(n))
    profile = PROFILES[which]
    confs = [0.05, 0.5, 0.95]
    assert n >= search._FAST_FROM
    fast = T.count_bound(profile, p, confs)
    monkeypatch.setattr(search, "_FAST_FROM", 10**18)
    monkeypatch.setattr(T, "_COUNTS_MEMO", {})  # else the memo hands back the fast counts
    exact = T.count_bound(profile, p, confs)
    assert np.all(fast >= exact) and np.all(fast <= exact + 1), (fast, exact)


def test_fast_counts_pass_tail_bound():
    """Each count c the fast path returns is certified: tail_bound(c + 1) <= 1 - confidence."""
    p = np.random.default_rng(11).beta(0.5, 5.0, 20000)
    profile = GaussianDP(1.0)
    for conf, c in zip((0.05, 0.95), T.count_bound(profile, p, [0.05, 0.95])):
        assert T.tail_bound(profile, p, int(c) + 1) <= 1 - conf


@pytest.mark.parametrize("approximate", [False, True])
def test_smallest_passing_matches_a_scan_over_v(approximate):
    """smallest_passing (interpolation search on log B, with or without a hint) = the first v with B <= t."""
    rng = np.random.default_rng(5)
    for n in (5, 60, 700):
        run = search.OneRun(GaussianDP(float(rng.uniform(0.3, 3.0))), T.Priors.of(rng.beta(0.5, 3.0, n)), approximate=approximate)
        for eps in rng.uniform(0.0, 5.0, 3):
            values = np.array([run.objective(eps, v) for v in range(n + 2)])
            for t in (1e-9, 0.05, 0.5, 0.95):
                want = int(np.argmax(values <= t))
                for hint in (None, want, want - 1, want + 1, int(rng.integers(0, n + 2))):
                    assert run.smallest_passing(eps, t, hint) == want, (n, eps, t, hint)


# ---- issue 40: the exact fast paths give the plain search's numbers bit for bit
def plain(monkeypatch) -> None:
    """Switch every exact fast path off: the plain search (search._FAST, tails._FAST)."""
    monkeypatch.setattr(search, "_FAST", False)
    monkeypatch.setattr(tails, "_FAST", False)


def test_budget_value_whole_test_matches_the_chunked_scans(monkeypatch):
    """budget_value's test at every a at once (_budget_value_whole) against its chunked scans
    (_budget_value_chunks): the same value and the same J left on the tail, over sequences of calls (each call
    starts from the J the previous one left), with and without a hint, on exact, one-binomial and normal tails,
    and on the chunks' side of _WHOLE_TEST; and on tails of flat steps, where rounding makes the test hold above a
    point where it fails, so the value depends on the J the search starts from (a rounding tie: both are bounds)."""
    rng = np.random.default_rng(40)
    steps = [1.0, 0.9, 0.7, 0.6, 1 / 3, 0.3, 0.2, 0.1, 0.05]
    for trial in range(80):
        n = int(rng.choice([1, 9, 60, 100, 400, 2500]))
        if trial >= 60:  # flat steps
            size = int(rng.integers(3, 60))
            ext = np.concatenate([[1.0], np.sort(rng.choice(steps, size - 1))[::-1]])
            n = size + 4
            make = lambda ext=ext, off=int(rng.integers(1, 5)): tails.Tail(off, ext.copy(), n)
        elif trial % 3 == 0:
            make = lambda b=rng.beta(0.5, 2.0, n): tails.distribution(b).tail()
        elif trial % 3 == 1:
            make = lambda b=np.full(n, rng.uniform()): tails.distribution(b).tail()
        else:
            mean = float(rng.uniform(0, n))
            var = float(rng.uniform(1e-3, mean * (1 - mean / n) + 1e-3))
            make = lambda mean=mean, var=var: search._normal_tail(mean, var, n)
        if trial % 5 == 4:
            monkeypatch.setattr(search, "_WHOLE_TEST", int(rng.integers(1, 40)))  # some ranges go to the chunks
        fast, chunks = make(), make()
        hint = [None, 0, 7, 10**6][trial % 4]
        for v in rng.integers(0, n + 3, 25):
            for m in (1e-12, 1e-3, 0.1, 0.7, 3.0, float(rng.uniform(0, 50))) if trial < 60 else (0.1, 0.2, 0.3, 1 / 3, 2.2):
                monkeypatch.setattr(search, "_FAST", True)
                got = search.budget_value(fast, int(v), m, hint)
                monkeypatch.setattr(search, "_FAST", False)
                want = search.budget_value(chunks, int(v), m, hint)
                assert got == want, (trial, n, v, m, got, want)
                assert getattr(fast, "_last_j", None) == getattr(chunks, "_last_j", None), (trial, n, v, m)
        monkeypatch.setattr(search, "_WHOLE_TEST", 4096)
        if trial >= 60:  # every start: fresh tails, so the J the search starts from is the hint's
            for v in rng.integers(2, n + 1, 4):
                for m in (0.1, 0.2, 1 / 3):
                    for hint in range(int(v) + 3):
                        monkeypatch.setattr(search, "_FAST", True)
                        got = search.budget_value(make(), int(v), m, hint)
                        monkeypatch.setattr(search, "_FAST", False)
                        assert got == search.budget_value(make(), int(v), m, hint), (trial, v, m, hint)


@pytest.mark.skipif(tails._BINOM is not tails._BoostBinom, reason="this scipy has no Boost binomial kernels by those names")
def test_boost_binomial_matches_scipy_stats():
    """_binomial through Boost's kernels (tails._BoostBinom) = through scipy.stats.binom (tails._ScipyBinom), bit for
    bit: the whole support below 128 Bernoullis, the quantile window and its trimmed mass from 128 on."""
    rng = np.random.default_rng(41)
    cases = [(int(c), float(p)) for c, p in zip(rng.integers(8, 3000, 150), rng.uniform(0, 1, 150))]
    cases += [(int(c), float(p)) for c, p in zip(rng.integers(8, 300, 60), 10 ** rng.uniform(-300, 0, 60))]
    cases += [(int(c), 1 - float(p)) for c, p in zip(rng.integers(8, 3000, 60), 10 ** rng.uniform(-16, -1, 60))]
    cases += [(127, 0.5), (128, 0.5), (128, 1e-300), (10**6, 0.3), (10**5, 1e-9), (1000, 5e-324)]
    for count, prob in cases:
        got = tails._binomial(count, prob, tails._BoostBinom)
        want = tails._binomial(count, prob, tails._ScipyBinom)
        assert (got.offset, got.n, got.trimmed) == (want.offset, want.n, want.trimmed), (count, prob)
        assert got.pmf.dtype == want.pmf.dtype and np.array_equal(got.pmf, want.pmf), (count, prob)


def test_distribution_grouped_fast_paths_match_the_plain_steps(monkeypatch):
    """distribution_grouped's one-binomial shortcut and its skipped convolution with the law of 0 (tails._FAST) give
    the plain steps' law bit for bit: one group (below and above 128 Bernoullis), several groups, a tree part,
    Bernoullis at 0 and 1."""
    rng = np.random.default_rng(42)
    cases = [([0.1], [100]), ([0.5796], [100]), ([0.3], [8]), ([0.01], [1000]), ([0.2], [130]), ([0.5], [5]),
             ([0.0, 0.2], [3, 50]), ([0.2, 1.0], [50, 4]), ([0.1, 0.4], [20, 30]), ([0.1, 0.4, 0.7], [3, 20, 200])]
    cases += [(np.sort(rng.uniform(0, 1, k)), rng.integers(1, 40, k)) for k in (2, 5, 30)]
    for values, counts in cases:
        values, counts = np.asarray(values, dtype=float), np.asarray(counts)
        monkeypatch.setattr(tails, "_FAST", True)
        got = tails.distribution_grouped(values, counts)
        monkeypatch.setattr(tails, "_FAST", False)
        want = tails.distribution_grouped(values, counts)
        assert (got.offset, got.n, got.trimmed) == (want.offset, want.n, want.trimmed), (values, counts)
        assert np.array_equal(got.pmf, want.pmf), (values, counts)
        assert np.array_equal(got.tail().ext, want.tail().ext), (values, counts)


def split_cases():
    """A fixed-seed sample of the split theorem's settings: profiles (GDP, (eps, delta)-DP), priors (uniform 1/k,
    Zipf's top value, mixed arrays of 20 - 300 targets, one binomial above 128 targets), set-valued or not."""
    rng = np.random.default_rng(43)
    zipf = float(1.0 / np.sum(np.arange(1, 11) ** -1.84))  # the top prior of Zipf(1.84) over 10 values
    priors = [np.full(100, 0.1), np.full(100, zipf), np.full(100, 0.5), np.full(150, 0.01),
              rng.beta(0.5, 3.0, 20), rng.choice([0.1, 0.5, zipf, 0.01], 60), rng.beta(0.5, 5.0, 300)]
    out = []
    for i, p in enumerate(priors):
        mu = float(np.exp(rng.uniform(np.log(0.05), np.log(6.0))))
        out.append((p, GaussianDP(mu), bool(i % 2)))
        if i < 4:
            out.append((p, ApproxDP(float(rng.uniform(0.1, 10.0)), [1e-5, 1e-3][i % 2]), not i % 2))
    return out


@pytest.mark.parametrize("case", range(len(split_cases())))
def test_split_counts_fast_paths_match_the_plain_search(monkeypatch, case):
    """split_counts with every exact fast path (search._FAST, tails._FAST) = the plain search, bit for bit: the
    counts at four confidences, the eps certifying each, and minimise_over_eps (Theorem 1's tail bound) at a few v."""
    p, profile, set_valued = split_cases()[case]
    g, _ = T._targets_priors(p, None, set_valued)
    targets = 1.0 - np.array([0.05, 0.5, 0.95, 0.999])

    def run_all():
        run = search.OneRun(profile, g, set_valued)
        counts = search.split_counts(run, targets)
        tails_at = [search.minimise_over_eps(search.OneRun(profile, g, set_valued), v) for v in (1, g.n // 4, g.n // 2)]
        return counts, dict(run.best_eps), tails_at

    fast = run_all()
    plain(monkeypatch)
    assert run_all() == fast
