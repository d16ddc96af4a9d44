"""The docs cannot rot silently: the README opens with the two commands, and referenced files exist."""

from __future__ import annotations

import re
import subprocess

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


def test_every_config_key_is_in_the_configuration_reference():
    from migration.config import KEYS
    text = (REPO / "docs" / "configuration.md").read_text()
    missing = [key for key in KEYS if f"| `{key}` |" not in text]
    assert not missing, f"docs/configuration.md's table misses keys: {missing}"


# Words about how the project was made, not about the project: a numbered sitting of work, or a number of our own
# tracker (an upstream reference such as kubernetes/kubernetes#25224 names its repository and stays).
MAKING_OF = re.compile(r"\bsessions? ?-?\d|(?<![\w/.-])#\d+\b|\bissue #?\d", re.I)
# The examples below are assembled from parts, so that this file passes its own scan.
SITTING, NUMBER = "session", "#"


def tracked_text_files():
    """(path, text) of every tracked file that is text (binary files, such as PNGs and gzipped renders, are skipped)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    for name in listed.decode().split("\0"):
        path = REPO / name
        if not name or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            yield name, data.decode()
        except UnicodeDecodeError:
            continue


def test_the_project_speaks_only_of_itself():
    found = [f"{name}:{number}: {line.strip()[:100]}"
             for name, text in tracked_text_files()
             for number, line in enumerate(text.splitlines(), 1) if MAKING_OF.search(line)]
    assert not found, "say why in the project's own words (a date and commit for a measurement):\n" + "\n".join(found)


def test_making_of_words_are_recognised():
    assert MAKING_OF.search(f"measured in {SITTING} 14") and MAKING_OF.search(f"({NUMBER}15, small state)")
    assert MAKING_OF.search(f"issue {NUMBER}12") and MAKING_OF.search(f"bench-results-{SITTING}12.json")
    assert not MAKING_OF.search("deletes by UID (kubernetes/kubernetes#25224)")
    assert not MAKING_OF.search("start_new_session=True") and not MAKING_OF.search('color="#1f77b4"')
