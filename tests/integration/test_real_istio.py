"""Real Istio in the embedded cluster: the charm's istioctl install, served by a real istiod process."""

from __future__ import annotations

import json
import time

import pytest

from demo.fixture import CHARM_INSTALL
from tests.support import poll, run

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {ns}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}{extra_labels}}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{{name: app, image: nginx}}]
"""
VIRTUAL_SERVICE = """
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: {name}, namespace: {ns}}}
spec:
  hosts: ["app"]
  http: [{{route: [{{destination: {{host: "{host}"}}}}]}}]
"""


def pods(kubectl, ns, selector):
    return json.loads(kubectl("-n", ns, "get", "pods", "-l", selector, "-o", "json").stdout)["items"]


def proxy_env(pod) -> dict[str, str]:
    proxy = next((c for c in pod["spec"]["containers"] if c["name"] == "istio-proxy"), None)
    return None if proxy is None else {e["name"]: e.get("value", "") for e in proxy.get("env", [])}


@pytest.fixture(scope="module")
def istio(cluster, kubectl):
    """Istio installed exactly as the istio-pilot charm does, and a namespace labelled for injection."""
    started = time.monotonic()
    run(CHARM_INSTALL, cluster.env(), timeout=600)
    kubectl("create", "namespace", "profile-a")
    kubectl("label", "namespace", "profile-a", "istio-injection=enabled")
    kubectl("apply", "-f", "-", input=DEPLOYMENT.format(name="first", ns="profile-a", extra_labels=""))
    poll(lambda: any(proxy_env(p) for p in pods(kubectl, "profile-a", "app=first")), 120, "a first injected pod")
    first_injected = time.monotonic() - started
    print(f"\nistioctl install -> first injected pod: {first_injected:.1f}s")
    return {"first_injected_seconds": first_injected}


def test_istiod_available_and_validator_fail_closed(istio, kubectl):
    kubectl("-n", "kubeflow", "wait", "deployment/istiod", "--for=condition=Available", "--timeout=60s")

    def validators_armed():
        configs = json.loads(kubectl("get", "validatingwebhookconfigurations", "-o", "json").stdout)["items"]
        hooks = [h for c in configs for h in c["webhooks"] if h["name"].endswith("validation.istio.io")]
        return hooks and all(h["failurePolicy"] == "Fail" and h["clientConfig"].get("caBundle") for h in hooks)

    poll(validators_armed, 60, "istiod to patch the caBundle and switch its validators to Fail")
    kubectl("create", "namespace", "fresh")
    root = poll(lambda: kubectl("-n", "fresh", "get", "configmap", "istio-ca-root-cert", check=False).returncode == 0,
                60, "istiod to write istio-ca-root-cert into a new namespace")
    assert root


def test_injection_points_at_the_real_istiod(istio, kubectl):
    pod = pods(kubectl, "profile-a", "app=first")[0]
    env = proxy_env(pod)
    assert json.loads(env["PROXY_CONFIG"])["discoveryAddress"] == "istiod.kubeflow.svc:15012"
    assert env["CA_ADDR"] == "istiod.kubeflow.svc:15012"
    assert any(c["name"] == "istio-init" for c in pod["spec"].get("initContainers", []))
    kubectl("apply", "-f", "-", input=DEPLOYMENT.format(
        name="optout", ns="profile-a", extra_labels=", sidecar.istio.io/inject: 'false'"))
    kubectl("-n", "profile-a", "wait", "deployment/optout", "--for=condition=Available", "--timeout=60s")
    assert [proxy_env(p) for p in pods(kubectl, "profile-a", "app=optout")] == [None]


def test_validation_is_real(istio, kubectl):
    bad = kubectl("apply", "-f", "-", check=False,
                  input=VIRTUAL_SERVICE.format(name="bad", ns="profile-a", host=""))
    assert bad.returncode != 0 and "denied the request" in bad.stderr and "validation.istio.io" in bad.stderr
    kubectl("apply", "-f", "-", input=VIRTUAL_SERVICE.format(name="good", ns="profile-a", host="first"))


def test_deleting_istiod_stops_it_and_pod_creation_fails(istio, cluster, kubectl):
    """The failure mode the migration must never cause: an injector pointing at an istiod that is gone."""
    kubectl("-n", "kubeflow", "delete", "deployment", "istiod", "--wait=true")
    try:
        poll(lambda: not pods(kubectl, "kubeflow", "app=istiod"), 60, "the istiod pod to go")
        poll(lambda: "stopped istiod" in (cluster.logs / "istiod-runner.log").read_text(), 30,
             "the runner to stop the istiod process")
        failed = kubectl("-n", "profile-a", "run", "after", "--image=nginx", check=False)
        assert failed.returncode != 0
        assert "failed calling webhook" in failed.stderr and "sidecar-injector.istio.io" in failed.stderr
    finally:
        run(CHARM_INSTALL, cluster.env(), timeout=600)  # the module's mesh works again, whatever runs next
