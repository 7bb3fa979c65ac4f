"""The one game (Algorithm 1): plays every combination of boxes from a composed config and writes metrics.json.

For each of R trials: sample targets X ~ prior, take the law the attacker holds in that trial
(prior.for_trial(X): the prior itself, or per-record conditionals such as BayNet's given the known columns),
release a = M(X), let the attack and each of its variants guess z = A(a, law, M, metric), and score
L(X, z); the prior-only baseline scores the law's a-priori guess z* (as many guesses per target as the attack,
the same metric) on the same X. The box contracts are stages/protocols.py; every optional hook is read
through pipeline/boundary.py (its default when a box lacks it), never off a box here. `play_trials` is the project's
only trial loop: the experiments (pipeline/experiments) list points and play each as a game here.

Stages (pipeline.cache): the played trials (`trials`, keyed by the four game boxes' configs, the contents of
every data file they read, the seed and the trials), and inside them, per trial, the release when the
mechanism declares `cache_release` (a DP-SGD training, a table's marginals) and an attack's metric-free
`prepare` step (RAP's relaxed table), so a sweep over bounds, confidences, metrics or target columns plays
each expensive step once, and an edited data file plays them again; then the bounds and the floor (`bound`, keyed
by the trials' key, the bound box's config, the profile's identity, n, the confidences and every theorem's version:
bound_stage_config), so a rerun computes no bound. A mechanism that trains several trials
together (trials_side_by_side: DP-SGD) gets the uncached trials' records before the loop and caches each
trial's release as its own entry; the loop then plays every trial as usual. The bound box then turns the
mechanism's privacy profile and the law(s) into counts at the configured confidences.

What a trial keeps does not grow with the number of targets beyond what the bounds need: its
successes and the prior success of the attack's guesses grouped into distinct values
(stages.bound.box.PlayedTrials); a per-trial law keeps the trial's records (the bound rebuilds the law).
The per-target guesses and prior successes are kept only when `save_per_target=true` (they then go to
<job>/per_target/).
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from omegaconf import DictConfig, OmegaConf

from pipeline import boundary
from pipeline.cache import StageCache, data_fingerprints, load_arrays, save_arrays
from pipeline.errors import ConfigError, _box_error  # noqa: F401 (ConfigError: also this module's name for it)
from stages._progress import Progress  # the one progress display
from pipeline.record import AttackPlay, PlayedGame
from pipeline.io import confidence_key, plain
from stages.bound import _validate
from stages.bound.box import PlayedTrials, TrialLaws, distributions_of, group_prior_success, theorem_versions
from stages.bound import floor
from stages.mechanism import DEFAULT_DELTA

__all__ = [
    "BOX_GROUPS",
    "Boxes",
    "ConfigError",
    "Progress",
    "build_boxes",
    "check_run_settings",
    "check_boxes",
    "play_trials",
    "attacks_of",
    "PlayedGame",
    "bind_mechanism",
    "bound_of",
    "floor_of",
    "game_stage",
    "bound_stage_config",
    "game_metrics",
    "release_key",
    "trials_stage_config",
    "privacy_of",
    "exceed_fractions",
    "audit_of",
    "audit_stage",
    "audit_warnings",
]

log = logging.getLogger(__name__)

BOX_GROUPS = ("prior", "mechanism", "attack", "metric", "bound")
# The delta at which a run's epsilon is reported when its mechanism has no delta of its own and is not
# eps-DP (the Gaussian mechanism given by mu): the paper's delta, the one at which such a profile is also judged
# private or not (stages.mechanism.judge_privacy). privacy["delta_source"] says which applied.
FALLBACK_DELTA = DEFAULT_DELTA
# Bump when the way trials are played changes, so old cached trials are not reused.
# 2: the baseline z* has the attack's k; trials keep grouped prior successes; data files are hashed.
# 3: one engine: per-trial laws (records kept), attack variants, the release and the attack's prepare cached.
TRIALS_STAGE_VERSION = 3
# The per-trial release and attack stages (pipeline.game.release_key, _guess).
RELEASE_STAGE_VERSION = 1
ATTACK_STAGE_VERSION = 1
# The bounds and the floor (pipeline.game.bound_stage_config). Bump when the stage's record changes; a theorem's
# numbers are versioned by the theorem (stages.bound.box.theorem_versions, in the key).
BOUND_STAGE_VERSION = 2  # 2: the floor record holds its mixtures
# Config keys that say where data files are, not what they hold: the files' hashes replace them in stage keys.
_DATA_LOCATION_KEYS = ("data_dir",)


@dataclass
class Boxes:
    prior: Any
    mechanism: Any
    attack: Any
    metric: Any
    bound: Any

    def names(self) -> dict[str, str]:
        return {group: boundary.box_name(box) for group, box in self.as_dict().items()}

    def as_dict(self) -> dict[str, Any]:
        return dict(zip(BOX_GROUPS, (self.prior, self.mechanism, self.attack, self.metric, self.bound)))

    def params(self) -> dict[str, Any]:
        """Each box's params() (e.g. the Zipf exponent fitted to a counts file), for metrics.json."""
        params = {group: boundary.box_params(box) for group, box in self.as_dict().items()}
        return {group: plain(value) for group, value in params.items() if value is not None}


# What a box raises for a bad config: a refused value, a missing data file, a missing optional
# dependency, an argument the constructor does not take. Anything else is a bug and keeps its traceback.
def build_boxes(cfg: DictConfig) -> Boxes:
    """Instantiate the five boxes from their config groups; a refused value raises ConfigError."""
    from hydra.utils import instantiate

    built = {}
    for group in BOX_GROUPS:
        if cfg.get(group) is None:
            raise ConfigError(f"{group} must be chosen, got nothing; add {group}=<option> to the command line.", key=group)
        try:
            built[group] = instantiate(cfg[group], _convert_="all")
        except Exception as exc:  # noqa: BLE001 - every construction failure is a config problem
            raise _box_error(group, cfg, exc) from exc
    return Boxes(**built)


#: The values of the `audit` setting (conf/config.yaml): every trial's audit, the median trial's, none.
AUDIT_MODES = ("all", "median", "none")


def audit_mode(cfg: DictConfig) -> str:
    """The `audit` setting (`all` without one), or a ConfigError naming it, the value and the fix."""
    mode = cfg.get("audit", "all")
    if not isinstance(mode, str) or mode not in AUDIT_MODES:
        raise ConfigError(f"audit must be one of {', '.join(AUDIT_MODES)} (every trial's audit, the median trial's, "
                          f"none), got {mode!r}; e.g. audit=median.")
    return mode


