"""R2: after a migration, every way of deleting the mesh's config, the new control plane or the gateway is denied
by the apiserver (the guard), and no CR is lost; the mesh still injects. The charms' hooks are emulated from their
code (demo.charm_hooks: Juju cannot run here)."""

from __future__ import annotations

import json
import shlex

import pytest

from demo import charm_hooks
from demo.fixture import CHARM_INSTALL, proxy_image_of
from demo.observe import read, snapshot
from migration import guard
from tests.faults.harness import DEFAULT_INJECTOR, NEW, PROFILES, legacy_mesh
from tests.next_owner import (NEXT, NEXT_ISTIOD, NEXT_REVISION, a_live_validator_judges_istio_writes,
                               every_proxy_on_the_next_revision, next_istioctl, old_charm_purge_loses_nothing,
                               old_charm_reinstall_is_refused, restart_every_sidecar)
from tests.support import (config_file_with, fingerprint, followed, gateway_istiod, gateway_objects, new_pods_get,
                           nothing_lost, one_injector_but_the_rename, one_injector_throughout, run, state_urns)

DENIED = "kf-istio-migrate protects"
ISTIOCTL_FLAGS = "istioctl-flags.json"
"""Where the release keeps `pulumi stack output istioctlFlags` before the destroy, as docs/runbook.md step 9 says."""
RENAMED = "istio-revision-tag-default"
"""The default injector's name once handed over: the default tag's in istio-system."""
# attempt -> (argv, what the refusal says; None: the command reports per object, what remains is checked)
ATTEMPTS = {
    "one CRD": (["kubectl", "delete", "crd", "virtualservices.networking.istio.io"], DENIED),
    "every Istio CRD at once": (None, DENIED),  # argv filled in from the cluster
    "the new istiod": (["kubectl", "-n", "istio-system", "delete", "deployment", "istiod-kf-1-30"], DENIED),
    "the new istiod's Service": (["kubectl", "-n", "istio-system", "delete", "service", "istiod-kf-1-30"], DENIED),
    "the copied CA": (["kubectl", "-n", "istio-system", "delete", "secret", "istio-ca-secret"], DENIED),
    "the default injector": (["kubectl", "delete", "mutatingwebhookconfiguration", DEFAULT_INJECTOR], DENIED),
    "the default validator": (["kubectl", "delete", "validatingwebhookconfiguration", "istiod-default-validator"],
                              DENIED),
    "the target namespace": (["kubectl", "delete", "namespace", "istio-system", "--wait=false"], DENIED),
    "the old charm's purge": (lambda env: charm_hooks.pilot_uninstall(env, "uninstall"), None),
    "the old charm's purge, tracks up to 1.16 (manifest generate, delete)":
        (lambda env: charm_hooks.pilot_uninstall(env, "manifest"), None),
    "the gateway charm's remove": (lambda env: charm_hooks.gateway_remove(env, "1.24", proxy_image_of(env)), DENIED),
    "the gateway charm's start while still related (old CA_ADDR, no force)":
        (lambda env: charm_hooks.gateway_start(env, "1.24", proxy_image_of(env), check=False), "conflict"),
    "the successor istio-k8s charm's install in the kubeflow model": (
        charm_hooks.successor_install, "kf-istio-migrate refuses an istiod in kubeflow"),
    "the successor istio-k8s charm's remove": (charm_hooks.successor_remove, DENIED),
    "pulumi destroy of the migrated stack": (["pulumi", "destroy", "--stack", "migrated", "--yes",
                                              "--non-interactive"], "because it is protected"),
    "the old charm's reinstall or upgrade": (lambda env: charm_hooks.pilot_istioctl(env, CHARM_INSTALL),
                                             "kf-istio-migrate refuses an istiod in kubeflow"),
    # what the rollback dry-runs after lifting the guard, until admitted: refused while the guard stands
    "the rollback's lift probe (a server-side dry run)":
        (["bash", "-c", f"echo {shlex.quote(json.dumps(guard.lift_probe('kubeflow')))} | "
                        "kubectl create -f - --dry-run=server"], "kf-istio-migrate refuses an istiod in kubeflow"),
}


