"""`python -m pipeline`: the Hydra app that plays one attack game (or runs one experiment task) per job (no arguments: the quickstart).

What a user sees when something goes wrong is one line on stderr and a non-zero exit, never a
traceback, for everything that is not a bug: a refused config value (`error: ...`, exit 2; the job
folder Hydra made for it is removed again), a misspelt key (the nearest real one, exit 2), an unusable
`outputs_dir` (exit 2), Ctrl-C (exit 130, naming what the job folder truly holds), and a failing job of a -m sweep
(its one-line error, then where its log is). A job that finishes prints its folder; a job whose folder already holds
its own metrics.json is done (a sweep run again after an interruption: pipeline.job.check_output_dir); a sweep prints
its folder when it ends (pipeline.tracking.SweepFolder).
"""
from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

import pipeline  # noqa: F401  (registers the ${original_cwd:}, ${unique:} and ${record_subdir:} resolvers)
from pipeline.game import ConfigError
from pipeline.job import check_output_dir, complete_job, folder_contents, run_job
from pipeline.preflight import check_data

_log = logging.getLogger("pipeline.job")

# Exit status for a config value that a box or the game refused (Hydra itself exits 1 on an unknown option).
BAD_INPUT = 2
INTERRUPTED = 130
TERMINATED = 143  # 128 + SIGTERM, what a shell reports for a process killed by SIGTERM
# Files are "made by this process" if modified after this moment (1 s of slack for coarse file systems).
_STARTED = time.time() - 1.0
# The job folder of the job running in this process, and its sweep's folder in a -m sweep (for the Ctrl-C message).
_CURRENT_JOB: dict[str, str] = {}
# What Hydra writes into a job folder before the job runs: the only content a refused job's folder may hold
# for it to be removed (besides <job>.log and, with logger=wandb, the W&B run the job started: wandb/).
_HYDRA_FILES = {"config.yaml", "hydra.yaml", "overrides.yaml"}


class Terminated(KeyboardInterrupt):
    """SIGTERM (kill, a scheduler's cancel): handled like Ctrl-C (finished stages stay cached; a sweep's
    SLURM jobs are cancelled), then exit 143."""


def _on_sigterm(signum, frame) -> None:  # noqa: ARG001
    raise Terminated()


# A full disk, a quota, a read-only file system: the environment, not a bug; one sentence, exit 2.
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


def _disk_problem(exc: BaseException) -> str | None:
    """One sentence for an OSError the disk caused (no space left, quota, read-only), else None."""
    while exc is not None and not (isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS):
        exc = exc.__cause__ or exc.__context__
    if exc is None:
        return None
    where = f" writing {exc.filename}" if getattr(exc, "filename", None) else ""
    return (f"{exc.strerror or os.strerror(exc.errno)}{where}; free space there, or point outputs_dir (and "
            f"cache_dir) at a disk with room, then run the same command again (finished stages are cached).")


def _folder_problem(exc: BaseException, cfg: DictConfig) -> str | None:
    """One sentence naming the key to change (cache_dir or outputs_dir) for an OSError that a folder under it
    raised (a file in the way, no permission, a folder that cannot be made), else None."""
    if not isinstance(exc, (NotADirectoryError, FileExistsError, PermissionError, FileNotFoundError)) or not exc.filename:
        return None
    try:
        path = Path(os.path.abspath(os.fspath(exc.filename)))
        roots = [(key, Path(os.path.abspath(str(cfg.get(key))))) for key in ("cache_dir", "outputs_dir") if cfg.get(key)]
    except Exception:  # noqa: BLE001 - a key that does not resolve: not this kind of problem
        return None
    for key, root in roots:  # cache_dir first: by default it lies inside outputs_dir
        if path == root or root in path.parents:
            return (f"{key} {root} cannot be used: {exc.strerror or type(exc).__name__} ({exc.filename}); point "
                    f"{key} at a folder you can write.")
    return None


