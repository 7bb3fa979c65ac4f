"""The played game is a typed record (its cache layout kept apart), and refusals carry their config key as data."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.errors import ConfigError
from pipeline.game import build_boxes, check_run_settings, compute_metrics, play_trials
from pipeline.record import PlayedGame
from stages.bound import ArgumentError, GaussianDP


def test_record_round_trips_through_the_cache_layout(compose_config):
    """to_arrays / from_arrays keep every number: the attack, its variants' keys, the release's reports."""
    cfg = compose_config("prior.n_targets=12", "trials=3", "seed=5", "save_per_target=true")
    played = play_trials(build_boxes(cfg), seed=5, trials=3, per_target=True)
    assert isinstance(played, PlayedGame) and played.per_target and not played.per_trial_law
    again = PlayedGame.from_arrays(played.to_arrays())
    assert again.labels == played.labels and again.k == played.k and again.n_targets == 12
    for a, b in zip(played.attacks, again.attacks):
        np.testing.assert_array_equal(a.successes, b.successes)
        np.testing.assert_array_equal(a.trials.values, b.trials.values)
        np.testing.assert_array_equal(a.trials.offsets, b.trials.offsets)
    np.testing.assert_array_equal(again.guesses, played.guesses)
    np.testing.assert_array_equal(again.prior_expected, played.prior_expected)
    # the layout the trials stage has always stored (so trials cached before the record are read back)
    stored = played.to_arrays()
    assert {"attack_labels", "attack_successes", "p_values", "p_counts", "p_offsets", "prior_successes",
            "prior_expected", "k", "n_targets", "guesses", "attack_prior_success"} <= set(stored)


def test_record_refuses_repeated_labels_and_names_missing_ones(compose_config):
    cfg = compose_config("prior.n_targets=6", "trials=2")
    played = play_trials(build_boxes(cfg), seed=0, trials=2)
    with pytest.raises(ValueError, match="attack labels must be distinct"):
        PlayedGame(attacks=played.attacks * 2, prior_successes=played.prior_successes,
                   prior_expected=played.prior_expected, k=played.k, n_targets=played.n_targets)
    with pytest.raises(KeyError, match="no attack labelled 'nope'"):
        played.of("nope")


def test_a_box_argument_error_names_its_config_key_as_data(compose_config):
    with pytest.raises(ArgumentError) as raised:
        GaussianDP(-1.0)
    assert raised.value.argument == "mu"
    with pytest.raises(ConfigError) as refused:
        compute_metrics(compose_config("prior.n_targets=-3", "trials=2"))
    assert refused.value.key == "prior.n_targets"
    assert str(refused.value).startswith("prior.n_targets")


@pytest.mark.parametrize("override, key", [("seed=-1", "seed"), ("seed=[3,-1]", "seed"), ("trials=0", "trials"),
                                           ("confidences=[0.5,0.5]", "confidences"), ("confidences=[]", "confidences"),
                                           ("confidences=[1.5]", "confidences")])
def test_run_settings_refusals_carry_their_key(compose_config, override, key):
    with pytest.raises(ConfigError) as refused:
        check_run_settings(compose_config(override))
    assert refused.value.key == key and key in str(refused.value)
