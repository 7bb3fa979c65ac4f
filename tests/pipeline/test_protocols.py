"""Issue 15 item 2: every option of every box group (discovered from conf/<group>/, not listed) builds a box that
meets its group's protocol (stages.protocols); every prior gives a law per trial; and every prior x mechanism x
attack combination either composes and is declared compatible, or is refused before anything is built, in one
sentence naming the pair."""
from __future__ import annotations

from itertools import product
from pathlib import Path
from typing import Mapping

import numpy as np
import pytest
from hydra.utils import instantiate

import pipeline
from pipeline import boundary, preflight
from pipeline.game import ConfigError
from stages import protocols

CONF = Path(pipeline.CONF_DIR)
PROTOCOLS = {"prior": protocols.Prior, "mechanism": protocols.Mechanism, "attack": protocols.Attack,
             "metric": protocols.Metric, "bound": protocols.BoundBox}
# Small sizes so that every box builds in seconds here (the tiny model, few PII contexts, few records).
SMALL = ("model=tiny", "prior.n_targets=8", "prior.domain_size=4")
SMALL_BY_PRIOR = {"baynet": ("prior.n_records=20",), "pii": ("prior.n_contexts=2", "prior.max_candidates=6",
                                                            "prior.progress=false")}


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def small(prior: str) -> tuple[str, ...]:
    if prior == "baynet":
        return ("model=tiny", *SMALL_BY_PRIOR["baynet"])
    return (*SMALL, *SMALL_BY_PRIOR.get(prior, ()))


def test_every_group_has_options_and_a_protocol():
    assert all(options(group) for group in PROTOCOLS)


def _target_class(group: str, option: str):
    from hydra.utils import get_class
    from omegaconf import OmegaConf

    return get_class(OmegaConf.load(CONF / group / f"{option}.yaml")["_target_"])


def fits(prior: str, mechanism: str, attack: str) -> bool:
    """Whether the classes declare the three options compatible (stages.protocols)."""
    provides = _target_class("prior", prior).provides
    mech, att = _target_class("mechanism", mechanism), _target_class("attack", attack)
    return (provides in mech.needs_prior and provides in att.needs_prior
            and all(hasattr(mech, a) for a in getattr(att, "needs_mechanism", ())))


@pytest.mark.parametrize("group", sorted(PROTOCOLS))
def test_every_option_meets_its_protocol(group, compose_config):
    for option in options(group):
        # the first prior x mechanism x attack that the classes declare compatible with this option
        triples = [dict(zip(("prior", "mechanism", "attack"), t))
                   for t in product(options("prior"), options("mechanism"), options("attack"))]
        chosen = next(t for t in triples if fits(**t) and t.get(group, option) == option)
        if group in ("metric", "bound"):
            chosen[group] = option
        cfg = compose_config(*[f"{g}={o}" for g, o in chosen.items()], *small(chosen["prior"]))
        preflight.check_config(cfg)
        box = instantiate(cfg[group], _convert_="all")
        assert isinstance(box, PROTOCOLS[group]), f"{group}={option} does not meet stages.protocols.{PROTOCOLS[group].__name__}"
        through_the_boundary(group, box)
        if group == "prior":
            assert box.provides in protocols.KINDS
            X = box.sample(np.random.default_rng(0), box.n_targets)
            law = box.for_trial(X)
            assert isinstance(law, protocols.TrialLaw) and law.n_targets == box.n_targets
            assert (law is box) != boundary.per_trial(box)
            boundary.law_key(law)
            mechanism = boundary.for_prior(instantiate(cfg["mechanism"], _convert_="all"), box)  # bound to its records
            assert isinstance(mechanism, protocols.Mechanism)


def through_the_boundary(group: str, box) -> None:
    """Every optional hook of the box's group, asked through pipeline.boundary (issue 22 item 1), is of its
    declared type, present or at its default."""
    assert isinstance(boundary.box_name(box), str)
    assert isinstance(boundary.box_params(box), dict)
    assert isinstance(boundary.reads_data_files(box), bool)
    assert boundary.stage_key_defaults(box) is None or isinstance(boundary.stage_key_defaults(box), Mapping)
    if group == "prior":
        assert isinstance(boundary.per_trial(box), bool)
        assert boundary.domain_size(box) is None or int(boundary.domain_size(box)) > 0
    elif group == "mechanism":
        assert isinstance(boundary.cache_release(box), bool)
        assert all(callable(f) for f in boundary.release_codec(box))
        assert boundary.release_stage(box) is None or callable(boundary.release_stage(box))
        assert boundary.trials_side_by_side(box) is None or callable(boundary.trials_side_by_side(box))
        assert isinstance(boundary.privacy(box), Mapping)
        assert boundary.own_delta(box) is None or 0 <= float(boundary.own_delta(box)) < 1
        if box.profile is not None:
            assert isinstance(boundary.profile_params(box.profile), Mapping)
    elif group == "attack":
        assert isinstance(boundary.attack_label(box), str)
        assert boundary.guesses_per_target(box) is None or boundary.guesses_per_target(box) >= 1
        assert isinstance(boundary.variants(box), Mapping) and isinstance(boundary.prepares(box), bool)
        assert isinstance(boundary.observed(box), Mapping)
    elif group == "bound":
        assert isinstance(boundary.mixes_trials(box), bool)


@pytest.mark.slow
def test_every_combination_is_declared_compatible_or_refused_in_one_sentence(compose_config):
    checked = refused = 0
    for prior, mechanism, attack in product(options("prior"), options("mechanism"), options("attack")):
        cfg = compose_config(f"prior={prior}", f"mechanism={mechanism}", f"attack={attack}", *small(prior))
        if fits(prior, mechanism, attack):
            preflight.check_config(cfg)  # composes, resolves, and is declared compatible
            checked += 1
        else:
            with pytest.raises(ConfigError) as info:
                preflight.check_config(cfg)
            message = str(info.value)
            assert "\n" not in message and "cannot" in message
            assert f"prior={prior}" in message or f"mechanism={mechanism}" in message, message
            refused += 1
    assert checked and refused


def test_a_wrong_pair_is_refused_before_the_config_resolves(compose_config):
    """prior=baynet mechanism=gaussian used to crash on an interpolation (${prior.domain_size}); now the pair
    is named before anything resolves."""
    cfg = compose_config("prior=baynet", "mechanism=gaussian")
    with pytest.raises(ConfigError, match=r"mechanism=gaussian cannot play with prior=baynet: it needs n targets"):
        preflight.check_config(cfg)
