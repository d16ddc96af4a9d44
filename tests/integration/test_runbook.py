"""The runbook cannot rot: its runnable blocks run, in order, against a charm-style mesh on the embedded cluster."""

from __future__ import annotations

import re

from demo import charm_hooks, fixture
from demo.observe import read, snapshot
from devcluster.toolchain import REPO
from tests.support import fresh_workspace, gateway_istiod, ingress_objects, run

RUNBOOK = REPO / "docs" / "runbook.md"


def runnable_blocks() -> list[tuple[str, str, str]]:
    """(section heading, kind, script) of every ```bash block right after a `<!-- runnable -->` (kind "bash") or
    `<!-- juju -->` (kind "juju": Juju commands, run through demo.charm_hooks' emulation of the charms' hooks)."""
    blocks, heading = [], ""
    for match in re.finditer(r"^## ([^\n]*)$|^<!-- (runnable|juju) -->\n```bash\n(.*?)^```$", RUNBOOK.read_text(),
                             re.M | re.S):
        if match.group(1):
            heading = match.group(1)
        else:
            blocks.append((heading, "juju" if match.group(2) == "juju" else "bash", match.group(3)))
    return blocks


def test_runbook_marks_each_step_runnable():
    steps = [(heading.split(".")[0], kind) for heading, kind, _ in runnable_blocks()]
    assert steps == [("1", "bash"), ("2", "bash"), ("3", "bash"), ("4", "bash"), ("5", "bash"), ("6", "juju"),
                     ("7", "bash"), ("7", "juju"), ("7", "bash")], \
        "pre-checks, backup, preview, migrate, verify, Juju hand-over, rollback, Juju hand-back, migrate again"


def ingress_and_gateway(env: dict[str, str]) -> tuple[dict, str]:
    """istio-pilot's ingress objects and the istiod the gateway proxy is given."""
    return ingress_objects(env), gateway_istiod(env)


def test_runbook_end_to_end(tmp_path):
    """The operator's way: stacks without kubernetes:* config (KUBECONFIG from the environment, resolved once per
    run), a passphrase in the environment, commands run from the checkout. The cluster's workspace stands in for the
    checkout: its stack files are the repository's, `.venv` links to the repository's and PYTHONPATH names it."""
    workspace = fresh_workspace("runbook", bind_kubeconfig=False)
    (workspace.dir / ".venv").symlink_to(REPO / ".venv")
    cluster, env = workspace.cluster, dict(workspace.env, PYTHONPATH=str(REPO))
    try:
        env["BACKUP_DIR"] = str(tmp_path / "backup")
        size = fixture.FixtureSize(profiles=2, deployments=1, kubeflow_shape=False, pod_stage_ms=150,
                                   gateway_charm="1.21")
        fixture.build(env, size)  # the older gateway charm: no istio-gateway-metrics
        model = charm_hooks.JujuModel(env, size.gateway_charm, fixture.proxy_image_of(env))
        before = snapshot(env)
        for heading, kind, script in runnable_blocks():
            if kind == "juju":
                ingress = ingress_and_gateway(env)
                for command in [line for line in script.splitlines() if line.startswith("juju ")]:
                    result = model.run(command)
                    assert result is None or result.returncode == 0, f"{command}: {result.stderr[-3000:]}"
                assert ingress_and_gateway(env) == ingress, f"{heading}: ingress objects or the gateway changed"
                continue
            result = run(["bash", "-euc", script], env, cwd=workspace.dir, check=False)
            assert result.returncode == 0, f"runbook step '{heading}' failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            if heading.startswith("5."):
                assert "kf-istio-migrate protects" in result.stdout
            if heading.startswith("7.") and "stack rm" not in script:
                assert read(env, "deployments", "kubeflow", "istiod")["status"].get(
                    "availableReplicas") == 1, "rolled back to the legacy istiod"
        backups = {p.name for p in (tmp_path / "backup").iterdir()}
        assert "virtualservices.networking.istio.io.yaml" in backups and "istio-ca-secret.yaml" in backups
        after = snapshot(env)
        assert after["crd_uids"] == before["crd_uids"] and after["crs"] == before["crs"]
        assert read(env, "deployments", "istio-system", "istiod-kf-1-30")["status"].get(
            "availableReplicas") == 1, "migrated again"
        assert not read(env, "deployments", "kubeflow", label_selector="app=istiod")["items"]
    finally:
        cluster.down(purge=True)
