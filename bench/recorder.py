"""Records, with monotonic timestamps, every change of every Deployment during a run (a watch), from which the
analysis derives when the new istiod became Available, each rollout's start and end, and when the old istiod went."""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import client, config, watch

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


def deployment_event(kind: str, dep: Any) -> dict[str, Any]:
    status, spec = dep.status, dep.spec
    conditions = {c.type: c.status for c in status.conditions or []}
    return {"t": time.monotonic(), "type": kind, "namespace": dep.metadata.namespace, "name": dep.metadata.name,
            "restarted_at": (spec.template.metadata.annotations or {}).get(RESTARTED_AT),
            "generation": dep.metadata.generation, "observed": status.observed_generation or 0,
            "replicas": spec.replicas, "status_replicas": status.replicas or 0,
            "updated": status.updated_replicas or 0, "available": status.available_replicas or 0,
            "available_condition": conditions.get("Available")}


class DeploymentRecorder(threading.Thread):
    def __init__(self, kubeconfig: str):
        super().__init__(daemon=True)
        config.load_kube_config(kubeconfig)
        self.apps = client.AppsV1Api()
        self.events: list[dict[str, Any]] = []
        self._halt = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        version = None
        while not self._halt.is_set():
            if version is None:
                listed = self.apps.list_deployment_for_all_namespaces()
                self.events += [deployment_event("LISTED", d) for d in listed.items]
                version = listed.metadata.resource_version
                self.ready.set()
            try:  # short server-side timeouts let stop() end the thread promptly; the watch resumes where it was
                for event in watch.Watch().stream(self.apps.list_deployment_for_all_namespaces, timeout_seconds=2,
                                                  resource_version=version):
                    self.events.append(deployment_event(event["type"], event["object"]))
                    version = event["object"].metadata.resource_version
            except client.ApiException as err:
                if err.status != 410:
                    raise
                version = None  # expired: list again

    def start(self) -> None:
        super().start()
        self.ready.wait(30)

    def stop(self) -> list[dict[str, Any]]:
        self._halt.set()
        self.join()
        return self.events
