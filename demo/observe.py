"""Read-only observations of a live mesh: snapshots to compare before/after, and a sampler that runs during `up`."""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time
from typing import Any

from kubernetes import client, config

from migration.webhooks import injectors, matching_webhooks


def kubectl_json(env: dict[str, str], *args: str) -> dict[str, Any]:
    out = subprocess.run(["kubectl", *args, "-o", "json"], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def snapshot(env: dict[str, str]) -> dict[str, Any]:
    """CRD UIDs, every Istio CR's spec/labels/annotations, and each namespace's istio-ca-root-cert."""
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
    return {"crd_uids": {n: c["metadata"]["uid"] for n, c in crds.items()}, "crs": crs, "roots": roots}


class InjectorSampler(threading.Thread):
    """Samples, every interval, how many injectors match each watched namespace (for a plain pod), which istiod
    Services they call, and whether every default validator targets an existing Service."""

    def __init__(self, kubeconfig: str, namespaces: list[str], interval: float = 0.25):
        super().__init__(daemon=True)
        config.load_kube_config(kubeconfig)
        self.core, self.admission = client.CoreV1Api(), client.AdmissionregistrationV1Api()
        self.api = client.ApiClient()
        self.namespaces, self.interval = namespaces, interval
        self.samples: list[dict[str, Any]] = []
        self._halt = threading.Event()

    def sample(self) -> dict[str, Any]:
        configs = [self.api.sanitize_for_serialization(c)
                   for c in self.admission.list_mutating_webhook_configuration().items]
        labels = {n.metadata.name: n.metadata.labels or {} for n in self.core.list_namespace().items}
        matched = {ns: matching_webhooks(injectors(configs), labels.get(ns, {})) for ns in self.namespaces}
        counts = {ns: len(hits) for ns, hits in matched.items()}
        hooks = {(c["metadata"]["name"], h["name"]): h["clientConfig"].get("service") or {}
                 for c in configs for h in c.get("webhooks") or []}
        targets = sorted({f"{hooks[hit].get('namespace')}/{hooks[hit].get('name')}"
                          for hits in matched.values() for hit in hits})
        services = {(s.metadata.namespace, s.metadata.name) for s in self.core.list_service_for_all_namespaces().items}
        dangling = [f"{v.metadata.name}/{h.name}" for v in self.admission.list_validating_webhook_configuration().items
                    if v.metadata.name.startswith("istiod-default-validator") for h in v.webhooks
                    if (h.client_config.service.namespace, h.client_config.service.name) not in services]
        return {"t": time.monotonic(), "injectors": counts, "injector_targets": targets,
                "dangling_validators": dangling}

    def run(self) -> None:
        while not self._halt.is_set():
            self.samples.append(self.sample())
            self._halt.wait(self.interval)

    def stop(self) -> list[dict[str, Any]]:
        self._halt.set()
        self.join()
        return self.samples
