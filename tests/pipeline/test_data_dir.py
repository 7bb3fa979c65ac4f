"""Issue 14, item 8: one definition of the default data folder, and `data_dir=` honoured by every box."""
from __future__ import annotations

from pathlib import Path

import pytest

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


# Issue 39 item 5: a fresh clone (no ../shared/data) gets one sentence naming the file, data_dir and both fixes.

def test_the_missing_data_sentence_names_the_file_the_folder_and_both_fixes(tmp_path):
    from stages.prior.base import SAMPLES_DIR, missing_data

    empty = tmp_path / "shared" / "data"
    sentence = missing_data("passwords/rockyou-top100k-9digit-withcount.csv", empty)
    assert sentence.startswith(f"data file passwords/rockyou-top100k-9digit-withcount.csv does not exist in data_dir "
                               f"{empty} ")
    assert f"`python -m pipeline.data fetch rockyou --data-dir {empty}`" in sentence
    assert sentence.endswith(f"data_dir={SAMPLES_DIR.absolute()}.") and sentence.count(". ") == 0
    # a stand-in: the fetch gets the paper's table under another name, which the sentence names (with the key)
    sentence = missing_data("acs/sdnist/national2019_16attr_prepared.csv", empty, key_prefix="prior.")
    assert f"fetch acs --data-dir {empty}` and set prior.dataset=acs/recon-synth, or " in sentence
    # already on the samples, or a file they lack: the fetch alone; the reader's own file: where to put it
    assert "small samples" not in missing_data("passwords/rockyou-top100k-9digit-withcount.csv", SAMPLES_DIR)
    assert "small samples" not in missing_data("fire/recon-synth/fire.csv", empty)
    assert missing_data("my.csv", empty).endswith("set data_dir=<folder that holds my.csv> (or $ADVBOUNDS_DATA).")
    assert missing_data(tmp_path / "x.csv").startswith(f"data file {tmp_path / 'x.csv'} does not exist; give ")


def test_every_sample_a_box_reads_has_its_fetch():
    """Each file of tests/data a config reads maps to a `pipeline.data fetch` source, and a stand-in's follow-up
    names what that fetch writes (a dataset name, the unpacked maildir, a folder with the BPE files)."""
    import pipeline.data as data
    from stages.prior.base import ORIGINALS, SAMPLES_DIR
    from stages.prior.tabular import DATASETS, FETCHED

    read = [*[path for files in DATASETS.values() for path in files], "enron/mini-enron", "enron/enron_mini.csv",
            "gpt2-tokenizer/vocab.json", "gpt2-tokenizer/merges.txt", "passwords/rockyou-top100k-9digit-withcount.csv"]
    for path in read:
        source, then = next((s, t) for prefix, s, t in ORIGINALS if path.startswith(prefix))
        assert source in data.SOURCES, path
        if (SAMPLES_DIR / path).exists() and then is not None:
            key, value = then.split("=")
            assert {"dataset": value in FETCHED and FETCHED[value][2] == source,
                    "enron": value == "enron/maildir" and source == "enron",
                    "tokenizer": value == "gpt2" and {"vocab.json", "merges.txt"} <= set(data.GPT2_FILES)}[key], then


def test_a_game_without_its_data_is_refused_before_anything_is_built(compose_config, tmp_path):
    from pipeline.errors import ConfigError
    from pipeline.job import run_job

    empty = tmp_path / "no-data"
    cfg = compose_config("prior=baynet", "mechanism=noisy_marginals", "attack=rap", "trials=2", f"data_dir={empty}")
    job = tmp_path / "job"
    job.mkdir()
    with pytest.raises(ConfigError) as refused:
        run_job(cfg, job)
    assert refused.value.key == "prior.dataset"
    assert f"does not exist in data_dir {empty} " in str(refused.value)
    assert f"`python -m pipeline.data fetch acs --data-dir {empty}` and set prior.dataset=acs/recon-synth" in \
        str(refused.value)
    assert not list(job.iterdir()) and not Path(cfg.cache_dir).exists()  # no stage started, nothing written


def test_data_needs_reads_the_config_alone(compose_config, tmp_path):
    from pipeline.preflight import data_needs

    assert data_needs(compose_config()) == [] and data_needs(compose_config("prior=zipf")) == []
    cfg = compose_config("prior=pii", "model=tiny", "model.tokenizer=gpt2-tokenizer", f"data_dir={tmp_path}")
    assert [(key, path) for key, path, _, _ in data_needs(cfg)] == [
        ("prior.enron", "enron/mini-enron"), ("model.tokenizer", "gpt2-tokenizer/vocab.json"),
        ("model.tokenizer", "gpt2-tokenizer/merges.txt")]
    law = compose_config("experiment=advantage_by_prior", "+task.priors.pii={law: pii}")
    assert [(key, path) for key, path, _, _ in data_needs(law)] == [("task.priors.pii.enron", "enron/mini-enron")]
