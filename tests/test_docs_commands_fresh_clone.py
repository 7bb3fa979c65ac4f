"""Every documented command that reads data, on a fresh clone (issue 39, item 5).

A fresh clone has nothing beside it: no `../shared/data` (the default `data_dir`) and no `$ADVBOUNDS_DATA`. Such a
command must stop before anything is built or written, with exit status 2 and one sentence that names the missing
file, the data_dir it looked in and both fixes (`python -m pipeline.data fetch <source> --data-dir <that dir>`, or
`data_dir=<clone>/tests/data`), and it must run with `data_dir=<clone>/tests/data` (the samples the repository
carries), unless it names a table only `pipeline.data fetch` provides (then the sentence names the fetch alone).

The commands are those of test_readme_commands (the README's and the docs pages' ```bash blocks) and every
`python -m pipeline ...` written inline in their prose and tables. A command reads data if a job it runs does:
`pipeline.preflight.data_needs` of the config the job composes (a `-m` sweep: one job per combination of its config
groups and data keys, the experiment's sweep included; other swept values do not change what a job reads).

Two setups, from the cheap to the real one:

* in process, for every command: $ADVBOUNDS_DATA is pointed at `<tmp>/shared/data`, which does not exist (what
  `default_data_dir()` gives a clone at `<tmp>/clone`), and each job's composed config goes through the pre-flight
  every game job runs before it builds a box (`pipeline.preflight.check_data`);
* as subprocesses, in a copy of the working tree at `<tmp>/clone` (every file git tracks or would add: what a clone
  of this tree holds; a `git clone` would miss uncommitted work) with $ADVBOUNDS_DATA unset, so the copy's own code
  finds no `<tmp>/shared`: the two commands of the issue (fast), then (slow) every single-job command that reads
  data, as written and with `data_dir=tests/data`, made small as test_readme_commands does.
"""
from __future__ import annotations

import copy
import functools
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import CONF_DIR, REPO, cli_env
from test_readme_commands import COSTLY, DOCS, SMALL_TABLE_GAME, _placeholders, _python, inline_commands, \
    readme_commands

SAMPLES = REPO / "tests" / "data"
#: The argument keys that name data (pipeline.preflight._files) and the folder they are read from.
DATA_KEYS = ("counts_file", "dataset", "enron", "tokenizer", "data_dir")
#: Values the docs write as placeholders for a number the reader chooses (`bound.groups=G`, `attack.steps=T`).
TEMPLATE = re.compile(r"=(?:G|T|LR)(?:\s|$)")
#: The two commands of the issue, as reproducing.md and tabular.md write them.
ISSUE = ("python -m pipeline prior=baynet mechanism=noisy_marginals attack=rap trials=2",
         "python -m pipeline experiment=zipf_calibration")


def _game_words(code: str) -> list[str] | None:
    """The override words of a `python -m pipeline` command that runs jobs, else None."""
    try:
        words = _python(shlex.split(_placeholders(code, None)))
    except ValueError:
        return None
    if words[:3] != [sys.executable, "-m", "pipeline"] or {"--help", "--cfg"} & set(words):
        return None
    return words[3:]


def game_commands() -> list[tuple[str, str]]:
    """(where, command) of every distinct documented `python -m pipeline` command that runs jobs."""
    seen, out = set(), []
    for path in DOCS:
        found = [(line, code) for line, code, _ in readme_commands(path)]
        found += [(line, code) for line, code in inline_commands(path) if "<" not in code]  # `<name>`: a template
        for line, code in found:
            code = code.removeprefix("nice -n 10 ")
            if code not in seen and _game_words(code) is not None:
                seen.add(code)
                out.append((f"{path.relative_to(REPO)}:{line}", code))
    return out


COMMANDS = game_commands()


@functools.lru_cache(maxsize=None)
def _job_configs(args: tuple[str, ...]) -> tuple:
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from pipeline.sweeper import combinations

    args = [a for a in args if a not in ("-m", "--multirun")]
    parser = OverridesParser.create()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        fixed = [a for a, o in zip(args, parser.parse_overrides(args)) if not o.is_sweep_override()]
        params = {}  # an experiment's own sweep (hydra.sweeper.params); the base config sweeps nothing
        if any(a.startswith("experiment=") for a in fixed):
            params = compose("config", overrides=fixed, return_hydra_config=True).hydra.sweeper.get("params") or {}
        narrowed = []
        for override in parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + args):
            key = override.get_key_element()
            if override.is_sweep_override() and "." in key and key.rsplit(".", 1)[-1] not in DATA_KEYS:
                narrowed.append(f"{key}={next(iter(override.sweep_string_iterator()))}")
            else:
                narrowed.append(override.input_line)
        return tuple(compose("config", overrides=list(c)) for c in combinations(parser.parse_overrides(narrowed)))


