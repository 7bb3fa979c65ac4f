"""`python -m pipeline.report` on the sweeps a new user runs (issue 23, items 1, 3 and 4).

1. A sweep with attack variants and an eps = inf job: panels and legend come from the swept config keys only,
   every variant in the data is drawn, the eps values are joined by a line, the not-private job is a point
   without a bound, no text leaves the canvas or overlaps another, and the console table shows the swept keys.
3. One sweep per folder: a second sweep into a folder holding another sweep's jobs is refused before any job
   (pipeline.sweeper.check_sweep_folder), the same sweep run again finishes its missing jobs, and the report
   refuses a folder whose job folders are not the jobs its jobs.yaml lists.
4. What the report cannot read (a cut-off, empty or non-object metrics.json, a folder of single runs) is one
   sentence naming the file or folder, exit 2, no traceback.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
import yaml
from clitools import SMALL, run_cli
from layouttools import layout_problems

from pipeline.report import (RESULT_COLUMNS, UNREADABLE, ReportError, _table_rows, check_folder, collect, main,
                             report_figure, table_columns)

CONFIDENCES = (0.05, 0.5, 0.95)


# ------------------------------------------------------------------------------------------------------------
# A sweep's folder written by hand: the files a game job writes that the report reads.

def _metrics(eps: float, attack: float, plain: float, prior: float, n: int = 30) -> dict:
    private = math.isfinite(eps)
    bound = {repr(c): [min(n, attack + 2 + 4 * i + eps)] * 2 for i, c in enumerate(CONFIDENCES)} if private else None
    exceed = {repr(c): 0.0 for c in CONFIDENCES} if private else None
    return {
        "n_targets": n, "trials": 2, "seed": 0, "k": 1,
        "boxes": {"prior": "baynet", "mechanism": "noisy_marginals", "attack": "rap", "metric": "exact", "bound": "one_run"},
        "attack_label": "noise_aware", "attack_success_mean": attack, "prior_success_mean": prior,
        "confidences": list(CONFIDENCES), "bound": bound, "exceed": exceed,
        "bound_theorem": {"theorem": "split one-run theorem (THEORY.md Thm 1)"} if private else None,
        "attacks": {"noise_aware": {"success_mean": attack, "exceed": exceed},
                    "plain": {"success_mean": plain, "exceed": exceed}},
        "privacy": ({"private": True, "epsilon": eps, "delta": 1e-5} if private else
                    {"private": False, "reason": "epsilon = inf: the exact marginals", "epsilon": None, "delta": None}),
        "params": {"bound": {"bound": "one_run"}},
    }


def _job(folder: Path, overrides: list[str], metrics: dict | None, eps: float) -> None:
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"mechanism": {"epsilon": eps}}))
    if metrics is not None:
        (folder / "metrics.json").write_text(json.dumps(metrics))


# The README's tabular sweeps in one: 'prior.targets=[SEX],[EDU]' x mechanism.epsilon=1,3,10,inf.
TARGETS = ("[SEX]", "[EDU]")
EPSILONS = (1.0, 3.0, 10.0, math.inf)


def _sweep(root: Path) -> list[list[str]]:
    jobs = []
    for t, targets in enumerate(TARGETS):
        for e, eps in enumerate(EPSILONS):
            job = ["prior=baynet", "mechanism=noisy_marginals", "attack=rap", f"prior.targets={targets}",
                   f"mechanism.epsilon={eps:g}", "trials=2"]
            # the plain variant above the attack at eps = 3, so it is not hidden behind it anywhere
            _job(root / str(len(jobs)), job, _metrics(eps, 20 + e + t, 19 + e + 2 * (e == 1), 18 - t), eps)
            jobs.append(job)
    (root / "jobs.yaml").write_text(yaml.safe_dump(jobs))
    (root / "multirun.yaml").write_text("hydra: {}\n")
    return jobs


def test_panels_and_legend_come_from_the_swept_config_keys_only(tmp_path):
    """Issue 23 item 1: panel titles showed results ("plain_success_mean=55.0, prior.targets=[SEX]")."""
    _sweep(tmp_path)
    rows = collect(tmp_path)
    fig = report_figure(rows)
    try:
        titles = sorted(ax.get_title() for ax in fig.axes if ax.get_visible())
        assert titles == ["prior.targets=[EDU]", "prior.targets=[SEX]"]
        result_words = [*RESULT_COLUMNS, "success_mean", "exceed", "bound_", "plain"]
        for title in titles:
            assert not any(word in title for word in result_words), title
        assert not layout_problems(fig), layout_problems(fig)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_every_variant_is_drawn_the_epsilons_are_joined_and_inf_is_a_point_without_bound(tmp_path):
    _sweep(tmp_path)
    rows = collect(tmp_path)
    fig = report_figure(rows)
    try:
        for ax in (a for a in fig.axes if a.get_visible()):
            targets = ax.get_title().split("=", 1)[1]
            members = [r for r in rows if r["prior.targets"] == targets]
            private = sorted((r for r in members if r["private"]), key=lambda r: r["epsilon"])
            (public,) = [r for r in members if not r["private"]]
            lines = {}
            for line in ax.get_lines():
                lines.setdefault(line.get_label(), []).append(line)
            for label, column in (("attack: noise_aware (mean)", "attack_success_mean"),
                                  ("attack variant: plain (mean)", "plain_success_mean"),
                                  ("prior baseline z* (k=1, mean)", "prior_success_mean")):
                joined, point = lines[label]  # the eps values joined by a line; the not-private job a point
                assert list(joined.get_xdata()) == [1.0, 3.0, 10.0] and joined.get_linestyle() == "-"
                assert list(joined.get_ydata()) == [r[column] for r in private]
                assert point.get_linestyle() == "None" and list(point.get_ydata()) == [public[column]]
                assert point.get_xdata()[0] > 10.0  # right of the largest epsilon, in the not-private band
            for c in CONFIDENCES:  # a bound line per confidence, over the private jobs only
                (bound,) = lines[f"bound @ {c:g}"]
                assert list(bound.get_xdata()) == [1.0, 3.0, 10.0]
            assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "3", "10", "not\nprivate"]
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert legend[:3] == ["attack: noise_aware (mean)", "attack variant: plain (mean)", "prior baseline z* (k=1, mean)"]
        assert any(text.startswith("not private") for text in legend)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_one_panel_with_an_inf_job_fits_its_canvas(tmp_path):
    _sweep(tmp_path)
    rows = [r for r in collect(tmp_path) if r["prior.targets"] == "[SEX]"]
    fig = report_figure(rows)
    try:
        assert not layout_problems(fig), layout_problems(fig)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_console_table_shows_the_swept_keys_the_variants_and_not_private(tmp_path, capsys):
    _sweep(tmp_path)
    rows = collect(tmp_path)
    columns = table_columns(rows)
    assert columns[0] == "prior.targets" and columns[-1] == "job" and "plain_success_mean" in columns
    assert "mechanism.epsilon" not in columns and "epsilon" in columns  # epsilon has its own column
    shown = _table_rows(rows)
    assert [r["epsilon"] for r in shown][:4] == [1.0, 3.0, 10.0, "not private"]
    assert [r["theorem"] for r in shown][:4] == ["T1", "T1", "T1", "-"]  # the theorem's short id
    assert main([str(tmp_path)]) == 0
    header = capsys.readouterr().out.splitlines()[1].split()  # under the bound_<c> / floor_<c> line
    assert header[:2] == ["prior.targets", "eps"] and "plain" in header and header[-1] == "job"
    assert {r["bound_summary"] for r in csv.DictReader((tmp_path / "report.csv").open()) if r["private"] == "False"} == {
        "no bound (not private)"}


def test_the_printed_table_has_one_scheme_fits_120_columns_and_says_what_its_columns_are(tmp_path):
    """Issue 39 item 8: the quickstart's table was 226 characters wide (115 of them bound_theorem), its `attack`
    column held a mean, delta and n were nowhere, and pipeline.report named the same columns otherwise."""
    from pipeline.report import TABLE_HEADERS, TABLE_WIDTH, report_table

    _sweep(tmp_path)
    rows = collect(tmp_path)
    for row in rows:  # the quickstart's longest theorem record: the minimum over two theorems
        if row["private"]:
            row["bound_theorem"] = ("min of whole-prior one-run count (THEORY.md Thm 4) (at 0.05, 0.5), MMC one-run "
                                    "count (ICML 2025 Thm 3.2) (at 0.95)")
            row.update({f"floor_{c:g}": 1 for c in CONFIDENCES})
    text = report_table(rows)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= TABLE_WIDTH, text
    header = lines[1]  # under the line that heads the bound_<c> and floor_<c> groups
    for column in ("eps", "thm", "attack mean", "prior-only mean", "plain mean"):
        assert f" {column} " in f" {header} ", (column, header)
    assert "bound_<c>" in lines[0] and "floor_<c>" in lines[0] and header.split()[-7:-1] == ["0.05", "0.5", "0.95"] * 2
    assert "T4/MMC" in lines[2].split()  # the theorem's id
    legend = " ".join(text.split())
    for expanded in ("T4 = whole-prior one-run count (THEORY.md Thm 4)", "MMC = MMC one-run count (ICML 2025 Thm 3.2)",
                     "attack mean (report.csv attack_success_mean)", "by the attack (noise_aware)",
                     "prior-only mean (prior_success_mean)", "floor_<c>",
                     # too wide with them, the columns every row shares (prior, delta, n) are said once, under it
                     "every row: prior = baynet, delta = 1e-05, n = 30, mechanism = noisy_marginals"):
        assert expanded in legend, (expanded, legend)
    narrow = report_table(rows[:3])  # no job without a privacy guarantee: delta and n are columns
    assert {"delta", "n"} <= set(narrow.splitlines()[1].split()) and "1e-05" in narrow.splitlines()[2].split()
    assert set(TABLE_HEADERS) <= {*table_columns(rows)}  # every header names a column of the scheme


@pytest.mark.slow  # plays the quickstart's games (shrunk): about 15 s
def test_the_quickstart_prints_the_reports_table(tmp_path, capsys):
    """One scheme: the quickstart's table is pipeline.report's, column for column (the quickstart, shrunk)."""
    from pipeline import quickstart

    rows, root = quickstart.run(tmp_path / "qs", priors=("zipf",), epsilons=(1.0, 4.0), trials=3)
    assert quickstart._print(rows, root, 0.0) == 0
    printed = capsys.readouterr().out
    assert main([str(root)]) == 0  # its folder is a sweep the report reads (jobs.yaml)
    reported = capsys.readouterr().out
    table = printed.split("\n\n")[0]
    assert reported.startswith(table) and len(table.splitlines()) == 4  # two header lines, a row per game
    assert max(len(line) for line in printed.splitlines() if str(root) not in line) <= 120
    header = table.splitlines()[1].split()
    assert header[:5] == ["prior", "eps", "delta", "n", "thm"] and header.count("0.95") == 2  # bound_<c> and floor_<c>
    assert "bound_0.95 = " in " ".join(printed.split()) and "prior-only guess z*" in printed


# ------------------------------------------------------------------------------------------------------------
# Item 3: one sweep per folder.

def test_a_folder_whose_jobs_are_not_its_jobs_yaml_is_refused(tmp_path, capsys):
    """Issue 23 item 3: a second sweep overwrote jobs.yaml and ran its job 2 into the first one's folder."""
    jobs = _sweep(tmp_path)
    check_folder(tmp_path)  # one sweep: fine
    other = [[o.replace("trials=2", "trials=3") for o in job] for job in jobs[:3]]
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump(other))
    with pytest.raises(ReportError, match="mixes two sweeps"):
        check_folder(tmp_path)
    assert main([str(tmp_path)]) == UNREADABLE
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(f"error: {tmp_path} mixes two sweeps: job 0 ran ") and "hydra.sweep.dir" in err[0]
    assert not (tmp_path / "report.csv").exists()


