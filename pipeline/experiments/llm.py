"""The LLM case study (paper Section 4): DP-SGD canaries with the Model Attack (Figure llm) and the PII prior's law.

* `LLMCanaries` (a Figure): the sweep of conf/experiment/llm_canaries*.yaml over (prior, epsilon, clip norm,
  learning rate, epochs). Each combination is one game job of the engine with the `dpsgd` mechanism (every
  trial's release, the (n, m) log-probabilities, is the game's cached release stage, keyed by the model, the
  canaries' secrets, the trial's seed and the hyperparameters), the Model Attack (prior x model) and its
  variants scored on the same releases (attack.variants: the model-only guess, and the Model Attack with its
  temperature fitted to the release without the secrets; see stages.attack.model_attack), each with its
  successes, its bound and its exceedance at every confidence. Beside it the sweeper launches the figure's
  second point, the idealized Gaussian Bayes-optimal game on the same prior at the same epsilon (Appendix D;
  `figure.game=ideal`, its own seeds [seed, 1], once per (prior, epsilon)). `rows` reads either game's metrics;
  `combine` joins each DP-SGD row with its idealized game. Every bound number comes with the name of the
  theorem that produced it (`bound_theorem`).
  The report keeps, per (prior, epsilon), the hyperparameters with the best mean Model-Attack success
  *on the selection half* of the trials (trials 0, 2, 4, ...) and reports that setting's success on the
  other half (`heldout_*`), so the choice does not use the secrets it is scored on; with one trial per
  job there is no other half, and the figure says the number is biased upward. A run without a privacy
  profile (clipping=none, epsilon = inf, or a vacuous epsilon: stages.mechanism.judge_privacy) has no epsilon, no bound
  and no idealized Gaussian: it is drawn as "not private".
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
from omegaconf import DictConfig, OmegaConf

from pipeline.io import bound_column, confidence_key, exceed_column, floor_cells, floor_column
from pipeline.experiments.common import (PII_PAPER_EPS_PROTECT, Figure, Task, attach_stage_cache, finish, grid, group_rows,
                                         mean_interval, panel, subplots)

__all__ = ["LLMCanaries", "PIILaw", "attach_stage_cache"]

log = logging.getLogger(__name__)

#: The confidences every LLM job reports (the figure's bound band and lines).
LEVELS = (0.05, 0.5, 0.95)


def _set_threads(threads: int | None) -> None:
    if threads is not None:
        import torch

        torch.set_num_threads(int(threads))


def _dpsgd_epsilon(cfg: DictConfig) -> float | None:
    """The replace-one epsilon of the DP-SGD mechanism from its settings alone (no model is loaded): the target
    epsilon, or the calibrated profile's at delta when the noise multiplier is given; None if it is not private."""
    from stages.mechanism.dpsgd import DPSGDFineTuning

    settings = OmegaConf.to_container(cfg.mechanism, resolve=True)
    settings.pop("_target_", None)
    settings.pop("model", None)
    mechanism = DPSGDFineTuning(model=None, **settings)
    if not mechanism.private:
        return None
    return float(mechanism.epsilon if mechanism.epsilon is not None else mechanism.profile.epsilon(mechanism.delta))


#: What each model= option is, for the figure's note (the rows hold the model's name only): `config` is no trained
#: model at all but random weights in a real model's shapes (stages/model/from_config.py).
MODEL_LABELS = {
    "config": "randomly initialised (model=config: real shapes, no pretrained weights)",
    "smollm2": "SmolLM2-135M-Instruct (4-bit Q4_1 GGUF weights, dequantised)",
    "tiny": "tiny (a small randomly initialised test model)",
    "hub": "pretrained from the Hugging Face hub (model=gpt2)",
}