def check_run_settings(cfg: DictConfig) -> tuple[int | list[int], int, np.ndarray]:
    """Validate the game's own keys (seed, trials, confidences); return them as (seed, trials, confidences)."""
    try:
        raw_seed = OmegaConf.to_object(cfg.seed) if OmegaConf.is_config(cfg.seed) else cfg.seed
        if isinstance(raw_seed, (list, tuple)):
            # a list of ints: the SeedSequence entropy of a second game of the same setting (Figure llm's
            # idealized Gaussian plays seed=[seed, 1])
            if not raw_seed:
                raise _validate.ArgumentError("seed", "seed must be an integer >= 0 or a non-empty list of them, got [].")
            seed = [_validate.integer(f"seed[{i}]", s, minimum=0) for i, s in enumerate(raw_seed)]
        else:
            seed = _validate.integer("seed", raw_seed, minimum=0)
        trials = _validate.integer("trials", cfg.trials, minimum=1)
        raw = OmegaConf.to_object(cfg.confidences) if OmegaConf.is_config(cfg.confidences) else cfg.confidences
        confidences = np.atleast_1d(_validate.confidence("confidences", raw)).reshape(-1)
    except _validate.ArgumentError as exc:  # the argument is the top-level key (seed[1]: the key seed)
        raise ConfigError(str(exc), key=exc.argument.split("[", 1)[0]) from exc
    if confidences.size == 0:
        raise ConfigError("confidences must list at least one level in (0, 1), got []; e.g. confidences=[0.05,0.5,0.95].",
                          key="confidences")
    levels, counts = np.unique(confidences, return_counts=True)
    if np.any(counts > 1):
        repeated = ", ".join(f"{float(c):g}" for c in levels[counts > 1])
        given, once = (",".join(f"{float(c):g}" for c in values) for values in (confidences, levels))
        raise ConfigError(f"confidences must list each level once, got [{given}] ({repeated} more than once); drop "
                          f"the repeats, e.g. confidences=[{once}].", key="confidences")
    return seed, trials, confidences


def save_per_target(cfg: DictConfig) -> bool:
    """The `save_per_target` flag: keep every trial's guesses and prior successes (R x n arrays)."""
    value = cfg.get("save_per_target", False)
    if not isinstance(value, bool):
        raise ConfigError(f"save_per_target must be true or false, got {value!r}; e.g. save_per_target=true.",
                          key="save_per_target")
    return value


def guesses_per_target(attack) -> int | None:
    """The attack's k (guesses per target) if it declares one, else None (the first trial's guesses tell)."""
    return boundary.guesses_per_target(attack)


def check_boxes(boxes: Boxes) -> None:
    """Refuse box combinations no single box can judge: more guesses per target than candidates."""
    k = guesses_per_target(boxes.attack)
    domain = boundary.domain_size(boxes.prior)
    if k is not None and domain is not None and k > int(domain):
        raise ConfigError(
            f"attack.k must be at most the prior's domain_size ({int(domain)}): with more guesses than candidates "
            f"every target is attacked, got {k}; lower attack.k or raise prior.domain_size.", key="attack.k")


def _drop_data_locations(config: Any) -> Any:
    if isinstance(config, Mapping):
        return {k: _drop_data_locations(v) for k, v in config.items() if k not in _DATA_LOCATION_KEYS}
    return config


def _drop_stage_key_defaults(config: Any, box: Any) -> Any:
    defaults = boundary.stage_key_defaults(box)
    if not isinstance(config, Mapping) or not isinstance(defaults, Mapping):
        return config
    return {k: v for k, v in config.items() if not (k in defaults and v == defaults[k])}


