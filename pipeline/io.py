"""Atomic writes of results (JSON, figures) and conversion of numpy values to plain JSON values."""
from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

#: The sweep's jobs (their override lists, in job-number order), written into the sweep folder before any job
#: (pipeline.sweeper.write_job_list), and the files every -m sweep writes into its folder.
JOBS_FILE = "jobs.yaml"
SWEEP_FILES = (JOBS_FILE, "multirun.yaml")

__all__ = ["trials_rows", "write_trials_csv", "JOBS_FILE", "SWEEP_FILES", "plain", "write_json_atomic", "save_figure_atomic", "bound_column", "exceed_column", "confidence_of_column",
           "audit_column", "refute_column", "audit_cells"]


# One naming scheme for every CSV (report.csv and every experiment's table; docs/pages/outputs.md):
# bound_<c> is the bound at confidence c (with probability >= c at most this many targets are attacked),
# exceed_<c> the fraction of trials in which the attack exceeded that bound; c as Python's :g writes it
# (bound_0.05, bound_0.5, bound_0.95).
def bound_column(confidence: float) -> str:
    """'bound_0.95': the CSV column of the bound at a confidence."""
    return f"bound_{float(confidence):g}"


def floor_column(confidence: float) -> str:
    """'floor_0.95': the CSV column of the worst case's lower end at a confidence (a real mechanism's count)."""
    return f"floor_{float(confidence):g}"


def floor_cells(metrics: Mapping[str, Any], confidences, private: bool) -> dict[str, Any]:
    """A job's floor_<c> cells: metrics.json worst_case_floor.counts at each confidence (the mean over trials for a
    per-trial law); None where the floor is not built (worst_case_floor.reason says why) or the run is not private."""
    floor = (metrics.get("worst_case_floor") or {}).get("counts") or {}
    cells = {}
    for confidence in confidences:
        value = floor.get(confidence_key(confidence))
        cells[floor_column(confidence)] = (float(np.mean(value)) if isinstance(value, list) else value) if private else None
    return cells


def audit_column(confidence: float) -> str:
    """'audit_0.95': the CSV column of an audit at a confidence (the parameter of the mechanism's own family, mu, eps
    or the noise multiplier, that successes refute: stages.bound.audit): the median trial's in report.csv, each
    trial's in a job's trials.csv."""
    return f"audit_{float(confidence):g}"


def refute_column(confidence: float) -> str:
    """'refute_0.95': the CSV column of the share of trials whose successes refute the mechanism's claimed parameter."""
    return f"refute_{float(confidence):g}"


def audit_cells(metrics: Mapping[str, Any], confidences, private: bool) -> dict[str, Any]:
    """A job's audit cells for its attack: audit_family (mu, eps or noise_multiplier), audit_claimed (the mechanism's
    own parameter) and audit_<c> / refute_<c> at each confidence (metrics.json audit); None where not audited."""
    audit = (metrics.get("audit") or {}) if private else {}
    mine = (audit.get("attacks") or {}).get(metrics.get("attack_label")) or {}
    cells = {"audit_family": (audit.get("family") or {}).get("parameter"), "audit_claimed": audit.get("claimed")}
    for confidence in confidences:
        one = mine.get(confidence_key(confidence)) or {}
        cells[audit_column(confidence)] = one.get("median")
        cells[refute_column(confidence)] = one.get("share_refuting_claim")
    return cells