class LLMCanaries(Figure):
    """Figure llm: DP-SGD fine-tuning on n new-token canaries, the Model Attack, the bound and the idealized Gaussian.

    Two games per (prior, epsilon): `figure.game=dpsgd` (every job of the sweep's product) and `figure.game=ideal`,
    the point the sweeper adds beside each DP-SGD job (the same for every hyperparameter setting, so launched once).
    """

    name = "llm_canaries"
    columns = ("prior_name", "model", "trainable", "private", "eps", "delta", "clip_norm", "learning_rate", "epochs",
               "noise_multiplier", "steps", "eps_add_remove", "eps_opacus_add_remove", "trials", "attack_mean",
               "attack_ci_low", "attack_ci_high", "select_trials", "select_mean", "heldout_trials", "heldout_mean",
               "heldout_ci_low", "heldout_ci_high", "model_only_mean", "fitted_mean", "fitted_temperature", "prior_mean", "diverged_trials",
               "bound_theorem", *(bound_column(c) for c in LEVELS), *(floor_column(c) for c in LEVELS), "floor_mechanism",
               *(exceed_column(c) for c in LEVELS), *(f"model_only_{exceed_column(c)}" for c in LEVELS),
               *(f"fitted_{exceed_column(c)}" for c in LEVELS),
               "ideal_mean", "ideal_ci_low", "ideal_ci_high", "ideal_trials", "ideal_bound_theorem", "ideal_bound_0.95")
    # what the rows show already, and the idealized game's own overrides (its rows join the DP-SGD rows)
    represented = ("prior", "mechanism", "mechanism.epsilon", "mechanism.delta", "mechanism.clip_norm",
                   "mechanism.learning_rate", "mechanism.epochs", "mechanism.batch_size", "mechanism.clipping",
                   "attack", "attack.k", "trials", "seed", "figure.game")
    GAMES = ("dpsgd", "ideal")

    def __init__(self, ci_level: float = 0.95, ideal_trials: int = 200, threads: int | None = None,
                 game: str = "dpsgd") -> None:
        from stages.bound import _validate

        self.ci_level = float(_validate.probability("ci_level", ci_level, open_low=True, open_high=True))
        self.ideal_trials = _validate.integer("ideal_trials", ideal_trials, minimum=1)
        self.threads = None if threads is None else _validate.integer("threads", threads, minimum=1)
        if game not in self.GAMES:
            raise ValueError(f"game must be one of {list(self.GAMES)} (the DP-SGD game, or the idealized Gaussian "
                             f"game the sweep plays beside it), got {game!r}.")
        self.game = game

    # -- the points of one sweep combination ---------------------------------------------------------------
    def points(self, cfg: DictConfig) -> list[dict]:
        """The DP-SGD game, and (when it is private) the idealized Gaussian game at its prior and epsilon:
        mechanism=gaussian (the same delta), attack=bayes_optimal with the Model Attack's k, `ideal_trials`
        trials, its own seeds SeedSequence([seed, 1]) (Appendix D)."""
        if self.game != "dpsgd":
            return [{}]
        epsilon = _dpsgd_epsilon(cfg)
        if epsilon is None:  # not private (clipping=none): no epsilon, no idealized game
            return [{}]
        seed = OmegaConf.to_object(cfg.seed) if OmegaConf.is_config(cfg.seed) else cfg.seed
        return [{}, {"figure.game": "ideal", "mechanism": "gaussian", "mechanism.epsilon": epsilon,
                     "mechanism.delta": float(cfg.mechanism.delta), "attack": "bayes_optimal",
                     "attack.k": int(cfg.attack.k), "trials": self.ideal_trials,
                     "seed": [*(seed if isinstance(seed, list) else [int(seed)]), 1]}]

    levels = LEVELS

    def boxes(self, cfg: DictConfig):
        if self.game == "dpsgd":
            return {"mechanism": ("DPSGDFineTuning", "dpsgd"), "attack": ("ModelAttack", "model_attack")}
        return {"mechanism": ("GaussianMechanism", "gaussian"), "attack": ("BayesOptimalAttack", "bayes_optimal")}

    def setup(self, cfg: DictConfig) -> None:
        _set_threads(self.threads)

    # -- one game job's row ------------------------------------------------------------------------------
    def rows(self, cfg: DictConfig, metrics) -> list[dict]:
        n = int(metrics["n_targets"])
        if self.game == "ideal":
            mean, low, high = mean_interval(metrics["attack_successes"], self.ci_level, bounds=(0, n))
            return [{"game": "ideal", "prior_name": metrics["boxes"]["prior"], "eps": float(cfg.mechanism.epsilon),
                     "delta": float(cfg.mechanism.delta), "ideal_mean": mean, "ideal_ci_low": low, "ideal_ci_high": high,
                     "ideal_trials": int(metrics["trials"]),
                     "ideal_bound_theorem": (metrics.get("bound_theorem") or {}).get("theorem"),
                     "ideal_bound_0.95": (metrics.get("bound") or {}).get(confidence_key(0.95))}]
        privacy = metrics["privacy"]
        private = bool(privacy["private"])
        attacks = metrics["attacks"]
        main = attacks[metrics["attack_label"]]

        def exceed(label) -> dict:
            values = (attacks.get(label) or {}).get("exceed") or {}
            return {c: values.get(confidence_key(c)) for c in LEVELS}

        attack_s = main["successes"]
        mean, low, high = mean_interval(attack_s, self.ci_level, bounds=(0, n))
        # Hyperparameter selection (the report's best setting per prior and epsilon) uses the even trials,
        # the reported success the odd ones, so the pick never sees the secrets it is scored on.
        select, heldout = attack_s[0::2], attack_s[1::2]
        held_mean, held_low, held_high = (mean_interval(heldout, self.ci_level, bounds=(0, n)) if heldout
                                          else (None, None, None))
        temperatures = ((attacks.get("fitted") or {}).get("observed") or {}).get("temperature")
        bound = metrics["bound"]
        floor = metrics.get("worst_case_floor") or {}
        built = (metrics.get("params") or {}).get("mechanism") or {}
        return [{
            "game": "dpsgd", "prior_name": metrics["boxes"]["prior"], "model": (built.get("model") or {}).get("model"),
            "trainable": built.get("trainable"), "private": private,
            "eps": (float(privacy["epsilon_replace_one"] if built.get("epsilon") is None else built["epsilon"])
                    if private else None),
            "delta": privacy.get("delta"),
            "clip_norm": built.get("clip_norm"), "learning_rate": built.get("learning_rate"),
            "epochs": built.get("epochs"),
            "noise_multiplier": privacy.get("noise_multiplier"), "steps": built.get("steps"),
            "eps_add_remove": privacy.get("epsilon_add_remove"),
            "eps_opacus_add_remove": privacy.get("epsilon_opacus_add_remove"),
            "trials": int(metrics["trials"]), "attack_mean": mean, "attack_ci_low": low, "attack_ci_high": high,
            "select_trials": len(select), "select_mean": float(np.mean(select)),
            "heldout_trials": len(heldout), "heldout_mean": held_mean, "heldout_ci_low": held_low,
            "heldout_ci_high": held_high,
            "model_only_mean": (attacks.get("model_only") or {}).get("success_mean"),
            "fitted_mean": (attacks.get("fitted") or {}).get("success_mean"),
            "fitted_temperature": (float(np.exp(np.mean(np.log(temperatures)))) if temperatures else None),
            "prior_mean": metrics["prior_success_mean"],
            # trials whose training diverged for some canary (NaN or no usable log-probability; the attack then
            # guesses the prior for those canaries: stages.attack.model_attack)
            "diverged_trials": int(np.count_nonzero(np.asarray(
                (main.get("observed") or {}).get("unusable_canaries") or [0], dtype=float) > 0)),
            "bound_theorem": metrics["bound_theorem"]["theorem"] if private else "none (not private)",
            **{bound_column(c): (bound[confidence_key(c)] if private else None) for c in LEVELS},
            # the worst case's lower end: a real mechanism with the same privacy profile, attacked by MAP
            **floor_cells(metrics, LEVELS, private),
            "floor_mechanism": floor.get("mechanism") if private and floor.get("counts") else None,
            **{exceed_column(c): exceed(metrics["attack_label"])[c] for c in LEVELS},
            **{f"model_only_{exceed_column(c)}": exceed("model_only")[c] for c in LEVELS},
            **{f"fitted_{exceed_column(c)}": exceed("fitted")[c] for c in LEVELS},
        }]

    @classmethod
    def combine(cls, rows: list[dict]) -> list[dict]:
        """The DP-SGD rows, each with the idealized Gaussian game of its prior, epsilon and delta (ideal_*)."""
        def key(row):
            eps, delta = row.get("eps"), row.get("delta")
            return (str(row.get("prior_name")), None if eps in (None, "") else round(float(eps), 9),
                    None if delta in (None, "") else float(delta))

        ideal = {key(r): r for r in rows if r.get("game") == "ideal"}
        out = []
        for row in rows:
            if row.get("game") == "ideal":
                continue
            match = ideal.get(key(row)) if row.get("eps") not in (None, "") else None
            out.append({**row, **{k: (match or {}).get(k) for k in
                                  ("ideal_mean", "ideal_ci_low", "ideal_ci_high", "ideal_trials", "ideal_bound_theorem",
                                   "ideal_bound_0.95")}})
        return out

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
                lows, highs = get(floor_column(LEVELS[-1])), get(bound_column(LEVELS[-1]))
                if not np.all(np.isnan(lows)):  # the bracket: a real mechanism with the profile reaches the floor
                    ax.fill_between(eps, lows, highs, where=~(np.isnan(lows) | np.isnan(highs)), facecolor="none",
                                    hatch="///", edgecolor="0.45", linewidth=0,
                                    label=f"worst case @ {LEVELS[-1]:g} lies here (floor to bound)")
                    notes.add("floor: the count of a real mechanism with the same privacy profile, MAP attack "
                              "(csv column floor_mechanism; THEORY.md section 11)")
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
                notes.update(r["selection"] for r in members)
                notes.update(f"bound: {r['bound_theorem']}" for r in members if r.get("bound_theorem"))
                notes.update(f"delta = {f(r.get('delta')):g}" for r in members)
            for r in public:
                ax.axhline(f(r.get("attack_mean")), color="firebrick", linestyle="--",
                           label="Model Attack, not private (clipping=none, no noise or a vacuous epsilon): no bound")
            deltas = sorted({f"{f(r.get('delta')):g}" for r in members})
            panel(ax, f"epsilon (delta = {'/'.join(deltas) or '-'})\nunder it: trials above the bound @ "
                      f"{'/'.join(f'{c:g}' for c in LEVELS)}", f"{prior_name} prior",
                  log_x=len(eps) > 1 and max(eps) / min(eps) > 8)
            if members:  # the exceedance under each epsilon's tick, where it covers no error bar
                import matplotlib.ticker

                exceed = ["/".join(f"{f(r.get(exceed_column(c))):.2g}" for c in LEVELS) for r in members]
                ax.set_xticks(eps, [f"{e:g}\n{x}" for e, x in zip(eps, exceed)])
                ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_ylim(bottom=0)  # a t-interval of few trials can reach below 0 successes
        models = sorted({f"{MODEL_LABELS.get(str(r.get('model')), r.get('model'))}, trainable {r.get('trainable')}"
                         for r in best if r.get("model")})
        trials = sorted({str(r.get("trials")) for r in best})
        notes.update([f"model {', '.join(models)}" if models else "", f"trials per job {'/'.join(trials)}",
                      "numbers under each epsilon: fraction of the Model Attack's trials above the bound @ "
                      "0.05/0.5/0.95"])
        return finish(fig, axes, "canaries reconstructed", path, note="; ".join(sorted(n for n in notes if n)))


