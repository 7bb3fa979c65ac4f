"""The LLM case study (paper Section 4): DP-SGD canaries with the Model Attack (Figure llm) and the PII prior's law.

* `LLMCanaries`: one job per (prior, epsilon, clip norm, learning rate, epochs) — the sweep of
  conf/experiment/llm_canaries.yaml. Each job plays `trials` games of Algorithm 1 with the
  `dpsgd` mechanism (every trial's release, the (n, m) log-probabilities, is a cached stage keyed by
  the model, the canaries' secrets, the trial's seed and the hyperparameters), records the Model
  Attack (prior x model), beside it the model-only guess and the Model Attack with its temperature
  fitted to the release without the secrets (stages.attack.model_attack), the prior-only baseline, the bound box's
  counts for the DP-SGD profile, and the idealized Gaussian Bayes-optimal attack on the same prior at
  the same epsilon (Appendix D; cheap, played in the job). Every bound number comes with the name of the
  theorem that produced it (`bound_theorem`), and the exceedance of the bound at every confidence is
  reported for every attack variant (`exceed_<c>`, `model_only_exceed_<c>`, `fitted_exceed_<c>`).
  The report keeps, per (prior, epsilon), the hyperparameters with the best mean Model-Attack success
  *on the selection half* of the trials (trials 0, 2, 4, ...) and reports that setting's success on the
  other half (`heldout_*`), so the choice does not use the secrets it is scored on; with one trial per
  job there is no other half, and the figure says the number is biased upward. A run without a privacy
  profile (clipping=none) has no epsilon, no bound and no idealized Gaussian: it is drawn as "not private".
* `PIILaw`: the PII prior's law over candidates (max, median, 10th percentile of the normalised
  scores) and its rows for Figures novel_bounds and eps_protect: the advantage bound over epsilon
  for those three canaries and eps_protect of the most probable one (paper: 2.37).
"""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Sequence

import numpy as np
from omegaconf import DictConfig

from pipeline.experiments.common import Task, attach_stage_cache, finish, grid, group_rows, mean_interval, panel, subplots

__all__ = ["LLMCanaries", "PIILaw", "attach_stage_cache"]

log = logging.getLogger(__name__)

RELEASE_STAGE_VERSION = 1
#: The confidences every LLM job reports (the figure's bound band and lines).
LEVELS = (0.05, 0.5, 0.95)


def _set_threads(threads: int | None) -> None:
    if threads is not None:
        import torch

        torch.set_num_threads(int(threads))


