"""`python -m pipeline.report <multirun dir>`: a sweep's metrics.json files -> report.csv and figures/report.png.

One row per job: the job's overrides, epsilon, the attack's and the prior baseline's mean successes
(the baseline with the attack's k and metric) and the bound at each confidence. The figure plots
successes against epsilon, one panel per combination of the other swept options, and states what
the bound lines mean and the settings shared by the panels (delta, trials, metric, k, comparator).

A sweep whose jobs did not all write metrics.json (still running, failed, killed, never started) is
named job by job and the report exits 1 without writing anything, unless --allow-missing is given.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.io import bound_column, confidence_of_column, exceed_column, save_figure_atomic

__all__ = ["collect", "write_csv", "plot", "report_figure", "main", "missing_jobs", "MISSING_JOBS"]

#: Exit status when jobs of the sweep have no metrics.json (and --allow-missing was not given).
MISSING_JOBS = 1

_EPSILON_KEYS = ("mechanism.epsilon", "mechanism.mu")


def _read_yaml(path: Path) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(path)) if path.is_file() else None


def _job_row(metrics_path: Path, root: Path) -> dict[str, Any]:
    job = metrics_path.parent
    metrics = json.loads(metrics_path.read_text())
    overrides = _read_yaml(job / ".hydra" / "overrides.yaml") or []
    config = _read_yaml(job / ".hydra" / "config.yaml") or {}
    mechanism_epsilon = (config.get("mechanism") or {}).get("epsilon")
    privacy = metrics.get("privacy", {})
    private = bool(privacy.get("private", True))
    theorem = metrics.get("bound_theorem")
    theorem = (theorem.get("theorem") if isinstance(theorem, dict) else theorem) or ""
    row: dict[str, Any] = {"job": str(job.relative_to(root)) if job != root else "."}
    for override in overrides:
        key, _, value = str(override).partition("=")
        row[key.lstrip("+~")] = value
    row.update({
        "prior": metrics["boxes"]["prior"],
        "mechanism": metrics["boxes"]["mechanism"],
        "attack": metrics["boxes"]["attack"],
        "metric": metrics["boxes"]["metric"],
        "bound": metrics["boxes"]["bound"],
        # False for a run without a privacy profile (DP-SGD with clipping=none): no epsilon, no bound.
        "private": private,
        # The mechanism's epsilon (mechanism.epsilon) if it has one, else the profile's epsilon at delta;
        # epsilon_at_delta is always the profile's epsilon at the `delta` column (the mechanism's own delta,
        # 0 for eps-DP; metrics.json privacy.delta_source says which), which equals epsilon up to the noise
        # calibration's tolerance when the noise was calibrated to (epsilon, delta).
        "epsilon": (float(mechanism_epsilon) if mechanism_epsilon is not None else privacy.get("epsilon")) if private else None,
        "epsilon_at_delta": privacy.get("epsilon") if private else None,
        "delta": privacy.get("delta") if private else None,
        "n_targets": metrics["n_targets"],
        "trials": metrics["trials"],
        # Guesses per target of the attack and of the prior baseline z* (the same k, the same metric).
        "k": metrics.get("k", 1),
        "comparator": ((metrics.get("params") or {}).get("bound") or {}).get("comparator", ""),
        "attack_success_mean": metrics["attack_success_mean"],
        "prior_success_mean": metrics["prior_success_mean"],
    })
    # The theorem that produced the bound columns' numbers (e.g. the KGK + Markov fallback for k > 1).
    row["bound_theorem"] = theorem if private else "none (not private)"
    confidences = metrics.get("confidences") or [float(c) for c in (metrics.get("bound") or {})]
    bound = metrics.get("bound") or {}
    exceed = metrics.get("exceed") or {}
    per_trial = any(isinstance(v, list) for v in bound.values())
    for confidence in confidences:
        count = bound.get(repr(float(confidence)))
        row[bound_column(confidence)] = (count if not isinstance(count, list) else float(np.mean(count))) if private else None
    # A per-trial law (prior=baynet) bounds each trial on its own records: the bound columns are means over trials.
    row["bound_summary"] = "mean of one count per trial" if per_trial else "one count"
    for confidence in confidences:
        row[exceed_column(confidence)] = exceed.get(repr(float(confidence))) if private else None
    # Every variant the game scored on the same releases (metrics.json "attacks"): its success and exceedance.
    attacks = metrics.get("attacks") or {}
    row["attack_label"] = metrics.get("attack_label", "")
    for label, attack in list(attacks.items())[1:]:
        row[f"{label}_success_mean"] = attack.get("success_mean")
        for confidence in confidences:
            row[f"{label}_{exceed_column(confidence)}"] = ((attack.get("exceed") or {}).get(repr(float(confidence)))
                                                           if private else None)
    return row


def _job_paths(root: Path) -> list[Path]:
    return sorted((p for p in root.rglob("metrics.json") if ".submitit" not in p.parts),
                  key=lambda p: [int(s) if s.isdigit() else s for s in p.parent.relative_to(root).parts])


def collect(multirun_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """One row per job folder under multirun_dir that holds a metrics.json (jobs that failed have none)."""
    root = Path(multirun_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"multirun directory {root} does not exist; pass the folder a -m sweep printed.")
    paths = _job_paths(root)
    if not paths:
        raise FileNotFoundError(f"no metrics.json under {root}; did the sweep's jobs finish?")
    return [_job_row(p, root) for p in paths]


def _launched_jobs(root: Path) -> list[tuple[str, list[str]]] | None:
    """(job folder, overrides) of every job the sweep in root launches: root/jobs.yaml (pipeline.sweeper writes
    it), else root/multirun.yaml of Hydra's basic sweeper.

    None when root holds neither, or a multirun.yaml of another sweeper or without job folders named by number.
    """
    jobs = root / "jobs.yaml"  # what pipeline.sweeper launched (a figure's points included)
    if jobs.is_file():
        import yaml

        try:
            listed = yaml.safe_load(jobs.read_text())
        except yaml.YAMLError:
            listed = None
        if isinstance(listed, list):
            return [(str(number), [str(o) for o in job]) for number, job in enumerate(listed)]
    path = root / "multirun.yaml"
    if not path.is_file():
        return None
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    hydra_cfg = (OmegaConf.to_container(OmegaConf.load(path), resolve=False) or {}).get("hydra") or {}
    sweeper, sweep = hydra_cfg.get("sweeper") or {}, hydra_cfg.get("sweep") or {}
    if not str(sweeper.get("_target_", "")).endswith("BasicSweeper") or str(sweep.get("subdir", "")) != "${hydra.job.num}":
        return None
    params = [f"{k}={v}" for k, v in (sweeper.get("params") or {}).items()]
    overrides = [str(o) for o in (hydra_cfg.get("overrides") or {}).get("task") or []]
    try:
        batches = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(params + overrides), None)
    except Exception:  # noqa: BLE001 - a sweep syntax this reader does not know: fall back to the folders
        return None
    return [(str(number), job) for number, job in enumerate(job for batch in batches for job in batch)]


def missing_jobs(multirun_dir: str | os.PathLike) -> list[str]:
    """One line per job of the sweep without a metrics.json: its folder, its overrides and what is there.

    The sweep's jobs come from its multirun.yaml (so jobs that never started count too); without one,
    every job folder (one holding .hydra/) without a metrics.json counts.
    """
    root = Path(multirun_dir)
    launched = _launched_jobs(root)
    if launched is None:
        folders = sorted({p.parent.parent for p in root.rglob(".hydra/config.yaml") if ".submitit" not in p.parts})
        launched = [(str(f.relative_to(root)), []) for f in folders if f != root or not (root / "multirun.yaml").exists()]
    lines = []
    for folder, overrides in launched:
        job = root / folder
        if (job / "metrics.json").is_file():
            continue
        state = ("started, no metrics.json (still running, failed or killed)" if job.is_dir()
                 else "no job folder (not started, or refused)")
        what = " ".join(overrides) if overrides else ""
        lines.append(f"job {folder}{f' ({what})' if what else ''}: {state}")
    return lines


def write_csv(rows: list[dict[str, Any]], path: str | os.PathLike) -> Path:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)
    return path


def _series_key(row: dict[str, Any], varying: list[str]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in varying) or "all jobs"


def _shared(rows: list[dict[str, Any]], key: str) -> str:
    values = sorted({str(r.get(key)) for r in rows if r.get(key) not in (None, "")})
    return "/".join(values) if values else "-"


def plot(rows: list[dict[str, Any]], path: str | os.PathLike, *, note: str = "") -> Path:
    """report_figure(rows, note) saved at path."""
    return save_figure_atomic(report_figure(rows, note=note), path)


#: Panels per row of a report figure; more panels wrap into further rows.
MAX_COLUMNS = 4
#: Size of one panel in inches (the figure grows with the number of panels, never the panels shrink).
PANEL_SIZE = (4.2, 3.3)


def _is_bound_column(column: str) -> bool:
    return column.startswith("bound_") and confidence_of_column(column) is not None


def grid_shape(panels: int, max_columns: int = MAX_COLUMNS) -> tuple[int, int]:
    """(rows, columns) of a grid for `panels` panels: at most max_columns a row."""
    panels = max(1, int(panels))
    columns = min(panels, max_columns)
    return math.ceil(panels / columns), columns


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def report_figure(rows: list[dict[str, Any]], *, note: str = ""):
    """Successes vs epsilon: attack, prior baseline and the bound at each confidence, a panel per series.

    The panels (one per combination of the swept options other than epsilon) wrap into a grid of at
    most MAX_COLUMNS a row, each PANEL_SIZE inches; one legend for all panels sits under the grid, so
    no legend covers a point. Every line has markers, so a panel with one epsilon still shows its points;
    each panel's y label uses that panel's number of targets; the legend names the theorem behind the
    bound lines (each panel's title does when the panels differ, e.g. k = 1 and k = 3); a job without a
    privacy profile (not private) has no epsilon and no bound: its attack is drawn as a horizontal line
    marked "not private". The figure states delta, trials, metric, k and the comparator, and how to read
    a bound line. `note` (e.g. which jobs are missing) goes under the figure.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    from pipeline.game import BOUND_READING

    # k and comparator follow from the overrides (attack.k, bound.name), which name the panels.
    measured = {"job", "epsilon", "epsilon_at_delta", "delta", "n_targets", "trials", "attack_success_mean",
                "prior_success_mean", "k", "comparator", "private", "bound_theorem"}
    override_keys = {k for row in rows for k in row
                     if k not in measured and confidence_of_column(k) is None}
    varying = sorted(k for k in override_keys
                     if k not in _EPSILON_KEYS and len({str(r.get(k)) for r in rows}) > 1)
    series: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        series.setdefault(_series_key(row, varying), []).append(row)
    bound_columns = sorted({k for r in rows for k in r if _is_bound_column(k)}, key=confidence_of_column)
    theorems = sorted({str(r.get("bound_theorem")) for r in rows if r.get("private", True) and r.get("bound_theorem")})
    one_theorem = theorems[0] if len(theorems) == 1 else None
    same_n = len({r["n_targets"] for r in rows}) == 1
    same_k = len({str(r.get("k")) for r in rows}) == 1
    n_rows, n_cols = grid_shape(len(series))
    width, height = PANEL_SIZE
    chars = max(60, int(width * n_cols * 15))
    settings = (f"delta = {_shared(rows, 'delta')}, trials = {_shared(rows, 'trials')}, metric = {_shared(rows, 'metric')}, "
                f"k = {_shared(rows, 'k')}, bound = {_shared(rows, 'bound')}, comparator = {_shared(rows, 'comparator')}"
                + (f", bound theorem = {one_theorem}" if one_theorem else ""))
    header = _wrap(settings, chars)
    footer = _wrap(BOUND_READING, chars) + (f"\n{_wrap(note, chars)}" if note else "")
    header_in = 0.2 + 0.15 * (header.count("\n") + 1)
    legend_cols = 3 if width * n_cols >= 12 else 2
    legend_title = _wrap(f"bound lines: {one_theorem}" if one_theorem else
                         "bound lines: the theorem of each panel is in its title", int(width * n_cols * 14))
    legend_in = 0.3 + 0.17 * (math.ceil((3 + len(bound_columns)) / legend_cols) + legend_title.count("\n") + 1)
    footer_in = 0.15 + 0.13 * (footer.count("\n") + 1)
    fig_h = n_rows * height + header_in + legend_in + footer_in
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, fig_h), squeeze=False, sharey=same_n)
    flat = list(axes.ravel())
    handles: dict[str, Any] = {}
    for ax, (label, members) in zip(flat, series.items()):
        private = sorted((r for r in members if r.get("private", True) and r.get("epsilon") is not None),
                         key=lambda r: r["epsilon"])
        public = [r for r in members if r not in private]
        k = _shared(members, "k")
        if private:
            eps = [r["epsilon"] for r in private]
            lines = [ax.plot(eps, [r["attack_success_mean"] for r in private], "o-", label="attack (mean)")[0],
                     ax.plot(eps, [r["prior_success_mean"] for r in private], "s-",
                             label=(f"prior baseline z* (k={k}, mean)" if same_k else
                                    "prior baseline z* (the panel's k, mean)"))[0]]
            for column, style, marker in zip(bound_columns, (":", "--", "-.", (0, (1, 3))), ("v", "^", "D", "P")):
                c = f"{confidence_of_column(column):g}"
                lines.append(ax.plot(eps, [r.get(column, float("nan")) for r in private], linestyle=style, marker=marker,
                                     color="k", markersize=5,
                                     label=f"bound @ {c}")[0])
            for line in lines:
                handles.setdefault(line.get_label(), line)
            ax.set_xscale("log" if min(eps) > 0 and max(eps) / max(min(eps), 1e-12) > 8 else "linear")
            ax.set_xticks(eps, [f"{e:g}" for e in eps], minor=False)
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        for r in public:
            line = ax.axhline(r["attack_success_mean"], color="firebrick", linestyle="--",
                              label="attack (mean), not private: no epsilon, no bound")
            handles.setdefault(line.get_label(), line)
            ax.annotate("not private: no bound", (0.02, r["attack_success_mean"]), xycoords=("axes fraction", "data"),
                        fontsize=7, color="firebrick", va="bottom")
        if not private:
            ax.set_xticks([])
        ax.set_xlabel("epsilon" if private else "(not private: no epsilon)")
        ax.set_ylabel(f"targets attacked (of {_shared(members, 'n_targets')})")
        title = label
        panel_theorems = sorted({str(r.get("bound_theorem")) for r in private if r.get("bound_theorem")})
        if not one_theorem and panel_theorems:
            title += "; bound: " + "/".join(panel_theorems)
        ax.set_title(_wrap(title, int(width * 13)), fontsize=7.5)
        ax.grid(alpha=0.3)
    for ax in flat[len(series):]:
        ax.set_visible(False)
    fig.text(0.5, 1 - 0.1 / fig_h, header, fontsize=8, ha="center", va="top")
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=legend_cols, fontsize=7,
               frameon=False, bbox_to_anchor=(0.5, footer_in / fig_h), title=legend_title, title_fontsize=7)
    fig.text(0.01, 0.01, footer, fontsize=6.5, color="0.3", va="bottom")
    fig.tight_layout(rect=(0, (footer_in + legend_in) / fig_h, 1, 1 - header_in / fig_h))
    return fig


