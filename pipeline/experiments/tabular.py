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

Each trial samples `prior.n_records` fresh records from the BayNet, releases the noisy marginals,
runs the attack under each objective and scores it; the prior-only baseline scores the a-priori
guess z* (the joint MAP of the targets given the known columns, or the best window) on the same
records; the bound is the one_run box's count (OneRunBound.counts) with the mechanism's GaussianDP(mu) profile and
the records' own prior successes p_i, and every row names the theorem behind its numbers
(`bound_theorem`, as the one_run bound box names it: OneRunBound.theorem_for). At eps = inf the marginals are
exact and the bound is every record (EXACT_THEOREM).

Objectives (task.objectives): `noise_aware` and `plain` are RAP's (stages.attack.rap); `posterior` is the
reference attack of issue 16 item 4 (stages.attack.posterior.PosteriorAttack: Gibbs sampling of the target
column's Bayes posterior given the release and the BayNet prior; one target, every other column known;
settings in task.posterior: sweeps, burn_in, seed, exact_scale). It is never a default.

Stages (pipeline.cache): `baynet` (the fit, keyed by the table's content hash and the fit settings)
and `tabular_trial` (one trial's records and the attack's relaxed target columns per objective, keyed
by everything that determines them), so a rerun or a longer sweep reuses what is done; `tabular_posterior`
(the posterior attack's table, keyed as the trial's release plus its settings, so adding it reuses the trial).
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

__all__ = ["TabularSingleColumn", "TabularEpsilon", "TabularMultiColumn", "TabularApproximate", "fit_stage"]

log = logging.getLogger(__name__)

FIT_STAGE_VERSION = 1
TRIAL_STAGE_VERSION = 1
POSTERIOR_STAGE_VERSION = 1
#: The objectives beside RAP's (stages.attack.rap.OBJECTIVES): the Gibbs posterior reference attack.
EXTRA_OBJECTIVES = ("posterior",)
_CONFIDENCE_COLUMNS = {0.05: "bound_0.05", 0.5: "bound_0.5", 0.95: "bound_0.95"}
_EXCEED_COLUMNS = {0.05: "exceed_0.05", 0.5: "exceed_0.5", 0.95: "exceed_0.95"}
#: The bound_theorem of a setting at eps = inf: the exact marginals reveal every record.
EXACT_THEOREM = "none: exact marginals (eps = inf), every record can be reconstructed"


def fit_stage(cache, prior_cfg: Mapping, data_dir):
    """The BayNet of prior_cfg fitted to its dataset, through the `baynet` stage of the cache."""
    from stages.prior.baynet import BayesNet, fit_network
    from stages.prior.tabular import load_table

    table = load_table(str(prior_cfg["dataset"]), data_dir)
    settings = {"structure": prior_cfg["structure"], "degree": int(prior_cfg["degree"]),
                "root": prior_cfg.get("root"), "seed": int(prior_cfg["seed"])}
    config = {"stage": "baynet", "version": FIT_STAGE_VERSION, "table": table.content_hash(), **settings}
    if cache is None:
        return fit_network(table, **settings)
    path = cache.get_or_compute("baynet", config, lambda directory: fit_network(table, **settings).save(directory))
    return BayesNet.load(path)


def _epsilon_label(eps: float) -> str:
    return "inf" if math.isinf(eps) else f"{eps:g}"


class _Tabular(Task):
    """The shared trial loop; subclasses say which (dataset, targets, known, eps, metric) points to play."""

    plays_games = False
    groups = ("prior", "mechanism", "attack", "metric")  # the bound is count_bound itself (bound_theorem names it)
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

    # -- the trial loop ----------------------------------------------------------------------
    def run(self, cfg: DictConfig, output_dir: Path, cache, logger) -> dict:
        from stages.attack.posterior import PosteriorAttack
        from stages.attack.rap import RAPAttack
        from stages.bound import _validate
        from stages.mechanism.noisy_marginals import NoisyMarginals

        seed = _validate.integer("seed", cfg.seed, minimum=0)
        trials = _validate.integer("trials", cfg.trials, minimum=1)
        confidences = [float(c) for c in _validate.confidence("confidences", list(cfg.confidences))]
        missing = [c for c in _CONFIDENCE_COLUMNS if c not in confidences]
        if missing:
            raise ValueError(f"confidences must include 0.05, 0.5 and 0.95 for the tabular figures, got {confidences}.")
        prior_cfg = OmegaConf.to_container(cfg.prior, resolve=True)
        mech_cfg = OmegaConf.to_container(cfg.mechanism, resolve=True)
        attack_cfg = OmegaConf.to_container(cfg.attack, resolve=True)
        for group, conf, target in (("prior", prior_cfg, "BayNetPrior"), ("mechanism", mech_cfg, "NoisyMarginals"),
                                    ("attack", attack_cfg, "RAPAttack")):
            if not str(conf.get("_target_", "")).endswith(target):
                raise ValueError(f"{group} must be the tabular box {target} for experiment {self.name}, "
                                 f"got {conf.get('_target_')}; drop the {group}= override.")
        # Build every box once now, so a bad value fails before any work.
        attacks = {o: RAPAttack(attack_cfg["steps"], attack_cfg["learning_rate"], o, attack_cfg.get("decode", "joint"))
                   if o != "posterior" else PosteriorAttack(**self.posterior, decode=attack_cfg.get("decode", "joint"))
                   for o in self.objectives}
        self.decode = attacks[self.objectives[0]].decode_mode
        self.selected = self.select(prior_cfg.get("dataset"), cfg.get("data_dir"))
        epsilon = NoisyMarginals(mech_cfg["epsilon"], mech_cfg["delta"], mech_cfg["way"]).epsilon
        n_records = _validate.integer("prior.n_records", prior_cfg["n_records"], minimum=1)
        self.n_records, self.delta = n_records, float(mech_cfg["delta"])
        metric_cfg = OmegaConf.to_container(cfg.metric, resolve=True)

        rows, cells = [], []
        for dataset in self.selected:
            network = fit_stage(cache, {**prior_cfg, "dataset": dataset}, cfg.get("data_dir"))
            for setting in self.settings(dataset, network, epsilon):
                mechanism = NoisyMarginals(setting["epsilon"], mech_cfg["delta"], mech_cfg["way"])
                results = [self._trial(cache, network, dataset, prior_cfg, setting, mechanism, attacks, metric_cfg,
                                       seed, t, trials, n_records, confidences) for t in range(trials)]
                for p_index, point in enumerate(setting["points"]):
                    rows.extend(self._rows(dataset, setting, point, [r[p_index] for r in results], network))
                cells.append({"dataset": dataset, "targets": setting["targets"], "epsilon": _epsilon_label(setting["epsilon"]),
                              "noise_scale": results[0][0]["noise_scale"], "n_marginals": results[0][0]["n_marginals"]})
        return {"table": rows, "headline": self.headline(rows), "settings": cells, "trials": trials,
                "n_records": n_records, "datasets": self.selected, "decode": attacks[self.objectives[0]].decode_mode}

    def _trial(self, cache, network, dataset, prior_cfg, setting, mechanism, attacks, metric_cfg, seed, t, trials,
               n_records, confidences) -> list[dict]:
        """Play trial t of a setting: per point, {objective: successes}, prior successes, Sigma p_i and the bound."""
        from pipeline.cache import load_arrays, save_arrays
        from stages.bound.box import set_valued_success
        from stages.bound.one_run import OneRunBound

        box = OneRunBound()
        from stages.metric import Within
        from stages.prior.baynet import BayNetPrior

        prior = BayNetPrior.from_network(network, n_records, setting["targets"], setting["known"])
        records_seed, noise_seed = np.random.SeedSequence(seed).spawn(trials)[t].spawn(2)
        extra = {o: a for o, a in attacks.items() if o in EXTRA_OBJECTIVES}
        all_attacks, attacks = attacks, {o: a for o, a in attacks.items() if o not in EXTRA_OBJECTIVES}

        def compute(directory=None):
            X = prior.sample(np.random.default_rng(records_seed))
            release = mechanism.release(X, np.random.default_rng(noise_seed), network.domain, prior.known)
            marginals = network.conditional_marginals(prior.known, X[:, prior.known], prior.unknown)
            out = {"records": X, "noise_scale": np.float64(release.noise_scale),
                   "n_marginals": np.int64(release.n_marginals)}
            for objective, attack in attacks.items():
                relaxed, _ = attack.relaxed(release, prior.known, X[:, prior.known], network.domain, marginals)
                out[f"relaxed_{objective}"] = relaxed  # every column: the targets only select from it
            if directory is not None:
                save_arrays(directory, **out)
            return out

        # The targets are not part of the key: they only select columns from the attack's relaxed table,
        # so the multi-column figure plays one release and one attack per trial for every m.
        config = {"stage": "tabular_trial", "version": TRIAL_STAGE_VERSION, "network": _network_key(network),
                  "dataset": dataset, "known": list(prior.known),
                  "n_records": n_records, "epsilon": _epsilon_label(mechanism.epsilon), "delta": mechanism.delta,
                  "way": mechanism.way, "seed": seed,
                  # decode reads the stored relaxed table after the stage: not part of the key
                  "attacks": {o: {k: v for k, v in a.params().items() if k != "decode"} for o, a in attacks.items()},
                  "trial": t}  # child t of SeedSequence(seed) does not depend on how many trials there are
        stored = load_arrays(cache.get_or_compute("tabular_trial", config, compute)) if cache is not None else compute()
        X = stored["records"]
        stored = dict(stored)
        for objective, attack in extra.items():
            def compute_extra(directory=None, attack=attack, objective=objective):
                # the trial's release again: the same records and the same noise draws
                release = mechanism.release(X, np.random.default_rng(noise_seed), network.domain, prior.known)
                marginals = network.conditional_marginals(prior.known, X[:, prior.known], prior.unknown)
                relaxed, _ = attack.relaxed(release, prior.known, X[:, prior.known], network.domain, marginals)
                out = {f"relaxed_{objective}": relaxed}
                if directory is not None:
                    save_arrays(directory, **out)
                return out

            extra_config = {**{k: v for k, v in config.items() if k != "attacks"}, "stage": f"tabular_{objective}",
                            "version": POSTERIOR_STAGE_VERSION,
                            "attack": {k: v for k, v in attack.params().items() if k != "decode"}}
            got = (load_arrays(cache.get_or_compute(f"tabular_{objective}", extra_config, compute_extra))
                   if cache is not None else compute_extra())
            stored[f"relaxed_{objective}"] = got[f"relaxed_{objective}"]
        attacks = all_attacks
        out = []
        for point in setting["points"]:
            distance = point.get("distance")
            metric = Within(distance) if distance is not None else _metric(metric_cfg)
            trial_prior = prior.given_known(X, metric)
            successes = {}
            for objective, attack in attacks.items():
                z = attack.decode(stored[f"relaxed_{objective}"], prior.targets, metric, network=network,
                                  known=prior.known, known_values=X[:, prior.known],
                                  prior_marginals=trial_prior.marginals)
                successes[objective] = int(prior.score(X, z, metric).sum())
            if mechanism.exact:
                bound = {c: n_records for c in confidences}
                theorem = EXACT_THEOREM
            else:
                # the one_run box's theorem for the records' own priors: a window of several values is
                # set-valued success (collision probability taken as 0, valid for every prior: THEORY.md)
                widest = max(prior.targets, key=lambda tgt: set_valued_success(metric, 1, network.domain[tgt]))
                info = box.theorem_for(mechanism.profile, metric, 1, network.domain[widest])
                bound = box.counts(mechanism.profile, trial_prior.prior_success, confidences, info)
                theorem = info["theorem"]
            out.append({"attack": successes, "prior": int(prior.score(X, trial_prior.guess, metric).sum()),
                        "prior_expected": float(trial_prior.prior_success.sum()), "bound": bound,
                        "bound_theorem": theorem,
                        "noise_scale": float(stored["noise_scale"]), "n_marginals": int(stored["n_marginals"])})
        return out

    def _rows(self, dataset, setting, point, results, network) -> list[dict]:
        targets = list(setting["targets"])
        n = self.n_records  # successes lie in [0, n]: the intervals are clipped to it
        prior_mean, prior_low, prior_high = mean_interval([r["prior"] for r in results], self.ci_level, bounds=(0, n))
        bounds = {column: float(np.mean([r["bound"][c] for r in results])) for c, column in _CONFIDENCE_COLUMNS.items()}
        rows = []
        for objective in self.objectives:
            successes = [r["attack"][objective] for r in results]
            mean, low, high = mean_interval(successes, self.ci_level, bounds=(0, n))
            rows.append({
                "dataset": dataset, "column": "+".join(targets), "m": len(targets),
                "epsilon": _epsilon_label(setting["epsilon"]), "distance": point.get("distance", 0) or 0,
                "objective": objective, "decode": self.decode, "trials": len(results),
                "attack_mean": mean, "attack_ci_low": low, "attack_ci_high": high,
                "prior_mean": prior_mean, "prior_ci_low": prior_low, "prior_ci_high": prior_high,
                "prior_expected": float(np.mean([r["prior_expected"] for r in results])),
                **bounds,
                **{column: float(np.mean([s > r["bound"][c] for s, r in zip(successes, results)]))
                   for c, column in _EXCEED_COLUMNS.items()},
                "bound_theorem": "/".join(sorted({r["bound_theorem"] for r in results})), "n_records": n,
                "delta": self.delta,
                "noise_scale": results[0]["noise_scale"], "n_marginals": results[0]["n_marginals"],
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
            b50 = np.array([float(r["bound_0.5"]) for r in first])
            ax.errorbar(at, b50, yerr=[b50 - np.array([float(r["bound_0.05"]) for r in first]),
                                       np.array([float(r["bound_0.95"]) for r in first]) - b50],
                        fmt="_", color="k", capsize=4, markersize=10, label="bound (conf. 0.05 / 0.5 / 0.95)")
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


def _network_key(network) -> str:
    import hashlib

    h = hashlib.sha256(repr((network.columns, network.domain, network.parents, network.order)).encode())
    for cpt in network.cpts:
        h.update(np.ascontiguousarray(cpt).tobytes())
    return h.hexdigest()


def _metric(metric_cfg: Mapping):
    from stages.metric import Exact, Within

    target = str(metric_cfg.get("_target_", ""))
    if target.endswith("Within"):
        return Within(metric_cfg.get("distance", 1))
    if target.endswith("Exact"):
        return Exact()
    raise ValueError(f"metric must be exact or within for the tabular experiments, got {target!r}.")


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
    columns = ("dataset", "column", "epsilon", "objective", "trials", "attack_mean", "attack_ci_low", "attack_ci_high",
               "prior_mean", "prior_expected", "bound_0.05", "bound_0.5", "bound_0.95", "exceed_0.05", "exceed_0.5",
               "exceed_0.95", "bound_theorem", "n_records", "delta", "noise_scale",
               "n_marginals")

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
    columns = ("dataset", "column", "m", "epsilon", "objective", "trials", "attack_mean", "attack_ci_low",
               "attack_ci_high", "prior_mean", "prior_expected", "bound_0.05", "bound_0.5", "bound_0.95", "exceed_0.05", "exceed_0.5",
               "exceed_0.95", "bound_theorem", "n_records", "delta",
               "noise_scale", "n_marginals")

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
    columns = ("dataset", "column", "distance", "epsilon", "objective", "trials", "attack_mean", "attack_ci_low",
               "attack_ci_high", "prior_mean", "prior_expected", "bound_0.05", "bound_0.5", "bound_0.95", "exceed_0.05", "exceed_0.5",
               "exceed_0.95", "bound_theorem", "n_records", "delta",
               "noise_scale", "n_marginals")

    def settings(self, dataset, network, epsilon):
        column = self.one_column(dataset, network)
        size = network.domain[network.columns.index(column[0])]
        return [{"targets": column, "known": None, "epsilon": epsilon,
                 "points": [{"x": e, "distance": e} for e in range(size)]}]

    @staticmethod
    def plot(rows, path):
        return _Tabular.plot_rows(_by_column(rows), path, "within distance E", "panel", numeric_x=True)
