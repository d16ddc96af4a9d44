"""The canary phase on the charm-shaped fixture with four profiles, in the order an operator lives it: a canary a
controller undoes fails by name and is put back, and so does one whose proxy rejects its configuration; the same
canary with the stock profile controller moves two profiles only (canaryOnly); the next `pulumi up` moves the other
two without touching the canary again; the way back returns the canary namespaces to the default injection path.
Kubeflow's
profile controller cannot run here: demo.profile_controller reconciles the profile namespaces as its code does
(the upstream v1.10 controller of Charmed Kubeflow 1.10, and Charmed Kubeflow 2.0's fork that forces
istio-injection=enabled). The tests share one cluster and run in file order, each starting where the last ended."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from demo import fixture
from demo.observe import InjectorHistory, read, snapshot
from demo.profile_controller import FORK, UPSTREAM, ProfileController
from devcluster import toolchain
from live.verify import proxy_status
from migration.workloads import proxy_address
from tests.support import (DEFAULT_INJECTOR, LEGACY_ISTIOD, NEW_ISTIOD, every_sidecar_on, fresh_workspace,
                           new_pods_get, nothing_lost, one_injector_throughout, purged, roll_back_and_check, run)

REJECT_CONFIG = "proxysim.kfistio.io/reject-config"
"""The proxy simulator's fault: a pod with this annotation NACKs every push, its value the error
(tools/go/istio/proxysim/reject.go)."""
SIZE = fixture.FixtureSize(profiles=4, deployments=2, kubeflow_shape=False, pod_stage_ms=150)
PROFILES = fixture.profile_namespaces(SIZE)
CANARY = PROFILES[1:3]


@pytest.fixture(scope="module")
def workspace():
    with purged(fresh_workspace("canary", canaryNamespaces=json.dumps(CANARY), canarySoakSeconds=5,
                                rolloutTimeoutSeconds=45)) as ws:
        fixture.build(ws.env, SIZE)
        yield ws, snapshot(ws.env)


def up_watched(ws, variant: str, relabelled: list[str] = CANARY):
    """`pulumi up --stack migrated` while the injector history is followed and the profile controller (variant)
    reconciles every profile namespace it sees change; one injector per profile namespace in every state, and the
    history holds a state of each namespace in relabelled (the canary's) being relabelled."""
    controller, history = ProfileController(str(ws.cluster.kubeconfig), variant), InjectorHistory(
        str(ws.cluster.kubeconfig), PROFILES)
    controller.start()
    history.start()
    try:
        return ws.up("migrated", check=False), controller
    finally:
        states = history.stop()
        controller.stop()
        one_injector_throughout(states)
        seen = {s["change"].split()[1] for s in states if s["change"].startswith("Namespace ")}
        assert set(relabelled) <= seen, f"no state of a canary namespace's relabel: {sorted(seen)}"


def diagnostics(result) -> str:
    """What `pulumi up` said went wrong (its Diagnostics section, before the long Outputs)."""
    text = result.stdout + result.stderr
    return text[text.find("Diagnostics:"):][:6000] if "Diagnostics:" in text else text[-3000:]


def running_pods(ws) -> dict[str, dict]:
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p
            for p in read(ws.env, "pods")["items"]
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")}


def served(ws, namespace: str, revision: str):
    """The proxies the istiods of one plane serve, as `istioctl proxy-status` reports them."""
    return proxy_status(str(toolchain.binary("istioctl")), namespace, revision, str(ws.cluster.kubeconfig),
                        ws.cluster.context)


def labels(ws, namespace: str) -> dict[str, str]:
    return read(ws.env, "namespaces", name=namespace)["metadata"].get("labels") or {}


def default_injector_calls(ws) -> str:
    hook = read(ws.env, "mutatingwebhookconfigurations", name=DEFAULT_INJECTOR)["webhooks"][0]
    return hook["clientConfig"]["service"]["namespace"]


def test_a_canary_a_controller_undoes_fails_by_name_and_is_put_back(workspace):
    """Charmed Kubeflow 2.0's controller puts istio-injection=enabled back on the relabelled namespaces: their new
    pods go to the default injector (still one injector), the gate fails naming the namespaces and the pods, the
    default injector is never switched, and the canary is put back: every pod on the old plane."""
    ws, before = workspace
    result, controller = up_watched(ws, FORK)
    output = result.stdout + result.stderr
    assert result.returncode != 0, diagnostics(result)
    assert {ns for ns, _ in controller.updates} == set(CANARY), "the fork's controller put the label back"
    for ns in CANARY:
        assert f"canary gate: namespace {ns}: labels" in output, diagnostics(result)
        assert labels(ws, ns).get("istio-injection") == "enabled" and "istio.io/rev" not in labels(ws, ns)
    assert "canary failed and put back" in output
    assert default_injector_calls(ws) == "kubeflow", "the default injector was switched"
    elsewhere = {pod: proxy_address(p) for pod, p in running_pods(ws).items()
                 if proxy_address(p) not in (None, LEGACY_ISTIOD)}
    assert not elsewhere, f"pods not on the old plane after the canary was put back: {elsewhere}"
    assert served(ws, "istio-system", "kf-1-30") == []
    nothing_lost(ws.env, before)


def set_fault(ws, reason: str | None) -> None:
    """The proxies of the first canary namespace's notebook-0 reject every configuration istiod sends them (the
    proxy simulator NACKs each push with reason), or accept it again (None); waits for the restart this causes."""
    patch = {"spec": {"template": {"metadata": {"annotations": {REJECT_CONFIG: reason}}}}}
    run(["kubectl", "-n", CANARY[0], "patch", "deployment", "notebook-0", "-p", json.dumps(patch)], ws.env)
    run(["kubectl", "-n", CANARY[0], "rollout", "status", "deployment/notebook-0", "--timeout=120s"], ws.env)


def test_a_canary_whose_proxy_rejects_its_configuration_fails_by_name_and_is_put_back(workspace):
    """A canary workload whose proxy NACKs what the new istiod pushes (istiod reports it ERROR, with the proxy's
    reason): the gate names the pod and why, the default injector is never switched, every pod ends on the old
    plane; the next `pulumi up`, with the fault removed, succeeds (the next test)."""
    ws, before = workspace
    set_fault(ws, "listener rejected by the test")
    try:
        result, _ = up_watched(ws, UPSTREAM)
        output = result.stdout + result.stderr
        assert result.returncode != 0, diagnostics(result)
        named = re.findall(rf"{CANARY[0]}/notebook-0-\S+: not in sync with istiod istiod-kf-1-30-\S+: (.*)", output)
        assert named and "ERROR: listener rejected by the test" in named[0], diagnostics(result)
        assert "canary failed and put back" in output
        assert default_injector_calls(ws) == "kubeflow", "the default injector was switched"
        elsewhere = {pod: proxy_address(p) for pod, p in running_pods(ws).items()
                     if proxy_address(p) not in (None, LEGACY_ISTIOD)}
        assert not elsewhere, f"pods not on the old plane after the canary was put back: {elsewhere}"
        for ns in CANARY:
            assert labels(ws, ns).get("istio-injection") == "enabled" and "istio.io/rev" not in labels(ws, ns)
        nothing_lost(ws.env, before)
    finally:
        set_fault(ws, None)


def test_canary_only_moves_the_canary_namespaces_alone_and_proves_them_synced(workspace):
    """With the stock controller (it re-applies only its config labels), `canaryOnly`: exactly the two canary
    namespaces' proxies are connected and SYNCED to the new istiod in the live view, every other profile stays on
    the old one, and the outputs say what moved and what is left."""
    ws, before = workspace
    ws.set_config("migrated", "kf-istio-migrate:canaryOnly", "true")
    preview = json.loads(ws.pulumi("preview", "--stack", "migrated", "--json").stdout)
    said = " ".join(d.get("message", "") for d in preview.get("diagnostics") or [])
    assert f"this update: canary only: {', '.join(CANARY)}" in said, said
    steps = {s["urn"].rsplit("::", 1)[-1]: s for s in preview["steps"]}
    assert set(json.loads(steps["canary"]["newState"]["inputs"]["stdin"])) == set(CANARY)
    assert not [name for name in steps if name.startswith(("rollout", "webhook-switch"))]
    result, _ = up_watched(ws, UPSTREAM)
    assert result.returncode == 0, diagnostics(result)
    outputs = ws.outputs("migrated")
    assert outputs["phase"].startswith("canary only: " + ", ".join(CANARY)), outputs["phase"]
    assert outputs["canary"]["namespaces"] == CANARY and outputs["canary"]["restartedWorkloads"] == 4
    new_plane, old_plane = served(ws, "istio-system", "kf-1-30"), served(ws, "kubeflow", "default")
    with_proxy = {pod for pod, p in running_pods(ws).items() if proxy_address(p)}
    assert {f"{p.namespace}/{p.pod}" for p in new_plane} == {pod for pod in with_proxy
                                                             if pod.split("/")[0] in CANARY}
    assert all(not p.unsynced() and p.sync for p in new_plane), [(p.pod, p.sync) for p in new_plane]
    on_old = {p.namespace for p in old_plane}
    assert set(PROFILES) - set(CANARY) <= on_old and not on_old & set(CANARY)
    for ns in CANARY:
        assert labels(ws, ns).get("istio.io/rev") == "kf-1-30" and "istio-injection" not in labels(ws, ns)
        assert labels(ws, ns).get("app.kubernetes.io/part-of") == "kubeflow-profile"
    assert default_injector_calls(ws) == "kubeflow"
    nothing_lost(ws.env, before)


def test_the_next_up_moves_the_rest_and_not_the_canary_again(workspace):
    """`pulumi config rm ...canaryOnly`, `pulumi up`: the rest moves, the canary's pods are the same pods (UIDs),
    every sidecar ends on the new istiod."""
    ws, before = workspace
    canary_pods = {pod: p["metadata"]["uid"] for pod, p in running_pods(ws).items()
                   if pod.split("/")[0] in CANARY and proxy_address(p)}
    stack_file = ws.dir / "Pulumi.migrated.yaml"
    settings = yaml.safe_load(stack_file.read_text())
    del settings["config"]["kf-istio-migrate:canaryOnly"]
    stack_file.write_text(yaml.safe_dump(settings, sort_keys=False))
    result, _ = up_watched(ws, UPSTREAM, relabelled=[])  # the rest moves by the default path's switch
    assert result.returncode == 0, diagnostics(result)
    after = {pod: p["metadata"]["uid"] for pod, p in running_pods(ws).items() if pod in canary_pods}
    assert after == canary_pods, "a canary pod was restarted again"
    account = ws.outputs("migrated")["moveAccount"]
    assert sorted((m["phase"], m["namespace"], m["kind"], m["name"], m["way"]) for m in account["moved"]) == sorted(
        ("canary" if ns in CANARY else "rollout", ns, "Deployment", f"notebook-{i}", "restart")
        for ns in PROFILES for i in range(SIZE.deployments))
    assert all(m["seconds"] > 0 for m in account["moved"]) and account["left"] == []
    every_sidecar_on(ws, NEW_ISTIOD, LEGACY_ISTIOD, "migrated")
    nothing_lost(ws.env, before)


def test_the_way_back_returns_the_canary_namespaces_to_the_default_injection_path(workspace):
    """The legacy stack (no canary config: the way back moves everything at once) puts the namespaces on revision
    kf-1-30 back on istio-injection=enabled before their workloads move: once the migrated plane is gone, its
    revision injects nothing, and their new pods must still get a sidecar."""
    ws, _ = workspace
    stack_file = ws.dir / "Pulumi.legacy.yaml"
    settings = yaml.safe_load(stack_file.read_text())
    settings["config"] = {k: v for k, v in settings["config"].items() if "canary" not in k}
    stack_file.write_text(yaml.safe_dump(settings, sort_keys=False))
    roll_back_and_check(ws, PROFILES)
    for ns in CANARY:
        assert labels(ws, ns).get("istio-injection") == "enabled" and "istio.io/rev" not in labels(ws, ns)
        new_pods_get(ws.env, ns, LEGACY_ISTIOD)
