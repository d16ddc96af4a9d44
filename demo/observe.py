"""Read-only observations of a live mesh: snapshots to compare before/after, and a sampler that runs during `up`.

The sampler is the tests' and the demo's oracle for "exactly one injector per namespace", so it shares no code with
the program's planning (migration.webhooks): it lets the apiserver evaluate each injector's namespaceSelector
(a list of namespaces with that label selector) and needs only a small rule for the objectSelector of a plain pod.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time
from typing import Any

from kubernetes import client, config

def kubectl_json(env: dict[str, str], *args: str) -> dict[str, Any]:
    out = subprocess.run(["kubectl", *args, "-o", "json"], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def snapshot(env: dict[str, str]) -> dict[str, Any]:
    """CRD UIDs and specs (as served, canonical JSON), every Istio CR's spec/labels/annotations, and each namespace's
    istio-ca-root-cert."""
    crds = {c["metadata"]["name"]: c for c in kubectl_json(env, "get", "crd")["items"]
            if c["metadata"]["name"].endswith(".istio.io")}
    crs = {}
    for name in sorted(crds):
        for item in kubectl_json(env, "get", name, "-A")["items"]:
            meta = item["metadata"]
            crs[f"{item['kind']}/{meta.get('namespace', '')}/{meta['name']}"] = {
                "spec": item.get("spec"), "labels": meta.get("labels") or {},
                "annotations": {k: v for k, v in (meta.get("annotations") or {}).items()
                                if k != "kubectl.kubernetes.io/last-applied-configuration"}}
    roots = {cm["metadata"]["namespace"]: hashlib.sha256(cm["data"].get("root-cert.pem", "").encode()).hexdigest()
             for cm in kubectl_json(env, "get", "configmap", "-A", "--field-selector",
                                    "metadata.name=istio-ca-root-cert")["items"]}
    return {"crd_uids": {n: c["metadata"]["uid"] for n, c in crds.items()}, "crs": crs, "roots": roots,
            "crd_specs": {n: json.dumps(c["spec"], sort_keys=True) for n, c in crds.items()}}


def selector_string(selector: dict[str, Any] | None) -> str:
    """A metav1.LabelSelector in the apiserver's label-selector syntax ("" selects everything)."""
    terms = [f"{k}={v}" for k, v in ((selector or {}).get("matchLabels") or {}).items()]
    for expr in (selector or {}).get("matchExpressions") or []:
        key, values = expr["key"], ",".join(expr.get("values") or [])
        terms.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                      "DoesNotExist": f"!{key}"}[expr["operator"]])
    return ",".join(terms)


def selects_unlabelled_pod(selector: dict[str, Any] | None) -> bool:
    """Whether an objectSelector matches a pod without labels: only terms that hold for absent keys."""
    selector = selector or {}
    return not selector.get("matchLabels") and all(
        e["operator"] in ("NotIn", "DoesNotExist") for e in selector.get("matchExpressions") or [])


class InjectorSampler(threading.Thread):
    """Samples, every interval, how many Istio injector webhooks the apiserver would call for a plain pod created in
    each watched namespace, which istiod Services they call, whether every default validator targets an existing
    Service, and which istiod Deployments exist."""

    def __init__(self, kubeconfig: str, namespaces: list[str], interval: float = 0.25):
        super().__init__(daemon=True)
        self.api = api = config.new_client_from_config(config_file=kubeconfig)
        self.core, self.admission = client.CoreV1Api(api), client.AdmissionregistrationV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.namespaces, self.interval = namespaces, interval
        self.samples: list[dict[str, Any]] = []
        self._halt = threading.Event()

    def _namespaces_selected(self, selector: str, cache: dict[str, set[str]]) -> set[str]:
        if selector not in cache:
            cache[selector] = {n.metadata.name for n in self.core.list_namespace(label_selector=selector).items}
        return cache[selector]

    def _service_exists(self, service) -> bool:
        try:
            self.core.read_namespaced_service(service.name, service.namespace)
            return True
        except client.ApiException as err:
            if err.status == 404:
                return False
            raise

    def _watched_labels(self) -> dict[str, dict[str, str] | None]:
        return {n.metadata.name: n.metadata.labels for n in self.core.list_namespace().items
                if n.metadata.name in self.namespaces}

    def _injectors(self) -> tuple[dict[str, int], set[str]]:
        """Injectors per watched namespace and the Services they call, at one instant. The apiserver answers one list
        per selector, so a namespace relabelled between two of them would be counted under its old and its new
        injector: the counts are kept only if no injector configuration and no watched namespace's labels changed
        while they were taken, and taken again otherwise."""
        while True:
            configurations = self.admission.list_mutating_webhook_configuration().items
            labels = self._watched_labels()
            counted = self._count(configurations)
            again = self.admission.list_mutating_webhook_configuration().items
            if _versions(again) == _versions(configurations) and self._watched_labels() == labels:
                return counted

    def _count(self, configurations) -> tuple[dict[str, int], set[str]]:
        counts = {ns: 0 for ns in self.namespaces}
        targets, cache = set(), {}
        for configuration in configurations:
            for hook in configuration.webhooks or []:
                if not hook.name.endswith("sidecar-injector.istio.io"):
                    continue
                as_dict = self.api.sanitize_for_serialization(hook)
                if not selects_unlabelled_pod(as_dict.get("objectSelector")):
                    continue
                selected = self._namespaces_selected(selector_string(as_dict.get("namespaceSelector")), cache)
                for ns in self.namespaces:
                    if ns in selected:
                        counts[ns] += 1
                        service = hook.client_config.service
                        targets.add(f"{service.namespace}/{service.name}")
        return counts, targets

    def sample(self) -> dict[str, Any]:
        counts, targets = self._injectors()
        dangling = [f"{v.metadata.name}/{h.name}" for v in self.admission.list_validating_webhook_configuration().items
                    if v.metadata.name.startswith("istiod-default-validator") for h in v.webhooks
                    if not self._service_exists(h.client_config.service)]
        istiods = sorted(f"{d.metadata.namespace}/{d.metadata.name}" for d in
                         self.apps.list_deployment_for_all_namespaces(label_selector="app=istiod").items)
        return {"t": time.monotonic(), "wall": time.time(), "injectors": counts, "injector_targets": sorted(targets),
                "dangling_validators": dangling, "istiods": istiods}

    def run(self) -> None:
        """A sample starts every interval (at once after one that took longer): a slow apiserver does not stretch
        the spacing by the time each sample takes."""
        due = time.monotonic()
        while not self._halt.is_set():
            self.samples.append(self.sample())
            due = max(due + self.interval, time.monotonic())
            self._halt.wait(max(0.0, due - time.monotonic()))

    def stop(self) -> list[dict[str, Any]]:
        self._halt.set()
        self.join()
        return self.samples


def _versions(configurations) -> list[tuple[str, str]]:
    return sorted((c.metadata.name, c.metadata.resource_version) for c in configurations)
