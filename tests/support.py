"""What the integration and fault tiers share: the toolchain on PATH (failing with the command that builds it),
real commands, a fresh cluster with its Pulumi workspace, and the assertions every migration or recovery must meet.
The cluster and the Pulumi driver themselves are devcluster's (the demo and the bench use the same ones)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from typing import Any

import pytest
import yaml

from demo.observe import InjectorHistory, read, snapshot
from devcluster import toolchain
from devcluster.cluster import Cluster
from devcluster.workspace import Workspace
from migration import render
from migration.canary import COPY_PREFIX
from migration.workloads import proxy_address

LEGACY_ISTIOD = "istiod.kubeflow.svc:15012"
NEW_ISTIOD = "istiod-kf-1-30.istio-system.svc:15012"
DEFAULT_INJECTOR = "istio-revision-tag-default-kubeflow"
"""The injector `istioctl install` makes for the default tag: the one namespaces labelled istio-injection=enabled
call."""
DEFAULT_TAG_INJECTOR = "istio-revision-tag-default"
"""The default injector once handed over: under the default tag's name in istio-system, as Istio's tools name it."""


def require_toolchain() -> None:
    """Put the pinned toolchain first on PATH, or fail naming `make setup` (never skip)."""
    try:
        os.environ["PATH"] = os.pathsep.join([str(toolchain.bin_dir()), str(toolchain.VENV_BIN), os.environ["PATH"]])
    except toolchain.ToolchainMissing as err:
        raise pytest.UsageError(str(err)) from None


def run(argv: list[str], env: dict[str, str], *, cwd=None, check: bool = True, input: str | None = None,
        timeout: float = 900) -> subprocess.CompletedProcess:
    """Run a real command; on failure, fail the test with its output."""
    proc = subprocess.run(argv, env=env, cwd=cwd, input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} exited {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}"
                    f"\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


def helm(env: dict[str, str], home, *args: str, check: bool = True, cwd=None) -> subprocess.CompletedProcess:
    """The pinned Helm CLI (built on first use) with env (its KUBECONFIG); its cache, config and data stay under
    home, so nothing is read from or written to the user's Helm setup."""
    env = dict(env, HELM_CACHE_HOME=str(home / "cache"), HELM_CONFIG_HOME=str(home / "config"),
               HELM_DATA_HOME=str(home / "data"))
    return run([str(toolchain.binary("helm", toolset="helm")), *args], env, check=check, timeout=300, cwd=cwd)


def istio_charts(version: str | None = None):
    """The directory of Istio's base and istiod charts from the pinned Istio module (built with the helm set), or
    from the second minor's (version: ISTIO_NEXT_VERSION; built with the istio-next set)."""
    toolchain.ensure("helm")
    if version is None:
        return toolchain.share_file("charts")
    toolchain.ensure("istio-next")
    return toolchain.share_file(f"charts-{version}")


def config_file_with(workspace: Workspace, stack: str, overrides: dict[str, Any], name: str):
    """A copy of stack's config file with overrides (a key without `:` is kf-istio-migrate's; None drops the key),
    written beside the cluster as Pulumi.<stack>.<name>.yaml, for `pulumi ... --config-file`."""
    config = yaml.safe_load((workspace.dir / f"Pulumi.{stack}.yaml").read_text())
    for key, value in overrides.items():
        key = key if ":" in key else f"kf-istio-migrate:{key}"
        config["config"].pop(key, None)
        if value is not None:
            config["config"][key] = value
    path = workspace.cluster.dir / f"Pulumi.{stack}.{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def state_urns(workspace: Workspace, stack: str) -> list[str]:
    """The URNs stack's state holds (`pulumi stack export`)."""
    exported = json.loads(workspace.pulumi("stack", "export", "--stack", stack).stdout)
    return [r["urn"] for r in exported["deployment"].get("resources") or []]


def opt_in_injector(env: dict[str, str], default_injector: str) -> dict[str, Any]:
    """A second injector for pods that opt in by label (sidecar.istio.io/inject=true) in namespaces without an
    injection label: default_injector's webhook for those pods, under another name. The pods of the charm-shaped
    fixture's kubeflow-apps namespace opt in that way, so it injects them twice; preflight judges each namespace by
    its unlabelled pods and does not see it, Istio's analyzers do (IST0139)."""
    hook = read(env, "mutatingwebhookconfigurations", name=default_injector)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "opt-in-injector"},
            "webhooks": [h for h in hook["webhooks"] if h["name"].startswith("object.")]}