class LLMCanaries(Task):
    """Figure llm: DP-SGD fine-tuning on n new-token canaries, the Model Attack, the bound and the idealized Gaussian."""

    name = "llm_canaries"
    columns = ("prior_name", "model", "trainable", "private", "eps", "delta", "clip_norm", "learning_rate", "epochs",
               "noise_multiplier", "steps", "eps_add_remove", "eps_opacus_add_remove", "trials", "attack_mean",
               "attack_ci_low", "attack_ci_high", "select_trials", "select_mean", "heldout_trials", "heldout_mean",
               "heldout_ci_low", "heldout_ci_high", "model_only_mean", "fitted_mean", "fitted_temperature", "prior_mean",
               "bound_theorem", *(f"bound_{c:g}" for c in LEVELS), *(f"exceed_{c:g}" for c in LEVELS),
               *(f"model_only_exceed_{c:g}" for c in LEVELS), *(f"fitted_exceed_{c:g}" for c in LEVELS),
               "ideal_mean", "ideal_ci_low", "ideal_ci_high", "ideal_bound_theorem", "ideal_bound_0.95")
    represented = ("prior", "mechanism.epsilon", "mechanism.clip_norm", "mechanism.learning_rate", "mechanism.epochs")
    plays_games = True

    def __init__(self, ci_level: float = 0.95, ideal_trials: int = 200, keep_checkpoint: bool = False,
                 threads: int | None = None) -> None:
        from stages.bound import _validate

        self.ci_level = float(_validate.probability("ci_level", ci_level, open_low=True, open_high=True))
        self.ideal_trials = _validate.integer("ideal_trials", ideal_trials, minimum=1)
        self.keep_checkpoint = bool(keep_checkpoint)
        self.threads = None if threads is None else _validate.integer("threads", threads, minimum=1)

    def _release_config(self, cfg: DictConfig, mechanism, X: np.ndarray, trial: int, seed: int) -> dict:
        from omegaconf import OmegaConf

        mech_cfg = OmegaConf.to_container(cfg.mechanism, resolve=True)
        mech_cfg.pop("model", None)
        return {"stage": "dpsgd_release", "version": RELEASE_STAGE_VERSION, "model": mechanism.model.identity(),
                "mechanism": mech_cfg, "noise_multiplier": mechanism.noise_multiplier, "secrets": X.tolist(),
                "seed": seed, "trial": trial, "keep_checkpoint": self.keep_checkpoint}

    def run(self, cfg, output_dir, cache, logger) -> dict:
        from pipeline.cache import load_arrays, save_arrays
        from pipeline.game import ConfigError, Progress, build_boxes, check_run_settings
        from stages.attack.bayes_optimal import BayesOptimalAttack
        from stages.mechanism.dpsgd import DPSGDFineTuning
        from stages.mechanism.gaussian import GaussianMechanism

        _set_threads(self.threads)
        seed, trials, confidences = check_run_settings(cfg)
        for level in LEVELS:
            if level not in [float(c) for c in confidences]:
                raise ConfigError(f"confidences must include 0.05, 0.5 and 0.95 for {self.name}, got {list(confidences)}.")
        boxes = build_boxes(cfg)
        prior, mechanism, attack, metric = boxes.prior, boxes.mechanism, boxes.attack, boxes.metric
        if not isinstance(mechanism, DPSGDFineTuning) or not hasattr(attack, "model_only_guess"):
            raise ConfigError(f"experiment {self.name} needs mechanism=dpsgd and attack=model_attack, got "
                              f"{boxes.names()['mechanism']} and {boxes.names()['attack']}.")
        attach_stage_cache(prior, cache)
        k = attack.k
        z_star = np.asarray(prior.a_priori_guess(metric, k))
        from stages.attack.model_attack import ModelAttack

        # Beside the configured attack: the same attack with the temperature fitted to each release (no secrets).
        fitted_attack = ModelAttack(k, "fit")
        attack_s, model_only_s, prior_s, guesses, fitted_s, temperatures = [], [], [], [], [], []
        progress = Progress(trials, f"{self.name}: DP-SGD trainings")
        try:
            for t, child in enumerate(np.random.SeedSequence(seed).spawn(trials)):
                data_seed, mechanism_seed = child.spawn(2)
                X = prior.sample(np.random.default_rng(data_seed), prior.n_targets)

                def compute(directory: Path, X=X, mechanism_seed=mechanism_seed) -> None:
                    a = mechanism.release(X, np.random.default_rng(mechanism_seed))
                    rows = mechanism.last_rows if self.keep_checkpoint else {}
                    save_arrays(directory, release=a, **rows)

                config = self._release_config(cfg, mechanism, X, t, seed)
                a = load_arrays(cache.get_or_compute("dpsgd_release", config, compute))["release"]
                z = np.asarray(attack.guess(a, prior, mechanism, metric))
                attack_s.append(int(metric.score(X, z).sum()))
                model_only_s.append(int(metric.score(X, attack.model_only_guess(a, prior, metric)).sum()))
                fitted_s.append(int(metric.score(X, fitted_attack.guess(a, prior, mechanism, metric)).sum()))
                temperatures.append(fitted_attack.last_temperature)
                prior_s.append(int(metric.score(X, z_star).sum()))
                guesses.append(z)
                progress.step()
        finally:
            progress.close()
        guesses = np.stack(guesses)
        from pipeline.io import bound_column, exceed_column

        profile = mechanism.profile
        private = profile is not None
        privacy = mechanism.privacy()
        n = int(prior.n_targets)
        bound = theorem = ideal_bound = ideal_theorem = None
        ideal_s: list[int] = []
        if private:
            bound = {float(c): v for c, v in boxes.bound.compute(profile, prior, metric, guesses, confidences).items()}
            theorem = boxes.bound.theorem(profile, prior, metric, guesses)

            # The idealized Gaussian at the same epsilon and prior (Bayes-optimal attack): the ceiling.
            ideal = GaussianMechanism(epsilon=mechanism.epsilon or privacy["epsilon_replace_one"],
                                      delta=mechanism.delta, domain_size=prior.domain_size)
            ideal_attack = BayesOptimalAttack(k)
            ideal_guesses = []
            for child in np.random.SeedSequence([seed, 1]).spawn(self.ideal_trials):
                data_seed, mechanism_seed = child.spawn(2)
                X = prior.sample(np.random.default_rng(data_seed), prior.n_targets)
                z = ideal_attack.guess(ideal.release(X, np.random.default_rng(mechanism_seed)), prior, ideal, metric)
                ideal_s.append(int(metric.score(X, z).sum()))
                ideal_guesses.append(z)
            ideal_bound = {float(c): v for c, v in
                           boxes.bound.compute(ideal.profile, prior, metric, np.stack(ideal_guesses), confidences).items()}
            ideal_theorem = boxes.bound.theorem(ideal.profile, prior, metric, np.stack(ideal_guesses))
        else:
            log.info("%s: not private (%s): no epsilon, no bound, no idealized Gaussian", self.name, privacy["reason"])

        def exceed(successes) -> dict[str, float | None]:
            return {f"{c:g}": (float(np.mean(np.asarray(successes) > np.asarray(bound[c]))) if private else None)
                    for c in LEVELS}

        mean, low, high = mean_interval(attack_s, self.ci_level, bounds=(0, n))
        ideal_mean, ideal_low, ideal_high = (mean_interval(ideal_s, self.ci_level, bounds=(0, n)) if private
                                             else (None, None, None))
        # Hyperparameter selection (the report's best setting per prior and epsilon) uses the even trials,
        # the reported success the odd ones, so the pick never sees the secrets it is scored on.
        select, heldout = attack_s[0::2], attack_s[1::2]
        held_mean, held_low, held_high = (mean_interval(heldout, self.ci_level, bounds=(0, n)) if heldout
                                          else (None, None, None))
        exceeded = {"model_attack": exceed(attack_s), "model_only": exceed(model_only_s), "fitted": exceed(fitted_s)}
        row = {
            "prior_name": boxes.names()["prior"], "model": mechanism.model.params().get("model"),
            "trainable": mechanism.trainable, "private": private,
            "eps": (float(privacy["epsilon_replace_one"] if mechanism.epsilon is None else mechanism.epsilon)
                    if private else None),
            "delta": privacy["delta"],
            "clip_norm": mechanism.clip_norm, "learning_rate": mechanism.learning_rate, "epochs": mechanism.epochs,
            "noise_multiplier": privacy["noise_multiplier"], "steps": mechanism.steps,
            "eps_add_remove": privacy["epsilon_add_remove"], "eps_opacus_add_remove": privacy["epsilon_opacus_add_remove"],
            "trials": trials, "attack_mean": mean, "attack_ci_low": low, "attack_ci_high": high,
            "select_trials": len(select), "select_mean": float(np.mean(select)),
            "heldout_trials": len(heldout), "heldout_mean": held_mean, "heldout_ci_low": held_low,
            "heldout_ci_high": held_high,
            "model_only_mean": float(np.mean(model_only_s)), "fitted_mean": float(np.mean(fitted_s)),
            "fitted_temperature": float(np.exp(np.mean(np.log(temperatures)))), "prior_mean": float(np.mean(prior_s)),
            "bound_theorem": theorem["theorem"] if private else "none (not private)",
            **{bound_column(c): (bound[c] if private else None) for c in LEVELS},
            **{exceed_column(c): exceeded["model_attack"][f"{c:g}"] for c in LEVELS},
            **{f"model_only_{exceed_column(c)}": exceeded["model_only"][f"{c:g}"] for c in LEVELS},
            **{f"fitted_{exceed_column(c)}": exceeded["fitted"][f"{c:g}"] for c in LEVELS},
            "ideal_mean": ideal_mean, "ideal_ci_low": ideal_low, "ideal_ci_high": ideal_high,
            "ideal_bound_theorem": ideal_theorem["theorem"] if private else None,
            "ideal_bound_0.95": ideal_bound[0.95] if private else None,
        }
        return {
            "table": [row], "headline": {},
            "n_targets": n, "trials": trials, "seed": seed, "boxes": boxes.names(),
            "attack_successes": attack_s, "model_only_successes": model_only_s, "fitted_successes": fitted_s,
            "fitted_temperatures": temperatures, "prior_successes": prior_s,
            "attack_success_mean": float(np.mean(attack_s)), "prior_success_mean": float(np.mean(prior_s)), "k": k,
            "confidences": [float(c) for c in confidences],
            # confidence -> fraction of trials above the bound, for each attack variant (None: not private)
            "exceed": exceeded["model_attack"], "exceed_by_variant": exceeded,
            "ideal_successes": ideal_s, "mechanism": mechanism.params(),
            # the game's privacy keys (pipeline.report reads epsilon and delta) beside the DP-SGD ones
            "privacy": ({**privacy, "epsilon": privacy["epsilon_replace_one"], "profile": profile.name,
                         "delta_source": "mechanism.delta"} if private
                        else {**privacy, "epsilon": None}),
            "bound": {repr(c): v for c, v in bound.items()} if private else None,
            "bound_theorem": theorem,
            "ideal_bound": {repr(c): v for c, v in ideal_bound.items()} if private else None,
            "ideal_bound_theorem": ideal_theorem,
            "stages": {"computed": [list(x) for x in cache.computed], "reused": [list(x) for x in cache.reused]},
        }

    @staticmethod
    def best_rows(rows: list[dict]) -> list[dict]:
        """Per (prior, eps): the row whose hyperparameters give the best mean Model-Attack success, chosen on
        the selection half of the trials (select_mean) and reported on the other half (heldout_*).

        Each returned row gets `reported_mean` / `reported_ci_low` / `reported_ci_high` (what the figure
        draws) and `selection`: "one setting" (nothing was selected: all trials), "held-out half" (the
        selection did not see the reported trials), or "same trials, biased upward" (a job with one trial
        has no other half; the best of several settings on the trials it is reported on overstates the
        attack). A non-private row (eps None) is its own group per prior.
        """
        def value(row, key, default=None):
            v = row.get(key, default)
            return default if v in (None, "") else float(v)

        groups: dict[tuple, list[dict]] = {}
        for row in rows:
            eps = row.get("eps")
            key = (row["prior_name"], math.inf if eps in (None, "") else float(eps))
            groups.setdefault(key, []).append(row)
        out = []
        for key in sorted(groups, key=lambda kv: (str(kv[0]), kv[1])):
            members = groups[key]
            if len(members) == 1:
                best = dict(members[0])
                best.update(selection="one setting", reported_mean=value(best, "attack_mean"),
                            reported_ci_low=value(best, "attack_ci_low"), reported_ci_high=value(best, "attack_ci_high"))
            else:
                best = dict(max(members, key=lambda r: value(r, "select_mean", value(r, "attack_mean"))))
                if value(best, "heldout_mean") is not None:
                    best.update(selection="held-out half", reported_mean=value(best, "heldout_mean"),
                                reported_ci_low=value(best, "heldout_ci_low"),
                                reported_ci_high=value(best, "heldout_ci_high"))
                else:
                    best.update(selection="same trials, biased upward", reported_mean=value(best, "attack_mean"),
                                reported_ci_low=value(best, "attack_ci_low"),
                                reported_ci_high=value(best, "attack_ci_high"))
            out.append(best)
        return out

    @staticmethod
    def plot(rows, path) -> Path:
        best = LLMCanaries.best_rows(rows)
        by_prior = group_rows(best, "prior_name")
        order = [p for p in ("uniform", "zipf", "pii") if p in by_prior] + [p for p in by_prior if p not in ("uniform", "zipf", "pii")]
        fig, axes = subplots(len(order), sharey=True, height=3.8)
        f = lambda v: math.nan if v in (None, "") else float(v)  # noqa: E731
        notes = set()
        for ax, prior_name in zip(axes, order):
            public = [r for r in by_prior[prior_name] if str(r.get("private", True)) in ("False", "false", "0")]
            members = sorted((r for r in by_prior[prior_name] if r not in public), key=lambda r: float(r["eps"]))
            eps = [float(r["eps"]) for r in members]
            get = lambda key: np.array([f(r.get(key)) for r in members])  # noqa: E731
            if members:
                ax.fill_between(eps, get("bound_0.05"), get("bound_0.95"), color="0.85", label="bound 0.05-0.95")
                ax.plot(eps, get("bound_0.5"), "k--", linewidth=0.8, label="bound @ 0.5")
                ax.plot(eps, get("bound_0.95"), "k-", linewidth=1.0, label="bound @ 0.95")
                mean, low, high = get("reported_mean"), get("reported_ci_low"), get("reported_ci_high")
                ax.errorbar(eps, mean, yerr=[np.nan_to_num(mean - low), np.nan_to_num(high - mean)], fmt="o-",
                            capsize=3, label="Model Attack, T = 1 (best hyperparameters, 95% CI)")
                ax.plot(eps, get("model_only_mean"), "x:", label="model only (prior ignored)")
                if all(r.get("fitted_mean") not in (None, "") for r in members):
                    ax.plot(eps, get("fitted_mean"), "d-.", label="Model Attack, temperature fitted (no secrets)")
                ideal, ilow, ihigh = get("ideal_mean"), get("ideal_ci_low"), get("ideal_ci_high")
                ax.errorbar(eps, ideal, yerr=[np.nan_to_num(ideal - ilow), np.nan_to_num(ihigh - ideal)], fmt="s-",
                            capsize=3, label="idealized Gaussian, Bayes-optimal")
                ax.plot(eps, get("prior_mean"), ":", color="0.5", label="prior only (no release)")
                for r in members:
                    ex = "/".join(f"{f(r.get(f'exceed_{c:g}')):.2g}" for c in LEVELS)
                    ax.annotate(f"exceed {ex}", (float(r["eps"]), f(r.get("reported_mean"))), fontsize=5.5,
                                textcoords="offset points", xytext=(3, -9), color="C0")
                notes.update(r["selection"] for r in members)
                notes.update(f"bound: {r['bound_theorem']}" for r in members if r.get("bound_theorem"))
                notes.update(f"delta = {f(r.get('delta')):g}" for r in members)
            for r in public:
                ax.axhline(f(r.get("attack_mean")), color="firebrick", linestyle="--",
                           label="Model Attack, not private (clipping=none): no epsilon, no bound")
            deltas = sorted({f"{f(r.get('delta')):g}" for r in members})
            panel(ax, f"epsilon (delta = {'/'.join(deltas) or '-'})", f"{prior_name} prior",
                  log_x=len(eps) > 1 and max(eps) / min(eps) > 8)
            ax.set_ylim(bottom=0)  # a t-interval of few trials can reach below 0 successes
        models = sorted({f"{r.get('model')} ({r.get('trainable')})" for r in best if r.get("model")})
        trials = sorted({str(r.get("trials")) for r in best})
        notes.update([f"model {', '.join(models)}" if models else "", f"trials per job {'/'.join(trials)}",
                      "numbers under the attack: fraction of trials above the bound @ 0.05/0.5/0.95"])
        return finish(fig, axes, "canaries reconstructed", path, note="; ".join(sorted(n for n in notes if n)))


