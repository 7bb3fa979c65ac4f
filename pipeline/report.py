"""`python -m pipeline.report <multirun dir>`: a sweep's metrics.json files -> report.csv and figures/report.png.

One row per job: the job's overrides, epsilon, the attack's and the prior baseline's mean successes
(the baseline with the attack's k and metric), the bound and the floor at each confidence. The printed table
(`report_table`, the quickstart's too) shows them in one column scheme, the theorem as a short id, with a legend
under it. The figure plots successes against epsilon, one panel per combination of the other swept options, and
states what the bound lines mean, the settings shared by the panels (mechanism, delta, n, trials, metric, k,
comparator) and the theorems behind the short ids of its panels.

The panels and the legend come from the sweep's configuration only: a panel per combination of the swept
config keys other than epsilon, a line per attack variant the game scored (metrics.json "attacks"), and the
jobs without a privacy guarantee (epsilon = inf, DP-SGD without clipping) as "not private" points at the
right end of the epsilon axis, without a bound.

A sweep whose jobs did not all write metrics.json (still running, failed, killed, never started) is
named job by job and the report exits 1 without writing anything, unless --allow-missing is given. What the
report cannot read is one sentence naming the folder or file and what to do, exit 2, never a traceback: a
folder that holds no sweep (e.g. outputs/runs), a sweep folder whose job folders are not the jobs its
jobs.yaml lists (two sweeps mixed in one folder; see pipeline.sweeper.check_sweep_folder), a metrics.json
that is not a job's metrics (cut off, not JSON, not an object, keys missing). With --allow-missing such a
metrics.json is skipped like a missing one, in one line naming its job folder.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from pipeline.io import (SWEEP_FILES, audit_cells, bound_column, confidence_key, confidence_of_column, exceed_column, floor_cells, floor_column,
                         save_figure_atomic)

__all__ = ["collect", "write_csv", "plot", "report_figure", "main", "missing_jobs", "MISSING_JOBS", "UNREADABLE",
           "ReportError", "read_metrics", "config_columns", "swept_columns", "variant_labels", "mixed_jobs",
           "check_folder", "RESULT_COLUMNS", "unreadable_jobs", "table_columns", "table_headers", "table_legend",
           "report_table", "format_table", "TABLE_HEADERS", "TABLE_WIDTH"]

#: Exit status when jobs of the sweep have no metrics.json (and --allow-missing was not given).
MISSING_JOBS = 1
#: Exit status when the folder or a file in it cannot be reported (ReportError: one sentence).
UNREADABLE = 2

#: The columns a row computes from the job's metrics.json (_job_row), besides the bound_<c> / exceed_<c> / floor_<c> columns
#: and each attack variant's <label>_success_mean / <label>_exceed_<c>. Every other column is a key of the job's
#: overrides (the boxes' options prior, mechanism, attack, metric, bound and trials included): the configuration.
RESULT_COLUMNS = frozenset({
    "job", "private", "epsilon", "epsilon_at_delta", "delta", "n_targets", "k", "comparator", "attack_success_mean",
    "prior_success_mean", "bound_theorem", "bound_summary", "attack_label", "variants", "audit_family", "audit_claimed"})


class ReportError(ValueError):
    """A folder or file the report cannot read; the message is one sentence naming it and what to do. For a job's
    metrics.json, `what` says in a few words what is wrong with it (for the line of a job skipped with
    --allow-missing)."""

    def __init__(self, message: str, what: str = "") -> None:
        super().__init__(message)
        self.what = what


def _redo(metrics_path: Path) -> str:
    """What to do about a job's unreadable metrics.json (the end of a ReportError's sentence)."""
    sweep = next((p for p in Path(metrics_path).parents if any((p / name).is_file() for name in SWEEP_FILES)), None)
    where = f"hydra.sweep.dir={sweep}" if sweep is not None else "hydra.sweep.dir=<its sweep folder>"
    return (f"remove that file, then run the sweep's command again with {where} to redo that job, or pass "
            f"--allow-missing to skip it like a missing job and report the other jobs.")


def read_metrics(path: str | os.PathLike) -> dict[str, Any]:
    """A job's metrics.json as a dict, or ReportError naming the file (cut off, not JSON, not a JSON object)."""
    path = Path(path)
    fix = _redo(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ReportError(f"{path} cannot be read ({why}); {fix}", f"cannot be read: {why}") from None
    try:
        metrics = json.loads(text)
    except json.JSONDecodeError as exc:
        what = "is empty" if not text.strip() else f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}"
        short = what + ("" if not text.strip() else ")")
        what += "" if not text.strip() else "; cut off while it was written, or edited?)"
        raise ReportError(f"{path} {what}: {fix}", short) from None
    if not isinstance(metrics, dict):
        kind = type(metrics).__name__ if metrics is not None else "null"
        raise ReportError(f"{path} holds a JSON {kind}, not a job's metrics (a JSON object): {fix}",
                          f"holds a JSON {kind}, not an object") from None
    return metrics

_EPSILON_KEYS = ("mechanism.epsilon", "mechanism.mu")


def _read_yaml(path: Path) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(path)) if path.is_file() else None


