"""The attack game (Algorithm 1): determinism, what metrics.json holds, and the bound's coverage."""
from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from pipeline.cache import StageCache
from pipeline.game import ConfigError, compute_metrics, play_trials, build_boxes
from pipeline.job import run_game

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


def test_a_seed_list_is_a_second_game_of_the_same_setting(compose_config):
    """seed=[7, 1] (Figure llm's idealized game beside seed 7): SeedSequence([7, 1]), the same game as passing that
    entropy to the engine, another game than seed 7; a bad entry is refused naming it."""
    from pipeline.game import ConfigError

    small = ("prior.n_targets=40", "trials=15", "mechanism.epsilon=4")
    listed, _, _ = compute_metrics(compose_config(*small, "seed=[7,1]"))
    passed, _, _ = compute_metrics(compose_config(*small, "seed=7"), seed=[7, 1])
    plain, _, _ = compute_metrics(compose_config(*small, "seed=7"))
    assert listed["attack_successes"] == passed["attack_successes"] and listed["seed"] == [7, 1]
    assert listed["attack_successes"] != plain["attack_successes"]
    with pytest.raises(ConfigError, match=r"seed\[1\] must be an integer >= 0, got -1"):
        compute_metrics(compose_config(*small, "seed=[7,-1]"))
    with pytest.raises(ConfigError, match="non-empty list"):
        compute_metrics(compose_config(*small, "seed=[]"))


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
        assert played.attack.successes[t] == boxes.metric.score(X, z).sum()
        z_star = boxes.prior.a_priori_guess(boxes.metric)
        assert played.prior_successes[t] == boxes.metric.score(X, z_star).sum()


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
    assert metrics["exceed"]["0.95"] == pytest.approx(exceeded / trials)
    # The attack does learn something, so the check is not vacuous.
    assert attack.mean() > np.mean(metrics["prior_successes"])


@pytest.mark.parametrize("override,key,value", [
    ("mechanism.epsilon=-1", "mechanism.epsilon", "-1"),
    ("confidences=[0.05,1.5]", "confidences", "1.5"),
    ("trials=0", "trials", "0"),
    ("bound.groups=0", "groups", "0"),
])
def test_refused_value_raises_one_sentence_and_writes_nothing(override, key, value, compose_config, tmp_path):
    cfg = compose_config("prior.n_targets=10", "trials=5", override)
    with pytest.raises(ConfigError) as info:
        run_game(cfg, tmp_path / "job", cache=StageCache(tmp_path / "cache"))
    message = str(info.value)
    assert key in message and value in message and "\n" not in message
    assert not (tmp_path / "job" / "metrics.json").exists()


@pytest.mark.parametrize("metric", ["exact", "within"])
def test_prior_baseline_makes_as_many_guesses_as_the_attack(metric, compose_config):
    """Issue: with attack.k=2 the baseline used a 1-guess z*; it must be the prior-only attack with the same k."""
    small = ("prior=zipf", "prior.n_targets=40", "trials=15", f"metric={metric}", "attack.k=2")
    prior_only, _, _ = compute_metrics(compose_config(*small, "attack=prior_only"))
    assert prior_only["prior_successes"] == prior_only["attack_successes"]
    attack, _, _ = compute_metrics(compose_config(*small, "attack=bayes_optimal"))
    assert attack["prior_successes"] == prior_only["attack_successes"]  # same seed: the same targets
    assert attack["k"] == 2 and attack["baseline"] == {"guess": "z*", "k": 2, "metric": metric}


def test_more_guesses_than_candidates_is_refused(compose_config):
    with pytest.raises(ConfigError) as info:
        compute_metrics(compose_config("prior.n_targets=5", "trials=2", "prior.domain_size=4", "mechanism.domain_size=4",
                                       "attack.k=5"))
    message = str(info.value)
    assert "attack.k" in message and "5" in message and "domain_size (4)" in message and "\n" not in message


