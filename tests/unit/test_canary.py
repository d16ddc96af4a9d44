"""The canary phase: the label write against Istio's own selectors and the profile controller, the canary gate's
judgment, what each stack declares with canaryNamespaces and canaryOnly, and what is refused."""

from __future__ import annotations

import dataclasses
import json
import shlex

import pytest

from demo.profile_controller import FORK, UPSTREAM, created_labels, reconciled_labels
from migration import render
from migration.canary import back_to_default, judge, to_revision
from migration.config import ConfigError, from_mapping
from migration.plan import PreflightRefused
from migration.proxies import parse_proxy_status
from migration.webhooks import matching_webhooks
from tests.fixtures import recorded
from tests.unit.harness import run_program
from tests.unit.live_mesh import CFG, LEGACY_ISTIOD, NEW_ISTIOD, PROFILES, charm_install, pod

CANARY = {"topology": "migrated", "canaryNamespaces": [PROFILES[0]]}


def merged(labels: dict[str, str], patch: dict) -> dict[str, str]:
    """A JSON merge patch of metadata.labels applied, as the API server does."""
    new = dict(labels)
    for key, value in patch["metadata"]["labels"].items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    return new


def injectors_of(labels: dict[str, str]) -> set[str]:
    """Which rendered injector configurations (both planes, as istioctl renders them) select a plain pod there."""
    renders = recorded.renders(CFG)
    hooks = [o for o in render.control_plane(renders.legacy) + render.control_plane(renders.migrated)
             if o["kind"] == "MutatingWebhookConfiguration"]
    return {name for name, _ in matching_webhooks(hooks, labels)}


def test_one_write_moves_a_profile_namespace_from_one_injector_to_the_other():
    """Before the write only the legacy plane's injector selects the namespace, after it only the revision's; the
    way back is the mirror image."""
    before = created_labels()
    after = merged(before, to_revision("kf-1-30"))
    assert injectors_of(before) == {"istio-sidecar-injector-kubeflow"}
    assert injectors_of(after) == {"istio-sidecar-injector-kf-1-30"}
    assert "istio-injection" not in after and after["istio.io/rev"] == "kf-1-30"
    assert injectors_of(merged(after, back_to_default())) == {"istio-sidecar-injector-kubeflow"}


def test_the_profile_controller_keeps_the_canary_label_and_its_fork_never_makes_two_injectors():
    """Kubeflow 1.8-1.10's controller re-applies only its config labels: the canary stays on the revision. CKF
    2.0's fork puts istio-injection=enabled back: the default injector selects the namespace again, the revision's
    does not (istio-injection wins), so there is still one injector."""
    canary = merged(created_labels(), to_revision("kf-1-30"))
    assert reconciled_labels(canary, UPSTREAM) == canary
    forked = reconciled_labels(canary, FORK)
    assert forked["istio-injection"] == "enabled" and forked["istio.io/rev"] == "kf-1-30"
    assert injectors_of(forked) == {"istio-sidecar-injector-kubeflow"}


SYNCED = [{"typeUrl": f"type.googleapis.com/envoy.config.{t}", "configStatus": "SYNCED"}
          for t in ("cluster.v3.Cluster", "listener.v3.Listener")]


def proxy_status(*pods: tuple[str, str], statuses: dict[str, list] | None = None) -> str:
    """istioctl proxy-status -o json of one istiod serving pods (namespace, name)."""
    return json.dumps({"controlPlane": {"identifier": json.dumps({"ID": "istiod-kf-1-30-abc"})}, "resources": [
        {"node": {"id": f"{name}.{ns}", "metadata": {"NAMESPACE": ns, "ISTIO_VERSION": "1.30-dev"}},
         "genericXdsConfigs": (statuses or {}).get(name, SYNCED)} for ns, name in pods]})


