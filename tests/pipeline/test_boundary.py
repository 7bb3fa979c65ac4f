"""Issue 22 item 1, one boundary: every optional hook the engine uses is declared once in pipeline/boundary.py with
its default, and pipeline/game.py asks the boundary instead of probing a box with getattr/hasattr.
(Every box of conf/ through the boundary: tests/pipeline/test_protocols.py, test_every_option_meets_its_protocol.)"""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

from pipeline import boundary
from pipeline import game

GAME = Path(game.__file__)
# What a box (or a trial's law or profile) is called in the engine; `self` is Boxes. The logger is not a box.
BOX_NAMES = {"box", "boxes", "prior", "mechanism", "attack", "att", "metric", "bound", "law", "profile", "self",
             "variant"}


class Bare:
    """A box that defines no optional hook at all."""


def _calls(bare):
    """{hook: (its result for a box without it, the expected default)}."""
    seen = []
    return {
        "box_name": (boundary.box_name(bare), "Bare"),
        "box_params": (boundary.box_params(bare), None),
        "data_files": (boundary.data_files(bare), ()),
        "reads_data_files": (boundary.reads_data_files(bare), False),
        "stage_key_defaults": (boundary.stage_key_defaults(bare), None),
        "use_cache": (boundary.use_cache(bare, seen.append) or seen, []),
        "domain_size": (boundary.domain_size(bare), None),
        "per_trial": (boundary.per_trial(bare), False),
        "law_key": (boundary.law_key(bare), None),
        "law_probabilities": (boundary.law_probabilities(bare), None),
        "for_prior": (boundary.for_prior(bare, object()) is bare, True),
        "release_stage": (boundary.release_stage(bare), None),
        "cache_release": (boundary.cache_release(bare), False),
        "release_codec": (_round_trip(boundary.release_codec(bare)), True),
        "trials_side_by_side": (boundary.trials_side_by_side(bare), None),
        "release_info": (boundary.release_info(bare, np.zeros(2)), {}),
        "privacy": (boundary.privacy(bare), {}),
        "own_delta": (boundary.own_delta(bare), None),
        "profile_params": (boundary.profile_params(bare), {"profile": "Bare"}),
        "attack_label": (boundary.attack_label(bare), "Bare"),
        "guesses_per_target": (boundary.guesses_per_target(bare), None),
        "variants": (boundary.variants(bare), {}),
        "prepares": (boundary.prepares(bare), False),
        "observed": (boundary.observed(bare), {}),
        "compute_per_trial": (boundary.compute_per_trial(bare, 1, 2, 3, 4, 5), None),
        "bound_theorem": (boundary.bound_theorem(bare, 1, 2, 3, 4), None),
        "mixes_trials": (boundary.mixes_trials(bare), False),
        "logs_tables": (boundary.logs_tables(bare), False),
        "updates_config": (boundary.updates_config(bare), False),
    }


def _round_trip(codec) -> bool:
    to_arrays, from_arrays = codec
    a = np.arange(3)
    arrays = to_arrays(a)
    return set(arrays) == {"release"} and np.array_equal(from_arrays(arrays), a)


def test_every_declared_hook_is_a_function_of_the_boundary():
    functions = {name for name, f in inspect.getmembers(boundary, inspect.isfunction)
                 if f.__module__ == boundary.__name__ and not name.startswith("_")}
    assert set(boundary.HOOKS) == functions == set(boundary.__all__) - {"HOOKS"}
    assert all(inspect.getdoc(getattr(boundary, name)) for name in functions)


@pytest.mark.parametrize("hook", sorted(boundary.HOOKS))
def test_every_hook_has_its_default_on_a_box_without_it(hook):
    calls = _calls(Bare())
    assert set(calls) == set(boundary.HOOKS)
    got, expected = calls[hook]
    assert got == expected, f"boundary.{hook} on a box without it gave {got!r}, not its default {expected!r}"


