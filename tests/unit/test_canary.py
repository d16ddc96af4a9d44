"""The canary phase: the one write of the default injector against Istio's own selectors and the profile controller,
the canary gate's judgment, what each stack declares with canaryNamespaces and canaryOnly, and what is refused."""

from __future__ import annotations

import dataclasses
import json
import shlex

import pytest

from demo.profile_controller import FORK, UPSTREAM, created_labels, reconciled_labels
from migration import render
from migration.canary import NAMESPACE_NAME, canary_namespaces, folded, judge, with_canary, without_canary
from migration.config import ConfigError, from_mapping
from migration.plan import PreflightRefused, retarget
from migration.proxies import parse_proxy_status
from migration.webhooks import injection_services
from tests.fixtures import recorded
from tests.unit.harness import run_program
from tests.unit.live_mesh import CFG, LEGACY_ISTIOD, NEW_ISTIOD, PROFILES, charm_install, pod

CANARY = {"topology": "migrated", "canaryNamespaces": [PROFILES[0]]}
NEW = ("istio-system", "istiod-kf-1-30")
OLD = ("kubeflow", "istiod")


def namespace_labels(ns: str, labels: dict[str, str] | None = None) -> dict[str, str]:
    """A profile namespace's labels as the API server holds them: the controller's, and its name under
    kubernetes.io/metadata.name (which the API server sets on every namespace)."""
    return {**(created_labels() if labels is None else labels), NAMESPACE_NAME: ns}


def both_planes() -> list[dict]:
    """The injector configurations on the cluster between the new istiod's start and the switch: the charm's
    default injector (as charm_install adopts it) and the new revision's, as istioctl renders it."""
    renders = recorded.renders(CFG)
    return [charm_install().mutating_webhooks[1], *(o for o in render.control_plane(renders.migrated)
                                                    if o["kind"] == "MutatingWebhookConfiguration")]


def test_one_write_of_the_default_injector_moves_the_canary_namespaces_alone():
    """Before the write every profile's plain pods go to the old istiod; after it the canary namespace's go to the
    new one alone and the others' still to the old one alone; removing the canary gives back the object itself."""
    default, revision = both_planes()
    canary = with_canary(default, [PROFILES[0]], NEW)
    for ns in PROFILES:
        assert injection_services([default, revision], namespace_labels(ns)) == [OLD]
    assert injection_services([canary, revision], namespace_labels(PROFILES[0])) == [NEW]
    assert injection_services([canary, revision], namespace_labels(PROFILES[1])) == [OLD]
    assert canary_namespaces(canary) == (PROFILES[0],) and canary_namespaces(default) == ()
    assert without_canary(canary) == default
    assert with_canary(canary, [PROFILES[0]], NEW) == canary, "made again from itself: the same object"
    assert all(h["name"].endswith("sidecar-injector.istio.io") for h in canary["webhooks"]), \
        "istiod keeps every one's caBundle current"


def test_no_label_controller_sends_a_canary_namespace_back_or_gives_it_two_injectors():
    """Kubeflow 1.8-1.10's controller re-applies only its config labels; CKF 2.0's fork forces
    istio-injection=enabled: neither changes where the canary namespace's pods go, and any labels a controller could
    put on it (the revision's own label included) meet one injector at most."""
    default, revision = both_planes()
    canary = with_canary(default, [PROFILES[0]], NEW)
    for variant in (UPSTREAM, FORK):
        labels = reconciled_labels(namespace_labels(PROFILES[0]), variant)
        assert injection_services([canary, revision], labels) == [NEW]
    for extra in ({"istio.io/rev": "kf-1-30"}, {"istio-injection": "disabled"}, {"istio.io/rev": "default"}):
        labels = {**namespace_labels(PROFILES[0]), **extra}
        assert len(injection_services([canary, revision], labels)) <= 1, extra


def test_the_switch_folds_the_canary_into_its_one_write():
    """The switch declared from a live injector holding a canary (a canaryOnly stack's next run) has no canary
    webhook; folded, the live object becomes exactly that declaration, with the caBundle istiod keeps on it."""
    default, revision = both_planes()
    live = with_canary(default, [PROFILES[0]], NEW)
    for hook in live["webhooks"]:
        hook["clientConfig"]["caBundle"] = "bGl2ZQ=="
    declared = retarget(without_canary(live), "MutatingWebhookConfiguration", *NEW, "kf-1-30")
    result = folded(live, declared)
    assert canary_namespaces(result) == () and result["metadata"]["labels"] == declared["metadata"]["labels"]
    assert [h["name"] for h in result["webhooks"]] == [h["name"] for h in default["webhooks"]]
    assert {h["clientConfig"]["caBundle"] for h in result["webhooks"]} == {"bGl2ZQ=="}
    for ns in PROFILES:
        assert injection_services([result, revision], namespace_labels(ns)) == [NEW]


