"""Every shell command of the ```bash blocks of README.md and of the docs pages (docs/pages/) runs (issue 14, item 7).

Each command is run as written, made small: a single game gets `prior.n_targets=20 trials=2` appended; what
would load a language model or run an experiment's full grid is run with `--cfg job` (composed, not run);
a `-m` sweep is expanded exactly as the project's sweeper does (Hydra's basic sweeper over the experiment's
`hydra.sweeper.params` merged with the command line, then a figure's points: pipeline.sweeper.sweep_jobs) and
its job count is checked against the `# N jobs` (or `# N + M jobs`) its README line states;
the quickstart-sized sweep also runs, and the report commands run on its folder. A command that cannot run
in CI says so where it is written (`[not in CI: <reason>]`) and is skipped with that reason, and only those.
A command written on several pages runs once, under the first place that shows it (the README's, then the pages'
in name order).
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import CONF_DIR, REPO, cli_env

README = REPO / "README.md"
#: Where the commands are: the README, then every page of the docs site (docs/mkdocs.yml).
DOCS = (README, *sorted((REPO / "docs" / "pages").rglob("*.md")))
NOT_IN_CI = re.compile(r"\[not in CI: ([^\]]+)\]")
# "# N jobs", or "# N + M jobs" for a figure that adds M jobs of its own to the N combinations (Figure llm's
# idealized games)
JOBS = re.compile(r"#.*?\b(\d+)(?: \+ (\d+))? jobs\b")
SMALL_GAME = ("prior.n_targets=20", "trials=2")
# A tabular game is sized by its records, and its attack by its steps.
SMALL_TABLE_GAME = ("prior.n_records=20", "attack.steps=50", "trials=2")
# Boxes that load a language model, and experiments: composed only (--cfg job), never run here.
COSTLY = re.compile(r"\bexperiment=|mechanism=dpsgd|prior=pii|model=(gpt2|smollm2)")


def readme_commands(path: Path = README) -> list[tuple[int, str, str]]:
    """(line number, command with continuations joined, its comment) for every command of a ```bash block."""
    commands, block, pending, start = [], False, "", 0
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.startswith("```"):
            block = line.strip() == "```bash"
            continue
        if not block or (not pending and (not line.strip() or line.lstrip().startswith("#"))):
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = pending + line
        pending = ""
        code, _, comment = full.partition(" #")  # the README's commands hold no " #" of their own
        code, comment = " ".join(code.split()), ("#" + comment if comment else "")
        commands.append((start, code, comment))
    return commands


def documented_commands() -> list[tuple[str, str, str]]:
    """(where: "<file>:<line>", command, comment) for every distinct command of the README and the docs pages."""
    seen, commands = set(), []
    for path in DOCS:
        for line, code, comment in readme_commands(path):
            if code not in seen:
                seen.add(code)
                commands.append((f"{path.relative_to(REPO)}:{line}", code, comment))
    return commands


COMMANDS = documented_commands()
#: An inline command: a code span (`...`, possibly over two lines) that starts with a `python -m pipeline` call.
INLINE = re.compile(r"(?<!`)`((?:nice -n 10 )?(?:\.venv/bin/)?python -m pipeline[^`]*)`(?!`)")


def inline_commands(path: Path) -> list[tuple[int, str]]:
    """(line number, command) for every `python -m pipeline ...` written inline in the prose and tables of a page
    (outside its ``` blocks), with a span that continues on the next line joined."""
    text, fenced = [], False
    for line in path.read_text().splitlines():
        fenced = not fenced if line.startswith("```") else fenced
        text.append("" if fenced or line.startswith("```") else line)
    joined = "\n".join(text)
    return [(joined.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())) for m in INLINE.finditer(joined)]


def _python(words: list[str]) -> list[str]:
    if words[:3] == ["nice", "-n", "10"]:
        words = words[3:]
    if words[0] in ("python", ".venv/bin/python"):
        words = [sys.executable, *words[1:]]
    return words


def _placeholders(text: str, sweep_dir: Path | None) -> str:
    if sweep_dir is not None:
        text = text.replace("outputs/multirun/<date>/<time>-<suffix>", str(sweep_dir))
        text = text.replace("<sweep dir>", str(sweep_dir))
    text = text.replace("/path/to/data", str(REPO / "tests" / "data"))
    # written for the repository root (a fresh clone's samples); the tests run commands from a temporary folder
    text = text.replace("data_dir=tests/data", f"data_dir={REPO / 'tests' / 'data'}")
    return re.sub(r"<[^<>]+>", "debug", text)  # <partition>, <gpu partition>


