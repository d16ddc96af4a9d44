"""The canary phase on the charm-shaped fixture with four profiles, in the order an operator lives it: with Charmed
Kubeflow 1.10's profile controller reconciling, a canary whose proxy rejects its configuration fails by name and is
put back; then with Charmed Kubeflow 2.0's (which forces istio-injection=enabled on every reconcile) running
throughout, the same canary holds and moves two profiles only (canaryOnly); the way back from there folds the canary
into the legacy stack's switch; then migrating again, the canary only, then the rest (the runbook's step 4a).
Kubeflow's profile controller cannot run here: demo.profile_controller reconciles the profile namespaces as its code
does (the upstream v1.10 controller, and the fork). The tests share one cluster and run in file order, each starting
where the last ended."""

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
from migration.canary import canary_namespaces
from migration.workloads import proxy_address
from tests.support import (DEFAULT_INJECTOR, LEGACY_ISTIOD, NEW_ISTIOD, by_canary, every_sidecar_on, fresh_workspace,
                           new_pods_get, nothing_lost, one_injector_throughout, purged, roll_back_and_check,
                           run)

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


@pytest.fixture(scope="module")
def controller(workspace):
    """Charmed Kubeflow 2.0's profile controller, reconciling every profile namespace from the first test that asks
    for it to the end of the module."""
    forced = ProfileController(str(workspace[0].cluster.kubeconfig), FORK)
    forced.start()
    yield forced
    forced.stop()


def canary_held(states: list[dict]) -> list[dict]:
    """The states in which the default injector's canary webhooks took the canary namespaces, and only them."""
    return [s for s in states if all(by_canary(s, ns) for ns in CANARY)
            and not any(by_canary(s, ns) for ns in set(PROFILES) - set(CANARY))]


def up_watched(ws, stack: str = "migrated") -> tuple:
    """`pulumi up --stack STACK` while the injector history is followed: one injector per profile namespace in every
    state; returns the result and the states."""
    history = InjectorHistory(str(ws.cluster.kubeconfig), PROFILES)
    history.start()
    try:
        result = ws.up(stack, check=False)
    finally:
        states = history.stop()
        one_injector_throughout(states)
    return result, states


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


def default_injector(ws) -> dict:
    return read(ws.env, "mutatingwebhookconfigurations", name=DEFAULT_INJECTOR)


def default_injector_calls(ws) -> set[str]:
    """The namespaces of the istiods the default injector's webhooks call."""
    return {hook["clientConfig"]["service"]["namespace"] for hook in default_injector(ws)["webhooks"]}


def set_fault(ws, reason: str | None) -> None:
    """The proxies of the first canary namespace's notebook-0 reject every configuration istiod sends them (the
    proxy simulator NACKs each push with reason), or accept it again (None); waits for the restart this causes."""
    patch = {"spec": {"template": {"metadata": {"annotations": {REJECT_CONFIG: reason}}}}}
    run(["kubectl", "-n", CANARY[0], "patch", "deployment", "notebook-0", "-p", json.dumps(patch)], ws.env)
    run(["kubectl", "-n", CANARY[0], "rollout", "status", "deployment/notebook-0", "--timeout=120s"], ws.env)


def on_the_old_plane(ws, before) -> None:
    """Every pod on the old plane, the new one serving none, the default injector as before the canary (no canary
    webhook, every one calling the old istiod), nothing lost."""
    elsewhere = {pod: proxy_address(p) for pod, p in running_pods(ws).items()
                 if proxy_address(p) not in (None, LEGACY_ISTIOD)}
    assert not elsewhere, f"pods not on the old plane: {elsewhere}"
    assert served(ws, "istio-system", "kf-1-30") == []
    assert canary_namespaces(default_injector(ws)) == () and default_injector_calls(ws) == {"kubeflow"}
    nothing_lost(ws.env, before)


def test_a_canary_whose_proxy_rejects_its_configuration_fails_by_name_and_is_put_back(workspace):
    """A canary workload whose proxy NACKs what the new istiod pushes (istiod reports it ERROR, with the proxy's
    reason): the gate names the pod and why, the default injector is written back as it was (the canary held in
    between: the canary namespaces' new pods went to the new istiod), every pod ends on the old plane."""
    ws, before = workspace
    set_fault(ws, "listener rejected by the test")
    stock = ProfileController(str(ws.cluster.kubeconfig), UPSTREAM)
    stock.start()
    try:
        result, states = up_watched(ws)
        output = result.stdout + result.stderr
        assert result.returncode != 0, diagnostics(result)
        named = re.findall(rf"{CANARY[0]}/notebook-0-\S+: not in sync with istiod istiod-kf-1-30-\S+: (.*)", output)
        assert named and "ERROR: listener rejected by the test" in named[0], diagnostics(result)
        assert "canary failed and put back" in output
        assert canary_held(states) and not canary_held(states[-1:]), "the canary held, then was put back"
        on_the_old_plane(ws, before)
        for ns in CANARY:
            assert labels(ws, ns).get("istio-injection") == "enabled" and "istio.io/rev" not in labels(ws, ns)
    finally:
        stock.stop()
        set_fault(ws, None)


