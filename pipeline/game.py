"""Plays one generic attack game (Algorithm 1) from a composed config and writes metrics.json.

For each of R trials: sample targets X ~ D_1 x ... x D_n, release a = M(X), let the attack guess
z = A(a, D, M), and score L(X, z); the prior-only baseline scores the a-priori guess z* on the same X.
The played trials are a cached stage (pipeline.cache), so a sweep over bounds or confidences, or a
rerun of the same job, plays them once. The chosen bound box then turns the mechanism's privacy
profile and the prior into counts at the configured confidences.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from omegaconf import DictConfig, OmegaConf

from pipeline.cache import StageCache, load_arrays, save_arrays
from pipeline.io import plain, save_figure_atomic, write_json_atomic
from stages.bound import _validate

__all__ = [
    "BOX_GROUPS",
    "Boxes",
    "ConfigError",
    "build_boxes",
    "check_run_settings",
    "play_trials",
    "trials_stage_config",
    "run_game",
    "run_job",
]

log = logging.getLogger(__name__)

BOX_GROUPS = ("prior", "mechanism", "attack", "metric", "bound")
PRIVACY_DELTA = 1e-5
# Bump when the way trials are played changes, so old cached trials are not reused.
TRIALS_STAGE_VERSION = 1


class ConfigError(ValueError):
    """A config value the boxes or the game refuse; str() is one sentence naming the key and value."""


@dataclass
class Boxes:
    prior: Any
    mechanism: Any
    attack: Any
    metric: Any
    bound: Any

    def names(self) -> dict[str, str]:
        return {group: getattr(getattr(self, group), "name", type(getattr(self, group)).__name__) for group in BOX_GROUPS}


# What a box raises for a bad config: a refused value, a missing data file, a missing optional
# dependency, an argument the constructor does not take. Anything else is a bug and keeps its traceback.
_CONFIG_PROBLEMS = (ValueError, FileNotFoundError, ImportError, TypeError)


def _box_error(group: str, cfg: DictConfig, exc: BaseException) -> ConfigError:
    """One sentence naming the config key (group.argument) and the value the box refused."""
    cause = exc
    # hydra.utils.instantiate wraps the constructor's exception; report the box's own sentence.
    while cause.__cause__ is not None and not isinstance(cause, _CONFIG_PROBLEMS):
        cause = cause.__cause__
    if not isinstance(cause, _CONFIG_PROBLEMS):
        raise exc
    message = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    first_word = message.split(" ", 1)[0]
    if first_word in cfg[group]:  # the box named its argument: call it by its config key
        return ConfigError(f"{group}.{message}")
    return ConfigError(f"{group}: {message}")


def build_boxes(cfg: DictConfig) -> Boxes:
    """Instantiate the five boxes from their config groups; a refused value raises ConfigError."""
    from hydra.utils import instantiate

    built = {}
    for group in BOX_GROUPS:
        if cfg.get(group) is None:
            raise ConfigError(f"{group} must be chosen, got nothing; add {group}=<option> to the command line.")
        try:
            built[group] = instantiate(cfg[group], _convert_="all")
        except Exception as exc:  # noqa: BLE001 - every construction failure is a config problem
            raise _box_error(group, cfg, exc) from exc
    return Boxes(**built)


def check_run_settings(cfg: DictConfig) -> tuple[int, int, np.ndarray]:
    """Validate the game's own keys (seed, trials, confidences); return them as (seed, trials, confidences)."""
    try:
        seed = _validate.integer("seed", cfg.seed, minimum=0)
        trials = _validate.integer("trials", cfg.trials, minimum=1)
        raw = OmegaConf.to_object(cfg.confidences) if OmegaConf.is_config(cfg.confidences) else cfg.confidences
        confidences = np.atleast_1d(_validate.confidence("confidences", raw)).reshape(-1)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    if confidences.size == 0:
        raise ConfigError("confidences must list at least one level in (0, 1), got []; e.g. confidences=[0.05,0.5,0.95].")
    return seed, trials, confidences


