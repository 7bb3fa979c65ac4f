"""The tabular case study (paper appendix "Bounding Tabular Data Reconstruction from Noisy Marginals").

Four figures, each a sweep of the tabular game (conf/experiment/tabular_*.yaml: prior=baynet,
mechanism=noisy_marginals, attack=rap, `hydra.sweeper.params` over prior.dataset and, for Fig.
recon_1col_multeps, mechanism.epsilon), whose points depend on the table:

* `TabularSingleColumn` (Fig. recon_1col): every column of the table (figure.columns) as the lone target;
* `TabularEpsilon` (Fig. recon_1col_multeps): one column per table (figure.default_columns) at every swept
  epsilon (inf included); the records and the standard-normal noise draws of a trial are the same for every eps;
* `TabularMultiColumn` (Fig. recon_multicol): the first `n_known` columns of the fitted network's visit order
  known, every other column unknown (so the release and the noise are the same for every m), success =
  the next m visit-order columns all right, m = 1 .. d - n_known;
* `TabularApproximate` (Fig. recon_approx): one ordinal column, success = within E (metric=within), E = 0 ..
  domain - 1.

A figure plays nothing: `points(cfg)` lists the games of one sweep combination (pipeline.sweeper launches each
as an ordinary game job: `prior.targets`, `prior.known`, and for Fig. recon_approx `metric=within
metric.distance=E`), `rows(cfg, metrics)` turns a game job's metrics.json into its rows (one per attack: RAP
with attack.objective, then each of attack.compare scored on the same releases: the other objective, and
`posterior`, the Gibbs Bayes-posterior reference attack of stages.attack.posterior), and the sweep's report
joins the rows into the CSV and draws the figure. Any point is therefore one `python -m pipeline
experiment=tabular_<figure> prior.dataset=.. prior.targets=[..] ...` (the job's .hydra/overrides.yaml), with
the same numbers. The engine samples `prior.n_records` fresh records per trial, releases the noisy marginals
(a cached stage), runs the attack's relaxation once per release (cached: the multi-column and within-distance
points share it) and scores every attack and the prior-only baseline z* (the joint MAP of the targets given
the known columns, or the best window); the bound is the bound box's (one_run) count for each trial's
per-record law, and every row names its theorem (`bound_theorem`). At eps = inf the exact marginals have no
privacy guarantee: no bound ("none (not private)").

Tables: prior.dataset, among stages.prior.tabular.DATASETS (the stand-ins acs and fire, and the paper's tables
that `python -m pipeline.data fetch` writes, e.g. acs/recon-synth); the columns are those of the table's
domain file, checked when the sweep expands its points (before any job runs). The guess is the attack's
`decode` of its relaxed table (attack.decode: joint, the default, or per_column; see stages.attack.rap).
"""
from __future__ import annotations

from abc import abstractmethod
import logging
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from omegaconf import DictConfig, OmegaConf

from pipeline.io import bound_column, confidence_key, exceed_column
from pipeline.experiments.common import Figure, finish, group_rows, mean_interval, subplots

__all__ = ["TabularSingleColumn", "TabularEpsilon", "TabularMultiColumn", "TabularApproximate"]

log = logging.getLogger(__name__)

_CONFIDENCE_COLUMNS = {c: bound_column(c) for c in (0.05, 0.5, 0.95)}
_EXCEED_COLUMNS = {c: exceed_column(c) for c in (0.05, 0.5, 0.95)}


#: The single-column table's columns; the multi-column and approximate tables add m or distance after `column`.
COLUMNS = ("dataset", "column", "epsilon", "objective", "trials", "attack_mean", "attack_ci_low", "attack_ci_high",
           "prior_mean", "prior_expected", "bound_0.05", "bound_0.5", "bound_0.95", "exceed_0.05", "exceed_0.5",
           "exceed_0.95", "bound_theorem", "n_records", "delta", "noise_scale", "n_marginals")


def _columns_with(key: str) -> tuple[str, ...]:
    return COLUMNS[:2] + (key,) + COLUMNS[2:]


def _epsilon_label(eps: float) -> str:
    return "inf" if math.isinf(eps) else f"{eps:g}"


