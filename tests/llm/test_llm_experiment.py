"""The LLM experiments end to end with the tiny model: Figure llm's table and figure, the PII law's rows."""
from __future__ import annotations

import json

import pytest

TINY = ("model=tiny", "prior.n_targets=10", "trials=2", "task.ideal_trials=20", "mechanism.epochs=2")


@pytest.fixture
def compose(compose_config):
    return compose_config


@pytest.mark.parametrize("prior", ["uniform", "pii"])
def test_llm_canaries_job_writes_its_row_and_reuses_its_trainings(prior, compose, tmp_path):
    from pipeline.experiments import run_task

    extra = ("prior.n_contexts=3", "prior.max_candidates=12", "prior.progress=false") if prior == "pii" else ()
    cfg = compose("experiment=llm_canaries", f"prior={prior}", *TINY, *extra)
    metrics = run_task(cfg, tmp_path / "job")
    (row,) = metrics["table"]
    assert row["prior_name"] == prior and row["eps"] == 10 and row["trials"] == 2
    assert len(metrics["attack_successes"]) == len(metrics["model_only_successes"]) == 2
    assert 0 <= row["prior_mean"] <= 10 and 0 <= row["ideal_mean"] <= 10
    assert row["bound_05"] <= row["bound_50"] <= row["bound_95"] <= 10
    assert metrics["privacy"]["epsilon_replace_one"] <= 10 < metrics["privacy"]["epsilon_replace_one"] * 1.01
    stages = {s for s, _ in metrics["stages"]["computed"]}
    assert "dpsgd_release" in stages and (prior != "pii" or "pii_scores" in stages)
    assert (tmp_path / "job" / "figures" / "llm_canaries.png").stat().st_size > 0
    assert json.loads((tmp_path / "job" / "metrics.json").read_text())["table"] == json.loads(json.dumps(metrics["table"]))
    again = run_task(cfg, tmp_path / "job2")
    assert again["stages"]["computed"] == [] and again["attack_successes"] == metrics["attack_successes"]


def test_llm_canaries_refuses_other_boxes(compose, tmp_path):
    from pipeline.experiments import run_task
    from pipeline.game import ConfigError

    cfg = compose("experiment=llm_canaries", "attack=bayes_optimal", *TINY[:4])
    with pytest.raises(ConfigError, match=r"needs mechanism=dpsgd and attack=model_attack"):
        run_task(cfg, tmp_path / "job")
    assert not (tmp_path / "job" / "metrics.json").exists()


def test_best_rows_pick_the_best_hyperparameters():
    from pipeline.experiments.llm import LLMCanaries

    rows = [{"prior_name": "uniform", "eps": 1.0, "attack_mean": 3.0, "learning_rate": 0.1},
            {"prior_name": "uniform", "eps": 1.0, "attack_mean": 5.0, "learning_rate": 1.0},
            {"prior_name": "zipf", "eps": 1.0, "attack_mean": 2.0, "learning_rate": 0.1}]
    best = LLMCanaries.best_rows(rows)
    assert [(r["prior_name"], r["learning_rate"]) for r in best] == [("uniform", 1.0), ("zipf", 0.1)]


def test_pii_law_rows(compose, tmp_path):
    from pipeline.experiments import run_task
    from stages.bound.theorems import eps_protect

    cfg = compose("experiment=pii_law", "model=tiny", "prior.n_contexts=3", "prior.max_candidates=12",
                  "prior.progress=false", "task.eps_points=3")
    metrics = run_task(cfg, tmp_path / "job")
    law = metrics["headline"]["law"]
    assert law["p10"] <= law["median"] <= law["max"] <= 1
    protect = [r for r in metrics["table"] if r["figure"] == "eps_protect"]
    assert len(protect) == 1 and protect[0]["eps_protect"] == pytest.approx(eps_protect(law["max"]))
    assert {r["canary"] for r in metrics["table"] if r["figure"] == "advantage_by_prior"} == {"max", "median", "p10"}


def test_sweep_configs_compose(compose):
    for name in ("llm_canaries", "llm_canaries_small"):
        cfg = compose(f"experiment={name}")
        assert cfg.mechanism._target_.endswith("DPSGDFineTuning") and cfg.attack._target_.endswith("ModelAttack")
    assert compose("experiment=llm_canaries_small", "prior=pii").prior.n_contexts == 20
    assert compose("experiment=llm_canaries", "prior=pii").prior.n_contexts == 500


@pytest.mark.parametrize("override,message", [
    ("mechanism.clip_norm=0", "error: mechanism.clip_norm must be"),
    ("model.gguf_file=/nonexistent/smollm2.gguf", "error: mechanism: gguf_file /nonexistent/smollm2.gguf does not exist"),
])
def test_cli_bad_input_is_one_sentence_and_leaves_no_output(override, message, tmp_path):
    from clitools import run_cli

    model = "model=tiny" if override.startswith("mechanism") else "model=smollm2"
    out = run_cli("mechanism=dpsgd", "attack=model_attack", model, "trials=1", override, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and lines[0].startswith(message), out.stderr
    assert not list((tmp_path / "outputs").rglob("metrics.json"))