def test_top_level_data_dir_reaches_the_zipf_prior(compose_config, tmp_path, monkeypatch):
    """Issue: data_dir=... was ignored by prior=zipf; only $ADVBOUNDS_DATA or prior.data_dir worked."""
    monkeypatch.delenv("ADVBOUNDS_DATA", raising=False)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "c.csv").write_text("count\n81\n27\n9\n3\n1\n")
    cfg = compose_config("prior=zipf", "prior.counts_file=c.csv", f"data_dir={tmp_path / 'mine'}",
                         "prior.n_targets=5", "trials=2")
    assert cfg.prior.data_dir == str(tmp_path / "mine")
    metrics, _, boxes = compute_metrics(cfg)
    assert boxes.prior.exponent == pytest.approx(metrics["params"]["prior"]["exponent"]) and boxes.prior.exponent > 1
    with pytest.raises(ConfigError) as info:
        compute_metrics(compose_config("prior=zipf", "prior.counts_file=none.csv", f"data_dir={tmp_path / 'mine'}"))
    message = str(info.value)  # the file, the data_dir it was looked for in, and the fix
    assert f"none.csv does not exist in data_dir {tmp_path / 'mine'} " in message and "data_dir=" in message


def test_trials_keep_no_per_target_arrays_unless_asked(compose_config, tmp_path):
    """Issue: every trial's guesses were kept (160 MB a trial at 1e7 targets). Now a trial keeps its counts and
    its grouped prior successes; save_per_target=true keeps the per-target arrays and writes them to the job."""
    n, trials = 3000, 4
    small = (f"prior.n_targets={n}", f"trials={trials}", "bound=expected")
    metrics, played, _ = compute_metrics(compose_config(*small))
    assert played.guesses is None and played.attack_prior_success is None and not played.per_target
    per_target_bytes = n * 8  # one float per target
    assert sum(a.nbytes for a in played.to_arrays().values()) < per_target_bytes  # uniform prior: one group per trial
    metrics_kept = run_game(compose_config(*small, "save_per_target=true"), tmp_path / "job")
    kept = np.load(tmp_path / "job" / "per_target" / "guesses.npy")
    assert kept.shape == (trials, n, 1)
    p = np.load(tmp_path / "job" / "per_target" / "attack_prior_success.npy")
    assert p.shape == (trials, n) and np.allclose(p, 0.1)
    # The same bound and successes either way.
    assert metrics_kept["bound"] == metrics["bound"] and metrics_kept["attack_successes"] == metrics["attack_successes"]
    assert metrics["attack_prior_success_mean"] == pytest.approx(0.1 * n)


def test_long_work_logs_its_progress(compose_config, tmp_path, caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="pipeline.game"):
        run_game(compose_config("prior.n_targets=10", "trials=7"), tmp_path / "job", cache=StageCache(tmp_path / "c"))
    messages = [r.getMessage() for r in caplog.records]
    assert "trials: starting 7 trials" in messages
    assert any(m.startswith("trials: 7/7 trials (100%)") for m in messages), messages
    assert any(m.startswith("stage trials computed: ") for m in messages), messages
    assert any("prior baseline (z*, k=1, exact)" in m for m in messages), messages


def test_a_job_never_replaces_another_jobs_metrics(compose_config, tmp_path):
    cfg = compose_config("prior.n_targets=10", "trials=3")
    run_game(cfg, tmp_path / "job")
    before = (tmp_path / "job" / "metrics.json").read_bytes()
    with pytest.raises(ConfigError, match="already holds a metrics.json"):
        run_game(compose_config("prior.n_targets=10", "trials=4"), tmp_path / "job")
    assert (tmp_path / "job" / "metrics.json").read_bytes() == before


def test_the_theorem_record_reads_every_trial_of_a_per_trial_law(compose_config):
    """With a law per trial the bound box bounds each trial on its own law; the theorem record's numbers over the
    trials (pure_dp's expected sum of beta_i) still average every trial, as for a fixed prior."""
    from pipeline.game import bound_of, build_boxes

    cfg = compose_config("mechanism=randomized_response", "bound=pure_dp", "prior.n_targets=10", "trials=3")
    boxes = build_boxes(cfg)
    summary = play_trials(boxes, seed=0, trials=3).attack.trials
    confidences = np.array([0.5, 0.95])
    fixed = bound_of(boxes, summary, confidences)
    per_trial = bound_of(boxes, summary, confidences, laws=[boxes.prior] * 3)
    assert per_trial["theorem"]["expected_trials"] == fixed["theorem"]["expected_trials"] == 3
    assert per_trial["theorem"]["expected"] == pytest.approx(fixed["theorem"]["expected"])
    assert per_trial["theorem"]["theorem"] == fixed["theorem"]["theorem"]
