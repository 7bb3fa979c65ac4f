"""The bound stage: a game's bounds and floor are cached, keyed by what determines them and nothing else, and a
rerun reads the same numbers bit for bit without computing a bound."""
from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import numpy as np
import pytest

import stages.bound.prior_run
from pipeline.cache import StageCache, config_key
from pipeline.game import build_boxes, bound_stage_config, check_run_settings, trials_stage_config
from pipeline.job import run_game
from stages.bound.accountants import DeltaCurve
from stages.bound.box import theorem_versions

SMALL = ("prior.n_targets=12", "trials=4")
# metrics.json fields that say which stages were computed or reused: the only ones a warm run may change
_STAGE_FIELDS = ("stages",)


def _numbers(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in _STAGE_FIELDS}


def _written(job) -> dict:
    return json.loads((job / "metrics.json").read_text())


def test_warm_run_reads_the_cold_runs_bounds_bit_for_bit(compose_config, tmp_path, caplog):
    cfg = compose_config(*SMALL, "prior=zipf")
    cold = run_game(cfg, tmp_path / "cold", cache=StageCache(cfg.cache_dir))
    caplog.set_level(logging.INFO, logger="pipeline.game")
    warm = run_game(compose_config(*SMALL, "prior=zipf"), tmp_path / "warm", cache=StageCache(cfg.cache_dir))
    assert cold["stages"]["bound"]["reused"] is False and warm["stages"]["bound"]["reused"] is True
    assert cold["stages"]["bound"]["key"] == warm["stages"]["bound"]["key"]
    # the warm run computed no bound: its log says the stage was reused, and no theorem was logged as computed
    assert any(r.getMessage().startswith("stage bound reused") for r in caplog.records)
    assert not any(r.getMessage().startswith("stage bound computed") for r in caplog.records)
    written_cold, written_warm = _written(tmp_path / "cold"), _written(tmp_path / "warm")
    assert written_cold["bound"] is not None and written_cold["worst_case_floor"]["counts"] is not None
    assert _numbers(written_cold) == _numbers(written_warm)
    assert json.dumps(_numbers(written_cold)) == json.dumps(_numbers(written_warm))  # same text, same order
    # without a cache the same numbers again ("one question, one answer")
    uncached = run_game(compose_config(*SMALL, "prior=zipf"), tmp_path / "none", cache=None)
    assert uncached["stages"]["bound"] == {"key": None, "reused": False}
    assert json.dumps(_numbers(_written(tmp_path / "none"))) == json.dumps(_numbers(written_cold))


def test_the_artifact_says_what_determined_it(compose_config, tmp_path):
    cfg = compose_config(*SMALL)
    metrics = run_game(cfg, tmp_path / "job", cache=StageCache(cfg.cache_dir))
    folder = tmp_path / "outputs" / "cache" / "bound" / metrics["stages"]["bound"]["key"]
    config = json.loads((folder / "config.json").read_text())
    assert config["trials"] == metrics["stages"]["trials"]["key"] and config["theorems"] == theorem_versions()
    assert config["n"] == 12 and config["confidences"] == metrics["confidences"]
    record = json.loads((folder / "bound.json").read_text())
    assert record["floor"] == metrics["worst_case_floor"]
    assert record["attacks"][metrics["attack_label"]]["theorem"] == metrics["bound_theorem"]


def _key(compose_config, *overrides: str) -> str:
    cfg = compose_config(*SMALL, *overrides)
    seed, trials, confidences = check_run_settings(cfg)
    boxes = build_boxes(cfg)
    trials_key = config_key(trials_stage_config(cfg, seed, trials, boxes))
    return config_key(bound_stage_config(cfg, boxes, confidences, trials_key))


@pytest.mark.parametrize("overrides", [
    ("mechanism.epsilon=2",),            # a profile parameter
    ("mechanism.delta=1e-6",),           # another one
    ("confidences=[0.05,0.5]",),         # the confidences
    ("prior=zipf",),                     # the prior
    ("prior.domain_size=20",),           # the prior's setting
    ("prior.n_targets=13",),             # n
    ("bound.groups=3",),                 # the bound box's setting
    ("bound=expected",),                 # another bound box
    ("metric=within", "metric.distance=1"),  # the success metric
    ("seed=1",),                         # other trials (the trials' key)
])
def test_each_ingredient_changes_the_key(compose_config, overrides):
    assert _key(compose_config, *overrides) != _key(compose_config)


def test_what_does_not_determine_the_bound_keeps_the_key(compose_config):
    assert _key(compose_config, "name=other", "mechanism.epsilon=1.0") == _key(compose_config, "mechanism.epsilon=1")


@pytest.mark.parametrize("module, constant", [(stages.bound.prior_run, "PRIOR_RUN_VERSION"),
                                              (stages.bound.box, "BOX_CODE_VERSION")])
def test_a_new_theorem_version_misses_the_cache(compose_config, tmp_path, monkeypatch, module, constant):
    cfg = compose_config(*SMALL)
    first = run_game(cfg, tmp_path / "a", cache=StageCache(cfg.cache_dir))
    monkeypatch.setattr(module, constant, getattr(module, constant) + 1)
    again = run_game(compose_config(*SMALL), tmp_path / "b", cache=StageCache(cfg.cache_dir))
    assert again["stages"]["trials"]["reused"] is True  # the same trials ...
    assert again["stages"]["bound"]["reused"] is False  # ... but the bound is computed afresh
    assert again["stages"]["bound"]["key"] != first["stages"]["bound"]["key"]
    assert again["bound"] == first["bound"]  # (the code is the same: so are the numbers)


def test_another_confidence_misses_the_cache(compose_config, tmp_path):
    cfg = compose_config(*SMALL)
    run_game(cfg, tmp_path / "a", cache=StageCache(cfg.cache_dir))
    other = run_game(compose_config(*SMALL, "confidences=[0.9]"), tmp_path / "b", cache=StageCache(cfg.cache_dir))
    assert other["stages"]["bound"]["reused"] is False and list(other["bound"]) == ["0.9"]


def test_a_profile_that_json_cannot_name_is_not_cached(compose_config):
    """A user's delta function: its identity holds the function object, which no later process recognises."""
    cfg = compose_config(*SMALL)
    boxes = SimpleNamespace(mechanism=SimpleNamespace(profile=DeltaCurve(lambda eps: np.exp(-eps))),
                            prior=SimpleNamespace(n_targets=12))
    assert bound_stage_config(cfg, boxes, np.array([0.5]), "0" * 64) is None
    assert bound_stage_config(cfg, build_boxes(cfg), np.array([0.5]), None) is None  # no trials key: no cache
