"""Issue 14, item 8: one definition of the default data folder, and `data_dir=` honoured by every box."""
from __future__ import annotations

from pathlib import Path

from clitools import REPO


def test_one_default_data_folder(compose_config, monkeypatch, tmp_path):
    import pipeline.data
    from stages.prior.base import default_data_dir

    monkeypatch.delenv("ADVBOUNDS_DATA", raising=False)
    expected = REPO.parent / "shared" / "data"
    assert default_data_dir() == expected
    assert pipeline.data.default_data_dir() == expected.absolute()
    monkeypatch.chdir(tmp_path)  # not "../shared/data from where you run": the same folder from anywhere
    assert Path(compose_config().data_dir) == expected
    monkeypatch.setenv("ADVBOUNDS_DATA", str(tmp_path))
    assert default_data_dir() == tmp_path == Path(compose_config().data_dir)
    assert pipeline.data.default_data_dir() == tmp_path


def test_every_box_that_reads_data_follows_data_dir(compose_config, tmp_path):
    for group, option in (("prior", "baynet"), ("prior", "zipf"), ("prior", "pii")):
        cfg = compose_config(f"{group}={option}", f"data_dir={tmp_path}")
        assert cfg[group].data_dir == str(tmp_path), (group, option)
    assert compose_config("model=tiny", f"data_dir={tmp_path}").model.data_dir == str(tmp_path)


def test_the_baynet_prior_reads_from_data_dir(tmp_path):
    import pytest

    from stages.prior.baynet import BayNetPrior

    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        BayNetPrior(dataset="acs", data_dir=str(tmp_path))


def test_no_other_definition_of_the_default_folder():
    """The default is spelled out once (stages/prior/base.py); nothing else rebuilds ../shared/data."""
    offenders = []
    for path in [*REPO.joinpath("pipeline").rglob("*.py"), *REPO.joinpath("stages").rglob("*.py"),
                 REPO / "conf" / "config.yaml"]:
        text = path.read_text()
        if ('"shared" / "data"' in text or "/../shared/data}" in text) and path.name != "base.py":
            offenders.append(str(path.relative_to(REPO)))
    assert not offenders