def poll(condition, timeout: float, what: str):
    """condition's first truthy result within timeout seconds; fails the test naming what it waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def fresh_workspace(name: str, **config: Any) -> Workspace:
    """A new embedded cluster named <name>-<pid> and its Pulumi workspace (stacks bound to its kubeconfig), the CLI
    without its debug log (no test reads it; writing it costs CPU in every command). The caller purges it
    (`with purged(...)`)."""
    return Workspace(Cluster.fresh(f"{name}-{os.getpid()}")).create(**config).without_debug_log()


@contextlib.contextmanager
def purged(workspace: Workspace):
    """The workspace's cluster is purged when the block ends, also when the block fails: a module fixture whose setup
    raises gets no teardown, and its cluster would keep running."""
    try:
        yield workspace
    finally:
        workspace.cluster.down(purge=True)


def one_injector_throughout(states: list[dict[str, Any]]) -> None:
    """Exactly one injector for a plain pod in every watched namespace, in every state of demo.observe's history."""
    counts = [c for s in states for c in s["injectors"].values()]
    wrong = [(s["change"], ns, s["injected_by"][ns]) for s in states for ns, c in s["injectors"].items() if c != 1]
    assert counts and not wrong, \
        f"injectors per profile namespace over {len(states)} states: min {min(counts, default=0)}, " \
        f"max {max(counts, default=0)}; first (after which write, namespace, injectors): {wrong[:3]}"


def by_canary(state: dict[str, Any], namespace: str) -> list[str]:
    """The canary webhooks (migration.canary's copies) a plain pod created in namespace meets in a state of
    demo.observe's history."""
    return [hook for hook in state["injected_by"][namespace] if hook.split("/", 1)[1].startswith(COPY_PREFIX)]


def one_injector_but_the_rename(states: list[dict[str, Any]], renamed: str,
                                former: str) -> tuple[list[dict[str, Any]], float]:
    """one_injector_throughout, but for the states between the default injector's copy under its new name being
    created and its former name being deleted (the hand-over's rename: two objects cannot be swapped in one write),
    in which every namespace meets exactly those two, calling one istiod. Returns those states and the seconds from
    the copy's creation to the delete, as the watch saw them."""
    def configs(state, ns):
        return sorted({hook.split("/", 1)[0] for hook in state["injected_by"][ns]})

    pair = [s for s in states if any(c == 2 for c in s["injectors"].values())]
    one_injector_throughout([s for s in states if s not in pair])
    for state in pair:
        assert all(configs(state, ns) == sorted([renamed, former]) for ns in state["injectors"]), state
        assert len(state["injector_targets"]) == 1, state["injector_targets"]
    if not pair:
        return pair, 0.0
    assert pair[0]["change"] == f"MutatingWebhookConfiguration {renamed} ADDED", pair[0]["change"]
    after = states[states.index(pair[-1]) + 1]
    assert after["change"] == f"MutatingWebhookConfiguration {former} DELETED", after["change"]
    return pair, after["t"] - pair[0]["t"]


def one_injector_now(workspace: Workspace, profiles: list[str]) -> None:
    """One injector per profile namespace in the cluster's present state."""
    history = InjectorHistory(str(workspace.cluster.kubeconfig), profiles)
    history.start()
    one_injector_throughout(history.stop())


def nothing_lost(env: dict[str, str], before: dict[str, Any]) -> None:
    """CRD UIDs unchanged, no CR lost or changed, one root of trust."""
    after = snapshot(env)
    assert after["crd_uids"] == before["crd_uids"], "a CRD was deleted and re-created"
    lost = sorted(set(before["crs"]) - set(after["crs"]))
    changed = sorted(k for k in before["crs"] if k in after["crs"] and after["crs"][k] != before["crs"][k])
    assert not lost and not changed, f"CRs lost: {lost}; changed: {changed}"
    assert len(set(after["roots"].values())) == 1, "more than one root of trust"


