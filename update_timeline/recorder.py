"""Records, with monotonic timestamps, every change of every object of one kind during an update (a watch per kind):
Deployments and StatefulSets, from which the benchmark derives when the new istiod became Available, each rollout's
start and end (per kind), and when the old istiod went; pods, from which the demo draws each workload's move."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from kubernetes import client, config, watch

from migration.workloads import slim

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


def pod_event(event_type: str, pod: dict[str, Any]) -> dict[str, Any]:
    """One watch event of a pod (as the API returns it), slimmed to what migration.workloads reads of a pod: its
    owners, its proxy's istiod, whether it runs and is Ready."""
    return {"t": time.monotonic(), "type": event_type, "pod": slim(pod)}


class Recorder(threading.Thread):
    """Lists every object listing returns, then watches them, appending record(event type, object) for each (LISTED
    for the first list) to events."""

    def __init__(self, listing: Callable[..., Any], record: Callable[[str, Any], dict[str, Any]]):
        super().__init__(daemon=True)
        self.listing, self.record = listing, record
        self.events: list[dict[str, Any]] = []
        self._halt = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        version = None
        while not self._halt.is_set():
            if version is None:
                listed = self.listing()
                self.events += [self.record("LISTED", d) for d in listed.items]
                version = listed.metadata.resource_version
                self.ready.set()
            try:  # short server-side timeouts let stop() end the thread promptly; the watch resumes where it was
                for event in watch.Watch().stream(self.listing, timeout_seconds=2, resource_version=version):
                    self.events.append(self.record(event["type"], event["object"]))
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


class WorkloadRecorder(Recorder):
    """Every object of kind (Deployment or StatefulSet) in the cluster."""

    def __init__(self, kubeconfig: str, kind: str = "Deployment"):
        apps = client.AppsV1Api(config.new_client_from_config(config_file=kubeconfig))
        listing = {"Deployment": apps.list_deployment_for_all_namespaces,
                   "StatefulSet": apps.list_stateful_set_for_all_namespaces}[kind]
        super().__init__(listing, lambda event_type, obj: workload_event(event_type, kind, obj))


class PodRecorder(Recorder):
    """Every pod in the cluster."""

    def __init__(self, kubeconfig: str):
        api = config.new_client_from_config(config_file=kubeconfig)
        super().__init__(client.CoreV1Api(api).list_pod_for_all_namespaces,
                         lambda event_type, pod: pod_event(event_type, api.sanitize_for_serialization(pod)))
