"""What the experiment families share: the Task base class, grids, intervals, prior laws and plot helpers."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from omegaconf import DictConfig, OmegaConf

from pipeline.io import save_figure_atomic

__all__ = [
    "CANARIES", "Figure", "LAW_CANARIES", "PII_CANARIES", "PII_PAPER_EPS_PROTECT", "Task", "attach_stage_cache", "canary_probability",
    "finish", "grid", "group_rows", "law_canaries", "laws", "mean_interval", "panel", "resolve_laws", "subplots",
]

CANARIES = ("min", "median", "max", "typical")
#: The canaries a `given` or `pii` law names (PIIPrior.law_summary's keys): the paper's footnote plots the
#: 10th percentile of the PII probabilities instead of their minimum (~0).
LAW_CANARIES = ("max", "median", "p10", "min")
#: A `pii` law's canaries unless its spec says otherwise (Figure novel_bounds).
PII_CANARIES = ("max", "median", "p10")
#: The paper's eps_protect of the most probable PII (Sec. 4.3, GPT-2 scores), printed beside ours.
PII_PAPER_EPS_PROTECT = 2.37
#: Keys of a `pii` law that are not PII prior settings.
_PII_LAW_KEYS = ("law", "canaries")
#: PII prior settings a `pii` law does not take: the model is the job's, and the canaries' count and size
#: do not change the law over the candidates (a pii law builds its prior with one canary of one secret).
_PII_FIXED = {"_target_": None, "model": None, "n_targets": 1, "domain_size": 1}


def grid(name: str, low: float, high: float, points: int, extra: Sequence[float] = ()) -> np.ndarray:
    """A log grid low..high with `points` points plus the `extra` values, sorted, 12 significant digits."""
    if not (0 < float(low) <= float(high)) or int(points) < 1:
        raise ValueError(f"{name} must satisfy 0 < low <= high and points >= 1, got low={low}, high={high}, points={points}.")
    values = np.geomspace(float(low), float(high), int(points)) if int(points) > 1 else np.array([float(low)])
    values = np.concatenate([values, np.asarray(list(extra), dtype=float)])
    return np.unique(np.asarray([float(f"{v:.12g}") for v in values]))


def mean_interval(samples, level: float = 0.95, bounds: tuple[float, float] | None = None) -> tuple[float, float, float]:
    """(mean, low, high): Student-t interval for the mean of i.i.d. samples (one trial = one sample).

    bounds (lo, hi): the range the samples cannot leave (successes: (0, n)); the interval is clipped to
    it, which keeps its coverage (the mean lies in the range) and drops the impossible part a t-interval
    of few trials reaches (e.g. -30 to 162 successes of 100 from 2 trials).
    """
    from scipy import stats

    x = np.asarray(samples, dtype=float)
    mean = float(np.mean(x))
    if x.size < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2.0, x.size - 1) * np.std(x, ddof=1) / math.sqrt(x.size))
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(float(bounds[0]), low), min(float(bounds[1]), high)
    return mean, low, high


def attach_stage_cache(prior, cache) -> None:
    """Give a prior with an expensive scoring stage (prior=pii) the job's stage cache."""
    if cache is not None and hasattr(prior, "use_cache"):
        prior.use_cache(cache.get_or_compute)


def canary_probability(law: Mapping, canary: str) -> float:
    """Prior probability of one canary of a law.

    * `{law: uniform | zipf, domain_size: N, exponent: s}`: canary `max` (the most probable secret),
      `min` (the least), `median` (the median over the N secrets: rank ceil(N/2)), `typical` (the median
      prior probability of a secret drawn from the law: the smallest rank holding half the mass).
    * `{law: given, probabilities: {max: .., median: .., p10: ..}, source: ..}`: the probability given
      for that canary (e.g. read from a pii_law run's metrics.json, headline.law).
    A `{law: pii, ...}` law is resolved into a given one by `resolve_laws` when its job runs.
    """
    from stages.prior.zipf import zipf_median_rank, zipf_rank_probability

    kind = law.get("law")
    if kind == "given":
        probabilities = law.get("probabilities") or {}
        if canary not in probabilities:
            raise ValueError(f"canaries of a given law are the ones its probabilities name ({sorted(probabilities)}), "
                             f"got {canary!r}.")
        return float(probabilities[canary])
    if kind == "pii":
        raise ValueError("a pii law has no probabilities before its job scores it: call resolve_laws(laws, cfg, cache) "
                         "first.")
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
    raise ValueError(f"law must be 'uniform', 'zipf', 'given' or 'pii', got {kind!r}; e.g. {{law: zipf, domain_size: "
                     f"1000000000, exponent: 1.84}} or {{law: pii}}.")


