"""The theorems take grouped prior successes (theorems.Priors: distinct values, counts, collision per group)
and give what they give for the same priors expanded to one entry per target, in any order.

Grid: uniform, Zipf-like and mixed priors (p = 0 and p = 1 included), n from 1 to 150 (and one fast-path
n = 2e4), one exact guess and set-valued success, collision unknown or given per group; approximate DP
(GDP and (eps, delta)-DP) and pure DP. Counts must be equal; bounds equal to 1e-12 (an expanded array
is grouped once, and its mean collision per group can differ from the given one in the last bit).
"""
from __future__ import annotations

import numpy as np
import pytest

from stages.bound import theorems as T
from stages.bound.box import PlayedTrials
from stages.bound.profiles import ApproxDP, GaussianDP, PureDP

LEVELS = [0.05, 0.5, 0.95]
PROFILES = {"gdp": GaussianDP(1.0), "approx": ApproxDP(1.0, 1e-3), "pure": PureDP(1.0)}


def groups(kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, counts) of n targets' priors, values distinct and ascending."""
    if kind == "uniform":
        return np.array([0.3]), np.array([n])
    if kind == "zipf":  # Zipf(1.1) masses over 6 candidates, more targets on the likelier ones
        masses = np.arange(1, 7) ** -1.1 / np.sum(np.arange(1, 7) ** -1.1)
        weights = masses
    else:  # mixed: impossible and certain targets next to ordinary ones
        masses = np.array([0.0, 0.02, 0.25, 0.5, 0.97, 1.0])
        weights = np.array([0.1, 0.3, 0.2, 0.2, 0.1, 0.1])
    counts = np.floor(weights * n).astype(int)
    counts[np.argmax(counts)] += n - counts.sum()
    keep = counts > 0
    order = np.argsort(masses[keep])
    return masses[keep][order], counts[keep][order]


def expand(values, counts, collision, seed: int):
    """The same priors one entry per target, shuffled (and each target's collision probability)."""
    order = np.random.default_rng(seed).permutation(int(np.sum(counts)))
    p = np.repeat(values, counts)[order]
    return p, None if collision is None else np.repeat(collision, counts)[order]


CASES = [(kind, n, sv, coll) for kind in ("uniform", "zipf", "mixed") for n in (1, 6, 60, 150)
         for sv, coll in ((False, False), (True, False), (True, True))]


