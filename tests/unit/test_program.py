"""The program under Pulumi mocks: what each stack declares, how it is parented, adopted, retained and ordered."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shlex

import pytest

from components.objects import resource_name
from migration.plan import PreflightRefused
from migration.webhooks import injectors, matching_webhooks
from tests.unit.harness import run_program
from tests.unit.live_mesh import PROFILES, charm_install, empty_cluster

STACKS = {"legacy": {"topology": "legacy"}, "migrated": {"topology": "migrated"}}


@pytest.fixture(scope="module", params=sorted(STACKS))
def stack(request):
    live = charm_install() if request.param == "migrated" else empty_cluster()
    return request.param, run_program(request.param, STACKS[request.param], live)


def objects(registered, kind=None):
    return {(r.kind, r.namespace, r.object_name) for r in registered
            if r.type.startswith("kubernetes:") and kind in (None, r.kind)}


def test_exact_resource_set(stack):
    name, registered = stack
    ns, rev_suffix = ("kubeflow", "") if name == "legacy" else ("istio-system", "-kf-1-30")
    crd_names = {n for _, _, n in objects(registered, "CustomResourceDefinition")}
    assert len(crd_names) == 15
    control_plane = objects(registered) - objects(registered, "CustomResourceDefinition")
    expected_control_plane = {
        ("ServiceAccount", ns, "istio-reader-service-account"), ("ServiceAccount", ns, f"istiod{rev_suffix}"),
        ("ConfigMap", ns, f"istio{rev_suffix}"), ("ConfigMap", ns, f"istio-sidecar-injector{rev_suffix}"),
        ("ConfigMap", ns, f"values{rev_suffix}"), ("Deployment", ns, f"istiod{rev_suffix}"),
        ("Service", ns, f"istiod{rev_suffix}"), ("HorizontalPodAutoscaler", ns, f"istiod{rev_suffix}"),
        ("Role", ns, f"istiod{rev_suffix}"), ("RoleBinding", ns, f"istiod{rev_suffix}"),
    }
    cluster_suffix = "-kubeflow" if name == "legacy" else "-kf-1-30-istio-system"
    expected_control_plane |= {(kind, "", f"{base}{cluster_suffix}") for kind in ("ClusterRole", "ClusterRoleBinding")
                               for base in ("istio-reader-clusterrole", "istiod-clusterrole",
                                            "istiod-gateway-controller")}
    expected_control_plane |= {
        ("MutatingWebhookConfiguration", "", "istio-sidecar-injector-kubeflow" if name == "legacy"
         else "istio-sidecar-injector-kf-1-30"),
        ("ValidatingWebhookConfiguration", "", "istio-validator-kubeflow" if name == "legacy"
         else "istio-validator-kf-1-30-istio-system")}
    if name == "migrated":
        expected_control_plane |= {("Namespace", "", "istio-system"), ("Secret", "istio-system", "istio-ca-secret"),
                                   ("MutatingWebhookConfiguration", "", "istio-revision-tag-default-kubeflow"),
                                   ("ValidatingWebhookConfiguration", "", "istiod-default-validator"),
                                   ("ValidatingAdmissionPolicy", "", "kfistio-protect-istio"),
                                   ("ValidatingAdmissionPolicyBinding", "", "kfistio-protect-istio")}
    gateway = {("ServiceAccount", "kubeflow", "istio-ingressgateway-workload-service-account"),
               ("Role", "kubeflow", "istio-ingressgateway-workload-sds"),
               ("RoleBinding", "kubeflow", "istio-ingressgateway-workload-sds"),
               ("Deployment", "kubeflow", "istio-ingressgateway-workload"),
               ("Service", "kubeflow", "istio-ingressgateway-workload"),
               ("Service", "kubeflow", "istio-gateway-metrics"),
               ("PodDisruptionBudget", "kubeflow", "istio-ingressgateway-workload")}
    if name == "legacy":
        gateway.add(("Gateway", "kubeflow", "kubeflow-gateway"))  # migrated leaves the Gateway CR untouched
    else:  # the charm's gateway, patched where the move must change it
        gateway = {(f"{kind}Patch", ns, name) for kind, ns, name in gateway}
    assert control_plane == expected_control_plane | gateway


COMMAND_PARENTS = {"rollout-": "kfistio:migration:Rollouts", "istiod-serving": "kfistio:migration:ServingCheck",
                   "unmanaged-pods": "kfistio:migration:UnmanagedPods", "analyze-before": "kfistio:migration:MeshAnalysis",
                   "verify-sidecars": "kfistio:migration:Verification", "teardown-": "kfistio:migration:Teardown",
                   "ingress-gateway-unlabel-pods-": "kfistio:kubeflow:IngressGateway",
                   "guard-enforced": "kfistio:migration:Guard",
                   "webhook-switch-fold": "kfistio:migration:WebhookSwitch"}


def test_every_resource_is_parented_to_its_component(stack):
    """Nothing is declared at the stack root but the one kubernetes provider."""
    _, registered = stack
    components = {r.urn: r.type for r in registered if not r.custom}
    expected = ["kfistio:istio:ControlPlane", "kfistio:istio:Crds", "kfistio:kubeflow:IngressGateway"]
    if stack[0] == "migrated":
        expected += ["kfistio:migration:Guard", "kfistio:migration:Rollouts", "kfistio:migration:WebhookSwitch",
                     "kfistio:migration:UnmanagedPods",
                     "kfistio:migration:ServingCheck", "kfistio:migration:Verification", "kfistio:migration:Teardown",
                     "kfistio:migration:MeshAnalysis"]
    assert sorted(components.values()) == sorted(expected)
    assert all(components.get(r.parent, "stack") == "stack" for r in registered if not r.custom)
    for r in registered:
        if r.type == "pulumi:providers:kubernetes":
            assert components.get(r.parent, "stack") == "stack"
        elif r.type.startswith("command:"):
            assert components.get(r.parent) == next(v for k, v in COMMAND_PARENTS.items() if r.name.startswith(k))
        elif r.kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration") and \
                not r.name.startswith("control-plane"):
            assert components.get(r.parent) == "kfistio:migration:WebhookSwitch", r.name
        elif r.kind.startswith("ValidatingAdmissionPolicy"):
            assert components.get(r.parent) == "kfistio:migration:Guard", r.name
        elif r.custom:
            expected = {"CustomResourceDefinition": "kfistio:istio:Crds"}.get(r.kind)
            if r.object_name.startswith("istio-ingressgateway") or r.object_name in (
                    "istio-gateway-metrics", "kubeflow-gateway"):
                expected = "kfistio:kubeflow:IngressGateway"
            assert components.get(r.parent) == (expected or "kfistio:istio:ControlPlane"), r.name


def test_crds_are_retained_in_both_stacks_and_adopted_in_migrated(stack):
    name, registered = stack
    crds = [r for r in registered if r.kind == "CustomResourceDefinition"]
    assert crds and all(r.retain_on_delete for r in crds), "no stack may ever delete an Istio CRD"
    if name == "migrated":
        assert all(r.import_id == r.object_name for r in crds), "migrated adopts the live CRDs by name"
        gateway = [r for r in registered if r.namespace == "kubeflow"]
        assert gateway and all(r.kind.endswith("Patch") and r.retain_on_delete and not r.import_id for r in gateway)
        crd = next(r for r in registered if r.object_name == "virtualservices.networking.istio.io")
        assert crd.inputs["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep", "live metadata kept"
        assert crd.inputs["metadata"]["labels"]["app"] == "istio"
    else:
        assert not any(r.import_id for r in registered), "legacy creates what it declares"


def test_dependency_order(stack):
    _, registered = stack
    by_urn = {r.urn: r for r in registered}

    def kinds_before(r, seen=None):
        """Kinds of everything r waits for, directly or through its dependencies (and theirs)."""
        seen = set() if seen is None else seen
        for d in r.dependencies:
            if d in by_urn and d not in seen:
                seen.add(d)
                kinds_before(by_urn[d], seen)
        return {by_urn[d].kind for d in seen}

    for r in registered:
        if r.kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            assert {"Deployment", "Service"} <= kinds_before(r), f"{r.name} must wait for istiod"
        if r.kind == "Deployment" and r.parent.endswith("ControlPlane::control-plane"):
            assert "ConfigMap" in kinds_before(r), f"{r.name} must wait for its config"
        if r.kind == "ServiceAccount" and r.parent.endswith("ControlPlane::control-plane"):
            assert kinds_before(r) & {"CustomResourceDefinition", "Namespace"}, f"{r.name} must wait for CRDs"


def test_no_two_injectors_match_one_namespace(stack):
    _, registered = stack
    configs = [{"kind": r.kind, "metadata": r.inputs["metadata"], "webhooks": r.inputs["webhooks"]}
               for r in registered if r.kind == "MutatingWebhookConfiguration"]
    assert injectors(configs)
    label_sets = [{}, {"istio-injection": "enabled"}, {"istio-injection": "disabled"}, {"istio.io/rev": "default"},
                  {"istio.io/rev": "kf-1-30"}]
    pod_sets = [{}, {"sidecar.istio.io/inject": "true"}, {"sidecar.istio.io/inject": "false"},
                {"istio.io/rev": "default"}, {"istio.io/rev": "kf-1-30"}]
    for ns_labels, pod_labels in itertools.product(label_sets, pod_sets):
        assert len(matching_webhooks(configs, ns_labels, pod_labels)) <= 1, (ns_labels, pod_labels)
    assert len(matching_webhooks(configs, {"istio-injection": "enabled"})) == 1, "legacy: its own; migrated: the switched one"


def test_migration_steps_are_ordered():
    """serving check -> webhook switch -> gateway and rollouts -> verification -> teardown, each child included."""
    registered = run_program("migrated", STACKS["migrated"], charm_install())
    by_urn = {r.urn: r for r in registered}
    names = lambda r: {by_urn[d].name for d in r.dependencies if d in by_urn}  # noqa: E731
    named = {r.name: r for r in registered if r.custom}  # a check component and its Command share a name
    switch = [r for r in registered if r.name.startswith("webhook-switch-") and r.kind.endswith("Configuration")]
    assert len(switch) == 2 and all("istiod-serving" in names(r) for r in switch)
    assert "webhook-switch-fold" not in named, "without a canary, nothing stands between serving and the switch"
    assert "control-plane-deployment-istio-system-istiod-kf-1-30" in names(named["istiod-serving"])
    assert "control-plane-secret-istio-system-istio-ca-secret" in names(
        named["control-plane-deployment-istio-system-istiod-kf-1-30"]), "the CA is copied before istiod starts"
    rollouts = [r for r in registered if r.name.startswith("rollout-")]
    assert [r.name for r in rollouts] == ["rollout-wave"], "one restart command for the mesh (default strategy)"
    assert all({s.name for s in switch} <= names(r) for r in rollouts), "every restart follows the switch"
    gateway_deployment = named["ingress-gateway-deployment-kubeflow-istio-ingressgateway-workload"]
    assert {s.name for s in switch} <= names(gateway_deployment)
    assert all({s.name for s in switch} <= names(r) for r in [named["unmanaged-pods"]])
    assert {r.name for r in rollouts} | {gateway_deployment.name, "unmanaged-pods"} <= names(named["verify-sidecars"])
    crds = {r.name for r in registered if r.kind == "CustomResourceDefinition"}
    assert names(named["teardown-legacy-control-plane"]) == {"verify-sidecars"} | crds, \
        "the old plane goes once verified, and once this stack owns every CRD"
    assert all(r.retain_on_delete for r in switch), "destroying the stack never leaves zero injectors"


def rollout_commands(registered) -> tuple[list, dict[str, list[str]]]:
    """The rollout Commands, and for each the other rollout commands it depends on."""
    rollouts = [r for r in registered if r.name.startswith("rollout-")]
    by_urn = {r.urn: r.name for r in registered}
    return rollouts, {r.name: sorted(by_urn[d] for d in r.dependencies if by_urn.get(d, "").startswith("rollout-"))
                      for r in rollouts}


def test_one_wave_bounded_in_workloads():
    """The default: one command for every workload (so the engine's --parallel cannot cap the wave), started by
    the switch alone, moving at most rolloutParallelism workloads at once; its standard input names each one."""
    registered = run_program("migrated", {"topology": "migrated", "rolloutParallelism": 3}, charm_install())
    rollouts, previous = rollout_commands(registered)
    assert [r.name for r in rollouts] == ["rollout-wave"]
    argv = shlex.split(rollouts[0].inputs["create"])
    assert argv[1:3] == ["-m", "live.rollout"]
    assert argv[argv.index("--limit") + 1] == "3"
    assert json.loads(rollouts[0].inputs["stdin"]) == {
        ns: {"restart": ["Deployment/notebook-0", "Deployment/notebook-1"], "evict": []} for ns in PROFILES}
    assert rollouts[0].inputs["triggers"][1:] == [f"{ns}/Deployment/notebook-{i}" for ns in PROFILES for i in (0, 1)]


def test_one_command_per_namespace_strategy_shares_one_wave():
    """rolloutStrategy=namespaces: a command per namespace, all started by the switch, sharing one wave's slots."""
    registered = run_program("migrated", {"topology": "migrated", "rolloutStrategy": "namespaces"}, charm_install())
    rollouts, previous = rollout_commands(registered)
    assert sorted(r.name for r in rollouts) == [f"rollout-{ns}" for ns in PROFILES]
    assert all(p == [] for p in previous.values()), "no rollout command waits for another"
    for r in rollouts:
        assert list(json.loads(r.inputs["stdin"])) == [r.name.removeprefix("rollout-")]
    waves = {(argv := shlex.split(r.inputs["create"]))[argv.index("--wave") + 1] for r in rollouts}
    assert len(waves) == 1, "every command shares one wave's slots"


def test_one_command_per_workload_strategy():
    registered = run_program("migrated", {"topology": "migrated", "rolloutStrategy": "workloads"}, charm_install())
    rollouts, previous = rollout_commands(registered)
    assert sorted(r.name for r in rollouts) == sorted(f"rollout-{ns}-deployment-notebook-{i}"
                                                      for ns in PROFILES for i in (0, 1))
    assert all(p == [] for p in previous.values())


def test_namespace_by_namespace_strategy():
    """rolloutStrategy=one-namespace-at-a-time: namespaces in sequence (the manual runbook's loop)."""
    registered = run_program("migrated", {"topology": "migrated", "rolloutStrategy": "one-namespace-at-a-time"},
                             charm_install())
    rollouts, previous = rollout_commands(registered)
    assert [previous[r.name] for r in rollouts] == [[]] + [[rollouts[i - 1].name] for i in range(1, len(rollouts))]


def stopped_before_the_switch():
    """The charm's install with istiod-kf-1-30 created beside it, the default injector not yet switched."""
    live = charm_install()
    return dataclasses.replace(live, istiod_deployments=live.istiod_deployments + [
        {"metadata": {"namespace": "istio-system", "name": "istiod-kf-1-30"}}],
        present=live.present | {("Deployment", "istio-system", "istiod-kf-1-30")})


def test_legacy_rolls_back_a_migration_stopped_before_the_switch():
    """A migration stopped after creating istiod-kf-1-30 but before switching the default injector: `legacy` must
    still remove the new plane (restart, verify, tear down), not leave a second istiod behind."""
    registered = run_program("legacy", STACKS["legacy"], stopped_before_the_switch())
    teardown = next(r for r in registered if r.name == "teardown-migrated-control-plane" and r.custom)
    assert "istiod-kf-1-30" in teardown.inputs["create"] and "deployment" in teardown.inputs["create"].lower()
    assert [r for r in registered if r.name.startswith("rollout-")], "every workload is restarted on the way back"
    assert not any(r.name == "teardown-migrated-control-plane" for r in run_program(
        "legacy", STACKS["legacy"], charm_install())), "a charm install alone is not a rollback"
    lift = next(r for r in registered if r.name == "lift-guard" and r.custom)
    assert "delete ValidatingAdmissionPolicyBinding/kfistio-protect-istio --ignore-not-found" in lift.inputs["create"]
    by_urn = {r.urn: r for r in registered}
    crds = [r for r in registered if r.kind == "CustomResourceDefinition"]
    assert crds and all(lift.urn in r.dependencies or any(
        by_urn.get(d) and by_urn[d].name == "lift-guard" for d in r.dependencies) for r in crds), \
        "the guard is lifted before the way back creates anything (it refuses an istiod in kubeflow)"


def test_a_stack_holding_the_default_webhooks_switches_them_in_place():
    """A legacy stack that built or adopted the mesh holds the default injector and validator in its control plane;
    rolling back declares them in the switch. Each is aliased to its name there, so the engine updates the same
    resource instead of importing a new one and deleting the old at the end (every namespace without injector)."""
    registered = run_program("legacy", STACKS["legacy"], stopped_before_the_switch())
    plane = next(r for r in registered if r.type == "kfistio:istio:ControlPlane")
    switched = [r for r in registered if r.custom and r.parent.endswith("WebhookSwitch::webhook-switch")
                and r.kind.endswith("Configuration")]
    assert {r.object_name for r in switched} == {"istio-revision-tag-default-kubeflow", "istiod-default-validator"}
    for r in switched:
        assert [a for a in r.aliases if a[0]] == [(resource_name("control-plane", r.inputs), plane.urn)], r.name


def test_destroying_the_migrated_stack_is_refused_and_purge_cannot_select_istiod_pods():
    """`protect` on what every revision of the migrated plane shares (its namespace, the root of trust) and on the
    guard: `pulumi destroy` fails before deleting anything. A revision's own objects are not protected, nor retained:
    the stack's upgrade deletes them once it declares the next revision. The new istiod's pods lack the label
    `istioctl uninstall --purge` deletes pods by."""
    registered = run_program("migrated", STACKS["migrated"], charm_install())
    plane = [r for r in registered if r.custom and r.parent.endswith("ControlPlane::control-plane")]
    guard = [r for r in registered if r.custom and r.parent.endswith("Guard::guard") and r.type.startswith("kube")]
    shared = [r for r in plane if r.kind in ("Namespace", "Secret")]
    assert {r.kind for r in shared} == {"Namespace", "Secret"} and all(r.protect for r in shared + guard) and guard
    own = [r for r in plane if r not in shared]
    assert own and not any(r.protect or r.retain_on_delete for r in own)
    istiod = next(r for r in plane if r.kind == "Deployment")
    assert "operator.istio.io/component" not in istiod.inputs["spec"]["template"]["metadata"]["labels"]
    assert istiod.inputs["metadata"]["labels"]["operator.istio.io/component"] == "Pilot", "only the pods change"
    legacy = run_program("legacy", STACKS["legacy"], charm_install())
    assert not any(r.protect for r in legacy), "the legacy stack (the way back) stays free to change"


def test_guard_protects_the_new_plane_and_comes_last():
    registered = run_program("migrated", STACKS["migrated"], charm_install())
    label = lambda r: r.inputs["metadata"].get("labels", {}).get("kfistio.io/protected")  # noqa: E731
    plane = [r for r in registered if r.parent.endswith("ControlPlane::control-plane")]
    switched = [r for r in registered if r.name.startswith("webhook-switch-") and r.kind.endswith("Configuration")]
    assert plane and all(label(r) == "true" for r in plane + switched)
    gateway = [r for r in registered if r.parent.endswith("IngressGateway::ingress-gateway")
               and r.type.startswith("kubernetes:")]
    assert gateway and all(label(r) == "true" for r in gateway), "the old charm's purge must not delete the gateway"
    assert [r.name for r in registered if r.kind.startswith("Deployment") and r.namespace == "kubeflow"] == [
        "ingress-gateway-deployment-kubeflow-istio-ingressgateway-workload"], "the old istiod is not declared"
    guard = next(r for r in registered if r.kind == "ValidatingAdmissionPolicy")
    by_urn = {r.urn: r.name for r in registered}
    assert "teardown-legacy-control-plane" in {by_urn.get(d) for d in guard.dependencies}
    assert guard.inputs["spec"]["failurePolicy"] == "Fail"


def test_one_provider_and_one_target_for_everything(stack):
    """Every Kubernetes object goes through the explicit provider bound to the resolved target; every Command
    gets that kubeconfig in its environment and names the context on every kubectl."""
    from tests.unit.harness import TARGET
    _, registered = stack
    providers = [r for r in registered if r.type == "pulumi:providers:kubernetes"]
    assert len(providers) == 1 and providers[0].inputs["kubeconfig"] == TARGET.kubeconfig
    assert providers[0].inputs["context"] == TARGET.context
    for r in registered:
        if r.type.startswith("kubernetes:"):
            assert r.provider.startswith(providers[0].urn), r.name
        if r.type == "command:local:Command":
            assert r.inputs["environment"] == {"KUBECONFIG": TARGET.kubeconfig}, r.name
            script = r.inputs["create"]
            assert script.count("kubectl ") == script.count(f"kubectl --context={TARGET.context}") or \
                "--context unit-tests" in script, r.name
            assert r.inputs["update"] == "true", "a changed kubeconfig path must not run a step again"


def test_the_serving_check_replaces_the_providers_wait_for_the_new_istiods_service():
    registered = run_program("migrated", STACKS["migrated"], charm_install())
    service = next(r for r in registered if r.kind == "Service" and r.namespace == "istio-system")
    assert service.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    by_urn = {r.urn: r for r in registered}
    check = next(r for r in registered if r.name == "istiod-serving" and r.custom)
    switch = [r for r in registered if r.name.startswith("webhook-switch-") and r.custom]
    assert switch and all(check.urn in r.dependencies or any(
        by_urn.get(d) and by_urn[d].name == "istiod-serving" for d in r.dependencies) for r in switch)


def test_fields_istiod_and_the_api_server_own_are_left_to_them(stack):
    """`pulumi refresh` reads istiod's Fail into the state; a declared Ignore would then be a change to make, which
    `pulumi up --refresh` would write and istiod would undo: the stacks leave that field to istiod after creating it."""
    name, registered = stack
    validators = [r for r in registered if r.kind == "ValidatingWebhookConfiguration"
                  and "istio.io/rev" in (r.inputs["metadata"].get("labels") or {})]
    assert validators, f"{name} declares no revision's validator"
    assert all(r.ignore_changes == ("webhooks[*].failurePolicy",) for r in validators)
    services = [r for r in registered if r.kind == "Service"]
    assert services and all(r.ignore_changes == ("spec.clusterIP", "spec.clusterIPs") for r in services)
    others = [r for r in registered if r.type.startswith("kubernetes:") and r not in validators + services]
    assert not [r.name for r in others if r.ignore_changes]


def test_a_release_before_the_move_is_done_is_refused():
    with pytest.raises(PreflightRefused, match=r"handOver release lets go of a finished move only, but istiod still "
                                               r"runs in kubeflow \(kubeflow/istiod\)"):
        run_program("migrated", {"topology": "migrated", "handOver": "release"}, charm_install())


def test_the_legacy_layout_is_not_installed_on_a_cluster_without_the_juju_model():
    """A rollback aimed at the wrong cluster (no `kubeflow` namespace, no mesh) would otherwise create the CRDs and
    fail at the first namespaced object; only createSourceNamespace (the embedded dev stack) models it there."""
    with pytest.raises(PreflightRefused, match=r"source namespace kubeflow does not exist: the legacy layout lives in "
                                               r"the Juju model's namespace"):
        run_program("legacy", STACKS["legacy"], empty_cluster(model=False))
    created = run_program("dev", {"topology": "legacy", "createSourceNamespace": "true"}, empty_cluster(model=False))
    assert any(r.kind == "Namespace" and r.name.endswith("kubeflow") for r in created), [r.name for r in created][:5]


def test_the_gateway_custom_resource_is_never_deleted():
    """Every VirtualService names the Gateway: a stack that made it retains it, also once it stops declaring it."""
    registered = run_program("legacy", STACKS["legacy"], empty_cluster())
    gateway = next(r for r in registered if r.kind == "Gateway")
    assert gateway.retain_on_delete and gateway.inputs["metadata"]["labels"] == {"kfistio.io/made-by": "legacy-stack"}
