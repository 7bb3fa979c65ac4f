"""Composes and runs the boxes of stages/: the Hydra app, the attack game, the stage cache, tracking, reports."""
from __future__ import annotations

import os
import secrets

from omegaconf import OmegaConf


def _original_cwd() -> str:
    """The directory the user ran in: Hydra's runtime.cwd inside an app, else the process's cwd."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return str(HydraConfig.get().runtime.cwd)
    return os.getcwd()


def _unique() -> str:
    """A short random suffix for job and sweep folders, so two runs started in the same instant never share one."""
    return secrets.token_hex(3)


def _default_data_dir() -> str:
    """conf/config.yaml's default data_dir: stages.prior.base.default_data_dir (the one definition)."""
    from stages.prior.base import default_data_dir

    return str(default_data_dir())


# conf/config.yaml uses ${original_cwd:} so that paths resolve the same under `compose` (tests).
if not OmegaConf.has_resolver("original_cwd"):
    OmegaConf.register_new_resolver("original_cwd", _original_cwd)
# ${unique:} in hydra.run.dir and hydra.sweep.dir; cached like ${now:}, so one run resolves it once
# (a sweep's jobs, in process or through submitit, all see the sweep's value).
if not OmegaConf.has_resolver("unique"):
    OmegaConf.register_new_resolver("unique", _unique, use_cache=True)

if not OmegaConf.has_resolver("default_data_dir"):
    OmegaConf.register_new_resolver("default_data_dir", _default_data_dir)

# ${record_subdir:.hydra} as hydra.output_subdir: no .hydra/ is written into a job folder that holds another job's
# metrics.json (pipeline.hydra_guard).
if not OmegaConf.has_resolver("record_subdir"):
    from pipeline.hydra_guard import record_subdir as _record_subdir

    OmegaConf.register_new_resolver("record_subdir", _record_subdir)

CONF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conf")

# hydra/sweeper=points and hydra/launcher=advbounds_slurm are Hydra plugins (pipeline/hydra_plugins/, installed as
# the hydra_plugins.advbounds package): Hydra's own plugin scan finds them and their configs.
