"""Every synthetic conf/experiment/*.yaml composes from the real config tree and runs end to end on a shrunken grid:
the analytic ones as one task job, the two that play games (idealized_gaussian, rr_tightness) as figures whose
points are ordinary game jobs of a sweep (tests/figuretools.py plays them in process)."""
from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pipeline
from figuretools import figure_jobs, play_figure
from pipeline import experiments
from pipeline.experiments import synthetic
from pipeline.game import ConfigError

REPO = Path(__file__).resolve().parents[3]
CONF_DIR = Path(pipeline.CONF_DIR)
DATA = Path(os.environ.get("ADVBOUNDS_DATA", REPO / "tests" / "data"))  # tests/conftest.py sets it
ROCKYOU_9DIGIT = DATA / "passwords" / "rockyou-top100k-9digit-withcount.csv"

# The columns issue 4 asks for, per experiment (rr_tightness and zipf_calibration: ours).
COLUMNS = {
    "compare_bounds": ["mu", "prior", "ours", "kgk", "mmc", "best", "best_source"],
    "advantage_by_prior": ["prior_name", "canary", "prior_probability", "eps", "advantage"],
    "eps_protect": ["prior_name", "prior_probability", "eps_protect", "delta", "threshold"],
    "idealized_gaussian": ["prior_name", "eps", "delta", "trials", "attack_mean", "attack_ci_low", "attack_ci_high",
                           "prior_mean", "bound_theorem", "bound_0.95", "exceed_0.95"],
    "rr_tightness": ["exponent", "eps", "max_prior_ratio", "condition_holds", "attack_mean", "attack_ci_low",
                     "attack_ci_high", "attack_exact", "bound_exact", "bound_empirical", "tightness"],
    "zipf_calibration": ["fit", "first_rank", "last_rank", "exponent", "ci_low", "ci_high", "p_max", "eps_protect",
                         "advantage_eps1"],
}

# Each task experiment shrunk to a few seconds: fewer grid points.
SHRINK = {
    "compare_bounds": ["task.mus=[1,4]", "task.prior_points=4", "task.reciprocal_points=3"],
    "advantage_by_prior": ["task.eps_points=3"],
    "eps_protect": ["task.prior_points=3"],
    "zipf_calibration": ["task.bootstrap=20", "task.windows=[[1,157],[2,157]]"],
}
# Each figure experiment shrunk: fewer targets and trials (SMALL), and the sweep combinations that its
# hydra.sweeper.params (narrowed) would give.
SMALL = {"idealized_gaussian": ["prior.n_targets=10", "trials=10"], "rr_tightness": ["prior.n_targets=10", "trials=20"]}
SWEEP = {
    "idealized_gaussian": [[f"prior={p}", f"mechanism.epsilon={e}"] for p in ("uniform", "zipf") for e in (1, 100)],
    "rr_tightness": [[f"prior.exponent={s}", f"mechanism.epsilon={e}"] for s in (0, 0.2, 2) for e in (1, 2)],
}


def combinations(name: str, *extra: str) -> list[list[str]]:
    return [[f"experiment={name}", *SMALL[name], *c, *extra] for c in SWEEP[name]]


def _options() -> list[str]:
    """The experiments of the synthetic family (the tabular and LLM studies have their own tests)."""
    return sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")
                  if "pipeline.experiments.synthetic." in p.read_text())


@pytest.fixture
def compose(compose_config):
    """The real config tree, composed with outputs under tmp_path (tests/conftest.py)."""
    return compose_config