def _made_by_this_job(folder: Path, job_name: str) -> bool:
    """Whether folder holds only what this job wrote since its start (.hydra/*.yaml, <job>.log, wandb/)."""
    try:
        entries = list(folder.iterdir())
        for entry in entries:
            if entry.name == ".hydra" and entry.is_dir() and not entry.is_symlink():
                inner = list(entry.iterdir())
                if any(p.name not in _HYDRA_FILES or not p.is_file() or p.stat().st_mtime < _STARTED for p in inner):
                    return False
            elif entry.name == f"{job_name}.log" and entry.is_file() and not entry.is_symlink():
                if entry.stat().st_mtime < _STARTED:
                    return False
            elif entry.name == "wandb" and entry.is_dir() and not entry.is_symlink():
                # logger=wandb: the offline run this job started (and finished as failed) holds no result
                for inner in entry.rglob("*"):
                    if not inner.is_symlink() and inner.lstat().st_mtime < _STARTED:
                        return False
            else:
                return False
    except OSError:
        return False
    return True


def remove_refused_job_folder(folder: str | os.PathLike, job_name: str, stop_at: str | os.PathLike | None) -> bool:
    """Remove the folder of a refused job if it holds nothing but what Hydra wrote for this job, then the
    parents it leaves empty (up to, not including, stop_at). Returns whether the folder was removed."""
    folder = Path(folder)
    if not folder.is_dir() or not _made_by_this_job(folder, job_name):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists():
        return False
    _remove_empty_parents(folder, stop_at)
    return True


def _remove_empty_parents(folder: Path, stop_at: str | os.PathLike | None) -> None:
    """Remove the parents of a removed folder that it left empty, up to (not including) stop_at."""
    stop = Path(stop_at).resolve() if stop_at else None
    parent = folder.resolve().parent
    while stop is not None and parent != stop and stop in parent.parents:
        try:
            parent.rmdir()  # only an empty folder goes
        except OSError:
            break
        parent = parent.parent


