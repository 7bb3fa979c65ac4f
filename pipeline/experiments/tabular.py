"""The tabular case study (paper appendix "Bounding Tabular Data Reconstruction from Noisy Marginals").

Four experiments, one Task each (conf/experiment/tabular_*.yaml), on the boxes prior=baynet,
mechanism=noisy_marginals and attack=rap:

* `TabularSingleColumn` (Fig. recon_1col): every column of each dataset as the lone target, eps = 1;
* `TabularEpsilon` (Fig. recon_1col_multeps): one column per dataset over a grid of eps (inf included),
  the same records and the same standard-normal noise draws across eps within a trial;
* `TabularMultiColumn` (Fig. recon_multicol): the first `n_known` columns of the network's visit order
  known, every other column unknown (so the release and the noise are the same for every m), success =
  the next m visit-order columns all right, m = 1 .. d - n_known;
* `TabularApproximate` (Fig. recon_approx): one ordinal column, success = within E, E = 0 .. domain - 1.

Tables: `task.datasets` ({table: target columns}) plays exactly the tables it names; null plays the table
`prior.dataset` names, else the stand-ins acs and fire, each with its `task.default_targets` entry (else
every column). Names are those of stages.prior.tabular.DATASETS (the stand-ins and the paper's tables that
`python -m pipeline.data fetch` writes, e.g. acs/recon-synth); the columns are those of the table's domain
file, checked before any work. The guess is the attack's `decode` of its relaxed table (attack.decode:
joint, the default, or per_column; see stages.attack.rap).

Every point of a figure is one game of the one engine (pipeline.game.compute_metrics) on the boxes
prior=baynet (with the point's table, targets and known columns), mechanism=noisy_marginals (its epsilon) and
attack=rap (task.objectives: the first is the attack, the others are scored on the same releases as its
variants), with the job's metric or metric=within at the point's distance: the task only lists the points
(`point_config`), and turns each game's metrics.json into rows and the figure. Any point is therefore also
`python -m pipeline prior=baynet mechanism=noisy_marginals attack=rap prior.dataset=.. prior.targets=[..]
...`, with the same numbers. The engine samples `prior.n_records` fresh records per trial, releases the
noisy marginals (a cached stage), runs the attack's relaxation once per release (cached: the multi-column
and within-distance points share it) and scores every attack and the prior-only baseline z* (the joint MAP
of the targets given the known columns, or the best window); the bound is the bound box's (one_run) count
for each trial's per-record law, and every row names its theorem (`bound_theorem`). At eps = inf the exact
marginals have no privacy guarantee: no bound ("none (not private)").

Objectives (task.objectives): `noise_aware` and `plain` are RAP's (stages.attack.rap); `posterior` is the
reference attack of issue 16 item 4 (stages.attack.posterior.PosteriorAttack: Gibbs sampling of the target
column's Bayes posterior given the release and the BayNet prior; one target, every other column known;
settings in task.posterior: sweeps, burn_in, seed, exact_scale). It is never a default.
"""
from __future__ import annotations

from abc import abstractmethod
import logging
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from omegaconf import DictConfig, OmegaConf

from pipeline.experiments.common import Task, finish, group_rows, mean_interval, subplots

__all__ = ["TabularSingleColumn", "TabularEpsilon", "TabularMultiColumn", "TabularApproximate"]

log = logging.getLogger(__name__)

#: The objectives beside RAP's (stages.attack.rap.OBJECTIVES): the Gibbs posterior reference attack.
EXTRA_OBJECTIVES = ("posterior",)
_CONFIDENCE_COLUMNS = {0.05: "bound_0.05", 0.5: "bound_0.5", 0.95: "bound_0.95"}
_EXCEED_COLUMNS = {0.05: "exceed_0.05", 0.5: "exceed_0.5", 0.95: "exceed_0.95"}


#: The single-column table's columns; the multi-column and approximate tables add m or distance after `column`.
COLUMNS = ("dataset", "column", "epsilon", "objective", "trials", "attack_mean", "attack_ci_low", "attack_ci_high",
           "prior_mean", "prior_expected", "bound_0.05", "bound_0.5", "bound_0.95", "exceed_0.05", "exceed_0.5",
           "exceed_0.95", "bound_theorem", "n_records", "delta", "noise_scale", "n_marginals")