@pytest.fixture(scope="module")
def migrated():
    mesh = legacy_mesh("r2")
    try:
        mesh.workspace.up("migrated")
        yield mesh
    finally:
        mesh.close()


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
def test_denied(migrated, attempt):
    env = migrated.env
    argv, refusal = ATTEMPTS[attempt]
    argv = argv or ["kubectl", "delete", "crd", *sorted(snapshot(env)["crd_uids"])]
    before, gateway = snapshot(env), gateway_state(env)
    # A refused `pulumi destroy` must not have written anything either: compared object by object.
    written = (lambda: fingerprint(env, *PROFILES)) if attempt == "pulumi destroy of the migrated stack" else dict
    resource_versions = written()
    result = argv(env) if callable(argv) else run(argv, env, cwd=migrated.workspace.dir, check=False, timeout=300)
    if refusal:
        output = result.stdout + result.stderr
        assert result.returncode != 0 and refusal in output, output[-3000:]
    after = snapshot(env)
    assert after["crd_uids"] == before["crd_uids"] and after["crs"] == before["crs"]
    assert written() == resource_versions
    assert read(env, "deployments", "istio-system", "istiod-kf-1-30")["metadata"].get("deletionTimestamp") is None
    assert read(env, "namespaces", name="istio-system")["status"]["phase"] == "Active"
    assert not read(env, "deployments", "kubeflow", label_selector="app=istiod")["items"]
    tagged = read(env, "mutatingwebhookconfigurations", label_selector="istio.io/tag=default")["items"]
    assert [{h["clientConfig"]["service"]["namespace"] for h in t["webhooks"]} for t in tagged] == [{"istio-system"}]
    assert not [w["metadata"]["name"] for w in read(env, "mutatingwebhookconfigurations")["items"]
                if any(h["clientConfig"].get("service", {}).get("namespace") == "kubeflow" for h in w["webhooks"])], \
        "a second injector, calling kubeflow"
    new_pods_get(env, PROFILES[0], NEW)  # at once: no attempt leaves even a moment without a serving istiod
    assert gateway_state(env) == gateway, "the gateway's objects, pods and istiod address are unchanged"


def gateway_state(env: dict[str, str]) -> dict:
    """UIDs of the gateway charm's objects and pods (the pods carry no label purge selects), and the istiod its
    proxy is given."""
    objects = list(gateway_objects(env).values())
    objects += [p for p in read(env, "pods", "kubeflow", label_selector="app=istio-ingressgateway")["items"]
                if not p["metadata"].get("deletionTimestamp")]  # a pod the last rollout is still stopping
    return {"uids": sorted(f"{o['kind']}/{o['metadata']['name']}/{o['metadata']['uid']}" for o in objects),
            "CA_ADDR": gateway_istiod(env)}


def test_after_every_attempt_nothing_lost_and_injection_works(migrated):
    """Whatever the attempts ran before (any order, or none): nothing lost since the migrated mesh was built."""
    nothing_lost(migrated.env, migrated.before)
    new_pods_get(migrated.env, PROFILES[0], NEW)


def test_a_version_change_of_the_moved_plane_is_refused_before_any_change(migrated):
    """`pulumi config set targetVersion <next minor>` on the migrated stack once its move is done, then `pulumi up`:
    the program would replace istiod in place under the running sidecars, so it refuses, naming the version the
    plane runs, and nothing on the cluster changes (an upgrade needs a new revision beside it:
    tests/integration/test_upgrade.py)."""
    env, workspace = migrated.env, migrated.workspace
    next_istioctl()
    config_file = config_file_with(workspace, "migrated", {"targetVersion": NEXT}, "next-minor")
    before = fingerprint(env, *PROFILES)
    refused = workspace.pulumi("up", "--stack", "migrated", "--config-file", str(config_file), "--yes",
                               "--skip-preview", check=False)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "already runs 1.30-dev: changing the version of a moved plane" in output, \
        output[-3000:]
    assert fingerprint(env, *PROFILES) == before