def _submitit_log() -> str | None:
    """The stderr log of this job if it runs under submitit (submitit_local or SLURM), else None."""
    if "SUBMITIT_FOLDER" not in os.environ and "SUBMITIT_EXECUTOR" not in os.environ:
        return None
    try:
        import submitit

        return str(submitit.JobEnvironment().paths.stderr)
    except Exception:  # noqa: BLE001 - no log path is no reason to hide the error itself
        return None


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def app(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    output_dir = hydra_cfg.runtime.output_dir
    _CURRENT_JOB["dir"] = output_dir
    if hydra_cfg.mode == RunMode.MULTIRUN:
        _CURRENT_JOB["sweep"] = str(hydra_cfg.sweep.dir)
    # An experiment (conf/experiment/*.yaml) names its task; otherwise the job plays one game.
    run = run_job
    if cfg.get("task") is not None:
        from pipeline.experiments import run_task as run
    try:
        # Never run into another job's finished folder; this very job finished there (a sweep run again after an
        # interruption): it is done, and only what an older run of it left undrawn is drawn.
        if check_output_dir(output_dir, cfg, list(hydra_cfg.overrides.task)):
            drawn = complete_job(cfg, output_dir)
            _log.info("job folder %s already holds this job's metrics.json, so the job is done%s", output_dir,
                     f" (drew what it lacked: {', '.join(drawn)})" if drawn else "")
        else:
            if cfg.get("task") is not None:  # a game checks its data in check_config; a task before it builds anything
                check_data(cfg)
            run(cfg, output_dir, choices=dict(hydra_cfg.runtime.choices),
                run_name=hydra_cfg.job.override_dirname or "defaults")
    except (ConfigError, FileNotFoundError) as exc:
        # A refused value (or a missing data file): one sentence; nothing was computed, so the folder
        # Hydra made for the job goes too (the game computes everything before it writes).
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = _folder_problem(exc, cfg) or message
        stop = cfg.get("outputs_dir") if hydra_cfg.mode == RunMode.RUN else hydra_cfg.sweep.dir
        remove_refused_job_folder(output_dir, hydra_cfg.job.name, stop)
        if hydra_cfg.mode == RunMode.RUN:
            print(f"error: {message}", file=sys.stderr)
            sys.exit(BAD_INPUT)
        # In a sweep the launcher carries the error back to the sweep's process (main() prints it);
        # under submitit the job's own log gets the line too.
        log = _submitit_log()
        if log is not None:
            print(f"error: {message}", file=sys.stderr, flush=True)
        error = ConfigError(message)
        error.job_log = log  # type: ignore[attr-defined]
        raise error from None
    except OSError as exc:
        problem = _disk_problem(exc) or _folder_problem(exc, cfg)  # the environment, not a bug: one sentence
        if problem is None:
            raise
        # The job wrote at most a partial log and figure: nothing of it is a result, so its folder goes.
        if not (Path(output_dir) / "metrics.json").exists():
            shutil.rmtree(output_dir, ignore_errors=True)
            _remove_empty_parents(Path(output_dir),
                                  cfg.get("outputs_dir") if hydra_cfg.mode == RunMode.RUN else hydra_cfg.sweep.dir)
        if hydra_cfg.mode == RunMode.RUN:
            print(f"error: {problem}", file=sys.stderr)
            sys.exit(BAD_INPUT)
        raise ConfigError(problem) from None
    except Exception as exc:  # noqa: BLE001 - a crash: its traceback goes to the job's log, the sweep names the log
        log = _submitit_log() if hydra_cfg.mode == RunMode.MULTIRUN else None
        if log is not None:
            traceback.print_exc()
            exc.job_log = log  # type: ignore[attr-defined]
        raise
    if hydra_cfg.mode == RunMode.RUN:
        if cfg.get("task") is None and cfg.get("figure") is not None:
            # one point of an experiment's figure: its rows as the figure's CSV and plot, in the job folder
            from pipeline.experiments import write_report

            table, figure, rows = write_report(output_dir)
            print(f"one point of figure {table.stem} ({len(rows)} rows -> {table}); `python -m pipeline -m "
                  f"experiment=...` plays all its points", flush=True)
        print(f"job folder: {output_dir}", flush=True)


def _outputs_dir_problem(argv: list[str]) -> str | None:
    """One sentence if outputs_dir, cache_dir (or an explicit hydra run/sweep dir) given on the command line is a
    file, lies under one, or cannot be created: before Hydra makes a job folder, so nothing is left behind."""
    keys = ("outputs_dir", "cache_dir", "hydra.run.dir", "hydra.sweep.dir")
    given = {key: Path(os.getcwd()) / "outputs" for key in keys[:1]}
    for arg in argv:
        key, sep, value = arg.lstrip("+~").partition("=")
        if sep and key in keys and value and "${" not in value:
            given[key] = Path(value).expanduser()
    for key, path in given.items():
        path = path if path.is_absolute() else Path(os.getcwd()) / path
        existing = next((p for p in (path, *path.parents) if p.exists()), None)
        if existing is not None and not existing.is_dir():
            where = "is a file" if existing == path else f"lies under the file {existing}"
            example = Path(os.getcwd()) / "outputs" / ("cache" if key == "cache_dir" else "")
            return f"{key} {path} {where}; point {key} at a folder, e.g. {key}={example}."
        if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
            return f"{key} {path} cannot be created: {existing} is not writable; point {key} at a folder you can write."
        if existing is not None:
            # Try it (e.g. /proc/x: root may "write" /proc, yet nothing can be created there); leave nothing.
            try:
                os.rmdir(tempfile.mkdtemp(prefix=".advbounds-probe-", dir=existing))
            except OSError as exc:
                return (f"{key} {path} cannot be created: {exc.strerror} in {existing}; point {key} at a folder "
                        f"you can write.")
    return None


def _interrupted_job(cancelled: list[str] | None) -> str:
    """What an interrupt leaves, truly: the last job's folder and what it holds (or the SLURM jobs it cancelled),
    and how to resume."""
    folder, sweep = _CURRENT_JOB.get("dir"), _CURRENT_JOB.get("sweep")
    if cancelled:
        state = f"; its SLURM job{'s' * (len(cancelled) > 1)} {', '.join(cancelled)} cancelled"
    elif folder is None or not Path(folder).is_dir():
        state = ""
    elif Path(folder, "metrics.json").exists():
        state = f"; job folder {folder} is finished (it holds {folder_contents(folder)})"
    else:
        state = f"; job folder {folder} holds {folder_contents(folder)} but no metrics.json (the job did not finish)"
    if sweep is not None:  # the default sweep folder is new for every run: name this one to finish its jobs
        return (f"{state}; finished stages are cached, and the same command with hydra.sweep.dir={sweep} finishes "
                "the sweep's missing jobs")
    return f"{state}; finished stages are cached, so the same command resumes"


def _submitit_failure(exc: BaseException) -> tuple[str, str | None]:
    """(the failed job's one-line error, its log path) from submitit's exception in the sweep's process."""
    text = str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    error = next((line for line in lines if line.startswith("error: ")), None)
    if error is None:
        # A crash: the last line of the job's traceback names the exception.
        candidates = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b", line)]
        error = f"error: {candidates[-1] if candidates else lines[0] if lines else type(exc).__name__}"
    paths = re.findall(r"(/\S+_log\.(?:err|out))", text)
    return error, (paths[0] if paths else None)


def _mode_problem(args: list[str]) -> str | None:
    """One sentence if the command line asks Hydra for two modes at once (it would raise a traceback)."""
    modes = {"--multirun": "-m", "-m": "-m", "--run": "--run", "-r": "--run", "--cfg": "--cfg", "-c": "--cfg",
             "--info": "--info", "-i": "--info", "--shell-completion": "--shell-completion", "-sc": "--shell-completion"}
    given = sorted({modes[a] for a in args if a in modes})
    if len(given) > 1:
        return (f"the command line asks for {' and '.join(given)} at once, got {' '.join(args)}; give one of them "
                "(e.g. drop -m to print the composed config with --cfg job).")
    return None


def main() -> None:
    if len(sys.argv) == 1:
        from pipeline.quickstart import main as quickstart

        sys.exit(quickstart())
    problem = _outputs_dir_problem(sys.argv[1:]) or _mode_problem(sys.argv[1:])
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(BAD_INPUT)
    # Let exceptions that leave Hydra reach the handlers below (which print one line), unless the user
    # asked for Hydra's full tracebacks.
    full_error = os.environ.get("HYDRA_FULL_ERROR") == "1"
    os.environ["HYDRA_FULL_ERROR"] = "1"
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        app()
    except KeyboardInterrupt as exc:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # pipeline.slurm_launcher scancel'ed the sweep's jobs
        where = _interrupted_job(getattr(exc, "cancelled_slurm_jobs", None))
        what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        print(f"{what}{where}.", file=sys.stderr)
        sys.exit(TERMINATED if isinstance(exc, Terminated) else INTERRUPTED)
    except ConfigError as exc:  # a refused value in a -m sweep's job (run mode exits inside app)
        print(f"error: {exc}", file=sys.stderr)
        log = getattr(exc, "job_log", None)
        if log:
            print(f"log: {log}", file=sys.stderr)
        sys.exit(BAD_INPUT)
    except Exception as exc:  # noqa: BLE001
        if full_error:
            raise
        log = getattr(exc, "job_log", None)
        if log:  # a job of a submitit/SLURM sweep crashed: its error, then where its traceback is
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            print(f"error: {type(exc).__name__}: {first}", file=sys.stderr)
            print(f"log: {log}", file=sys.stderr)
            sys.exit(1)
        if type(exc).__module__.startswith("submitit"):
            error, log = _submitit_failure(exc)
            print(error, file=sys.stderr)
            if log:
                print(f"log: {log}", file=sys.stderr)
            sys.exit(1)
        from hydra.errors import CompactHydraException

        from pipeline.hydra_guard import unknown_key

        problem = unknown_key(exc, sys.argv[1:])  # a misspelt key: the nearest real one, not Hydra's "+" advice
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            sys.exit(BAD_INPUT)
        if isinstance(exc, CompactHydraException):  # Hydra's own one-paragraph errors (unknown option, ...)
            print(str(exc), file=sys.stderr)
            if exc.__cause__ is not None and type(exc.__cause__).__module__.startswith("omegaconf"):
                print(str(exc.__cause__), file=sys.stderr)
            sys.exit(1)
        problem = _disk_problem(exc)
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            sys.exit(BAD_INPUT)
        if isinstance(exc, (NotADirectoryError, FileExistsError, PermissionError)):
            print(f"error: cannot create the job folder: {exc}; point outputs_dir at a folder you can write.",
                  file=sys.stderr)
            sys.exit(BAD_INPUT)
        raise  # a bug: keep the traceback


if __name__ == "__main__":
    main()