def _columns_with(key: str) -> tuple[str, ...]:
    return COLUMNS[:2] + (key,) + COLUMNS[2:]


def _epsilon_label(eps: float) -> str:
    return "inf" if math.isinf(eps) else f"{eps:g}"


class _Tabular(Task):
    """The shared trial loop; subclasses say which (dataset, targets, known, eps, metric) points to play."""

    plays_games = False
    groups = ("prior", "mechanism", "attack", "metric", "bound")
    x_key = "column"
    x_label = "target column"

    #: The tables played when neither task.datasets nor prior.dataset names one: the stand-ins.
    DEFAULT_TABLES = ("acs", "fire")

    def __init__(self, datasets: Mapping | None = None, objectives: Sequence[str] = ("noise_aware", "plain"),
                 ci_level: float = 0.95, default_targets: Mapping | None = None,
                 posterior: Mapping | None = None) -> None:
        from stages.attack.rap import OBJECTIVES
        from stages.bound import _validate
        from stages.prior.tabular import check_dataset

        # datasets: table -> target columns ("all", a column, a list), exactly the tables played; None: the
        # table of prior.dataset, else DEFAULT_TABLES, each with its default_targets entry (else "all").
        self.datasets = None if datasets is None else {str(k): v for k, v in dict(datasets).items()}
        if self.datasets is not None and not self.datasets:
            raise ValueError("datasets must name at least one dataset (or be null for the defaults), got none.")
        for name in self.datasets or {}:
            check_dataset(name, "datasets")
        self.default_targets = {str(k): v for k, v in dict(default_targets or {}).items()}
        for name in self.default_targets:
            check_dataset(name, "default_targets")
        self.selected: dict = {}
        self.objectives = [str(o) for o in objectives]
        allowed = list(OBJECTIVES) + list(EXTRA_OBJECTIVES)
        if not self.objectives or any(o not in allowed for o in self.objectives):
            raise ValueError(f"objectives must list some of {allowed}, got {list(objectives)}.")
        # settings of the posterior objective (stages.attack.posterior.PosteriorAttack: sweeps, burn_in, seed,
        # exact_scale); checked now, used only when objectives lists posterior
        self.posterior = {str(k): v for k, v in dict(posterior or {}).items()}
        from stages.attack.posterior import PosteriorAttack
        PosteriorAttack(**self.posterior)
        self.ci_level = float(_validate.probability("ci_level", ci_level, open_low=True, open_high=True))

    # -- what to play ------------------------------------------------------------------------
    @abstractmethod
    def settings(self, dataset: str, network, epsilon: float) -> list[dict]:
        """Attack settings of one dataset at mechanism.epsilon: {targets, known, epsilon, points: [{x, distance}]}."""

    def select(self, prior_dataset, data_dir) -> dict:
        """The tables to play and their target columns, checked against each table's domain file."""
        from stages.prior.tabular import check_dataset, column_indices, read_domain

        if prior_dataset is not None:
            check_dataset(prior_dataset, "prior.dataset")
        if self.datasets is not None:
            selected = dict(self.datasets)
            if prior_dataset is not None and list(selected) != [prior_dataset]:
                raise ValueError(f"prior.dataset={prior_dataset} and task.datasets (tables {', '.join(selected)}) "
                                 f"disagree; name the table in one of them (task.datasets also names its columns).")
        else:
            names = [prior_dataset] if prior_dataset is not None else list(self.DEFAULT_TABLES)
            selected = {name: self.default_targets.get(name, "all") for name in names}
        for name, wanted in selected.items():
            if wanted in (None, "all"):
                continue
            columns = list(read_domain(name, data_dir))
            column_indices(columns, [wanted] if isinstance(wanted, str) else list(wanted), f"datasets.{name}")
        return selected

    def one_column(self, dataset: str, network) -> list[str]:
        column = _columns(network, self.selected[dataset], dataset)
        if len(column) != 1:
            raise ValueError(f"datasets.{dataset} must name one column for {self.name}, got {column}.")
        return column

    # -- the points, each one game of the one engine (pipeline.game) ---------------------------
    def _attack_settings(self, attack_cfg: Mapping) -> dict:
        """The attack of task.objectives: the first RAP objective is the attack (attack.objective) and the others,
        the posterior reference attack included, are scored on the same releases (attack.compare); objectives of
        the posterior alone make it the attack."""
        from stages.attack.rap import OBJECTIVES

        posterior = {**dict(attack_cfg.get("posterior") or {}), **self.posterior}
        rap = [o for o in self.objectives if o in OBJECTIVES]
        if not rap:
            return {"_target_": "stages.attack.posterior.PosteriorAttack", **posterior,
                    "decode": attack_cfg.get("decode", "joint")}
        return {**attack_cfg, "objective": rap[0], "compare": [o for o in self.objectives if o != rap[0]],
                "posterior": posterior}

    def point_config(self, cfg: DictConfig, dataset: str, setting: Mapping, point: Mapping) -> DictConfig:
        """The game of one point: the job's config with the point's table, targets, known columns, epsilon and
        metric (`python -m pipeline prior=baynet mechanism=noisy_marginals attack=rap` with these overrides
        plays the same game)."""
        point_cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
        point_cfg.pop("task", None)
        point_cfg.prior.dataset = dataset
        point_cfg.prior.targets = list(setting["targets"])
        point_cfg.prior.known = None if setting["known"] is None else list(setting["known"])
        point_cfg.mechanism.epsilon = float(setting["epsilon"])
        point_cfg.attack = self._attack_settings(OmegaConf.to_container(cfg.attack, resolve=True))
        if point.get("distance") is not None:
            point_cfg.metric = {"_target_": "stages.metric.Within", "distance": int(point["distance"])}
        return point_cfg

    def run(self, cfg: DictConfig, output_dir: Path, cache, logger) -> dict:
        from hydra.utils import instantiate

        from pipeline.game import check_run_settings, compute_metrics
        from stages.mechanism.noisy_marginals import NoisyMarginals
        from stages.prior.tabular import read_domain

        _, trials, confidences = check_run_settings(cfg)
        missing = [c for c in _CONFIDENCE_COLUMNS if c not in [float(x) for x in confidences]]
        if missing:
            raise ValueError(f"confidences must include 0.05, 0.5 and 0.95 for the tabular figures, got "
                             f"{confidences.tolist()}.")
        prior_cfg = OmegaConf.to_container(cfg.prior, resolve=True)
        self._attack_settings(OmegaConf.to_container(cfg.attack, resolve=True))  # a bad objective: refused now
        self.selected = self.select(prior_cfg.get("dataset"), cfg.get("data_dir"))
        mech_cfg = OmegaConf.to_container(cfg.mechanism, resolve=True)
        epsilon = NoisyMarginals(mech_cfg["epsilon"], mech_cfg["delta"], mech_cfg["way"]).epsilon
        self.n_records, self.delta = int(prior_cfg["n_records"]), float(mech_cfg["delta"])
        self.decode = str(OmegaConf.select(cfg, "attack.decode", default="joint"))
        rows, cells, points = [], [], []
        for dataset in self.selected:
            # the table's network (its column order drives the multi-column points); any column serves as target
            first = next(iter(read_domain(dataset, cfg.get("data_dir"))))
            prior = instantiate({**prior_cfg, "dataset": dataset, "targets": [first], "known": None}, _convert_="all")
            if cache is not None:
                prior.use_cache(cache.get_or_compute)
            for setting in self.settings(dataset, prior.network, epsilon):
                for point in setting["points"]:
                    metrics, _, _ = compute_metrics(self.point_config(cfg, dataset, setting, point), cache)
                    rows.extend(self._rows(dataset, setting, point, metrics))
                    points.append({"dataset": dataset, "targets": list(setting["targets"]),
                                   "epsilon": _epsilon_label(setting["epsilon"]), "x": point["x"],
                                   "stage": metrics["stages"]["trials"].get("key"), "theorem": rows[-1]["bound_theorem"]})
                release = metrics.get("release") or {}
                cells.append({"dataset": dataset, "targets": setting["targets"],
                              "epsilon": _epsilon_label(setting["epsilon"]),
                              "noise_scale": (release.get("noise_scale") or [None])[0],
                              "n_marginals": (release.get("n_marginals") or [None])[0]})
        return {"table": rows, "headline": self.headline(rows), "settings": cells, "points": points, "trials": trials,
                "n_records": self.n_records, "datasets": self.selected, "decode": self.decode}

    def _rows(self, dataset, setting, point, metrics: Mapping) -> list[dict]:
        """One row per attack of the point's game (the attack, then its variants)."""
        n = self.n_records  # successes lie in [0, n]: the intervals are clipped to it
        prior_mean, prior_low, prior_high = mean_interval(metrics["prior_successes"], self.ci_level, bounds=(0, n))
        release = metrics.get("release") or {}
        rows = []
        for label, attack in sorted(metrics["attacks"].items(), key=lambda item: self.objectives.index(item[0])):
            mean, low, high = mean_interval(attack["successes"], self.ci_level, bounds=(0, n))
            bound, exceed = attack.get("bound"), attack.get("exceed")
            theorem = (attack.get("bound_theorem") or {}).get("theorem") if bound is not None else "none (not private)"
            rows.append({
                "dataset": dataset, "column": "+".join(setting["targets"]), "m": len(setting["targets"]),
                "epsilon": _epsilon_label(setting["epsilon"]), "distance": point.get("distance", 0) or 0,
                "objective": label, "decode": self.decode, "trials": len(attack["successes"]),
                "attack_mean": mean, "attack_ci_low": low, "attack_ci_high": high,
                "prior_mean": prior_mean, "prior_ci_low": prior_low, "prior_ci_high": prior_high,
                "prior_expected": metrics["prior_expected_mean"],
                **{column: (float(np.mean(bound[repr(c)])) if bound is not None else None)
                   for c, column in _CONFIDENCE_COLUMNS.items()},
                **{column: (exceed[repr(c)] if exceed is not None else None) for c, column in _EXCEED_COLUMNS.items()},
                "bound_theorem": theorem, "n_records": n, "delta": self.delta,
                "noise_scale": (release.get("noise_scale") or [None])[0],
                "n_marginals": (release.get("n_marginals") or [None])[0],
                "x": point["x"],
            })
        return rows

    def headline(self, rows: list[dict]) -> dict:
        return {f"{r['dataset']}/{r['column']}/eps={r['epsilon']}/E={r['distance']}/{r['objective']}/attack_mean":
                r["attack_mean"] for r in rows}

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
                x = np.array([pos[r["x"]] for r in series], dtype=float) + 0.15 * (k + 1)
                mean = np.array([float(r["attack_mean"]) for r in series])
                low = np.nan_to_num(mean - np.array([float(r["attack_ci_low"]) for r in series]))
                high = np.nan_to_num(np.array([float(r["attack_ci_high"]) for r in series]) - mean)
                ax.errorbar(x, mean, yerr=[low, high], fmt=markers.get(objective, "o"), capsize=2,
                            label=("Bayes posterior (Gibbs)" if objective == "posterior" else
                                   f"RAP M-AI ({objective}, {series[0].get('decode', 'per_column')} decode)"))
            ax.set_xticks(at, [str(x) for x in xs], rotation=60 if not numeric_x else 0, fontsize=7)
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


