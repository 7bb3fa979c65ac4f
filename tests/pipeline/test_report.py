"""`python -m pipeline.report` on real sweeps: missing jobs are named, and the figure says what it shows."""
from __future__ import annotations

import csv
import shutil

import pytest
from clitools import run_cli
from omegaconf import OmegaConf

from pipeline.labels import short_theorem, theorem_id
from pipeline.report import collect, missing_jobs, report_figure

pytestmark = pytest.mark.slow  # runs `python -m pipeline` in subprocesses: the slow tier (`pytest -m slow`)

# 4 jobs: one_run and the kgk comparator, at 10 and 20 targets, one epsilon.
SWEEP = ("-m", "bound=one_run,comparator", "prior.n_targets=10,20", "trials=5", "attack.k=2")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    folder = tmp / "sweep"
    result = run_cli(*SWEEP, f"hydra.sweep.dir={folder}", cwd=tmp)
    assert result.returncode == 0, result.stderr
    return folder


def test_complete_sweep_reports_every_job_with_k(sweep, tmp_path):
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)
    assert missing_jobs(copy) == []
    result = run_cli(str(copy), module="pipeline.report", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader((copy / "report.csv").open()))
    assert len(rows) == 4 and {r["k"] for r in rows} == {"2"}
    assert {r["comparator"] for r in rows} == {"", "kgk"}


def test_unfinished_and_unstarted_jobs_are_named_and_fail_the_report(sweep, tmp_path):
    """Issue: a sweep with an unfinished job was reported from the rows it had, exit 0 and no word."""
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)
    (copy / "1" / "metrics.json").unlink()  # still running, or killed
    shutil.rmtree(copy / "3")  # never started
    missing = missing_jobs(copy)
    assert len(missing) == 2
    assert missing[0].startswith("job 1 (") and "started, no metrics.json" in missing[0]
    assert missing[1].startswith("job 3 (") and "no job folder" in missing[1]
    # Each line names the job's overrides, the same Hydra gave the job.
    for number, line in ((1, missing[0]), (3, missing[1])):
        overrides = OmegaConf.load(sweep / str(number) / ".hydra" / "overrides.yaml")
        assert f"({' '.join(overrides)})" in line

    result = run_cli(str(copy), module="pipeline.report", cwd=tmp_path)
    assert result.returncode == 1
    assert "2 of 4 jobs" in result.stderr and "job 1 (" in result.stderr and "job 3 (" in result.stderr
    assert "--allow-missing" in result.stderr and not (copy / "report.csv").exists()

    allowed = run_cli(str(copy), "--allow-missing", module="pipeline.report", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert "job 1 (" in allowed.stderr
    assert len(list(csv.DictReader((copy / "report.csv").open()))) == 2


def test_figure_has_markers_per_panel_n_and_its_settings(sweep):
    """Issue: bound=one_run,expected,comparator at one epsilon showed no bound (lines without markers)."""
    rows = collect(sweep)
    fig = report_figure(rows)
    try:
        # issue 42 item 2: beside each panel its audit panel ("what the attack proves", tests/pipeline/
        # test_report_audit_figure.py); the checks below are of the success panels
        audits = [ax for ax in fig.axes if ax.get_title().startswith("what the attack proves")]
        axes = [ax for ax in fig.axes if ax not in audits]
        assert len(axes) == 4 and len(audits) == 4
        for ax in axes:
            lines = ax.get_lines()
            assert len(lines) == 5 and all(line.get_marker() not in (None, "None", "", " ") for line in lines)
        labels = sorted(ax.get_ylabel() for ax in axes)
        assert labels == ["targets attacked (of 10)"] * 2 + ["targets attacked (of 20)"] * 2
        text = " ".join(" ".join(t.get_text() for t in fig.texts).split())  # captions are wrapped
        for needed in ("delta = 1e-05", "trials = 5", "metric = exact", "k = 2", "comparator = kgk",
                       '"bound @ c": with probability >= c at most this many'):
            assert needed in text, (needed, text)
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert "prior baseline z* (k=2, mean)" in legend
        # Issue 14 item 2: the bound lines name the theorem behind their numbers; with attack.k=2 the
        # one_run box falls back to KGK + Markov, and the kgk comparator is its own theorem, so the
        # panels differ and each panel's title names its theorem.
        theorems = {r["bound_theorem"] for r in rows}
        assert len(theorems) == 2 and all(theorems), theorems
        # Issue 39 item 7: the titles hold the theorems' short ids, the note under the figure expands them.
        titles = " ".join(ax.get_title().replace("\n", " ") for ax in axes)
        for theorem in theorems:
            assert short_theorem(theorem) in titles and theorem not in titles, (theorem, titles)
            assert f"{theorem_id(theorem)} = {theorem}" in text, (theorem, text)
        assert "mechanism = gaussian" in text  # the figure names the mechanism
        assert "theorem" in fig.legends[0].get_title().get_text()  # the legend says where the theorems are
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
