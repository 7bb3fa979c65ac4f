"""The LLM experiments end to end with the tiny model: Figure llm's table and figure, the PII law's rows."""
from __future__ import annotations

import json

import pytest

TINY = ("model=tiny", "prior.n_targets=10", "trials=2", "figure.ideal_trials=20", "mechanism.epochs=2")


@pytest.fixture
def compose(compose_config):
    return compose_config


@pytest.mark.parametrize("prior", ["uniform", "pii"])
def test_llm_canaries_sweep_plays_both_games_and_reuses_its_trainings(prior, compose, tmp_path):
    """Issue 15 item 3: a combination of Figure llm's sweep is two game jobs, the DP-SGD game and the idealized
    Gaussian game at the same prior and epsilon; the report joins them into the figure's row."""
    from figuretools import figure_jobs, play_figure
    from pipeline.cache import StageCache

    extra = ("prior.n_contexts=3", "prior.max_candidates=12", "prior.progress=false") if prior == "pii" else ()
    combination = ["experiment=llm_canaries", f"prior={prior}", *TINY, *extra]
    dpsgd, ideal = figure_jobs(compose, combination)
    assert dpsgd == combination
    assert {"figure.game='ideal'", "mechanism=gaussian", "attack=bayes_optimal", "trials=20", "seed=[0,1]",
            "mechanism.epsilon=10.0", "~mechanism.clip_norm", "~mechanism.trainable"} <= set(ideal)
    assert not any(o.startswith("mechanism.epochs") for o in ideal)  # the DP-SGD settings do not reach the Gaussian
    cache = StageCache(tmp_path / "cache")
    table, figure, rows = play_figure(compose, tmp_path / "sweep", combination, cache=cache)
    (row,) = rows
    metrics = json.loads((tmp_path / "sweep" / "0" / "metrics.json").read_text())
    ideal_metrics = json.loads((tmp_path / "sweep" / "1" / "metrics.json").read_text())
    assert row["prior_name"] == prior and row["eps"] == 10 and row["trials"] == 2
    # Issue 15: one game of the engine with every variant scored on the same releases, each with its bound
    assert set(metrics["attacks"]) == {"model_attack", "model_only", "fitted"}
    assert all(len(a["successes"]) == 2 and a["bound"] == metrics["bound"] for a in metrics["attacks"].values())
    assert ideal_metrics["boxes"]["mechanism"] == "gaussian" and ideal_metrics["trials"] == 20
    assert ideal_metrics["seed"] == [0, 1] and ideal_metrics["privacy"]["epsilon"] == pytest.approx(10)
    assert row["ideal_trials"] == 20 and row["ideal_bound_theorem"] == ideal_metrics["bound_theorem"]["theorem"]
    assert 0 <= row["prior_mean"] <= 10 and 0 <= row["ideal_mean"] <= 10
    assert row["bound_0.05"] <= row["bound_0.5"] <= row["bound_0.95"] <= 10
    # the worst case's lower end beside the bound: the floor of a real mechanism with the DP-SGD profile
    floor = metrics["worst_case_floor"]
    assert row["floor_mechanism"] == floor["mechanism"] and "randomized response" in row["floor_mechanism"]
    for c in ("0.05", "0.5", "0.95"):
        assert row[f"floor_{c}"] == floor["counts"][c] and 0 <= row[f"floor_{c}"] <= row[f"bound_{c}"]
    # Issue 14 items 2, 6, 16: the theorem, the model, and the exceedance at every confidence for every variant
    assert row["bound_theorem"] == metrics["bound_theorem"]["theorem"] and row["bound_theorem"]
    assert row["model"] == "tiny" and row["trainable"] == "body" and row["private"] is True and row["delta"] == 1e-5
    for variant in ("", "model_only_", "fitted_"):
        for c in ("0.05", "0.5", "0.95"):
            assert 0 <= row[f"{variant}exceed_{c}"] <= 1
    assert row["select_trials"] == row["heldout_trials"] == 1
    assert metrics["privacy"]["epsilon_replace_one"] <= 10 < metrics["privacy"]["epsilon_replace_one"] * 1.01
    assert row["noise_multiplier"] == metrics["privacy"]["noise_multiplier"] and row["steps"] == 2
    computed = {s for s, _ in cache.computed}
    assert "dpsgd_release" in computed and (prior != "pii" or "pii_scores" in computed)
    assert figure.stat().st_size > 0 and table.name == "llm_canaries.csv"
    assert metrics["table"][0]["game"] == "dpsgd" and ideal_metrics["table"][0]["game"] == "ideal"
    before = len(cache.computed)
    *_, again = play_figure(compose, tmp_path / "again", combination, cache=cache)
    assert len(cache.computed) == before and again == rows
    assert json.loads((tmp_path / "again" / "0" / "metrics.json").read_text())["stages"]["trials"]["reused"] is True


def test_llm_canaries_refuses_other_boxes(compose, tmp_path):
    from figuretools import play_figure
    from pipeline.game import ConfigError

    with pytest.raises(ConfigError, match=r"^llm_canaries plays mechanism=dpsgd and attack=model_attack, got "
                                         r"DPSGDFineTuning and BayesOptimalAttack\.$"):
        play_figure(compose, tmp_path / "sweep", ["experiment=llm_canaries", "attack=bayes_optimal", *TINY[:4]])
    assert not list(tmp_path.rglob("metrics.json"))


