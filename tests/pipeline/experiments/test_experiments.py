"""The four tabular experiments compose from the real config tree and run end to end, shrunk, on tests/data."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import pipeline
from pipeline import experiments
from pipeline.cache import StageCache
from pipeline.game import ConfigError

CONF_DIR = Path(pipeline.CONF_DIR)
NAMES = ["tabular_approximate", "tabular_epsilon", "tabular_multi_column", "tabular_single_column"]
# Small: 30 records, 2 trials, 150 steps, few columns (tests/conftest.py points data_dir at tests/data).
SMALL = ["trials=2", "prior.n_records=30", "attack.steps=150"]
SHRINK = {
    "tabular_single_column": ["task.datasets={acs:[SEX,AGEP],fire:[ALS Unit]}"],
    "tabular_epsilon": ["task.epsilons=[1,.inf]"],
    "tabular_multi_column": ["task.datasets={fire: all}", "task.max_targets=2"],
    "tabular_approximate": ["task.datasets={acs: AGEP}"],
}
COLUMNS = {
    "tabular_single_column": ["dataset", "column", "epsilon", "objective", "trials", "attack_mean", "attack_ci_low",
                              "attack_ci_high", "prior_mean", "prior_expected", "bound_0.05", "bound_0.5", "bound_0.95",
                              "exceed_0.05", "exceed_0.5", "exceed_0.95", "bound_theorem", "n_records", "delta",
                              "noise_scale", "n_marginals"],
}
COLUMNS["tabular_epsilon"] = COLUMNS["tabular_single_column"]
COLUMNS["tabular_multi_column"] = COLUMNS["tabular_single_column"][:2] + ["m"] + COLUMNS["tabular_single_column"][2:]
COLUMNS["tabular_approximate"] = COLUMNS["tabular_single_column"][:2] + ["distance"] + COLUMNS["tabular_single_column"][2:]


@pytest.fixture
def compose(compose_config):
    """The real config tree, composed with outputs under tmp_path (tests/conftest.py)."""
    return compose_config


def test_every_tabular_experiment_is_here():
    assert sorted(p.stem for p in (CONF_DIR / "experiment").glob("tabular_*.yaml")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_experiment_runs_shrunk(name, compose, tmp_path):
    cfg = compose(f"experiment={name}", *SMALL, *SHRINK[name])
    job = tmp_path / "job"
    metrics = experiments.run_task(cfg, job)
    with open(job / f"{name}.csv", newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    assert header == COLUMNS[name] and len(rows) == len(metrics["table"]) > 0
    assert (job / "figures" / f"{name}.png").stat().st_size > 0
    assert json.loads((job / "metrics.json").read_text())["experiment"]["name"] == name
    for r in metrics["table"]:
        assert {r["objective"] for r in metrics["table"]} == {"noise_aware", "plain"}
        assert 0 <= r["attack_mean"] <= 30 and 0 <= r["prior_mean"] <= 30
        if r["epsilon"] != "inf":
            assert r["bound_0.05"] <= r["bound_0.5"] <= r["bound_0.95"] <= 30
            assert r["bound_0.95"] >= r["prior_expected"] - 1e-9  # the bound never drops below the prior's expectation
        # Issue 14: every row names the theorem behind its bound, and intervals stay in [0, n_records].
        assert r["bound_theorem"] and r["n_records"] == 30 and r["delta"] == 1e-5
        for low, high in ((r["attack_ci_low"], r["attack_ci_high"]), (r["prior_ci_low"], r["prior_ci_high"])):
            assert not low < 0 and not high > 30, (low, high)
    if name == "tabular_epsilon":
        infinite = [r for r in metrics["table"] if r["epsilon"] == "inf"]
        # exact marginals have no privacy guarantee: the row says so and shows no bound
        assert infinite and all(r["bound_0.95"] is None and r["bound_theorem"] == "none (not private)"
                                and r["noise_scale"] == 0 for r in infinite)
    if name == "tabular_single_column":
        assert {(r["dataset"], r["column"], r["n_marginals"]) for r in metrics["table"]} == {
            ("acs", "SEX", 105), ("acs", "AGEP", 105), ("fire", "ALS Unit", 36)}
    if name == "tabular_multi_column":
        assert {r["m"] for r in metrics["table"]} == {1, 2} and {r["n_marginals"] for r in metrics["table"]} == {119}
    if name == "tabular_approximate":
        assert sorted({r["distance"] for r in metrics["table"]}) == list(range(10))
        top = [r for r in metrics["table"] if r["distance"] == 9]
        assert all(r["attack_mean"] == 30 and r["prior_mean"] == 30 for r in top)  # a window over the whole domain


def test_stages_are_reused(compose, tmp_path):
    cfg = compose("experiment=tabular_single_column", *SMALL, "task.datasets={fire: [ALS Unit]}")
    cache = StageCache(tmp_path / "cache")
    first = experiments.run_task(cfg, tmp_path / "a", cache=cache)
    computed = len(cache.computed)
    stages = sorted(stage for stage, _ in cache.computed if stage != "baynet")  # the fit may be memoised in process
    # the game's trials, one release per trial and the relaxation of each objective per release
    assert stages == ["attack"] * 4 + ["release"] * 2 + ["trials"]
    second = experiments.run_task(cfg, tmp_path / "b", cache=cache)
    assert len(cache.computed) == computed and first["table"] == second["table"]


def test_attack_exceeds_the_95_bound_rarely(compose, tmp_path):
    """With probability >= 0.95 a trial's successes stay within its bound: over R trials the number of
    exceedances is at most Binomial(R, 0.05), whose 0.999 quantile we allow (the bound holds for any attack)."""
    trials = 20
    cfg = compose("experiment=tabular_single_column", f"trials={trials}", "prior.n_records=30", "attack.steps=300",
                  "mechanism.epsilon=2", "task.datasets={fire: [ALS Unit]}")
    rows = experiments.run_task(cfg, tmp_path / "job")["table"]
    allowed = stats.binom.ppf(0.999, trials, 0.05)
    for r in rows:
        assert r["exceed_0.95"] * trials <= allowed


@pytest.mark.parametrize("override,message", [
    ("task.datasets={acs:[NOPE]}", "names column 'NOPE'"),
    ("mechanism.epsilon=0", "epsilon must be > 0"),
    ("task.datasets={adult: all}", "datasets must be one of acs, fire, acs/recon-synth, fire/recon-synth"),
    ("task.objectives=[sgd]", "objectives must list"),
])
def test_bad_input_is_one_sentence_and_no_output(override, message, compose, tmp_path):
    cfg = compose("experiment=tabular_single_column", *SMALL, override)
    job = tmp_path / "job"
    with pytest.raises(ConfigError, match=message) as info:
        experiments.run_task(cfg, job)
    assert "\n" not in str(info.value)
    assert not (job / "metrics.json").exists() and not list(job.glob("*.csv"))


def test_a_point_of_a_figure_is_one_game(compose, tmp_path):
    """Issue 15: the tabular boxes play in the one game; a figure's point is that game with the point's
    overrides, with the same numbers (the task only lists points)."""
    from pipeline.game import run_job

    overrides = ("prior.n_records=30", "attack.steps=150", "trials=2")
    task = experiments.run_task(compose("experiment=tabular_single_column", *overrides,
                                        "task.datasets={fire: [ALS Unit]}"), tmp_path / "task")
    game = run_job(compose("prior=baynet", "mechanism=noisy_marginals", "attack=rap", *overrides,
                           "prior.dataset=fire", "prior.targets=[ALS Unit]"), tmp_path / "job")
    assert (tmp_path / "job" / "metrics.json").exists()
    rows = {r["objective"]: r for r in task["table"]}
    assert set(game["attacks"]) == set(rows) == {"noise_aware", "plain"}
    for label, attack in game["attacks"].items():
        assert float(np.mean(attack["successes"])) == rows[label]["attack_mean"]
        assert float(np.mean(attack["bound"]["0.95"])) == rows[label]["bound_0.95"]
    assert game["prior_success_mean"] == rows["plain"]["prior_mean"]
    assert game["bound_theorem"]["theorem"] == rows["plain"]["bound_theorem"]
    assert len(game["bound"]["0.5"]) == 2  # one count per trial: each trial's records have their own law


def test_bounds_with_a_law_per_trial(compose, tmp_path):
    """With BayNet's law per trial, bound=one_run bounds each trial on its own records (one count per trial), while
    Theorem 3.2 (bound=expected) is a bound over the mixture of the trials: one count, computed once."""
    from pipeline.game import compute_metrics

    base = ("prior=baynet", "mechanism=noisy_marginals", "attack=rap", "prior.n_records=30", "attack.steps=50",
            "trials=3", "prior.dataset=fire", "prior.targets=[ALS Unit]", "attack.compare=[]")
    per_trial, _, _ = compute_metrics(compose(*base))
    mixed, _, _ = compute_metrics(compose(*base, "bound=expected"))
    assert all(len(v) == 3 for v in per_trial["bound"].values())
    assert all(isinstance(v, int) for v in mixed["bound"].values())
    assert mixed["attack_successes"] == per_trial["attack_successes"]  # same game, only the bound differs
    assert mixed["bound_theorem"]["theorem"].startswith("Theorem 3.2")