def _columns(network, wanted, dataset: str) -> list[str]:
    from stages.prior.tabular import column_indices

    if wanted in (None, "all"):
        return list(network.columns)
    wanted = [wanted] if isinstance(wanted, str) else list(wanted)
    column_indices(network.columns, wanted, f"datasets.{dataset}")
    return wanted


def _by_column(rows: list[dict]) -> list[dict]:
    return [{**r, "panel": f"{r['dataset']}, {r['column']}"} for r in rows]


def _epsilon(value) -> float:
    from stages.mechanism.noisy_marginals import _epsilon as parse

    return parse(value)


class TabularSingleColumn(_Tabular):
    """Fig. recon_1col: each column (or the listed ones) as the lone target, every other column known."""

    name = "tabular_single_column"
    columns = COLUMNS

    def settings(self, dataset, network, epsilon):
        return [{"targets": [c], "known": None, "epsilon": epsilon, "points": [{"x": c}]}
                for c in _columns(network, self.selected[dataset], dataset)]

    @staticmethod
    def plot(rows, path):
        return _Tabular.plot_rows(rows, path, "target column (eps = {})".format(rows[0]["epsilon"] if rows else ""),
                                  "dataset", numeric_x=False)


class TabularEpsilon(_Tabular):
    """Fig. recon_1col_multeps: one column per dataset over the eps grid (same records and noise draws)."""

    name = "tabular_epsilon"
    columns = TabularSingleColumn.columns

    def __init__(self, datasets: Mapping | None = None, epsilons: Sequence = (0.5, 1, 2, 3, 5, 10, "inf"),
                 objectives: Sequence[str] = ("noise_aware", "plain"), ci_level: float = 0.95,
                 default_targets: Mapping | None = None, posterior: Mapping | None = None) -> None:
        super().__init__(datasets, objectives, ci_level, default_targets, posterior)
        self.epsilons = [_epsilon(e) for e in epsilons]
        if not self.epsilons:
            raise ValueError("epsilons must list at least one value, got [].")

    def settings(self, dataset, network, epsilon):
        column = self.one_column(dataset, network)
        return [{"targets": column, "known": None, "epsilon": eps, "points": [{"x": _epsilon_label(eps)}]}
                for eps in self.epsilons]

    @staticmethod
    def plot(rows, path):
        deltas = "/".join(sorted({f"{float(r['delta']):g}" for r in rows if r.get("delta") not in (None, "")}))
        return _Tabular.plot_rows(_by_column(rows), path, f"epsilon (delta = {deltas or '-'})", "panel", numeric_x=True)