def _job_row(metrics_path: Path, root: Path, metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    """One row of the report: the job's overrides (its configuration) and what its metrics.json says (read here
    unless given); a metrics.json that is not a game job's is a ReportError naming the file."""
    metrics = read_metrics(metrics_path) if metrics is None else metrics
    try:
        return _row(metrics_path, root, metrics)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        what = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise ReportError(f"{metrics_path} is not a game job's metrics.json ({what}); {_redo(metrics_path)}",
                          f"is not a game job's metrics ({what})") from None


def _overrides(job: Path) -> list[str]:
    try:
        overrides = _read_yaml(job / ".hydra" / "overrides.yaml") or []
    except Exception:  # noqa: BLE001 - an unreadable overrides.yaml: the row has no configuration columns
        return []
    return [str(o) for o in overrides] if isinstance(overrides, list) else []


def _row(metrics_path: Path, root: Path, metrics: dict[str, Any]) -> dict[str, Any]:
    job = metrics_path.parent
    overrides = _overrides(job)
    try:
        config = _read_yaml(job / ".hydra" / "config.yaml") or {}
    except Exception:  # noqa: BLE001 - an unreadable config.yaml: epsilon comes from metrics.json
        config = {}
    mechanism_epsilon = (config.get("mechanism") or {}).get("epsilon")
    privacy = metrics.get("privacy", {})
    private = bool(privacy.get("private", True))
    theorem = metrics.get("bound_theorem")
    theorem = (theorem.get("theorem") if isinstance(theorem, dict) else theorem) or ""
    row: dict[str, Any] = {"job": str(job.relative_to(root)) if job != root else "."}
    # A deletion (~key, which the sweeper adds when a figure's point switches a box) is no value of the job's:
    # neither it nor the key='' before it (Hydra deletes only a set key) is a column.
    deleted = {str(o)[1:].partition("=")[0] for o in overrides if str(o).startswith("~")}
    for override in overrides:
        key, _, value = str(override).partition("=")
        if not key.startswith("~") and key.lstrip("+") not in deleted:
            row[key.lstrip("+")] = value
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
        count = bound.get(confidence_key(confidence))
        row[bound_column(confidence)] = (count if not isinstance(count, list) else float(np.mean(count))) if private else None
    # A per-trial law (prior=baynet) bounds each trial on its own records: the bound columns are means over trials.
    row["bound_summary"] = ("mean of one count per trial" if per_trial else "one count") if private else "no bound (not private)"
    for confidence in confidences:
        row[exceed_column(confidence)] = exceed.get(confidence_key(confidence)) if private else None
    # The worst case's lower end (a real mechanism's count, THEORY.md section 11; a mean over trials for a per-trial
    # law), empty where it is not built (metrics.json worst_case_floor.reason says why) or the run is not private.
    row.update(floor_cells(metrics, confidences, private))
    # What the attack's successes refute (metrics.json audit): the median trial's audit and the share of trials
    # refuting the mechanism's own claimed parameter, per confidence.
    row.update(audit_cells(metrics, confidences, private))
    # Every variant the game scored on the same releases (metrics.json "attacks"): its success and exceedance.
    attacks = metrics.get("attacks") or {}
    row["attack_label"] = metrics.get("attack_label", "")
    row["variants"] = ",".join(str(label) for label in list(attacks)[1:])
    for label, attack in list(attacks.items())[1:]:
        row[f"{label}_success_mean"] = attack.get("success_mean")
        for confidence in confidences:
            row[f"{label}_{exceed_column(confidence)}"] = ((attack.get("exceed") or {}).get(confidence_key(confidence))
                                                           if private else None)
    return row


def _job_paths(root: Path) -> list[Path]:
    # job folders in number order (2 before 10); a name that is not a number after the numbers
    return sorted((p for p in root.rglob("metrics.json") if ".submitit" not in p.relative_to(root).parts),
                  key=lambda p: [(0, int(s), "") if s.isdigit() else (1, 0, s) for s in p.parent.relative_to(root).parts])




def _sweep_folders(root: Path) -> list[Path]:
    """The sweep folders at or under root: those holding a jobs.yaml or a multirun.yaml."""
    found = {p.parent for name in SWEEP_FILES for p in root.rglob(name) if ".submitit" not in p.relative_to(root).parts}
    return sorted(found)


def check_folder(multirun_dir: str | os.PathLike) -> None:
    """ReportError unless the folder holds sweeps (a -m sweep's folder, or a folder holding several) whose job
    folders are the jobs each sweep's jobs.yaml lists, and every metrics.json under it is a job of one of them."""
    root = Path(multirun_dir)
    sweeps = _sweep_folders(root)
    paths = _job_paths(root)
    if not sweeps:
        if not paths:
            raise ReportError(f"no metrics.json under {root}: pass the folder a -m sweep printed (sweep folder: ...) "
                              f"once its jobs have finished.")
        what = ("is the folder of a single run (its metrics.json and figures/ are its report)"
                if (root / "metrics.json").is_file() else
                f"holds {len(paths)} metrics.json of single runs, e.g. {paths[0].relative_to(root)}, and no sweep")
        raise ReportError(f"{root} {what}: it has no jobs.yaml or multirun.yaml, which every -m sweep writes into its "
                          f"folder; pass the folder a -m sweep printed (sweep folder: outputs/multirun/<date>/<time>-"
                          f"<suffix>), or a folder that holds sweeps only.")
    outside = [p for p in paths if not any(s == p.parent or s in p.parents for s in sweeps)]
    if outside:
        raise ReportError(f"{outside[0]} is not a job of a sweep under {root} ({len(outside)} such metrics.json: single "
                          f"runs beside the sweeps); pass a sweep's folder, or a folder that holds sweeps only.")
    for sweep in sweeps:
        mixed = mixed_jobs(sweep)
        if mixed:
            raise ReportError(
                f"{sweep} mixes two sweeps: {mixed[0]}" + (f" ({len(mixed)} job folders differ from its jobs.yaml)"
                                                             if len(mixed) > 1 else "")
                + "; a sweep folder holds one sweep, so rerun the sweep into a new folder (a new hydra.sweep.dir, or "
                  "its default) and report that one.")


def mixed_jobs(sweep_dir: str | os.PathLike) -> list[str]:
    """One line per job folder of a sweep folder that is not the job its jobs.yaml (else multirun.yaml) lists
    under that number: a job of another sweep run into the same folder. [] when they match, or when the folder
    lists no jobs."""
    root = Path(sweep_dir)
    launched = _launched_jobs(root)
    if launched is None:
        return []
    listed = dict(launched)
    lines = []
    from pipeline.sweeper import job_folders

    for folder in job_folders(root):
        number = str(folder.relative_to(root))
        if not number.isdigit() or not (folder / ".hydra" / "overrides.yaml").is_file():
            continue  # not named by its job number (another hydra.sweep.subdir), or no record of what ran there
        ran = _overrides(folder)
        if number not in listed:
            lines.append(f"job folder {number} ({' '.join(ran) or 'the defaults'}) is not a job of its jobs.yaml "
                         f"({len(listed)} jobs)")
        elif ran != listed[number]:
            lines.append(f"job {number} ran {' '.join(ran) or 'the defaults'}, but its jobs.yaml lists "
                         f"{' '.join(listed[number]) or 'the defaults'} for job {number}")
    return lines


def collect(multirun_dir: str | os.PathLike, *, skip: Iterable[Path] = ()) -> list[dict[str, Any]]:
    """One row per job folder under multirun_dir that holds a metrics.json (jobs that failed have none), less the
    metrics.json in `skip` (unreadable ones, reported as skipped: `unreadable_jobs`)."""
    root = Path(multirun_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"multirun directory {root} does not exist; pass the folder a -m sweep printed.")
    skip = {Path(p) for p in skip}
    paths = [p for p in _job_paths(root) if p not in skip]
    if not paths:
        raise FileNotFoundError(f"no {'readable ' if skip else ''}metrics.json under {root}; did the sweep's jobs "
                                f"finish?")
    return [_job_row(p, root) for p in paths]


def unreadable_jobs(multirun_dir: str | os.PathLike) -> dict[Path, ReportError]:
    """{metrics.json: why} for every job under the folder whose metrics.json cannot be read or is not a job's (an
    experiment task's metrics need no game keys)."""
    root = Path(multirun_dir)
    found = {}
    for path in _job_paths(root):
        try:
            metrics = read_metrics(path)
            if "boxes" in metrics or "experiment" not in metrics:  # a game job's: the report reads its keys
                _job_row(path, root, metrics)
        except ReportError as exc:
            found[path] = exc
    return found


def variant_labels(rows: list[dict[str, Any]]) -> list[str]:
    """The attack variants scored beside each job's attack (the rows' `variants`), in the order they appear."""
    labels: list[str] = []
    for row in rows:
        labels.extend(v for v in str(row.get("variants") or "").split(",") if v and v not in labels)
    return labels


def _is_result_column(column: str, variants: list[str]) -> bool:
    if column in RESULT_COLUMNS or confidence_of_column(column) is not None:
        return True
    for label in variants:
        rest = column[len(label) + 1:] if column.startswith(f"{label}_") else None
        if rest is not None and (rest == "success_mean" or confidence_of_column(rest) is not None):
            return True
    return False


def config_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The configuration columns of the rows (the jobs' override keys and the boxes' options), in column order."""
    variants = variant_labels(rows)
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns and not _is_result_column(k, variants))
    return columns


def swept_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The configuration columns whose value differs between the rows: what the sweep swept."""
    return [k for k in config_columns(rows) if len({str(r.get(k)) for r in rows}) > 1]


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
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    from pipeline.sweeper import combinations

    hydra_cfg = (OmegaConf.to_container(OmegaConf.load(path), resolve=False) or {}).get("hydra") or {}
    sweeper, sweep = hydra_cfg.get("sweeper") or {}, hydra_cfg.get("sweep") or {}
    if not str(sweeper.get("_target_", "")).endswith("BasicSweeper") or str(sweep.get("subdir", "")) != "${hydra.job.num}":
        return None
    params = [f"{k}={v}" for k, v in (sweeper.get("params") or {}).items()]
    overrides = [str(o) for o in (hydra_cfg.get("overrides") or {}).get("task") or []]
    try:
        jobs = combinations(OverridesParser.create().parse_overrides(params + overrides))  # the basic sweeper's order
    except Exception:  # noqa: BLE001 - a sweep syntax this reader does not know: fall back to the folders
        return None
    return [(str(number), job) for number, job in enumerate(jobs)]


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
    return ", ".join(f"{k}={row.get(k, '-')}" for k in varying) or "all jobs"


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


def _is_private(row: dict[str, Any]) -> bool:
    return bool(row.get("private", True)) and row.get("epsilon") is not None


def _attack_label(rows: list[dict[str, Any]]) -> str:
    labels = sorted({str(r.get("attack_label") or "") for r in rows} - {"", "attack"})
    return f"attack: {'/'.join(labels)} (mean)" if labels else "attack (mean)"


#: How the figure draws the attack, each variant and the prior baseline: (color, marker), in this order.
_SERIES_STYLES = (("C0", "o"), ("C2", "X"), ("C4", "P"), ("C5", "*"), ("C6", "h"), ("C8", "d"), ("C9", "<"))
_NOT_PRIVATE = "not private: no epsilon, no bound"
#: (line style, marker) of each confidence, lowest first: the bound lines (black) and the audit lines (_AUDIT_COLOR).
_CONFIDENCE_STYLES = ((":", "v"), ("--", "^"), ("-.", "D"), ((0, (1, 3)), "P"))
_AUDIT_COLOR = "C3"
#: An audit panel's scale: logarithmic where the claimed parameters span more than this ratio.
_AUDIT_LOG_RATIO = 30.0
#: The parameter's symbol on the figure (report column audit_family: mu, eps or noise_multiplier).
_AUDIT_SYMBOLS = {"noise_multiplier": "sigma"}
_AUDIT_EDGE = "audit refutes nothing: drawn on the panel's dotted edge line"
#: How to read an audit panel, under the figure where it has one.
AUDIT_READING = ("\"what the attack proves\": x the mechanism's claimed parameter, y the parameter that the median "
                 "trial's successes refute at confidence c (mu, eps: every value <= y, 0 where none; the noise "
                 "multiplier sigma: every value >= y, inf where none). A point above the diagonal (below it for sigma) "
                 "refutes the claim, which a correct mechanism's trials do at confidence c in at most a 1 - c share.")


def _audit_symbol(family: Any) -> str:
    return _AUDIT_SYMBOLS.get(str(family), str(family))


def _audit_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The audit_<c> columns (by confidence) that some audited row fills."""
    return sorted({k for r in rows if _is_audited(r) for k in r if k.startswith("audit_")
                   and confidence_of_column(k) is not None and not math.isnan(_number(r.get(k)))},
                  key=confidence_of_column)


def _is_audited(row: dict[str, Any]) -> bool:
    """A private run whose audit columns are filled (a family fits its profile): it has an audit panel."""
    return (_is_private(row) and row.get("audit_family") not in (None, "")
            and math.isfinite(_number(row.get("audit_claimed"))))


def _audit_claim_label(loss_grows: bool) -> str:
    return ("the claim (audit = claimed): a point above it refutes the claimed mu or eps" if loss_grows else
            "the claim (audit = claimed): a point below it refutes the claimed sigma")


def _audit_plan(rows: list[dict[str, Any]], columns: list[str]) -> dict[str, Any]:
    """An audit panel's rows (by claimed parameter), values per column, scale and limits. A value that refutes
    nothing (0 for mu and eps, inf for the noise multiplier) is `none_y`: 0 on a linear axis for mu and eps (its
    value), else the edge of the panel (`edge`: a dotted line marks it)."""
    rows = sorted(rows, key=lambda r: _number(r.get("audit_claimed")))
    loss_grows = str(rows[0].get("audit_family")) != "noise_multiplier"
    claimed = np.array([_number(r.get("audit_claimed")) for r in rows])
    values = {c: np.array([_number(r.get(c)) for r in rows]) for c in columns}
    nothing = {c: (v == 0.0) if loss_grows else np.isinf(v) for c, v in values.items()}
    finite = np.concatenate([claimed, *(v[np.isfinite(v) & (v > 0)] for v in values.values())])
    log = bool(claimed.min() > 0 and claimed.max() / claimed.min() > _AUDIT_LOG_RATIO)
    if log:
        low, high = finite.min() / 1.6, finite.max() * 1.6
        limits = (low / 1.15, high * 1.15)
        none_y = low if loss_grows else high
    else:
        high = 1.1 * finite.max() if finite.max() > 0 else 1.0
        limits = (-0.04 * high, 1.04 * high)
        none_y = 0.0 if loss_grows else high
        low = 0.0
    edge = (log or not loss_grows) and any(n.any() for n in nothing.values())
    return {"rows": rows, "loss_grows": loss_grows, "claimed": claimed, "values": values, "nothing": nothing,
            "log": log, "diagonal": (low, high), "limits": limits, "none_y": none_y, "edge": edge}


def _draw_audit(ax, plan: dict[str, Any], styles: dict[float, tuple], title: str, handles: dict[str, Any]) -> None:
    """An audit panel: per confidence the median trial's audit (report column audit_<c>) against the claimed
    parameter, in the bound's style at that confidence, and the diagonal (the claim)."""
    x = plan["claimed"]
    low, high = plan["diagonal"]
    line = ax.plot([low, high], [low, high], color="0.45", linewidth=1.0, zorder=1,
                   label=_audit_claim_label(plan["loss_grows"]))[0]
    handles.setdefault(line.get_label(), line)
    if plan["edge"]:
        line = ax.axhline(plan["none_y"], color="0.5", linestyle=(0, (2, 2)), linewidth=0.8, zorder=0.5,
                          label=_AUDIT_EDGE)
        handles.setdefault(_AUDIT_EDGE, line)
    for column, values in plan["values"].items():
        c = confidence_of_column(column)
        style, marker = styles[c]
        nothing = plan["nothing"][column]
        drawn = np.where(nothing & plan["edge"], np.nan, values)
        line = ax.plot(x, drawn, linestyle=style, marker=marker, color=_AUDIT_COLOR, markersize=5,
                       label=f"audit @ {c:g} (median trial)")[0]
        handles.setdefault(line.get_label(), line)
        if plan["edge"] and nothing.any():  # refutes nothing: a point on the edge line, not joined to the others
            ax.plot(x[nothing], [plan["none_y"]] * int(nothing.sum()), linestyle="none", marker=marker,
                    color=_AUDIT_COLOR, markersize=5, label=f"_nothing refuted @ {c:g}")
    scale = "log" if plan["log"] else "linear"
    ax.set_xscale(scale)
    ax.set_yscale(scale)
    ax.set_xlim(*plan["limits"])
    ax.set_ylim(*plan["limits"])
    symbol = _audit_symbol(plan["rows"][0].get("audit_family"))
    ax.set_xlabel(f"claimed {'noise multiplier ' if symbol == 'sigma' else ''}{symbol}")
    none = "0" if plan["loss_grows"] else "inf"
    ax.set_ylabel(f"audit (median trial): refutes\nevery {symbol} {'<=' if plan['loss_grows'] else '>='} y "
                  f"({none}: none)")
    ax.set_title(title, fontsize=7.5)
    ax.grid(alpha=0.3)


def report_figure(rows: list[dict[str, Any]], *, note: str = ""):
    """Successes vs epsilon: attack, its variants, prior baseline and the bound at each confidence, a panel per
    combination of the swept config keys; shaded, the bracket at the highest confidence, from the floor (a real
    mechanism's count, report column floor_<c>) up to the bound, where the jobs have a floor.

    The panels (one per combination of the swept configuration keys other than epsilon: `swept_columns`,
    never a result column) wrap into a grid of at most MAX_COLUMNS a row, each PANEL_SIZE inches; one legend
    for all panels sits under the grid, so no legend covers a point. Every line has markers, so a panel with
    one epsilon still shows its points; the attack and every variant it was scored beside (metrics.json
    "attacks": RAP's plain loss, ...) are lines of their own; each panel's y label uses that panel's number of
    targets; the legend names the theorem behind the bound lines (each panel's title does when the panels
    differ, e.g. k = 1 and k = 3). A job without a privacy guarantee (epsilon = inf, DP-SGD without clipping)
    has no epsilon and no bound: its attack, variants and prior baseline are points at the right end of the
    epsilon axis, in a shaded band marked "not private". The figure states delta, trials, metric, k and the
    comparator, and how to read a bound line. `note` (e.g. which jobs are missing) goes under the figure.

    Beside a panel whose private jobs have audit columns (report columns audit_family, audit_claimed, audit_<c>), a
    panel "what the attack proves" (one per audited family): the median trial's audit at each confidence (in the
    bound's line style and marker at that confidence) against the claimed parameter, and the diagonal (the claim);
    what refutes nothing is drawn at 0, or where the axis cannot show it (inf for the noise multiplier, 0 on a log
    axis) on a dotted line at the panel's edge (_audit_plan). AUDIT_READING goes under the figure. Without audit
    columns the figure has no such panel.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    from pipeline.labels import BOUND_READING, short_theorem, theorem_legend

    facets = [k for k in swept_columns(rows) if k not in _EPSILON_KEYS]
    variants = variant_labels(rows)
    series: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        series.setdefault(_series_key(row, facets), []).append(row)
    bound_columns = sorted({k for r in rows for k in r if _is_bound_column(k)}, key=confidence_of_column)
    theorems = sorted({str(r.get("bound_theorem")) for r in rows if _is_private(r) and r.get("bound_theorem")})
    one_theorem = theorems[0] if len(theorems) == 1 else None
    same_n = len({r["n_targets"] for r in rows}) == 1
    same_k = len({str(r.get("k")) for r in rows}) == 1
    any_public = any(not _is_private(r) for r in rows)
    # each facet's panel, and beside it its "what the attack proves" panel (one per audited family) where its private
    # jobs have audit columns; with any audit panel, a facet without one keeps an empty slot, so pairs stay together
    audit_columns = _audit_columns(rows)
    audited: dict[str, dict[str, list[dict[str, Any]]]] = {label: {} for label in series}
    for label, members in series.items():
        for r in members:
            if audit_columns and _is_audited(r):
                audited[label].setdefault(str(r["audit_family"]), []).append(r)
    any_audit = any(audited.values())
    panels: list[tuple[str, str, Any]] = []  # (kind, facet label or title, the facet's rows or the audit plan)
    for label, members in series.items():
        panels.append(("bound", label, members))
        for family, members_of in audited[label].items():
            title = f"what the attack proves: {label}"
            title += f" ({_audit_symbol(family)})" if len(audited[label]) > 1 else ""
            panels.append(("audit", title, _audit_plan(members_of, audit_columns)))
        if any_audit and not audited[label]:
            panels.append(("empty", label, None))
    plans = [plan for kind, _, plan in panels if kind == "audit"]
    n_rows, n_cols = grid_shape(len(panels))
    width, height = PANEL_SIZE
    chars = max(60, int(width * n_cols * 15))
    settings = (f"mechanism = {_shared(rows, 'mechanism')}, delta = {_shared(rows, 'delta')}, n = "
                f"{_shared(rows, 'n_targets')} targets, trials = {_shared(rows, 'trials')}, "
                f"metric = {_shared(rows, 'metric')}, "
                f"k = {_shared(rows, 'k')}, bound = {_shared(rows, 'bound')}, comparator = {_shared(rows, 'comparator')}"
                + (f", bound theorem = {short_theorem(one_theorem)}" if one_theorem else ""))
    header = _wrap(settings, chars)
    # the theorems as short ids (header, panel titles, legend), expanded once under the figure
    footer = "\n".join(_wrap(text, chars) for text in (theorem_legend(theorems), BOUND_READING,
                                                     AUDIT_READING if plans else "", note) if text)
    header_in = 0.2 + 0.15 * (header.count("\n") + 1)
    legend_cols = 3 if width * n_cols >= 12 else 2 if width * n_cols >= 8 else 1
    legend_title = _wrap(f"bound lines: {short_theorem(one_theorem)}" if one_theorem else
                         "bound lines: the theorem (short id) of each panel is in its title; the ids are expanded "
                         "under the figure", int(width * n_cols * 14))
    # the bracket at the highest confidence: from the floor (a real mechanism's count) up to the bound, where both exist
    top = bound_columns[-1] if bound_columns else None
    floor_top = floor_column(confidence_of_column(top)) if top else None
    band_label = f"worst case @ {confidence_of_column(top):g} lies here (floor to bound)" if top else None
    any_floor = bool(top) and any(not math.isnan(_number(r.get(floor_top))) for r in rows if _is_private(r))
    entries = 2 + len(variants) + len(bound_columns) + int(any_public) + int(any_floor)
    claims = sorted({_audit_claim_label(plan["loss_grows"]) for plan in plans})
    entries += (len(audit_columns) + len(claims) + any(plan["edge"] for plan in plans)) if plans else 0
    legend_in = 0.3 + 0.17 * (math.ceil(entries / legend_cols) + legend_title.count("\n") + 1)
    footer_in = 0.15 + 0.13 * (footer.count("\n") + 1)
    fig_h = n_rows * height + header_in + legend_in + footer_in
    # the success panels share their y axis where n is the same; an audit panel has its own axes
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, fig_h), squeeze=False,
                             sharey=same_n and not plans)
    flat = list(axes.ravel())
    bound_axes = [ax for ax, (kind, *_) in zip(flat, panels) if kind == "bound"]
    if plans and same_n:
        for ax in bound_axes[1:]:
            ax.sharey(bound_axes[0])
    handles: dict[str, Any] = {}
    attack_label = _attack_label(rows)
    prior_label = f"prior baseline z* (k={_shared(rows, 'k')}, mean)" if same_k else "prior baseline z* (the panel's k, mean)"
    # (label, column, color, marker) of every success line: the attack, each variant, the prior baseline
    lines_of = [(attack_label, "attack_success_mean", *_SERIES_STYLES[0])]
    for i, label in enumerate(variants):
        color, marker = _SERIES_STYLES[1 + i % (len(_SERIES_STYLES) - 1)]
        lines_of.append((f"attack variant: {label} (mean)", f"{label}_success_mean", color, marker))
    lines_of.append((prior_label, "prior_success_mean", "C1", "s"))
    for ax, (label, members) in zip(bound_axes, series.items()):
        private = sorted((r for r in members if _is_private(r)), key=lambda r: r["epsilon"])
        public = [r for r in members if not _is_private(r)]
        eps = [float(r["epsilon"]) for r in private]
        log_x = bool(eps) and min(eps) > 0 and max(eps) / max(min(eps), 1e-12) > 8
        # where the not-private jobs go: right of the largest epsilon, a step further on the panel's scale (the x
        # of their points, the band marking them, where the axis ends on either side)
        if not eps:
            public_x, band, limits = 1.0, (0.6, 1.4), (0.5, 1.5)
        elif log_x:
            step = max((max(eps) / min(eps)) ** 0.25, 2.0)
            public_x = max(eps) * step
            band, limits = (public_x / step**0.4, public_x * step**0.4), (min(eps) / step**0.5, public_x * step**0.5)
        else:
            step = max((max(eps) - min(eps)) * 0.3, max(abs(max(eps)), 1.0) * 0.6)
            public_x = max(eps) + step
            band, limits = (public_x - 0.4 * step, public_x + 0.4 * step), (min(eps) - 0.5 * step, public_x + 0.5 * step)
        # the not-private points of the series side by side in their band (equal values stay apart)
        shifts = [(i - (len(lines_of) - 1) / 2) * 0.6 / len(lines_of) for i in range(len(lines_of))]
        dodged = [public_x * (band[1] / public_x) ** shift if log_x else public_x + shift * (band[1] - public_x)
                  for shift in shifts]
        for i, (name, column, color, marker) in enumerate(lines_of):
            if private:
                values = [_number(r.get(column)) for r in private]
                if any(not math.isnan(v) for v in values):
                    handles.setdefault(name, ax.plot(eps, values, "-", marker=marker, color=color, label=name)[0])
            if public:
                values = [_number(r.get(column)) for r in public]
                if any(not math.isnan(v) for v in values):
                    line = ax.plot([dodged[i]] * len(public), values, linestyle="none", marker=marker, color=color,
                                   label=name)[0]
                    handles.setdefault(name, line)
        if private:
            for column, (style, marker) in zip(bound_columns, _CONFIDENCE_STYLES):
                c = f"{confidence_of_column(column):g}"
                line = ax.plot(eps, [_number(r.get(column)) for r in private], linestyle=style, marker=marker,
                               color="k", markersize=5, label=f"bound @ {c}")[0]
                handles.setdefault(line.get_label(), line)
            lows = np.array([_number(r.get(floor_top)) for r in private]) if any_floor else np.array([])
            if lows.size and not np.all(np.isnan(lows)):
                highs = np.array([_number(r.get(top)) for r in private])
                patch = ax.fill_between(eps, lows, highs, where=~(np.isnan(lows) | np.isnan(highs)), color="0.6",
                                        alpha=0.25, linewidth=0, zorder=0, label=band_label)
                handles.setdefault(band_label, patch)
        if public:
            span = ax.axvspan(*band, color="0.88", zorder=0, label=_NOT_PRIVATE)
            handles.setdefault(_NOT_PRIVATE, span)
        ax.set_xscale("log" if log_x else "linear")
        ticks = eps + ([public_x] if public else [])
        ax.set_xticks(ticks, [f"{e:g}" for e in eps] + (["not\nprivate"] if public else []), minor=False)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        if public:
            ax.set_xlim(*limits)
        ax.set_xlabel("epsilon" if private else "(not private: no epsilon)")
        ax.set_ylabel(f"targets attacked (of {_shared(members, 'n_targets')})")
        title = label
        panel_theorems = sorted({str(r.get("bound_theorem")) for r in private if r.get("bound_theorem")})
        if not one_theorem and panel_theorems:
            title += "; bound: " + ", ".join(dict.fromkeys(short_theorem(t) for t in panel_theorems))
        ax.set_title(_wrap(title, int(width * 13)), fontsize=7.5)
        ax.grid(alpha=0.3)
    # an audit line at confidence c in the bound line's style at c (a confidence without a bound line: the next style)
    styles = {confidence_of_column(c): style for c, style in zip(bound_columns, _CONFIDENCE_STYLES)}
    for column in audit_columns:
        styles.setdefault(confidence_of_column(column), _CONFIDENCE_STYLES[len(styles) % len(_CONFIDENCE_STYLES)])
    for ax, (kind, title, plan) in zip(flat, panels):
        if kind == "audit":
            _draw_audit(ax, plan, styles, _wrap(title, int(width * 13)), handles)
    for ax, (kind, *_) in zip(flat, panels + [("empty", "", None)] * (len(flat) - len(panels))):
        if kind == "empty":
            ax.set_visible(False)
    fig.text(0.5, 1 - 0.1 / fig_h, header, fontsize=8, ha="center", va="top")
    # the legend in the order of the lines: attack, variants, prior baseline, bounds, the bracket, the not-private band
    # and the audit panels' lines: the audits, the claim, the edge line of what refutes nothing
    order = ([name for name, *_ in lines_of] + [f"bound @ {confidence_of_column(c):g}" for c in bound_columns]
             + [band_label, _NOT_PRIVATE]
             + [f"audit @ {confidence_of_column(c):g} (median trial)" for c in audit_columns] + claims + [_AUDIT_EDGE])
    handles = {name: handles[name] for name in sorted(handles, key=lambda n: order.index(n) if n in order else len(order))}
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=legend_cols, fontsize=7,
               frameon=False, bbox_to_anchor=(0.5, footer_in / fig_h), title=legend_title, title_fontsize=7)
    fig.text(0.01, 0.01, footer, fontsize=6.5, color="0.3", va="bottom")
    fig.tight_layout(rect=(0, (footer_in + legend_in) / fig_h, 1, 1 - header_in / fig_h))
    return fig


def _number(value: Any) -> float:
    """A cell as a float for plotting (nan for an empty or non-numeric cell)."""
    try:
        return float(value) if value not in (None, "") else math.nan
    except (TypeError, ValueError):
        return math.nan


def format_table(rows: list[dict[str, Any]], columns: list[str], headers: dict[str, str] | None = None) -> str:
    """A plain fixed-width text table of the given columns, headed by `headers` (default: the column's name).
    Adjacent columns of one kind at several confidences (bound_0.05, bound_0.5, ...) share a header line above
    theirs, 'bound_<c>', over the confidences."""
    headers = headers or {}

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return str(v)

    def group(column: str) -> str:
        c = confidence_of_column(column)
        return f"{column[:-len(f'{c:g}')]}<c>" if c is not None and column.endswith(f"{c:g}") else ""

    groups = [group(c) for c in columns]
    shared = {g for g in groups if g and groups.count(g) > 1}
    names = [f"{confidence_of_column(c):g}" if g in shared else headers.get(c, c) for c, g in zip(columns, groups)]
    body = [[cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(n), *(len(b[i]) for b in body)) for i, n in enumerate(names)]
    for g in shared:  # a group's header fits over its columns: widen its last column if not
        members = [i for i, x in enumerate(groups) if x == g]
        span = sum(widths[i] for i in members) + 2 * (len(members) - 1)
        widths[members[-1]] += max(0, len(g) - span)
    lines = ["  ".join(c.rjust(w) for c, w in zip(names, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(b, widths)) for b in body]
    if shared:
        top, i = [], 0
        while i < len(columns):
            j = i
            while groups[i] in shared and j + 1 < len(columns) and groups[j + 1] == groups[i]:
                j += 1
            span = sum(widths[i:j + 1]) + 2 * (j - i)
            top.append(groups[i].center(span) if groups[i] in shared else " " * span)
            i = j + 1
        lines.insert(0, "  ".join(top).rstrip())
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
        what = "is a file" if root.exists() else "does not exist"
        print(f"error: multirun directory {root} {what}; pass the folder a -m sweep printed.", file=sys.stderr)
        return UNREADABLE
    try:
        check_folder(root)  # a folder of sweeps, one sweep per sweep folder
        unreadable = unreadable_jobs(root)  # each metrics.json a job's metrics (a JSON object with a game's keys)
        if unreadable and not args.allow_missing:
            raise next(iter(unreadable.values()))
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return UNREADABLE
    # --allow-missing: a job whose metrics.json cannot be read is skipped like a job without one, in one line
    skipped = [f"job {path.parent.relative_to(root)}: its metrics.json is unreadable ({exc.what}); skipped"
               for path, exc in unreadable.items()]
    for line in skipped:
        print(line, file=sys.stderr)
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
    gone = missing + skipped
    note = f"{len(gone)} job(s) missing or unreadable: " + "; ".join(gone) if gone else ""

    if experiments.has_experiment_jobs(root):
        # An experiment's sweep: its own table (the columns) and figure, under the sweep folder.
        try:
            table, figure, experiment_rows = experiments.write_report(root)
        except (ValueError, FileNotFoundError) as exc:  # e.g. jobs of several experiments: one sentence of its own
            print(f"error: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
            return UNREADABLE
        print(format_table(experiment_rows, experiments.table_columns(experiment_rows)))
        print(f"\nwrote {table} and {figure}")
        if not all("boxes" in read_metrics(p) for p in _job_paths(root) if p not in unreadable):
            return 0  # analytic experiments have no games to aggregate
    try:
        rows = collect(root, skip=unreadable)
    except (FileNotFoundError, ReportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return UNREADABLE
    out = Path(args.out or root)
    out.mkdir(parents=True, exist_ok=True)
    table = write_csv(rows, out / "report.csv")
    figure = plot(rows, out / "figures" / "report.png", note=note[:300])
    print(report_table(rows))
    print(f"\nwrote {table} and {figure}")
    return 0


#: The printed headers of report.csv's columns in the quickstart's and `pipeline.report`'s table (`table_columns`);
#: a variant's <label>_success_mean is '<label> mean', bound_<c> and floor_<c> sit under one header per kind.
TABLE_HEADERS = {"epsilon": "eps", "n_targets": "n", "theorem": "thm", "attack_success_mean": "attack mean",
                 "prior_success_mean": "prior-only mean"}
#: The width the printed table and its legend keep to.
TABLE_WIDTH = 120
#: Settings the legend states when every row shares them (a column when they differ and the sweep swept them).
_SHARED_SETTINGS = ("mechanism", "attack", "k", "metric", "bound", "comparator", "trials")


def table_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The printed table's columns (report.csv's names), one scheme for the quickstart and `pipeline.report`: what
    the sweep swept (besides what has its own column), the prior, epsilon, delta, n, the bound's theorem as a short
    id (`theorem`, expanded under the table), the attack's, each variant's and the prior-only guess's mean
    successes, the bound and the floor at each confidence, and the job's folder."""
    fixed = ["prior", "epsilon", "delta", "n_targets", "theorem"]
    own = {*_EPSILON_KEYS, "mechanism.delta", "prior.n_targets", *fixed}  # keys a fixed column shows
    swept = [k for k in swept_columns(rows) if k not in own]
    variants = [f"{label}_success_mean" for label in variant_labels(rows)]

    def at_each_confidence(prefix: str) -> list[str]:
        return sorted({k for r in rows for k in r if k.startswith(prefix) and confidence_of_column(k) is not None},
                      key=confidence_of_column)

    return [*swept, *fixed, "attack_success_mean", *variants, "prior_success_mean", *at_each_confidence("bound_"),
            *at_each_confidence("floor_"), "job"]


def _table_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as the printed table shows them: the theorem as its short id, a job without a privacy guarantee
    says so in its epsilon cell, and an empty cell is '-'."""
    from pipeline.labels import short_theorem

    shown = []
    for original in rows:
        row = {k: ("-" if v is None or v == "" else v) for k, v in original.items()}
        private = _is_private(original)
        row["theorem"] = short_theorem(original.get("bound_theorem")) if private else "-"
        if not private:
            row["epsilon"] = "not private"
        shown.append(row)
    return shown


def table_headers(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The printed headers of `table_columns`: TABLE_HEADERS, and '<label> mean' for each attack variant's mean."""
    return {**TABLE_HEADERS, **{f"{label}_success_mean": f"{label} mean" for label in variant_labels(rows)}}


def table_legend(rows: list[dict[str, Any]], columns: list[str] | None = None, width: int = TABLE_WIDTH) -> str:
    """The lines under the printed table: what the theorem ids, the mean columns and the bound and floor columns
    are (with report.csv's name of each), and the settings every row shares that no column shows."""
    import textwrap

    from pipeline.labels import theorem_legend

    columns = table_columns(rows) if columns is None else columns
    first = next((r for r in rows if _is_private(r)), rows[0])
    top = max((c for c in (confidence_of_column(k) for k in first if _is_bound_column(k))), default=None)
    example = _number(first.get(bound_column(top))) if top is not None else math.nan
    attack = _shared(rows, "attack_label") if any(r.get("attack_label") for r in rows) else _shared(rows, "attack")
    shared = [(key, TABLE_HEADERS.get(key, key)) for key in ("prior", "delta", "n_targets", *_SHARED_SETTINGS)]
    parts = [theorem_legend(str(r.get("bound_theorem") or "") for r in rows if _is_private(r)),
             f"attack mean (report.csv attack_success_mean): mean targets attacked per trial by the attack ({attack}); "
             f"prior-only mean (prior_success_mean): by the prior-only guess z*, the same k and metric"
             + "".join(f"; {v} mean ({v}_success_mean): by the attack variant {v}" for v in variant_labels(rows)) + ".",
             "bound_<c>: with probability >= c at most this many targets are attacked"
             + (f" (bound_{top:g} = {example:g} in the first private row)" if not math.isnan(example) else "")
             + "; floor_<c>: the count a real mechanism with the same guarantee lets an attack reach, so the worst "
               "case lies in [floor_<c>, bound_<c>]; '-': no floor built (metrics.json worst_case_floor.reason says "
               "why) or not private.",
             "every row: " + ", ".join(f"{name} = {_shared(rows, key)}" for key, name in shared
                                       if key not in columns and _same(rows, key, key not in _SHARED_SETTINGS))]
    return "\n".join(textwrap.fill(part, width, subsequent_indent="  ", break_on_hyphens=False)
                     for part in parts if part)


def _same(rows: list[dict[str, Any]], key: str, private_only: bool = False) -> bool:
    """Whether every row (every private row, for a key a not-private job leaves empty: delta) has one value of key."""
    values = {str(r.get(key)) for r in rows if not private_only or _is_private(r)}
    return len(values) == 1 and values != {"None"} and values != {""}


def report_table(rows: list[dict[str, Any]], width: int = TABLE_WIDTH) -> str:
    """The printed table of the rows (`table_columns`, `table_headers`) and its legend: what the quickstart and
    `pipeline.report` print. Wider than `width`, the prior, delta and n columns move to the legend's 'every row'
    line where every row has the same value."""
    shown, headers = _table_rows(rows), table_headers(rows)
    columns = table_columns(rows)
    table = format_table(shown, columns, headers)
    if max(len(line) for line in table.splitlines()) > width:
        columns = [c for c in columns if c not in ("prior", "delta", "n_targets") or not _same(rows, c, True)]
        table = format_table(shown, columns, headers)
    return f"{table}\n\n{table_legend(rows, columns, width)}"


if __name__ == "__main__":
    sys.exit(main())