def test_canary_only_holds_under_a_controller_that_forces_istio_injection(workspace, controller):
    """`canaryOnly`, with the fork's controller reconciling: exactly the two canary namespaces' proxies are
    connected and SYNCED to the new istiod in the live view, their new pods go to it, every other profile stays on
    the old one; the controller never had a label to put back; the outputs say what moved."""
    ws, before = workspace
    ws.set_config("migrated", "kf-istio-migrate:canaryOnly", "true")
    ws.init("migrated")
    preview = json.loads(ws.pulumi("preview", "--stack", "migrated", "--json").stdout)
    said = " ".join(d.get("message", "") for d in preview.get("diagnostics") or [])
    assert f"this update: canary only: {', '.join(CANARY)}" in said, said
    steps = {s["urn"].rsplit("::", 1)[-1]: s for s in preview["steps"]}
    assert set(json.loads(steps["canary"]["newState"]["inputs"]["stdin"])) == set(CANARY)
    assert not [name for name in steps if name.startswith(("rollout", "webhook-switch"))]
    updates = len(controller.updates)
    result, states = up_watched(ws)
    assert result.returncode == 0, diagnostics(result)
    assert canary_held(states[-1:]), "the canary holds after the update"
    assert len(controller.updates) == updates, "no label of a profile namespace changed"
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
        assert labels(ws, ns).get("istio-injection") == "enabled" and "istio.io/rev" not in labels(ws, ns)
        assert labels(ws, ns).get("app.kubernetes.io/part-of") == "kubeflow-profile"
    new_pods_get(ws.env, CANARY[0], NEW_ISTIOD)
    new_pods_get(ws.env, PROFILES[0], LEGACY_ISTIOD)
    assert canary_namespaces(default_injector(ws)) == tuple(CANARY)
    nothing_lost(ws.env, before)


def without_canary_config(ws, stack: str) -> None:
    """The stack's file without canaryOnly (and, for the legacy stack, without any canary key)."""
    stack_file = ws.dir / f"Pulumi.{stack}.yaml"
    settings = yaml.safe_load(stack_file.read_text())
    settings["config"] = {k: v for k, v in settings["config"].items()
                          if (k != "kf-istio-migrate:canaryOnly" if stack == "migrated" else "canary" not in k)}
    stack_file.write_text(yaml.safe_dump(settings, sort_keys=False))


def test_the_way_back_from_the_canary_folds_it_into_the_switch(workspace, controller):
    """The legacy stack run while the canary holds: one write of the default injector removes the canary's webhooks
    and points every namespace at the old istiod (the switch's own write would have kept them beside it: two
    injectors); one injector throughout, every pod and new pod on the old istiod."""
    ws, _ = workspace
    without_canary_config(ws, "legacy")
    roll_back_and_check(ws, PROFILES)  # also: the migrated plane gone, nothing lost
    assert canary_namespaces(default_injector(ws)) == () and default_injector_calls(ws) == {"kubeflow"}


def test_migrating_again_the_canary_only_then_the_rest_not_moving_the_canary_again(workspace, controller):
    """Migrating again after the way back, as the runbook's step 4a does: canaryOnly, then `pulumi config rm
    ...canaryOnly` and `pulumi up`: the rest moves, the switch folds the held canary into its write (the canary step
    does not run again), and the canary's pods are the same pods (UIDs); every sidecar ends on the new istiod."""
    ws, before = workspace
    # As the runbook migrates again after a way back: the stack afresh (a stack records one migration).
    ws.pulumi("stack", "rm", "migrated", "--force", "--yes", "--preserve-config")
    ws.set_config("migrated", "kf-istio-migrate:canaryOnly", "true")
    result, states = up_watched(ws)
    assert result.returncode == 0, diagnostics(result)
    assert canary_held(states[-1:]), "the canary holds after the canary-only run"
    canary_pods = {pod: p["metadata"]["uid"] for pod, p in running_pods(ws).items()
                   if pod.split("/")[0] in CANARY and proxy_address(p)}
    without_canary_config(ws, "migrated")
    result, states = up_watched(ws)
    assert result.returncode == 0, diagnostics(result)
    assert canary_held(states[:1]) and not canary_held(states[-1:]), "the switch folded the held canary in"
    after = {pod: p["metadata"]["uid"] for pod, p in running_pods(ws).items() if pod in canary_pods}
    assert after == canary_pods, "a canary pod was restarted again"
    account = ws.outputs("migrated")["moveAccount"]
    assert sorted((m["phase"], m["namespace"], m["kind"], m["name"], m["way"]) for m in account["moved"]) == sorted(
        ("canary" if ns in CANARY else "rollout", ns, "Deployment", f"notebook-{i}", "restart")
        for ns in PROFILES for i in range(SIZE.deployments))
    assert all(m["seconds"] > 0 for m in account["moved"]) and account["left"] == []
    every_sidecar_on(ws, NEW_ISTIOD, LEGACY_ISTIOD, "migrated")
    assert canary_namespaces(default_injector(ws)) == () and default_injector_calls(ws) == {"istio-system"}
    nothing_lost(ws.env, before)
    ws.pulumi("preview", "--stack", "migrated", "--expect-no-changes")