def job_configs(args: list[str]) -> list:
    """The composed config of each job `python -m pipeline <args>` runs (see the module docstring); `data_dir`
    (and so every box's, which interpolate it) resolves when read: $ADVBOUNDS_DATA at that moment, unless set."""
    return [copy.deepcopy(cfg) for cfg in _job_configs(tuple(args))]


@pytest.fixture
def fresh_default(tmp_path, monkeypatch):
    """The default data folder of a clone at <tmp>/clone: <tmp>/shared/data, which does not exist."""
    missing = tmp_path / "shared" / "data"
    monkeypatch.setenv("ADVBOUNDS_DATA", str(missing))
    return missing


def _assert_the_sentence(message: str, data_dir: Path, samples: Path | None, where: str, fetched: bool = True) -> None:
    """One line naming the data_dir, `pipeline.data fetch <source> --data-dir <it>` (for a file it fetches) and
    data_dir=<samples> (where given: the samples hold the file)."""
    assert "\n" not in message.strip(), f"{where}: not one line: {message}"
    assert f"does not exist in data_dir {data_dir} " in message, f"{where}: {message}"
    if fetched:
        assert re.search(rf"`python -m pipeline\.data fetch \w+ --data-dir {re.escape(str(data_dir))}`", message), \
            f"{where}: {message}"
    if samples is not None:
        assert f"data_dir={samples}." in message, f"{where}: {message}"


def test_the_commands_are_collected():
    codes = [code for _, code in COMMANDS]
    assert all(code in codes for code in ISSUE)
    assert len(codes) >= 40 and any("experiment=pii_law" in code for code in codes)


@pytest.mark.parametrize("where,code", COMMANDS, ids=[where for where, _ in COMMANDS])
def test_a_documented_command_on_a_fresh_clone(where, code, fresh_default):
    """Fresh clone: a job that reads data is refused by the pre-flight in the one sentence; with
    data_dir=tests/data it passes (or, for a table only the fetch provides, the sentence names the fetch alone).
    A job that reads nothing is never refused for data."""
    from pipeline.errors import ConfigError
    from pipeline.preflight import check_data, data_needs
    from stages.prior.base import ORIGINALS

    args = _game_words(code)
    reads = False
    for cfg in job_configs(args):
        needs = data_needs(cfg)
        if not needs:
            check_data(cfg)
            continue
        reads = True
        looked_in = Path(cfg.data_dir)  # the fresh clone's default, or the command's own data_dir=
        if looked_in == SAMPLES:  # written for a fresh clone (data_dir=tests/data): it runs as written
            check_data(cfg)
            continue
        with pytest.raises(ConfigError) as refused:
            check_data(cfg)
        missing = next(path for _, path, _, _ in needs if not (looked_in / path).exists())
        _assert_the_sentence(str(refused.value), looked_in, SAMPLES if (SAMPLES / missing).exists() else None, where,
                             fetched=any(missing.startswith(prefix) for prefix, _, _ in ORIGINALS))
        assert f"data file {missing} " in str(refused.value)
        if not any(missing.startswith(prefix) for prefix, _, _ in ORIGINALS):  # the reader's own file (my.csv)
            assert f"set data_dir=<folder that holds {missing}>" in str(refused.value)
            continue
        cfg.data_dir = str(SAMPLES)  # the command with data_dir=tests/data
        if all((SAMPLES / path).exists() for _, path, _, _ in data_needs(cfg)):
            check_data(cfg)
        else:  # the paper's tables: only `pipeline.data fetch` gets them
            assert "recon-synth" in code, f"{where}: needs a file tests/data lacks"
            with pytest.raises(ConfigError, match=r"pipeline\.data fetch (acs|fire) --data-dir "):
                check_data(cfg)
    if any(code == c for c in ISSUE) or re.search(r"prior=baynet|prior=pii|experiment=(tabular_|pii_law|zipf_cal)",
                                                  code):
        assert reads, f"{where}: {code} reads data, yet no job of it needs a data file"


def test_every_page_with_a_data_command_says_how_to_run_it_on_a_fresh_clone(fresh_default):
    """A page (or the README) showing a command that reads data says both ways to run it on a fresh clone."""
    from pipeline.preflight import data_needs

    pages = {where.split(":")[0] for where, code in COMMANDS
             if any(data_needs(cfg) for cfg in job_configs(_game_words(code)))}
    explained = {"docs/pages/tabular.md", "docs/pages/llm.md", "docs/pages/reproducing.md"}  # the case studies'
    assert explained <= pages
    for page in sorted(explained | {"docs/pages/data.md"}):
        text = (REPO / page).read_text()
        assert "python -m pipeline.data fetch" in text and "data_dir=tests/data" in text, page


