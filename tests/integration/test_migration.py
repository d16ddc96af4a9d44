"""legacy (the charm's istioctl install) -> migrated with the real engine, real apiserver and real istiods.

The stack's config names cluster A; every pulumi command runs with the shell's KUBECONFIG on another cluster, B
(empty: a step that read or acted on B would fail or change it). So the migration's checks are also the proof of
one cluster identity: preview, up and the rollback preview act on A only, B is unchanged by resourceVersion."""

from __future__ import annotations

import json
import os
import re
import shlex
import ssl
from datetime import datetime

import pytest
import yaml

from demo import charm_hooks, fixture, kubeflow
from demo.migrate import migrate_and_verify
from demo.observe import InjectorHistory, read, snapshot
from devcluster import proxy_events, toolchain
from devcluster.cluster import Cluster
from live import analyze
from migration.workloads import proxy_address
from tests.certificates import different_root_leaf, handshake, old_and_new_shake_hands
from tests.next_owner import (NEXT, NEXT_ISTIOD, NEXT_REVISION, a_live_validator_judges_istio_writes,
                               every_proxy_on_the_next_revision, old_charm_purge_loses_nothing,
                               old_charm_reinstall_is_refused, restart_every_sidecar)
from tests.support import (DEFAULT_INJECTOR, DEFAULT_TAG_INJECTOR, NEW_ISTIOD, fingerprint, followed,
                           fresh_workspace, gateway_istiod, gateway_objects, helm, ingress_objects, istio_charts,
                           new_pods_get, nothing_lost, one_injector_but_the_rename, one_injector_now,
                           one_injector_throughout, opt_in_injector, purged, run, state_urns)

SIZE = fixture.FixtureSize(profiles=5, deployments=3)  # the smallest Kubeflow-like mesh: several profiles, several workloads each
PROFILES = fixture.profile_namespaces(SIZE)
CHECKS = ["CRD UIDs unchanged", "CRD specs byte-identical (same version)",
          "Istio CRs identical (spec, labels, annotations)",
          "istio-ca-root-cert identical in every namespace", "new istiod Available", "Istio version kept (the same image)",
          "injectors per profile namespace, every state", "default validator targets a live Service",
          "workloads moved, by way and kind", "no pod left on the old istiod (gateway included)",
          "istioctl x precheck before the move (preflight)", "istioctl analyze: no new Error, no IST0139",
          "istioctl x check-inject: one injector for a pod of each injected namespace",
          "old control plane removed",
          "second `pulumi preview` shows no changes"]


def migrated_mesh(workspace, build, size: fixture.FixtureSize = SIZE, shell_cluster: Cluster | None = None):
    """The workspace's cluster given a legacy mesh made by build(workspace, size), migrated by `pulumi up --stack
    migrated` (with the shell's KUBECONFIG on shell_cluster, if given) while the injector history is followed; returns
    (migration, what was on the cluster before: its pods and the Services in kubeflow)."""
    build(workspace, size)
    shell = shell_on(workspace, shell_cluster) if shell_cluster else None
    before = {"pods": pods(workspace.env), "kubeflow services": {
        s["metadata"]["name"] for s in read(workspace.env, "services", "kubeflow")["items"]}}
    return migrate_and_verify(workspace, fixture.profile_namespaces(size), shell), before


def pods(env: dict[str, str]) -> dict[str, dict]:
    """namespace/name -> pod, for every pod in the cluster."""
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p
            for p in read(env, "pods")["items"]}


@pytest.fixture(scope="module")
def other_cluster():
    """Cluster B, where the shell points; no stack names it."""
    cluster = Cluster.fresh(f"mig-b-{os.getpid()}")
    try:
        yield cluster, fingerprint(cluster.env())
    finally:
        cluster.down(purge=True)


@pytest.fixture(scope="module")
def migration(other_cluster):
    """From the charm's own install (istioctl install with its flags), with the shell on cluster B."""
    with purged(fresh_workspace("mig")) as workspace:
        result, before = migrated_mesh(workspace, lambda ws, size: fixture.build(ws.env, size),
                                       shell_cluster=other_cluster[0])
        yield workspace, result, before


def shell_on(workspace, cluster) -> dict[str, str]:
    """workspace's pulumi environment (backend, passphrase) with the shell's KUBECONFIG on cluster."""
    return dict(workspace.env, KUBECONFIG=str(cluster.kubeconfig))


@pytest.mark.parametrize("check", CHECKS)
def test_migration(migration, check):
    rows = {row: (observed, ok) for row, observed, ok in migration[1].rows}
    observed, ok = rows[check]
    assert ok, f"{check}: {observed}"


def test_day_two_refresh_and_up_change_nothing(migration):
    """A Pulumi user's day-2 habits on the migrated stack: `pulumi refresh`, then `pulumi preview
    --expect-no-changes`, then `pulumi up --refresh`: nothing proposed, nothing written, and istiod's validator stays
    armed (it owns failurePolicy; a stack that declared Ignore over it would disarm validation on every refresh)."""
    workspace = migration[0]
    env = workspace.env
    before = fingerprint(env, *PROFILES)
    workspace.pulumi("refresh", "--stack", "migrated", "--yes")
    workspace.pulumi("preview", "--stack", "migrated", "--expect-no-changes", "--diff")
    workspace.pulumi("up", "--stack", "migrated", "--refresh", "--yes", "--expect-no-changes")
    assert fingerprint(env, *PROFILES) == before
    policies = [h["failurePolicy"] for h in read(env, "validatingwebhookconfigurations",
                                                   name="istio-validator-kf-1-30-istio-system")["webhooks"]]
    assert policies and set(policies) == {"Fail"}


