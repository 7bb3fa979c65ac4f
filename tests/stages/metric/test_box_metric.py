"""Metrics on hand examples, and their best guesses against brute force over every guess set."""
import itertools

import numpy as np
import pytest

from stages.metric import Exact, Within


def test_exact_score_hand_example():
    X = np.array([3, 0, 7])
    z = np.array([[3, 1], [2, 5], [9, 7]])
    assert Exact().score(X, z).tolist() == [1, 0, 1]
    # A 1-d guess array is one guess per target.
    assert Exact().score(X, np.array([3, 1, 7])).tolist() == [1, 0, 1]


def test_within_score_hand_example():
    X = np.array([3, 0, 7, 5])
    z = np.array([[5, 9], [1, 1], [9, 9], [0, 4]])
    assert Within(distance=1).score(X, z).tolist() == [0, 1, 0, 1]
    assert Within(distance=2).score(X, z).tolist() == [1, 1, 1, 1]
    assert Within(distance=0).score(X, z).tolist() == Exact().score(X, z).tolist()


def test_success_probability_hand_example():
    probabilities = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    z = np.array([[0, 3], [2, 2]])
    assert Exact().success_probability(probabilities, z) == pytest.approx([0.5, 0.25])
    # distance 1 around 0 and 3 covers {0, 1, 2, 3}; around 2 covers {1, 2, 3}.
    assert Within(distance=1).success_probability(probabilities, z) == pytest.approx([1.0, 0.75])


def test_success_probability_matches_monte_carlo_of_score():
    rng = np.random.default_rng(1)
    probabilities = rng.dirichlet(np.ones(6), size=4)
    z = rng.integers(0, 6, size=(4, 2))
    draws = np.stack([(rng.random((20000, 1)) > np.cumsum(row)).sum(1) for row in probabilities], axis=1)
    for metric in (Exact(), Within(distance=1)):
        empirical = np.mean([metric.score(x, z) for x in draws[:2000]], axis=0)
        assert np.all(np.abs(empirical - metric.success_probability(probabilities, z)) < 0.05)


def _brute_force_best(metric, row, k):
    m = row.shape[0]
    return max(
        metric.success_probability(row[None], np.array([combo]))[0]
        for combo in itertools.combinations_with_replacement(range(m), k)
    )


@pytest.mark.parametrize("metric", [Exact(), Within(distance=0), Within(distance=1), Within(distance=2.5)])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_best_guess_is_optimal(metric, k):
    rng = np.random.default_rng(k)
    for m in (1, 4, 7, 9):
        probabilities = rng.dirichlet(np.full(m, 0.5), size=5)
        z = metric.best_guess(probabilities, k)
        assert z.shape == (5, k) and z.min() >= 0 and z.max() < m
        achieved = metric.success_probability(probabilities, z)
        for row, value in zip(probabilities, achieved):
            assert value == pytest.approx(_brute_force_best(metric, row, k), abs=1e-12)


def test_exact_best_guess_orders_by_probability():
    probabilities = np.array([[0.1, 0.5, 0.4], [0.2, 0.2, 0.6]])
    assert Exact().best_guess(probabilities, 2).tolist() == [[1, 2], [2, 0]]


@pytest.mark.parametrize("distance", [-1, float("nan"), "far"])
def test_bad_distance_raises(distance):
    with pytest.raises(ValueError, match="distance"):
        Within(distance=distance)


def test_bad_guesses_raise():
    with pytest.raises(ValueError, match="guesses"):
        Exact().score(np.array([1, 2]), np.array([[1], [2], [3]]))
    with pytest.raises(ValueError, match="k"):
        Exact().best_guess(np.full((2, 3), 1 / 3), 0)
