"""The `>>>` examples of stages.bound's docstrings run and print what they say (they are rendered in the docs' API
reference). Each example is meant to take well under a second."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import stages.bound

MODULES = sorted(f"stages.bound.{m.name}" for m in pkgutil.iter_modules(stages.bound.__path__))
#: Modules whose public docstrings must keep examples (so that they cannot silently disappear).
WITH_EXAMPLES = ("stages.bound.profiles", "stages.bound.accountants", "stages.bound.best", "stages.bound.pure_dp")


@pytest.mark.parametrize("name", ["stages.bound", *MODULES])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed (see above)"
    if name in WITH_EXAMPLES:
        assert result.attempted > 0, f"{name} lost its docstring examples"
