"""The sweeper and the SLURM launcher are Hydra plugins that Hydra's own scan finds, built on public extension points
(DESIGN.md, "Extending Hydra and submitit"); a job folder that holds results keeps its `.hydra/` record.

Where the project mirrors a library's behaviour (the basic sweeper's combinations, hydra-submitit's executor), a
test here compares the two, so that an upgrade that changes the library fails here, loudly, and not in a sweep.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from clitools import REPO, SMALL, cli_env, run_cli

SWEEPER = "hydra_plugins.advbounds.sweeper.PointsSweeper"
LAUNCHER = "hydra_plugins.advbounds.launcher.SlurmLauncher"


def test_hydras_plugin_scan_finds_the_sweeper_and_the_launcher(tmp_path):
    """In a fresh process that imports nothing of ours: Hydra's discovery lists both classes and its config store
    holds hydra/sweeper=points and hydra/launcher=advbounds_slurm (the scan imported the plugin package)."""
    script = """
import json, sys
from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
assert "pipeline" not in sys.modules
names = lambda kind: [f"{c.__module__}.{c.__name__}" for c in Plugins.instance().discover(kind)]
store = ConfigStore.instance()
print(json.dumps({"sweepers": names(Sweeper), "launchers": names(Launcher),
                  "sweeper_configs": store.list("hydra/sweeper"), "launcher_configs": store.list("hydra/launcher")}))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=cli_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[Hydra plugins scanner]" not in done.stderr, done.stderr  # no warning from our modules
    found = json.loads(done.stdout)
    assert SWEEPER in found["sweepers"] and LAUNCHER in found["launchers"], found
    assert "points.yaml" in found["sweeper_configs"] and "advbounds_slurm.yaml" in found["launcher_configs"], found


def test_the_composed_config_names_the_plugins(compose_config):
    hydra_cfg = compose_config(return_hydra_config=True).hydra
    assert hydra_cfg.sweeper._target_ == SWEEPER
    assert compose_config("hydra/launcher=slurm", return_hydra_config=True).hydra.launcher._target_ == LAUNCHER


def test_no_private_hydra_api_and_no_patched_library():
    """pipeline/ and stages/ use Hydra's and submitit's public extension points: no hydra._internal import, no write
    into Hydra's plugin table, no replaced Hydra or submitit function."""
    forbidden = ("hydra._internal", "class_name_to_class", "Plugins.instance().register", "_save_config",
                 "AutoExecutor.map_array")
    offenders = [f"{path.relative_to(REPO)}: {word}"
                 for folder in ("pipeline", "stages") for path in sorted((REPO / folder).rglob("*.py"))
                 for word in forbidden if word in path.read_text()]
    assert not offenders, offenders


@pytest.mark.parametrize("arguments", [
    ["a=1,2", "b=x,y,z"],
    ["a=1,2", "c=3", "b=range(1,4)"],
    ["a=1,2", "b=10", "a=5,6,7"],  # a key given twice: its last values, in its first place
    ["+d=1,2", "~e", "f='q,r'"],
    [],
])
def test_combinations_are_those_of_hydras_basic_sweeper(arguments):
    """pipeline.sweeper.combinations against Hydra's basic sweeper itself (private: this test is where a change shows)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from pipeline.sweeper import combinations

    parsed = OverridesParser.create().parse_overrides(arguments)
    assert combinations(parsed) == BasicSweeper.split_arguments(parsed, None)[0]


def test_an_interval_is_refused_in_one_sentence():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from pipeline.errors import ConfigError
    from pipeline.sweeper import combinations

    with pytest.raises(ConfigError, match=r"^mechanism.epsilon=interval\(1,4\) is an interval"):
        combinations(OverridesParser.create().parse_overrides(["mechanism.epsilon=interval(1,4)"]))


def test_batches_number_the_jobs_as_the_basic_sweeper_does():
    from pipeline.errors import ConfigError
    from pipeline.sweeper import batches

    jobs = [["a=1"], ["a=2"], ["a=3"]]
    assert list(batches(jobs, None)) == list(batches(jobs, -1)) == [(0, jobs)]
    assert list(batches(jobs, 2)) == [(0, jobs[:2]), (2, jobs[2:])]
    with pytest.raises(ConfigError, match=r"^hydra.sweeper.max_batch_size=0 launches no job"):
        list(batches(jobs, 0))


class _Executor:
    """submitit.AutoExecutor as the launchers call it, recording what they ask for."""

    made: list = []

    def __init__(self, **kwargs):
        self.init, self.parameters, self.submitted = kwargs, {}, None
        _Executor.made.append(self)

    def update_parameters(self, **kwargs):
        self.parameters.update(kwargs)

    def map_array(self, function, *arguments):
        self.submitted = (function, [list(column) for column in arguments])
        return [_Job(f"7_{i}", number) for i, number in enumerate(arguments[2])]


class _Job:
    def __init__(self, job_id, number):
        self.job_id, self.number = job_id, number

    def done(self):
        return True

    def results(self):
        return [f"result of job {self.number}"]


def test_the_launcher_submits_what_hydra_submitit_submits(compose_config, tmp_path, monkeypatch):
    """hydra_plugins.advbounds.launcher builds the executor and the jobs' arguments itself (to hold the jobs between
    submission and results): the same as hydra-submitit's own launch, for the same settings and jobs."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as SubmititSlurmLauncher
    from omegaconf import OmegaConf, open_dict

    from hydra_plugins.advbounds.launcher import SlurmLauncher
    from pipeline.slurm_launcher import OWN_KEYS

    config = compose_config("hydra/launcher=slurm", "hydra.launcher.max_num_timeout=3", return_hydra_config=True)
    with open_dict(config):
        config.hydra.sweep.dir = str(tmp_path / "sweep")
    settings = OmegaConf.to_container(config.hydra.launcher, resolve=False)
    settings.pop("_target_")
    monkeypatch.setattr(submitit, "AutoExecutor", _Executor)
    # Our launcher refuses a machine without SLURM in its setup (submitit's test: srun on PATH); this one has an srun.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "srun").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "bin" / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    jobs = [["mechanism.epsilon=1", "seed=0"], ["mechanism.epsilon=4", "seed=0"]]
    asked = []
    for launcher_class in (SubmititSlurmLauncher, SlurmLauncher):
        _Executor.made = []
        # hydra-submitit's launcher would pass the settings only ours reads on to sbatch
        launcher = launcher_class(**{key: value for key, value in settings.items()
                                     if launcher_class is SlurmLauncher or key not in OWN_KEYS})
        launcher.setup(hydra_context=None, task_function=None, config=config)
        results = launcher.launch(jobs, initial_job_idx=5)
        (executor,) = _Executor.made
        function, arguments = executor.submitted
        assert function is launcher
        states = arguments.pop()  # Hydra's singletons, one per job
        assert len(states) == len(jobs) and all(isinstance(state, dict) for state in states)
        asked.append((executor.init, executor.parameters, arguments, results))
    theirs, ours = asked
    assert ours == theirs
    assert "slurm_max_num_timeout" in ours[0] and "slurm_partition" in ours[1] and ours[2][2] == [5, 6]
    assert "pending_check_s" not in str(ours[1]) and "unavailable_timeout_min" not in str(ours[1])


