"""The docs cannot rot silently: the README opens with the two commands, and referenced files exist."""

from __future__ import annotations

import re

import pytest

from devcluster.toolchain import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Repository paths written in backticks or as relative links, e.g. `tools/build-toolchain.sh`, (docs/design.md).
PATH = re.compile(r"(?:`|\]\()((?:\.ci|tools|docs|devcluster|migration|components|live|bench|tests|demo)/[\w./-]+?)(?:`|\)|#)")


def test_readme_starts_with_the_two_commands():
    text = (REPO / "README.md").read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, re.S).group(1).strip().splitlines()
    assert [line.split("#")[0].strip() for line in first_block] == ["make demo", "make test"]
    assert text.index("```bash") < text.index("\n## "), "the commands come before any section"
    ci = (REPO / ".ci" / "run").read_text()
    assert "make test" in ci


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_referenced_files_exist(doc):
    missing = sorted({p for p in PATH.findall(doc.read_text())
                      if "<" not in p and "*" not in p and not (REPO / p.rstrip(".")).exists()})
    assert not missing, f"{doc.name} references missing paths: {missing}"


def test_design_answers_the_five_questions():
    headings = re.findall(r"^## (\d)\. (.*)$", (REPO / "docs" / "design.md").read_text(), re.M)
    assert [n for n, _ in headings] == ["1", "2", "3", "4", "5"]


def test_every_config_key_is_in_the_readme_reference():
    from migration.config import KEYS
    text = (REPO / "README.md").read_text()
    assert not [key for key in KEYS if f"| `{key}` |" not in text], "README's configuration table misses keys"