def test_the_sweeper_refuses_a_folder_holding_another_sweep(tmp_path):
    from pipeline.game import ConfigError
    from pipeline.sweeper import check_sweep_folder

    first = [["mechanism.epsilon=1"], ["mechanism.epsilon=2"]]
    second = [["mechanism.epsilon=3"], ["mechanism.epsilon=4"], ["mechanism.epsilon=5"]]
    check_sweep_folder(tmp_path / "new", second)  # a new folder
    check_sweep_folder(tmp_path, second)  # an empty one
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump(first))
    check_sweep_folder(tmp_path, second)  # a jobs.yaml but no job ran there (refused before its first job)
    _job(tmp_path / "0", first[0], _metrics(1.0, 20, 19, 18), 1.0)
    check_sweep_folder(tmp_path, first)  # the same sweep again: it finishes its missing jobs
    with pytest.raises(ConfigError) as refused:
        check_sweep_folder(tmp_path, second)
    message = str(refused.value)
    assert message.startswith(f"hydra.sweep.dir {tmp_path} already holds") and "\n" not in message
    assert "mechanism.epsilon=1 there, mechanism.epsilon=3 here" in message and "new folder" in message
    (tmp_path / "jobs.yaml").unlink()  # job folders and no job list (e.g. hydra/sweeper=basic): not this sweep's
    with pytest.raises(ConfigError, match="without a jobs.yaml"):
        check_sweep_folder(tmp_path, first)