def format_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A plain fixed-width text table of the given columns."""
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return str(v)

    body = [[cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(b, widths)) for b in body]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.report", description=__doc__.splitlines()[0])
    parser.add_argument("multirun_dir", help="a sweep's folder, e.g. outputs/multirun/2025-01-01/12-00-00-000000-a1b2c3")
    parser.add_argument("--out", default=None, help="where report.csv and figures/report.png go (default: the sweep's folder)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="report the jobs that finished even if some have no metrics.json (they are listed)")
    args = parser.parse_args(argv)
    from pipeline import experiments

    root = Path(args.multirun_dir)
    if not root.is_dir():
        print(f"error: multirun directory {root} does not exist; pass the folder a -m sweep printed.", file=sys.stderr)
        return 2
    missing = missing_jobs(root)
    if missing:
        launched = _launched_jobs(root)
        total = f" of {len(launched)}" if launched is not None else ""
        print(f"{len(missing)}{total} jobs of {root} have no metrics.json:", file=sys.stderr)
        for line in missing:
            print(f"  {line}", file=sys.stderr)
        if not args.allow_missing:
            print("error: the sweep is incomplete; wait for its jobs or rerun them, or pass --allow-missing "
                  "to report the jobs that finished.", file=sys.stderr)
            return MISSING_JOBS
    note = f"{len(missing)} job(s) missing: " + "; ".join(missing) if missing else ""

    if experiments.has_experiment_jobs(root):
        # An experiment's sweep: its own table (the columns) and figure, under the sweep folder.
        table, figure, experiment_rows = experiments.write_report(root)
        print(format_table(experiment_rows, experiments.table_columns(experiment_rows)))
        print(f"\nwrote {table} and {figure}")
        if not all("boxes" in json.loads(p.read_text()) for p in _job_paths(root)):
            return 0  # analytic experiments have no games to aggregate
    try:
        rows = collect(root)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out or root)
    out.mkdir(parents=True, exist_ok=True)
    table = write_csv(rows, out / "report.csv")
    figure = plot(rows, out / "figures" / "report.png", note=note[:300])
    bounds = [k for k in rows[0] if _is_bound_column(k)]
    print(format_table(rows, ["job", "prior", "mechanism", "epsilon", "k", "bound", "bound_theorem",
                              "attack_success_mean", "prior_success_mean", *bounds]))
    print(f"\nwrote {table} and {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