def test_a_second_injector_fails_the_verification_by_istios_analyzers(migration):
    """A second injector that appears after the analyzers' first look (for pods that opt in by label: preflight, which
    judges each namespace by its unlabelled pods, does not see it): the verification step, run again by the engine,
    fails naming IST0139 and the pod `istioctl x check-inject` finds injected twice; without it the step passes."""
    workspace = migration[0]
    env = workspace.env
    verify = next(u for u in state_urns(workspace, "migrated") if u.endswith("command:local:Command::verify-sidecars"))
    run(["kubectl", "create", "-f", "-"], env, input=json.dumps(opt_in_injector(env, DEFAULT_INJECTOR)))
    try:
        failed = workspace.pulumi("up", "--stack", "migrated", "--yes", "--skip-preview", "--replace", verify,
                                  check=False)
    finally:
        run(["kubectl", "delete", "mutatingwebhookconfiguration", "opt-in-injector"], env)
    assert failed.returncode != 0
    assert "Error [IST0139] (MutatingWebhookConfiguration opt-in-injector) Webhook overlaps" in failed.stdout, \
        failed.stdout[-4000:]
    assert re.search(r"check-inject: kubeflow-apps/asks-for-a-sidecar-\S+: 2 webhooks would inject it", failed.stdout)
    workspace.pulumi("up", "--stack", "migrated", "--yes", "--skip-preview", "--replace", verify)


def test_the_gate_fails_closed_on_request_when_the_live_view_cannot_be_had(migration):
    """An istioctl that cannot ask the control planes (here one that fails at once, as it does without
    `pods/portforward`): the gate judges by pod specs alone and says so, unless --require-live-view (requireLiveView)
    makes it fail."""
    workspace = migration[0]
    gate = [str(toolchain.VENV_BIN / "python"), "-m", "live.verify", "--kubeconfig", str(workspace.cluster.kubeconfig),
            "--istiod", NEW_ISTIOD, "--leaving", "istiod.kubeflow.svc:15012", "--revision", "kf-1-30",
            "--istioctl", "false"]
    open_gate = run(gate, workspace.env, cwd=toolchain.REPO, check=False)
    assert open_gate.returncode == 0 and "live proxy view unavailable, pod specs only" in open_gate.stdout
    closed = run([*gate, "--require-live-view"], workspace.env, cwd=toolchain.REPO, check=False)
    assert closed.returncode == 1
    assert "the live proxy view is required (--require-live-view): `istioctl proxy-status" in closed.stderr


def test_a_precheck_that_cannot_look_is_no_verdict(tmp_path):
    """`istioctl x precheck` exits 1 with nothing on standard output when it cannot reach the cluster, as it does for
    warnings; that must refuse the preflight, not read as "no issues"."""
    with pytest.raises(analyze.AnalysisFailed, match="failed to setup client"):
        analyze.precheck(str(toolchain.binary("istioctl")), "istio-system", str(tmp_path / "no-kubeconfig"))


def test_the_oracle_judged_the_switch_itself(migration):
    """The injector oracle judges every state the apiserver went through, not samples of them, so the write that
    switched the default injection path is one of its states: the state before it calls only the old istiod, the
    state it made only the new one, and no other write moved the profile namespaces from one to the other."""
    states = migration[1].states
    old, new = ["kubeflow/istiod"], [f"istio-system/{NEW_ISTIOD.split('.')[0]}"]
    moves = [(before, after) for before, after in zip(states, states[1:])
             if before["injector_targets"] != after["injector_targets"]]
    assert len(moves) == 1, f"the injection path changed at {[(b['change'], a['change']) for b, a in moves]}"
    before, switch = moves[0]
    assert (states[0]["injector_targets"], before["injector_targets"]) == (old, old)
    assert (switch["injector_targets"], states[-1]["injector_targets"]) == (new, new)
    assert switch["change"].startswith(f"MutatingWebhookConfiguration {DEFAULT_INJECTOR} "), switch["change"]


def test_every_pod_moved_after_the_new_istiod_was_available(migration):
    """Every pod now on the new istiod (restarted, evicted, the gateway, whatever its kind) was created after the new
    istiod became Available."""
    env = migration[0].env
    istiod = read(env, "deployments", "istio-system", "istiod-kf-1-30")
    available = next(c["lastTransitionTime"] for c in istiod["status"]["conditions"] if c["type"] == "Available")
    moved = {k: p["metadata"]["creationTimestamp"] for k, p in pods(env).items() if proxy_address(p) == NEW_ISTIOD}
    assert len(moved) >= SIZE.profiles * SIZE.deployments
    assert {k: t for k, t in moved.items() if t < available} == {}, f"created before {available}"


RESTARTED = "kubectl.kubernetes.io/restartedAt"


def _template_annotations(env, resource: str, name: str) -> dict[str, str]:
    workload = read(env, resource, PROFILES[0], name)
    return workload["spec"]["template"]["metadata"].get("annotations") or {}


