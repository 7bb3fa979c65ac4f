"""The four tabular figures are sweeps of the tabular game: their points compose from the real config tree and
play end to end, shrunk, on tests/data; a figure's point is one game job with the same numbers as that game."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import pipeline
from figuretools import figure_jobs, play_figure
from pipeline.cache import StageCache
from pipeline.game import ConfigError

CONF_DIR = Path(pipeline.CONF_DIR)
NAMES = ["tabular_approximate", "tabular_epsilon", "tabular_multi_column", "tabular_single_column"]
# Small: 30 records, 2 trials, 150 steps, few columns (tests/conftest.py points data_dir at tests/data).
SMALL = ["trials=2", "prior.n_records=30", "attack.steps=150"]
# The sweep combinations of each shrunk figure (what hydra.sweeper.params and the command line would give).
SHRINK = {
    "tabular_single_column": [["prior.dataset=acs", "figure.columns=[SEX,AGEP]"],
                              ["prior.dataset=fire", "figure.columns=[ALS Unit]"]],
    "tabular_epsilon": [["prior.dataset=acs", "mechanism.epsilon=1"], ["prior.dataset=acs", "mechanism.epsilon=inf"]],
    "tabular_multi_column": [["prior.dataset=fire", "figure.max_targets=2"]],
    "tabular_approximate": [["prior.dataset=acs"]],
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


def combinations(name: str, *extra: str) -> list[list[str]]:
    return [[f"experiment={name}", *SMALL, *c, *extra] for c in SHRINK[name]]


def test_every_tabular_experiment_is_here():
    assert sorted(p.stem for p in (CONF_DIR / "experiment").glob("tabular_*.yaml")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_experiment_runs_shrunk(name, compose, tmp_path):
    table, figure, rows = play_figure(compose, tmp_path / "sweep", *combinations(name))
    with open(table, newline="") as f:
        reader = csv.DictReader(f)
        header, written = reader.fieldnames, list(reader)
    assert header == COLUMNS[name] and len(written) == len(rows) > 0
    assert figure.stat().st_size > 0
    jobs = sorted((tmp_path / "sweep").glob("*/metrics.json"))
    # every point is a game job with the game's keys and its rows of the figure
    for path in jobs:
        metrics = json.loads(path.read_text())
        assert metrics["experiment"]["name"] == name and metrics["table"] and "attacks" in metrics
    for r in rows:
        assert {r["objective"] for r in rows} == {"noise_aware", "plain"}
        assert 0 <= r["attack_mean"] <= 30 and 0 <= r["prior_mean"] <= 30
        if r["epsilon"] != "inf":
            assert r["bound_0.05"] <= r["bound_0.5"] <= r["bound_0.95"] <= 30
            assert r["bound_0.95"] >= r["prior_expected"] - 1e-9  # the bound never drops below the prior's expectation
        # Issue 14: every row names the theorem behind its bound, and intervals stay in [0, n_records].
        assert r["bound_theorem"] and r["n_records"] == 30 and r["delta"] == 1e-5
        for low, high in ((r["attack_ci_low"], r["attack_ci_high"]), (r["prior_ci_low"], r["prior_ci_high"])):
            assert not low < 0 and not high > 30, (low, high)
    if name == "tabular_epsilon":
        assert len(jobs) == 2 and [r["epsilon"] for r in rows] == ["1", "1", "inf", "inf"]
        infinite = [r for r in rows if r["epsilon"] == "inf"]
        # exact marginals have no privacy guarantee: the row says so and shows no bound
        assert infinite and all(r["bound_0.95"] is None and r["bound_theorem"] == "none (not private)"
                                and r["noise_scale"] == 0 for r in infinite)
    if name == "tabular_single_column":
        assert len(jobs) == 3
        assert [(r["dataset"], r["column"], r["n_marginals"]) for r in rows[::2]] == [
            ("acs", "SEX", 105), ("acs", "AGEP", 105), ("fire", "ALS Unit", 36)]
    if name == "tabular_multi_column":
        assert [r["m"] for r in rows[::2]] == [1, 2] and {r["n_marginals"] for r in rows} == {119}
    if name == "tabular_approximate":
        assert len(jobs) == 10 and [r["distance"] for r in rows[::2]] == list(range(10))
        top = [r for r in rows if r["distance"] == 9]
        assert all(r["attack_mean"] == 30 and r["prior_mean"] == 30 for r in top)  # a window over the whole domain


def test_points_are_the_tables_columns(compose):
    """The sweeper's jobs: a point per column (single), per m of the fitted network's visit order (multi), per
    distance (approximate); each is the combination's overrides plus the point's."""
    jobs = figure_jobs(compose, ["experiment=tabular_single_column", "prior.dataset=fire"])
    from stages.prior.tabular import read_domain

    columns = list(read_domain("fire"))
    assert [job[-2:] for job in jobs] == [[f"prior.targets=['{c}']", "prior.known=null"] for c in columns]
    multi = figure_jobs(compose, ["experiment=tabular_multi_column", "prior.dataset=fire", "figure.max_targets=3"])
    known = {job[-1] for job in multi}
    assert len(multi) == 3 and len(known) == 1 and known.pop().startswith("prior.known=[")
    approximate = figure_jobs(compose, ["experiment=tabular_approximate", "prior.dataset=acs"])
    assert [job[-2:] for job in approximate] == [["metric=within", f"metric.distance={e}"] for e in range(10)]
    # a command-line column list narrows the figure; a one-column figure takes its default column per table
    assert len(figure_jobs(compose, ["experiment=tabular_single_column", "figure.columns=[SEX,EDU]"])) == 2
    (epsilon,) = figure_jobs(compose, ["experiment=tabular_epsilon", "prior.dataset=fire"])
    assert "prior.targets=['ALS Unit']" in epsilon


def test_stages_are_reused(compose, tmp_path):
    combination = ["experiment=tabular_single_column", *SMALL, "prior.dataset=fire", "figure.columns=[ALS Unit]"]
    cache = StageCache(tmp_path / "cache")
    *_, first = play_figure(compose, tmp_path / "a", combination, cache=cache)
    computed = len(cache.computed)
    stages = sorted(stage for stage, _ in cache.computed if stage != "baynet")  # the fit may be memoised in process
    # the game's trials, bounds and audit, one release per trial and the relaxation of each objective per release
    assert stages == ["attack"] * 4 + ["audit", "bound"] + ["release"] * 2 + ["trials"]
    *_, second = play_figure(compose, tmp_path / "b", combination, cache=cache)
    assert len(cache.computed) == computed and first == second


@pytest.mark.slow
def test_attack_exceeds_the_95_bound_rarely(compose, tmp_path):
    """With probability >= 0.95 a trial's successes stay within its bound: over R trials the number of
    exceedances is at most Binomial(R, 0.05), whose 0.999 quantile we allow (the bound holds for any attack)."""
    trials = 20
    *_, rows = play_figure(compose, tmp_path / "sweep", [
        "experiment=tabular_single_column", f"trials={trials}", "prior.n_records=30", "attack.steps=300",
        "mechanism.epsilon=2", "prior.dataset=fire", "figure.columns=[ALS Unit]"])
    allowed = stats.binom.ppf(0.999, trials, 0.05)
    for r in rows:
        assert r["exceed_0.95"] * trials <= allowed


@pytest.mark.parametrize("override,message", [
    ("figure.columns=[NOPE]", "names column 'NOPE'"),
    ("mechanism.epsilon=0", "epsilon must be > 0"),
    ("prior.dataset=adult", "prior.dataset must be one of acs, fire, acs/recon-synth, fire/recon-synth"),
    ("attack.objective=sgd", "objective must be"),
    ("confidences=[0.5]", "confidences must include 0.05, 0.5 and 0.95"),
    ("mechanism=gaussian", r"^tabular_single_column plays prior=baynet and mechanism=noisy_marginals, got BayNetPrior "
                           r"and GaussianMechanism\.$"),
])
def test_bad_input_is_one_sentence_and_no_output(override, message, compose, tmp_path):
    with pytest.raises(ConfigError, match=message) as info:
        play_figure(compose, tmp_path / "sweep", ["experiment=tabular_single_column", *SMALL, "prior.dataset=acs",
                                                  "figure.columns=[SEX]", override])
    assert "\n" not in str(info.value)
    assert not list((tmp_path / "sweep").rglob("metrics.json")) and not list(tmp_path.rglob("*.csv"))


def test_a_point_of_a_figure_is_one_game(compose, tmp_path):
    """Issue 15: the tabular boxes play in the one game; a figure's point is that game with the point's
    overrides, with the same numbers (the figure only lists points and reads the game's metrics)."""
    from pipeline.job import run_job

    overrides = ("prior.n_records=30", "attack.steps=150", "trials=2")
    *_, rows = play_figure(compose, tmp_path / "sweep", ["experiment=tabular_single_column", *overrides,
                                                         "prior.dataset=fire", "figure.columns=[ALS Unit]"])
    game = run_job(compose("prior=baynet", "mechanism=noisy_marginals", "attack=rap", *overrides,
                           "prior.dataset=fire", "prior.targets=[ALS Unit]"), tmp_path / "job")
    assert (tmp_path / "job" / "metrics.json").exists()
    rows = {r["objective"]: r for r in rows}
    assert set(game["attacks"]) == set(rows) == {"noise_aware", "plain"}
    for label, attack in game["attacks"].items():
        assert float(np.mean(attack["successes"])) == rows[label]["attack_mean"]
        assert float(np.mean(attack["bound"]["0.95"])) == rows[label]["bound_0.95"]
    assert game["prior_success_mean"] == rows["plain"]["prior_mean"]
    assert game["bound_theorem"]["theorem"] == rows["plain"]["bound_theorem"]
    assert len(game["bound"]["0.5"]) == 2  # one count per trial: each trial's records have their own law


def test_multi_column_point_needs_its_known_columns(compose, tmp_path):
    from pipeline.job import run_game

    with pytest.raises(ConfigError, match=r"prior.known must name the known columns .* -m experiment=tabular_multi"):
        run_game(compose("experiment=tabular_multi_column", *SMALL), tmp_path / "job")
    assert not (tmp_path / "job" / "metrics.json").exists()


def test_bounds_with_a_law_per_trial(compose, tmp_path):
    """With BayNet's law per trial, bound=one_run bounds each trial on its own records (one count per trial), while
    bound=expected is a bound over the mixture of the trials: one count, computed once from every trial's law (Theorem
    3.2, and Theorem 3 averaged over the trials: the records' whole priors are known)."""
    from pipeline.game import compute_metrics
    from stages.bound.theorems import EXPECTED_BOUND_VERSION, EXPECTED_THEOREM, EXPECTED_WHOLE_PRIOR_THEOREM

    base = ("prior=baynet", "mechanism=noisy_marginals", "attack=rap", "prior.n_records=30", "attack.steps=50",
            "trials=3", "prior.dataset=fire", "prior.targets=[ALS Unit]", "attack.compare=[]")
    per_trial, _, _ = compute_metrics(compose(*base))
    mixed, _, _ = compute_metrics(compose(*base, "bound=expected"))
    assert all(len(v) == 3 for v in per_trial["bound"].values())
    assert all(isinstance(v, int) for v in mixed["bound"].values())
    assert mixed["attack_successes"] == per_trial["attack_successes"]  # same game, only the bound differs
    record = mixed["bound_theorem"]
    assert record["version"] == EXPECTED_BOUND_VERSION
    assert {EXPECTED_THEOREM, EXPECTED_WHOLE_PRIOR_THEOREM} <= set(record["candidates"])
    assert set(record["by_confidence"].values()) <= set(record["candidates"])


def test_objectives_as_variants_or_as_a_sweep_give_the_same_rows(compose, tmp_path):
    """Issue 15: "target column x eps x objective". One game scoring both RAP objectives on the same releases
    (attack.compare) and a sweep over attack.objective (one job each, the release stage shared) give the same rows."""
    base = ["experiment=tabular_single_column", "trials=2", "prior.n_records=30", "attack.steps=50",
            "prior.dataset=fire", "figure.columns=[ALS Unit]"]
    cache = StageCache(tmp_path / "cache")
    *_, variants = play_figure(compose, tmp_path / "variants", [*base, "attack.compare=[plain]"], cache=cache)
    *_, swept = play_figure(compose, tmp_path / "swept", [*base, "attack.objective=noise_aware", "attack.compare=[]"],
                            [*base, "attack.objective=plain", "attack.compare=[]"], cache=cache)
    assert [r["objective"] for r in variants] == [r["objective"] for r in swept] == ["noise_aware", "plain"]
    assert variants == swept
