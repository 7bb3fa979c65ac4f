"""mkdocs hooks: the repository files the pages link to become part of the site, at their repository paths.

A page in docs/pages/ links to a repository file as it would on GitHub, e.g. `../../stages/bound/THEORY.md` or
`../../outputs/figures/pii_law_500.png`. mkdocs only knows the files under docs/pages/, so `on_files` adds the
repository files listed in REPO_FILES to the site (at `stages/bound/THEORY/`, `outputs/figures/…`), and
`on_page_markdown` points each page's links to them there. THEORY.md and MMC_CHECK.md thus stay one file each, read
in the repository and on the site alike; a link to any other file outside docs/pages/ still fails the strict build.
"""
from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

#: Repository files shown in the site (globs relative to the repository root).
REPO_FILES = ("stages/bound/THEORY.md", "stages/bound/MMC_CHECK.md", "outputs/figures/*.png")
#: A markdown link or image target: `](target)` or `](target#anchor)`.
LINK = re.compile(r"\]\(([^)\s#]+)(#[^)\s]*)?\)")


def _repository(config) -> Path:
    return Path(config.config_file_path).resolve().parent.parent


def _repository_files(config) -> list[str]:
    root = _repository(config)
    return sorted(path.relative_to(root).as_posix() for pattern in REPO_FILES for path in root.glob(pattern))


def on_files(files, config):
    root = _repository(config)
    for path in _repository_files(config):
        files.append(File.generated(config, path, abs_src_path=str(root / path)))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.abs_src_path is None or not Path(page.file.abs_src_path).is_relative_to(Path(config.docs_dir).resolve()):
        return markdown  # a repository file itself: its own relative links already hold
    root = _repository(config)
    shown = set(_repository_files(config))
    page_dir = Path(page.file.abs_src_path).resolve().parent
    site_dir = posixpath.dirname(page.file.src_uri)

    def relink(match: re.Match) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        if "://" in target:
            return match.group(0)
        resolved = (page_dir / target).resolve()
        if not resolved.is_relative_to(root) or resolved.relative_to(root).as_posix() not in shown:
            return match.group(0)
        return f"]({posixpath.relpath(resolved.relative_to(root).as_posix(), site_dir or '.')}{anchor})"

    return LINK.sub(relink, markdown)