SYNCED = [{"typeUrl": f"type.googleapis.com/envoy.config.{t}", "configStatus": "SYNCED"}
          for t in ("cluster.v3.Cluster", "listener.v3.Listener")]


def proxy_status(*pods: tuple[str, str], statuses: dict[str, list] | None = None) -> str:
    """istioctl proxy-status -o json of one istiod serving pods (namespace, name)."""
    return json.dumps({"controlPlane": {"identifier": json.dumps({"ID": "istiod-kf-1-30-abc"})}, "resources": [
        {"node": {"id": f"{name}.{ns}", "metadata": {"NAMESPACE": ns, "ISTIO_VERSION": "1.30-dev"}},
         "genericXdsConfigs": (statuses or {}).get(name, SYNCED)} for ns, name in pods]})


def canary_view(**pod_overrides):
    ns = PROFILES[0]
    labels = {ns: namespace_labels(ns)}
    pods = [pod(ns, f"web-{i}", ("ReplicaSet", "web-7d4b9"), NEW_ISTIOD) for i in range(3)]
    for name, status in pod_overrides.items():
        next(p for p in pods if p["metadata"]["name"] == name)["status"].update(status)
    controllers = {("ReplicaSet", ns, "web-7d4b9"): {"owner": ("Deployment", "web")},
                   ("Deployment", ns, "web"): {"owner": None}}
    default, revision = both_planes()
    return ns, labels, pods, controllers, [with_canary(default, [ns], NEW), revision]


def test_the_gate_passes_a_canary_connected_and_in_sync():
    ns, labels, pods, controllers, webhooks = canary_view()
    served = parse_proxy_status(proxy_status(*((ns, f"web-{i}") for i in range(3))))
    verdict = judge([ns], labels, pods, controllers, webhooks, served, NEW_ISTIOD)
    assert verdict.offenders == () and verdict.proven == 3


def test_the_gate_names_each_pod_and_why():
    """A NACKed listener, a proxy no new istiod serves, a pod not Ready, a restarted istio-proxy, a workload pod
    still on the old plane; a bare pod on the old plane is left to the unmanagedPods policy, not failed."""
    ns, labels, pods, controllers, webhooks = canary_view(**{"web-1": {"ready": False}, "web-2": {"proxyRestarts": 1}})
    pods += [pod(ns, "web-old", ("ReplicaSet", "web-7d4b9"), LEGACY_ISTIOD),
             pod(ns, "lost", ("ReplicaSet", "web-7d4b9"), NEW_ISTIOD),
             pod(ns, "step-1", None, LEGACY_ISTIOD)]
    nack = [SYNCED[0], {"typeUrl": "type.googleapis.com/envoy.config.listener.v3.Listener",
                        "configStatus": "ERROR", "errorState": {"details": "listener rejected"}}]
    served = parse_proxy_status(proxy_status(*((ns, f"web-{i}") for i in range(3)), statuses={"web-0": nack}))
    verdict = judge([ns], labels, pods, controllers, webhooks, served, NEW_ISTIOD)
    assert verdict.offenders == (
        f"{ns}/lost: no istiod of the new plane serves its proxy",
        f"{ns}/web-0: not in sync with istiod istiod-kf-1-30-abc: LDS ERROR: listener rejected",
        f"{ns}/web-1: not Ready",
        f"{ns}/web-2: istio-proxy restarted 1 time(s)",
        f"{ns}/web-old (Deployment/web): its proxy still names {LEGACY_ISTIOD}")
    assert verdict.left == (f"{ns}/step-1 (no controller)",) and verdict.proven == 0


