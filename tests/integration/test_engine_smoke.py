"""The built Pulumi CLI, language host and both providers run a real program against the real apiserver."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from devcluster import toolchain
from tests.support import run

PROGRAM = pathlib.Path(__file__).parent / "engine_smoke" / "__main__.py"


@pytest.fixture
def project(tmp_path, cluster):
    """The smoke program in a scratch project with its own file:// state (stack files stay out of the repo)."""
    (tmp_path / "Pulumi.yaml").write_text(
        "name: engine-smoke\nruntime:\n  name: python\n  options:\n"
        f"    virtualenv: {toolchain.REPO / '.venv'}\n")
    shutil.copy(PROGRAM, tmp_path / "__main__.py")
    env = cluster.env() | {"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PULUMI_HOME": str(tmp_path / "home")}
    (tmp_path / "state").mkdir()
    run(["pulumi", "stack", "init", "smoke"], env, cwd=tmp_path)
    return tmp_path, env


def test_up_preview_destroy(project, kubectl):
    cwd, env = project
    run(["pulumi", "up", "--yes", "--non-interactive"], env, cwd=cwd)
    assert kubectl("get", "configmap", "engine-smoke", "-o", "jsonpath={.data.hello}").stdout == "world"
    outputs = json.loads(run(["pulumi", "stack", "output", "--json"], env, cwd=cwd).stdout)
    assert outputs == {"readBack": "world"}, "the command ran after the ConfigMap existed and read it back"

    run(["pulumi", "preview", "--expect-no-changes", "--non-interactive"], env, cwd=cwd)

    run(["pulumi", "destroy", "--yes", "--non-interactive"], env, cwd=cwd)
    gone = kubectl("get", "configmap", "engine-smoke", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_versions_are_the_pins(cluster):
    env = cluster.env()
    assert run(["pulumi", "version"], env).stdout.strip() == "v3.259.0"
    server = json.loads(run(["kubectl", "version", "-o", "json"], env).stdout)["serverVersion"]
    assert server["gitVersion"] == "v1.36.3"
    assert run(["istioctl", "version", "--remote=false"], env).stdout.strip() == "client version: 1.30-dev"


def test_missing_binary_names_the_fix():
    with pytest.raises(toolchain.ToolchainMissing, match=r"run `make demo` .* or `make setup`"):
        toolchain.binary("pulumi-resource-not-built")
