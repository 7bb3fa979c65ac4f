"""Checks a game runs before anything expensive starts: boxes that fit together, a config that resolves,
the data files its boxes read (`check_data`: one sentence naming the file, data_dir and both fixes, the
`pipeline.data fetch` and the repository's samples), a job whose memory fits this machine, a privacy profile the
mechanism can give.

Every refusal is a ConfigError, one sentence naming the config key (or the options) and the fix, raised
before a box is built (for what the config alone tells) or before the first trial (for what needs the
built boxes). `estimate_job` logs the job's size and peak-memory estimate at its start and refuses a job
that cannot fit in the memory this process may use; the trials' progress then logs the time estimate
measured on the first trial (pipeline.game.Progress).
"""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationKeyError, OmegaConfBaseException

from pipeline import CONF_DIR
from stages.resources import available_memory  # one answer for the pipeline and the mechanisms

__all__ = ["check_config", "check_compatible", "check_data", "check_top_level", "data_needs", "top_level_keys",
           "check_profile", "estimate_job", "available_memory"]

log = logging.getLogger("pipeline.game")

# Peak memory of a game, measured (docs/pages/outputs.md: 10^6 targets x 10 candidates peaks at ~970 MB): the
# interpreter and libraries, about a dozen targets x candidates float arrays alive at once (the prior,
# its CDF, the release, the posterior and its temporaries), and what each trial keeps.
BASE_BYTES = 200 * 2**20
MATRICES = 12
PER_TRIAL_BYTES = 400  # two counts and the grouped prior successes (two small arrays) of one trial


def _config_error(message: str):
    from pipeline.errors import ConfigError

    return ConfigError(message)


def _target(cfg: DictConfig, group: str) -> str:
    node = cfg.get(group)
    if node is None or not OmegaConf.is_dict(node):
        return ""
    return str(node.get("_target_", "") or "")


def _class(target: str):
    from hydra.utils import get_class

    try:
        return get_class(target)
    except Exception:  # noqa: BLE001 - an unknown target is reported when the box is built
        return None


def _option(target: str) -> str:
    """The config option a box's _target_ comes from (its module's name: stages.prior.baynet.X -> baynet)."""
    return target.split(".")[-2] if target.count(".") >= 2 else target


def top_level_keys() -> frozenset[str]:
    """Every top-level key a game's config can hold: conf/config.yaml's keys and option groups (its defaults list), and
    the keys an experiment adds (conf/experiment/*.yaml). Read from the files, so a new key needs no edit here."""
    keys = {"hydra"}
    conf = Path(CONF_DIR)
    for path in [conf / "config.yaml", *sorted((conf / "experiment").glob("*.yaml"))]:
        node = OmegaConf.load(path)
        keys.update(str(k) for k in node.keys() if k != "defaults")
        for entry in node.get("defaults", []) or []:
            if OmegaConf.is_dict(entry) or isinstance(entry, dict):
                for group in entry:
                    name = str(group).split(" ")[-1].split("@")[0].lstrip("/")
                    if not name.startswith(("hydra", "override")) and "/" not in name:
                        keys.add(name)
    return frozenset(keys)


def check_top_level(cfg: DictConfig) -> None:
    """Refuse a top-level key that nothing reads (`+trialz=3` appends a new key: Hydra accepts it, and the game would
    run with trials unchanged), in one sentence naming the key, the nearest known key and the fix."""
    import difflib

    known = top_level_keys()
    for key in (str(k) for k in cfg.keys()):
        if key in known:
            continue
        near = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
        advice = f"did you mean {near[0]}?" if near else "check its spelling (`python -m pipeline --cfg job` prints every key)"
        raise _config_error(f"{key} is not a setting of the config (the top level has {', '.join(sorted(known - {'hydra'}))}), "
                            f"so nothing would read it; {advice}")