def trials_rows(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per attack (and variant) and trial of a job's metrics.json, for its trials.csv: trial, attack,
    successes, the prior baseline's successes in that trial (the a-priori guesses z*), and at every confidence the
    count bound that trial is held to (bound_<c>), whether it exceeded it (exceed_<c>: 1 or 0) and the trial's
    audit (audit_<c>: the largest parameter of metrics.json audit.family its successes refute, 0 where none; empty
    where the game has no bound or no audit)."""
    confidences = metrics.get("confidences") or []
    baseline = metrics.get("prior_successes") or []
    audit = metrics.get("audit") or {}
    rows = []
    for label, attack in (metrics.get("attacks") or {}).items():
        successes = attack.get("successes") or []
        per_trial = attack.get("bound_per_trial") or {}
        shared = attack.get("bound") or {}
        audited = (audit.get("attacks") or {}).get(label) or {}
        for r, m in enumerate(successes):
            row: dict[str, Any] = {"trial": r, "attack": label, "successes": m,
                                   "prior_successes": baseline[r] if r < len(baseline) else None}
            for c in confidences:
                key = confidence_key(c)
                count = per_trial[key][r] if key in per_trial else shared.get(key)
                if isinstance(count, list):  # a per-trial law: one count per trial
                    count = count[r]
                row[bound_column(c)] = count
                row[exceed_column(c)] = None if count is None else int(m > count)
                thetas = (audited.get(key) or {}).get("per_trial")
                row[audit_column(c)] = thetas[r] if thetas is not None else None
            rows.append(row)
    return rows


def write_trials_csv(metrics: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """trials_rows(metrics) written as CSV to path (its columns in row order); the folder must exist."""
    import csv

    rows = trials_rows(metrics)
    path = Path(path)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["trial", "attack", "successes"])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return path


def exceed_column(confidence: float) -> str:
    """'exceed_0.95': the CSV column of the fraction of trials in which the attack exceeded bound_<c>."""
    return f"exceed_{float(confidence):g}"


def confidence_key(confidence: float) -> str:
    """'0.95': the key of a confidence in metrics.json's per-confidence mappings (bound, exceed,
    bound_theorem.by_confidence), repr of the float, so every confidence round-trips exactly."""
    return repr(float(confidence))


def confidence_of_column(column: str) -> float | None:
    """0.95 for 'bound_0.95', 'exceed_0.95' or 'floor_0.95'; None for any other column (bound_theorem, ...)."""
    for prefix in ("bound_", "exceed_", "floor_", "audit_", "refute_"):
        if column.startswith(prefix):
            try:
                return float(column[len(prefix):])
            except ValueError:
                return None
    return None


def plain(value: Any, *, strict: bool = False) -> Any:
    """Mappings, sequences, numpy arrays and scalars -> plain JSON values (dict keys become strings).

    strict (for hashing configs): non-finite floats become their repr and any other type raises a
    TypeError; otherwise other types pass through unchanged for json to judge.
    """
    if isinstance(value, Mapping):
        return {str(k): plain(v, strict=strict) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, strict=strict) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist(), strict=strict)
    if isinstance(value, np.generic):
        return plain(value.item(), strict=strict)
    if strict:
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value)  # JSON has no inf/nan; "inf" stays distinct from every number
        if not (value is None or isinstance(value, (bool, int, float, str))):
            raise TypeError(f"config values must be JSON-able, got {type(value).__name__} ({value!r}).")
    return value


def write_json_atomic(path: str | os.PathLike, obj: Any, *, exclusive: bool = False) -> None:
    """Write JSON to a temporary file in the same folder and rename it onto path.

    exclusive: never replace an existing file; the file appears complete in one step (a hard link of
    the temporary file), and if path already exists a FileExistsError is raised and nothing changes.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(plain(obj), f, indent=2, allow_nan=True)
            f.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a results file is for everyone to read
        if exclusive:
            os.link(tmp, path)  # atomic, and fails if path exists
        else:
            os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def save_figure_atomic(fig, path: str | os.PathLike, dpi: int = 110) -> Path:
    """Save a matplotlib figure next to path under a temporary name, rename it onto path, close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        # zlib level 1 for PNGs: about 30 ms a figure less than the default 6, and no larger here (flat colours)
        extra = {"pil_kwargs": {"compress_level": 1}} if path.suffix.lower() == ".png" else {}
        fig.savefig(tmp, dpi=dpi, **extra)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)
    return path


def command(body: Callable[[], int], errors: tuple[type[BaseException], ...], code: int, interrupted: str) -> int:
    """Run a command-line body: a refused input (one of `errors`) prints `error: <its sentence>` and exits with
    `code`; Ctrl-C prints `interrupted` and exits with 130 (the shell's convention)."""
    import sys

    try:
        return body()
    except errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr)
        return 130