def trials_stage_config(cfg: DictConfig, seed: int, trials: int, boxes: Boxes | None = None) -> dict:
    """What determines the played trials: the four game boxes, the contents of the data files they read
    (size and SHA-256, not where they lie), the seed, the number of trials and whether per-target
    arrays are kept."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    game = {group: resolved[group] for group in ("prior", "mechanism", "attack", "metric")}
    if boxes is not None:
        # A box that lists its data files is keyed by their contents instead of by where they lie.
        game = {group: _drop_data_locations(config) if boundary.reads_data_files(boxes.as_dict()[group])
                else config for group, config in game.items()}
        # A setting added to a box after artifacts were cached is left out at its default (the box's
        # STAGE_KEY_DEFAULTS), so the key stays the one from before the setting existed.
        game = {group: _drop_stage_key_defaults(config, boxes.as_dict()[group]) for group, config in game.items()}
    config = {
        "stage": "trials",
        "version": TRIALS_STAGE_VERSION,
        **game,
        "seed": seed,
        "trials": trials,
    }
    if boxes is not None:
        files = data_fingerprints({group: boxes.as_dict()[group] for group in game})
        if files:
            config["data_files"] = {group: [{"size": f["size"], "sha256": f["sha256"]} for f in found]
                                    for group, found in files.items()}
    if save_per_target(cfg):
        config["per_target"] = True
    return config


def attacks_of(attack) -> dict[str, Any]:
    """{label: attack}: the attack box itself (under its label, else its name) and its variants(), all scored
    on the same release of every trial."""
    primary = boundary.attack_label(attack)
    out = {primary: attack}
    variants = boundary.variants(attack)
    for label, variant in variants.items():
        if str(label) in out:
            raise ConfigError(f"attack variants must have distinct names, got {label!r} twice; drop it from the "
                              f"attack's variants.", key="attack.variants")
        out[str(label)] = variant
    return out


def bind_mechanism(mechanism, prior):
    """The mechanism bound to what the prior's records look like (for_prior: a table's domain and known columns)."""
    return boundary.for_prior(mechanism, prior)


def _records_digest(X) -> str:
    import hashlib

    x = np.ascontiguousarray(np.asarray(X))
    return hashlib.sha256(repr((x.shape, str(x.dtype))).encode() + x.tobytes()).hexdigest()


def release_key(mechanism, config: Mapping | None, X, seed, trial: int) -> tuple[str, dict]:
    """(stage, key) of trial `trial`'s release: the mechanism's own key (release_stage) if it has one, else its
    parameters as bound to the prior, the records' SHA-256, the seed and the trial (the mechanism's seed is
    child `trial` of SeedSequence(seed), so the key determines the release)."""
    own = boundary.release_stage(mechanism)
    if own is not None:
        return own(dict(config or {}), X, seed, trial)
    return "release", {"stage": "release", "version": RELEASE_STAGE_VERSION, "mechanism": plain(mechanism.params()),
                       "records": _records_digest(X), "seed": plain(seed), "trial": int(trial)}


def _release(mechanism, config, X, seed, trial: int, rng_seed, cache: StageCache | None, released=None):
    """Trial `trial`'s release a = M(X), through the cache's release stage when the mechanism asks for it
    (cache_release: a DP-SGD training, a table's marginals); returns (a, a function giving its key: the key is
    computed only where a stage needs it, not in every trial of a large game). `released`: the release already
    made (trained side by side with other trials, and cached), used as it is."""
    computed: list = []

    def key() -> tuple[str, dict]:
        if not computed:
            computed.append(release_key(mechanism, config, X, seed, trial))
        return computed[0]

    if released is not None:
        return released, key
    if cache is None or not boundary.cache_release(mechanism):
        return mechanism.release(X, np.random.default_rng(rng_seed)), key
    to_arrays, from_arrays = boundary.release_codec(mechanism)

    def compute(directory: Path) -> None:
        save_arrays(directory, **to_arrays(mechanism.release(X, np.random.default_rng(rng_seed))))

    stage, config_key = key()
    return from_arrays(load_arrays(cache.get_or_compute(stage, config_key, compute))), key


def _releases_side_by_side(mechanism, config, prior, seed, trials: int, cache: StageCache | None) -> dict[int, Any]:
    """{trial: release} of the trials a mechanism trains several at a time (its trials_side_by_side(n) > 1: DP-SGD),
    each trial from the same seeds and records as in play_trials' loop, each stored in the cache's release stage
    (one entry per trial, as when trained alone). Trials already cached are left to the loop, which reads them;
    {} when the mechanism trains one trial at a time."""
    together = boundary.trials_side_by_side(mechanism)
    if together is None or trials < 2:
        return {}
    cached = cache is not None and boundary.cache_release(mechanism)
    root = np.random.SeedSequence(seed)
    todo = []
    for t in range(trials):  # the loop's own children and records
        data_seed, mechanism_seed = root.spawn(1)[0].spawn(2)
        X = prior.sample(np.random.default_rng(data_seed), prior.n_targets)
        if not (cached and cache.exists(*release_key(mechanism, config, X, seed, t))):
            todo.append((t, X, mechanism_seed))
    size = together(len(todo)) if len(todo) > 1 else 1
    if size < 2:
        return {}
    to_arrays, _ = boundary.release_codec(mechanism)
    out: dict[int, Any] = {}
    for group in np.array_split(np.arange(len(todo)), -(-len(todo) // size)):
        chunk = [todo[i] for i in group]
        started = time.monotonic()
        releases = mechanism.release_side_by_side([X for _, X, _ in chunk],
                                                  [np.random.default_rng(s) for _, _, s in chunk])
        log.info("trials %s trained side by side in %.1f s", ", ".join(str(t + 1) for t, _, _ in chunk),
                 time.monotonic() - started)
        for (t, X, _), a in zip(chunk, releases):
            if cached:
                cache.get_or_compute(*release_key(mechanism, config, X, seed, t),
                                     lambda directory, a=a: save_arrays(directory, **to_arrays(a)))
            out[t] = a
    return out


def _guess(attack, a, law, mechanism, metric, key, cache: StageCache | None) -> np.ndarray:
    """z = attack.guess(...); an attack with a metric-free expensive step (prepare) has it cached per trial,
    keyed by the release, the attack's settings and the law, so other metrics, target columns and bounds reuse it."""
    if not boundary.prepares(attack):
        return np.asarray(attack.guess(a, law, mechanism, metric))
    if cache is None:
        prepared = attack.prepare(a, law, mechanism)
    else:
        config = {"stage": "attack", "version": ATTACK_STAGE_VERSION, "release": key()[1],
                  "attack": plain(attack.prepare_key()), "law": plain(boundary.law_key(law))}

        def compute(directory: Path) -> None:
            save_arrays(directory, prepared=attack.prepare(a, law, mechanism))

        prepared = load_arrays(cache.get_or_compute("attack", config, compute))["prepared"]
    return np.asarray(attack.decide(prepared, law, metric))


def play_trials(boxes: Boxes, seed, trials: int, *, per_target: bool = False, cache: StageCache | None = None,
                mechanism_config: Mapping | None = None) -> PlayedGame:
    """Play `trials` rounds of Algorithm 1, the one trial loop of the project; every trial draws from its own
    child of SeedSequence(seed) (seed: an int, or a list of ints for a second game of the same job).

    Per trial: X ~ prior, the trial's law = prior.for_trial(X) (the prior itself unless it depends on the
    records), a = M(X) (a cached stage when the mechanism asks), then the attack and each of its variants guess
    and are scored by law.score, and the baseline z* = law.a_priori_guess (as many guesses per target as the
    attack, same metric) is scored on the same X. Returns the typed record (pipeline.record.PlayedGame): per attack (the attack, then its
    variants) its successes (R,), the prior success p_i of its guesses grouped per trial and what it reports per
    trial; the baseline's successes (R,) and expected successes sum_i p*_i (R,); what the release reports per
    trial; for a per-trial law the records (R, N, d), from which the bound rebuilds each trial's law; with
    per_target also the guesses (R, n, k) and their prior successes (R, n).
    """
    prior, attack, metric = boxes.prior, boxes.attack, boxes.metric
    mechanism = bind_mechanism(boxes.mechanism, prior)
    attacks = attacks_of(attack)
    labels = list(attacks)
    per_trial_law = boundary.per_trial(prior)
    successes = {label: np.zeros(trials, dtype=np.int64) for label in labels}
    groups: dict[str, list] = {label: [] for label in labels}
    observed: dict[str, list] = {}
    release_info: dict[str, list] = {}
    prior_successes = np.zeros(trials, dtype=np.int64)
    prior_expected = np.zeros(trials, dtype=float)
    records, guesses, attack_prior_success = [], [], []
    k = guesses_per_target(attack)
    fixed_star = None
    ahead = _releases_side_by_side(mechanism, mechanism_config, prior, seed, trials, cache)  # {} unless DP-SGD
    progress = Progress(trials, "trials", logger=log)
    try:
        root = np.random.SeedSequence(seed)
        # One child at a time: the same children as root.spawn(trials), without holding all of them at once.
        for t in range(trials):
            child = root.spawn(1)[0]
            data_seed, mechanism_seed = child.spawn(2)
            X = prior.sample(np.random.default_rng(data_seed), prior.n_targets)
            law = prior.for_trial(X)
            a, key = _release(mechanism, mechanism_config, X, seed, t, mechanism_seed, cache, ahead.pop(t, None))
            for name, value in boundary.release_info(mechanism, a).items():
                release_info.setdefault(name, []).append(value)
            for label, att in attacks.items():
                z = _guess(att, a, law, mechanism, metric, key, cache)
                if z.ndim == 1:
                    z = z[:, None]
                if k is None:
                    k = int(z.shape[1])
                successes[label][t] = int(np.sum(law.score(X, z, metric)))
                p = np.asarray(law.success_probability(z, metric), dtype=float)
                groups[label].append(group_prior_success(p))
                for name, value in boundary.observed(att).items():
                    observed.setdefault(f"{label}__{name}", []).append(np.nan if value is None else value)
                if per_target and label == labels[0]:
                    guesses.append(z.astype(np.int64))
                    attack_prior_success.append(p)
            # The baseline guesses as often per target as the attack does, under the same metric.
            if per_trial_law or fixed_star is None:
                z_star = np.asarray(law.a_priori_guess(metric, k))
                star = (z_star, float(np.sum(law.success_probability(z_star, metric))))
                fixed_star = None if per_trial_law else star
            else:
                star = fixed_star
            prior_successes[t] = int(np.sum(law.score(X, star[0], metric)))
            prior_expected[t] = star[1]
            if per_trial_law:
                records.append(np.asarray(X))
            progress.step()
    finally:
        progress.close()
    n = int(prior.n_targets)
    plays = []
    for label in labels:
        prefix = f"{label}__"
        plays.append(AttackPlay(label=label, successes=successes[label],
                                trials=PlayedTrials.from_groups(groups[label], k, n),
                                observed={name[len(prefix):]: np.asarray(v, dtype=float)
                                          for name, v in observed.items() if name.startswith(prefix)}))
    return PlayedGame(attacks=tuple(plays), prior_successes=prior_successes, prior_expected=prior_expected, k=int(k),
                      n_targets=n, release={name: np.asarray(v) for name, v in release_info.items()},
                      records=np.stack(records) if per_trial_law else None,
                      guesses=np.stack(guesses) if per_target else None,
                      attack_prior_success=np.stack(attack_prior_success) if per_target else None)