class _Tabular(Figure):
    """What the four tabular figures share: their checks, their rows and their plot; subclasses list the points."""

    #: The point's overrides, shown by the table's dataset, column, m, epsilon and distance columns.
    represented = ("prior.dataset", "prior.targets", "prior.known", "mechanism.epsilon", "metric", "metric.distance",
                   "figure.columns", "figure.max_targets", "attack.objective", "attack.compare")

    def __init__(self, columns: str | Sequence[str] | None = None, ci_level: float = 0.95,
                 default_columns: Mapping | None = None) -> None:
        from stages.bound import _validate
        from stages.prior.tabular import check_dataset

        # columns: the target columns of the table prior.dataset names (a name, a list, or null: the figure's
        # default, default_columns[table] for the one-column figures, every column for the single-column one)
        self.columns_wanted = None if columns is None else ([columns] if isinstance(columns, str) else list(columns))
        if self.columns_wanted is not None and not self.columns_wanted:
            raise ValueError("columns must name at least one column (or be null for the figure's default), got [].")
        self.default_columns = {str(k): v for k, v in dict(default_columns or {}).items()}
        for name in self.default_columns:
            check_dataset(name, "default_columns")
        self.ci_level = float(_validate.probability("ci_level", ci_level, open_low=True, open_high=True))

    # -- the points of one sweep combination (pipeline.sweeper): one game each ---------------------
    def table(self, cfg: DictConfig) -> tuple[str, dict[str, int]]:
        """(prior.dataset, its columns and their sizes from its domain file)."""
        from stages.prior.tabular import check_dataset, read_domain

        dataset = str(cfg.prior.dataset)
        check_dataset(dataset, "prior.dataset")
        return dataset, read_domain(dataset, cfg.get("data_dir"))

    def selected(self, cfg: DictConfig, one: bool) -> list[str]:
        """The target columns of the figure on prior.dataset's table, checked against its domain file."""
        from stages.prior.tabular import column_indices

        dataset, domain = self.table(cfg)
        wanted = self.columns_wanted
        if wanted is None:
            default = self.default_columns.get(dataset)
            if default is None and one:
                raise ValueError(f"figure.columns must name the target column of {dataset} for {self.name} (no default "
                                 f"for that table), e.g. figure.columns={next(iter(domain))}.")
            wanted = list(domain) if default in (None, "all") else ([default] if isinstance(default, str) else list(default))
        column_indices(list(domain), wanted, "figure.columns")
        if one and len(wanted) != 1:
            raise ValueError(f"figure.columns must name one column for {self.name}, got {wanted}.")
        return wanted

    levels = tuple(_CONFIDENCE_COLUMNS)

    def boxes(self, cfg: DictConfig):
        return {"prior": ("BayNetPrior", "baynet"), "mechanism": ("NoisyMarginals", "noisy_marginals")}

    @abstractmethod
    def x(self, cfg: DictConfig):
        """The point's position on the figure's x axis."""

    # -- one game job's rows ---------------------------------------------------------------------
    def rows(self, cfg: DictConfig, metrics: Mapping) -> list[dict]:
        """One row per attack of the point's game (the attack, then its variants, as metrics.json lists them)."""
        n = int(cfg.prior.n_records)  # successes lie in [0, n]: the intervals are clipped to it
        targets = list(cfg.prior.targets)
        epsilon = _epsilon(cfg.mechanism.epsilon)
        distance = OmegaConf.select(cfg, "metric.distance", default=0) or 0
        prior_mean, prior_low, prior_high = mean_interval(metrics["prior_successes"], self.ci_level, bounds=(0, n))
        release = metrics.get("release") or {}
        known = OmegaConf.select(cfg, "prior.known")
        rows = []
        for label, attack in metrics["attacks"].items():  # the game's order: the attack, then its variants
            mean, low, high = mean_interval(attack["successes"], self.ci_level, bounds=(0, n))
            bound, exceed = attack.get("bound"), attack.get("exceed")
            theorem = (attack.get("bound_theorem") or {}).get("theorem") if bound is not None else "none (not private)"
            rows.append({
                "dataset": str(cfg.prior.dataset), "column": "+".join(targets), "m": len(targets),
                "n_known": None if known is None else len(known),
                "epsilon": _epsilon_label(epsilon), "distance": int(distance),
                "objective": label, "decode": _decode(cfg),
                "trials": len(attack["successes"]),
                "attack_mean": mean, "attack_ci_low": low, "attack_ci_high": high,
                "prior_mean": prior_mean, "prior_ci_low": prior_low, "prior_ci_high": prior_high,
                "prior_expected": metrics["prior_expected_mean"],
                **{column: (float(np.mean(bound[confidence_key(c)])) if bound is not None else None)
                   for c, column in _CONFIDENCE_COLUMNS.items()},
                **{column: (exceed[confidence_key(c)] if exceed is not None else None) for c, column in _EXCEED_COLUMNS.items()},
                "bound_theorem": theorem, "n_records": n, "delta": float(cfg.mechanism.delta),
                "noise_scale": (release.get("noise_scale") or [None])[0],
                "n_marginals": (release.get("n_marginals") or [None])[0],
                "x": self.x(cfg),
            })
        return rows

    # -- the figure ----------------------------------------------------------------------------
    @classmethod
    def plot_rows(cls, rows: list[dict], path, x_label: str, panel_key: str, numeric_x: bool) -> Path:
        panels = group_rows(rows, panel_key)
        fig, axes = subplots(len(panels), width=min(8.0, max(4.4, 0.45 * max(len(group_rows(v, "x")) for v in panels.values()))))
        markers = {"noise_aware": "o", "plain": "^", "posterior": "D"}
        for ax, (name, members) in zip(axes, panels.items()):
            xs = list(dict.fromkeys(r["x"] for r in members))
            if numeric_x:
                xs.sort(key=lambda v: math.inf if str(v) == "inf" else float(v))
            pos = {x: i for i, x in enumerate(xs)}
            first = [next(r for r in members if r["x"] == x) for x in xs]
            at = np.arange(len(xs), dtype=float)
            value = lambda r, key: math.nan if r.get(key) in (None, "") else float(r[key])  # noqa: E731
            b50 = np.array([value(r, "bound_0.5") for r in first])
            ax.errorbar(at, b50, yerr=[b50 - np.array([value(r, "bound_0.05") for r in first]),
                                       np.array([value(r, "bound_0.95") for r in first]) - b50],
                        fmt="_", color="k", capsize=4, markersize=10, label="bound (conf. 0.05 / 0.5 / 0.95)")
            for i, r in enumerate(first):
                if r.get("bound_0.5") in (None, ""):  # eps = inf: not private, no bound
                    ax.annotate("no bound\n(not private)", (at[i], 0), fontsize=6, ha="center", va="bottom", color="0.3")
            ax.plot(at, [float(r["prior_mean"]) for r in first], "s", color="0.5", label="prior only")
            for k, (objective, series) in enumerate(group_rows(members, "objective").items()):
                series = sorted(series, key=lambda r: pos[r["x"]])
                decodes = "/".join(dict.fromkeys(_DECODE_LABELS.get(str(r.get("decode")), str(r.get("decode")))
                                                  for r in series))
                x = np.array([pos[r["x"]] for r in series], dtype=float) + 0.15 * (k + 1)
                mean = np.array([float(r["attack_mean"]) for r in series])
                low = np.nan_to_num(mean - np.array([float(r["attack_ci_low"]) for r in series]))
                high = np.nan_to_num(np.array([float(r["attack_ci_high"]) for r in series]) - mean)
                ax.errorbar(x, mean, yerr=[low, high], fmt=markers.get(objective, "o"), capsize=2,
                            label=("Bayes posterior (Gibbs)" if objective == "posterior" else
                                   f"RAP M-AI ({objective}, {decodes})"))
            ax.set_xticks(at, [str(x) for x in xs], rotation=60 if not numeric_x else 0, fontsize=7)
            # every point's series beside its tick (a panel of one column is not stretched over the offsets)
            ax.set_xlim(-0.5, len(xs) - 0.5 + 0.15 * len(group_rows(members, "objective")))
            ax.set_xlabel(x_label)
            ax.set_title(str(name), fontsize=9)
            ax.set_ylim(0, None)
            ax.grid(alpha=0.3)
        sizes = "/".join(sorted({str(r.get("n_records", "?")) for r in rows}))
        trials = "/".join(sorted({str(r.get("trials", "?")) for r in rows}))
        theorems = "; ".join(sorted({str(r.get("bound_theorem")) for r in rows if r.get("bound_theorem")}))
        deltas = "/".join(sorted({f"{float(r['delta']):g}" for r in rows if r.get("delta") not in (None, "")}))
        note = (f"{trials} trials a point; intervals: 95% t-intervals over the trials, clipped to [0, {sizes}]; "
                f"delta = {deltas or '-'}; bound: {theorems or '-'}")
        return finish(fig, axes, f"records reconstructed (of {sizes})", path, note=note)