def _pii_settings() -> DictConfig:
    """conf/prior/pii.yaml, unresolved: the PII prior a `pii` law builds (with the job's ${model})."""
    from omegaconf import OmegaConf

    import pipeline

    return OmegaConf.load(Path(pipeline.CONF_DIR) / "prior" / "pii.yaml")


def _check_given(name: str, law: dict) -> None:
    probabilities = law.get("probabilities")
    if not isinstance(probabilities, Mapping) or not probabilities:
        raise ValueError(f"priors.{name}.probabilities must map canaries ({list(LAW_CANARIES)}) to prior probabilities, "
                         f"got {probabilities!r}; e.g. {{law: given, probabilities: {{max: 0.3, median: 0.01}}, "
                         f"source: 'pii_law run ...'}}.")
    unknown = sorted(set(law) - {"law", "probabilities", "source"})
    if unknown:
        raise ValueError(f"priors.{name} (a given law) takes only law, probabilities and source, got {unknown}.")
    for canary, p in probabilities.items():
        if canary not in LAW_CANARIES:
            raise ValueError(f"priors.{name}.probabilities names canaries among {list(LAW_CANARIES)}, got {canary!r}.")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < float(p) < 1.0:
            raise ValueError(f"priors.{name}.probabilities.{canary} must be a prior probability in (0, 1), got {p!r}; "
                             f"give the canary's probability, e.g. from a pii_law run's metrics.json (headline.law).")


def _check_pii(name: str, law: dict) -> None:
    canaries = law.get("canaries", list(PII_CANARIES))
    if isinstance(canaries, str) or not canaries or any(c not in LAW_CANARIES for c in canaries):
        raise ValueError(f"priors.{name}.canaries must list canaries among {list(LAW_CANARIES)}, got {canaries!r}.")
    allowed = sorted(k for k in _pii_settings() if k not in _PII_FIXED)
    unknown = sorted(set(law) - set(_PII_LAW_KEYS) - set(allowed))
    if unknown:
        raise ValueError(f"priors.{name} (a pii law) takes law, canaries and the PII prior's settings {allowed} "
                         f"(the language model is the job's model=...), got {unknown}.")


def laws(priors: Mapping) -> dict[str, dict]:
    """The task's `priors`, checked before any work (a `pii` law is only checked: it is scored at run time)."""
    laws = {str(name): dict(spec) for name, spec in dict(priors).items()}
    if not laws:
        raise ValueError("priors must name at least one law, got none.")
    for name, law in laws.items():
        if law.get("law") == "given":
            _check_given(name, law)
        elif law.get("law") == "pii":
            _check_pii(name, law)
        else:
            canary_probability(law, "max")  # validates the law now, before any work
    return laws


def law_canaries(law: Mapping, default: Sequence[str]) -> list[str]:
    """The canaries of a law: `default` (the task's) for uniform and zipf, the given ones otherwise."""
    if law.get("law") == "given":
        return list(law["probabilities"])
    return list(default)