def test_a_present_hook_is_used():
    class Full:
        name, label, k, domain_size, per_trial, cache_release, delta, mixes_trials = \
            "full", "lab", 2, 5, True, True, 1e-6, True
        STAGE_KEY_DEFAULTS = {"x": 1}
        calls: list = []

        def params(self): return {"p": 1}
        def data_files(self): return ["f"]
        def use_cache(self, get): self.calls.append(get)
        def key(self): return "law"
        def for_prior(self, prior): return ("bound", prior)
        def release_stage(self, *a): return ("s", {})
        def release_arrays(self, a): return {"r": a}
        def release_from_arrays(self, arrays): return arrays["r"]
        def trials_side_by_side(self, n): return n
        def release_info(self, a): return {"i": 1}
        def privacy(self): return {"reason": "r"}
        def variants(self): return {"v": 1}
        def prepare(self, *a): return 0
        def observed(self): return {"t": 1.0}
        def compute_per_trial(self, *a): return {0.5: [1]}
        def theorem(self, *a): return {"theorem": "T"}
        def log_table(self, *a): pass
        def update_config(self, *a): pass

    full = Full()
    assert boundary.box_name(full) == "full" and boundary.attack_label(full) == "lab"
    assert boundary.box_params(full) == {"p": 1} and boundary.profile_params(full) == {"p": 1}
    assert boundary.data_files(full) == ["f"] and boundary.reads_data_files(full)
    assert boundary.stage_key_defaults(full) == {"x": 1}
    boundary.use_cache(full, print)
    assert full.calls == [print]
    assert boundary.domain_size(full) == 5 and boundary.per_trial(full) and boundary.law_key(full) == "law"
    assert boundary.for_prior(full, 1) == ("bound", 1) and boundary.release_stage(full)() == ("s", {})
    assert boundary.cache_release(full) and boundary.own_delta(full) == 1e-6
    to_arrays, from_arrays = boundary.release_codec(full)
    assert to_arrays(3) == {"r": 3} and from_arrays({"r": 3}) == 3
    assert boundary.trials_side_by_side(full)(4) == 4 and boundary.release_info(full, 0) == {"i": 1}
    assert boundary.privacy(full) == {"reason": "r"} and boundary.guesses_per_target(full) == 2
    assert boundary.variants(full) == {"v": 1} and boundary.prepares(full) and boundary.observed(full) == {"t": 1.0}
    assert boundary.compute_per_trial(full, 1, 2, 3, 4, 5) == {0.5: [1]}
    assert boundary.bound_theorem(full, 1, 2, 3, 4) == {"theorem": "T"} and boundary.mixes_trials(full)
    assert boundary.logs_tables(full) and boundary.updates_config(full)


def _probes(source: str) -> list[ast.Call]:
    return [node for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")]


def _on_a_box(call: ast.Call) -> bool:
    """Whether the probe's first argument is a box: a box's name, boxes.<group>, type(<box>) or a nested probe."""
    first = call.args[0] if call.args else None
    if isinstance(first, ast.Call) and isinstance(first.func, ast.Name) and first.func.id in ("type", "getattr"):
        return True
    if isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name) and first.value.id in BOX_NAMES:
        return True
    return isinstance(first, ast.Name) and first.id in BOX_NAMES


def test_the_engine_probes_no_box():
    probes = _probes(GAME.read_text())
    assert len(probes) <= 3, f"pipeline/game.py makes {len(probes)} getattr/hasattr calls (at most 3): lines " \
                             f"{[p.lineno for p in probes]}; ask pipeline/boundary.py instead."
    on_boxes = [p.lineno for p in probes if _on_a_box(p)]
    assert not on_boxes, f"pipeline/game.py probes a box at lines {on_boxes}; ask pipeline/boundary.py instead."


def test_the_static_check_sees_a_probe_on_a_box():
    for source in ('getattr(attack, "k", None)', 'hasattr(box, "theorem")', 'getattr(boxes.prior, "x", 1)',
                   'callable(getattr(mechanism, "privacy", None))', 'getattr(type(box), "X", None)'):
        assert [_on_a_box(p) for p in _probes(source)][:1] == [True], source