@pytest.mark.slow
def test_a_second_sweep_into_the_same_folder_is_refused_before_any_job_and_the_same_one_resumes(tmp_path):
    sweep = tmp_path / "X"
    first = run_cli("-m", *SMALL, f"hydra.sweep.dir={sweep}", "mechanism.epsilon=1,2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = {name: (sweep / name).read_bytes() for name in ("jobs.yaml", "multirun.yaml")}
    second = run_cli("-m", *SMALL, f"hydra.sweep.dir={sweep}", "mechanism.epsilon=3,4,5", cwd=tmp_path)
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert second.returncode == 2 and len(lines) == 1, second.stderr
    assert lines[0].startswith(f"error: hydra.sweep.dir {sweep} already holds") and "Traceback" not in second.stderr
    assert {name: (sweep / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["0", "1"]
    # the same sweep again (job 1 killed before its metrics.json): job 1 runs again, job 0 is kept
    (sweep / "1" / "metrics.json").unlink()
    kept = (sweep / "0" / "metrics.json").read_bytes()
    again = run_cli("-m", *SMALL, f"hydra.sweep.dir={sweep}", "mechanism.epsilon=1,2", cwd=tmp_path)
    assert (sweep / "1" / "metrics.json").is_file() and (sweep / "0" / "metrics.json").read_bytes() == kept, again.stderr
    report = run_cli(str(sweep), module="pipeline.report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert [r["mechanism.epsilon"] for r in csv.DictReader((sweep / "report.csv").open())] == ["1", "2"]


# ------------------------------------------------------------------------------------------------------------
# Item 4: one sentence, exit 2, no traceback.

@pytest.mark.parametrize("content,says", [
    ('{"n_targets": 30, "trials"', "is not valid JSON"),
    ("", "is empty"),
    ("[1, 2]", "holds a JSON list, not a job's metrics"),
    ("null", "holds a JSON null"),
    ("{}", "is not a game job's metrics.json (no 'boxes')"),
    ('{"boxes": 3}', "is not a game job's metrics.json"),
])
def test_an_unreadable_metrics_json_is_one_sentence_naming_it(content, says, tmp_path, capsys):
    _sweep(tmp_path)
    broken = tmp_path / "2" / "metrics.json"
    broken.write_text(content)
    assert main([str(tmp_path)]) == UNREADABLE
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(f"error: {broken} {says}"), err
    assert "--allow-missing" in err[0] and f"hydra.sweep.dir={tmp_path}" in err[0]


@pytest.mark.parametrize("content", ['{"n_targets": 30, "trials"', "{}"])
def test_allow_missing_skips_an_unreadable_metrics_json_in_one_line(content, tmp_path, capsys):
    """Issue 39 item 9: with --allow-missing, a corrupt metrics.json was refused with 'pass --allow-missing'."""
    _sweep(tmp_path)
    broken = tmp_path / "2" / "metrics.json"
    broken.write_text(content)
    assert main([str(tmp_path), "--allow-missing"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("job 2: its metrics.json is unreadable (") and "skipped" in err[0], err
    rows = list(csv.DictReader((tmp_path / "report.csv").open()))
    assert [r["job"] for r in rows] == ["0", "1", "3", "4", "5", "6", "7"]
    # without it: the refusal names the file and says that --allow-missing skips it
    (tmp_path / "report.csv").unlink()
    assert main([str(tmp_path)]) == UNREADABLE
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(f"error: {broken} ") and "--allow-missing to skip it" in err[0], err
    assert not (tmp_path / "report.csv").exists()


@pytest.mark.parametrize("what", ["runs", "one_run", "runs_beside_a_sweep"])
def test_a_folder_that_is_not_a_sweep_is_one_sentence(what, tmp_path, capsys):
    """Issue 23 item 4: `python -m pipeline.report outputs/runs` raised a ValueError."""
    runs = tmp_path / "runs"
    for number, eps in enumerate((1.0, 2.0)):
        _job(runs / "2026-01-01" / f"12-00-0{number}-000000-abc", [f"mechanism.epsilon={eps:g}"],
             _metrics(eps, 20, 19, 18), eps)
    if what == "runs_beside_a_sweep":
        _sweep(tmp_path / "multirun" / "sweep")
    folder = {"runs": runs, "one_run": next(runs.glob("*/*")), "runs_beside_a_sweep": tmp_path}[what]
    assert main([str(folder)]) == UNREADABLE
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and str(folder) in err[0], err
    assert "sweep" in err[0]


@pytest.mark.slow
def test_report_of_the_readmes_tabular_sweeps_with_variants_and_inf(tmp_path):
    """The README's `'prior.targets=[SEX],[EDU]'` and `mechanism.epsilon=1,inf` sweeps in one, shrunk."""
    sweep = tmp_path / "sweep"
    played = run_cli("-m", "prior=baynet", "mechanism=noisy_marginals", "attack=rap", "prior.targets=[SEX],[EDU]",
                     "mechanism.epsilon=1,inf", "trials=2", "prior.n_records=30", "attack.steps=50",
                     f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    report = run_cli(str(sweep), module="pipeline.report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    header = report.stdout.splitlines()[1].split()  # under the bound_<c> / floor_<c> line
    assert header[0] == "prior.targets" and "plain" in header and header[-1] == "job"
    table = report.stdout.split("\n\n")[0].splitlines()  # the legend under the table says "not private" too
    assert sum("not private" in line for line in table) == 2
    rows = collect(sweep)
    fig = report_figure(rows)
    try:
        # a panel's title: its swept keys (then the theorem behind its bound lines where the panels' differ); beside
        # each, its audit panel (issue 42 item 2, tests/pipeline/test_report_audit_figure.py)
        panels = [ax for ax in fig.axes if ax.get_visible() and not ax.get_title().startswith("what the attack proves")]
        assert sorted(ax.get_title().split(";")[0] for ax in panels) == ["prior.targets=[EDU]", "prior.targets=[SEX]"]
        for ax in panels:
            labels = [line.get_label() for line in ax.get_lines()]
            assert labels.count("attack variant: plain (mean)") == 2  # at eps = 1 and not private
            assert labels.count("bound @ 0.95") == 1
        assert not layout_problems(fig), layout_problems(fig)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_a_folder_holding_sweeps_of_two_experiments_is_one_sentence(tmp_path, capsys):
    """`outputs/multirun/<date>` after two experiments: pipeline.experiments refuses to join them (a ValueError)."""
    for name in ("eps_protect", "zipf_calibration"):
        sweep = tmp_path / name
        job = sweep / "0"
        metrics = {"experiment": {"name": name, "target": f"pipeline.experiments.synthetic.{name}"}, "table": [{"x": 1}]}
        _job(job, [f"experiment={name}"], metrics, 1.0)
        (sweep / "jobs.yaml").write_text(yaml.safe_dump([[f"experiment={name}"]]))
    assert main([str(tmp_path)]) == UNREADABLE
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(f"error: {tmp_path} holds jobs of several experiments"), err
