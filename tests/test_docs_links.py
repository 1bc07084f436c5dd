"""Every relative link in README.md and docs/*.md points at a file that exists, and at a heading in it."""

import re
from pathlib import Path
from typing import List, Set, Tuple

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs" / "results").glob("*.md"))]

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> Set[str]:
    """The anchors of the headings of ``path`` (outside code blocks)."""
    found, in_code = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found


def links(path: Path) -> List[Tuple[int, str]]:
    """``(line number, target)`` of every link in ``path`` that is not a web address."""
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        found += [(number, target) for target in _LINK.findall(line) if not re.match(r"[a-z]+:", target)]
    return found


def test_slug_follows_githubs_rule():
    assert slug(" Comparing with the PyG reference") == "comparing-with-the-pyg-reference"
    assert slug(" `geaet-dgl train`") == "geaet-dgl-train"
    assert slug(" PATTERN, CLUSTER, ZINC") == "pattern-cluster-zinc"


def _all_links():
    return [(f"{path.relative_to(REPO)}:{number}", path, target) for path in DOCS for number, target in links(path)]


@pytest.mark.parametrize("where,path,target", _all_links(), ids=[w for w, _, _ in _all_links()])
def test_every_relative_link_resolves(where, path, target):
    file_part, _, anchor = target.partition("#")
    destination = (path.parent / file_part).resolve() if file_part else path
    assert destination.exists(), f"{where}: link to {target!r}: {destination} does not exist"
    if anchor:
        assert anchor in anchors(destination), f"{where}: link to {target!r}: no heading with anchor #{anchor}"