def _read_csv(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def test_every_experiment_is_tested():
    assert set(_options()) == set(COLUMNS) == set(SHRINK) | set(SWEEP)
    assert not set(SHRINK) & set(SWEEP)


@pytest.mark.parametrize("name", sorted(SHRINK))
def test_experiment_runs_on_a_shrunken_grid(name, compose, tmp_path):
    cfg = compose(f"experiment={name}", *SHRINK[name])
    assert cfg.name == name and cfg.task._target_.startswith("pipeline.experiments.")
    job = tmp_path / "job"
    metrics = experiments.run_task(cfg, job)

    header, rows = _read_csv(job / f"{name}.csv")
    assert header == COLUMNS[name]
    assert rows and len(rows) == len(metrics["table"])
    assert (job / "figures" / f"{name}.png").stat().st_size > 0
    written = json.loads((job / "metrics.json").read_text())
    assert written["experiment"]["name"] == name and written["columns"] == COLUMNS[name]
    # like a game's metrics.json (issue 14, item 15): the data files read, the stages, trials as a number
    assert isinstance(written["data_files"], (list, dict)) and isinstance(written["stages"], dict)  # a game: {group: files}
    assert isinstance(written.get("trials", 0), int)
    if name == "zipf_calibration":  # reads the RockYou counts file
        assert any(f["path"].endswith(".csv") and len(f["sha256"]) == 64 for f in written["data_files"])


def test_compare_bounds_numbers(compose, tmp_path):
    cfg = compose("experiment=compare_bounds", *SHRINK["compare_bounds"])
    rows = experiments.run_task(cfg, tmp_path / "job")["table"]
    assert {r["mu"] for r in rows} == {1.0, 4.0}
    for r in rows:
        assert r["prior"] <= r["ours"] <= r["kgk"] + 1e-12  # never below the prior, never above KGK+ (paper Fig. 1)
        assert r["best"] == min(v for v in (r["ours"], r["kgk"], r["mmc"]) if v is not None) or r["best"] < r["ours"]
        reciprocal = abs(1.0 / r["prior"] - round(1.0 / r["prior"])) < 1e-9
        assert (r["mmc"] is not None) == reciprocal  # MMC only where the prior is 1/m
        if r["mmc"] is not None:  # "for uniform priors our bounds closely align with MMC"
            assert r["ours"] == pytest.approx(r["mmc"], abs=1e-6)


def test_eps_protect_of_a_uniform_9digit_canary_is_the_papers_17_8(compose, tmp_path):
    """Paper, Sec. 4.3 ("Calibrating Epsilon to Reconstruction Risks"): a uniformly drawn 9-digit canary
    (p = 1e-9) is protected (advantage bound <= 0.05 at delta = 1e-5) by eps_protect = 17.8. The paper
    prints three significant digits, so the tolerance is half a unit of the last digit: +-0.05."""
    cfg = compose("experiment=eps_protect", *SHRINK["eps_protect"])
    rows = experiments.run_task(cfg, tmp_path / "job")["table"]
    (uniform,) = [r for r in rows if r["prior_name"] == "uniform_9digit"]
    assert uniform["prior_probability"] == pytest.approx(1e-9, rel=1e-12)
    assert uniform["eps_protect"] == pytest.approx(17.8, abs=0.05)
    curve = sorted((r for r in rows if r["prior_name"] == "any"), key=lambda r: r["prior_probability"])
    assert [r["eps_protect"] for r in curve] == sorted((r["eps_protect"] for r in curve), reverse=True)


def test_advantage_by_prior_canaries(compose, tmp_path):
    from stages.prior.zipf import zipf_rank_probability

    cfg = compose("experiment=advantage_by_prior", *SHRINK["advantage_by_prior"])
    rows = experiments.run_task(cfg, tmp_path / "job")["table"]
    s = float(cfg.prior.exponent)
    by = {(r["prior_name"], r["canary"], r["eps"]): r for r in rows}
    assert {r["eps"] for r in rows} >= {0.1, 1.0, 10.0, 100.0}
    assert by[("zipf_9digit", "max", 1.0)]["prior_probability"] == pytest.approx(zipf_rank_probability(1, 10**9, s))
    assert by[("zipf_9digit", "min", 1.0)]["prior_probability"] == pytest.approx(zipf_rank_probability(10**9, 10**9, s))
    assert by[("zipf_9digit", "median", 1.0)]["prior_probability"] == pytest.approx(
        zipf_rank_probability(5 * 10**8, 10**9, s))
    for canary in ("min", "median", "max"):
        assert by[("uniform_9digit", canary, 1.0)]["prior_probability"] == 1e-9
    # Advantage grows with eps for every canary, and the most probable canary leads.
    for (prior_name, canary, _), r in by.items():
        eps = sorted(e for (p, c, e) in by if (p, c) == (prior_name, canary))
        values = [by[(prior_name, canary, e)]["advantage"] for e in eps]
        assert values == sorted(values)
    assert by[("zipf_9digit", "max", 1.0)]["advantage"] > 100 * by[("zipf_9digit", "median", 1.0)]["advantage"]


@pytest.mark.parametrize("name", sorted(SWEEP))
def test_figure_is_a_sweep_of_game_jobs(name, compose, tmp_path):
    """One ordinary game job per sweep combination (the figures add no points of their own); each job's
    metrics.json is the game's with its row of the table; the report joins the rows into the csv and figure."""
    assert compose(f"experiment={name}").get("task") is None
    jobs = figure_jobs(compose, *combinations(name))
    assert jobs == combinations(name)
    table, figure, rows = play_figure(compose, tmp_path / "sweep", *combinations(name))
    header, written = _read_csv(table)
    assert header == COLUMNS[name] and len(written) == len(rows) == len(jobs)
    assert figure.stat().st_size > 0
    for path in sorted((tmp_path / "sweep").glob("*/metrics.json")):
        metrics = json.loads(path.read_text())
        assert metrics["experiment"]["name"] == name and metrics["columns"] == COLUMNS[name]
        assert len(metrics["table"]) == 1 and "attack_successes" in metrics and "bound" in metrics
        (row,) = metrics["table"]
        assert row["attack_mean"] == pytest.approx(np.mean(metrics["attack_successes"]), abs=1e-12)
        assert row["trials" if name == "idealized_gaussian" else "eps"] is not None


def test_idealized_gaussian_rows_are_the_games(compose, tmp_path):
    *_, rows = play_figure(compose, tmp_path / "sweep", *combinations("idealized_gaussian"))
    assert [(r["prior_name"], r["eps"]) for r in rows] == [("uniform", 1.0), ("uniform", 100.0), ("zipf", 1.0),
                                                           ("zipf", 100.0)]
    for r in rows:
        assert r["trials"] == 10 and r["delta"] == 1e-5 and r["bound_theorem"]
        assert 0 <= r["attack_ci_low"] <= r["attack_mean"] <= r["attack_ci_high"] <= 10
        assert r["prior_mean"] <= r["bound_0.95"] <= 10 and 0 <= r["exceed_0.95"] <= 1


def test_rr_tightness_matches_the_proposition(compose, tmp_path):
    *_, rows = play_figure(compose, tmp_path / "sweep", *combinations("rr_tightness"))
    assert [(r["exponent"], r["eps"]) for r in rows] == [(s, e) for s in (0.0, 0.2, 2.0) for e in (1.0, 2.0)]
    assert {r["condition_holds"] for r in rows} == {True, False}
    for r in rows:
        assert r["condition_holds"] == (10 ** r["exponent"] <= math.exp(r["eps"]) + 1e-9)
        assert r["max_prior_ratio"] == pytest.approx(10 ** r["exponent"], rel=1e-12)
        assert r["attack_exact"] <= r["bound_exact"] + 1e-9  # Theorem 3.1 holds in expectation
        if r["condition_holds"]:  # Proposition pure_bnd_tight: the Bayes-optimal attacker meets the bound
            assert r["tightness"] == pytest.approx(1.0, abs=1e-12)
    assert any(r["tightness"] < 0.9 for r in rows if not r["condition_holds"])


def test_rr_tightness_bound_empirical_is_the_played_trials(compose):
    """bound_empirical: sum_i beta(eps, p_i) over the prior successes p_i of the attack's guesses, averaged over
    the trials, recomputed here from the game's played trials (what the task computed before it was a figure)."""
    from pipeline.game import compute_metrics
    from stages.bound.theorems import beta

    (job,) = figure_jobs(compose, ["experiment=rr_tightness", *SMALL["rr_tightness"], "prior.exponent=1",
                                   "mechanism.epsilon=0.5"])
    cfg = compose(*job)
    metrics, played, _ = compute_metrics(cfg)
    grouped = played.attack.trials
    want = np.mean([np.sum(c * beta(0.5, v)) for v, c in map(grouped.groups, range(len(grouped)))])
    (row,) = synthetic.RRTightness().rows(cfg, metrics)
    assert metrics["bound_theorem"]["expected_trials"] == 20
    assert row["bound_empirical"] == want and row["exponent"] == 1.0 and row["eps"] == 0.5
    # not the mean prior success of the guesses: beta(eps, p) > p for eps > 0
    assert row["bound_empirical"] > metrics["attack_prior_success_mean"]


@pytest.mark.parametrize("name,override,message", [
    ("rr_tightness", "prior=uniform", r"^rr_tightness plays prior=zipf, mechanism=randomized_response and "
                                      r"bound=pure_dp, got UniformPrior, RandomizedResponse and PureDPBound\.$"),
    ("rr_tightness", "bound=one_run", r"^rr_tightness plays .* got ZipfPrior, RandomizedResponse and OneRunBound\.$"),
    ("idealized_gaussian", "confidences=[0.5]", r"^confidences must include 0\.95 for idealized_gaussian"),
])
def test_figure_refuses_a_game_it_cannot_read(name, override, message, compose, tmp_path):
    from pipeline.job import run_game

    cfg = compose(f"experiment={name}", *SMALL[name], override)
    with pytest.raises(ConfigError, match=message):
        run_game(cfg, tmp_path / "job")
    assert not (tmp_path / "job" / "metrics.json").exists()


def test_rr_closed_form_against_enumeration():
    """The Bayes-optimal success of RR, summed by hand over every (secret, report) pair for one target."""
    d = np.array([[0.5, 0.3, 0.2]])
    eps = 0.7
    keep = math.exp(eps) / (math.exp(eps) + 2)
    like = lambda a, b: keep if a == b else (1 - keep) / 2  # noqa: E731
    attack = sum(max(like(a, b) * d[0, b] for b in range(3)) for a in range(3))
    got, bound = synthetic.RRTightness.closed_forms(d, eps)
    assert got == pytest.approx(attack, rel=1e-12)
    assert bound >= got


@pytest.mark.slow
def test_idealized_gaussian_sweep_writes_the_experiment_table(tmp_path):
    """`python -m pipeline -m experiment=idealized_gaussian` (shrunk): one job per prior x eps, then the table."""
    env = {**os.environ, "WANDB_MODE": "offline", "HYDRA_FULL_ERROR": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "-m", "experiment=idealized_gaussian", "mechanism.epsilon=1,100",
         *SMALL["idealized_gaussian"]],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    (sweep,) = [p.parent for p in (tmp_path / "outputs" / "multirun").rglob("multirun.yaml")]
    header, rows = _read_csv(sweep / "idealized_gaussian.csv")
    assert header == COLUMNS["idealized_gaussian"]
    assert sorted((r["prior_name"], float(r["eps"])) for r in rows) == [
        ("uniform", 1.0), ("uniform", 100.0), ("zipf", 1.0), ("zipf", 100.0)]
    for r in rows:
        assert float(r["attack_ci_low"]) <= float(r["attack_mean"]) <= float(r["attack_ci_high"])
        assert 0 <= int(r["bound_0.95"]) <= 10 and r["bound_theorem"] and float(r["delta"]) == 1e-5
    assert (sweep / "figures" / "idealized_gaussian.png").stat().st_size > 0
    # The report rebuilds the same table from the job folders.
    assert subprocess.run([sys.executable, "-m", "pipeline.report", str(sweep)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120).returncode == 0
    assert _read_csv(sweep / "idealized_gaussian.csv")[1] == rows


@pytest.mark.parametrize("name", sorted(SWEEP))
def test_sweep_params_name_keys_of_the_config(name, compose):
    """hydra.sweeper.params of the experiment file (what `-m experiment=<name>` sweeps): each key is a config
    group or a key of the composed config, and each value is a valid override of it (composes)."""
    from omegaconf import OmegaConf

    params = OmegaConf.load(CONF_DIR / "experiment" / f"{name}.yaml").hydra.sweeper.params
    assert params
    for key, values in params.items():
        assert key in ("prior", "mechanism") or OmegaConf.select(compose(f"experiment={name}"), key) is not None, key
        for value in str(values).split(","):
            assert compose(f"experiment={name}", f"{key}={value}") is not None
    if name == "rr_tightness":  # the proposition's grid (README)
        assert {k: str(v) for k, v in params.items()} == {"prior.exponent": "0,0.2,0.5,1,2",
                                                          "mechanism.epsilon": "0.5,1,2,4"}


@pytest.mark.slow
def test_rr_tightness_sweep_from_the_command_line(tmp_path):
    """`python -m pipeline -m experiment=rr_tightness` (sliced and shrunk): one game job per exponent, then the
    sweep's table, sorted by exponent and eps."""
    env = {**os.environ, "WANDB_MODE": "offline", "HYDRA_FULL_ERROR": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "-m", "experiment=rr_tightness", "prior.exponent=2,0", "mechanism.epsilon=1",
         *SMALL["rr_tightness"]],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    (sweep,) = [p.parent for p in (tmp_path / "outputs" / "multirun").rglob("multirun.yaml")]
    assert sorted(p.name for p in sweep.iterdir() if p.name.isdigit()) == ["0", "1"]
    header, rows = _read_csv(sweep / "rr_tightness.csv")
    assert header == COLUMNS["rr_tightness"]
    assert [(r["exponent"], r["eps"], r["condition_holds"]) for r in rows] == [("0.0", "1.0", "True"),
                                                                              ("2.0", "1.0", "False")]
    assert float(rows[0]["tightness"]) == pytest.approx(1.0, abs=1e-12) and float(rows[1]["tightness"]) < 0.9
    assert (sweep / "figures" / "rr_tightness.png").stat().st_size > 0


def test_experiment_logs_to_wandb(compose, tmp_path, monkeypatch):
    from wandb_offline import read_offline_run

    monkeypatch.setenv("WANDB_MODE", "offline")
    cfg = compose("experiment=eps_protect", "logger=wandb", *SHRINK["eps_protect"])
    metrics = experiments.run_task(cfg, tmp_path / "job", run_name="eps_protect")
    (run_dir,) = (tmp_path / "job" / "wandb").glob("offline-run-*")
    run = read_offline_run(run_dir)
    assert run["group"] == "eps_protect" and "experiment:eps_protect" in run["tags"]
    assert run["summary"]["headline/eps_protect/uniform_9digit"] == pytest.approx(
        metrics["headline"]["eps_protect/uniform_9digit"])
    assert run["summary"]["tables/eps_protect/_type"] == "table-file"
    assert run["summary"]["tables/eps_protect/nrows"] == len(metrics["table"]) and run["exit_code"] == 0


def test_bad_task_value_is_one_sentence(compose, tmp_path):
    cfg = compose("experiment=compare_bounds", "task.mus=[-1]")
    with pytest.raises(ConfigError, match=r"task\.mus must list numbers > 0, got \[-1"):
        experiments.run_task(cfg, tmp_path / "job")
    assert not (tmp_path / "job" / "metrics.json").exists()


# ------------------------------------------------------------------ the Zipf law over 10^9 secrets and its fit


@pytest.mark.parametrize("s", [0.0, 0.5, 1.0, 1.2, 1.84, 3.0])
@pytest.mark.parametrize("n", [7, 10_000, 10_001, 123_457, 10**9])
def test_generalized_harmonic_against_hurwitz_zeta(s, n):
    import mpmath

    from stages.prior.zipf import generalized_harmonic

    if s == 0.0:
        expected = float(n)
    elif s == 1.0:
        expected = float(mpmath.harmonic(n))
    else:  # H_N(s) = zeta(s) - zeta(s, N + 1), by analytic continuation also for s < 1
        expected = float(mpmath.zeta(s) - mpmath.zeta(s, n + 1))
    assert generalized_harmonic(n, s) == pytest.approx(expected, rel=1e-13)


def test_zipf_rank_probability_and_median_rank_against_arrays():
    from stages.prior.zipf import zipf_median_rank, zipf_probabilities, zipf_rank_probability

    for n, s in [(10, 1.84), (1000, 0.7), (30_000, 1.1)]:
        dense = zipf_probabilities(n, s)
        ranks = np.arange(1, n + 1)
        assert zipf_rank_probability(ranks, n, s) == pytest.approx(dense, rel=1e-12)
        assert zipf_median_rank(n, s) == int(np.argmax(np.cumsum(dense) >= 0.5)) + 1


def test_zipf_exponent_interval_covers_and_matches_the_bootstrap():
    """Profile-likelihood 95% interval vs a multinomial bootstrap on a simulated Zipf sample (s = 1.3).

    Tolerances: the truth lies inside the interval, and the interval's half-width agrees with
    1.96 bootstrap standard deviations within 30% (200 resamples: the sd is known to about 10%)."""
    from stages.prior.zipf import fit_zipf_exponent, zipf_exponent_interval, zipf_probabilities

    rng = np.random.default_rng(7)
    counts = np.bincount(rng.choice(150, size=50_000, p=zipf_probabilities(150, 1.3)), minlength=150)
    s, low, high = zipf_exponent_interval(counts)
    assert low < 1.3 < high and low < s < high
    boot = [fit_zipf_exponent(rng.multinomial(counts.sum(), counts / counts.sum())) for _ in range(200)]
    assert (high - low) / 2 == pytest.approx(1.96 * np.std(boot), rel=0.3)


def test_configured_zipf_exponent_is_the_rockyou_fit(compose):
    """conf/prior/zipf.yaml's exponent is the RockYou MLE rounded to two decimals, inside its 95% interval."""
    from stages.prior.zipf import read_counts, zipf_exponent_interval

    s, low, high = zipf_exponent_interval(read_counts(ROCKYOU_9DIGIT))
    configured = float(compose("prior=zipf").prior.exponent)
    assert configured == round(s, 2) and low <= configured <= high