class PIILaw(Task):
    """The PII prior's law (max / median / 10th percentile) and its rows of Figures novel_bounds and eps_protect:
    the advantage bound over eps of each canary, eps_protect of the most probable one, and the eps_protect curve
    over the prior probability (rows `eps_protect_curve`, the most probable PII and the kink at p = 1/2 on it)."""

    name = "pii_law"
    groups = ("prior",)
    columns = ("figure", "prior_name", "canary", "prior_probability", "eps", "advantage", "eps_protect")

    def __init__(self, canaries: Sequence[str] = ("max", "median", "p10"), delta: float = 1e-5, threshold: float = 0.05,
                 eps_low: float = 0.1, eps_high: float = 100.0, eps_points: int = 31, prior_low: float = 1e-10,
                 prior_high: float = 0.9, prior_points: int = 16, threads: int | None = None) -> None:
        from stages.bound import _validate

        self.canaries = [str(c) for c in canaries]
        for c in self.canaries:
            if c not in ("max", "median", "p10", "min"):
                raise ValueError(f"canaries must be among ['max', 'median', 'p10', 'min'], got {c!r}.")
        self.delta = _validate.delta("delta", delta)
        self.threshold = float(_validate.probability("threshold", threshold, open_low=True, open_high=True))
        self.eps = grid("eps", eps_low, eps_high, eps_points, extra=[e for e in (1.0, 10.0) if eps_low <= e <= eps_high])
        if not float(prior_high) < 1:
            raise ValueError(f"prior_high must be < 1, got {prior_high!r}.")
        # the curve's grid holds p = 1/2, where eps_protect turns flat (theorems.eps_protect)
        self.priors = grid("prior", prior_low, prior_high, prior_points,
                           extra=[0.5] if float(prior_low) <= 0.5 <= float(prior_high) else [])
        self.threads = None if threads is None else _validate.integer("threads", threads, minimum=1)

    def run(self, cfg, output_dir, cache, logger) -> dict:
        from pipeline.game import ConfigError, build_boxes

        _set_threads(self.threads)
        prior = build_boxes(cfg).prior
        if not hasattr(prior, "law_summary"):
            raise ConfigError(f"experiment {self.name} needs prior=pii, got {type(prior).__name__}.")
        attach_stage_cache(prior, cache)
        model = prior.model.params().get("model") if hasattr(prior.model, "params") else type(prior.model).__name__
        return self.table(prior.law_summary(), model=model)

    def table(self, summary, model=None) -> dict:
        """{"table", "headline"} of a law summary (PIIPrior.law_summary(): the canaries' probabilities, the score):
        the rows advantage_by_prior (each canary over eps), eps_protect (the most probable PII) and
        eps_protect_curve (eps_protect over the prior probability, the most probable PII's included). The rows
        also carry, for the figure only (metrics.json keeps them, the csv not), the model that scored the law,
        delta, the threshold and the theorem."""
        from stages.bound.profiles import ApproxDP
        from stages.bound.theorems import SPLIT_THEOREM, advantage_bound, eps_protect

        name = f"pii_{summary['score']}" + ("_copies_dropped" if summary.get("context_copies") == "drop" else "")
        shared = {"model": model, "delta": self.delta, "threshold": self.threshold, "theorem": SPLIT_THEOREM}
        rows = []
        for canary in self.canaries:
            p = float(summary[canary])
            for eps in self.eps:
                rows.append({"figure": "advantage_by_prior", "prior_name": name, "canary": canary, "prior_probability": p,
                             "eps": float(eps), "advantage": float(advantage_bound(ApproxDP(float(eps), self.delta), p)),
                             **shared})
        protect = float(eps_protect(float(summary["max"]), self.threshold, self.delta))
        rows.append({"figure": "eps_protect", "prior_name": name, "canary": "max",
                     "prior_probability": float(summary["max"]), "eps_protect": protect, **shared})
        rows += [{"figure": "eps_protect_curve", "prior_name": name, "canary": None, "prior_probability": float(p),
                  "eps_protect": float(eps_protect(float(p), self.threshold, self.delta)), **shared}
                 for p in self.priors]
        headline = {"law": summary, "eps_protect_max": protect, "paper_eps_protect_max": PII_PAPER_EPS_PROTECT,
                    **{f"advantage/{r['canary']}/eps={r['eps']:g}": r["advantage"] for r in rows
                       if r["figure"] == "advantage_by_prior" and r["eps"] in (1.0, 10.0)}}
        return {"table": rows, "headline": headline}

    @staticmethod
    def plot(rows, path) -> Path:
        from pipeline.experiments.synthetic import draw_advantage, draw_eps_protect

        fig, axes = subplots(2)
        curves = [r for r in rows if r["figure"] == "advantage_by_prior"]
        title = draw_advantage({name: axes[0] for name in {r["prior_name"] for r in curves}}, curves)
        protect = [r for r in rows if r["figure"] in ("eps_protect", "eps_protect_curve")]
        draw_eps_protect(axes[1], [{**r, "prior_name": "any"} if r["figure"] == "eps_protect_curve" else r for r in protect],
                         curve_label="eps_protect(p): a canary of prior probability p")
        model = next((str(r["model"]) for r in rows if r.get("model")), "")
        axes[1].axhline(PII_PAPER_EPS_PROTECT, color="0.4", linestyle="--", linewidth=0.8,
                        label=f"paper: eps_protect {PII_PAPER_EPS_PROTECT:g} of the most probable PII, GPT-2's scores of "
                              f"its 500 sequences" + (f" (ours: {model}'s)" if model else ""))
        thresholds = "/".join(sorted({f"{float(r['threshold']):g}" for r in protect if r.get("threshold") not in (None, "")}))
        panel(axes[1], "prior probability p of the canary",
              f"eps_protect: largest eps with advantage bound <= {thresholds or 'the threshold'}")
        axes[1].set_yscale("log")
        axes[0].set_title(f"PII prior{f' (scored by {model})' if model else ''}: advantage bound", fontsize=9)
        axes[0].set_ylabel("advantage bound")
        return finish(fig, axes, "advantage bound", path, title=title)