def rendered_crd_specs(version: str, istioctl: str) -> dict[str, str]:
    """What that version's istioctl renders for each Istio CRD's versions (schemas), canonical JSON."""
    text = subprocess.run([istioctl, "manifest", "generate", "--set", "profile=minimal"], capture_output=True,
                          text=True, check=True).stdout
    return {c["metadata"]["name"]: json.dumps(c["spec"]["versions"], sort_keys=True)
            for c in render.crds(render.parse(text))}


def live_crd_versions(env) -> dict[str, str]:
    """Each live Istio CRD's versions (schemas), canonical JSON, as rendered_crd_specs reads a render."""
    return {c["metadata"]["name"]: json.dumps(c["spec"]["versions"], sort_keys=True)
            for c in read(env, "customresourcedefinitions")["items"] if c["metadata"]["name"].endswith(".istio.io")}


def revision_of(address: str) -> str:
    """The istio.io/rev of the plane at address (the charm's is `default`, the migrated one's the configured
    revision, kf-1-30 in every test)."""
    return "default" if address == LEGACY_ISTIOD else "kf-1-30"


def every_sidecar_on(workspace: Workspace, address: str, leaving: str, stack: str) -> None:
    """live.verify (the migration's in-use gate) passes for address on exactly this workspace's cluster, by pod
    specs and live (istioctl proxy-status against both planes; the simulated proxies of restarted pods get a
    minute to connect), and by Istio's analyzers against what they said before stack moved the mesh: no running pod
    is left on leaving; and, read independently, every running pod with a proxy uses address."""
    cluster = workspace.cluster
    before = cluster.dir / f"analysis-before-{stack}.json"
    before.write_text(json.dumps(workspace.outputs(stack)["analysisBefore"]))
    verify = run([str(toolchain.VENV_BIN / "python"), "-m", "live.verify", "--kubeconfig", str(cluster.kubeconfig),
                  "--context", cluster.context, "--istiod", address, "--leaving", leaving, "--istioctl-version",
                  toolchain.pins()["ISTIO_VERSION"], "--revision", revision_of(address), "--leaving-revision",
                  revision_of(leaving), "--timeout", "60", "--analysis-before", str(before)],
                 workspace.env, cwd=toolchain.REPO, check=False)
    assert verify.returncode == 0 and "live (istioctl proxy-status)" in verify.stdout, verify.stdout + verify.stderr
    proxies = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": proxy_address(p)
               for p in read(workspace.env, "pods")["items"]
               if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")}
    elsewhere = {pod: a for pod, a in proxies.items() if a is not None and a != address}
    assert not elsewhere, f"proxies not on {address}: {elsewhere}"


def new_pods_get(env: dict[str, str], namespace: str, address: str) -> None:
    """A pod created now in namespace is injected with a sidecar on address."""
    pod = run(["kubectl", "-n", namespace, "run", f"probe-{time.time_ns()}", "--image=x", "-o", "json"], env)
    assert proxy_address(json.loads(pod.stdout)) == address
    run(["kubectl", "-n", namespace, "delete", "pod", json.loads(pod.stdout)["metadata"]["name"], "--wait=false"], env)


@contextlib.contextmanager
def followed(workspace: Workspace, profiles: list[str]):
    """The injector history of profiles while the block runs: yields the list its states fill when it ends (also
    when the block fails, so the watches never outlive it)."""
    history = InjectorHistory(str(workspace.cluster.kubeconfig), profiles)
    history.start()
    states: list[dict[str, Any]] = []
    try:
        yield states
    finally:
        states.extend(history.stop())


def up_with_history(workspace: Workspace, stack: str, profiles: list[str], *extra: str) -> list[dict[str, Any]]:
    """`pulumi up --stack STACK [extra...]` while the injector history follows profiles; returns its states."""
    with followed(workspace, profiles) as states:
        workspace.up(stack, *extra)
    return states


