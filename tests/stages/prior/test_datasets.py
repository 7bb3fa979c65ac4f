"""Datasets by name: the paper's tables (as `pipeline.data fetch` writes them) and the stand-ins.

The paper's rows cannot be fetched here, so the fixture writes a small random table consistent with the
paper's domain files (tests/data/*/reference/recon-synth_*-domain.json, recon-synth's own) in the layout
`fetch` produces; the experiments then run on it by name, targeting the columns its domain file has.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from figuretools import play_figure
from pipeline.game import ConfigError
from stages.prior.baynet import BayNetPrior
from stages.prior.tabular import DATASETS, FETCHED, STAND_INS, load_table, read_domain

TEST_DATA = Path(__file__).resolve().parents[2] / "data"
SMALL = ["trials=1", "prior.n_records=20", "attack.steps=20"]


def write_paper_shaped(data_dir: Path, source: str, rows: int = 300, seed: int = 0) -> dict:
    """<source>/recon-synth/<source>.csv and -domain.json: random codes within the paper's domain, with a
    latent class so the columns depend on each other (a BayNet has something to fit)."""
    domain = json.loads((TEST_DATA / source / "reference" / f"recon-synth_{source}-domain.json").read_text())
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 3, rows)
    columns = {}
    for name, size in domain.items():
        table = rng.dirichlet(np.full(size, 0.5), size=3)  # Pr[code | latent class]
        columns[name] = (table[latent].cumsum(axis=1) < rng.random(rows)[:, None]).sum(axis=1).clip(0, size - 1)
    folder = data_dir / source / "recon-synth"
    folder.mkdir(parents=True)
    (folder / f"{source}-domain.json").write_text(json.dumps(domain) + "\n")
    header = ",".join(f'"{c}"' if " " in c else c for c in domain)
    body = "\n".join(",".join(str(int(columns[c][r])) for c in domain) for r in range(rows))
    (folder / f"{source}.csv").write_text(header + "\n" + body + "\n")
    return domain


@pytest.fixture
def paper_data(tmp_path) -> Path:
    """A data folder holding paper-shaped acs and fire tables (and nothing else)."""
    data_dir = tmp_path / "data"
    write_paper_shaped(data_dir, "acs", seed=0)
    write_paper_shaped(data_dir, "fire", seed=1)
    return data_dir


def test_names_cover_the_stand_ins_and_what_fetch_writes():
    from pipeline.data import PREPARED

    assert set(DATASETS) == set(STAND_INS) | set(FETCHED)
    for source, (table, domain, _) in PREPARED.items():
        assert DATASETS[f"{source}/recon-synth"] == (table, domain)


def test_paper_table_by_name(paper_data):
    table = load_table("acs/recon-synth", paper_data)
    assert table.n_columns == 16 and "SCHL" in table.columns and "EDU" not in table.columns
    assert table.domain[table.columns.index("SCHL")] == 25
    assert list(read_domain("fire/recon-synth", paper_data)) == list(load_table("fire/recon-synth", paper_data).columns)
    prior = BayNetPrior("acs/recon-synth", str(paper_data), targets=["SCHL"], n_records=10)
    assert prior.sample(np.random.default_rng(0)).shape == (10, 16)
    assert prior.params()["dataset"] == "acs/recon-synth"


@pytest.mark.parametrize("name", ["acs_recon_synth", "adult", "recon-synth"])
def test_unknown_name_is_one_sentence_listing_the_known(name):
    for build in (lambda: load_table(name), lambda: BayNetPrior(name)):
        with pytest.raises(ValueError) as info:
            build()
        message = str(info.value)
        assert "\n" not in message and repr(name) in message
        assert all(known in message for known in DATASETS)


def test_a_missing_paper_table_says_how_to_fetch_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"`python -m pipeline\.data fetch acs --data-dir "):
        load_table("acs/recon-synth", tmp_path)


@pytest.mark.parametrize("name,table,column", [("tabular_single_column", "fire/recon-synth", "all"),
                                               ("tabular_epsilon", "acs/recon-synth", "SCHL"),
                                               ("tabular_multi_column", "fire/recon-synth", "all"),
                                               ("tabular_approximate", "acs/recon-synth", "AGEP")])
def test_every_tabular_experiment_runs_on_the_paper_table(name, table, column, paper_data, compose_config, tmp_path):
    shrink = {"tabular_multi_column": ["figure.max_targets=2"]}.get(name, [])
    *_, rows = play_figure(compose_config, tmp_path / "sweep", [
        f"experiment={name}", f"prior.dataset={table}", f"data_dir={paper_data}", *SMALL, "attack.steps=5",
        "attack.compare=[]", *shrink])
    assert {r["dataset"] for r in rows} == {table}
    played = {c for r in rows for c in r["column"].split("+")}
    if name == "tabular_single_column":
        assert played == set(read_domain(table, paper_data))  # every column of the paper's domain
    elif name == "tabular_multi_column":
        assert {r["m"] for r in rows} == {1, 2}
    else:
        assert played == {column}


def test_experiment_on_both_paper_tables(paper_data, compose_config, tmp_path):
    *_, rows = play_figure(compose_config, tmp_path / "sweep",
                           *[["experiment=tabular_epsilon", f"prior.dataset={table}", f"data_dir={paper_data}", *SMALL]
                             for table in ("acs/recon-synth", "fire/recon-synth")])
    assert {(r["dataset"], r["column"]) for r in rows} == {("acs/recon-synth", "SCHL"), ("fire/recon-synth", "ALS Unit")}


def test_figure_columns_narrows(compose_config, tmp_path):
    """Issue 14 item 5: the documented override plays exactly those columns of the table."""
    *_, rows = play_figure(compose_config, tmp_path / "sweep", [
        "experiment=tabular_single_column", *SMALL, "prior.dataset=acs", "figure.columns=[SEX, EDU]"])
    assert {(r["dataset"], r["column"]) for r in rows} == {("acs", "SEX"), ("acs", "EDU")}


def test_defaults_are_the_stand_ins_with_their_own_columns(compose_config):
    from pipeline.experiments import build_figure

    cases = {"tabular_single_column": {"acs": "all", "fire": "all"},
             "tabular_epsilon": {"acs": "EDU", "fire": "ALS Unit"},
             "tabular_approximate": {"acs": "AGEP", "fire": "Zipcode of Incident"}}
    for name, expected in cases.items():
        swept = compose_config(f"experiment={name}", return_hydra_config=True).hydra.sweeper.params
        assert swept["prior.dataset"] == "acs,fire"
        for table, column in expected.items():
            cfg = compose_config(f"experiment={name}", f"prior.dataset={table}")
            selected = build_figure(cfg).selected(cfg, one=column != "all")
            assert selected == (list(read_domain(table)) if column == "all" else [column])


@pytest.mark.parametrize("overrides,message", [
    (["prior.dataset=acs_recon_synth"], "prior.dataset must be one of acs, fire, acs/recon-synth, fire/recon-synth"),
    (["prior.dataset=acs", "figure.columns=[SCHL]"], "figure.columns names column 'SCHL'"),
    (["prior.dataset=acs/recon-synth", "figure.columns=[EDU]"], "figure.columns names column 'EDU'"),
    (["prior.dataset=nope"], "prior.dataset must be one of"),
])
def test_bad_names_are_refused_before_any_work(overrides, message, paper_data, compose_config, tmp_path):
    """The sweep refuses a bad table or column while it lists the points, before any job (nothing computed)."""
    from pipeline.cache import StageCache

    data = [] if "prior.dataset=acs" in overrides else [f"data_dir={paper_data}"]
    cache = StageCache(tmp_path / "cache")
    with pytest.raises(ConfigError, match=message) as info:
        play_figure(compose_config, tmp_path / "sweep", ["experiment=tabular_single_column", *data, *SMALL, *overrides],
                    cache=cache)
    assert "\n" not in str(info.value)
    assert not cache.computed and not list(tmp_path.rglob("metrics.json"))