def resolve_laws(laws: Mapping[str, Mapping], cfg: DictConfig, cache) -> dict[str, dict]:
    """The laws with each `{law: pii, ...}` replaced by the given law of its PII prior's law_summary().

    The PII prior is conf/prior/pii.yaml with the spec's settings on top and the job's `model` (so
    `model=tiny` or `model=gpt2` choose the LM); its scores are the stage-cached `pii_scores` that
    experiment=pii_law and llm_canaries share. The resolved law keeps the whole summary and a `source`.
    Only a pii law loads a language model; the others pass through unchanged.
    """
    import copy

    from hydra.utils import instantiate
    from omegaconf import OmegaConf, open_dict

    out = {}
    for name, law in laws.items():
        if law.get("law") != "pii":
            out[name] = dict(law)
            continue
        settings = _pii_settings()
        overrides = {**{k: v for k, v in law.items() if k not in _PII_LAW_KEYS},
                     **{k: v for k, v in _PII_FIXED.items() if v is not None}}
        variant = copy.deepcopy(cfg)
        with open_dict(variant):
            variant.prior = OmegaConf.merge(settings, overrides)
        try:
            prior = instantiate(variant.prior, _convert_="all")
        except Exception as exc:  # noqa: BLE001 - report the box's own sentence, naming the law
            cause = exc
            while cause.__cause__ is not None and not isinstance(cause, (ValueError, TypeError, FileNotFoundError)):
                cause = cause.__cause__
            if not isinstance(cause, (ValueError, TypeError, FileNotFoundError)):
                raise
            raise ValueError(f"priors.{name} (a pii law): {str(cause).strip().splitlines()[0]}") from exc
        attach_stage_cache(prior, cache)
        summary = prior.law_summary()
        canaries = list(law.get("canaries", PII_CANARIES))
        model = prior.model.params() if hasattr(prior.model, "params") else {}
        out[name] = {
            "law": "given", "probabilities": {c: float(summary[c]) for c in canaries},
            "source": (f"pii prior, model {model.get('model', type(prior.model).__name__)}, score {summary['score']}, "
                       f"{summary['n_contexts']} contexts x {summary['n_candidates']} candidates"
                       + (f" (context copies dropped: {summary['n_contexts']} of {summary['n_contexts_sampled']} sampled)"
                          if summary.get("context_copies") == "drop" else "")),
            "resolved_from": "pii", "summary": summary, "prior": prior.params(),
        }
    return out


#: Panels per row of an experiment figure; more panels wrap into further rows.
MAX_COLUMNS = 3


def subplots(panels: int, width: float = 4.4, height: float = 3.6, max_columns: int = MAX_COLUMNS, **kwargs):
    """A grid of `panels` panels, at most max_columns a row, each width x height inches; returns (fig, axes)
    with the used axes in reading order (the grid's unused cells are hidden)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = max(1, int(panels))
    columns = min(panels, max_columns)
    rows = math.ceil(panels / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False, **kwargs)
    flat = list(axes.ravel())
    for ax in flat[panels:]:
        ax.set_visible(False)
    return fig, flat[:panels]


def panel(ax, xlabel: str, title: str, log_x: bool = True) -> None:
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)


def finish(fig, axes, ylabel: str, path, legend: bool = True, note: str = "", title: str = "") -> Path:
    """Label the first panel of each row, put the title over the panels and one legend for all panels under them
    (a legend inside a panel covers its points) with the note under the legend (pipeline.figures.legend_below:
    the figure grows by what they measure), save it."""
    from pipeline.figures import legend_below, wrap

    for ax in axes:
        if ax.get_subplotspec() is not None and ax.get_subplotspec().is_first_col():
            ax.set_ylabel(ylabel)
    handles, labels = [], []
    if legend:
        for ax in axes:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                if label not in labels and not label.startswith("_"):
                    handles.append(handle)
                    labels.append(label)
    if title:
        fig.suptitle(wrap(title, fig.get_size_inches()[0] - 0.3, 9), fontsize=9)
    legend_below(fig, handles, labels, note=note)
    return save_figure_atomic(fig, path)


def group_rows(rows: list[dict], key: str) -> dict[Any, list[dict]]:
    out: dict[Any, list[dict]] = {}
    for row in rows:
        out.setdefault(row[key], []).append(row)
    return out



class Task(ABC):
    """An experiment that is not a sweep of games (bound curves, eps_protect, the PII law, the Zipf fit): `run`
    computes the rows of its table in one job; `plot` draws them. A figure of games is a `Figure`."""

    name = "task"
    columns: tuple[str, ...] = ()
    #: Sweep overrides already shown by a column (not repeated as extra columns in a sweep's table).
    represented: tuple[str, ...] = ()
    #: The config groups whose boxes the task uses (none by default: a task plays no game): what its W&B
    #: config logs beside `task` (pipeline.tracking.run_config).
    groups: tuple[str, ...] = ()

    def config_groups(self, cfg: DictConfig) -> tuple[str, ...]:
        """The config groups this job uses (see `groups`)."""
        return tuple(self.groups)

    def reads_data(self, cfg: DictConfig) -> bool | None:
        """Whether the job reads files from data_dir (None: if one of its config groups has a data_dir key)."""
        return None

    @abstractmethod
    def run(self, cfg: DictConfig, output_dir: Path, cache, logger) -> dict:
        """The job's numbers: {"table": rows, "headline": {...}, ...} (written to metrics.json)."""

    @staticmethod
    @abstractmethod
    def plot(rows: list[dict], path) -> Path:
        """Draw the table's figure at path and return it."""


