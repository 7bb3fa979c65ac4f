"""What the experiment families share: the Task base class, grids, intervals, prior laws and plot helpers."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from omegaconf import DictConfig

from pipeline.io import save_figure_atomic

__all__ = [
    "CANARIES", "Task", "canary_probability", "finish", "grid", "group_rows", "laws", "mean_interval", "panel", "subplots",
]

CANARIES = ("min", "median", "max", "typical")

def grid(name: str, low: float, high: float, points: int, extra: Sequence[float] = ()) -> np.ndarray:
    """A log grid low..high with `points` points plus the `extra` values, sorted, 12 significant digits."""
    if not (0 < float(low) <= float(high)) or int(points) < 1:
        raise ValueError(f"{name} must satisfy 0 < low <= high and points >= 1, got low={low}, high={high}, points={points}.")
    values = np.geomspace(float(low), float(high), int(points)) if int(points) > 1 else np.array([float(low)])
    values = np.concatenate([values, np.asarray(list(extra), dtype=float)])
    return np.unique(np.asarray([float(f"{v:.12g}") for v in values]))


def mean_interval(samples, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student-t interval for the mean of i.i.d. samples (one trial = one sample)."""
    from scipy import stats

    x = np.asarray(samples, dtype=float)
    mean = float(np.mean(x))
    if x.size < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2.0, x.size - 1) * np.std(x, ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half


def canary_probability(law: Mapping, canary: str) -> float:
    """Prior probability of one canary of a law {law: uniform | zipf, domain_size: N, exponent: s}.

    canary: `max` (the most probable secret), `min` (the least), `median` (the median over the N
    secrets: rank ceil(N/2)), `typical` (the median prior probability of a secret drawn from the
    law: the smallest rank holding half the mass).
    """
    from stages.prior.zipf import zipf_median_rank, zipf_rank_probability

    kind = law.get("law")
    n = int(law.get("domain_size", 0))
    if n < 1:
        raise ValueError(f"domain_size must be an integer >= 1, got {law.get('domain_size')!r}.")
    if canary not in CANARIES:
        raise ValueError(f"canaries must be among {list(CANARIES)}, got {canary!r}.")
    if kind == "uniform":
        return 1.0 / n
    if kind == "zipf":
        s = law.get("exponent")
        rank = {"max": 1, "min": n, "median": (n + 1) // 2}.get(canary) or zipf_median_rank(n, s)
        return float(zipf_rank_probability(rank, n, s))
    raise ValueError(f"law must be 'uniform' or 'zipf', got {kind!r}; e.g. {{law: zipf, domain_size: 1000000000, exponent: 1.84}}.")


def laws(priors: Mapping) -> dict[str, dict]:
    laws = {str(name): dict(spec) for name, spec in dict(priors).items()}
    if not laws:
        raise ValueError("priors must name at least one law, got none.")
    for name, law in laws.items():
        canary_probability(law, "max")  # validates the law now, before any work
    return laws


def subplots(panels: int, width: float = 4.4, height: float = 3.6, **kwargs):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, max(1, panels), figsize=(width * max(1, panels), height), squeeze=False, **kwargs)
    return fig, axes[0]


def panel(ax, xlabel: str, title: str, log_x: bool = True) -> None:
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)


def finish(fig, axes, ylabel: str, path, legend: bool = True) -> Path:
    """Label the first panel, put the legend on the last, save the figure atomically."""
    axes[0].set_ylabel(ylabel)
    if legend:
        axes[-1].legend(fontsize=7)
    fig.tight_layout()
    return save_figure_atomic(fig, path)


def group_rows(rows: list[dict], key: str) -> dict[Any, list[dict]]:
    out: dict[Any, list[dict]] = {}
    for row in rows:
        out.setdefault(row[key], []).append(row)
    return out



class Task(ABC):
    """An experiment: `run` computes the rows of its table; `plot` draws them."""

    name = "task"
    columns: tuple[str, ...] = ()
    #: Sweep overrides already shown by a column (not repeated as extra columns in a sweep's table).
    represented: tuple[str, ...] = ()
    #: Whether the task plays games (its jobs carry the game's metrics too).
    plays_games = False

    @abstractmethod
    def run(self, cfg: DictConfig, output_dir: Path, cache, logger) -> dict:
        """The job's numbers: {"table": rows, "headline": {...}, ...} (written to metrics.json)."""

    @staticmethod
    @abstractmethod
    def plot(rows: list[dict], path) -> Path:
        """Draw the table's figure at path and return it."""
