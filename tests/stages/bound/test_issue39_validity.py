"""Issue 39, item 10 (a validity audit): arguments that were taken silently or refused for the wrong cause, and the
floor's label for an accountant's profile."""
from __future__ import annotations

import numpy as np
import pytest

from stages.bound import (DPSGD, ArgumentError, GaussianDP, PureDP, count_bound, expected_count_bound, floor_mechanism,
                          from_dp_event, success_bound, tail_bound, theorems)
from stages.bound.floor import FLOOR_MECHANISM

G = GaussianDP(1.0)


@pytest.mark.parametrize("call", [
    lambda c: tail_bound(G, [0.5] * 3, 2, collision=c),                      # one exact guess: collision unused
    lambda c: count_bound(G, [0.5] * 3, 0.9, collision=c),
    lambda c: success_bound(G, 0.5, collision=c),
    lambda c: success_bound(PureDP(1.0), 0.5, collision=c),  # Theorem 3.1: unused either
])
@pytest.mark.parametrize("collision,why", [
    (1.5, r"a probability in \[0, 1\], got 1\.5"),
    (0.1, r"at least p\^2 .* got collision 0\.1 < p\^2 = 0\.25"),  # sum_x pi(x)^2 >= max_x pi(x)^2 = p^2
    (0.6, r"at most p .* got collision 0\.6 > p = 0\.5"),
])
def test_an_impossible_collision_is_refused_even_where_unused(call, collision, why):
    with pytest.raises(ArgumentError, match=rf"^collision must be {why}"):
        call(collision)


def test_set_valued_success_refuses_a_collision_above_p_under_theorem_3_1_too():
    """For set-valued success p is a set's mass, so only c <= p is known (c >= p^2 is not): Theorem 3.1 does not read
    c, and it is still checked."""
    with pytest.raises(ArgumentError, match=r"^collision must be at most p"):
        success_bound(PureDP(1.0), 0.5, set_valued=True, collision=0.6)
    assert success_bound(PureDP(1.0), 0.5, set_valued=True, collision=0.1) == success_bound(PureDP(1.0), 0.5)


def test_a_possible_collision_is_taken():
    """p = 0.5 with one exact guess: collision in [0.25, 0.5] (a prior (0.5, 0.5) has 0.5, (0.5, 0.25, 0.25) 0.375);
    unused for one exact guess, so the bound is the same as without it."""
    assert tail_bound(G, [0.5] * 3, 2, collision=0.375) == tail_bound(G, [0.5] * 3, 2)
    assert success_bound(G, 0.5, set_valued=True, collision=0.1) >= success_bound(G, 0.5)  # set-valued: c <= p only


@pytest.mark.parametrize("flag", ["yes", 1, None, "False"])
def test_designated_must_be_a_bool(flag):
    with pytest.raises(ArgumentError, match=rf"^designated must be True or False, got {flag!r}\.$"):
        theorems.count_bounds(G, [0.5] * 3, 0.9, designated=flag)


def test_designated_must_be_a_bool_over_the_trials_too():
    """expected_count_bounds passes designated on only for one shared prior: it is checked whatever the priors."""
    with pytest.raises(ArgumentError, match=r"^designated must be True or False, got 'yes'\.$"):
        theorems.expected_count_bounds(G, [[0.5] * 3], 0.9, designated="yes")


def test_designated_takes_numpy_bools():
    assert theorems.count_bounds(G, [0.5] * 3, 0.9, designated=np.bool_(False))[0] == count_bound(G, [0.5] * 3, 0.9)


@pytest.mark.parametrize("set_valued", [False, True])
def test_p_and_distributions_of_different_lengths_name_both(set_valued):
    dists = [[0.5, 0.5]] * 4
    with pytest.raises(ArgumentError, match=r"^p and distributions must describe the same targets, got 5 prior "
                                            r"successes and 4 distributions"):
        count_bound(G, [0.5] * 5, 0.9, distributions=dists, set_valued=set_valued)


def test_trials_of_different_n_say_so():
    """A ragged p_runs was "p_runs must be a number or an array of numbers": the cause is the trials' sizes."""
    for p_runs in ([[0.1, 0.2], [0.1]], [theorems.Priors([0.1], [2]), theorems.Priors([0.1], [3])]):
        with pytest.raises(ArgumentError, match=r"^p_runs must give every run the same number of targets n \(every "
                                                r"trial must attack the same n targets.*\), got trials of different "
                                                r"numbers of targets: \[2, (1|3)\]\.$"):
            expected_count_bound(G, p_runs, 0.9)


def test_the_floor_of_an_accountants_profile_says_its_curve_is_the_pessimistic_one():
    """DP-SGD's floor member is randomized response certified below dp_accounting's pessimistic delta(eps), which lies
    above DP-SGD's exact curve: the label says so (and does not for a closed-form profile)."""
    assert "pessimistic curve" in FLOOR_MECHANISM and "not the mechanism's exact one" in FLOOR_MECHANISM
    for profile in (DPSGD(1.0, 0.01, 100), from_dp_event(_subsampled_gaussian(), neighboring="add_remove")):
        label = floor_mechanism(profile)
        assert "as dp_accounting computes it: its pessimistic curve" in label and "not the exact one" in label, label
    for profile in (G, DPSGD(2.0, 1.0, 4)):  # exact closed forms (full batch: mu-GDP)
        assert "pessimistic" not in floor_mechanism(profile)


def _subsampled_gaussian():
    import dp_accounting

    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)), 100)