def privacy_of(mechanism) -> dict:
    """The run's privacy guarantee for metrics.json: the profile's parameters and its (epsilon, delta).

    delta is the mechanism's own (mechanism.delta) when it has one; an eps-DP profile (randomized
    response) reports its eps at delta = 0; otherwise (the Gaussian mechanism given by mu) epsilon is
    reported at FALLBACK_DELTA, and `delta_source` says which of the three applied. A mechanism
    without a profile (DP-SGD with clipping=none) is not private: {"private": False, "reason": ...},
    no epsilon, no delta.
    """
    profile = mechanism.profile
    if profile is None:
        reason = boundary.privacy(mechanism).get("reason") or \
            f"mechanism {boundary.box_name(mechanism)} has no privacy profile"
        return {"private": False, "reason": reason, "epsilon": None, "delta": None}
    params = boundary.profile_params(profile)
    own_delta = boundary.own_delta(mechanism)
    if own_delta is not None:
        delta, source = float(own_delta), "mechanism.delta"
    elif profile.pure_epsilon() is not None:  # the profile says what it is (PrivacyProfile.pure_epsilon)
        delta, source = 0.0, "pure eps-DP (delta = 0)"
    else:
        delta, source = FALLBACK_DELTA, (f"the mechanism has no delta (it is given by its profile, e.g. mu); epsilon "
                                         f"is reported at delta = {FALLBACK_DELTA:g}")
    epsilon = float(profile.pure_epsilon()) if source.startswith("pure") else float(profile.epsilon(delta))
    # the mechanism's own accounting beside it (DP-SGD: the noise multiplier, steps, epsilon under add/remove
    # and opacus's), where it has one; the keys above win
    own = plain(boundary.privacy(mechanism))
    return {**own, "private": True, **plain(params), "delta": delta, "epsilon": epsilon, "delta_source": source}


def _bound_counts(result: Any, confidences: np.ndarray) -> dict[str, Any]:
    """The bound box's {confidence: count(s)} with string keys for JSON (one count, or one per trial)."""
    if not isinstance(result, Mapping):
        raise TypeError(f"a bound box must return a dict confidence -> count, got {type(result).__name__}.")
    return {confidence_key(c): plain(v) for c, v in result.items()}


def _exceed_fraction(attack_successes: np.ndarray, counts: Any) -> float:
    """Fraction of trials in which the attack exceeded the bound count (one count, or one per trial)."""
    counts = np.asarray(counts)
    return float(np.mean(attack_successes > counts)) if counts.size in (1, attack_successes.size) else float("nan")


def exceed_fractions(attack_successes, bound: Mapping[str, Any] | None) -> dict[str, float] | None:
    """{confidence: fraction of trials in which the attack exceeded the bound at it} (None without a bound).

    At confidence c the attack may exceed the bound in up to 1 - c of the trials in expectation.
    """
    if bound is None:
        return None
    return {c: _exceed_fraction(np.asarray(attack_successes), counts) for c, counts in bound.items()}


def _single_trial(summary: PlayedTrials, r: int) -> PlayedTrials:
    return PlayedTrials.from_groups([summary.groups(r)], summary.k, summary.n_targets)


def bound_of(boxes: Boxes, summary: PlayedTrials, confidences: np.ndarray, laws: list | None = None) -> dict:
    """The bound box's counts for one attack's played trials: {"bound", "per_trial", "theorem"}.

    A fixed prior: bound.compute once (and compute_per_trial for bounds conditional on the release). Per-trial
    laws (prior.per_trial, e.g. BayNet given each trial's known columns): the box runs on each trial's law and
    its trial alone, so "bound" holds one count per trial (as the paper's tabular appendix bounds each trial);
    a box whose bound is over the mixture of the trials (mixes_trials: Theorem 3.2) runs once over all of them.
    """
    profile, metric, box = boxes.mechanism.profile, boxes.metric, boxes.bound
    if laws is None:
        args = (profile, boxes.prior, metric, summary, confidences)
        bound, winners = box.compute_theorems(*args)
        per_trial = boundary.compute_per_trial(box, *args)
        theorem = boundary.bound_theorem(box, *args[:4])
        by_confidence = {confidence_key(c): w for c, w in winners.items()}
    elif boundary.mixes_trials(box):
        # a bound over the mixture of the trials (Theorem 3.2; Theorem 3 averaged): every trial's law at once
        every = TrialLaws(tuple(laws))
        bound, winners = box.compute_theorems(profile, every, metric, summary, confidences)
        per_trial = None
        theorem = boundary.bound_theorem(box, profile, every, metric, summary)
        by_confidence = {confidence_key(c): w for c, w in winners.items()}
    else:
        results = [box.compute_theorems(profile, law, metric, _single_trial(summary, r), confidences)
                   for r, law in enumerate(laws)]
        counts = [one for one, _ in results]
        bound = {c: [int(one[c]) for one in counts] for c in counts[0]}
        per_trial = None
        # the theorem depends on the laws only through k and the domain, the same in every trial; its record's
        # numbers over the trials (pure_dp's expected) read every trial's played p_i
        theorem = boundary.bound_theorem(box, profile, laws[0], metric, summary)
        # which theorem gave each trial's count: {confidence: {theorem: trials}}
        by_confidence = {confidence_key(c): {name: sum(1 for _, w in results if w[c] == name)
                                          for name in sorted({w[c] for _, w in results})} for c in counts[0]}
    if theorem is not None:
        theorem = {**theorem, "by_confidence": by_confidence, "theorem": _winning_name(theorem, by_confidence)}
    return {"bound": bound, "per_trial": per_trial, "theorem": theorem}


