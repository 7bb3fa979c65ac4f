"""The attack game (Algorithm 1): determinism, what metrics.json holds, and the bound's coverage."""
from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from pipeline.cache import StageCache
from pipeline.game import ConfigError, compute_metrics, play_trials, build_boxes, run_game

REQUIRED_KEYS = {"n_targets", "trials", "attack_successes", "prior_successes", "bound", "privacy"}


def test_metrics_json_has_the_required_numbers(compose_config, tmp_path):
    cfg = compose_config("prior.n_targets=30", "trials=12", "mechanism.epsilon=2")
    metrics = run_game(cfg, tmp_path / "job")
    written = json.loads((tmp_path / "job" / "metrics.json").read_text())
    assert REQUIRED_KEYS <= set(written)
    assert written["attack_successes"] == metrics["attack_successes"]
    assert written["attack_success_mean"] == pytest.approx(np.mean(written["attack_successes"]))
    assert written["privacy"]["profile"] and written["privacy"]["epsilon"] <= 2.0 + 1e-6
    assert written["boxes"] == {"prior": "uniform", "mechanism": "gaussian", "attack": "bayes_optimal",
                                "metric": "exact", "bound": "one_run"}
    assert (tmp_path / "job" / "figures" / "successes.png").is_file()
    assert not list((tmp_path / "job").glob(".*.tmp")), "no temporary files are left behind"


def test_same_seed_same_game_other_seed_other_game(compose_config):
    small = ("prior.n_targets=40", "trials=15", "mechanism.epsilon=4")
    first, _, _ = compute_metrics(compose_config(*small, "seed=7"))
    again, _, _ = compute_metrics(compose_config(*small, "seed=7"))
    other, _, _ = compute_metrics(compose_config(*small, "seed=8"))
    assert first["attack_successes"] == again["attack_successes"]
    assert first["prior_successes"] == again["prior_successes"]
    assert first["attack_successes"] != other["attack_successes"]


def test_prior_baseline_matches_the_prior_only_attack(compose_config):
    """The baseline column is the prior-only attack's success on the same targets."""
    cfg = compose_config("attack=prior_only", "prior=zipf", "prior.n_targets=30", "trials=20")
    metrics, _, _ = compute_metrics(cfg)
    assert metrics["attack_successes"] == metrics["prior_successes"]


def test_trials_are_played_as_algorithm_1(compose_config):
    """Replaying trial t by hand (same seed tree) gives the recorded successes."""
    cfg = compose_config("prior.n_targets=25", "trials=3", "seed=11")
    boxes = build_boxes(cfg)
    played = play_trials(boxes, seed=11, trials=3)
    for t, child in enumerate(np.random.SeedSequence(11).spawn(3)):
        data_seed, mechanism_seed = child.spawn(2)
        X = boxes.prior.sample(np.random.default_rng(data_seed), boxes.prior.n_targets)
        a = boxes.mechanism.release(X, np.random.default_rng(mechanism_seed))
        z = boxes.attack.guess(a, boxes.prior, boxes.mechanism, boxes.metric)
        assert played["attack_successes"][t] == boxes.metric.score(X, z).sum()
        z_star = boxes.prior.a_priori_guess(boxes.metric)
        assert played["prior_successes"][t] == boxes.metric.score(X, z_star).sum()


def _allowed_exceedances(trials: int, level: float = 0.05, false_alarm: float = 1e-3) -> int:
    """If Pr[attack > bound] <= level, the number of trials above it is stochastically below
    Binomial(trials, level); more than its (1 - false_alarm) quantile would refute the bound at
    that false-alarm rate (the games are seeded, so the test itself is deterministic)."""
    return int(stats.binom.ppf(1 - false_alarm, trials, level))


@pytest.mark.parametrize("overrides", [
    # Worst-case-prior bound against the Bayes-optimal attack on the idealized Gaussian mechanism.
    ("mechanism=gaussian", "mechanism.epsilon=2", "bound=one_run", "prior=uniform"),
    ("mechanism=gaussian", "mechanism.epsilon=4", "bound=one_run", "prior=zipf"),
    # Theorem 3.1, conditional on each trial's release, against the Bayes-optimal attack on RR.
    ("mechanism=randomized_response", "mechanism.epsilon=2", "bound=pure_dp", "prior=zipf"),
], ids=["gaussian-uniform", "gaussian-zipf", "rr-pure_dp"])
def test_bayes_optimal_attack_rarely_exceeds_the_95_percent_bound(overrides, compose_config):
    trials = 400
    cfg = compose_config(*overrides, "attack=bayes_optimal", "metric=exact", "prior.n_targets=100",
                         f"trials={trials}", "seed=2024")
    metrics, _, _ = compute_metrics(cfg)
    attack = np.asarray(metrics["attack_successes"])
    bound = np.asarray((metrics.get("bound_per_trial") or metrics["bound"])["0.95"])
    exceeded = int(np.sum(attack > bound))
    assert exceeded <= _allowed_exceedances(trials), (exceeded, trials)  # <= 30 of 400 (7.5%)
    assert metrics["bound_exceeded_fraction"] == pytest.approx(exceeded / trials)
    # The attack does learn something, so the check is not vacuous.
    assert attack.mean() > np.mean(metrics["prior_successes"])


@pytest.mark.parametrize("override,key,value", [
    ("mechanism.epsilon=-1", "mechanism.epsilon", "-1"),
    ("confidences=[0.05,1.5]", "confidences", "1.5"),
    ("trials=0", "trials", "0"),
])
def test_refused_value_raises_one_sentence_and_writes_nothing(override, key, value, compose_config, tmp_path):
    cfg = compose_config("prior.n_targets=10", "trials=5", override)
    with pytest.raises(ConfigError) as info:
        run_game(cfg, tmp_path / "job", cache=StageCache(tmp_path / "cache"))
    message = str(info.value)
    assert key in message and value in message and "\n" not in message
    assert not (tmp_path / "job" / "metrics.json").exists()