def trials_stage_config(cfg: DictConfig, seed: int, trials: int) -> dict:
    """What determines the played trials: the four game boxes, the seed and the number of trials."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    return {
        "stage": "trials",
        "version": TRIALS_STAGE_VERSION,
        **{group: resolved[group] for group in ("prior", "mechanism", "attack", "metric")},
        "seed": seed,
        "trials": trials,
    }


def play_trials(boxes: Boxes, seed: int, trials: int) -> dict[str, np.ndarray]:
    """Play `trials` rounds of Algorithm 1; every trial draws from its own child of SeedSequence(seed).

    Returns attack_successes (R,), prior_successes (R,) of the a-priori guess z* on the same X,
    guesses (R, n, k) and attack_prior_success (R, n) = Pr_{X ~ D_i}[l_i(X, z) = 1] for the attack's z.
    """
    prior, mechanism, attack, metric = boxes.prior, boxes.mechanism, boxes.attack, boxes.metric
    z_star = np.asarray(prior.a_priori_guess(metric))
    attack_successes = np.zeros(trials, dtype=np.int64)
    prior_successes = np.zeros(trials, dtype=np.int64)
    guesses, attack_prior_success = [], []
    for t, child in enumerate(np.random.SeedSequence(seed).spawn(trials)):
        data_seed, mechanism_seed = child.spawn(2)
        X = prior.sample(np.random.default_rng(data_seed), prior.n_targets)
        a = mechanism.release(X, np.random.default_rng(mechanism_seed))
        z = np.asarray(attack.guess(a, prior, mechanism, metric))
        if z.ndim == 1:
            z = z[:, None]
        attack_successes[t] = int(np.sum(metric.score(X, z)))
        prior_successes[t] = int(np.sum(metric.score(X, z_star)))
        guesses.append(z)
        attack_prior_success.append(prior.success_probability(z, metric))
    return {
        "attack_successes": attack_successes,
        "prior_successes": prior_successes,
        "guesses": np.stack(guesses).astype(np.int64),
        "attack_prior_success": np.stack(attack_prior_success).astype(float),
    }


def _privacy(mechanism) -> dict:
    profile = mechanism.profile
    params = profile.params() if hasattr(profile, "params") else {"profile": type(profile).__name__}
    return {
        **plain(params),
        "delta": PRIVACY_DELTA,
        "epsilon": float(profile.epsilon(PRIVACY_DELTA)),
    }


def _bound_counts(result: Any, confidences: np.ndarray) -> dict[str, Any]:
    """The bound box's {confidence: count(s)} with string keys for JSON (one count, or one per trial)."""
    if not isinstance(result, Mapping):
        raise TypeError(f"a bound box must return a dict confidence -> count, got {type(result).__name__}.")
    return {repr(float(c)): plain(v) for c, v in result.items()}


def _exceed_fraction(attack_successes: np.ndarray, counts: Any) -> float:
    """Fraction of trials in which the attack exceeded the bound count (one count, or one per trial)."""
    counts = np.asarray(counts)
    return float(np.mean(attack_successes > counts)) if counts.size in (1, attack_successes.size) else float("nan")


def compute_metrics(cfg: DictConfig, cache: StageCache | None = None) -> tuple[dict, dict[str, np.ndarray], Boxes]:
    """Validate, build the boxes, play (or reuse) the trials and compute the bound: the job's numbers."""
    seed, trials, confidences = check_run_settings(cfg)
    boxes = build_boxes(cfg)
    stage_config = trials_stage_config(cfg, seed, trials)

    def compute(directory: Path) -> None:
        save_arrays(directory, **play_trials(boxes, seed, trials))

    try:
        if cache is None:
            played = play_trials(boxes, seed, trials)
            trials_stage = {"key": None, "reused": False}
        else:
            computed_before = len(cache.computed)
            artifact = cache.get_or_compute("trials", stage_config, compute)
            played = load_arrays(artifact)
            trials_stage = {"key": artifact.name, "reused": len(cache.computed) == computed_before}
        bound_args = (boxes.mechanism.profile, boxes.prior, boxes.metric, played["guesses"], confidences)
        bound = boxes.bound.compute(*bound_args)
        # Bounds conditional on the release (pure_dp) also give one count per trial.
        per_trial = boxes.bound.compute_per_trial(*bound_args) if hasattr(boxes.bound, "compute_per_trial") else None
        privacy = _privacy(boxes.mechanism)
    except ValueError as exc:
        raise ConfigError(str(exc).strip().splitlines()[0]) from exc

    bound_counts = _bound_counts(bound, confidences)
    attack_successes = played["attack_successes"]
    prior_successes = played["prior_successes"]
    top = repr(float(np.max(confidences)))
    metrics = {
        "n_targets": int(boxes.prior.n_targets),
        "trials": trials,
        "seed": seed,
        "boxes": boxes.names(),
        "attack_successes": attack_successes.tolist(),
        "prior_successes": prior_successes.tolist(),
        "attack_success_mean": float(np.mean(attack_successes)),
        "prior_success_mean": float(np.mean(prior_successes)),
        "attack_prior_success_mean": float(np.mean(np.sum(played["attack_prior_success"], axis=1))),
        "confidences": confidences.tolist(),
        "bound": bound_counts,
        **({"bound_per_trial": _bound_counts(per_trial, confidences)} if per_trial is not None else {}),
        # How often the attack exceeded the bound at the highest confidence (at most 1 - confidence in
        # expectation), against each trial's own bound where the bound is conditional on the release.
        "bound_exceeded_fraction": _exceed_fraction(
            attack_successes, (_bound_counts(per_trial, confidences) if per_trial is not None else bound_counts)[top]),
        "privacy": privacy,
        "stages": {"trials": trials_stage},
    }
    return metrics, played, boxes