def floor_of(boxes: Boxes, confidences: np.ndarray, theorem: Mapping | None, laws: list | None = None) -> dict:
    """The other end of the bracket (stages.bound.floor, THEORY.md section 11): {"counts": {confidence: count (one per
    trial for per-trial laws, as the bound; one for the mixture of the trials where the bound is over it)}, "mechanism",
    "meaning"}, the counts that a real mechanism with the game's privacy profile lets a real attack reach, so that no
    valid bound is below them; or {"counts": None, "reason"} where it is not built (success that is not one exact
    guess, as the bound box's theorem record says, or a law without each target's prior); "mechanism" names the family
    the game's profile gets (stages.bound.floor.floor_mechanism), "mixtures" the mixture reaching each count (per trial
    where the counts are; stages.bound.floor.floor_mixture's record)."""
    if theorem is None or theorem.get("set_valued") is not False:
        return {"counts": None, "reason": "the floor is built for one exact guess per target; this game's success is "
                                          "set-valued (or its bound box does not say)"}
    profile = boxes.mechanism.profile
    dists = [distributions_of(boundary.law_probabilities(law)) for law in (laws if laws is not None else [boxes.prior])]
    if any(d is None for d in dists):
        return {"counts": None, "reason": "the prior gives no per-target distribution (its probability matrix)"}
    if laws is not None and boundary.mixes_trials(boxes.bound):  # the bound is over the mixture of the trials: so is this
        found, per_trial = [floor.floor_mixture(profile, dists, confidences, over_trials=True)], False
    else:
        found, per_trial = [floor.floor_mixture(profile, d, confidences) for d in dists], laws is not None
    counts = [one.counts for one in found]
    by = {confidence_key(c): ([int(one[i]) for one in counts] if per_trial else int(counts[0][i]))
          for i, c in enumerate(confidences)}
    mixtures = [one.record() for one in found]
    return {"counts": by, "mechanism": floor.floor_mechanism(profile),
            "mixtures": mixtures if per_trial else mixtures[0],
            "meaning": "on a real mechanism with this privacy profile (the mixture under 'mixtures', per confidence: "
                       "a released coin picks a component, applied to every target) a real attack gets at least count "
                       "targets right with probability above 1 - c, so no bound valid at confidence c is below the "
                       "count: the worst case lies between these counts and the bound"}


#: The audit's stage (pipeline.cache): bump when its record changes (the audits' numbers are versioned by
#: stages.bound.audit.AUDIT_VERSION, in the key).
AUDIT_STAGE_VERSION = 3
#: The game's audit grid: theta_hat to 1% (stages.bound.audit.DEFAULT_RTOL is 0.1%; each halving costs a count bound).
AUDIT_RTOL = 1e-2
#: A job warns that its attack refutes the claimed guarantee when more trials refute it than a correct mechanism
#: gives with this probability (the upper tail of Binomial(trials, 1 - c)).
AUDIT_ALARM = 1e-3


def _audit_setting(boxes: Boxes, law, summary: PlayedTrials, whole: bool) -> dict:
    """count_bounds' arguments for the one_run box's setting on ``law`` (the a-priori guesses z*, as many per target
    as the attack makes): p*, and with ``whole`` each target's whole prior where the box reads it."""
    from stages.bound.box import prior_collision, prior_distributions
    from stages.bound.one_run import OneRunBound

    metric, k = boxes.metric, summary.k
    info = OneRunBound().theorem(boxes.mechanism.profile, law, metric, summary)
    p_star = np.asarray(law.success_probability(law.a_priori_guess(metric, k), metric), dtype=float)
    set_valued = info["set_valued"]
    dists = prior_distributions(law) if (whole and info.get("set_size", 1) is not None) else None
    return {"p": p_star if (set_valued or dists is None) else None, "distributions": dists, "set_valued": set_valued,
            "collision": prior_collision(law) if set_valued else None,
            "set_size": info.get("set_size") if (set_valued and dists is not None) else None}


