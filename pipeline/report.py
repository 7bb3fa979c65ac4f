"""`python -m pipeline.report <multirun dir>`: a sweep's metrics.json files -> report.csv and figures/report.png.

One row per job: the job's overrides, epsilon, the attack's and the prior baseline's mean successes
and the bound at each confidence. The figure plots successes against epsilon, one panel per
combination of the other swept options.
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

from pipeline.io import save_figure_atomic

__all__ = ["collect", "write_csv", "plot", "main"]

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
        # The swept epsilon if the mechanism has one, else the profile's epsilon at delta = 1e-5.
        "epsilon": float(mechanism_epsilon) if mechanism_epsilon is not None else privacy.get("epsilon"),
        "epsilon_at_delta": privacy.get("epsilon"),
        "delta": privacy.get("delta"),
        "n_targets": metrics["n_targets"],
        "trials": metrics["trials"],
        "attack_success_mean": metrics["attack_success_mean"],
        "prior_success_mean": metrics["prior_success_mean"],
    })
    for confidence, count in metrics["bound"].items():
        row[f"bound_{float(confidence):g}"] = count if not isinstance(count, list) else max(count)
    row["bound_exceeded_fraction"] = metrics.get("bound_exceeded_fraction")
    return row


def collect(multirun_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """One row per job folder under multirun_dir that holds a metrics.json (jobs that failed have none)."""
    root = Path(multirun_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"multirun directory {root} does not exist; pass the folder a -m sweep printed.")
    paths = sorted((p for p in root.rglob("metrics.json") if ".submitit" not in p.parts),
                   key=lambda p: [int(s) if s.isdigit() else s for s in p.parent.relative_to(root).parts])
    if not paths:
        raise FileNotFoundError(f"no metrics.json under {root}; did the sweep's jobs finish?")
    return [_job_row(p, root) for p in paths]


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


def plot(rows: list[dict[str, Any]], path: str | os.PathLike) -> Path:
    """Successes vs epsilon: attack, prior baseline and the bound at each confidence, a panel per series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    measured = {"job", "epsilon", "epsilon_at_delta", "delta", "n_targets", "trials", "attack_success_mean",
                "prior_success_mean", "bound_exceeded_fraction"}
    override_keys = {k for row in rows for k in row if k not in measured and not k.startswith("bound_")}
    varying = sorted(k for k in override_keys
                     if k not in _EPSILON_KEYS and len({str(r.get(k)) for r in rows}) > 1)
    series: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        series.setdefault(_series_key(row, varying), []).append(row)
    bound_columns = sorted({k for r in rows for k in r if k.startswith("bound_") and k != "bound_exceeded_fraction"},
                           key=lambda k: float(k.split("_", 1)[1]))
    fig, axes = plt.subplots(1, len(series), figsize=(4.6 * len(series), 3.8), squeeze=False, sharey=True)
    for ax, (label, members) in zip(axes[0], series.items()):
        members = sorted(members, key=lambda r: r["epsilon"])
        eps = [r["epsilon"] for r in members]
        ax.plot(eps, [r["attack_success_mean"] for r in members], "o-", label="attack (mean)")
        ax.plot(eps, [r["prior_success_mean"] for r in members], "s-", label="prior baseline (mean)")
        for column, style in zip(bound_columns, (":", "--", "-.", (0, (1, 3)))):
            ax.plot(eps, [r[column] for r in members], linestyle=style, color="k",
                    label=f"bound @ {column.split('_', 1)[1]}")
        ax.set_xscale("log" if min(eps) > 0 and max(eps) / max(min(eps), 1e-12) > 8 else "linear")
        ax.set_xticks(eps, [f"{e:g}" for e in eps], minor=False)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("epsilon")
        ax.set_title(label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"targets attacked (of {rows[0]['n_targets']})")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    return save_figure_atomic(fig, path)


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
    parser.add_argument("multirun_dir", help="a sweep's folder, e.g. outputs/multirun/2025-01-01/12-00-00")
    parser.add_argument("--out", default=None, help="where report.csv and figures/report.png go (default: the sweep's folder)")
    args = parser.parse_args(argv)
    from pipeline import experiments

    if experiments.has_experiment_jobs(args.multirun_dir):
        # An experiment's sweep: its own table (the columns) and figure, under the sweep folder.
        table, figure, experiment_rows = experiments.write_report(args.multirun_dir)
        print(format_table(experiment_rows, experiments.table_columns(experiment_rows)))
        print(f"\nwrote {table} and {figure}")
        if not all("boxes" in json.loads(p.read_text()) for p in Path(args.multirun_dir).rglob("metrics.json")
                   if ".submitit" not in p.parts):
            return 0  # analytic experiments have no games to aggregate
    try:
        rows = collect(args.multirun_dir)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out or args.multirun_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = write_csv(rows, out / "report.csv")
    figure = plot(rows, out / "figures" / "report.png")
    bounds = [k for k in rows[0] if k.startswith("bound_") and k != "bound_exceeded_fraction"]
    print(format_table(rows, ["job", "prior", "mechanism", "epsilon", "attack_success_mean", "prior_success_mean", *bounds]))
    print(f"\nwrote {table} and {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
