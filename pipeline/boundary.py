"""The one boundary between the engine (pipeline/game.py) and the boxes: every optional hook the engine uses,
declared once, with its contract in one line and its default when a box does not define it.

The boxes' required contracts are stages/protocols.py (whose docstrings list these optional hooks too). This is
the only module that reads optional hooks off a box (getattr/hasattr is its job); the engine asks these
functions and never probes a box itself. HOOKS names every hook declared here: {function name: (box, default)}.
A hook that is present is used as it is (its value, or its result); one that is absent gives the default.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

__all__ = [
    "HOOKS",
    "box_name", "box_params", "data_files", "reads_data_files", "stage_key_defaults",
    "use_cache", "domain_size", "per_trial", "law_key", "law_probabilities",
    "for_prior", "release_stage", "cache_release", "release_codec", "trials_side_by_side", "release_info",
    "privacy", "own_delta", "profile_params",
    "attack_label", "guesses_per_target", "variants", "prepares", "observed",
    "compute_per_trial", "bound_theorem", "mixes_trials",
    "logs_tables", "updates_config",
]


def _hook(box: Any, name: str) -> Callable | None:
    """box.<name> when it is a callable the box defines, else None."""
    hook = getattr(box, name, None)
    return hook if callable(hook) else None


# --- every box -------------------------------------------------------------------------------------------

def box_name(box: Any) -> str:
    """box.name: what the box is called in outputs; default the class name."""
    return getattr(box, "name", type(box).__name__)


def box_params(box: Any) -> dict | None:
    """box.params() -> dict: its settings for metrics.json; default None (the box reports no params)."""
    hook = _hook(box, "params")
    return hook() if hook is not None else None


def data_files(box: Any) -> Any:
    """box.data_files() -> [path]: the files the box reads (their contents key its stages); default ()."""
    hook = _hook(box, "data_files")
    return hook() if hook is not None else ()


def reads_data_files(box: Any) -> bool:
    """Whether the box declares data_files() (its stage keys then hold the files' hashes, not where they lie);
    default False."""
    return _hook(box, "data_files") is not None


def stage_key_defaults(box: Any) -> Mapping | None:
    """type(box).STAGE_KEY_DEFAULTS: settings added after artifacts were cached, left out of stage keys at these
    values; default None."""
    return getattr(type(box), "STAGE_KEY_DEFAULTS", None)


# --- prior and its trial law -----------------------------------------------------------------------------

def use_cache(prior: Any, get_or_compute: Callable) -> None:
    """prior.use_cache(get_or_compute): an expensive fit or scoring made a stage of its own; default: nothing."""
    hook = _hook(prior, "use_cache")
    if hook is not None:
        hook(get_or_compute)


def domain_size(prior: Any) -> Any:
    """prior.domain_size: the number of candidates per target; default None (not one number)."""
    return getattr(prior, "domain_size", None)


def per_trial(prior: Any) -> bool:
    """prior.per_trial: whether for_trial(X) depends on the records (a fresh law per trial); default False."""
    return bool(getattr(prior, "per_trial", False))


def law_key(law: Any) -> Any:
    """law.key(): what identifies a trial's law in an attack's prepare stage key; default None."""
    return law.key() if hasattr(law, "key") else None


def law_probabilities(law: Any) -> Any:
    """law.probabilities: each target's whole prior, an (n, candidates) array (rows summing to 1), as the whole-prior
    theorems and the worst case's floor read it; default None (the law gives p_i = max pi_i only)."""
    return getattr(law, "probabilities", None)


# --- mechanism -------------------------------------------------------------------------------------------

def for_prior(mechanism: Any, prior: Any) -> Any:
    """mechanism.for_prior(prior) -> mechanism bound to the prior's records (a table's domain and known
    columns); default the mechanism itself."""
    hook = _hook(mechanism, "for_prior")
    return hook(prior) if hook is not None else mechanism


def release_stage(mechanism: Any) -> Callable | None:
    """mechanism.release_stage(config, X, seed, trial) -> (stage, key): its own key for a trial's release;
    default None (the engine's key: its params, the records' hash, the seed and the trial)."""
    return _hook(mechanism, "release_stage")


def cache_release(mechanism: Any) -> bool:
    """mechanism.cache_release: whether each trial's release is a cached stage; default False."""
    return bool(getattr(mechanism, "cache_release", False))


def _to_arrays(a) -> dict:
    return {"release": np.asarray(a)}


def _from_arrays(arrays: Mapping) -> Any:
    return arrays["release"]


def release_codec(mechanism: Any) -> tuple[Callable, Callable]:
    """(mechanism.release_arrays(a) -> {name: array}, mechanism.release_from_arrays(arrays) -> a): how a cached
    release is stored; default the plain codec, one array named "release"."""
    return (getattr(mechanism, "release_arrays", None) or _to_arrays,
            getattr(mechanism, "release_from_arrays", None) or _from_arrays)


def trials_side_by_side(mechanism: Any) -> Callable | None:
    """mechanism.trials_side_by_side(n) -> how many of n trials it releases together, with
    mechanism.release_side_by_side(Xs, rngs) -> [a] their releases (DP-SGD); default None (one at a time)."""
    return _hook(mechanism, "trials_side_by_side")


def release_info(mechanism: Any, a: Any) -> Mapping:
    """mechanism.release_info(a) -> {name: number}: per-trial numbers the release reports; default {}."""
    hook = _hook(mechanism, "release_info")
    return hook(a) if hook is not None else {}


def privacy(mechanism: Any) -> Mapping:
    """mechanism.privacy() -> dict: its own accounting, or why it is not private ("reason"); default {}."""
    hook = _hook(mechanism, "privacy")
    return hook() if hook is not None else {}


def own_delta(mechanism: Any) -> Any:
    """mechanism.delta: the delta at which its epsilon is reported; default None."""
    return getattr(mechanism, "delta", None)


def profile_params(profile: Any) -> Mapping:
    """profile.params() -> dict: the privacy profile's parameters; default {"profile": its class name}."""
    return profile.params() if hasattr(profile, "params") else {"profile": type(profile).__name__}


# --- attack ----------------------------------------------------------------------------------------------

def attack_label(attack: Any) -> str:
    """attack.label, else attack.name: what the attack's columns are called; default the class name."""
    return str(getattr(attack, "label", None) or getattr(attack, "name", type(attack).__name__))


def guesses_per_target(attack: Any) -> int | None:
    """attack.k: guesses per target; default None (the first trial's guesses tell)."""
    k = getattr(attack, "k", None)
    return int(k) if k is not None else None


def variants(attack: Any) -> Mapping:
    """attack.variants() -> {label: attack}: other attacks scored on the same release; default {}."""
    hook = _hook(attack, "variants")
    return hook() if hook is not None else {}


def prepares(attack: Any) -> bool:
    """Whether the attack has a metric-free expensive step, attack.prepare(a, law, mechanism) -> array (cached
    per trial, keyed by attack.prepare_key() -> dict), then attack.decide(prepared, law, metric) -> z instead of
    guess; default False."""
    return _hook(attack, "prepare") is not None


def observed(attack: Any) -> Mapping:
    """attack.observed() -> {name: number | None}: per-trial numbers the attack reports (a fitted temperature);
    default {}."""
    hook = _hook(attack, "observed")
    return hook() if hook is not None else {}


# --- bound -----------------------------------------------------------------------------------------------

def compute_per_trial(bound: Any, *args) -> Any:
    """bound.compute_per_trial(profile, prior, metric, trials, confidences): per-trial counts for bounds
    conditional on the release; default None."""
    return bound.compute_per_trial(*args) if hasattr(bound, "compute_per_trial") else None


def bound_theorem(bound: Any, profile, prior, metric, trials) -> dict | None:
    """bound.theorem(profile, prior, metric, trials) -> dict: the record of the theorem behind the counts;
    default None."""
    return bound.theorem(profile, prior, metric, trials) if hasattr(bound, "theorem") else None


def mixes_trials(bound: Any) -> bool:
    """bound.mixes_trials: whether, under per-trial laws, the bound is over the mixture of the trials (computed
    once, Theorem 3.2) rather than per trial; default False."""
    return bool(getattr(bound, "mixes_trials", False))


# --- logger (not a box; pipeline.tracking) ---------------------------------------------------------------

def logs_tables(logger: Any) -> bool:
    """Whether the logger has log_table(name, columns, rows); default False."""
    return hasattr(logger, "log_table")


def updates_config(logger: Any) -> bool:
    """Whether the logger has update_config(config); default False."""
    return hasattr(logger, "update_config")


#: Every hook declared here: {function: (what has it, its default when absent)}; test_boundary exercises each.
HOOKS: dict[str, tuple[str, Any]] = {
    "box_name": ("box", "the class name"),
    "box_params": ("box", None),
    "data_files": ("box", ()),
    "reads_data_files": ("box", False),
    "stage_key_defaults": ("box", None),
    "use_cache": ("prior", None),
    "domain_size": ("prior", None),
    "per_trial": ("prior", False),
    "law_key": ("law", None),
    "law_probabilities": ("law", None),
    "for_prior": ("mechanism", "the mechanism itself"),
    "release_stage": ("mechanism", None),
    "cache_release": ("mechanism", False),
    "release_codec": ("mechanism", "(the plain codec: {'release': array})"),
    "trials_side_by_side": ("mechanism", None),
    "release_info": ("mechanism", {}),
    "privacy": ("mechanism", {}),
    "own_delta": ("mechanism", None),
    "profile_params": ("profile", "{'profile': class name}"),
    "attack_label": ("attack", "the class name"),
    "guesses_per_target": ("attack", None),
    "variants": ("attack", {}),
    "prepares": ("attack", False),
    "observed": ("attack", {}),
    "compute_per_trial": ("bound", None),
    "bound_theorem": ("bound", None),
    "mixes_trials": ("bound", False),
    "logs_tables": ("logger", False),
    "updates_config": ("logger", False),
}
