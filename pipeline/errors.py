"""The pipeline's one kind of refusal: a ConfigError is one sentence naming the config key, the value and the fix.

Boxes raise their own ValueError (or FileNotFoundError, ImportError, TypeError) naming their argument;
`_box_error` turns it into a ConfigError that names the config key (`group.argument`). The engine, the pre-flight
checks, the experiments and the sweeper all raise and catch this one class (it lives here, not in the engine, so
none of them imports the engine for it).
"""
from __future__ import annotations

from omegaconf import DictConfig

from stages.bound._validate import ArgumentError

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A config value the boxes or the game refuse; str() is one sentence naming the key and value, and ``key``
    is that config key as data (e.g. "prior.n_targets"; None where the refusal is not about one key)."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


_CONFIG_PROBLEMS = (ValueError, FileNotFoundError, ImportError, TypeError)


def _unknown_argument(group: str, cfg: DictConfig) -> ConfigError | None:
    """One sentence when cfg[group] gives its box an argument that the `_target_`'s signature does not have (the
    first such), naming the box's real arguments and the nearest of them; None when every argument is taken."""
    import difflib
    import inspect

    from hydra.utils import get_object

    target = str(cfg[group].get("_target_"))
    try:
        parameters = inspect.signature(get_object(target)).parameters.values()
    except Exception:  # noqa: BLE001 - a target that cannot be looked at: the constructor's own sentence is reported
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    takes = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [str(k) for k in cfg[group] if not str(k).startswith("_") and str(k) not in takes]
    if not unknown:
        return None
    near = difflib.get_close_matches(unknown[0], takes, n=1)
    return ConfigError(
        f"{group}.{unknown[0]} is not an argument of the {group} box {target}, which takes {', '.join(takes)}; remove "
        f"it{f', or did you mean {group}.{near[0]}?' if near else '.'}", key=f"{group}.{unknown[0]}")


def _box_error(group: str, cfg: DictConfig, exc: BaseException) -> ConfigError:
    """One sentence naming the config key (group.argument) and the value the box refused."""
    cause = exc
    # hydra.utils.instantiate wraps the constructor's exception; report the box's own sentence.
    while cause.__cause__ is not None and not isinstance(cause, _CONFIG_PROBLEMS):
        cause = cause.__cause__
    if isinstance(cause, MemoryError):  # a size the box cannot hold (pipeline.preflight estimates most before)
        return ConfigError(f"{group}: the box needs more memory than this machine has ({cause!r}); lower its "
                           f"sizes (e.g. {group}.n_targets or {group}.domain_size).")
    if not isinstance(cause, _CONFIG_PROBLEMS):
        raise exc
    if isinstance(cause, TypeError):  # e.g. `+mechanism.epsilom=2`: an argument the constructor does not take
        unknown = _unknown_argument(group, cfg)
        if unknown is not None:
            return unknown
    message = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    if isinstance(cause, ArgumentError):  # the box named its argument as data
        argument = cause.argument
    else:  # a plain ValueError: the project's boxes start their sentence with the argument's name
        argument = message.split(" ", 1)[0]
    if argument in cfg[group]:  # an argument of the box's config: call it by its config key
        key = f"{group}.{argument}"
        return ConfigError(f"{group}.{message}" if message.startswith(argument) else f"{key}: {message}", key=key)
    return ConfigError(f"{group}: {message}", key=group)
