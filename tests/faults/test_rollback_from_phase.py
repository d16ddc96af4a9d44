"""R4: a migration stopped at a kill point, then rolled back (`pulumi stack select legacy && pulumi up`): the
legacy mesh again, one injector at every state, nothing lost, nothing of the migrated plane left running."""

from __future__ import annotations

from demo.observe import read
from tests.faults.harness import (DEFAULT_INJECTOR, NEW, OLD, PROFILES, cancel_dead_update, legacy_mesh,
                                  up_killed_at)
from tests.support import every_sidecar_on, new_pods_get, nothing_lost, one_injector_throughout, run


def test_rollback_from(rollback_point):
    mesh = legacy_mesh(f"r4-{rollback_point[:10]}")
    try:
        mesh.workspace.init("migrated")
        up_killed_at(mesh.workspace, rollback_point)
        cancel_dead_update(mesh.workspace)
        mesh.workspace.up("legacy")
        one_injector_throughout(mesh.history.stop())
        nothing_lost(mesh.env, mesh.before)
        injector = read(mesh.env, "mutatingwebhookconfigurations", name=DEFAULT_INJECTOR)
        assert {(h["clientConfig"]["service"]["namespace"], h["clientConfig"]["service"]["name"])
                for h in injector["webhooks"]} == {("kubeflow", "istiod")}
        left = [f"{d['metadata']['namespace']}/{d['metadata']['name']}"
                for d in read(mesh.env, "deployments", label_selector="app=istiod")["items"]]
        assert left == ["kubeflow/istiod"], f"istiod Deployments after the rollback: {left}"
        run(["kubectl", "-n", "kubeflow", "wait", "deploy/istiod", "--for=condition=Available", "--timeout=60s"],
            mesh.env)
        every_sidecar_on(mesh.workspace, OLD, NEW, "legacy")
        new_pods_get(mesh.env, PROFILES[0], OLD)
    finally:
        mesh.close()