class PIILaw(Task):
    """The PII prior's law (max / median / 10th percentile) and its rows of Figures novel_bounds and eps_protect."""

    name = "pii_law"
    groups = ("prior",)
    columns = ("figure", "prior_name", "canary", "prior_probability", "eps", "advantage", "eps_protect")

    def __init__(self, canaries: Sequence[str] = ("max", "median", "p10"), delta: float = 1e-5, threshold: float = 0.05,
                 eps_low: float = 0.1, eps_high: float = 100.0, eps_points: int = 31, threads: int | None = None) -> None:
        from stages.bound import _validate

        self.canaries = [str(c) for c in canaries]
        for c in self.canaries:
            if c not in ("max", "median", "p10", "min"):
                raise ValueError(f"canaries must be among ['max', 'median', 'p10', 'min'], got {c!r}.")
        self.delta = _validate.delta("delta", delta)
        self.threshold = float(_validate.probability("threshold", threshold, open_low=True, open_high=True))
        self.eps = grid("eps", eps_low, eps_high, eps_points, extra=[e for e in (1.0, 10.0) if eps_low <= e <= eps_high])
        self.threads = None if threads is None else _validate.integer("threads", threads, minimum=1)

    def run(self, cfg, output_dir, cache, logger) -> dict:
        from pipeline.game import ConfigError, build_boxes
        from stages.bound.profiles import ApproxDP
        from stages.bound.theorems import advantage_bound, eps_protect

        _set_threads(self.threads)
        prior = build_boxes(cfg).prior
        if not hasattr(prior, "law_summary"):
            raise ConfigError(f"experiment {self.name} needs prior=pii, got {type(prior).__name__}.")
        attach_stage_cache(prior, cache)
        summary = prior.law_summary()
        name = f"pii_{summary['score']}"
        rows = []
        for canary in self.canaries:
            p = float(summary[canary])
            for eps in self.eps:
                rows.append({"figure": "advantage_by_prior", "prior_name": name, "canary": canary, "prior_probability": p,
                             "eps": float(eps), "advantage": float(advantage_bound(ApproxDP(float(eps), self.delta), p))})
        protect = float(eps_protect(float(summary["max"]), self.threshold, self.delta))
        rows.append({"figure": "eps_protect", "prior_name": name, "canary": "max",
                     "prior_probability": float(summary["max"]), "eps_protect": protect})
        headline = {"law": summary, "eps_protect_max": protect, "paper_eps_protect_max": 2.37,
                    **{f"advantage/{r['canary']}/eps={r['eps']:g}": r["advantage"] for r in rows
                       if r["figure"] == "advantage_by_prior" and r["eps"] in (1.0, 10.0)}}
        return {"table": rows, "headline": headline}

    @staticmethod
    def plot(rows, path) -> Path:
        fig, axes = subplots(2)
        curves = [r for r in rows if r["figure"] == "advantage_by_prior"]
        for canary, members in group_rows(curves, "canary").items():
            members = sorted(members, key=lambda r: float(r["eps"]))
            axes[0].plot([float(r["eps"]) for r in members], [float(r["advantage"]) for r in members], marker=".",
                         label=f"{canary} (p = {float(members[0]['prior_probability']):.3g})")
        axes[0].axhline(0.05, color="k", linestyle=":", linewidth=0.8)
        panel(axes[0], "epsilon (delta = 1e-5)", "PII prior: advantage bound")
        axes[0].legend(fontsize=7)
        axes[0].set_ylabel("advantage bound")
        for r in rows:
            if r["figure"] == "eps_protect":
                axes[1].plot(float(r["prior_probability"]), float(r["eps_protect"]), "o",
                             label=f"most probable PII: eps = {float(r['eps_protect']):.3g} (paper 2.37)")
        axes[1].set_yscale("log")
        panel(axes[1], "prior probability of the canary", "eps_protect (advantage <= 0.05); curve: experiment=eps_protect")
        axes[1].legend(fontsize=7)
        fig.tight_layout()
        from pipeline.io import save_figure_atomic

        return save_figure_atomic(fig, path)
