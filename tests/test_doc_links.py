"""Every relative link of README.md and docs/*.md leads somewhere in the repository.

A link ``[text](path)`` or ``![alt](path)`` outside code must name a file of the
repository (relative to the document, never outside the checkout: a clean clone has
nothing else), and ``[text](path#anchor)`` or ``[text](#anchor)`` a heading of that
Markdown file, as GitHub names headings.  Moving a section or renaming a heading
otherwise leaves readers at a dead end that nothing else notices.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ["README.md"] + sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^ *(```|~~~)")
HEADING = re.compile(r"^(#{1,6}) +(.*?) *#* *$")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^()\s]+)\)")
CODE_SPAN = re.compile(r"(`+).*?\1")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def prose_lines(text: str):
    """(line number, line) of every line outside fenced code blocks, code spans removed."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, CODE_SPAN.sub("", line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown text's headings; a repeated one gets -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        heading = None if fenced else HEADING.match(line)
        if heading:
            name = slug(heading.group(2))
            count = seen.get(name, 0)
            found.add(name if count == 0 else f"{name}-{count}")
            seen[name] = count + 1
    return found


def broken_links(document: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with each relative link of ``document``, as ``FILE:LINE: why``."""
    text = document.read_text(encoding="utf-8")
    where = document.relative_to(root)
    wrong = []
    for number, line in prose_lines(text):
        for target in LINK.findall(line):
            if SCHEME.match(target):
                continue  # https:, mailto: — not ours to resolve
            path, _, anchor = target.partition("#")
            resolved = (document.parent / path).resolve() if path else document
            if not resolved.is_relative_to(root.resolve()):
                wrong.append(f"{where}:{number}: {target} leads outside the repository")
            elif not resolved.exists():
                wrong.append(f"{where}:{number}: {target}: no such file")
            elif anchor and resolved.suffix == ".md" and resolved.is_file() \
                    and anchor not in anchors(resolved.read_text(encoding="utf-8")):
                wrong.append(f"{where}:{number}: {target}: no heading '#{anchor}' "
                             f"in {resolved.relative_to(root.resolve())}")
    return wrong


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_relative_link_resolves(document):
    assert broken_links(ROOT / document) == []


@pytest.mark.parametrize("document", DOCUMENTS)
def test_no_document_points_outside_the_repository_or_at_issue_numbers(document):
    """A reader has the repository, not the workspace it was written in, nor its tracker."""
    text = (ROOT / document).read_text(encoding="utf-8")
    assert "../shared" not in text and "shared/spec" not in text
    assert re.findall(r"\bissues? #?\d+", text, re.IGNORECASE) == []


def test_the_checker_finds_what_is_broken(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(
        "# The guide\n\n## `cpl run` — a run\n\n## Notes\n\n## Notes\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "[ok](docs/guide.md) [ok](docs/guide.md#cpl-run--a-run) [ok](docs/guide.md#notes-1)\n"
        "[ok](#the-readme) ![ok](docs/guide.md) [ok](https://example.com/x#y)\n"
        "`[in code](missing.md)`\n"
        "```\n[in a block](missing.md)\n```\n"
        "# The README\n"
        "[gone](docs/missing.md) [anchor](docs/guide.md#cpl-run)\n"
        "![picture](docs/images/x.svg) [up](../shared/spec/cpl.md) [here](#nowhere)\n",
        encoding="utf-8")
    assert broken_links(tmp_path / "README.md", tmp_path) == [
        "README.md:8: docs/missing.md: no such file",
        "README.md:8: docs/guide.md#cpl-run: no heading '#cpl-run' in docs/guide.md",
        "README.md:9: docs/images/x.svg: no such file",
        "README.md:9: ../shared/spec/cpl.md leads outside the repository",
        "README.md:9: #nowhere: no heading '#nowhere' in README.md",
    ]