def test_release_then_destroy_leaves_every_object_as_it_is(migrated):
    """handOver=release, `pulumi up`, then `pulumi destroy`: the stack lets go and ends empty. The cluster keeps
    every object exactly as it was (resourceVersions, CRD UIDs, every CR) but three writes: the guard's policy, from
    then on aimed at the kubeflow model's charms, and the default injector's rename to the default tag's name in
    istio-system (its copy created, the former deleted; the states in between, measured, meet only those two calling
    the new istiod). The stack is refresh-clean before the destroy; the guard, kept by default, still refuses a
    CRD's deletion. Runs last: the stack is gone afterwards."""
    workspace, env = migrated.workspace, migrated.env
    before, mesh = fingerprint(env, *PROFILES), snapshot(env)
    former = read(env, "mutatingwebhookconfigurations", name=DEFAULT_INJECTOR)
    workspace.set_config("migrated", "kf-istio-migrate:handOver", "release")
    with followed(workspace, PROFILES) as states:
        workspace.pulumi("up", "--stack", "migrated", "--yes")
    pair, seconds = one_injector_but_the_rename(states, RENAMED, DEFAULT_INJECTOR)
    assert pair, "the rename went through no state with both names"
    print(f"the rename: {len(pair)} state(s) with both injectors, {seconds:.3f} s from the copy to the delete")
    outputs = workspace.outputs("migrated")
    assert outputs["handOver"].startswith("released: `pulumi destroy` empties this stack")
    (workspace.dir / ISTIOCTL_FLAGS).write_text(json.dumps(outputs["istioctlFlags"]))  # as the runbook keeps them
    workspace.pulumi("refresh", "--stack", "migrated", "--yes")
    workspace.pulumi("preview", "--stack", "migrated", "--expect-no-changes", "--diff")
    workspace.pulumi("destroy", "--stack", "migrated", "--yes")
    after = fingerprint(env, *PROFILES)
    policies, injectors = "validatingadmissionpolicies", "mutatingwebhookconfigurations"
    rest = lambda found: {k: v for k, v in found.items() if k not in (policies, injectors)}  # noqa: E731
    assert rest(after) == rest(before)
    assert {k: v for k, v in after[policies].items() if k != guard.POLICY} == \
           {k: v for k, v in before[policies].items() if k != guard.POLICY}
    assert set(after[injectors]) == set(before[injectors]) - {DEFAULT_INJECTOR} | {RENAMED}
    renamed = read(env, injectors, name=RENAMED)
    assert [{**h, "clientConfig": {**h["clientConfig"], "caBundle": None}} for h in renamed["webhooks"]] == \
           [{**h, "clientConfig": {**h["clientConfig"], "caBundle": None}} for h in former["webhooks"]]
    assert renamed["metadata"]["labels"]["istio.io/tag"] == "default"
    groups = read(env, policies, name=guard.POLICY)["spec"]["validations"][0]["expression"]
    assert f"'{guard.model_service_accounts('kubeflow')}' in request.userInfo.groups" in groups
    nothing_lost(env, mesh)
    assert state_urns(workspace, "migrated") == [], "the released stack still holds resources"
    workspace.pulumi("stack", "rm", "migrated", "--yes")
    refused = run(["kubectl", "delete", "crd", "virtualservices.networking.istio.io"], env, check=False)
    assert refused.returncode != 0 and DENIED in refused.stderr, refused.stderr
    nothing_lost(env, mesh)
    new_pods_get(env, PROFILES[0], NEW)


def test_istioctl_tag_set_updates_the_default_tag_in_place(migrated):
    """After the release, the istioctl owner's `istioctl tag set default --revision kf-1-30 --overwrite` finds the
    renamed injector and the default validator and updates both in place: the same objects (UIDs), one injector per
    profile namespace in every state, no second tag injector, new pods injected by the new istiod."""
    env, workspace = migrated.env, migrated.workspace
    defaults = (("mutatingwebhookconfigurations", RENAMED),
                ("validatingwebhookconfigurations", "istiod-default-validator"))
    uids = {(r, n): read(env, r, name=n)["metadata"]["uid"] for r, n in defaults}
    with followed(workspace, PROFILES) as states:
        run(["istioctl", "tag", "set", "default", "--revision", "kf-1-30", "--overwrite"], env)
    one_injector_throughout(states)
    assert {(r, n): read(env, r, name=n)["metadata"]["uid"] for r, n in uids} == uids
    tagged = read(env, "mutatingwebhookconfigurations", label_selector="istio.io/tag=default")["items"]
    assert [t["metadata"]["name"] for t in tagged] == [RENAMED]
    new_pods_get(env, PROFILES[0], NEW)