def canary_view(**pod_overrides):
    ns = PROFILES[0]
    labels = {ns: merged(created_labels(), to_revision("kf-1-30"))}
    pods = [pod(ns, f"web-{i}", ("ReplicaSet", "web-7d4b9"), NEW_ISTIOD) for i in range(3)]
    for name, status in pod_overrides.items():
        next(p for p in pods if p["metadata"]["name"] == name)["status"].update(status)
    controllers = {("ReplicaSet", ns, "web-7d4b9"): {"owner": ("Deployment", "web")},
                   ("Deployment", ns, "web"): {"owner": None}}
    return ns, labels, pods, controllers


def test_the_gate_passes_a_canary_connected_and_in_sync():
    ns, labels, pods, controllers = canary_view()
    served = parse_proxy_status(proxy_status(*((ns, f"web-{i}") for i in range(3))))
    verdict = judge([ns], labels, pods, controllers, [], served, NEW_ISTIOD, "kf-1-30")
    assert verdict.offenders == () and verdict.proven == 3


def test_the_gate_names_each_pod_and_why():
    """A NACKed listener, a proxy no new istiod serves, a pod not Ready, a restarted istio-proxy, a workload pod
    still on the old plane; a bare pod on the old plane is left to the unmanagedPods policy, not failed."""
    ns, labels, pods, controllers = canary_view(**{"web-1": {"ready": False}, "web-2": {"proxyRestarts": 1}})
    pods += [pod(ns, "web-old", ("ReplicaSet", "web-7d4b9"), LEGACY_ISTIOD),
             pod(ns, "lost", ("ReplicaSet", "web-7d4b9"), NEW_ISTIOD),
             pod(ns, "step-1", None, LEGACY_ISTIOD)]
    nack = [SYNCED[0], {"typeUrl": "type.googleapis.com/envoy.config.listener.v3.Listener",
                        "configStatus": "ERROR", "errorState": {"details": "listener rejected"}}]
    served = parse_proxy_status(proxy_status(*((ns, f"web-{i}") for i in range(3)), statuses={"web-0": nack}))
    verdict = judge([ns], labels, pods, controllers, [], served, NEW_ISTIOD, "kf-1-30")
    assert verdict.offenders == (
        f"{ns}/lost: no istiod of the new plane serves its proxy",
        f"{ns}/web-0: not in sync with istiod istiod-kf-1-30-abc: LDS ERROR: listener rejected",
        f"{ns}/web-1: not Ready",
        f"{ns}/web-2: istio-proxy restarted 1 time(s)",
        f"{ns}/web-old (Deployment/web): its proxy still names {LEGACY_ISTIOD}")
    assert verdict.left == (f"{ns}/step-1 (no controller)",) and verdict.proven == 0


def test_the_gate_fails_a_namespace_a_controller_put_back_on_the_default_path():
    ns, labels, pods, controllers = canary_view()
    labels[ns] = reconciled_labels(labels[ns], FORK)
    served = parse_proxy_status(proxy_status(*((ns, f"web-{i}") for i in range(3))))
    verdict = judge([ns], labels, pods, controllers, [], served, NEW_ISTIOD, "kf-1-30")
    assert len(verdict.offenders) == 1 and verdict.offenders[0].startswith(f"namespace {ns}: labels ")
    assert "'istio-injection': 'enabled'" in verdict.offenders[0]


def named(registered):
    return {r.name: r for r in registered if r.custom}


def dependency_names(registered, resource) -> set[str]:
    by_urn = {r.urn: r.name for r in registered}
    return {by_urn[d] for d in resource.dependencies if d in by_urn}


def test_the_canary_moves_its_namespaces_between_the_serving_check_and_the_switch():
    registered = run_program("migrated", CANARY, charm_install())
    found = named(registered)
    canary = found["canary"]
    argv = shlex.split(canary.inputs["create"])
    assert argv[1:3] == ["-m", "live.canary"] and argv[argv.index("--namespaces") + 1] == PROFILES[0]
    assert argv[argv.index("--soak") + 1] == "60" and argv[argv.index("--revision") + 1] == "kf-1-30"
    assert json.loads(canary.inputs["stdin"]) == {
        PROFILES[0]: {"restart": ["Deployment/notebook-0", "Deployment/notebook-1"], "evict": []}}
    assert "istiod-serving" in dependency_names(registered, canary)
    switch = [r for r in registered if r.name.startswith("webhook-switch-")]
    assert switch and all("canary" in dependency_names(registered, r) for r in switch)
    assert list(json.loads(found["rollout-wave"].inputs["stdin"])) == [PROFILES[1]], \
        "the canary's workloads are not in the wave"