#: How each decode reads in a legend (stages.attack.rap.RAPAttack.decode).
_DECODE_LABELS = {"joint": "joint MAP decode", "per_column": "per-column argmax decode",
                  "best_window": "best-window decode, per column"}


def _decode(cfg: DictConfig) -> str:
    """The decode the point's attack used: attack.decode for exact match; a distance window (metric=within) is
    decoded per column, as the window holding the most relaxed mass, whatever attack.decode says
    (stages.attack.rap.RAPAttack.decode)."""
    exact = str(OmegaConf.select(cfg, "metric._target_", default="")).rsplit(".", 1)[-1] == "Exact"
    return str(OmegaConf.select(cfg, "attack.decode", default="joint")) if exact else "best_window"


def _by_column(rows: list[dict]) -> list[dict]:
    return [{**r, "panel": f"{r['dataset']}, {r['column']}"} for r in rows]


def _epsilon(value) -> float:
    from stages.mechanism.noisy_marginals import _epsilon as parse

    return parse(value)


class TabularSingleColumn(_Tabular):
    """Fig. recon_1col: each column (figure.columns, default every one) as the lone target, every other column known."""

    name = "tabular_single_column"
    columns = COLUMNS

    def points(self, cfg):
        return [{"prior.targets": [c], "prior.known": None} for c in self.selected(cfg, one=False)]

    def x(self, cfg):
        return "+".join(cfg.prior.targets)

    @staticmethod
    def plot(rows, path):
        return _Tabular.plot_rows(rows, path, "target column (eps = {})".format(rows[0]["epsilon"] if rows else ""),
                                  "dataset", numeric_x=False)


