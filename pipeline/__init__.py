"""Composes and runs the boxes of stages/: the Hydra app, the attack game, the stage cache, tracking, reports."""
from __future__ import annotations

import os

from omegaconf import OmegaConf


def _original_cwd() -> str:
    """The directory the user ran in: Hydra's runtime.cwd inside an app, else the process's cwd."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return str(HydraConfig.get().runtime.cwd)
    return os.getcwd()


# conf/config.yaml uses ${original_cwd:} so that paths resolve the same under `compose` (tests).
if not OmegaConf.has_resolver("original_cwd"):
    OmegaConf.register_new_resolver("original_cwd", _original_cwd)

CONF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conf")