def roll_back_and_check(workspace: Workspace, profiles: list[str], *extra: str) -> None:
    """`pulumi up --stack legacy [extra...]` with the injector history followed, then: one injector in every state,
    nothing lost, no migrated istiod left, every sidecar and a new pod on the legacy istiod."""
    env = workspace.env
    before = snapshot(env)
    one_injector_throughout(up_with_history(workspace, "legacy", profiles, *extra))
    nothing_lost(env, before)
    assert "istiod-kf-1-30" not in {d["metadata"]["name"] for d in read(env, "deployments", "istio-system")["items"]}
    new_pods_get(env, profiles[-1], LEGACY_ISTIOD)
    every_sidecar_on(workspace, LEGACY_ISTIOD, NEW_ISTIOD, "legacy")


# Everything a migration would touch first, by kind -> name -> resourceVersion: each object's kind -> its key.
WATCHED = {"Namespace": "namespaces", "CustomResourceDefinition": "customresourcedefinitions",
           "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
           "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
           "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
           "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
           "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}
NAMESPACED = {"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets",
              "Service": "services", "Secret": "secrets", "ConfigMap": "configmaps",
              "ServiceAccount": "serviceaccounts", "Role": "roles", "RoleBinding": "rolebindings"}


def _written_by_istiod(name: str) -> bool:
    """istiod's own bookkeeping (leader elections, IP allocation), updated whenever it likes."""
    return "leader" in name or "election" in name or name == "istio-ip-autoallocate"


def _version(obj: dict) -> str:
    """What tells a change by anyone but the cluster's own controllers: the resourceVersion, except for an aggregated
    ClusterRole, whose rules the clusterrole-aggregation controller writes whenever it catches up (the API documents
    them as controller-managed, a direct change is stomped): its labels, annotations and aggregationRule instead."""
    if "aggregationRule" not in obj:
        return obj["metadata"]["resourceVersion"]
    meta = obj["metadata"]
    return json.dumps([meta.get("labels"), meta.get("annotations"), obj["aggregationRule"]], sort_keys=True)


def fingerprint(env: dict[str, str], *workload_namespaces: str) -> dict[str, dict[str, str]]:
    """kind -> name -> resourceVersion of everything a migration would touch first (in kubeflow, istio-system and
    workload_namespaces): equal fingerprints mean the cluster was not changed. One list per kind, every namespace's
    at once."""
    found: dict[str, dict[str, str]] = {key: {} for key in WATCHED.values()}
    for key in WATCHED.values():
        found[key] = {o["metadata"]["name"]: _version(o) for o in read(env, key)["items"]}
    namespaces = ("kubeflow", "istio-system", *workload_namespaces)
    found |= {f"{key}/{ns}": {} for key in NAMESPACED.values() for ns in namespaces}
    for key in NAMESPACED.values():
        for item in read(env, key)["items"]:
            ns, name = item["metadata"]["namespace"], item["metadata"]["name"]
            if ns in namespaces and not _written_by_istiod(name):
                found[f"{key}/{ns}"][name] = item["metadata"]["resourceVersion"]
    return found


GATEWAY_KINDS = ("deployments", "services", "serviceaccounts", "roles", "rolebindings", "poddisruptionbudgets")


def gateway_objects(env: dict[str, str]) -> dict[str, dict]:
    """kind/name -> object, for every object in kubeflow labelled as the istio-gateway charm labels its objects."""
    return {f"{o['kind']}/{o['metadata']['name']}": o for kind in GATEWAY_KINDS for o in read(
        env, kind, "kubeflow", label_selector="operator.istio.io/component=IngressGateways")["items"]}


def gateway_istiod(env: dict[str, str]) -> str:
    """The istiod the gateway Deployment's proxy is given (CA_ADDR)."""
    proxy = read(env, "deployments", "kubeflow", "istio-ingressgateway-workload")["spec"]["template"]["spec"][
        "containers"][0]
    return next(e["value"] for e in proxy["env"] if e["name"] == "CA_ADDR")


def ingress_objects(env: dict[str, str]) -> dict[str, tuple]:
    """kind/name -> (uid, spec) of istio-pilot's Gateway, ingress VirtualServices and auth EnvoyFilter."""
    items = [o for kind in ("gateways.networking.istio.io/v1", "virtualservices.networking.istio.io/v1",
                            "envoyfilters.networking.istio.io/v1alpha3") for o in read(env, kind, "kubeflow")["items"]]
    return {f"{o['kind']}/{o['metadata']['name']}": (o["metadata"]["uid"], o["spec"]) for o in items}