def test_every_kind_moved_its_own_way(migration):
    """Uncontrolled Deployments, StatefulSets and DaemonSets are rolled (their template carries restartedAt); the
    notebook's StatefulSet (its Notebook owns it) and the KServe Deployment (its Knative Revision owns it) keep
    their template untouched and got new pods by eviction; every injection path was followed; every proxy is on
    the new istiod; opted-out and out-of-mesh pods were not touched (same UID)."""
    env, before = migration[0].env, migration[2]["pods"]
    for resource, name in [("deployments", "notebook-0"), ("statefulsets", "model-db"), ("daemonsets", "log-agent")]:
        assert RESTARTED in _template_annotations(env, resource, name), f"{resource}/{name} was not rolled"
    for resource, name in [("statefulsets", "nb-0"), ("deployments", "sklearn-iris-predictor-00001-deployment")]:
        assert RESTARTED not in _template_annotations(env, resource, name), f"{resource}/{name}'s template was patched"
        assert read(env, resource, PROFILES[0], name)["metadata"]["generation"] == 1
    after = pods(env)
    running = {k: p for k, p in after.items() if p["status"].get("phase") == "Running"}
    on = lambda ns, prefix: [proxy_address(p) for k, p in running.items() if k.startswith(f"{ns}/{prefix}")]  # noqa
    for ns, prefix in [(PROFILES[0], "nb-0-"), (PROFILES[0], "sklearn-iris-predictor-"), (PROFILES[0], "model-db-"),
                       (PROFILES[0], "log-agent-"), (kubeflow.REV_NAMESPACE, "rev-tagged-"),
                       (kubeflow.PLAIN_NAMESPACE, "asks-for-a-sidecar-")]:
        assert on(ns, prefix) and set(on(ns, prefix)) == {NEW_ISTIOD}, (ns, prefix, on(ns, prefix))
    assert {k: proxy_address(p) for k, p in running.items() if proxy_address(p) not in (None, NEW_ISTIOD)} == {}
    for prefix in ("opted-out-by-label-", "opted-out-by-annotation-"):
        untouched = [k for k in before if k.startswith(f"{PROFILES[0]}/{prefix}")]
        assert untouched and all(after[k]["metadata"]["uid"] == before[k]["metadata"]["uid"] for k in untouched)
    assert [k for k in before if k.startswith(f"{kubeflow.PLAIN_NAMESPACE}/no-mesh-")][0] in after


def test_teardown_waited_for_the_pods_no_workload_restarts(migration):
    """unmanagedPods=wait (the default): the old istiod served the running Job pod and pipeline step until both
    finished; only then was it removed. The update's outputs named both pods beforehand."""
    env, result = migration[0].env, migration[1]
    assert sorted(result.outputs["unmanagedPods"]) == [f"{PROFILES[0]}/pipeline-x-train-1 (Workflow/pipeline-x): wait",
                                                       next(f"{k} (Job/train): wait" for k in migration[2]["pods"]
                                                            if k.startswith(f"{PROFILES[0]}/train-"))]
    # The states are in the apiserver's order (resourceVersion); each one's `t` is when its own watch delivered it.
    removed = next(i for i, s in enumerate(result.states) if "kubeflow/istiod" not in s["istiods"])
    gone = result.states[removed]
    assert removed > 0 and all("kubeflow/istiod" not in s["istiods"] for s in result.states[removed:]), \
        "the old istiod was there at the start and, once deleted, never came back"
    step_finished = result.steps_finished[f"{PROFILES[0]}/pipeline-x-train-1"]
    assert step_finished < gone["t"], "the old istiod went before the pipeline step finished"
    job_pod = read(env, "pods", PROFILES[0], label_selector="job-name=train")["items"][0]
    finished_at = job_pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    assert datetime.fromisoformat(finished_at.replace("Z", "+00:00")).timestamp() <= gone["wall"], \
        "the old istiod went before the Job's pod finished"


def test_old_and_new_sidecars_complete_an_mtls_handshake(migration, tmp_path):
    """With istiod's self-signed CA (copied, not re-made): a certificate the old istiod issued and one the new istiod
    issued complete an mTLS handshake both ways, each side trusting only the root its own istiod handed it; a leaf
    under another root is refused. (With a plugged-in CA: tests/integration/test_live_proxies.py.)"""
    cluster = migration[0].cluster
    old, _ = old_and_new_shake_hands(proxy_events.read(cluster.proxy_events), cluster.dir / "proxies")
    stranger = different_root_leaf(tmp_path, f"spiffe://cluster.local/ns/{PROFILES[0]}/sa/default")
    with pytest.raises(ssl.SSLError):
        handshake(old[0], stranger)


def test_the_ca_key_is_not_readable_from_the_state(migration):
    """The copied CA Secret's private key is in the state only encrypted with the cluster's generated passphrase."""
    workspace = migration[0]
    key = read(workspace.env, "secrets", "istio-system", "istio-ca-secret")["data"]["ca-key.pem"]
    assert key not in workspace.state_file("migrated").read_text()
    wrong = dict(workspace.env, PULUMI_CONFIG_PASSPHRASE="not-the-passphrase")
    wrong.pop("PULUMI_CONFIG_PASSPHRASE_FILE")
    exported = workspace.pulumi("stack", "export", "--stack", "migrated", "--show-secrets", env=wrong, check=False)
    assert exported.returncode != 0 and key not in exported.stdout
    assert key in workspace.pulumi("stack", "export", "--stack", "migrated", "--show-secrets").stdout


