"""python -m live.evict --kubeconfig F --context C --leaving ADDR --istiod ADDR --timeout S --unmanaged wait|evict

Moves pods off the plane at --leaving without touching their owners' templates:
- workloads (move_workload, run by live.rollout's wave): evict their pods still on that plane one at a time
  through the Eviction API (so PodDisruptionBudgets hold), highest StatefulSet ordinal first; after each, wait
  until the workload has as many Ready pods as it wants again. Fails after --timeout seconds per pod.
- `--unmanaged wait`: wait until no running pod on that plane lacks a workload (bare pods, Job pods, Argo
  steps finish on their own), failing after --timeout and naming them; `--unmanaged evict`: evict them.
Which pods is read when it runs, so running it again after the move does nothing.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any, Callable

from kubernetes import client

from live import cli
from live.discovery import controllers, pod_view, pods
from live.target import api_client
from migration.workloads import Workload, needs_move, owner, service_of

POLL_SECONDS = 1


class Failed(RuntimeError):
    """A pod could not be moved in time (the message names it and what to do)."""


def _until(condition: Callable[[], bool], seconds: int, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise Failed(f"timed out after {seconds}s waiting for {what}")
        time.sleep(POLL_SECONDS)


def _ordinal(pod: dict[str, Any]) -> int:
    found = re.search(r"-(\d+)$", pod["metadata"]["name"])
    return int(found.group(1)) if found else -1


def evict(core: client.CoreV1Api, pod: dict[str, Any], seconds: int) -> None:
    """Evict pod (retrying while a PodDisruptionBudget refuses, HTTP 429) and wait until that pod is gone."""
    meta = pod["metadata"]
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=meta["name"], namespace=meta["namespace"]))

    def evicted() -> bool:
        try:
            core.create_namespaced_pod_eviction(meta["name"], meta["namespace"], body)
        except client.ApiException as err:
            if err.status == 429:
                return False
            if err.status != 404:
                raise
        return True

    def gone() -> bool:
        try:
            return core.read_namespaced_pod(meta["name"], meta["namespace"]).metadata.uid != meta["uid"]
        except client.ApiException as err:
            if err.status == 404:
                return True
            raise

    _until(evicted, seconds, f"the disruption budget of {meta['namespace']}/{meta['name']} to allow its eviction")
    _until(gone, seconds, f"{meta['namespace']}/{meta['name']} to go")


class Mesh:
    """The pods of one namespace, read afresh on every call, and the plane they are moving off."""

    def __init__(self, api: client.ApiClient, args: cli.Rollout | cli.Canary, namespace: str):
        self.api, self.args, self.namespace = api, args, namespace
        # The namespace's labels and the injectors change rarely: read once.
        self.labels = dict(client.CoreV1Api(api).read_namespace(namespace).metadata.labels or {})
        self.webhooks = [api.sanitize_for_serialization(w) for w in
                         client.AdmissionregistrationV1Api(api).list_mutating_webhook_configuration().items]
        self.planes = {service_of(args.leaving), service_of(args.istiod)}

    def pods_of(self, workload: Workload) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """(pods of workload, its controller record)."""
        owned = controllers(self.api, self.namespace)
        mine = [p for p in pods(self.api, self.namespace)
                if isinstance(top := owner(p, owned), Workload) and top.ref == workload.ref]
        return mine, owned.get((workload.kind, workload.namespace, workload.name)) or {}

    def to_move(self, pod: dict[str, Any]) -> bool:
        return needs_move(pod, self.args.leaving, self.labels, self.webhooks, self.planes)


def move_workload(mesh: Mesh, workload: Workload) -> None:
    """Evict the workload's pods on the old plane, one at a time; fails if a replacement is not on the new one."""
    core = client.CoreV1Api(mesh.api)
    first = None
    while True:
        mine, record = mesh.pods_of(workload)
        left = sorted((p for p in mine if mesh.to_move(p)), key=_ordinal, reverse=True)
        first = {p["metadata"]["uid"] for p in left} if first is None else first
        todo = [p for p in left if p["metadata"]["uid"] in first]
        if not todo:
            if left:
                raise Failed(f"replacement pod(s) {', '.join(p['metadata']['name'] for p in left)} of "
                             f"{workload.namespace}/{workload.ref} are still not on {mesh.args.istiod}: is the "
                             f"injector sending that namespace to it?")
            return
        evict(core, todo[0], mesh.args.timeout)
        wanted = record.get("replicas") or 0
        _until(lambda: sum(1 for p in mesh.pods_of(workload)[0] if p["status"]["ready"]
                           and not p["metadata"].get("deletionTimestamp")) >= wanted,
               mesh.args.timeout, f"{workload.namespace}/{workload.ref} to have {wanted} Ready pod(s) again")
        print(f"evicted {todo[0]['metadata']['namespace']}/{todo[0]['metadata']['name']} ({workload.ref})", flush=True)


def pods_to_move(api: client.ApiClient, args: cli.Rollout | cli.Canary | cli.Evict,
                 namespace: str | None = None) -> list[tuple[dict[str, Any], Workload | str]]:
    """(pod, its workload or what else owns it) for every running pod of namespace (or of the cluster) still on the
    plane being left, or lacking the sidecar an injector would give it (migration.workloads.needs_move)."""
    view = pod_view(api, namespace)
    planes = {service_of(args.leaving), service_of(args.istiod)}
    return [(p, owner(p, view["controllers"])) for p in view["pods"]
            if needs_move(p, args.leaving, view["namespaces"].get(p["metadata"]["namespace"], {}),
                          view["webhooks"], planes)]


def unmanaged(api: client.ApiClient, args: cli.Evict) -> list[tuple[dict[str, Any], str]]:
    """(pod, what owns it) for every running pod on the plane being left that no workload covers."""
    return [(p, top) for p, top in pods_to_move(api, args) if not isinstance(top, Workload)]


def main(argv: list[str] | None = None) -> int:
    args = cli.Evict.from_argv(argv, __doc__)
    api = api_client(args)
    try:
        if args.unmanaged == "evict":
            for pod, _ in unmanaged(api, args):
                evict(client.CoreV1Api(api), pod, args.timeout)
                print(f"evicted {pod['metadata']['namespace']}/{pod['metadata']['name']}", flush=True)
        else:
            names = lambda: sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']} ({why})"  # noqa: E731
                                   for p, why in unmanaged(api, args))
            try:
                _until(lambda: not names(), args.timeout, "pods without a workload to finish")
            except Failed as err:
                raise Failed(f"{err}: {', '.join(names())} still use {args.leaving}; let them finish or delete "
                              f"them, or set kf-istio-migrate:unmanagedPods=evict, then run `pulumi up` again")
    except Failed as err:
        print(err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
