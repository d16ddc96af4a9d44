"""Records, with monotonic timestamps, every change of every Deployment and StatefulSet during a run (a watch per
kind), from which the analysis derives when the new istiod became Available, each rollout's start and end (per
kind), and when the old istiod went."""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import client, config, watch

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


def workload_event(event_type: str, kind: str, dep: Any) -> dict[str, Any]:
    """One watch event of a Deployment or StatefulSet (their status fields share names)."""
    status, spec = dep.status, dep.spec
    conditions = {c.type: c.status for c in status.conditions or []}
    return {"t": time.monotonic(), "type": event_type, "kind": kind, "namespace": dep.metadata.namespace,
            "name": dep.metadata.name,
            "restarted_at": (spec.template.metadata.annotations or {}).get(RESTARTED_AT),
            "generation": dep.metadata.generation, "observed": status.observed_generation or 0,
            "replicas": spec.replicas, "status_replicas": status.replicas or 0,
            "updated": status.updated_replicas or 0, "available": status.available_replicas or 0,
            "available_condition": conditions.get("Available")}


class WorkloadRecorder(threading.Thread):
    """Watches every object of kind (Deployment or StatefulSet) in the cluster."""

    def __init__(self, kubeconfig: str, kind: str = "Deployment"):
        super().__init__(daemon=True)
        apps = client.AppsV1Api(config.new_client_from_config(config_file=kubeconfig))
        self.kind = kind
        self.listing = {"Deployment": apps.list_deployment_for_all_namespaces,
                        "StatefulSet": apps.list_stateful_set_for_all_namespaces}[kind]
        self.events: list[dict[str, Any]] = []
        self._halt = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        version = None
        while not self._halt.is_set():
            if version is None:
                listed = self.listing()
                self.events += [workload_event("LISTED", self.kind, d) for d in listed.items]
                version = listed.metadata.resource_version
                self.ready.set()
            try:  # short server-side timeouts let stop() end the thread promptly; the watch resumes where it was
                for event in watch.Watch().stream(self.listing, timeout_seconds=2, resource_version=version):
                    self.events.append(workload_event(event["type"], self.kind, event["object"]))
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
