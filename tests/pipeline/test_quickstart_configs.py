"""The quickstart composes one config per prior and sets mechanism.epsilon for the other games: each game's config
must equal the one Hydra composes from its own overrides (what `python -m pipeline <overrides>` runs)."""
from __future__ import annotations

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import pipeline
from pipeline.quickstart import EPSILONS, PRIORS, epsilon_variant, quickstart_overrides


def test_every_quickstart_config_is_its_own_compose():
    with initialize_config_dir(config_dir=pipeline.CONF_DIR, version_base="1.3"):
        for prior in PRIORS:
            base = compose("config", overrides=quickstart_overrides(prior, EPSILONS[0]))
            for epsilon in EPSILONS[1:]:
                own = compose("config", overrides=quickstart_overrides(prior, epsilon))
                derived = epsilon_variant(base, epsilon)
                assert OmegaConf.to_yaml(derived) == OmegaConf.to_yaml(own), (prior, epsilon)
                assert OmegaConf.is_struct(derived) == OmegaConf.is_struct(own)
                assert derived.mechanism.epsilon == epsilon and base.mechanism.epsilon == EPSILONS[0]
