"""What the next owner does with the mesh after the hand-over, as docs/runbook.md step 9 tells them, and what the
old charm still tries: shared by the Helm hand-over's tests (tests/integration/test_migration.py) and the istioctl
owner's after the release (tests/faults/test_guard.py)."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from demo import charm_hooks
from demo.fixture import CHARM_INSTALL
from demo.observe import read, snapshot
from devcluster import toolchain
from live.verify import proxy_status
from migration.render import revision_address
from migration.proxies import runs_a_proxy
from migration.workloads import proxy_address
from tests.support import gateway_objects, nothing_lost, run

NEXT = toolchain.pins()["ISTIO_NEXT_VERSION"]
NEXT_REVISION = "kf-1-31"
NEXT_ISTIOD = revision_address("istio-system", NEXT_REVISION)


def next_istioctl() -> str:
    """The next minor's istioctl, as the next owner has it for the upgrade (built with the istio-next set)."""
    toolchain.ensure("istio-next")
    return f"istioctl-{NEXT}"


def restart_every_sidecar(env: dict[str, str], istiod: str = NEXT_ISTIOD) -> None:
    """What docs/runbook.md step 9 tells the next owner to restart: every Deployment, StatefulSet and DaemonSet of
    each namespace that runs a sidecar, and the pods no rollout restarts (bare pods, a Job's) deleted; the charm's
    gateway pointed at istiod."""
    pods = [p for p in read(env, "pods")["items"] if runs_a_proxy(p)]
    for ns in sorted({p["metadata"]["namespace"] for p in pods}):
        for kind in ("deployments", "statefulsets", "daemonsets"):
            if read(env, kind, ns)["items"]:
                run(["kubectl", "-n", ns, "rollout", "restart", kind], env)
    for pod in pods:
        owners = {o["kind"] for o in pod["metadata"].get("ownerReferences") or []}
        if not owners & {"ReplicaSet", "StatefulSet", "DaemonSet"}:
            run(["kubectl", "-n", pod["metadata"]["namespace"], "delete", "pod", pod["metadata"]["name"],
                 "--wait=false"], env)
    run(["kubectl", "-n", "kubeflow", "set", "env", "deploy/istio-ingressgateway-workload", "-c", "istio-proxy",
         f"CA_ADDR={istiod}", f"PROXY_CONFIG={json.dumps({'discoveryAddress': istiod})}"], env)


def every_proxy_on_the_next_revision(env: dict[str, str], timeout: float = 240) -> dict:
    """every_proxy_on the next revision's plane, asked by its own version's istioctl."""
    return every_proxy_on(env, NEXT_REVISION, next_istioctl(), timeout)


def every_proxy_on(env: dict[str, str], revision: str, istioctl: str, timeout: float = 240) -> dict:
    """proxy-status of revision's plane in istio-system (istioctl, of that plane's version) once it lists every
    running proxy, each pod's proxy configured for that plane; on timeout, fails naming the pods elsewhere and the
    ones not listed."""
    istiod, deadline, missing = revision_address("istio-system", revision), time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): proxy_address(p)
                for p in read(env, "pods")["items"] if runs_a_proxy(p)}
        seen = {(p.namespace, p.pod): p for p in proxy_status(istioctl, "istio-system", revision,
                                                              env["KUBECONFIG"], None)}
        missing = {"elsewhere": sorted(f"{ns}/{pod}: {a}" for (ns, pod), a in pods.items() if a != istiod),
                   "not listed": sorted(f"{ns}/{pod}" for ns, pod in set(pods) - set(seen))}
        if not any(missing.values()):
            return seen
        time.sleep(1)
    pytest.fail(f"after {timeout}s, not every proxy on {istiod}: {missing}")


def virtual_service_write(env: dict[str, str], namespace: str, host: str) -> subprocess.CompletedProcess:
    """A VirtualService in namespace routing to host, written as a server-side dry run: the validators are called,
    nothing is stored (an empty host is invalid)."""
    vs = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
          "metadata": {"name": "validated", "namespace": namespace},
          "spec": {"hosts": ["app"], "http": [{"route": [{"destination": {"host": host}}]}]}}
    return run(["kubectl", "apply", "--dry-run=server", "-f", "-"], env, input=json.dumps(vs), check=False)


def a_live_validator_judges_istio_writes(env: dict[str, str], namespace: str) -> None:
    """An invalid VirtualService refused by a validator, a valid one accepted."""
    refused = virtual_service_write(env, namespace, "")
    assert refused.returncode != 0 and "denied the request" in refused.stderr, refused.stderr
    accepted = virtual_service_write(env, namespace, "app")
    assert accepted.returncode == 0, accepted.stderr


def old_charm_purge(env: dict[str, str], revision: str = "kf-1-30") -> None:
    """The istio-pilot charm's remove hook: `istioctl uninstall --purge -y` as the charm's service account (the
    guard makes its deletes fail); istiod's pods, which carry the label it deletes pods by, come back."""
    charm_hooks.pilot_uninstall(env)
    run(["kubectl", "-n", "istio-system", "wait", f"deploy/istiod-{revision}", "--for=condition=Available",
         "--timeout=60s"], env)


def old_charm_purge_loses_nothing(env: dict[str, str], namespace: str, revision: str = "kf-1-30") -> None:
    """old_charm_purge: no CRD or CR lost, every gateway object (the charm labels them as purge
    selects) still there with its UID, and the LoadBalancer Service with its clusterIP and nodePorts; the gateway
    serves again; new pods in namespace are injected from the new plane."""
    before, gateway = snapshot(env), gateway_objects(env)
    assert {"Deployment/istio-ingressgateway-workload", "Service/istio-ingressgateway-workload"} <= set(gateway)
    old_charm_purge(env, revision)
    nothing_lost(env, before)
    after = gateway_objects(env)
    assert {k: o["metadata"]["uid"] for k, o in after.items()} == {k: o["metadata"]["uid"] for k, o in gateway.items()}
    service = "Service/istio-ingressgateway-workload"
    assert after[service]["spec"]["clusterIP"] == gateway[service]["spec"]["clusterIP"]
    assert [p.get("nodePort") for p in after[service]["spec"]["ports"]] == \
           [p.get("nodePort") for p in gateway[service]["spec"]["ports"]]
    run(["kubectl", "-n", "kubeflow", "rollout", "status", "deploy/istio-ingressgateway-workload",
         "--timeout=120s"], env)
    injected = run(["kubectl", "-n", namespace, "run", "after-purge", "--image=x",
                    "-o", "jsonpath={.spec.containers[*].name}"], env)
    run(["kubectl", "-n", namespace, "delete", "pod", "after-purge", "--wait=true"], env)
    assert "istio-proxy" in injected.stdout, "the default injector still works after the purge attempt"


def old_charm_reinstall_is_refused(env: dict[str, str]) -> None:
    """The istio-pilot charm's install/upgrade path (`istioctl install` with its flags as its account, what `juju
    refresh` runs as `istioctl upgrade`): refused by the guard, naming the migration, and no istiod in kubeflow."""
    reinstall = charm_hooks.pilot_istioctl(env, CHARM_INSTALL)
    output = reinstall.stdout + reinstall.stderr
    assert reinstall.returncode != 0, output[-3000:]
    assert "kf-istio-migrate refuses an istiod in kubeflow" in output, output[-3000:]
    assert read(env, "deployments", "kubeflow", label_selector="app=istiod")["items"] == []
