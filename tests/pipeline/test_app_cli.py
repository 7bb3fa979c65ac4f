"""The command line as a user runs it: `python -m pipeline ...` in a fresh folder."""
from __future__ import annotations

import csv
import json

import pytest
from clitools import SMALL, run_cli

pytestmark = pytest.mark.slow  # runs `python -m pipeline` in subprocesses: the slow tier (`pytest -m slow`)


def _metrics_files(root):
    return sorted(root.rglob("metrics.json"))


def test_single_run_writes_its_job_folder(tmp_path):
    result = run_cli(*SMALL, "prior=zipf", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (metrics_path,) = _metrics_files(tmp_path / "outputs" / "runs")
    job = metrics_path.parent
    metrics = json.loads(metrics_path.read_text())
    assert metrics["n_targets"] == 20 and metrics["boxes"]["prior"] == "zipf"
    assert (job / ".hydra" / "config.yaml").is_file() and (job / "figures" / "successes.png").is_file()
    assert (tmp_path / "outputs" / "cache" / "trials").is_dir()


def test_unknown_option_names_the_valid_ones(tmp_path):
    result = run_cli("prior=no_such_prior", cwd=tmp_path)
    assert result.returncode != 0
    assert "Could not find 'prior/no_such_prior'" in result.stderr
    assert "Available options in 'prior'" in result.stderr
    assert "uniform" in result.stderr and "zipf" in result.stderr
    assert not _metrics_files(tmp_path)


# A prior that does not sum to 1 is given as an explicit matrix to the prior base class.
_BAD_PRIOR = ("prior._target_=stages.prior.base.Prior", "~prior.n_targets", "~prior.domain_size",
              "+prior.probabilities=[[0.5,0.6]]", "mechanism.domain_size=2")


@pytest.mark.parametrize("overrides,key,value", [
    (("mechanism.epsilon=-1",), "mechanism.epsilon", "-1"),
    (("mechanism=randomized_response", "mechanism.epsilon=-0.5"), "mechanism.epsilon", "-0.5"),
    (("mechanism.epsilon=null", "mechanism.mu=-2"), "mechanism.mu", "-2"),  # noise sigma = sqrt(2) / mu
    (("confidences=[0.05,1.5]",), "confidences", "1.5"),
    (_BAD_PRIOR, "prior.probabilities", "1.1"),
], ids=["gaussian-epsilon", "rr-epsilon", "gaussian-mu", "confidence", "prior-sum"])
def test_invalid_value_exits_with_one_sentence_and_no_metrics(overrides, key, value, tmp_path):
    result = run_cli(*SMALL, *overrides, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("error: ") and key in lines[0] and value in lines[0], lines[0]
    assert not _metrics_files(tmp_path)
    assert not list(tmp_path.rglob(".hydra")), "a refused job leaves no job folder"


def test_quickstart_prints_the_table(tmp_path):
    result = run_cli(cwd=tmp_path, timeout=240)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "prior baseline" in out and "bound_0.95" in out
    table = [line.split() for line in out.splitlines() if line.strip().startswith(("uniform", "zipf"))]
    assert len(table) == 10  # 2 priors x 5 epsilons
    (report,) = (tmp_path / "outputs" / "quickstart").glob("*/report.csv")
    rows = list(csv.DictReader(report.open()))
    assert {r["prior"] for r in rows} == {"uniform", "zipf"} and all(r["n_targets"] == "100" for r in rows)