def test_best_rows_pick_the_best_hyperparameters():
    from pipeline.experiments.llm import LLMCanaries

    rows = [{"prior_name": "uniform", "eps": 1.0, "attack_mean": 3.0, "learning_rate": 0.1},
            {"prior_name": "uniform", "eps": 1.0, "attack_mean": 5.0, "learning_rate": 1.0},
            {"prior_name": "zipf", "eps": 1.0, "attack_mean": 2.0, "learning_rate": 0.1}]
    best = LLMCanaries.best_rows(rows)
    assert [(r["prior_name"], r["learning_rate"]) for r in best] == [("uniform", 1.0), ("zipf", 0.1)]
    # no held-out half (one trial a job): the pick is scored on its own trials, and says so
    assert best[0]["selection"] == "same trials, biased upward" and best[1]["selection"] == "one setting"


def test_best_rows_select_on_half_the_trials_and_report_the_other_half():
    """Issue 14 item 16: picking the best setting by its mean success on the trials it is reported on
    uses the secrets; the pick uses the even trials (select_mean), the number the odd ones (heldout_mean)."""
    from pipeline.experiments.llm import LLMCanaries

    rows = [{"prior_name": "uniform", "eps": 1.0, "attack_mean": 9.0, "select_mean": 4.0, "heldout_mean": 3.0,
             "heldout_ci_low": 2.0, "heldout_ci_high": 4.0, "learning_rate": 0.1},
            {"prior_name": "uniform", "eps": 1.0, "attack_mean": 5.0, "select_mean": 6.0, "heldout_mean": 4.0,
             "heldout_ci_low": 3.0, "heldout_ci_high": 5.0, "learning_rate": 1.0}]
    (best,) = LLMCanaries.best_rows(rows)
    assert best["learning_rate"] == 1.0 and best["selection"] == "held-out half"
    assert (best["reported_mean"], best["reported_ci_low"], best["reported_ci_high"]) == (4.0, 3.0, 5.0)


def test_non_private_llm_job_has_no_epsilon_no_bound_and_is_drawn_so(compose, tmp_path):
    """Issue 14 item 1: experiment=llm_canaries ... mechanism.clipping=none was reported at eps = 10."""
    from figuretools import figure_jobs, play_figure
    from pipeline.experiments.llm import LLMCanaries

    combination = ["experiment=llm_canaries", "mechanism.clipping=none", "trials=1", *TINY[:2], *TINY[3:]]
    assert len(figure_jobs(compose, combination)) == 1  # no epsilon: no idealized Gaussian game
    *_, (row,) = play_figure(compose, tmp_path / "sweep", combination)
    metrics = json.loads((tmp_path / "sweep" / "0" / "metrics.json").read_text())
    assert row["private"] is False and row["eps"] is None and row["bound_0.95"] is None
    assert row["exceed_0.95"] is None and row["ideal_mean"] is None and row["bound_theorem"] == "none (not private)"
    assert row["floor_0.95"] is None and row["floor_mechanism"] is None
    assert metrics["bound"] is None and metrics["privacy"]["private"] is False and metrics["privacy"]["epsilon"] is None
    private = {**row, "private": True, "eps": 10.0, "delta": 1e-5, "bound_0.05": 1, "bound_0.5": 2, "bound_0.95": 3,
               "ideal_mean": 1.0, "ideal_ci_low": 0.5, "ideal_ci_high": 1.5, "bound_theorem": "some theorem",
               "exceed_0.05": 0.0, "exceed_0.5": 0.0, "exceed_0.95": 0.0}
    import matplotlib.pyplot as plt

    import pipeline.experiments.common as common

    kept = {}
    original = common.save_figure_atomic
    common.save_figure_atomic = lambda fig, path: kept.setdefault("fig", fig)
    try:
        LLMCanaries.plot([row, private], tmp_path / "f.png")
    finally:
        common.save_figure_atomic = original
    fig = kept["fig"]
    text = " ".join([t.get_text() for t in fig.texts] + [t.get_text() for lg in fig.legends for t in lg.get_texts()]
                    + [ax.get_xlabel() for ax in fig.axes])
    text = " ".join(text.split())  # labels and notes are wrapped to the figure's width
    plt.close(fig)
    assert "not private" in text and "some theorem" in text and "delta = 1e-05" in text and "trials per job" in text


@pytest.mark.slow
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
    for name in ("llm_canaries", "llm_canaries_small", "llm_canaries_body"):
        cfg = compose(f"experiment={name}")
        assert cfg.mechanism._target_.endswith("DPSGDFineTuning") and cfg.attack._target_.endswith("ModelAttack")
    # the paper's setting on SmolLM2 (issue 16 item 5): the body trained, an even number of trials (selection half)
    body = compose("experiment=llm_canaries_body")
    assert body.mechanism.trainable == "body" and body.model._target_.endswith("SmolLM2") and body.trials % 2 == 0
    assert compose("experiment=llm_canaries_small", "prior=pii").prior.n_contexts == 20
    assert compose("experiment=llm_canaries", "prior=pii").prior.n_contexts == 500


@pytest.mark.slow
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