@pytest.mark.parametrize("kind, n, set_valued, with_collision", CASES)
def test_grouped_and_expanded_priors_give_the_same_bounds(kind, n, set_valued, with_collision):
    values, counts = groups(kind, n)
    collision = np.minimum(np.linspace(0.05, 0.4, len(values)), values) if with_collision else None
    grouped = T.Priors(values, counts, collision)
    p, c = expand(values, counts, collision, seed=n)
    assert grouped.n == n and np.array_equal(T.Priors.of(p, c).counts, counts)
    for name, profile in PROFILES.items():
        kw = dict(set_valued=set_valued)
        got = T.count_bound(profile, grouped, LEVELS, **kw)
        want = T.count_bound(profile, p, LEVELS, collision=c, **kw)
        assert np.array_equal(got, want), (name, got, want)
        for v in sorted({max(1, n // 3), n} if n < 60 else {n // 3}):
            g_value, g_eps = T.tail_bound(profile, grouped, v, return_eps=True, **kw)
            e_value, e_eps = T.tail_bound(profile, p, v, return_eps=True, collision=c, **kw)
            assert g_value == pytest.approx(e_value, abs=1e-12, rel=1e-9), (name, v)
            at = 1.3 if name != "pure" else 1.0
            assert T.tail_bound_at(profile, grouped, v, at, **kw) == pytest.approx(
                T.tail_bound_at(profile, p, v, at, collision=c, **kw), abs=1e-12, rel=1e-12), (name, v)
    assert T.pure_dp_tail(0.8, grouped, max(1, n // 2)) == T.pure_dp_tail(0.8, p, max(1, n // 2))
    assert np.array_equal(T.pure_dp_count_bound(0.8, grouped, LEVELS), T.pure_dp_count_bound(0.8, p, LEVELS))


@pytest.mark.parametrize("kind, n", [(kind, n) for kind in ("uniform", "zipf", "mixed") for n in (1, 6, 60, 150)])
def test_expected_bounds_take_one_priors_per_run(kind, n):
    values, counts = groups(kind, n)
    rng = np.random.default_rng(n)
    runs = [T.Priors(values, counts), T.Priors(values[::-1], counts)]  # a run whose values differ
    if len(values) > 1:
        runs.append(T.Priors(values, rng.multinomial(n - len(values), np.ones(len(values)) / len(values)) + 1))
    arrays = np.stack([expand(r.values, r.counts, None, seed=i)[0] for i, r in enumerate(runs)])
    for profile in (PROFILES["gdp"], PROFILES["pure"]):
        assert np.array_equal(T.expected_count_bound(profile, runs, LEVELS), T.expected_count_bound(profile, arrays, LEVELS))
        v = max(1, n // 3)
        (g_value, g_se), (e_value, e_se) = T.expected_tail(profile, runs, v), T.expected_tail(profile, arrays, v)
        assert g_value == pytest.approx(e_value, abs=1e-12)
        assert g_se == pytest.approx(e_se, abs=1e-12, nan_ok=True)
    played = PlayedTrials.from_groups([(r.values, r.counts) for r in runs], k=1, n_targets=n)
    assert [played.priors(r).counts.tolist() for r in range(len(played))] == [r.counts.tolist() for r in runs]


def test_fast_path_counts_agree_for_grouped_input():
    """n = 2e4 (count_bound's fast path, _count_fast) with five distinct priors, one exact guess and set-valued."""
    values, counts = groups("zipf", 20000)
    collision = np.minimum(0.2, values)
    p, c = expand(values, counts, collision, seed=1)
    for set_valued in (False, True):
        got = T.count_bound(GaussianDP(1.0), T.Priors(values, counts, collision), LEVELS, set_valued=set_valued)
        want = T.count_bound(GaussianDP(1.0), p, LEVELS, set_valued=set_valued, collision=c)
        assert np.array_equal(got, want)


def test_calibrate_noise_and_single_target_views_take_priors():
    values, counts = groups("zipf", 40)
    p, _ = expand(values, counts, None, seed=0)
    grouped = T.Priors(values, counts)
    assert T.calibrate_noise(grouped, 0.2) == T.calibrate_noise(p, 0.2)
    assert T.calibrate_noise(grouped, 20, kind="count", rtol=1e-3) == T.calibrate_noise(p, 20, kind="count", rtol=1e-3)
    one = T.Priors([0.4], [1], [0.1])
    assert T.tail_bound(GaussianDP(1.0), one, 1, set_valued=True) == pytest.approx(
        T.success_bound(GaussianDP(1.0), 0.4, set_valued=True, collision=0.1), abs=1e-12)


def test_priors_merge_duplicates_and_drop_empty_groups():
    merged = T.Priors([0.5, 0.1, 0.5, 0.3], [2, 1, 3, 0], [0.1, 0.0, 0.2, 0.9])
    assert merged.values.tolist() == [0.1, 0.5] and merged.counts.tolist() == [1, 5] and merged.n == 6
    assert merged.collision == pytest.approx([0.0, (2 * 0.1 + 3 * 0.2) / 5])
    assert T.Priors.of([0.2, 0.2, 0.7], [0.1, 0.2, 0.5]).collision == pytest.approx([0.15, 0.5])
    assert T.Priors.of([0.2, 0.2, 0.7], 0.15).collision.tolist() == [0.15, 0.15]
    # the numerators of the split theorem's weights, summed per group; 0 where p = 0
    both = T.Priors([0.0, 0.4], [3, 2], [0.5, 0.25])
    assert both.numerator_sums(False).tolist() == [0.0, 2 * 0.6]
    assert both.numerator_sums(True).tolist() == [0.0, 2 * 0.75]
    assert T.Priors([0.0, 0.4], [3, 2]).numerator_sums(True).tolist() == [0.0, 2.0]


@pytest.mark.parametrize("build, match", [
    (lambda: T.Priors([0.2, 1.5], [1, 1]), r"^p must be a probability"),
    (lambda: T.Priors([0.2, 0.3], [1, -1]), r"^counts must be integers >= 0"),
    (lambda: T.Priors([0.2, 0.3], [1.5, 1]), r"^counts must be integers >= 0"),
    (lambda: T.Priors([0.2, 0.3], [1]), r"^counts must be integers >= 0"),
    (lambda: T.Priors([0.2], [0]), r"^p must hold at least one"),
    (lambda: T.Priors([0.2], [1], [1.2]), r"^collision must be a probability"),
    (lambda: T.Priors([0.2, 0.5], [1, 2], [0.1, 0.6]), r"^collision must be at most p for every target"),
    (lambda: T.count_bound(GaussianDP(1.0), [0.2, 0.3], set_valued=True, collision=[0.25, 0.1]),
     r"^collision must be at most p for every target"),
    (lambda: T.Priors.of([0.2, 0.3], [0.1, 0.2, 0.3]), r"^collision must be one probability or one per target"),
    (lambda: T.count_bound(GaussianDP(1.0), T.Priors([0.2], [3]), set_valued=True, collision=[0.1] * 3),
     r"^collision must be None when p is a Priors"),
    (lambda: T.expected_tail(GaussianDP(1.0), [T.Priors([0.2], [3]), T.Priors([0.2], [4])], 1),
     r"^p_runs must give every run the same number of targets"),
])
def test_bad_priors_raise_one_sentence(build, match):
    with pytest.raises(ValueError, match=match):
        build()