def test_the_gate_fails_a_namespace_whose_new_pods_the_injector_does_not_send_to_the_new_istiod():
    """The canary written back by someone (the default injector as before the canary): the gate names the
    namespace and where its pods go."""
    ns, labels, pods, controllers, webhooks = canary_view()
    webhooks[0] = without_canary(webhooks[0])
    served = parse_proxy_status(proxy_status(*((ns, f"web-{i}") for i in range(3))))
    verdict = judge([ns], labels, pods, controllers, webhooks, served, NEW_ISTIOD)
    assert verdict.offenders == (f"namespace {ns}: its new pods are sent to istiod.kubeflow, not to "
                                 f"istiod-kf-1-30.istio-system alone",)


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
    assert argv[argv.index("--injector") + 1] == "istio-revision-tag-default-kubeflow"
    assert json.loads(canary.inputs["stdin"]) == {
        PROFILES[0]: {"restart": ["Deployment/notebook-0", "Deployment/notebook-1"], "evict": []}}
    assert "istiod-serving" in dependency_names(registered, canary)
    switch = [r for r in registered if r.name.startswith("webhook-switch-")]
    assert switch and all("canary" in dependency_names(registered, r) for r in switch)
    fold = found["webhook-switch-fold"]
    assert shlex.split(fold.inputs["create"])[1:3] == ["-m", "live.fold"]
    assert fold.inputs["triggers"][0] == "istio-system/istiod-kf-1-30" and len(fold.inputs["triggers"]) == 2, \
        "the fold runs again whenever the canary step does (its id)"
    assert all("webhook-switch-fold" in dependency_names(registered, r) for r in switch if r is not fold), \
        "the canary's webhooks are folded into the switch before the switch's own write"
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


def test_the_way_back_from_a_canary_folds_it_into_the_switch_to_the_old_istiod():
    """The legacy stack run while the default injector holds a canary (canaryOnly, then rolled back): the switch it
    declares sends every namespace to the legacy istiod and holds no canary webhook, and live.fold writes it before
    the switch's own write (which would keep the canary's webhooks beside it: two injectors)."""
    live = charm_install()
    injectors = [*live.mutating_webhooks[:1], with_canary(live.mutating_webhooks[1], [PROFILES[0]], NEW)]
    live = dataclasses.replace(live, mutating_webhooks=injectors, istiod_deployments=live.istiod_deployments + [
        {"metadata": {"namespace": "istio-system", "name": "istiod-kf-1-30"}}],
        present=live.present | {("Deployment", "istio-system", "istiod-kf-1-30")})
    registered = run_program("legacy", {"topology": "legacy"}, live)
    fold = named(registered)["webhook-switch-fold"]
    declared = json.loads(fold.inputs["stdin"])
    assert canary_namespaces(declared) == ()
    assert fold.inputs["triggers"] == ["kubeflow/istiod", PROFILES[0]], "a canary found later folds again"
    for ns in PROFILES:
        assert injection_services([declared], namespace_labels(ns)) == [OLD]
    switch = [r for r in registered if r.name.startswith("webhook-switch-mutatingwebhookconfiguration")]
    assert switch and "webhook-switch-fold" in dependency_names(registered, switch[0])
    assert switch[0].inputs["webhooks"] == declared["webhooks"]


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


def test_a_canary_on_the_default_injector_with_no_canary_declared_is_refused():
    """The switch folds a canary in only after its stack's canary step: a run without canaryNamespaces while the
    default injector holds a canary (canaryOnly, then the key removed) is refused, naming the namespaces."""
    live = charm_install()
    live = dataclasses.replace(live, mutating_webhooks=[
        *live.mutating_webhooks[:1], with_canary(live.mutating_webhooks[1], [PROFILES[0]], NEW)])
    with pytest.raises(PreflightRefused, match=rf"holds a canary of {PROFILES[0]} .* set it back to"):
        run_program("migrated", {"topology": "migrated"}, live)
    assert named(run_program("migrated", CANARY, live))["webhook-switch-fold"]


def test_canary_only_after_the_switch_is_refused():
    """canaryOnly would drop the switch and the rollouts from a stack that already made them."""
    live = charm_install()
    switched = json.loads(json.dumps(live.mutating_webhooks))
    for hook in switched[1]["webhooks"]:
        hook["clientConfig"]["service"].update(namespace="istio-system", name="istiod-kf-1-30")
    live = dataclasses.replace(live, mutating_webhooks=switched)
    with pytest.raises(PreflightRefused, match="the mesh has moved"):
        run_program("migrated", {**CANARY, "canaryOnly": True}, live)
