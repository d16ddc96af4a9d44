"""R3: bad configuration and bad cluster states are refused by `pulumi up --stack migrated` with a message naming
the key or object, before anything on the cluster changes."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest
import yaml

from demo import fixture
from demo.observe import kubectl_json
from devcluster.toolchain import REPO
from tests.faults.harness import DEFAULT_INJECTOR
from tests.integration.conftest import fresh_cluster, run

SIZE = fixture.FixtureSize(profiles=2, deployments=1, pod_stage_ms=150)
# Everything a migration would touch first, by kind -> name -> resourceVersion (uid for CRDs).
WATCHED = ["namespaces", "customresourcedefinitions", "mutatingwebhookconfigurations",
           "validatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings",
           "clusterroles", "clusterrolebindings"]
NAMESPACED = ["deployments", "services", "secrets", "configmaps", "serviceaccounts", "roles", "rolebindings"]


def written_by_istiod(name: str) -> bool:
    """istiod's own bookkeeping (leader elections, IP allocation), updated whenever it likes."""
    return "leader" in name or "election" in name or name == "istio-ip-autoallocate"



def fingerprint(env) -> dict[str, dict[str, str]]:
    found = {}
    for kind in WATCHED:
        found[kind] = {i["metadata"]["name"]: i["metadata"]["resourceVersion"]
                       for i in kubectl_json(env, "get", kind)["items"]}
    for kind in NAMESPACED:
        for ns in ("kubeflow", "istio-system"):
            found[f"{kind}/{ns}"] = {i["metadata"]["name"]: i["metadata"]["resourceVersion"]
                                     for i in kubectl_json(env, "-n", ns, "get", kind)["items"]
                                     if not written_by_istiod(i["metadata"]["name"])}
    return found


@pytest.fixture(scope="module")
def mesh():
    cluster, env = fresh_cluster("r3")
    fixture.build(env, SIZE)
    run(["pulumi", "stack", "init", "migrated", "--non-interactive"], env, cwd=REPO)
    yield cluster, env
    cluster.down(purge=True)


def stray_injector(env):
    hook = kubectl_json(env, "get", "mutatingwebhookconfiguration", DEFAULT_INJECTOR)
    hook["metadata"] = {"name": "stray-injector"}
    return [hook]


def foreign_istiod(env):
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "istio-system"}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "istiod", "namespace": "istio-system",
                                                                       "labels": {"app": "istiod"}},
             "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "istiod"}},
                      "template": {"metadata": {"labels": {"app": "istiod"}},
                                   "spec": {"containers": [{"name": "discovery", "image": "pilot"}]}}}}]


def other_root(env):
    other = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nnot the mesh root\n-----END CERTIFICATE-----\n").decode()
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "istio-system"}},
            {"apiVersion": "v1", "kind": "Secret", "type": "istio.io/ca-root",
             "metadata": {"name": "istio-ca-secret", "namespace": "istio-system"},
             "data": {"ca-cert.pem": other, "ca-key.pem": other}}]


def no_injection_path(env):
    """The default injector deactivated by hand: nothing injects istio-injection=enabled namespaces."""
    return "patch", ["mutatingwebhookconfiguration", DEFAULT_INJECTOR, "--type=json", "-p", json.dumps(
        [{"op": "replace", "path": f"/webhooks/{i}/namespaceSelector",
          "value": {"matchLabels": {"istio.io/deactivated": "never-match"}}}
         for i in range(len(kubectl_json(env, "get", "mutatingwebhookconfiguration", DEFAULT_INJECTOR)["webhooks"]))])]


# (case, config overrides (None drops the key), cluster objects to create first, expected message)
CASES = [
    ("target equals source", {"targetNamespace": "kubeflow"}, None, "must differ from sourceNamespace"),
    ("revision default", {"revision": "default"}, None, "must not be `default`"),
    ("misspelt key", {"rolloutParalelism": "4"}, None, "rolloutParalelism = '4': is not a known key"),
    ("unsupported Istio version", {"istioVersion": "1.28.0"}, None, "istioVersion = '1.28.0': must be one of"),
    ("gateway moved", {"gatewayNamespace": "istio-system"}, None, "moving the gateway changes its identity"),
    ("parallelism zero", {"rolloutParallelism": "0"}, None, "rolloutParallelism = '0': must be a positive"),
    ("namespace not DNS-1123", {"targetNamespace": "Istio_System"}, None, "must be a DNS-1123 label"),
    ("topology missing", {"topology": None}, None, "kf-istio-migrate:topology = None: is required"),
    ("source namespace absent", {"sourceNamespace": "kubeflow-typo", "gatewayNamespace": "kubeflow-typo"}, None,
     "source namespace kubeflow-typo does not exist"),
    ("second injector", {}, stray_injector, "already matched by several injectors"),
    ("foreign istiod in target", {}, foreign_istiod, "istio-system already runs istiod Deployment(s) ['istiod']"),
    ("different root in target", {}, other_root, "holds a different root certificate"),
    ("no injector on the default path", {}, no_injection_path, "expected exactly one MutatingWebhookConfiguration"),
]


@pytest.mark.parametrize("case,overrides,setup,message", CASES, ids=[c[0] for c in CASES])
def test_refused_before_any_mutation(mesh, case, overrides, setup, message):
    cluster, env = mesh
    config = yaml.safe_load((REPO / "Pulumi.migrated.yaml").read_text())
    for key, value in overrides.items():
        config["config"].pop(f"kf-istio-migrate:{key}", None)
        if value is not None:
            config["config"][f"kf-istio-migrate:{key}"] = value
    config_file = cluster.dir / f"Pulumi.migrated.{case.replace(' ', '-')}.yaml"
    config_file.write_text(yaml.safe_dump(config))
    undo = []
    if setup:
        change = setup(env)
        if isinstance(change, tuple):  # ("patch", argv): undone by re-applying the object as it was
            undo.append(kubectl_json(env, "get", "mutatingwebhookconfiguration", DEFAULT_INJECTOR))
            run(["kubectl", *change[0:1], *change[1]], env)
        else:
            run(["kubectl", "create", "-f", "-"], env, input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                           "items": change}))
    try:
        before = fingerprint(env)
        refused = subprocess.run(["pulumi", "up", "--stack", "migrated", "--config-file", str(config_file), "--yes",
                                  "--skip-preview", "--non-interactive"], cwd=REPO, env=env, capture_output=True,
                                 text=True, timeout=600)
        output = refused.stdout + refused.stderr
        assert refused.returncode != 0, f"{case}: not refused\n{output[-3000:]}"
        assert message in output, f"{case}: refused without naming the problem ({message!r}):\n{output[-3000:]}"
        assert fingerprint(env) == before, f"{case}: the cluster changed although the update was refused"
    finally:
        if setup and undo:
            hook = undo[0]
            for field in ("resourceVersion", "managedFields", "generation", "creationTimestamp", "uid"):
                hook["metadata"].pop(field, None)
            run(["kubectl", "replace", "-f", "-"], env, input=json.dumps(hook))
        elif setup:
            for obj in reversed(change):
                ns = obj["metadata"].get("namespace")
                run(["kubectl", "delete", obj["kind"], obj["metadata"]["name"], "--wait=true",
                     *(["-n", ns] if ns else [])], env)