# ------------------------------------------------------------------------------------------------------------
# A job folder's record (.hydra/) is written through hydra.output_subdir=${record_subdir:.hydra} (pipeline.hydra_guard)

def test_the_record_subdir_is_null_for_a_folder_that_holds_results(compose_config, tmp_path):
    from omegaconf import open_dict

    config = compose_config(return_hydra_config=True)
    assert config.hydra.output_subdir == ".hydra"  # no job folder yet (composing, --cfg)
    with open_dict(config):
        config.hydra.runtime.output_dir = str(tmp_path)
    assert config.hydra.output_subdir == ".hydra"
    (tmp_path / "metrics.json").write_text("{}")
    assert config.hydra.output_subdir is None


def test_hydra_writes_no_record_into_a_folder_that_holds_results(compose_config, hydra_app, tmp_path):
    """Hydra's run_job (what every launcher calls for a job) resolves hydra.output_subdir once it knows the job's
    folder: a folder holding a metrics.json gets no .hydra/, a new one gets it (this fails if Hydra changes the order)."""
    from hydra.core.utils import run_job
    from hydra.types import HydraContext
    from omegaconf import open_dict

    class NoCallbacks:
        def on_job_start(self, **kwargs):
            pass

        def on_job_end(self, **kwargs):
            pass

    ran = []
    for name, holds_results in (("new", False), ("used", True)):
        folder = tmp_path / name
        folder.mkdir()
        if holds_results:
            (folder / "metrics.json").write_text("{}")
        config = compose_config(*SMALL, return_hydra_config=True)
        with open_dict(config):
            config.hydra.run.dir = str(folder)
        run_job(task_function=lambda cfg: ran.append(name), config=config, job_dir_key="hydra.run.dir",
                job_subdir_key=None, hydra_context=HydraContext(config_loader=hydra_app.config_loader,
                                                                callbacks=NoCallbacks()),
                configure_logging=False)
        assert (folder / ".hydra").is_dir() is not holds_results, name
    assert ran == ["new", "used"]


@pytest.mark.slow
def test_a_sweep_run_again_keeps_the_record_of_its_finished_jobs(tmp_path):
    """The same sweep run again (to finish its missing jobs): a finished job's .hydra/ stays as it was."""
    sweep = tmp_path / "sweep"
    arguments = ("-m", *SMALL, f"hydra.sweep.dir={sweep}", "mechanism.epsilon=1,2")
    first = run_cli(*arguments, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    record = {p.name: p.read_bytes() for p in (sweep / "0" / ".hydra").iterdir()}
    assert set(record) == {"config.yaml", "hydra.yaml", "overrides.yaml"}
    (sweep / "1" / "metrics.json").unlink()
    for path in (sweep / "0" / ".hydra").iterdir():  # a change would show even within the same second
        path.write_bytes(path.read_bytes() + b"# kept\n")
    run_cli(*arguments, cwd=tmp_path)
    assert (sweep / "1" / "metrics.json").is_file()
    assert {p.name: p.read_bytes() for p in (sweep / "0" / ".hydra").iterdir()} == \
        {name: content + b"# kept\n" for name, content in record.items()}
    assert "mechanism.epsilon=2" in (sweep / "1" / ".hydra" / "overrides.yaml").read_text()
