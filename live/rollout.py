"""python -m live.rollout --kubeconfig F --context C --leaving ADDR --istiod ADDR --timeout S --wave KEY --limit N
       --namespace NS [KIND/NAME...] [--evict KIND/NAME...]

Moves one namespace's workloads off the plane at --leaving, as one part of a single wave: every rollout command of
the migration starts once the webhooks are switched, and together they move at most --limit workloads at once (a
slot of live.slots, keyed by --wave, held while a workload moves). Each KIND/NAME is restarted as `kubectl rollout
restart` does (a new restartedAt annotation on its pod template) and watched by this one process until rolled out
by `kubectl rollout status`'s rules (migration.rollout_status), failing after --timeout seconds. Each --evict
KIND/NAME has its pods evicted one at a time (live.evict), beside the restarts. A workload none of whose pods is
still on the plane being left is skipped, so a command re-run after a crash moves only what is left.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import threading
import time
from typing import Any

from kubernetes import client, config

from live.discovery import controllers, pods
from live.evict import Failed, Mesh, move_workload
from live.slots import Slots
from migration.rollout_status import RolloutFailed, rolled_out
from migration.workloads import Workload, owner

POLL_SECONDS = 0.25
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
_PLURAL = {"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets"}


def _take(slots: Slots) -> int:
    while (slot := slots.try_take()) is None:
        time.sleep(POLL_SECONDS)
    return slot


def current(api: client.ApiClient, namespace: str, kinds: set[str]) -> dict[str, dict[str, Any]]:
    """'Kind/name' -> the object, for every workload of kinds in namespace (one raw list per kind)."""
    found = {}
    for kind in kinds:
        response = api.call_api(f"/apis/apps/v1/namespaces/{namespace}/{_PLURAL[kind]}", "GET",
                                auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=True)
        for item in json.loads(response.data)["items"]:
            found[f"{kind}/{item['metadata']['name']}"] = item | {"kind": kind}
    return found


def restart(api: client.ApiClient, workload: Workload) -> None:
    """What `kubectl rollout restart` does: a new restartedAt annotation on the pod template."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now}}}}}
    apps = client.AppsV1Api(api)
    patch = {"Deployment": apps.patch_namespaced_deployment, "StatefulSet": apps.patch_namespaced_stateful_set,
             "DaemonSet": apps.patch_namespaced_daemon_set}[workload.kind]
    patch(workload.name, workload.namespace, body)


def restart_all(api: client.ApiClient, slots: Slots, workloads: list[Workload], timeout: int) -> None:
    """Restart each workload once it holds a slot; watch them all (one list per kind and poll) until each has
    rolled out, giving its slot back then."""
    pending, moving = list(workloads), {}
    kinds = {w.kind for w in workloads}
    while pending or moving:
        while pending and (slot := slots.try_take()) is not None:
            workload = pending.pop(0)
            restart(api, workload)
            moving[workload] = (slot, time.monotonic())
        if moving:
            seen = current(api, workloads[0].namespace, kinds)
            for workload, (slot, began) in list(moving.items()):
                obj = seen.get(workload.ref)
                if obj is None:
                    raise Failed(f"{workload.namespace}/{workload.ref} was deleted while it rolled out")
                if rolled_out(obj):
                    Slots.give_back(slot)
                    del moving[workload]
                    print(f"rolled out {workload.namespace}/{workload.ref} in {time.monotonic() - began:.1f}s",
                          flush=True)
                elif time.monotonic() - began > timeout:
                    raise Failed(f"{workload.namespace}/{workload.ref} did not roll out within {timeout}s "
                                 f"(rolloutTimeoutSeconds); see `kubectl -n {workload.namespace} rollout status "
                                 f"{workload.ref}` and its pods' events")
        time.sleep(POLL_SECONDS)


def evict_all(mesh: Mesh, slots: Slots, workloads: list[Workload], errors: list[BaseException]) -> None:
    """Evict each workload's pods (live.evict), one workload at a time, each holding a slot."""
    try:
        for workload in workloads:
            slot = _take(slots)
            try:
                move_workload(mesh, workload)
            finally:
                Slots.give_back(slot)
    except BaseException as err:  # reported by the main thread
        errors.append(err)


def still_to_move(mesh: Mesh, workloads: list[Workload]) -> list[Workload]:
    """The workloads that still have a pod on the plane being left (or lacking its sidecar): one read of the
    namespace's pods and controllers."""
    owned = controllers(mesh.api, mesh.namespace)
    left = {top.ref for pod in pods(mesh.api, mesh.namespace)
            if mesh.to_move(pod) and isinstance(top := owner(pod, owned), Workload)}
    return [w for w in workloads if w.ref in left]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in ("--kubeconfig", "--context", "--namespace", "--wave", "--leaving", "--istiod"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--timeout", type=int, required=True)
    parser.add_argument("--limit", type=int, required=True)
    parser.add_argument("--evict", action="append", default=[], help="KIND/NAME whose pods are evicted")
    parser.add_argument("restart", nargs="*", help="KIND/NAME restarted")
    args = parser.parse_args(argv)

    def workloads(refs: list[str], why: str | None) -> list[Workload]:
        return [Workload(args.namespace, *ref.split("/", 1), evict_because=why) for ref in refs]

    api = config.new_client_from_config(config_file=args.kubeconfig, context=args.context)
    mesh = Mesh(api, args, args.namespace)
    named = workloads(args.restart, None) + workloads(args.evict, "evicted")
    left = still_to_move(mesh, named)
    for workload in sorted(set(named) - set(left)):
        print(f"{workload.namespace}/{workload.ref}: no pod left on {args.leaving}, not moved again", flush=True)
    to_restart, to_evict = [w for w in left if not w.evict_because], [w for w in left if w.evict_because]
    slots, errors = Slots(args.wave, args.limit), []
    evicting = threading.Thread(target=evict_all, args=(mesh, slots, to_evict, errors))
    evicting.start()
    try:
        if to_restart:
            restart_all(api, slots, to_restart, args.timeout)
    except (Failed, RolloutFailed, client.ApiException) as err:
        errors.insert(0, err)
    evicting.join()
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
