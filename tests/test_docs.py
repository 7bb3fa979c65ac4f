"""The docs site builds with no warning, and every Python example of the README and of its pages runs.

* `mkdocs build --strict -f docs/mkdocs.yml` (into a temporary folder): a broken link or anchor, a page that the
  navigation misses or names without it existing, or a docstring that mkdocstrings cannot render is a warning, and
  --strict makes any warning fail the build.
* Each ```python block of README.md and of docs/pages/ runs: a block of `>>>` examples as a doctest (its outputs
  must be what the code prints), any other block as a script.

The shell commands of the same files are run by tests/test_readme_commands.py.
"""
from __future__ import annotations

import doctest
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import REPO

MKDOCS_YML = REPO / "docs" / "mkdocs.yml"
PAGES = (REPO / "README.md", *sorted((REPO / "docs" / "pages").rglob("*.md")))
FENCE = re.compile(r"^```(\w*)\s*$")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line of the opening fence, the block's text) for every ```python block of a markdown file."""
    blocks, language, start, lines = [], None, 0, []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fence = FENCE.match(line)
        if language is None and fence:
            language, start, lines = fence.group(1), number, []
        elif language is not None and line.strip() == "```":
            if language in ("python", "pycon"):
                blocks.append((start, "\n".join(lines) + "\n"))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


BLOCKS = [(path, line, text) for path in PAGES for line, text in python_blocks(path)]


def test_the_examples_are_found():
    where = {path.relative_to(REPO).as_posix() for path, _, _ in BLOCKS}
    assert {"README.md", "docs/pages/bounds.md"} <= where
    assert all(">>>" in text for path, _, text in BLOCKS if path.name in ("README.md", "bounds.md"))


@pytest.mark.parametrize("path,line,text", BLOCKS, ids=[f"{p.relative_to(REPO)}:{n}" for p, n, _ in BLOCKS])
def test_python_example_runs(path, line, text, monkeypatch):
    monkeypatch.chdir(REPO)
    name = f"{path.relative_to(REPO)}:{line}"
    if ">>>" not in text:
        exec(compile(text, name, "exec"), {"__name__": "__example__"})
        return
    test = doctest.DocTestParser().get_doctest(text, {"__name__": "__example__"}, name, str(path), line)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_readme_links_resolve():
    """The README is not part of the site (the build checks the pages' links): its links must hold too."""
    text = (REPO / "README.md").read_text()
    headings = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", text, re.M)}
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in target:
            continue
        path, _, anchor = target.partition("#")
        if path:
            assert (REPO / path).exists(), f"README links to {target}, which does not exist"
        else:
            assert anchor in headings, f"README links to #{anchor}, which is no heading of the README"


def test_docs_build_strict(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None:
        pytest.fail("mkdocs and mkdocstrings-python are not installed: pip install -e '.[docs]' (part of '.[all]', "
                    "which .ci/setup installs)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(MKDOCS_YML), "-d", str(tmp_path / "site")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    output = result.stdout + result.stderr
    warnings = [line for line in output.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert result.returncode == 0 and not warnings, output[-6000:]
    site = tmp_path / "site"
    for page in ("index.html", "bounds/index.html", "stages/bound/THEORY/index.html", "api/bound/index.html",
                 "api/protocols/index.html", "api/boundary/index.html", "outputs/figures/llm_canaries_small.png"):
        assert (site / page).is_file(), page
    api = (site / "api" / "bound" / "index.html").read_text()
    for name in ("count_bound", "tail_bound", "success_bound", "best_bound", "from_dp_event", "from_delta",
                 "from_opacus", "GaussianDP", "DPSGD", "whole_prior_success"):
        assert f'id="stages.bound.{name}"' in api or f'id="stages.bound.whole_prior.{name}"' in api, name
    # the module docstrings are markdown: a reST literal-block marker would show as a bare "::"
    assert not re.search(r"::\s*</p>", api), "a literal '::' is shown on the stages.bound API page"
    # every page links the stylesheet that wraps code blocks (a long command is read whole, never cut at the edge)
    for page in ("index.html", "bounds/index.html", "llm/index.html"):
        assert "stylesheets/extra.css" in (site / page).read_text(), page
    css = (site / "stylesheets" / "extra.css").read_text()
    assert re.search(r"pre > code\s*\{[^}]*white-space:\s*pre-wrap", css), css


@pytest.mark.parametrize("page", ["index.md", "bounds.md"])
def test_code_blocks_fit_the_page(page):
    """The home and bounds pages' code (the game's diagram must not wrap; the examples read best unwrapped) fits
    100 columns, which the site shows whole at a laptop's width; longer lines elsewhere wrap (extra.css)."""
    inside, long = False, []
    for number, line in enumerate((REPO / "docs" / "pages" / page).read_text().splitlines(), start=1):
        if FENCE.match(line) or (inside and line.strip() == "```"):
            inside = not inside
        elif inside and len(line) > 100:
            long.append(f"{page}:{number} ({len(line)} characters)")
    assert not long, long
