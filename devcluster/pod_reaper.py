"""Finishes deleting terminating pods, as the kubelet does once a pod's containers have stopped: a delete with grace
period 0 and the pod's UID as precondition, after the pod's kwok delay (annotation
pod-delete.stage.kwok.x-k8s.io/delay, else 1 s, as kwok's own `pod-delete` stage).

kwok v0.8.0's `pod-delete` stage deletes by name alone (pkg/kwok/controllers/pod_controller.go, deleteResource) and
retries a delete that failed, so under load a stale delete meant for one StatefulSet pod hit its successor of the
same name, whose own delete hit the next: pod 0 of every StatefulSet was recreated every ~7 s for minutes (a
bench wave at rolloutParallelism 50), and the in-use gate waited on proxies that kept restarting. The kubelet deletes
with the UID as precondition for this very reason (kubernetes/kubernetes#25224). So the embedded cluster runs kwok
without that stage (devcluster.cluster.Cluster._kwok_stages) and this process in its place.

python -m devcluster.pod_reaper --kubeconfig FILE
"""

from __future__ import annotations

import argparse
import heapq
import json
import logging
import re
import threading
import time
from typing import Any

from kubernetes import client, config
from kubernetes.watch.watch import iter_resp_lines

DELAY_ANNOTATION = "pod-delete.stage.kwok.x-k8s.io/delay"
DEFAULT_DELAY_S = 1.0
# Deletes at once, as a kubelet's pod workers finish pods side by side: one at a time (~150 ms each on the loaded
# 2-core machine) fell 25 s behind during a bench wave (2026-12-05, d3f5402), so StatefulSets waited on it.
DELETERS = 8
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
log = logging.getLogger("pod-reaper")


def delay_s(pod: dict[str, Any]) -> float:
    """The pod's delete delay: its kwok annotation (a Go duration such as 250ms or 1m30s), else 1 s."""
    text = ((pod["metadata"].get("annotations") or {}).get(DELAY_ANNOTATION) or "").strip()
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return DEFAULT_DELAY_S
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def terminating(pod: dict[str, Any]) -> bool:
    """What kwok's pod-delete stage selects: a pod being deleted, with no finalizer left, on a node (an unscheduled
    pod is removed by the apiserver at once)."""
    meta = pod["metadata"]
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and bool(pod["spec"].get("nodeName"))


class Reaper:
    def __init__(self, api: client.ApiClient):
        self.core = client.CoreV1Api(api)
        self.due: list[tuple[float, str, str, str]] = []  # (when, namespace, name, uid)
        self.queued: set[str] = set()
        self.lock = threading.Condition()

    def saw(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if not terminating(pod) or meta["uid"] in self.queued:
            return
        with self.lock:
            self.queued.add(meta["uid"])
            heapq.heappush(self.due, (time.monotonic() + delay_s(pod), meta["namespace"], meta["name"], meta["uid"]))
            self.lock.notify()

    def delete_when_due(self) -> None:
        while True:
            with self.lock:
                while not self.due or self.due[0][0] > time.monotonic():
                    self.lock.wait(None if not self.due else self.due[0][0] - time.monotonic())
                _, namespace, name, uid = heapq.heappop(self.due)
                self.queued.discard(uid)
            body = client.V1DeleteOptions(grace_period_seconds=0, preconditions=client.V1Preconditions(uid=uid))
            try:
                self.core.delete_namespaced_pod(name, namespace, body=body, grace_period_seconds=0)
            except client.ApiException as err:
                if err.status not in (404, 409):  # gone already; a new pod of that name (the precondition held)
                    log.warning("deleting %s/%s (uid %s): %s %s", namespace, name, uid, err.status, err.reason)

    def watch(self) -> None:
        """List, then watch every pod from that list's resourceVersion; list again when the watch ends."""
        while True:
            listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
            for pod in listed["items"]:
                self.saw(pod)
            response = self.core.list_pod_for_all_namespaces(
                watch=True, resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=300,
                _preload_content=False)
            for line in iter_resp_lines(response):
                event = json.loads(line)
                if event["type"] == "ERROR":  # e.g. 410 Gone: the resourceVersion is too old, list again
                    break
                self.saw(event["object"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    reaper = Reaper(config.new_client_from_config(config_file=args.kubeconfig))
    for _ in range(DELETERS):
        threading.Thread(target=reaper.delete_when_due, daemon=True).start()
    while True:
        try:
            reaper.watch()
        except Exception as err:  # noqa: BLE001 - the apiserver restarting must not stop the cluster's kubelet
            log.warning("watch failed (%s), again in 1 s", err)
            time.sleep(1)


if __name__ == "__main__":
    main()