def test_two_identical_injectors_inject_one_sidecar(migrated):
    """What a pod created in the rename's moment gets: with a second copy of the default injector beside it (both
    calling the new istiod), a new pod is injected exactly as with one, one istio-proxy, the same containers, init
    containers, volumes and injection status: Istio's injection removes what it injected before injecting again."""
    env, namespace = migrated.env, PROFILES[1]
    injector = read(env, "mutatingwebhookconfigurations", label_selector="istio.io/tag=default")["items"][0]

    def pod(name: str) -> dict:
        run(["kubectl", "-n", namespace, "run", name, "--image=x", "--restart=Never"], env)
        created = read(env, "pods", namespace, name)
        run(["kubectl", "-n", namespace, "delete", "pod", name, "--wait=false"], env)
        return created

    once = pod("injected-once")
    copy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "zz-second-default-injector"}, "webhooks": injector["webhooks"]}
    run(["kubectl", "create", "-f", "-"], env, input=json.dumps(copy))
    try:
        twice = pod("injected-twice")
    finally:
        run(["kubectl", "delete", "mutatingwebhookconfiguration", "zz-second-default-injector"], env)

    def injected(p: dict) -> dict:
        """What injection made of the pod (kubectl run names the app container after the pod, and the API server
        gives each pod its own token volume)."""
        spec, app = p["spec"], p["metadata"]["name"]
        return {"containers": [("app" if c["name"] == app else c["name"], c["image"], c.get("args"))
                               for c in spec["containers"]],
                "initContainers": [(c["name"], c.get("args")) for c in spec.get("initContainers") or []],
                "volumes": sorted(v["name"] for v in spec.get("volumes") or []
                                  if not v["name"].startswith("kube-api-access-")),
                "status": json.loads(p["metadata"]["annotations"]["sidecar.istio.io/status"])}

    assert [c["name"] for c in twice["spec"]["containers"]].count("istio-proxy") == 1
    assert injected(twice) == injected(once)


@pytest.mark.parametrize("attempt", [a for a in ATTEMPTS if a.startswith(("the old charm", "the gateway charm's remove",
                                                                           "the successor"))])
def test_released_the_guard_still_refuses_the_charms(migrated, attempt):
    """After the release (the test above), every charm hook of the kubeflow model is refused as before the
    hand-over: the guard refuses their service accounts, whatever the next owner may delete."""
    test_denied(migrated, attempt)


def on_the_next_revision(flags: list[str]) -> list[str]:
    """The moved plane's istioctl flags with the next revision and the next version's image tag, as the runbook
    tells the next owner to change them."""
    changed = {"revision": NEXT_REVISION, "values.global.tag": NEXT}
    return [f"{key}={changed[key]}" if (key := flag.split("=", 1)[0]) in changed else flag for flag in flags]


def test_istioctl_canary_upgrade_to_the_next_minor(migrated):
    """After the release, Istio's "Canary upgrade" with istioctl as docs/runbook.md step 9 gives it: the next minor's
    istioctl installs revision kf-1-31 with the flags the stack put out (its revision and tag changed), `istioctl
    tag set default` moves the default injector and validator to it, every sidecar restarts and the gateway is
    pointed at it, every proxy is listed by its istiod, and `istioctl uninstall --revision kf-1-30` removes the moved
    plane (the guard refuses the old charms, not the owner). One injector per profile namespace in every state, CRD
    UIDs and every CR kept, a new pod injected by the new revision, an invalid Istio CR refused and a valid one
    accepted, the old charm's purge and reinstall still refused. Runs last: the moved plane is gone afterwards."""
    env, workspace, istioctl = migrated.env, migrated.workspace, next_istioctl()
    flags = on_the_next_revision(json.loads((workspace.dir / ISTIOCTL_FLAGS).read_text()))
    assert f"revision={NEXT_REVISION}" in flags, flags
    before = snapshot(env)
    with followed(workspace, PROFILES) as states:
        run([istioctl, "x", "precheck"], env)
        run([istioctl, "install", *flags, "-y"], env)
        run([istioctl, "tag", "set", "default", "--revision", NEXT_REVISION, "--overwrite"], env)
        restart_every_sidecar(env)
        every_proxy_on_the_next_revision(env)
        run([istioctl, "uninstall", "--revision", "kf-1-30", "-y"], env)
        # istioctl deletes in the foreground: the Deployment goes once its ReplicaSets and pods have.
        run(["kubectl", "-n", "istio-system", "wait", "--for=delete", "deployment/istiod-kf-1-30", "--timeout=120s"],
            env)
    one_injector_throughout(states)
    nothing_lost(env, before)
    planes = read(env, "deployments", "istio-system", label_selector="app=istiod")["items"]
    assert [d["metadata"]["name"] for d in planes] == [f"istiod-{NEXT_REVISION}"]
    tagged = read(env, "mutatingwebhookconfigurations", label_selector="istio.io/tag=default")["items"]
    assert [(t["metadata"]["name"], t["metadata"]["labels"]["istio.io/rev"]) for t in tagged] == \
           [(RENAMED, NEXT_REVISION)]
    new_pods_get(env, PROFILES[0], NEXT_ISTIOD)
    a_live_validator_judges_istio_writes(env, PROFILES[0])
    old_charm_purge_loses_nothing(env, PROFILES[1], NEXT_REVISION)
    old_charm_reinstall_is_refused(env)
