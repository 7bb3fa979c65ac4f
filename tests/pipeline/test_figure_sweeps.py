"""A paper figure is a `-m` sweep of ordinary game jobs (pipeline.sweeper): on the command line, in process and on
SLURM; any job's overrides replay its point as one `python -m pipeline` run; bad figure input stops the sweep
before any job, in one sentence."""
from __future__ import annotations

import csv
import json

import pytest
import yaml
from clitools import run_cli

from test_launchers import slurm_cluster  # noqa: F401  (the fixture: skips where no SLURM job can run)

# Fig. recon_1col_multeps on FIRE, shrunk: two epsilons (one of them exact marginals), plain RAP only.
EPSILON = ("-m", "experiment=tabular_epsilon", "prior.dataset=fire", "mechanism.epsilon=1,inf", "trials=2",
           "prior.n_records=30", "attack.steps=50", "attack.compare=[]")


def _check_epsilon_sweep(sweep_dir, result):
    assert result.returncode == 0, result.stdout + result.stderr
    rows = list(csv.DictReader((sweep_dir / "tabular_epsilon.csv").open()))
    assert [(r["dataset"], r["column"], r["epsilon"]) for r in rows] == [("fire", "ALS Unit", "1"),
                                                                          ("fire", "ALS Unit", "inf")]
    assert rows[0]["bound_0.95"] != "" and rows[1]["bound_0.95"] == "" and rows[1]["bound_theorem"] == "none (not private)"
    assert (sweep_dir / "figures" / "tabular_epsilon.png").stat().st_size > 0
    for job in ("0", "1"):
        overrides = yaml.safe_load((sweep_dir / job / ".hydra" / "overrides.yaml").read_text())
        assert "prior.targets=['ALS Unit']" in overrides  # the figure's point, added by the sweeper
        metrics = json.loads((sweep_dir / job / "metrics.json").read_text())
        assert metrics["experiment"]["name"] == "tabular_epsilon" and "attacks" in metrics  # a game job


@pytest.mark.slow
def test_figure_sweep_and_replaying_one_point(tmp_path):
    sweep_dir = tmp_path / "sweep"
    result = run_cli(*EPSILON, f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    _check_epsilon_sweep(sweep_dir, result)
    assert "2 rows -> " in result.stdout
    # one point of the figure: its job's overrides, as a single run, give the same numbers
    overrides = yaml.safe_load((sweep_dir / "0" / ".hydra" / "overrides.yaml").read_text())
    replay = run_cli(*overrides, cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert "one point of figure tabular_epsilon" in replay.stdout
    (job,) = [p.parent for p in (tmp_path / "outputs" / "runs").rglob("metrics.json")]
    swept, single = (json.loads((d / "metrics.json").read_text()) for d in (sweep_dir / "0", job))
    assert single["attacks"] == swept["attacks"] and single["table"] == swept["table"]
    assert (job / "tabular_epsilon.csv").exists()


@pytest.mark.slow
@pytest.mark.slurm
def test_figure_sweep_on_slurm(tmp_path, slurm_cluster):  # noqa: F811
    sweep_dir = tmp_path / "sweep"
    result = run_cli(*EPSILON, "hydra/launcher=slurm_local", "hydra.launcher.mem_gb=2", f"hydra.sweep.dir={sweep_dir}",
                     cwd=tmp_path, timeout=500)
    _check_epsilon_sweep(sweep_dir, result)
    assert list((sweep_dir / ".submitit").rglob("*_submission.sh"))


@pytest.mark.slow
@pytest.mark.parametrize("override,message", [
    ("figure.columns=[NOPE]", "error: figure.columns names column 'NOPE'"),
    ("prior.dataset=adult", "error: prior.dataset must be one of acs, fire"),
    ("figure.ci_level=2", "error: figure.ci_level must be a probability in (0, 1), got 2.0."),
])
def test_bad_figure_input_stops_the_sweep_before_any_job(override, message, tmp_path):
    sweep_dir = tmp_path / "sweep"
    result = run_cli("-m", "experiment=tabular_single_column", override, f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr
    assert not sweep_dir.exists() and not list(tmp_path.rglob("metrics.json"))


@pytest.mark.parametrize("value", ["ALS Unit", "it's a \\ path", "end\\", "a\\'b", "Zipcode of Incident", 3, 2.5,
                                   float("inf"), None, True, ["SEX", "EDU"], ["ALS Unit"], [0, 1],
                                   {"acs": "EDU", "fire": ["ALS Unit"]}])
def test_a_points_value_reads_back_as_itself(value):
    """pipeline.sweeper writes a point's values in Hydra's override syntax; Hydra's parser gives the value back."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from pipeline.sweeper import override_value

    (parsed,) = OverridesParser.create().parse_overrides([f"key={override_value(value)}"])
    assert parsed.value() == value


def test_a_point_replaces_and_switches():
    from pipeline.sweeper import point_overrides

    combination = ["experiment=x", "prior.targets=[SEX]", "mechanism.learning_rate=1", "mechanism=dpsgd", "trials=2"]
    job = point_overrides(combination, {"prior.targets": ["EDU"], "mechanism": "gaussian", "mechanism.epsilon": 1.0})
    assert job == ["experiment=x", "trials=2", "prior.targets=['EDU']", "mechanism=gaussian", "mechanism.epsilon=1.0"]


def test_the_sweeper_knows_every_config_group_a_point_may_switch():
    import pipeline
    from pathlib import Path

    from pipeline.game import BOX_GROUPS
    from pipeline.sweeper import GROUPS

    groups = {p.name for p in Path(pipeline.CONF_DIR).iterdir() if p.is_dir() and p.name not in ("experiment", "hydra")}
    assert set(GROUPS) == groups and set(BOX_GROUPS) <= set(GROUPS)
