"""Each box's conf/<group>/<option>.yaml names its class and exactly its constructor's arguments."""
import importlib
import inspect
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

CONF = Path(__file__).resolve().parents[2] / "conf"
BOXES = [
    ("prior", "uniform"),
    ("prior", "zipf"),
    ("prior", "baynet"),
    ("mechanism", "randomized_response"),
    ("mechanism", "gaussian"),
    ("mechanism", "noisy_marginals"),
    ("attack", "prior_only"),
    ("attack", "bayes_optimal"),
    ("attack", "rap"),
    ("metric", "exact"),
    ("metric", "within"),
    ("bound", "pure_dp"),
    ("bound", "one_run"),
    ("bound", "expected"),
    ("bound", "comparator"),
]


def _target(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("group, option", BOXES)
def test_config_mirrors_constructor(group, option):
    cfg = OmegaConf.load(CONF / group / f"{option}.yaml")
    target = cfg["_target_"]
    expected_prefix = "stages.metric." if group == "metric" else f"stages.{group}.{option}."
    assert target.startswith(expected_prefix)
    parameters = inspect.signature(_target(target)).parameters
    arguments = set(parameters)
    assert set(cfg.keys()) - {"_target_"} == arguments
    for name in arguments:  # every argument has a default, so the YAML could be shortened safely
        assert parameters[name].default is not inspect.Parameter.empty


@pytest.mark.parametrize("group, option", BOXES)
def test_config_instantiates(group, option):
    # Top-level keys the box configs interpolate (conf/config.yaml defines them): data_dir.
    cfg = OmegaConf.create({"data_dir": None, "prior": OmegaConf.load(CONF / "prior" / "uniform.yaml")})
    cfg[group] = OmegaConf.load(CONF / group / f"{option}.yaml")
    box = instantiate(cfg[group])
    assert type(box).__name__ == cfg[group]["_target_"].rpartition(".")[2]
    if group == "mechanism" and "domain_size" in cfg[group]:  # noisy_marginals reads the table's own domain
        assert box.domain_size == cfg.prior.domain_size
