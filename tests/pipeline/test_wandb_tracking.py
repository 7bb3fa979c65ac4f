"""logger=wandb writes an offline W&B run that holds the config, the metrics and the figure; the run is closed on failure too."""
from __future__ import annotations

import json

import pytest

from pipeline.game import ConfigError
from pipeline.job import run_job
from wandb_offline import read_offline_run

CHOICES = {"prior": "zipf", "mechanism": "gaussian", "attack": "bayes_optimal", "metric": "exact", "bound": "one_run"}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")


def _only_run(job_dir):
    runs = sorted((job_dir / "wandb").glob("offline-run-*"))
    assert len(runs) == 1, runs
    return read_offline_run(runs[0])


def test_offline_run_holds_config_metrics_and_figure(compose_config, tmp_path):
    cfg = compose_config("logger=wandb", "prior=zipf", "prior.n_targets=20", "trials=6", "name=demo_experiment")
    metrics = run_job(cfg, tmp_path / "job", choices=CHOICES, run_name="prior=zipf")
    run = _only_run(tmp_path / "job")

    assert run["exit_code"] == 0
    assert run["group"] == "demo_experiment"
    assert set(run["tags"]) == {f"{g}:{o}" for g, o in CHOICES.items()}
    assert run["config"]["prior"]["_target_"] == "stages.prior.zipf.ZipfPrior"
    assert run["config"]["trials"] == 6
    written = json.loads((tmp_path / "job" / "metrics.json").read_text())
    summary = run["summary"]
    assert summary["attack_success_mean"] == pytest.approx(written["attack_success_mean"])
    assert summary["prior_successes"] == written["prior_successes"]
    for confidence, count in written["bound"].items():
        assert summary[f"bound/{confidence}"] == count
    assert summary["privacy/epsilon"] == pytest.approx(metrics["privacy"]["epsilon"])
    per_trial = [row["trial/attack_successes"] for row in run["history"] if "trial/attack_successes" in row]
    assert per_trial == written["attack_successes"]
    assert any(path.endswith(".png") and "successes" in path for path in run["files"])


def test_failed_job_still_closes_its_run(compose_config, tmp_path):
    cfg = compose_config("logger=wandb", "prior.n_targets=10", "trials=3", "mechanism.epsilon=-1")
    with pytest.raises(ConfigError):
        run_job(cfg, tmp_path / "job", choices=CHOICES)
    run = _only_run(tmp_path / "job")
    assert run["exit_code"] == 1  # finished, marked failed
    assert not (tmp_path / "job" / "metrics.json").exists()


def test_logger_none_logs_nothing(compose_config, tmp_path):
    run_job(compose_config("logger=none", "prior.n_targets=10", "trials=3"), tmp_path / "job", choices=CHOICES)
    assert (tmp_path / "job" / "metrics.json").is_file()
    assert not (tmp_path / "job" / "wandb").exists()


def test_run_config_holds_only_what_the_run_used(compose_config, tmp_path):
    """Issue 14 item 6: every run's W&B config carried `model: smollm2` and `data_dir`, used or not."""
    run_job(compose_config("logger=wandb", "prior.n_targets=10", "trials=2"), tmp_path / "plain", choices=CHOICES)
    config = _only_run(tmp_path / "plain")["config"]
    assert {"prior", "mechanism", "attack", "metric", "bound", "seed", "trials", "confidences"} <= set(config)
    assert not {"model", "data_dir", "logger", "outputs_dir", "cache_dir", "task"} & set(config), sorted(config)

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "c.csv").write_text("count\n81\n27\n9\n3\n1\n")
    cfg = compose_config("logger=wandb", "prior=zipf", "prior.counts_file=c.csv", f"data_dir={tmp_path / 'mine'}",
                         "prior.n_targets=5", "trials=2")
    run_job(cfg, tmp_path / "counts", choices=CHOICES)
    config = _only_run(tmp_path / "counts")["config"]
    assert config["data_dir"] == str(tmp_path / "mine") and "model" not in config


def test_run_config_keeps_the_model_where_a_box_uses_it(compose_config):
    from pipeline.tracking import run_config

    cfg = compose_config("mechanism=dpsgd", "attack=model_attack", "model=tiny")
    assert run_config(cfg, ("prior", "mechanism", "attack", "metric", "bound"))["model"]["_target_"].endswith("TinyModel")
    assert "model" not in run_config(compose_config(), ("prior", "mechanism", "attack", "metric", "bound"))


def test_a_figure_point_is_a_game_run_with_the_figures_rows(compose_config, tmp_path):
    """Issue 15 item 3: a point of a figure is a W&B run with the same keys as any game job (one dashboard compares
    synthetic, tabular and LLM games), tagged with its experiment, with the figure's config and its table rows."""
    cfg = compose_config("experiment=idealized_gaussian", "logger=wandb", "prior.n_targets=20", "trials=4")
    choices = {**CHOICES, "prior": "uniform"}
    metrics = run_job(cfg, tmp_path / "job", choices=choices, run_name="point")
    run = _only_run(tmp_path / "job")
    plain = _only_run(_plain_game(compose_config, tmp_path))
    game_keys = {k for k in plain["summary"] if not k.startswith("_")}
    assert game_keys <= set(run["summary"])  # every key a plain game logs
    assert "experiment:idealized_gaussian" in run["tags"] and {f"{g}:{o}" for g, o in choices.items()} <= set(run["tags"])
    assert run["config"]["figure"]["_target_"].endswith("IdealizedGaussian")
    assert metrics["table"][0]["attack_mean"] == pytest.approx(metrics["attack_success_mean"])
    assert any("idealized_gaussian" in path and path.endswith(".table.json") for path in run["files"]), run["files"]


def _plain_game(compose_config, tmp_path):
    run_job(compose_config("logger=wandb", "prior.n_targets=20", "trials=4"), tmp_path / "plain", choices=CHOICES)
    return tmp_path / "plain"