def test_the_data_page_shows_the_sentence_the_code_prints():
    from stages.prior.base import SAMPLES_DIR, missing_data

    shown = next(line for line in (REPO / "docs" / "pages" / "data.md").read_text().splitlines()
                 if line.startswith("error: data file "))
    printed = missing_data("passwords/rockyou-top100k-9digit-withcount.csv", "/home/me/shared/data")
    assert shown == "error: " + printed.replace(str(SAMPLES_DIR.absolute()), "/home/me/advbounds/tests/data")


# ---------------------------------------------------------------------------------------------------------------
# A copy of the working tree with nothing beside it, run as a user runs it.

@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """<tmp>/clone: every file git tracks or would add (not the ignored .venv, outputs, caches); no <tmp>/shared."""
    root = tmp_path_factory.mktemp("fresh") / "clone"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    assert not (root.parent / "shared").exists()
    return root


def _in_clone(clone: Path, code: str, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = cli_env()
    env.pop("ADVBOUNDS_DATA")  # nothing tells the clone where data are: its default, <tmp>/shared/data
    words = _python(shlex.split(code)) + list(extra)
    return subprocess.run(words, cwd=clone, env=env, capture_output=True, text=True, timeout=timeout)


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")} if folder.exists() else set()


def _refused_in_the_sentence(clone: Path, code: str, *extra: str) -> str:
    before = _files(clone / "outputs")
    result = _in_clone(clone, code, *extra)
    assert result.returncode == 2, f"{code}: exit {result.returncode}\n{result.stderr[-2000:]}"
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and " does not exist in data_dir " in line, result.stderr
    _assert_the_sentence(line, clone.parent / "shared" / "data", clone / "tests" / "data", code)
    assert "Traceback" not in result.stderr
    assert _files(clone / "outputs") == before, "a refused command left something in outputs/"
    return line


def test_the_issues_commands_on_a_fresh_clone(clone):
    for code in ISSUE:  # (with data_dir=tests/data they run: the slow test below)
        _refused_in_the_sentence(clone, code)


SINGLE = [(where, code) for where, code in COMMANDS if not {"-m", "--multirun"} & set(_game_words(code))
          and re.search(r"prior=baynet|prior=pii|experiment=(tabular_|pii_law|zipf_cal)", code)]


@pytest.mark.slow
@pytest.mark.parametrize("where,code", SINGLE, ids=[where for where, _ in SINGLE])
def test_a_single_job_data_command_on_a_fresh_clone(where, code, clone):
    """As written: refused in the sentence, nothing written. With data_dir=tests/data: it runs (made small as
    test_readme_commands makes it); a command that loads a language model is left to the pre-flight above."""
    small = list(SMALL_TABLE_GAME) if "baynet" in code or "experiment=tabular_" in code else []
    if "data_dir=tests/data" not in code:  # (a command written for a fresh clone runs as written)
        _refused_in_the_sentence(clone, code, *small)
    if TEMPLATE.search(code) or "recon-synth" in code:
        return  # a template (`bound.groups=G`) or the fetched paper tables: refused above is all it can do here
    if COSTLY.search(code) and not re.search(r"experiment=(tabular_|zipf_cal)", code):
        return
    result = _in_clone(clone, code, *small, "data_dir=tests/data")
    assert "Traceback" not in result.stderr
    if _section(where) == "Run history" and result.returncode == 2:  # a log of past runs, not what to run today:
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # a command since changed: one sentence
        return
    assert result.returncode == 0, f"{where}: {code}\n{result.stderr[-2000:]}"


def _section(where: str) -> str:
    """The `## ` heading a documented command stands under ("" before the first)."""
    page, line = where.rsplit(":", 1)
    heads = [text for text in (REPO / page).read_text().splitlines()[:int(line)] if text.startswith("## ")]
    return heads[-1][3:].strip() if heads else ""


@pytest.mark.slow
def test_a_data_sweep_on_a_fresh_clone_is_refused_before_any_job(clone):
    """tabular.md's figure sweeps read the table's columns to list their jobs: refused in the sentence, no job."""
    code = "python -m pipeline -m experiment=tabular_single_column"
    before = _files(clone / "outputs")
    result = _in_clone(clone, code)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "pipeline.data fetch acs --data-dir" in result.stderr and f"data_dir={clone / 'tests' / 'data'}" in \
        result.stderr
    assert not [p for p in _files(clone / "outputs") - before if p.name == "metrics.json"]