def _run(words, cwd, timeout=300):
    return subprocess.run(words, cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=timeout)


def count_jobs(args: list[str]) -> tuple[int, int]:
    """(combinations, jobs) of `python -m pipeline -m <args>`: Hydra's basic sweeper's own expansion of the sweep
    values (the experiment's `hydra.sweeper.params` merged with the command line; pipeline.sweeper.combinations,
    checked against Hydra's own in tests/pipeline/test_hydra_plugins.py), and the jobs the project's
    sweeper launches for them (pipeline.sweeper.sweep_jobs: a figure's points; repeated jobs once)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from pipeline.sweeper import combinations as expand, sweep_jobs

    args = [a for a in args if a not in ("-m", "--multirun")]
    parser = OverridesParser.create()
    parsed = parser.parse_overrides(args)
    fixed = [a for a, o in zip(args, parsed) if not o.is_sweep_override()]
    composed: dict = {}

    def composer(overrides):
        key = tuple(overrides)
        if key not in composed:
            composed[key] = compose("config", overrides=list(overrides))
        return composed[key]

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=fixed, return_hydra_config=True)  # every fixed override must apply
        params = [f"{k}={v}" for k, v in (cfg.hydra.sweeper.get("params") or {}).items()]
        combinations = expand(parser.parse_overrides(params + args))  # Hydra's expansion (tested against it)
        jobs = sweep_jobs(composer, combinations)
    return len(combinations), len(jobs)


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    """The folder of the README's quickstart-sized sweep, run small (for the report commands)."""
    folder = tmp_path_factory.mktemp("readme") / "sweep"
    result = _run([sys.executable, "-m", "pipeline", "-m", "mechanism.epsilon=0.5,1,2,4,8", "prior=uniform,zipf",
                   *SMALL_GAME, f"hydra.sweep.dir={folder}"], cwd=folder.parent)
    assert result.returncode == 0, result.stderr
    assert sorted(p.parent.name for p in folder.glob("*/metrics.json")) == sorted(str(i) for i in range(10))
    return folder


def test_every_readme_shell_block_is_collected():
    assert len(COMMANDS) >= 20
    assert any("llm_canaries hydra/launcher=slurm_local" in code for _, code, _ in COMMANDS)
    # the README's own: the two commands of a fresh machine and the test command
    readme = [code for _, code, _ in readme_commands(README)]
    assert "bash .ci/setup && .venv/bin/python -m pipeline" in readme and "bash .ci/run" in readme
    assert ".venv/bin/python -m pytest -q -n auto" in readme and ".venv/bin/python -m pytest -q -m slow -n auto" in readme


@pytest.mark.slow
@pytest.mark.parametrize("line,code,comment", COMMANDS, ids=[where for where, _, _ in COMMANDS])
def test_readme_command_runs(line, code, comment, tmp_path, request):
    reason = NOT_IN_CI.search(comment)
    if reason:
        pytest.skip(f"{line} is marked not runnable in CI: {reason.group(1)}")
    words = _python(shlex.split(code))
    assert words[0] == sys.executable, f"{line}: not a python command, and not marked [not in CI: ...]"
    module = words[2] if words[1] == "-m" else None
    sweep = request.getfixturevalue("sweep_dir") if module == "pipeline.report" else None
    words = _python(shlex.split(_placeholders(code, sweep)))
    outputs = f"outputs_dir={tmp_path / 'outputs'}"
    if module == "pipeline" and ("-m" in words[3:] or "--multirun" in words[3:]):
        expected = JOBS.search(comment)
        assert expected, f"{line}: a sweep states its job count ('# N jobs')"
        combinations, jobs = count_jobs(words[3:])
        stated = int(expected.group(1)) + int(expected.group(2) or 0)
        assert jobs == stated and (expected.group(2) is None or combinations == int(expected.group(1))), \
            f"{line}: {combinations} combinations, {jobs} jobs"
        if not COSTLY.search(code) and "hydra/launcher" not in code:
            request.getfixturevalue("sweep_dir")  # the same sweep, run small
        return
    if module == "pipeline" and "--help" not in words and "--cfg" not in words:
        small = SMALL_TABLE_GAME if "prior=baynet" in words else SMALL_GAME
        words = words + ([outputs, "--cfg", "job"] if COSTLY.search(code) else [*small, outputs])
    result = _run(words, cwd=tmp_path)
    assert result.returncode == 0, f"{line}: {code}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    assert "Traceback" not in result.stderr