def plot_successes(metrics: dict, path: str | os.PathLike) -> None:
    """Histogram of the attack's and the prior baseline's successes per trial, with the bound counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    attack = np.asarray(metrics["attack_successes"])
    baseline = np.asarray(metrics["prior_successes"])
    fig, ax = plt.subplots(figsize=(6, 3.6))
    top = int(max(attack.max(initial=0), baseline.max(initial=0)))
    bins = np.arange(-0.5, top + 1.5, max(1, (top + 1) // 40))
    ax.hist(baseline, bins=bins, alpha=0.6, label="prior baseline (z*)")
    ax.hist(attack, bins=bins, alpha=0.6, label=f"attack ({metrics['boxes']['attack']})")
    for (confidence, count), style in zip(metrics["bound"].items(), ("dotted", "dashed", "solid", "dashdot")):
        counts = np.atleast_1d(np.asarray(count, dtype=float))
        ax.axvline(float(np.mean(counts)), color="k", linestyle=style,
                   label=f"bound {metrics['boxes']['bound']} @ {float(confidence):g}" + (" (mean)" if counts.size > 1 else ""))
    ax.set_xlabel(f"targets attacked (of {metrics['n_targets']})")
    ax.set_ylabel("trials")
    ax.set_title(f"{metrics['boxes']['prior']} prior, {metrics['boxes']['mechanism']}, "
                 f"eps={metrics['privacy']['epsilon']:.3g} at delta={metrics['privacy']['delta']:g}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure_atomic(fig, path)


def run_game(cfg: DictConfig, output_dir: str | os.PathLike, cache: StageCache | None = None, logger=None) -> dict:
    """Play the game of cfg and write metrics.json and figures/successes.png into output_dir.

    Everything is computed before anything is written, so a refused value leaves no metrics.json.
    The logger (pipeline.tracking) receives the metrics and the figure.
    """
    output_dir = Path(output_dir)
    metrics, _, _ = compute_metrics(cfg, cache)
    figure = output_dir / "figures" / "successes.png"
    plot_successes(metrics, figure)
    write_json_atomic(output_dir / "metrics.json", metrics)
    if logger is not None:
        logger.log_metrics(metrics)
        logger.log_figures({"successes": figure})
    log.info("attack %.2f, prior baseline %.2f, bound %s (of %d targets, %d trials)",
             metrics["attack_success_mean"], metrics["prior_success_mean"], metrics["bound"],
             metrics["n_targets"], metrics["trials"])
    return metrics


def build_logger(cfg: DictConfig):
    """Instantiate the logger group (pipeline.tracking); a refused value raises ConfigError."""
    from hydra.utils import instantiate

    try:
        return instantiate(cfg.logger)
    except Exception as exc:  # noqa: BLE001
        raise _box_error("logger", cfg, exc) from exc


def run_job(cfg: DictConfig, output_dir: str | os.PathLike, *, choices: Mapping[str, str] | None = None,
            run_name: str = "defaults", cache: StageCache | None = None) -> dict:
    """One job: run_game inside the chosen logger's run, which is closed whatever happens.

    choices are the chosen option per config group (Hydra's runtime.choices): they tag the W&B run.
    """
    from pipeline.tracking import tracked

    choices = dict(choices or {})
    tags = [f"{group}:{choices[group]}" for group in BOX_GROUPS if choices.get(group)]
    logger = build_logger(cfg)
    if cache is None:
        cache = StageCache(cfg.cache_dir)
    with tracked(logger, config=OmegaConf.to_container(cfg, resolve=True), name=run_name, group=str(cfg.name),
                 tags=tags, directory=output_dir):
        return run_game(cfg, output_dir, cache=cache, logger=logger)