def check_compatible(cfg: DictConfig) -> None:
    """Refuse, from the box classes alone (stages.protocols), a prior / mechanism / attack that cannot play
    together, in one sentence naming the pair: a mechanism or an attack that needs another kind of record
    than the prior gives, an attack that needs another mechanism."""
    from stages.protocols import KINDS

    targets = {group: _target(cfg, group) for group in ("prior", "mechanism", "attack")}
    classes = {group: _class(target) for group, target in targets.items()}
    prior = classes["prior"]
    provides = getattr(prior, "provides", None) if prior is not None else None
    for group in ("mechanism", "attack"):
        box = classes[group]
        needs = tuple(getattr(box, "needs_prior", ()) or ()) if box is not None else ()
        if provides is not None and needs and provides not in needs:
            wanted = " or ".join(KINDS.get(kind, kind) for kind in needs)
            raise _config_error(
                f"{group}={_option(targets[group])} cannot play with prior={_option(targets['prior'])}: it needs "
                f"{wanted}, and the prior gives {KINDS.get(provides, provides)}; choose a {group} for that prior "
                f"or another prior.")
    attack, mechanism = classes["attack"], classes["mechanism"]
    needs = tuple(getattr(attack, "needs_mechanism", ()) or ()) if attack is not None else ()
    if mechanism is not None and needs and not all(hasattr(mechanism, name) for name in needs):
        fits = getattr(attack, "fits_mechanisms", "another mechanism")
        raise _config_error(
            f"attack={_option(targets['attack'])} cannot attack mechanism={_option(targets['mechanism'])}: "
            f"it needs {fits}; choose one of those mechanisms or another attack (e.g. attack=prior_only).")


def check_config(cfg: DictConfig) -> None:
    """Refuse, before any box is built, a top-level key nothing reads, boxes that cannot play together and a config
    that does not resolve."""
    check_top_level(cfg)
    check_compatible(cfg)
    try:
        OmegaConf.to_container(cfg, resolve=True)
    except InterpolationKeyError as exc:
        key = getattr(exc, "full_key", None) or "a config key"
        raise _config_error(
            f"{key} cannot be resolved ({str(exc).splitlines()[0]}): the options chosen do not fit together; "
            f"choose options that do, or set {key}=<value> on the command line.") from None
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "the config"
        raise _config_error(f"{key} cannot be resolved: {str(exc).splitlines()[0]}; fix that value on the "
                            f"command line.") from None
    check_data(cfg)


#: The config nodes whose boxes may read data files: the boxes of a game, the language model they share, and an
#: experiment's task and figure (which read the top-level data_dir).
_DATA_NODES = ("prior", "mechanism", "attack", "task", "figure")


def _files(argument: str, value) -> list[tuple[str, str]]:
    """(path under data_dir, kind) of what a box argument's value names; [] for an argument that names no data.

    The arguments that name data are the same in every box (conf/*/*.yaml): `counts_file` (a counts file),
    `dataset` (a table and its domain file, stages.prior.tabular.DATASETS), `enron` (a maildir folder or a CSV)
    and `tokenizer` (a folder of GPT-2 BPE files; `bytes` is built in).
    """
    if value is None or not isinstance(value, str):
        return []
    if argument == "counts_file":
        return [(value, "file")]
    if argument == "enron":
        return [(value, "any")]
    if argument == "dataset":
        from stages.prior.tabular import DATASETS

        return [(path, "file") for path in DATASETS.get(value, ())]  # an unknown name: the box refuses it
    if argument == "tokenizer" and value != "bytes":
        return [(f"{value}/vocab.json", "file"), (f"{value}/merges.txt", "file")]
    return []


def data_needs(cfg: DictConfig) -> list[tuple[str, str, str, str | None]]:
    """(config key, path under data_dir, kind, data_dir) of every data file the config's boxes will read, from the
    config alone: each node of _DATA_NODES (and a model inside one) that has a data_dir key or is a task/figure."""
    needs, seen = [], set()

    def visit(key: str, node, inherited: bool) -> None:
        if not OmegaConf.is_dict(node) or "_target_" not in node:
            return
        own = "data_dir" in node
        if not own and not inherited:
            return
        data_dir = node.get("data_dir") if own else cfg.get("data_dir")
        for argument in ("counts_file", "dataset", "enron", "tokenizer"):
            if argument in node:
                for path, kind in _files(argument, node.get(argument)):
                    if (path, kind, str(data_dir)) not in seen:
                        seen.add((path, kind, str(data_dir)))
                        needs.append((f"{key}.{argument}", path, kind, data_dir))
        if OmegaConf.is_dict(node.get("model")):
            visit("model", node.model, False)  # ${model}: the one language model of the job
        laws = node.get("priors") if inherited else None
        for name, law in (laws.items() if OmegaConf.is_dict(laws) else ()):
            if OmegaConf.is_dict(law) and law.get("law") == "pii":  # a task's pii law: conf/prior/pii.yaml + the law
                enron = law.get("enron", OmegaConf.load(Path(CONF_DIR) / "prior" / "pii.yaml").enron)
                for path, kind in _files("enron", enron):
                    needs.append((f"{key}.priors.{name}.enron", path, kind, cfg.get("data_dir")))
                visit("model", cfg.get("model"), False)

    for key in _DATA_NODES:
        visit(key, cfg.get(key), key in ("task", "figure"))
    return needs


