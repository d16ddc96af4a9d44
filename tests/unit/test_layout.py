"""The planning side stays pure: nothing under migration/ imports the code that reads the cluster (live/) or
declares resources (components/, the Pulumi resource providers), so decide runs on plain data alone."""

from __future__ import annotations

import ast
import importlib.util
import pathlib

import pytest

import migration

FORBIDDEN = {"components", "live", "pulumi_kubernetes", "pulumi_command"}
MIGRATION_DIR = pathlib.Path(migration.__file__).parent
MODULES = sorted(MIGRATION_DIR.rglob("*.py"))


def imported_packages(source: str, package: str) -> set[str]:
    """The top-level package of every import in source (inside functions too; relative ones resolved against
    package)."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                         if node.level else node.module)
    return {name.split(".")[0] for name in names}


@pytest.mark.parametrize("module", MODULES, ids=lambda path: path.name)
def test_migration_imports_neither_live_nor_the_resource_layer(module):
    package = ".".join(("migration", *module.relative_to(MIGRATION_DIR).parent.parts))
    assert not imported_packages(module.read_text(), package) & FORBIDDEN


def test_an_import_of_the_resource_layer_is_caught():
    source = "def f():\n    from components.checks import TeardownArgs\nimport pulumi_kubernetes.core\n"
    assert imported_packages(source, "migration") == {"components", "pulumi_kubernetes"}
    assert imported_packages("from . import plan\n", "migration") == {"migration"}


def test_the_suites_order_names_test_files_that_exist():
    """tests/conftest.py's LONGEST_FIRST orders the cluster files; a renamed file would silently fall back to the
    end of the order."""
    from tests.conftest import LONGEST_FIRST
    tests = MIGRATION_DIR.parent / "tests"
    files = {path.name for path in tests.glob("*/test_*.py") if path.parent.name != "unit"}
    assert set(LONGEST_FIRST) <= files, set(LONGEST_FIRST) - files