def _listing(items) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = [str(item) for item in items]
    return " and ".join([", ".join(items[:-1]), items[-1]]) if len(items) > 1 else "".join(items)


class Figure(ABC):
    """A paper figure that is a sweep of games (conf/experiment/<name>.yaml sets `figure`).

    The figure does not play anything: `points(cfg)` lists the games of one sweep combination (the sweeper,
    pipeline.sweeper, launches each as an ordinary game job), `rows(cfg, metrics)` turns one game job's
    metrics into its rows of the table (the job writes them to metrics.json under "table"), `combine(rows)`
    joins the jobs' rows into the table (pipeline.experiments.write_report, at the end of the sweep), and
    `plot(rows, path)` draws it. `check(cfg)` refuses, before the game is played, a job the figure cannot
    read; `setup(cfg)` prepares the process (e.g. torch's threads).
    """

    name = "figure"
    columns: tuple[str, ...] = ()
    #: Sweep overrides already shown by a column (not repeated as extra columns in the sweep's table).
    represented: tuple[str, ...] = ()

    def points(self, cfg: DictConfig) -> list[dict[str, Any]]:
        """The games of one sweep combination, as {override key: value}; [{}] is the combination itself."""
        return [{}]

    #: The confidence levels the figure's bound columns show (a game without them is refused before it plays).
    levels: tuple[float, ...] = ()

    def boxes(self, cfg: DictConfig) -> Mapping[str, tuple[str, str]]:
        """The boxes the figure reads: {group: (class name, option)}; a game with other boxes is refused."""
        return {}

    def check(self, cfg: DictConfig) -> None:
        """Raise ValueError (one sentence) if this job's game cannot give the figure's rows: a confidence of
        `levels` missing, or a box other than `boxes(cfg)` names."""
        given = [float(c) for c in cfg.confidences]
        if any(level not in given for level in self.levels):
            raise ValueError(f"confidences must include {_listing(f'{level:g}' for level in self.levels)} for "
                             f"{self.name} (its bound columns), got {given}.")
        boxes = self.boxes(cfg)
        got = {group: str(OmegaConf.select(cfg, f"{group}._target_", default="")).rsplit(".", 1)[-1] for group in boxes}
        if any(got[group] != name for group, (name, _) in boxes.items()):
            raise ValueError(f"{self.name} plays {_listing(f'{g}={option}' for g, (_, option) in boxes.items())}, "
                             f"got {_listing(got.values())}.")

    def check_point(self, cfg: DictConfig) -> None:
        """Raise ValueError (one sentence) if this job is not one of the figure's points (after `check`; the
        sweeper checks a combination with `check` alone, before the points are added)."""

    def setup(self, cfg: DictConfig) -> None:
        """Prepare the job's process before its game is played."""

    @abstractmethod
    def rows(self, cfg: DictConfig, metrics: Mapping[str, Any]) -> list[dict]:
        """The table rows of one game job (its composed config and metrics.json)."""

    @classmethod
    def combine(cls, rows: list[dict]) -> list[dict]:
        """The table from the rows of every job of the sweep (in job order)."""
        return rows

    @staticmethod
    @abstractmethod
    def plot(rows: list[dict], path) -> Path:
        """Draw the table's figure at path and return it."""