def check_data(cfg: DictConfig) -> None:
    """Refuse, before any box is built or anything written, a config whose data files are not in data_dir: one
    sentence naming the file, the data_dir and both fixes (stages.prior.base.data_path, the one check)."""
    from pipeline.errors import ConfigError
    from stages.prior.base import data_path

    for key, path, kind, data_dir in data_needs(cfg):
        try:
            data_path(path, data_dir, kind=kind, key_prefix=f"{key.rsplit('.', 1)[0]}.", record=False)
        except FileNotFoundError as exc:
            raise ConfigError(str(exc), key=key) from None





def _int(value: Any) -> int | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) and number > 0 else None


def _size(nbytes: float) -> str:
    for unit, scale in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes / 2**20:.2g} MB"


def estimate_job(cfg: DictConfig, trials: int, per_target: bool = False) -> dict:
    """Log the game's size and estimated peak memory, and refuse it if that exceeds the memory available.

    Sizes come from the config (prior.n_targets, prior.domain_size, attack.k, trials), before any box is
    built, so a prior too large to hold is refused in one sentence instead of a MemoryError.
    """
    prior = cfg.get("prior") or {}
    attack = cfg.get("attack") or {}
    n = _int(prior.get("n_targets", prior.get("n_records"))) if OmegaConf.is_dict(prior) else None
    m = _int(prior.get("domain_size")) if OmegaConf.is_dict(prior) else None
    k = (_int(attack.get("k")) if OmegaConf.is_dict(attack) else None) or 1
    matrix = float(n) * float(m) * 8 if n and m else 0.0
    peak = BASE_BYTES + MATRICES * matrix + float(trials) * PER_TRIAL_BYTES
    if per_target and n:
        peak += float(trials) * n * k * 16
    if "expected" in _target(cfg, "bound").lower() and n:
        peak += float(trials) * n * k * 8  # Theorem 3.2 averages per-trial tails over trials x targets
    available = available_memory()
    sizes = f"{trials} trials" + (f" x {n} targets x {m} candidates" if n and m else "")
    estimate = {"trials": trials, "n_targets": n, "domain_size": m, "peak_bytes": peak, "available_bytes": available}
    log.info("job size: %s: about %s of memory at its peak%s; the time is estimated after the first trial",
             sizes, _size(peak), f" ({_size(available)} available)" if available else "")
    if available is not None and peak > available:
        what = []
        if MATRICES * matrix > available / 2:
            what.append(f"prior.n_targets x prior.domain_size = {n} x {m}")
        if float(trials) * PER_TRIAL_BYTES > available / 2 or (per_target and n):
            what.append(f"trials={trials}" + (" with save_per_target=true" if per_target else ""))
        cause = " and ".join(what) or sizes
        raise _config_error(
            f"the job needs about {_size(peak)} of memory ({cause}) but only {_size(available)} is available; "
            f"lower {'prior.n_targets or prior.domain_size' if 'prior' in cause else 'trials'} "
            f"(or run it on a machine with more memory).")
    return estimate


def check_profile(cfg: DictConfig, boxes) -> None:
    """The mechanism's privacy profile, built before the first trial: a value it refuses (RR at epsilon =
    inf, ...) is one sentence naming the mechanism's config key, not an error after every trial was played."""
    from pipeline.errors import _box_error

    try:
        profile = boxes.mechanism.profile
    except (ValueError, OverflowError, ArithmeticError) as exc:
        raise _box_error("mechanism", cfg, exc if isinstance(exc, ValueError) else ValueError(str(exc))) from exc
    # a bound box that holds only for some profiles (pure_dp: eps-DP) says so before the first trial
    if profile is not None and callable(getattr(boxes.bound, "check_profile", None)):
        try:
            boxes.bound.check_profile(profile)
        except ValueError as exc:
            raise _config_error(str(exc).strip().splitlines()[0]) from exc
