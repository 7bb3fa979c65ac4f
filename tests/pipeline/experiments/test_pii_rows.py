"""The PII rows of experiments advantage_by_prior and eps_protect: a `pii` law (the PII prior scored by the
job's model, model=tiny here, on the Enron sample of tests/data) and a `given` law (numbers from a pii_law run)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import experiments
from pipeline.game import ConfigError
from stages.bound import theorems as T
from stages.bound.profiles import ApproxDP

DATA = Path(os.environ["ADVBOUNDS_DATA"])  # tests/conftest.py points it at tests/data
PII = "{law: pii, n_contexts: 3, max_candidates: 12, progress: false}"
SHRINK = {"advantage_by_prior": ("task.eps_points=3",), "eps_protect": ("task.prior_points=3",)}


@pytest.fixture
def compose(compose_config):
    return compose_config


def _rows(metrics: dict, prior_name: str) -> list[dict]:
    return [r for r in metrics["table"] if r["prior_name"] == prior_name]


@pytest.mark.slow
def test_pii_law_adds_the_pii_rows_to_both_experiments(compose, tmp_path):
    """The rows' probabilities are PIIPrior.law_summary() of the same settings, computed here directly (in
    memory, no stage cache; equal up to the float32 LM's round-off, 1e-6 relative); the second experiment
    reuses the first one's cached scores, so its most probable PII is the first one's exactly."""
    from stages.model.tiny import TinyModel
    from stages.prior.pii import PIIPrior

    summary = PIIPrior(TinyModel(device="cpu"), n_contexts=3, max_candidates=12, data_dir=str(DATA),
                       progress=False).law_summary()
    assert summary["n_contexts"] == 3 and summary["n_candidates"] == 12

    cfg = compose("experiment=advantage_by_prior", "model=tiny", *SHRINK["advantage_by_prior"], f"+task.priors.pii={PII}")
    metrics = experiments.run_task(cfg, tmp_path / "advantage")
    rows = _rows(metrics, "pii")
    eps = sorted({r["eps"] for r in metrics["table"]})
    assert sorted((r["canary"], r["eps"]) for r in rows) == sorted((c, e) for c in ("max", "median", "p10") for e in eps)
    for r in rows:
        assert r["prior_probability"] == pytest.approx(summary[r["canary"]], rel=1e-6)
        assert r["advantage"] == pytest.approx(T.advantage_bound(ApproxDP(r["eps"], 1e-5), r["prior_probability"]),
                                               rel=1e-12)
    assert {r["canary"] for r in _rows(metrics, "zipf_9digit")} == {"min", "median", "max"}  # the laws' rows stay
    scored = metrics["laws"]["pii"]["summary"]
    assert scored["max"] == pytest.approx(summary["max"], rel=1e-6)
    assert "model tiny" in metrics["laws"]["pii"]["source"]
    assert [s for s, _ in metrics["stages"]["computed"]] == ["pii_scores"]

    cfg = compose("experiment=eps_protect", "model=tiny", *SHRINK["eps_protect"], f"+task.priors.pii={PII}")
    metrics = experiments.run_task(cfg, tmp_path / "protect")
    (row,) = _rows(metrics, "pii")
    assert row["prior_probability"] == scored["max"]
    assert row["eps_protect"] == pytest.approx(T.eps_protect(scored["max"], 0.05, 1e-5), rel=1e-12)
    assert metrics["headline"]["eps_protect/pii"] == row["eps_protect"]
    assert metrics["headline"]["eps_protect/pii/paper"] == 2.37
    assert metrics["stages"]["computed"] == [] and [s for s, _ in metrics["stages"]["reused"]] == ["pii_scores"]


def test_given_law_rows(compose, tmp_path):
    given = "{law: given, probabilities: {max: 0.3, median: 0.01, p10: 0.001}, source: 'pii_law run, gpt2'}"
    cfg = compose("experiment=advantage_by_prior", *SHRINK["advantage_by_prior"], f"+task.priors.pii={given}")
    rows = _rows(experiments.run_task(cfg, tmp_path / "advantage"), "pii")
    assert {(r["canary"], r["prior_probability"]) for r in rows} == {("max", 0.3), ("median", 0.01), ("p10", 0.001)}
    cfg = compose("experiment=eps_protect", *SHRINK["eps_protect"], f"+task.priors.pii={given}")
    metrics = experiments.run_task(cfg, tmp_path / "protect")
    (row,) = _rows(metrics, "pii")
    assert row["prior_probability"] == 0.3 and row["eps_protect"] == pytest.approx(T.eps_protect(0.3), rel=1e-12)
    assert metrics["laws"]["pii"]["source"] == "pii_law run, gpt2"
    assert metrics["stages"] == {"computed": [], "reused": []}  # a given law scores nothing


@pytest.mark.parametrize("experiment,law,message", [
    ("advantage_by_prior", "{law: given, probabilities: {max: 0.0}}",
     r"task: priors\.pii\.probabilities\.max must be a prior probability in \(0, 1\), got 0\.0; give "),
    ("eps_protect", "{law: given, probabilities: {max: 1.0, median: 0.2}}",
     r"task: priors\.pii\.probabilities\.max must be a prior probability in \(0, 1\), got 1\.0; "),
    ("advantage_by_prior", "{law: given, probabilities: {median: -0.1}}",
     r"task: priors\.pii\.probabilities\.median must be a prior probability in \(0, 1\), got -0\.1; "),
    ("advantage_by_prior", "{law: given, probabilities: {top: 0.2}}",
     r"task: priors\.pii\.probabilities names canaries among \['max', 'median', 'p10', 'min'\], got 'top'\.$"),
    ("eps_protect", "{law: given, probabilities: {median: 0.2}}",
     r"task: priors\.pii\.probabilities must give max \(the most probable canary: eps_protect's row\), got \['median'\]\.$"),
    ("advantage_by_prior", "{law: pii, contexts: 3}",
     r"task: priors\.pii \(a pii law\) takes law, canaries and the PII prior's settings \['batch_size', .*\] "
     r"\(the language model is the job's model=\.\.\.\), got \['contexts'\]\.$"),
    ("advantage_by_prior", "{law: pii, canaries: [max, top]}",
     r"task: priors\.pii\.canaries must list canaries among \['max', 'median', 'p10', 'min'\], got \['max', 'top'\]\.$"),
])
def test_bad_law_is_refused_in_one_sentence(experiment, law, message, compose, tmp_path):
    cfg = compose(f"experiment={experiment}", *SHRINK[experiment], f"+task.priors.pii={law}")
    with pytest.raises(ConfigError, match=message) as caught:
        experiments.run_task(cfg, tmp_path / "job")
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "job").exists()


@pytest.mark.slow
def test_cli_pii_law_with_a_missing_enron_folder_is_one_sentence(tmp_path):
    from clitools import run_cli

    out = run_cli("experiment=eps_protect", *SHRINK["eps_protect"], "model=tiny",
                  "+task.priors.pii={law: pii, enron: enron/nowhere}", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and lines[0].startswith("error: data file enron/nowhere does not exist in data_dir "), out.stderr
    assert "`python -m pipeline.data fetch enron --data-dir " in lines[0] and "task.priors.pii.enron=" in lines[0]
    assert not list((tmp_path / "outputs").rglob("metrics.json"))


@pytest.mark.slow
def test_default_experiments_load_no_language_model(tmp_path):
    """Without a pii law the two experiments stay analytic: neither torch nor transformers is imported."""
    code = f"""
import sys
from hydra import compose, initialize_config_dir
from clitools import CONF_DIR
from pipeline import experiments
for name, shrink in {dict((k, list(v)) for k, v in SHRINK.items())!r}.items():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["outputs_dir={tmp_path / 'outputs'}", "experiment=" + name, *shrink])
    experiments.run_task(cfg, "{tmp_path}/" + name)
print(sorted(m for m in ("torch", "transformers") if m in sys.modules))
"""
    env = {**os.environ, "WANDB_MODE": "offline", "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]),
                                                                                  os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
