"""Issue 23, items 5-8, as a new user met them: a guarantee that is no guarantee reported as private, a diverged
training that looked like an attack equal to the prior, a level given twice, a cache_dir that cannot be used
named as outputs_dir, raw bytes of a binary counts file on the terminal, and a refused W&B job's folder left
behind. Each now plays as NOT PRIVATE, warns, or is refused in one sentence naming the key, leaving nothing."""
from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from clitools import SMALL, run_cli

from pipeline.game import unusable_warning
from pipeline.job import run_game


def _one_error(result, *needles: str) -> str:
    """The run was refused in one line on stderr (exit 2), no traceback, no Hydra 'Error executing job' line
    (W&B's own 'wandb: ...' lines aside)."""
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("wandb: ")]
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr and "Error executing job" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert lines[0].isprintable(), repr(lines[0])  # no raw bytes of a file reach the terminal
    return lines[0]


def _no_job_folder(tmp_path):
    runs = tmp_path / "outputs" / "runs"
    left = [p for p in runs.rglob("*") if p.is_file() or p.is_symlink()] if runs.exists() else []
    assert not left, left


# -- item 6: one rule for "private" ---------------------------------------------------------------------------

@pytest.mark.parametrize("overrides", [
    ("mechanism.epsilon=1e50",),
    ("mechanism.mu=1e6", "mechanism.epsilon=null"),
    ("mechanism.epsilon=inf",),
    ("mechanism=randomized_response", "mechanism.epsilon=inf"),
    ("mechanism=randomized_response", "mechanism.epsilon=1e50"),
], ids=["gaussian_eps_1e50", "gaussian_mu_1e6", "gaussian_eps_inf", "rr_eps_inf", "rr_eps_1e50"])
def test_a_vacuous_guarantee_plays_as_not_private(overrides, compose_config, tmp_path):
    """Was: "private": true, "epsilon": inf and bound lines drawn (1e50, mu = 1e6), or refused (RR at inf)."""
    metrics = run_game(compose_config("prior.n_targets=10", "trials=3", *overrides), tmp_path / "job")
    written = json.loads((tmp_path / "job" / "metrics.json").read_text())
    for m in (metrics, written):
        assert m["privacy"]["private"] is False and m["privacy"]["reason"]
        assert m["privacy"]["epsilon"] is None and m["bound"] is None and m["bound_theorem"] is None


@pytest.mark.slow
def test_a_vacuous_guarantee_says_not_private_on_the_console(tmp_path):
    result = run_cli(*SMALL, "mechanism.epsilon=1e50", cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert "NOT PRIVATE (epsilon at delta = 1e-05 is 1e+50, above 709.78" in out and "eps=inf" not in out


# -- item 7: silent failures ----------------------------------------------------------------------------------

def test_a_diverged_training_warns_on_the_console_the_figure_and_in_metrics(compose_config, tmp_path, caplog,
                                                                            monkeypatch):
    """Was: learning_rate=1e30 made every canary unusable, the attack equalled the prior and only
    metrics.json's observed.unusable_canaries said so. A stand-in attack reports every canary unusable."""
    import pipeline.figures as figures
    from stages.attack.bayes_optimal import BayesOptimalAttack

    monkeypatch.setattr(BayesOptimalAttack, "observed", lambda self: {"unusable_canaries": 10}, raising=False)
    texts = []

    def keep_texts(fig, path):
        texts.extend(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))

    monkeypatch.setattr(figures, "save_figure_atomic", keep_texts)
    with caplog.at_level(logging.INFO, logger="pipeline.game"):
        metrics = run_game(compose_config("prior.n_targets=10", "trials=3"), tmp_path / "job")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith("every canary in every trial had no usable likelihood")
    assert "mechanism.learning_rate" in warnings[0]
    written = json.loads((tmp_path / "job" / "metrics.json").read_text())
    assert written["unusable_canaries"] == metrics["unusable_canaries"] == 30 and written["warnings"] == warnings
    assert "WARNING: 30 canary guesses" in caplog.records[-1].getMessage()  # the run's summary line
    assert any("WARNING: 30 canary guesses" in t for t in texts), texts  # the figure


def test_unusable_canaries_are_counted_over_trials():
    def attacks(*per_trial):
        return {"attack": {"observed": {"unusable_canaries": list(per_trial)}}}

    assert unusable_warning({"attack": {}}, 10, 3) == (None, None)  # an attack that does not report them
    assert unusable_warning(attacks(0, 0, 0), 10, 3) == (0, None)
    total, warning = unusable_warning(attacks(0, 4, 1), 10, 3)
    assert total == 5 and warning.startswith("5 canaries (of 10 x 3 trials, in 2 trials)")


@pytest.mark.slow
def test_a_confidence_given_twice_is_refused_in_one_sentence(tmp_path):
    _one_error(run_cli(*SMALL, "confidences=[0.5,0.5]", cwd=tmp_path, timeout=120), "confidences", "0.5 more than once")
    _no_job_folder(tmp_path)


# -- item 5: the key named is the one to change -----------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("how", ["given", "interpolated"])
def test_a_cache_dir_that_cannot_be_used_names_cache_dir(how, tmp_path):
    """Was: "cannot create the job folder ... point outputs_dir at ...", Hydra's "Error executing job" line, and
    the job folder left behind. `interpolated` is only found when the first stage is stored (in the job)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    value = f"{blocker}/cache" if how == "given" else "${outputs_dir}/../blocker/cache"
    line = _one_error(run_cli(*SMALL, f"cache_dir={value}", cwd=tmp_path, timeout=120), "error: cache_dir", str(blocker))
    assert "outputs_dir" not in line
    _no_job_folder(tmp_path)
    assert blocker.read_text() == "not a folder"


# -- item 8: messages and folders --------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name,content,needle", [
    ("counts.txt", bytes(range(256)) * 4, "is not a text file"),
    ("counts.csv", bytes(np.random.default_rng(0).integers(0, 256, 2000, dtype=np.uint8)), "is not a text file"),
    ("counts.csv", b"", "is empty"),
])
def test_a_binary_or_empty_counts_file_is_one_clear_sentence(name, content, needle, tmp_path):
    """Was: the file's raw bytes printed into the terminal; an empty CSV said "got columns None"."""
    path = tmp_path / name
    path.write_bytes(content)
    line = _one_error(run_cli(*SMALL, "prior=zipf", f"prior.counts_file={path}", cwd=tmp_path, timeout=120),
                      "prior.counts_file", needle)
    assert "None" not in line and len(line) < 300
    _no_job_folder(tmp_path)


@pytest.mark.slow
def test_a_refused_job_with_wandb_leaves_no_folder(tmp_path):
    """Was: with logger=wandb a refused job's game.log, .hydra/ and wandb/ stayed (without W&B they went)."""
    _one_error(run_cli(*SMALL, "logger=wandb", "mechanism.epsilon=-1", cwd=tmp_path, timeout=180), "mechanism.epsilon")
    _no_job_folder(tmp_path)
