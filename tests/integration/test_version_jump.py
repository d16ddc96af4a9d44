"""A real legacy plane of one Istio build moved, with `targetVersion`, to a real plane of another, and rolled back.

The toolchain holds two builds of istio.io/istio (tools/pins.env: the pinned 1.30-dev and the next minor, 1.31-dev).
The legacy mesh is the istio-pilot charm's install at the pinned build; the migrated stack asks for the next one.
Every istiod pod runs the pilot-discovery of its own image's version (devcluster.istiod_runner), so the istiod
processes checked here are the two real builds, and the CRD schemas are what each build's istioctl renders.
"""

from __future__ import annotations

import subprocess

import pytest

from demo import fixture
from demo.observe import read, snapshot
from devcluster import toolchain
from devcluster.toolchain import pins
from migration.versions import build_of, istiod_image
from migration.workloads import proxy_address
from tests.support import (LEGACY_ISTIOD, NEW_ISTIOD, fresh_workspace, live_crd_versions, nothing_lost,
                           one_injector_throughout, purged, rendered_crd_specs, roll_back_and_check, up_with_history)

PINNED, NEXT = pins()["ISTIO_VERSION"], pins()["ISTIO_NEXT_VERSION"]
# Deployments only: no pipeline step to wait for
SIZE = fixture.FixtureSize(profiles=2, deployments=2, kubeflow_shape=False, pod_stage_ms=150)
PROFILES = fixture.profile_namespaces(SIZE)


def istiods(env) -> dict[str, dict]:
    return {f"{d['metadata']['namespace']}/{d['metadata']['name']}": d
            for d in read(env, "deployments", label_selector="app=istiod")["items"]}


def discovery_binaries(workspace, namespace: str) -> set[str]:
    """The executables of the pilot-discovery processes serving namespace's istiod pods on workspace's cluster (by
    its kubeconfig and their pod IPs: another test's cluster may reuse the same pod IPs in its own network
    namespace)."""
    env, kubeconfig = workspace.env, f"--kubeconfig={workspace.cluster.inner_kubeconfig} "
    ips = {p["status"]["podIP"] for p in read(env, "pods", namespace, label_selector="app=istiod")["items"]
           if p["status"].get("podIP")}
    lines = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout.splitlines()
    return {line.split()[0].rsplit("/", 1)[-1] for line in lines for ip in ips
            if kubeconfig in line and f"--httpAddr={ip}:8080" in line}


def proxy_images(env) -> dict[str, str]:
    """profile pod -> its injected istio-proxy image, for every running profile pod with a proxy."""
    found = {}
    for ns in PROFILES:
        for pod in read(env, "pods", ns)["items"]:
            proxy = next((c for c in pod["spec"]["containers"] if c["name"] == "istio-proxy"), None)
            if proxy and pod["status"].get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp"):
                found[f"{ns}/{pod['metadata']['name']}"] = (proxy["image"], proxy_address(pod))
    return found


@pytest.fixture(scope="module")
def mesh():
    toolchain.ensure("istio-next")  # the second minor's istioctl and pilot-discovery, built on first use
    with purged(fresh_workspace("jump", targetVersion=NEXT)) as workspace:
        fixture.build(workspace.env, SIZE)
        env = workspace.env
        before = {"snapshot": snapshot(env), "image": istiod_image(istiods(env)["kubeflow/istiod"]),
                  "crds": live_crd_versions(env), "proxies": proxy_images(env)}
        yield workspace, before, up_with_history(workspace, "migrated", PROFILES)


def test_preflight_named_both_versions_and_the_crd_change(mesh):
    outputs = mesh[0].outputs("migrated")
    assert outputs["legacyIstiod"]["version"] == PINNED and outputs["migratedIstiod"]["version"] == NEXT
    assert outputs["crdSchemas"] == f"updated from {PINNED} to {NEXT}"


def test_the_new_istiod_is_the_next_build_at_the_legacy_hub(mesh):
    workspace, before, _ = mesh
    new_image = istiod_image(istiods(workspace.env)["istio-system/istiod-kf-1-30"])
    assert build_of(new_image).version == NEXT
    assert new_image.rsplit(":", 1)[0] == before["image"].rsplit(":", 1)[0], "same hub and image name"
    assert discovery_binaries(workspace, "istio-system") == {f"pilot-discovery-{NEXT}"}
    assert "kubeflow/istiod" not in istiods(workspace.env), "the old plane is gone after the move"


def test_crds_now_hold_the_next_builds_schemas_and_every_cr_is_kept(mesh):
    workspace, before, states = mesh
    nothing_lost(workspace.env, before["snapshot"])
    one_injector_throughout(states)
    rendered = rendered_crd_specs(NEXT, f"istioctl-{NEXT}")
    assert rendered != rendered_crd_specs(PINNED, "istioctl"), "the two builds render different CRD schemas"
    assert live_crd_versions(workspace.env) == rendered


def test_every_sidecar_runs_the_next_builds_proxy_on_the_new_istiod(mesh):
    workspace, before, _ = mesh
    assert {image.rsplit(":", 1)[1] for image, _ in before["proxies"].values()} == {PINNED}
    after = proxy_images(workspace.env)
    assert len(after) == len(before["proxies"]) > 0
    assert {(image.rsplit(":", 1)[1], address) for image, address in after.values()} == {(NEXT, NEW_ISTIOD)}


def test_the_rollback_returns_to_the_recorded_version(mesh):
    """Runs last: the legacy stack renders at the version recorded on the new istiod (the legacy one is gone)."""
    workspace, before, _ = mesh
    roll_back_and_check(workspace, PROFILES)  # one injector throughout, nothing lost, every sidecar on the old istiod
    outputs = workspace.outputs("legacy")
    assert outputs["crdSchemas"] == f"updated from {NEXT} to {PINNED}"
    env = workspace.env
    assert istiod_image(istiods(env)["kubeflow/istiod"]) == before["image"]
    assert discovery_binaries(workspace, "kubeflow") == {"pilot-discovery"}, "the pinned build serves the legacy plane"
    assert live_crd_versions(env) == before["crds"], "the CRDs hold the recorded version's schemas again"
    assert {(image, address) for image, address in proxy_images(env).values()} == \
        {(image, LEGACY_ISTIOD) for image, _ in before["proxies"].values()}