def test_guard_denies_deleting_a_crd(migration):
    env = migration[0].env
    denied = run(["kubectl", "delete", "crd", "virtualservices.networking.istio.io"], env, check=False)
    assert denied.returncode != 0 and "kf-istio-migrate protects" in denied.stderr
    assert run(["kubectl", "get", "crd", "virtualservices.networking.istio.io"], env).returncode == 0


def test_old_charm_purge_loses_nothing(migration):
    """The old charm's remove hook after the migration, while the stack holds the mesh."""
    old_charm_purge_loses_nothing(migration[0].env, PROFILES[0])


def test_the_old_planes_tag_service_is_gone(migration):
    """`istioctl install` made kubeflow/istiod-revision-tag-default beside the old istiod; the teardown removed it."""
    assert "istiod-revision-tag-default" in migration[2]["kubeflow services"]
    gone = run(["kubectl", "-n", "kubeflow", "get", "service", "istiod-revision-tag-default"], migration[0].env,
               check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_the_shells_cluster_is_untouched_and_the_outputs_name_the_stacks(migration, other_cluster):
    workspace, result, _ = migration
    b, b_before = other_cluster
    a_server = yaml.safe_load(workspace.cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    assert (result.outputs["cluster"], result.outputs["context"]) == (a_server, workspace.cluster.context)
    assert fingerprint(b.env()) == b_before, "cluster B changed although no stack names it"


def test_the_rollback_preview_reads_the_stacks_cluster(migration, other_cluster):
    """The legacy stack's preview, shell on B: it plans the way back from A's migrated mesh (B has no mesh)."""
    workspace, _, _ = migration
    b, b_before = other_cluster
    workspace.init("legacy", env=shell_on(workspace, b))
    preview = workspace.pulumi("preview", "--stack", "legacy", env=shell_on(workspace, b))
    assert "rollingBack" in preview.stdout and "true" in preview.stdout.split("rollingBack", 1)[1][:40], \
        preview.stdout[-3000:]
    assert fingerprint(b.env()) == b_before


def test_a_context_named_in_config_wins_over_the_shell(migration, other_cluster, tmp_path):
    """One kubeconfig holding both clusters, current-context B; the stack names only A's context. A context that
    does not exist is refused, naming it."""
    workspace, _, _ = migration
    b, b_before = other_cluster
    merged = tmp_path / "both.kubeconfig"
    merged.write_text(run(["kubectl", "config", "view", "--flatten"], dict(
        workspace.env, KUBECONFIG=f"{b.kubeconfig}:{workspace.cluster.kubeconfig}")).stdout)
    config = yaml.safe_load((workspace.dir / "Pulumi.migrated.yaml").read_text())
    config["config"]["kubernetes:kubeconfig"] = str(merged)
    config["config"]["kubernetes:context"] = workspace.cluster.context
    config_file = tmp_path / "Pulumi.migrated.yaml"
    config_file.write_text(yaml.safe_dump(config))
    workspace.pulumi("preview", "--stack", "migrated", "--config-file", str(config_file), "--expect-no-changes",
                     env=shell_on(workspace, b))
    config["config"]["kubernetes:context"] = "kfistio-nowhere"
    config_file.write_text(yaml.safe_dump(config))
    refused = workspace.pulumi("preview", "--stack", "migrated", "--config-file", str(config_file), check=False)
    assert refused.returncode != 0 and "kubernetes:context = 'kfistio-nowhere' is not a context" in refused.stdout
    assert fingerprint(b.env()) == b_before


def test_juju_hand_over(migration):
    """The runbook's hand-over (step 6) with the charms' hooks emulated from their code (demo.charm_hooks; Juju
    cannot run here): remove the istio-pilot/istio-gateway relation, then the hooks that keep firing on a live model
    (the gateway's config-changed, istio-pilot's reconcile). Ingress objects, every VirtualService and the auth
    EnvoyFilter intact (same UID and spec), one injector per namespace, the gateway still on the new istiod."""
    env = migration[0].env
    model = charm_hooks.JujuModel(env, SIZE.gateway_charm, fixture.proxy_image_of(env))
    ingress, gateway = ingress_objects(env), gateway_objects(env)
    assert {"Gateway/kubeflow-gateway", "EnvoyFilter/istio-pilot-authn-filter", "VirtualService/jupyter-ui"} <= set(ingress)
    assert model.run("juju remove-relation istio-pilot istio-ingressgateway") is None, "start stops at Blocked"
    assert model.run("juju config istio-ingressgateway replicas=2") is None
    model.run("juju config istio-pilot default-gateway=kubeflow-gateway")
    assert ingress_objects(env) == ingress
    after = gateway_objects(env)
    assert {k: o["metadata"]["uid"] for k, o in after.items()} == {k: o["metadata"]["uid"] for k, o in gateway.items()}
    assert gateway_istiod(env) == NEW_ISTIOD
    one_injector_now(migration[0], PROFILES)


def test_a_namespace_moved_in_one_write_is_one_state_with_one_injector(migration):
    """A profile namespace moved in one label write from the default injection path to the revision's injector and
    back, while the history is followed: each write is one state, in which the namespace has exactly one injector,
    now the other one, whatever the speed of this machine (a sampler that asked the apiserver one list per selector
    could count a write that landed between two lists under both injectors)."""
    workspace, ns = migration[0], PROFILES[0]
    history = InjectorHistory(str(workspace.cluster.kubeconfig), PROFILES)
    history.start()
    try:
        run(["kubectl", "label", "namespace", ns, "istio-injection-", "istio.io/rev=kf-1-30"], workspace.env)
    finally:
        run(["kubectl", "label", "namespace", ns, "istio.io/rev-", "istio-injection=enabled"], workspace.env)
        states = history.stop()
    one_injector_throughout(states)
    relabels = [s for s in states if s["change"] == f"Namespace {ns} MODIFIED"]
    assert len(relabels) == 2, [s["change"] for s in states]
    configurations = [[hook.split("/")[0] for hook in s["injected_by"][ns]] for s in (states[0], *relabels)]
    assert configurations == [[DEFAULT_INJECTOR], ["istio-sidecar-injector-kf-1-30"], [DEFAULT_INJECTOR]]


def test_the_charm_gateway_keeps_every_field_the_charm_set(migration):
    """Adopted without rewriting: the gateway Deployment and Services are the charm's manifest, field for field,
    except the istiod address (CA_ADDR, PROXY_CONFIG), the guard's label and the purge label off its pods."""
    env = migration[0].env
    rendered = {f"{o['kind']}/{o['metadata']['name']}": o
                for o in charm_hooks.gateway_manifest(SIZE.gateway_charm, fixture.proxy_image_of(env))}
    live = gateway_objects(env)
    deployment = live["Deployment/istio-ingressgateway-workload"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    charm = rendered["Deployment/istio-ingressgateway-workload"]["spec"]["template"]["spec"]["containers"][0]
    names = [e["name"] for e in container["env"]]
    assert names == [e["name"] for e in charm["env"]] + ["PROXY_CONFIG"], "the charm's env, in its order"
    assert {e["name"]: e.get("value") for e in container["env"]}["PILOT_CERT_PROVIDER"] == "istiod.kubeflow.svc"
    assert container["ports"] == charm["ports"] and container["image"] == charm["image"]
    assert "operator.istio.io/component" not in deployment["spec"]["template"]["metadata"]["labels"]
    for name in ("istio-ingressgateway-workload", "istio-gateway-metrics"):
        service = live[f"Service/{name}"]["spec"]
        want = rendered[f"Service/{name}"]["spec"]
        assert (service["selector"], service["type"]) == (want["selector"], want["type"])
        assert [(p["name"], p["port"], p["targetPort"]) for p in service["ports"]] == \
               [(p["name"], p["port"], p["targetPort"]) for p in want["ports"]]


HELM_RELEASES = {"base": "istio-base", "istiod": "istiod"}


def helm_on(workspace, *args: str, check: bool = True):
    """The pinned Helm CLI on the workspace's cluster, in the workspace's directory."""
    return helm(workspace.env, workspace.dir / "helm", *args, check=check, cwd=workspace.dir)


def mesh_pods(env: dict[str, str]) -> dict[str, str]:
    """namespace/name -> uid of every pod in the mesh (the control plane, the gateway, the profiles)."""
    return {f"{ns}/{p['metadata']['name']}": p["metadata"]["uid"] for ns in ("istio-system", "kubeflow", *PROFILES)
            for p in read(env, "pods", ns)["items"] if not p["metadata"].get("deletionTimestamp")}


PLANE_RESOURCES = ("deployments", "services", "configmaps", "serviceaccounts", "roles", "rolebindings",
                   "horizontalpodautoscalers", "secrets")
CLUSTER_RESOURCES = ("customresourcedefinitions", "mutatingwebhookconfigurations", "validatingwebhookconfigurations",
                     "clusterroles", "clusterrolebindings")


def plane_uids(env: dict[str, str]) -> dict[str, str]:
    """kind/name -> uid of the moved plane's objects (but Helm's own release records) and of the cluster-scoped
    Istio ones."""
    found = {f"{o['kind']}/{o['metadata']['name']}": o["metadata"]["uid"]
             for resource in PLANE_RESOURCES for o in read(env, resource, "istio-system")["items"]
             if (o["metadata"].get("labels") or {}).get("owner") != "helm"}
    return found | {f"{o['kind']}/{o['metadata']['name']}": o["metadata"]["uid"]
                    for resource in CLUSTER_RESOURCES for o in read(env, resource)["items"]
                    if "istio" in o["metadata"]["name"]}


@pytest.fixture(scope="module")
def handed_to_helm(migration):
    """handOver=helm and `pulumi up` (istiod rolls once, to the chart's pod template), `pulumi destroy`, then the
    stack's own helmCommands (`helm upgrade --install` of Istio's base and istiod charts, from the pinned Istio
    module) while the injector history is followed."""
    workspace = migration[0]
    env = workspace.env
    moved = {"uids": plane_uids(env), "mesh": snapshot(env)}
    workspace.set_config("migrated", "kf-istio-migrate:handOver", "helm")
    with followed(workspace, PROFILES) as hand_over_states:
        workspace.pulumi("up", "--stack", "migrated", "--yes")
    outputs = workspace.outputs("migrated")
    (workspace.dir / "istio-values.yaml").write_text(outputs["helmValues"])
    workspace.pulumi("destroy", "--stack", "migrated", "--yes")
    released = {"uids": plane_uids(env), "held": state_urns(workspace, "migrated"), "pods": mesh_pods(env),
                "mesh": snapshot(env),
                "generation": read(env, "deployments", "istio-system", "istiod-kf-1-30")["metadata"]["generation"]}
    # The runbook's check before the install: the charts, applied server-side as a dry run, change nothing.
    rendered = workspace.dir / "charts-rendered.yaml"
    rendered.write_text("".join(helm_on(workspace, "template", release, str(istio_charts() / chart), "--namespace",
                                        "istio-system", "--values", "istio-values.yaml").stdout
                                for chart, release in HELM_RELEASES.items()))
    diff = run(["kubectl", "diff", "--server-side", "-f", str(rendered)], env, check=False)
    with followed(workspace, PROFILES) as states:
        installs = [helm_on(workspace, *shlex.split(command.replace("<charts>", str(istio_charts())))[1:], "--wait",
                            check=False) for command in outputs["helmCommands"] if command.startswith("helm ")]
    return {"outputs": outputs, "moved": moved, "released": released, "diff": diff, "installs": installs,
            "states": states, "hand_over_states": hand_over_states}


def test_the_hand_over_to_helm_lets_go_and_every_object_keeps_its_uid(migration, handed_to_helm):
    """Every object keeps its UID but the default injector, renamed to the default tag's name in istio-system (a
    copy created, then the former deleted: the only states with two injectors, both calling the new istiod)."""
    released, moved = handed_to_helm["released"], handed_to_helm["moved"]
    assert released["held"] == [], "the destroyed stack still holds resources"
    renamed = f"MutatingWebhookConfiguration/{DEFAULT_TAG_INJECTOR}"
    former = f"MutatingWebhookConfiguration/{DEFAULT_INJECTOR}"
    assert {k: v for k, v in released["uids"].items() if k != renamed} == \
           {k: v for k, v in moved["uids"].items() if k != former}
    assert renamed in released["uids"] and former not in released["uids"]
    pair, _ = one_injector_but_the_rename(handed_to_helm["hand_over_states"], DEFAULT_TAG_INJECTOR, DEFAULT_INJECTOR)
    assert pair, "the rename went through no state with both names"
    nothing_lost(migration[0].env, moved["mesh"])


def test_the_charts_applied_as_a_dry_run_change_nothing(handed_to_helm):
    """`kubectl diff --server-side` of both charts' render over the released plane (docs/runbook.md, step 8b)."""
    diff = handed_to_helm["diff"]
    assert diff.returncode == 0 and diff.stdout == "", diff.stdout[-3000:] + diff.stderr[-3000:]


def test_helm_adopts_the_plane_and_restarts_nothing(migration, handed_to_helm):
    """The real `helm upgrade --install` of both charts over the live plane: no pod restarted or replaced, istiod's
    Deployment unchanged, no CR or CRD lost, one injector per profile namespace in every state, both releases
    deployed."""
    env, released = migration[0].env, handed_to_helm["released"]
    for install in handed_to_helm["installs"]:
        assert install.returncode == 0, install.stdout + install.stderr
    assert mesh_pods(env) == released["pods"], "a pod was restarted or replaced by the install"
    assert read(env, "deployments", "istio-system", "istiod-kf-1-30")["metadata"]["generation"] == \
        released["generation"], "istiod's Deployment changed"
    assert plane_uids(env) == released["uids"]
    nothing_lost(env, released["mesh"])
    one_injector_throughout(handed_to_helm["states"])
    listed = json.loads(helm_on(migration[0], "list", "--namespace", "istio-system", "--output", "json").stdout)
    assert {(r["name"], r["chart"].rsplit("-", 1)[0], r["status"]) for r in listed} == \
           {(release, chart, "deployed") for chart, release in HELM_RELEASES.items()}


def test_a_later_helm_upgrade_with_a_changed_value_works(migration, handed_to_helm):
    """Helm owns what it renders: a changed value is applied with no conflict with the stack or istioctl."""
    workspace, env = migration[0], migration[0].env
    helm_on(workspace, "upgrade", HELM_RELEASES["istiod"], str(istio_charts() / "istiod"), "--namespace",
            "istio-system", "--values", "istio-values.yaml", "--set", "meshConfig.accessLogEncoding=JSON", "--wait")
    mesh = yaml.safe_load(read(env, "configmaps", "istio-system", "istio-kf-1-30")["data"]["mesh"])
    assert mesh["accessLogEncoding"] == "JSON"
    status = json.loads(helm_on(workspace, "status", HELM_RELEASES["istiod"], "--namespace", "istio-system",
                                "--output", "json").stdout)
    assert (status["version"], status["info"]["status"]) == (2, "deployed")


def test_the_base_charts_default_revision_moves_the_default_validator_in_place(migration, handed_to_helm):
    """The last step of Istio's Helm canary upgrade, `helm upgrade istio-base --set defaultRevision=<revision>`,
    with a second revision installed beside the moved one (`helm install istiod-canary --set revision=canary`):
    the base release owns the default validator, so it moves to the canary's istiod and back in place (the same
    UID), a valid Istio CR is accepted and an invalid one refused each time, and every profile namespace meets one
    injector in every state."""
    workspace, env = migration[0], migration[0].env
    charts, base = istio_charts(), HELM_RELEASES["base"]
    uid = read(env, "validatingwebhookconfigurations", name="istiod-default-validator")["metadata"]["uid"]
    with followed(workspace, PROFILES) as states:
        helm_on(workspace, "install", "istiod-canary", str(charts / "istiod"), "--namespace", "istio-system",
                "--values", "istio-values.yaml", "--set", "revision=canary", "--wait")
        for revision in ("canary", "kf-1-30"):
            helm_on(workspace, "upgrade", base, str(charts / "base"), "--namespace", "istio-system", "--values",
                    "istio-values.yaml", "--set", f"defaultRevision={revision}")
            validator = read(env, "validatingwebhookconfigurations", name="istiod-default-validator")
            assert validator["metadata"]["uid"] == uid
            assert [h["clientConfig"]["service"]["name"] for h in validator["webhooks"]] == [f"istiod-{revision}"]
            a_live_validator_judges_istio_writes(env, PROFILES[0])
        helm_on(workspace, "uninstall", "istiod-canary", "--namespace", "istio-system", "--wait")
    one_injector_throughout(states)
    new_pods_get(env, PROFILES[0], NEW_ISTIOD)


def test_after_the_hand_over_the_old_charms_purge_is_still_refused(migration, handed_to_helm):
    """Handed over to Helm, the guard still refuses the old charm's remove hook (it acts as a service account of the
    kubeflow model), and nothing is lost."""
    old_charm_purge_loses_nothing(migration[0].env, PROFILES[0])


def test_the_next_owner_deletes_the_plane_the_charm_may_not(migration, handed_to_helm):
    """Handed over, the guard is aimed at the kubeflow model's charms: the next owner (the cluster's admin here) may
    delete the moved plane's objects, as `helm uninstall` or `istioctl uninstall --revision` of a retired revision
    do, but the istio-pilot charm's account may not (both as server-side dry runs, so the mesh stays); an Istio CRD,
    the namespace and the root's Secret stay refused to everyone."""
    env = migration[0].env
    charm = charm_hooks.as_application(env, charm_hooks.PILOT_APP)
    plane = [["-n", "istio-system", "deployment", "istiod-kf-1-30"],
             ["-n", "istio-system", "service", "istiod-kf-1-30"], ["mutatingwebhookconfiguration", DEFAULT_TAG_INJECTOR],
             ["validatingwebhookconfiguration", "istiod-default-validator"]]
    kept = [["crd", "virtualservices.networking.istio.io"], ["namespace", "istio-system"],
            ["-n", "istio-system", "secret", "istio-ca-secret"]]
    for target in plane + kept:
        for who, identity in (("the admin", env), ("the charm", charm)):
            attempt = run(["kubectl", "delete", *target, "--dry-run=server"], identity, check=False)
            allowed = who == "the admin" and target in plane
            assert (attempt.returncode == 0) == allowed, (who, target, attempt.stderr)
            assert allowed or "kf-istio-migrate protects" in attempt.stderr, (who, target, attempt.stderr)


def test_the_charts_tag_template_sets_the_default_tag_in_place(migration, handed_to_helm):
    """After the hand-over to Helm, the default tag moved as Istio's Helm upgrade guide moves it (`helm template ...
    -s templates/revision-tags-mwc.yaml --set revisionTags={default} | kubectl apply -f -`) finds the renamed
    injector and updates it in place: one injector per profile namespace in every state, the same object (UID), no
    second one beside it, and new pods still injected by the new istiod. (`istioctl tag set` is the istioctl owner's
    way: tests/faults/test_guard.py, after the release.)"""
    workspace, env = migration[0], migration[0].env
    uid = read(env, "mutatingwebhookconfigurations", name=DEFAULT_TAG_INJECTOR)["metadata"]["uid"]
    with followed(workspace, PROFILES) as states:
        tags = helm_on(workspace, "template", "istiod", str(istio_charts() / "istiod"), "-s",
                       "templates/revision-tags-mwc.yaml", "--set", "revisionTags={default}", "--set",
                       "revision=kf-1-30", "--namespace", "istio-system").stdout
        run(["kubectl", "apply", "-f", "-"], env, input=tags)
    one_injector_throughout(states)
    tagged = read(env, "mutatingwebhookconfigurations", label_selector="istio.io/tag=default")["items"]
    assert [(t["metadata"]["name"], t["metadata"]["uid"]) for t in tagged] == [(DEFAULT_TAG_INJECTOR, uid)]
    new_pods_get(env, PROFILES[2], NEW_ISTIOD)


def test_istios_helm_canary_upgrade_to_the_next_minor(migration, handed_to_helm):
    """After the hand-over to Helm, Istio's "Upgrade with Helm" canary to the next minor as docs/runbook.md step 9
    gives it: the base chart upgraded (the CRDs' new schemas), istiod-<rev> installed beside the moved plane, the
    default tag moved by the chart's revision-tags template, every sidecar restarted and the gateway pointed at it,
    the old release uninstalled, the base chart's defaultRevision moved. One injector per profile namespace in every
    state, every proxy on the new revision in its istioctl's proxy-status, CRD UIDs and every CR kept, a new pod
    injected by the new revision, an Istio CR accepted and an invalid one refused; the old charm still refused."""
    workspace, env = migration[0], migration[0].env
    charts, before = istio_charts(NEXT), snapshot(env)
    with followed(workspace, PROFILES) as states:
        helm_on(workspace, "upgrade", HELM_RELEASES["base"], str(charts / "base"), "--namespace", "istio-system",
                "--values", "istio-values.yaml")
        helm_on(workspace, "install", f"istiod-{NEXT_REVISION}", str(charts / "istiod"), "--namespace",
                "istio-system", "--values", "istio-values.yaml", "--set", f"revision={NEXT_REVISION}", "--set",
                f"global.tag={NEXT}", "--wait")
        tags = helm_on(workspace, "template", "istiod", str(charts / "istiod"), "-s",
                       "templates/revision-tags-mwc.yaml", "--set", "revisionTags={default}", "--set",
                       f"revision={NEXT_REVISION}", "--namespace", "istio-system").stdout
        run(["kubectl", "apply", "-f", "-"], env, input=tags)
        restart_every_sidecar(env)
        every_proxy_on_the_next_revision(env)
        helm_on(workspace, "uninstall", HELM_RELEASES["istiod"], "--namespace", "istio-system", "--wait")
        helm_on(workspace, "upgrade", HELM_RELEASES["base"], str(charts / "base"), "--namespace", "istio-system",
                "--values", "istio-values.yaml", "--set", f"defaultRevision={NEXT_REVISION}")
    one_injector_throughout(states)
    nothing_lost(env, before)
    assert read(env, "deployments", "istio-system", label_selector="app=istiod")["items"][0]["metadata"]["name"] == \
        f"istiod-{NEXT_REVISION}"
    new_pods_get(env, PROFILES[0], NEXT_ISTIOD)
    a_live_validator_judges_istio_writes(env, PROFILES[0])
    old_charm_purge_loses_nothing(env, PROFILES[0], NEXT_REVISION)


def test_a_gitops_owner_puts_the_default_tag_in_the_istiod_release(migration, handed_to_helm):
    """The GitOps way to hold the default tag: the istiod chart's `revisionTags: [default]` on the running revision's
    release. The tag's injector already exists outside any release (the template applied above, as Istio's Helm
    guide does), so Helm must be told to take it (`--take-ownership`) and the fields other managers applied
    (`--force-conflicts`: Helm 4 applies server-side; kubectl's apply of the template and the stack wrote them),
    docs/runbook.md step 9: the release then renders it under the same name and updates it in place, the same object
    (UID), one injector per profile namespace in every state, new pods still injected by the revision it names."""
    workspace, env = migration[0], migration[0].env
    uid = read(env, "mutatingwebhookconfigurations", name=DEFAULT_TAG_INJECTOR)["metadata"]["uid"]
    with followed(workspace, PROFILES) as states:
        helm_on(workspace, "upgrade", f"istiod-{NEXT_REVISION}", str(istio_charts(NEXT) / "istiod"), "--namespace",
                "istio-system", "--reuse-values", "--set", "revisionTags={default}", "--take-ownership",
                "--force-conflicts", "--wait")
    one_injector_throughout(states)
    tagged = read(env, "mutatingwebhookconfigurations", label_selector="istio.io/tag=default")["items"]
    assert [(t["metadata"]["name"], t["metadata"]["uid"]) for t in tagged] == [(DEFAULT_TAG_INJECTOR, uid)]
    assert tagged[0]["metadata"]["annotations"]["meta.helm.sh/release-name"] == f"istiod-{NEXT_REVISION}"
    new_pods_get(env, PROFILES[1], NEXT_ISTIOD)


def test_helm_uninstall_of_the_base_release_keeps_every_crd(migration, handed_to_helm):
    """`helm uninstall` of the base release by the next owner succeeds (the guard refuses the kubeflow model's
    charms, not the owner), and the chart's keep policy keeps every CRD, so every CR; a CRD's deletion is still
    refused to anyone."""
    workspace, env = migration[0], migration[0].env
    before = snapshot(env)
    helm_on(workspace, "uninstall", HELM_RELEASES["base"], "--namespace", "istio-system")
    nothing_lost(env, before)
    refused = run(["kubectl", "delete", "crd", "virtualservices.networking.istio.io"], env, check=False)
    assert refused.returncode != 0 and "kf-istio-migrate protects" in refused.stderr, refused.stderr
    listed = json.loads(helm_on(workspace, "list", "--namespace", "istio-system", "--output", "json").stdout)
    assert [r["name"] for r in listed] == [f"istiod-{NEXT_REVISION}"]


def test_old_charm_reinstall_is_refused(migration):
    """The old istio-pilot charm's install/upgrade path after the migration and the hand-over to Helm
    (`istioctl install` with its flags, what `juju refresh` runs as `istioctl upgrade`): the guard the release kept
    refuses it, naming the migration; no istiod in kubeflow, the default injector still calls istio-system (the
    default validator went with the base release, uninstalled above), and new pods are injected by the revision the
    upgrade above moved to. Runs last: it leaves what istioctl could create (ConfigMaps, roles) in
    kubeflow."""
    env = migration[0].env
    old_charm_reinstall_is_refused(env)
    hooks = read(env, "mutatingwebhookconfigurations", name=DEFAULT_TAG_INJECTOR)["webhooks"]
    assert {h["clientConfig"]["service"]["namespace"] for h in hooks} == {"istio-system"}
    assert not [w["metadata"]["name"] for w in read(env, "mutatingwebhookconfigurations")["items"]
                if any(h["clientConfig"].get("service", {}).get("namespace") == "kubeflow" for h in w["webhooks"])]
    new_pods_get(env, PROFILES[1], NEXT_ISTIOD)
