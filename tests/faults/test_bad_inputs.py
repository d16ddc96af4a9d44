"""R3: bad configuration and bad cluster states are refused by `pulumi up --stack migrated` with a message naming
the key or object, before anything on the cluster changes. Every rule of the configuration alone (a value's form,
two keys that contradict each other) is tested in tests/unit/test_config.py and tests/unit/test_canary.py, and the
program refusing before it declares anything under Pulumi's mocks; here one of them (a misspelt key) stands for their
path through the real CLI, beside every rule that reads the cluster, the toolchain or the versions."""

from __future__ import annotations

import base64
import json

import pytest

from demo import fixture
from demo.observe import read
from devcluster import toolchain
from tests.faults.harness import DEFAULT_INJECTOR
from tests.support import config_file_with, fingerprint, fresh_workspace, opt_in_injector, purged, run

SIZE = fixture.FixtureSize(profiles=2, deployments=1, pod_stage_ms=150)  # with the Kubeflow shape
PROFILES = fixture.profile_namespaces(SIZE)


@pytest.fixture(scope="module")
def mesh():
    with purged(fresh_workspace("r3")) as workspace:
        fixture.build(workspace.env, SIZE)
        workspace.init("migrated")
        yield workspace


def stray_injector(env):
    hook = read(env, "mutatingwebhookconfigurations", name=DEFAULT_INJECTOR)
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
         for i in range(len(read(env, "mutatingwebhookconfigurations", name=DEFAULT_INJECTOR)["webhooks"]))])]


NEXT_MINOR_ISTIOCTL = "istioctl-1.31-dev"  # a real istioctl of another version: the toolchain's second minor

# (case, config overrides (None drops the key), cluster objects to create first, expected message)
CASES = [
    ("misspelt key", {"rolloutParalelism": "4"}, None, "rolloutParalelism = '4': is not a known key"),
    ("jump beyond Istio's rule", {"targetVersion": "1.33-dev"}, None,
     "targetVersion 1.33-dev is outside what a move from the live 1.30-dev may do: allowed 1.30 to 1.32"),
    ("downgrade", {"targetVersion": "1.29-dev"}, None, "outside what a move from the live 1.30-dev may do"),
    ("development build without opt-in", {"allowDevelopmentBuilds": "false"}, None,
     "development build of Istio (legacy 1.30-dev): Istio does not support upgrading to or from one"),
    ("no istioctl for the target version", {"targetVersion": "1.32-dev"}, None,
     "no istioctl 1.32-dev found (this plane runs Istio 1.32-dev): install istioctl 1.32-dev"),
    ("the live version's istioctl missing", {"istioctl": {"1.30-dev": "/opt/istio-1.30/bin/istioctl"}}, None,
     "/opt/istio-1.30/bin/istioctl does not run as istioctl"),
    ("istioctl of another version than its config says", {"istioctl": NEXT_MINOR_ISTIOCTL}, None,
     "kf-istio-migrate:istioctl istioctl-1.31-dev is istioctl 1.31-dev, but this plane runs Istio 1.30-dev"),
    ("context that does not exist", {"kubernetes:context": "no-such-context"}, None,
     "kubernetes:context = 'no-such-context' is not a context in kubernetes:kubeconfig"),
    ("kubeconfig that does not exist", {"kubernetes:kubeconfig": "/nonexistent/kubeconfig"}, None,
     "kubernetes:kubeconfig = '/nonexistent/kubeconfig': no such file"),
    ("source namespace absent", {"sourceNamespace": "kubeflow-typo", "gatewayNamespace": "kubeflow-typo"}, None,
     "source namespace kubeflow-typo does not exist"),
    ("second injector", {}, stray_injector, "already matched by several injectors"),
    ("foreign istiod in target", {}, foreign_istiod, "istio-system already runs istiod Deployment(s) ['istiod']"),
    ("different root in target", {}, other_root, "holds a different root certificate"),
    ("no injector on the default path", {}, no_injection_path, "expected exactly one MutatingWebhookConfiguration"),
    ("webhooks Istio's analyzers find overlapping", {}, lambda env: [opt_in_injector(env, DEFAULT_INJECTOR)],
     "refused before any change: Error [IST0139] (MutatingWebhookConfiguration opt-in-injector) Webhook overlaps"),
    ("unmanagedPods=fail with a pipeline step running", {"unmanagedPods": "fail"}, None,
     "kubeflow-user-000/pipeline-x-train-1 (Workflow/pipeline-x)"),
    ("canary namespace that does not exist", {"canaryNamespaces": [PROFILES[0], "kubeflow-user-999"]}, None,
     "canary namespace kubeflow-user-999 (kf-istio-migrate:canaryNamespaces) does not exist"),
]


@pytest.mark.parametrize("case,overrides,setup,message", CASES, ids=[c[0] for c in CASES])
def test_refused_before_any_mutation(mesh, case, overrides, setup, message):
    if overrides.get("istioctl") == NEXT_MINOR_ISTIOCTL:
        toolchain.ensure("istio-next")  # built on first use
    workspace, env = mesh, mesh.env
    config_file = config_file_with(workspace, "migrated", overrides, case.replace(" ", "-"))
    undo = []
    if setup:
        change = setup(env)
        if isinstance(change, tuple):  # ("patch", argv): undone by re-applying the object as it was
            undo.append(read(env, "mutatingwebhookconfigurations", name=DEFAULT_INJECTOR))
            run(["kubectl", *change[0:1], *change[1]], env)
        else:
            run(["kubectl", "create", "-f", "-"], env, input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                           "items": change}))
    try:
        before = fingerprint(env, PROFILES[0])
        refused = workspace.pulumi("up", "--stack", "migrated", "--config-file", str(config_file), "--yes",
                                   "--skip-preview", check=False, timeout=600)
        output = refused.stdout + refused.stderr
        assert refused.returncode != 0, f"{case}: not refused\n{output[-3000:]}"
        assert message in output, f"{case}: refused without naming the problem ({message!r}):\n{output[-3000:]}"
        assert fingerprint(env, PROFILES[0]) == before, f"{case}: the cluster changed although the update was refused"
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


def test_an_empty_passphrase_is_refused_for_a_stack_that_would_hold_the_ca_key(mesh):
    """A migrated stack created with an empty passphrase would store istiod's CA private key readable by anyone
    with its state: refused before anything changes."""
    workspace = mesh
    weak = dict(workspace.env, PULUMI_CONFIG_PASSPHRASE="")
    weak.pop("PULUMI_CONFIG_PASSPHRASE_FILE")
    (workspace.dir / "Pulumi.migrated-weak.yaml").write_text((workspace.dir / "Pulumi.migrated.yaml").read_text()
                                                              .replace("encryptionsalt", "#encryptionsalt"))
    workspace.pulumi("stack", "init", "migrated-weak", env=weak)
    before = fingerprint(workspace.env)
    refused = workspace.pulumi("up", "--stack", "migrated-weak", "--yes", "--skip-preview", env=weak, check=False)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "empty passphrase" in output, output[-3000:]
    assert fingerprint(workspace.env) == before