class TabularMultiColumn(_Tabular):
    """Fig. recon_multicol: first n_known visit-order columns known; targets the next m; the rest unknown."""

    name = "tabular_multi_column"
    columns = _columns_with("m")

    def __init__(self, datasets: Mapping | None = None, n_known: int = 3, max_targets: int | None = None,
                 objectives: Sequence[str] = ("noise_aware", "plain"), ci_level: float = 0.95,
                 default_targets: Mapping | None = None, posterior: Mapping | None = None) -> None:
        from stages.bound import _validate

        super().__init__(datasets, objectives, ci_level, default_targets, posterior)
        self.n_known = _validate.integer("n_known", n_known, minimum=1)
        self.max_targets = None if max_targets is None else _validate.integer("max_targets", max_targets, minimum=1)

    def settings(self, dataset, network, epsilon):
        order = [network.columns[j] for j in network.order]
        if self.n_known >= len(order):
            raise ValueError(f"n_known must be below the {len(order)} columns of {dataset}, got {self.n_known}.")
        known = order[:self.n_known]
        top = len(order) - self.n_known if self.max_targets is None else min(self.max_targets, len(order) - self.n_known)
        return [{"targets": order[self.n_known:self.n_known + m], "known": known, "epsilon": epsilon,
                 "points": [{"x": m}]} for m in range(1, top + 1)]

    @staticmethod
    def plot(rows, path):
        return _Tabular.plot_rows(rows, path, "target columns m (visit order; 3 known)", "dataset", numeric_x=True)


class TabularApproximate(_Tabular):
    """Fig. recon_approx: one ordinal column per dataset, success = |X - z| <= E for E = 0 .. domain - 1."""

    name = "tabular_approximate"
    columns = _columns_with("distance")

    def settings(self, dataset, network, epsilon):
        column = self.one_column(dataset, network)
        size = network.domain[network.columns.index(column[0])]
        return [{"targets": column, "known": None, "epsilon": epsilon,
                 "points": [{"x": e, "distance": e} for e in range(size)]}]

    @staticmethod
    def plot(rows, path):
        return _Tabular.plot_rows(_by_column(rows), path, "within distance E", "panel", numeric_x=True)