def test_canary_only_ends_before_the_switch():
    """Nothing that follows the canary is declared: no switch, gateway, rollouts, verification, teardown or guard
    (the guard would refuse the legacy istiod's own updates of its webhooks while it still injects)."""
    registered = run_program("migrated", {**CANARY, "canaryOnly": True}, charm_install())
    names = {r.name for r in registered}
    assert "canary" in names and "istiod-serving" in names
    for absent in ("webhook-switch", "ingress-gateway", "rollout", "unmanaged-pods", "verify-sidecars",
                   "teardown-legacy-control-plane", "guard"):
        assert not any(n.startswith(absent) for n in names), absent
    full = {r.name for r in run_program("migrated", CANARY, charm_install())}
    assert {n for n in names if n != "canary"} < full, "the second `up` declares the rest beside the same resources"


def test_the_way_back_puts_canary_namespaces_back_before_the_workloads_move():
    live = charm_install()
    live = dataclasses.replace(live, istiod_deployments=live.istiod_deployments + [
        {"metadata": {"namespace": "istio-system", "name": "istiod-kf-1-30"}}],
        present=live.present | {("Deployment", "istio-system", "istiod-kf-1-30")})
    registered = run_program("legacy", {"topology": "legacy"}, live)
    put_back = named(registered)["canary-put-back"]
    argv = shlex.split(put_back.inputs["create"])
    assert argv[argv.index("--revision") + 1] == "kf-1-30" and "--put-back" in argv
    assert "canary-put-back" in dependency_names(registered, named(registered)["rollout-wave"])


@pytest.mark.parametrize("raw, key", [
    ({"canaryOnly": True}, "canaryOnly"),
    ({"canaryNamespaces": "kubeflow-user-000"}, "canaryNamespaces"),
    ({"canaryNamespaces": ["Bad_Name"]}, "canaryNamespaces[0]"),
    ({"canaryNamespaces": ["a", "a"]}, "canaryNamespaces"),
    ({"canaryNamespaces": ["kubeflow"]}, "canaryNamespaces"),
    ({"canarySoakSeconds": -1}, "canarySoakSeconds"),
])
def test_bad_canary_config_names_the_key(raw, key):
    with pytest.raises(ConfigError) as err:
        from_mapping({"topology": "migrated", **raw})
    assert err.value.key == key


def test_a_legacy_stack_takes_no_canary():
    with pytest.raises(ConfigError, match="applies to the migrated stack"):
        from_mapping({"topology": "legacy", "canaryNamespaces": ["a"]})


@pytest.mark.parametrize("namespaces, labels, message", [
    (["missing"], {}, "canary namespace missing .* does not exist"),
    ([PROFILES[0]], {PROFILES[0]: {"istio.io/rev": "other"}}, "is not on the default injection path"),
])
def test_canary_namespaces_the_canary_cannot_move_are_refused(namespaces, labels, message):
    live = charm_install()
    live = dataclasses.replace(live, namespaces={**live.namespaces, **labels})
    with pytest.raises(PreflightRefused, match=message):
        run_program("migrated", {"topology": "migrated", "canaryNamespaces": namespaces}, live)


def test_canary_only_after_the_switch_is_refused():
    """canaryOnly would drop the switch and the rollouts from a stack that already made them."""
    live = charm_install()
    switched = json.loads(json.dumps(live.mutating_webhooks))
    for hook in switched[1]["webhooks"]:
        hook["clientConfig"]["service"].update(namespace="istio-system", name="istiod-kf-1-30")
    live = dataclasses.replace(live, mutating_webhooks=switched)
    with pytest.raises(PreflightRefused, match="the mesh has moved"):
        run_program("migrated", {**CANARY, "canaryOnly": True}, live)