def audit_of(boxes: Boxes, played: PlayedGame, confidences: np.ndarray, laws: list | None = None,
             delta: float | None = None, bounds: Mapping | None = None, per_trial: bool = True) -> dict:
    """What the attack's successes refute (stages.bound.audit, THEORY.md section 12), per attack and confidence.

    - The share of trials whose successes refute the mechanism's own claimed parameter: a trial refutes it at c when
      its successes exceed the game's own count bound at c (``bounds``, bound_of's record: the bound box's theorem
      at the claimed parameter, so this is the exceed indicator, computed once); a correct mechanism gives at most
      1 - c in expectation, and an alarm where the count is beyond chance (AUDIT_ALARM).
    - Every trial's audit (``per_trial``, in trial order; 0, or inf for the noise multiplier, where nothing is refuted)
      and their lower median with the trial that gives it (``median_*``), searched with Theorem 1, MMC and Theorem
      3.1 on the targets' p* (Theorems 3 and 4 cost seconds a grid point), so each is valid and at most the full
      minimum's audit, which ``python -m pipeline.audit`` gives for any count. A fixed prior has one auditor for
      every trial and attack (Auditor.audit_table: the distinct counts share the grid's count bounds); per-trial
      laws one per trial. ``per_trial=False`` (audit=median): the lower median of the counts alone (its trial's law),
      ``per_trial`` None.
    {"reason"} where no family fits the profile."""
    from stages.bound import audit as audits

    profile = boxes.mechanism.profile
    claimed = audits.claimed_family(profile, delta)
    if claimed is None:
        return {"reason": f"no audited family fits the profile {profile!r}"}
    fam, theta = claimed
    trial_laws = laws if laws is not None else [boxes.prior]
    out = {"family": fam.as_dict(), "claimed": theta, "guarantee": fam.guarantee(), "version": audits.AUDIT_VERSION,
           "rtol": AUDIT_RTOL,
           "per_trial_by": "Theorem 1, MMC's count, Theorem 3.1 (the minimum over those that apply) on the targets' "
                           "p*: each trial's audit, and their lower median (median, the trial giving it: median_*)"
                           if per_trial else
                           "Theorem 1, MMC's count, Theorem 3.1 (the minimum over those that apply) on the targets' "
                           "p*: the median trial's audit alone (the lower median of the counts; audit=median)",
           "share_by": "the game's own bound at the claimed parameter (its bound box and theorem): the trials that "
                       "exceed it",
           "attacks": {}}
    per_law = len(trial_laws) > 1
    auditors: dict[int, object] = {}

    def auditor(r: int):
        """The audit setting of trial r's law (one for every trial of a fixed prior), shared by the attacks."""
        key = r if per_law else 0
        if key not in auditors:
            trials = _single_trial(played.attacks[0].trials, r) if per_law else played.attacks[0].trials
            auditors[key] = audits.Auditor(**_audit_setting(boxes, trial_laws[key], trials, whole=False), family=fam,
                                           confidences=confidences, rtol=AUDIT_RTOL)
        return auditors[key]

    for attack in played.attacks:
        successes = np.asarray(attack.successes)
        record = {}
        bound = (bounds or {}).get(attack.label) if bounds else None
        if not per_trial:  # the lower median of the counts alone, audited under its trial's law
            r_median = int(np.flatnonzero(successes == np.sort(successes)[(successes.size - 1) // 2])[0])
            table = auditor(r_median).audit_table([int(successes[r_median])], start=theta)
        elif per_law:  # [confidence][trial]
            table = list(zip(*[auditor(r).audit_table([int(m)], start=theta, detail=False)
                               for r, m in enumerate(successes)]))
            table = [[one[0] for one in level] for level in table]
        else:
            table = auditor(0).audit_table(successes, start=theta, detail=False)
        for level, c in enumerate(confidences):
            key = confidence_key(c)
            found = table[level]
            if per_trial:
                thetas = np.array([one.theta for one in found], dtype=float)
                # the lower median of the trials' audits, ordered by what they refute (for the noise multiplier a
                # smaller sigma refutes more), and the trial that gives it (for a fixed prior the lower median of the
                # counts)
                order = np.lexsort((successes, thetas if fam.loss_grows else -thetas))  # ties: by the count
                r = int(order[(len(found) - 1) // 2])
                one = auditor(r).detailed(found[r])  # its count bound and theorem too
                entry = {"per_trial": thetas.tolist(), "trials_at_cap": int(sum(x.at_cap for x in found)),
                         "trials_refuting_something": int(sum(x.refutes for x in found))}
            else:
                one = found[0]
                entry = {"per_trial": None}
            entry.update({"median": one.theta, "median_successes": one.successes, "median_refutes": one.refutes,
                          "median_count": one.count, "median_theorem": one.theorem, "at_cap": one.at_cap})
            if bound is not None:
                counts = bound["per_trial"] if bound.get("per_trial") is not None else bound["bound"]
                at = np.asarray(counts[key] if key in counts else counts[c])
                refuting = int(np.sum(successes > at))
                entry.update({"share_refuting_claim": refuting / successes.size, "trials_refuting_claim": refuting,
                              "alarm": _refutes_loudly(refuting, successes.size, float(c))})
            record[key] = entry
        out["attacks"][attack.label] = record
    return out


def _refutes_loudly(refuting: int, trials: int, confidence: float) -> bool:
    """More trials refute the claim than a mechanism with the claimed guarantee gives with probability AUDIT_ALARM."""
    from scipy import stats

    return bool(refuting > 0 and stats.binom.sf(refuting - 1, trials, 1.0 - confidence) < AUDIT_ALARM)


def audit_warnings(audit: Mapping | None, label: str) -> list[str]:
    """One sentence per confidence at which the attack refutes the mechanism's claimed guarantee (audit_of's alarm)."""
    if not audit or "attacks" not in audit:
        return []
    lines = []
    for c, one in (audit["attacks"].get(label) or {}).items():
        if one.get("alarm"):
            lines.append(f"THE ATTACK REFUTES THE CLAIMED GUARANTEE: at confidence {float(c):g}, {one['trials_refuting_claim']} "
                         f"trials exceed the count bound of {audit['guarantee']} at {audit['family']['parameter']} = "
                         f"{audit['claimed']:.6g} (share {one['share_refuting_claim']:.3f}, at most {1 - float(c):.3g} "
                         f"expected): the mechanism's implementation has a bug, or a bound is wrong.")
    return lines


def audit_stage(boxes: Boxes, played: PlayedGame, confidences: np.ndarray, laws: list | None, delta,
                cache: StageCache | None, bound_config: Mapping | None, bounds: Mapping | None = None,
                per_trial: bool = True) -> dict:
    """audit_of through the cache's `audit` stage (keyed by the bound stage's key and the audit's versions), or
    computed now; the same JSON either way."""
    if cache is None or bound_config is None:
        return json.loads(json.dumps(plain(audit_of(boxes, played, confidences, laws, delta, bounds, per_trial))))
    from stages.bound.audit import AUDIT_VERSION

    config = {"stage": "audit", "version": AUDIT_STAGE_VERSION, "audit": AUDIT_VERSION, "bound": dict(bound_config),
              "delta": delta, "per_trial": bool(per_trial)}

    def compute(directory: Path) -> None:
        (directory / "audit.json").write_text(
            json.dumps(plain(audit_of(boxes, played, confidences, laws, delta, bounds, per_trial))) + "\n")

    return json.loads((cache.get_or_compute("audit", config, compute) / "audit.json").read_text())


def _winning_name(theorem: Mapping, by_confidence: Mapping) -> str:
    """The record's theorem name: the box's own, or, where the box takes the minimum over several theorems,
    the one that gave every count, else 'min of A (at 0.05, 0.5), B (at 0.95)'."""
    if "candidates" not in theorem:
        return theorem["theorem"]
    at: dict[str, list[str]] = {}
    for c, w in by_confidence.items():
        for name in (w if isinstance(w, Mapping) else {w: 1}):
            at.setdefault(name, []).append(f"{float(c):g}")
    if len(at) == 1:
        return next(iter(at))
    return "min of " + ", ".join(f"{name} (at {', '.join(cs)})" for name, cs in at.items())


def _attack_metrics(attack: AttackPlay, bound: dict | None, confidences: np.ndarray) -> dict:
    """One attack's (or variant's) numbers for metrics.json: successes, prior success of its guesses, its bound
    with the theorem, and how often it exceeded the bound at every confidence."""
    successes = np.asarray(attack.successes)
    out = {"successes": successes.tolist(), "success_mean": float(np.mean(successes)),
           "prior_success_mean": float(np.mean(attack.trials.sums()))}
    if bound is not None:
        counts = _bound_counts(bound["bound"], confidences)
        per_trial = _bound_counts(bound["per_trial"], confidences) if bound["per_trial"] is not None else None
        out.update(bound=counts, bound_theorem=bound["theorem"],
                   exceed=exceed_fractions(successes, per_trial if per_trial is not None else counts),
                   **({"bound_per_trial": per_trial} if per_trial is not None else {}))
    else:
        out.update(bound=None, bound_theorem=None, exceed=None)
    observed = {name: plain(v) for name, v in attack.observed.items()}
    if observed:
        out["observed"] = observed
    return out


def game_stage(cfg: DictConfig, boxes: Boxes, seed, trials: int, cache: StageCache | None, *,
               per_target: bool = False) -> tuple[PlayedGame, dict]:
    """The played trials of cfg's boxes: through the cache's `trials` stage (keyed by the four game boxes, the
    data files' contents, the seed and the trials), or played now without a cache. Returns (record, stage
    info); the stage stores the record's arrays (PlayedGame.to_arrays)."""
    mechanism_config = OmegaConf.to_container(cfg.mechanism, resolve=True)

    def play() -> PlayedGame:
        return play_trials(boxes, seed, trials, per_target=per_target, cache=cache, mechanism_config=mechanism_config)

    if cache is None:
        return play(), {"key": None, "reused": False}
    computed_before = len(cache.computed)
    artifact = cache.get_or_compute("trials", trials_stage_config(cfg, seed, trials, boxes),
                                    lambda directory: save_arrays(directory, **play().to_arrays()))
    reused = not any(stage == "trials" for stage, _ in cache.computed[computed_before:])
    log.info("stage trials %s: %s", "reused" if reused else "computed", artifact)
    return PlayedGame.from_arrays(load_arrays(artifact)), {"key": artifact.name, "reused": reused}


def unusable_warning(attacks: Mapping[str, Mapping], n_targets: int, trials: int) -> tuple[int | None, str | None]:
    """(how many canary guesses had no usable likelihood, summed over the trials, or None if the attack does not
    say; a warning sentence when there were any). The Model Attack counts a canary whose log-probabilities are
    NaN or infinite (a training that diverged) and guesses the prior for it (observed.unusable_canaries), so
    such a run would otherwise look like an attack that merely equals the prior."""
    counts = [np.asarray((a.get("observed") or {}).get("unusable_canaries"), dtype=float)
              for a in attacks.values() if (a.get("observed") or {}).get("unusable_canaries") is not None]
    if not counts:
        return None, None
    per_trial = np.nan_to_num(max(counts, key=lambda c: float(np.nansum(c))), nan=0.0).reshape(-1)
    total = int(per_trial.sum())
    if total == 0:
        return 0, None
    hit = int(np.count_nonzero(per_trial))
    everywhere = total >= n_targets * trials
    what = ("every canary in every trial" if everywhere else
            f"{total} canaries (of {n_targets} x {trials} trials, in {hit} trial{'s' * (hit != 1)})")
    return total, (f"{what} had no usable likelihood (NaN or infinite log-probabilities: the training diverged), "
                   f"so the attack guessed the prior there and its success is the prior's, not the model's; lower "
                   f"mechanism.learning_rate (or mechanism.clip_norm) and run again.")


def bound_stage_config(cfg: DictConfig, boxes: Boxes, confidences: np.ndarray, trials_key: str | None) -> dict | None:
    """What determines a game's bounds and floor: the played trials (their stage key `trials_key`, which fixes the
    prior, the metric, the attack's guesses and the mechanism), the bound box's config, the privacy profile's identity,
    n, the confidences and the version of every theorem (stages.bound.box.theorem_versions). None where the bounds
    are not cached: no trials key (no cache), no profile (not private), or a profile whose identity is more than
    JSON (a user's delta function: stages.bound.accountants.DeltaCurve), which no later process can recognise."""
    profile = boxes.mechanism.profile
    if trials_key is None or profile is None:
        return None
    identity = profile.identity()
    if not all(isinstance(part, str) for part in identity):
        return None
    return {"stage": "bound", "version": BOUND_STAGE_VERSION, "theorems": theorem_versions(), "trials": trials_key,
            "bound": OmegaConf.to_container(cfg.bound, resolve=True), "profile": list(identity),
            "n": int(boxes.prior.n_targets),
            "confidences": [float(c) for c in confidences]}


def _bounds(boxes: Boxes, played: PlayedGame, confidences: np.ndarray, laws: list | None) -> dict:
    """Every attack's bound (bound_of) and the floor beside the first attack's (floor_of), as JSON holds them:
    {"attacks": {label: {"bound", "per_trial", "theorem"}}, "floor": ...}."""
    attacks = {attack.label: bound_of(boxes, attack.trials, confidences, laws) for attack in played.attacks}
    main = attacks[played.labels[0]]
    floor_record = floor_of(boxes, confidences, main["theorem"], laws)
    return json.loads(json.dumps(plain({"attacks": attacks, "floor": floor_record})))


def bound_stage(boxes: Boxes, played: PlayedGame, confidences: np.ndarray, laws: list | None,
                cache: StageCache | None, config: Mapping | None) -> tuple[dict, dict]:
    """(the bounds and the floor, stage info): through the cache's `bound` stage (config: bound_stage_config), or
    computed now. The record is the same JSON either way, so metrics.json is the same cold and warm."""
    if cache is None or config is None:
        return _bounds(boxes, played, confidences, laws), {"key": None, "reused": False}
    computed_before = len(cache.computed)

    def compute(directory: Path) -> None:
        (directory / "bound.json").write_text(json.dumps(_bounds(boxes, played, confidences, laws)) + "\n")

    artifact = cache.get_or_compute("bound", config, compute)
    reused = not any(stage == "bound" for stage, _ in cache.computed[computed_before:])
    log.info("stage bound %s: %s", "reused" if reused else "computed", artifact)
    return json.loads((artifact / "bound.json").read_text()), {"key": artifact.name, "reused": reused}


def game_metrics(boxes: Boxes, played: PlayedGame, confidences: np.ndarray, *, trials: int, seed,
                 files: Mapping | None = None, stage: Mapping | None = None, cache: StageCache | None = None,
                 bound_config: Mapping | None = None, audit: str = "all") -> dict:
    """metrics.json of one game from its played trials: the attack and every variant scored against the
    bound at every confidence, the prior baseline, the privacy guarantee (or why there is none), and what the
    successes refute (``audit``: AUDIT_MODES). The bounds and the floor go through the cache's `bound` stage when
    `cache` and `bound_config` (bound_stage_config) are given."""
    labels = played.labels
    summary = played.attack.trials
    privacy = privacy_of(boxes.mechanism)
    laws = None
    if played.per_trial_law:  # per-trial laws: rebuilt from each trial's records
        laws = [boxes.prior.for_trial(X) for X in played.records]
    bounds, bound_info = (bound_stage(boxes, played, confidences, laws, cache, bound_config) if privacy["private"]
                          else (None, {"key": None, "reused": False}))
    attacks = {attack.label: _attack_metrics(attack, bounds["attacks"][attack.label] if bounds else None, confidences)
               for attack in played.attacks}
    main = attacks[labels[0]]
    theorem = main["bound_theorem"]
    worst_case_floor = bounds["floor"] if bounds else None
    if theorem is not None:
        log.info("bound theorem: %s (set-valued success: %s; %s)", theorem["theorem"], theorem["set_valued"],
                 theorem["reason"])
    elif not privacy["private"]:
        log.info("not private: %s; no epsilon, no bound", privacy["reason"])
    unusable, warning = unusable_warning(attacks, played.n_targets, int(trials))
    warnings = [warning] if warning else []
    # what the attack's successes refute (THEORY.md section 12), and a loud line where they refute the claim
    mode = audit
    audit = (audit_stage(boxes, played, confidences, laws, privacy["delta"], cache, bound_config,
                         bounds["attacks"] if bounds else None, per_trial=mode == "all")
             if privacy["private"] and mode != "none" else None)
    warnings += audit_warnings(audit, labels[0])
    for line in warnings:
        log.warning(line)
    prior_successes = played.prior_successes
    release = {name: plain(v) for name, v in played.release.items()}
    metrics = {
        "n_targets": played.n_targets,
        "trials": int(trials),
        "seed": plain(seed),
        "boxes": boxes.names(),
        # The attack's guesses per target; the prior baseline z* makes as many, scored by the same metric.
        "k": summary.k,
        "baseline": {"guess": "z*", "k": summary.k, "metric": boxes.names()["metric"]},
        "attack_label": labels[0],
        "attack_successes": main["successes"],
        "prior_successes": prior_successes.tolist(),
        "attack_success_mean": main["success_mean"],
        "prior_success_mean": float(np.mean(prior_successes)),
        "attack_prior_success_mean": main["prior_success_mean"],
        # sum_i p*_i, the expected successes of the baseline under the trial's law (per trial for a per-trial law)
        "prior_expected_mean": float(np.mean(played.prior_expected)),
        "confidences": confidences.tolist(),
        # confidence -> count (a list: one count per trial for a per-trial law); None for a non-private run.
        "bound": main["bound"],
        # The theorem that produced the bound's numbers and why ({"theorem", "set_valued", "reason", "version", ...}).
        "bound_theorem": theorem,
        **({"bound_per_trial": main["bound_per_trial"]} if "bound_per_trial" in main else {}),
        # The other end of the bracket: counts a real mechanism with the same profile lets a real attack reach
        # ({"counts", "mechanism", "meaning"}, or {"counts": None, "reason"}); None for a non-private run.
        "worst_case_floor": worst_case_floor,
        # What each attack's successes refute (stages.bound.audit): per confidence the median trial's audit of the
        # mechanism's own family (mu, eps or the noise multiplier) and the share of trials refuting the claimed
        # parameter (at most 1 - c for a correct mechanism); None for a non-private run.
        "audit": audit,
        # confidence -> how often the attack exceeded the bound there (at most 1 - confidence in
        # expectation), against each trial's own bound where the bound is conditional on the release.
        "exceed": main["exceed"],
        # Every attack scored on the same releases (the attack first, then its variants), each with its
        # successes, its bound and exceedance at every confidence.
        "attacks": attacks,
        "privacy": privacy,
        # Canary guesses without a usable likelihood, summed over the trials (a diverged DP-SGD training: the attack
        # guessed the prior there); None when the attack does not report them. `warnings` says what went wrong.
        "unusable_canaries": unusable,
        "warnings": warnings,
        # Every box's parameters as built (a fitted Zipf exponent, a comparator's name, ...).
        "params": boxes.params(),
        "data_files": dict(files or {}),
        "stages": {"trials": dict(stage or {"key": None, "reused": False}), "bound": bound_info},
    }
    if release:
        metrics["release"] = release
    return metrics


def compute_metrics(cfg: DictConfig, cache: StageCache | None = None, *, seed=None) -> tuple[dict, PlayedGame, Boxes]:
    """Validate, build the boxes, play (or reuse) the trials and compute the bound: the job's numbers.

    seed: the SeedSequence entropy instead of cfg.seed (a list of ints: a second game of the same job, e.g. the
    idealized Gaussian beside DP-SGD)."""
    cfg_seed, trials, confidences = check_run_settings(cfg)
    mode = audit_mode(cfg)
    seed = cfg_seed if seed is None else seed
    per_target = save_per_target(cfg)
    from pipeline import preflight

    preflight.check_compatible(cfg)  # boxes that cannot play together: one sentence naming the pair, nothing built
    preflight.estimate_job(cfg, trials, per_target)  # logs the job's size; refuses what cannot fit in memory
    boxes = build_boxes(cfg)
    if cache is not None:
        boundary.use_cache(boxes.prior, cache.get_or_compute)  # an expensive prior (LM scores, a BayNet fit) is a stage of its own
    check_boxes(boxes)
    preflight.check_profile(cfg, boxes)  # a mechanism without a valid profile is refused before any trial
    try:
        files = data_fingerprints(boxes.as_dict())
        played, stage = game_stage(cfg, boxes, seed, trials, cache, per_target=per_target)
        metrics = game_metrics(boxes, played, confidences, trials=trials, seed=seed, files=files, stage=stage,
                               cache=cache, bound_config=bound_stage_config(cfg, boxes, confidences, stage["key"]),
                               audit=mode)
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError(str(exc).strip().splitlines()[0]) from exc
    return metrics, played, boxes