class TabularEpsilon(_Tabular):
    """Fig. recon_1col_multeps: one column per table; the sweep's mechanism.epsilon values (same records and
    noise draws within a trial)."""

    name = "tabular_epsilon"
    columns = TabularSingleColumn.columns

    def points(self, cfg):
        return [{"prior.targets": self.selected(cfg, one=True), "prior.known": None}]

    def x(self, cfg):
        return _epsilon_label(_epsilon(cfg.mechanism.epsilon))

    @staticmethod
    def plot(rows, path):
        deltas = "/".join(sorted({f"{float(r['delta']):g}" for r in rows if r.get("delta") not in (None, "")}))
        return _Tabular.plot_rows(_by_column(rows), path, f"epsilon (delta = {deltas or '-'})", "panel", numeric_x=True)


class TabularMultiColumn(_Tabular):
    """Fig. recon_multicol: first n_known visit-order columns known; targets the next m; the rest unknown."""

    name = "tabular_multi_column"
    columns = _columns_with("m")

    def __init__(self, n_known: int = 3, max_targets: int | None = None, ci_level: float = 0.95) -> None:
        from stages.bound import _validate

        super().__init__(None, ci_level)
        self.n_known = _validate.integer("n_known", n_known, minimum=1)
        self.max_targets = None if max_targets is None else _validate.integer("max_targets", max_targets, minimum=1)

    def points(self, cfg):
        from hydra.utils import instantiate

        from pipeline.cache import StageCache

        dataset, domain = self.table(cfg)
        # the table's network (its visit order picks the targets; a cached stage); any column serves as target
        prior_cfg = OmegaConf.to_container(cfg.prior, resolve=True)
        prior = instantiate({**prior_cfg, "targets": [next(iter(domain))], "known": None}, _convert_="all")
        prior.use_cache(StageCache(cfg.cache_dir).get_or_compute)
        network = prior.network
        order = [network.columns[j] for j in network.order]
        if self.n_known >= len(order):
            raise ValueError(f"figure.n_known must be below the {len(order)} columns of {dataset}, got {self.n_known}.")
        known = order[:self.n_known]
        top = len(order) - self.n_known if self.max_targets is None else min(self.max_targets, len(order) - self.n_known)
        return [{"prior.targets": order[self.n_known:self.n_known + m], "prior.known": known} for m in range(1, top + 1)]

    def check_point(self, cfg):
        if OmegaConf.select(cfg, "prior.known") is None:
            raise ValueError(f"prior.known must name the known columns of a point of {self.name} (the first "
                             f"figure.n_known of the network's visit order), got null; `python -m pipeline -m "
                             f"experiment={self.name}` plays every point.")

    def x(self, cfg):
        return len(cfg.prior.targets)

    @staticmethod
    def plot(rows, path):
        known = "/".join(sorted({str(r.get("n_known")) for r in rows if r.get("n_known") not in (None, "")}))
        return _Tabular.plot_rows(rows, path, f"target columns m (visit order; {known or '?'} known)", "dataset",
                                  numeric_x=True)


class TabularApproximate(_Tabular):
    """Fig. recon_approx: one ordinal column per table, success = |X - z| <= E for E = 0 .. domain - 1."""

    name = "tabular_approximate"
    columns = _columns_with("distance")

    def points(self, cfg):
        column = self.selected(cfg, one=True)
        size = self.table(cfg)[1][column[0]]
        return [{"prior.targets": column, "prior.known": None, "metric": "within", "metric.distance": e}
                for e in range(size)]

    def x(self, cfg):
        return int(OmegaConf.select(cfg, "metric.distance", default=0) or 0)

    @staticmethod
    def plot(rows, path):
        return _Tabular.plot_rows(_by_column(rows), path, "within distance E", "panel", numeric_x=True)
