"""P2's churn generator: creates bare pods in injected namespaces at a steady rate during the migration and records,
for each creation, whether admission rejected it, admitted it without a sidecar, or gave it a sidecar pointing at an
istiod Service that does not exist at that moment. Every pod is deleted right after it was inspected."""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
import time
from typing import Any

from kubernetes import client, config

from migration.workloads import proxy_address

OUTCOMES = ("ok", "rejected", "no sidecar", "no such istiod")


class ChurnGenerator(threading.Thread):
    def __init__(self, kubeconfig: str, namespaces: list[str], rate: float, workers: int = 6):
        super().__init__(daemon=True)
        config.load_kube_config(kubeconfig)
        self.core = client.CoreV1Api()
        self.namespaces, self.rate = namespaces, rate
        self.pool = concurrent.futures.ThreadPoolExecutor(workers)
        self.records: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._halt = threading.Event()

    def create_and_inspect(self, index: int) -> None:
        namespace = self.namespaces[index % len(self.namespaces)]
        name = f"churn-{index}"
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"kfistio.io/churn": "true"}},
                "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "main", "image": "churn"}]}}
        started = time.monotonic()
        try:
            pod = client.ApiClient().sanitize_for_serialization(self.core.create_namespaced_pod(namespace, body))
        except client.ApiException as err:
            self._record(started, "rejected", f"{namespace}/{name}: {err.status} {err.reason}: {(err.body or '')[:300]}")
            return
        address = proxy_address(pod)
        if address is None:
            outcome, detail = "no sidecar", f"{namespace}/{name}"
        elif not self._service_exists(address):
            outcome, detail = "no such istiod", f"{namespace}/{name} -> {address}"
        else:
            outcome, detail = "ok", address
        self._record(started, outcome, detail)
        try:
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        except client.ApiException:
            pass  # a leftover churn pod is harmless to the counts; verify-sidecars would name it

    def _service_exists(self, address: str) -> bool:
        service, namespace = address.split(":")[0].split(".")[:2]
        try:
            self.core.read_namespaced_service(service, namespace)
            return True
        except client.ApiException as err:
            if err.status == 404:
                return False
            raise

    def _record(self, started: float, outcome: str, detail: str) -> None:
        with self._lock:
            self.records.append({"t": started, "outcome": outcome, "detail": detail})

    def run(self) -> None:
        start = time.monotonic()
        for index in itertools.count():
            due = start + index / self.rate
            if self._halt.wait(max(0.0, due - time.monotonic())):
                break
            self.pool.submit(self.create_and_inspect, index)

    def stop(self) -> list[dict[str, Any]]:
        self._halt.set()
        self.join()
        self.pool.shutdown(wait=True)
        return sorted(self.records, key=lambda r: r["t"])
