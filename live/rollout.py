"""python -m live.rollout --kubeconfig F --context C --leaving ADDR --istiod ADDR --timeout S --wave KEY --limit N
       < PLAN

Moves the workloads PLAN names off the plane at --leaving. PLAN (standard input, JSON) maps each namespace to the
workloads to restart and those whose pods are evicted: {"ns": {"restart": ["Kind/name", ...], "evict": [...]}}.
Every rollout command of one migration is part of a single wave: together they move at most --limit workloads at
once (a slot of live.slots, keyed by --wave, held while a workload moves), whether the wave is one command for
every namespace (rolloutStrategy=wave) or one per namespace or workload. The workloads whose rollouts wait for the
most pod starts one after another (StatefulSets replace one pod at a time) take their slots first.

Each restarted workload gets a new restartedAt annotation on its pod template, as `kubectl rollout restart` does,
and is watched by this one process (one watch per kind, for every namespace at once: live.watch) until rolled out by
`kubectl rollout status`'s rules (migration.rollout_status), failing after --timeout seconds. The evicted ones have
their pods evicted one at a time (live.evict), by workers beside the restarts. A failing workload does not stop the
others: the command moves everything it can, then exits non-zero naming each failure. A workload none of whose pods
is still on the plane being left is skipped, so a command re-run after a crash moves only what is left.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import json
import queue
import sys
import threading
import time
from typing import Any, Mapping

from kubernetes import client

from live import cli
from live.evict import Failed, Mesh, move_workload, pods_to_move
from live.slots import Slots
from live.target import api_client
from live.watch import WatchFailed, WorkloadWatch, key, only
from migration.account import account_line
from migration.rollout_status import RolloutFailed, rolled_out, sequential_pod_starts
from migration.workloads import Workload

POLL_SECONDS = 0.25
RESTARTS_IN_FLIGHT = 8
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
_FAILURES = (Failed, RolloutFailed, client.ApiException)


def plan_workloads(plan: Mapping[str, Mapping[str, list[str]]]) -> list[Workload]:
    """The workloads of a PLAN document, restarts first."""
    def named(how: str, why: str | None) -> list[Workload]:
        return [Workload(ns, *ref.split("/", 1), evict_because=why) for ns, moves in sorted(plan.items())
                for ref in moves.get(how, [])]
    return named("restart", None) + named("evict", "evicted")


def _key(workload: Workload) -> str:
    return key(workload.namespace, workload.kind, workload.name)


def restart(api: client.ApiClient, workload: Workload) -> int | Failed:
    """What `kubectl rollout restart` does: a new restartedAt annotation on the pod template. Returns the
    generation the restart made (the watch may still hold an older one), or why it failed."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now}}}}}
    apps = client.AppsV1Api(api)
    patch = {"Deployment": apps.patch_namespaced_deployment, "StatefulSet": apps.patch_namespaced_stateful_set,
             "DaemonSet": apps.patch_namespaced_daemon_set}[workload.kind]
    try:
        answer = patch(workload.name, workload.namespace, body, _preload_content=False)
    except client.ApiException as err:
        return Failed(f"{_key(workload)} could not be restarted: {err.status} {err.reason}")
    return json.loads(answer.data)["metadata"]["generation"]


def longest_first(workloads: list[Workload], objects: Mapping[str, Mapping[str, Any]]) -> list[Workload]:
    """workloads, those whose rollout waits for the most pod starts one after another first (longest processing
    time first: the slowest ones run beside the others instead of alone at the end of the wave); a workload not
    found last, it is reported when its turn comes."""
    def starts(workload: Workload) -> int:
        obj = objects.get(_key(workload))
        return sequential_pod_starts(obj) if obj is not None else -1
    return sorted(workloads, key=starts, reverse=True)


def restart_all(api: client.ApiClient, slots: Slots, workloads: list[Workload], timeout: int,
                errors: list[BaseException], seconds: dict[Workload, float]) -> None:
    """Restart each workload once it holds a slot; watch them all (one watch per kind) until each has rolled out
    (its seconds recorded) or failed (appended to errors), giving its slot back then."""
    watched = WorkloadWatch(api, {w.namespace for w in workloads}, {w.kind for w in workloads})
    pending, moving, seen = longest_first(workloads, watched.snapshot()), {}, 0

    def done(workload: Workload, error: BaseException | None = None) -> None:
        Slots.give_back(moving.pop(workload)[0])
        if error is not None:
            errors.append(error)

    with concurrent.futures.ThreadPoolExecutor(RESTARTS_IN_FLIGHT) as patching:
        while pending or moving:
            starting = []
            while pending and (slot := slots.try_take()) is not None:
                starting.append(workload := pending.pop(0))
                moving[workload] = (slot, time.monotonic(), 0)
            # A few restarts in flight at once: one after the other, 250 of them took ~30 s on a loaded 2-core host.
            for workload, made in zip(starting, patching.map(lambda w: restart(api, w), starting)):
                if isinstance(made, Failed):
                    done(workload, made)
                else:
                    moving[workload] = moving[workload][:2] + (made,)
            objects = watched.snapshot()
            for workload, (_, began, generation) in list(moving.items()):
                obj = objects.get(_key(workload))
                try:
                    if obj is None:
                        raise Failed(f"{_key(workload)} was deleted while it rolled out")
                    if obj["metadata"].get("generation", 0) >= generation and rolled_out(obj):
                        done(workload)
                        seconds[workload] = time.monotonic() - began
                        print(f"rolled out {_key(workload)} in {seconds[workload]:.1f}s", flush=True)
                    elif time.monotonic() - began > timeout:
                        raise Failed(f"{_key(workload)} did not roll out within {timeout}s "
                                     f"(rolloutTimeoutSeconds); see `kubectl -n {workload.namespace} rollout "
                                     f"status {workload.ref}` and its pods' events")
                except (Failed, RolloutFailed) as err:
                    done(workload, err)
            # Woken by the next change; the timeout bounds how late a slot freed by another command is taken.
            seen = watched.changed(seen, POLL_SECONDS) if moving or pending else seen


def evict_all(api: client.ApiClient, args: cli.Rollout | cli.Canary, slots: Slots, workloads: list[Workload],
              errors: list[BaseException], seconds: dict[Workload, float]) -> None:
    """Evict each workload's pods (live.evict), as many workloads at once as slots allow (workers take them from a
    queue, holding a slot each); records how long each took."""
    todo: queue.Queue[Workload] = queue.Queue()
    for workload in workloads:
        todo.put(workload)
    try:
        meshes = {ns: Mesh(api, args, ns) for ns in {w.namespace for w in workloads}}
    except client.ApiException as err:  # reported by the main thread, like every failure
        errors.append(Failed(f"reading the namespaces to evict in: {err.status} {err.reason}"))
        return

    def worker() -> None:
        while True:
            slot = _take(slots)
            try:
                workload = todo.get_nowait()
            except queue.Empty:
                Slots.give_back(slot)
                return
            try:
                began = time.monotonic()
                move_workload(meshes[workload.namespace], workload)
                seconds[workload] = time.monotonic() - began
            except _FAILURES as err:
                errors.append(Failed(f"{_key(workload)}: {err}"))
            finally:
                Slots.give_back(slot)

    workers = [threading.Thread(target=worker) for _ in range(min(args.limit, len(workloads)))]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()


def _take(slots: Slots) -> int:
    while (slot := slots.try_take()) is None:
        time.sleep(POLL_SECONDS)
    return slot


def still_to_move(api: client.ApiClient, args: cli.Rollout | cli.Canary, workloads: list[Workload]) -> list[Workload]:
    """The workloads that still have a pod on the plane being left (or lacking its sidecar): one read of the pods
    and controllers, of the one namespace or of the cluster."""
    left = {_key(top) for _, top in pods_to_move(api, args, only({w.namespace for w in workloads}))
            if isinstance(top, Workload)}
    return [w for w in workloads if _key(w) in left]


def move(api: client.ApiClient, args: cli.Rollout | cli.Canary, named: list[Workload],
         ) -> tuple[dict[Workload, float], list[BaseException]]:
    """Move the named workloads that still have a pod on args.leaving (restarts and evictions side by side, within
    the wave's slots); returns the seconds each moved one took, and what failed."""
    left = still_to_move(api, args, named) if named else []
    for workload in sorted(set(named) - set(left)):
        print(f"{_key(workload)}: no pod left on {args.leaving}, not moved again", flush=True)
    slots, errors, seconds = Slots(args.wave, args.limit), [], {}
    evicting = threading.Thread(target=evict_all, args=(api, args, slots, [w for w in left if w.evict_because],
                                                        errors, seconds))
    evicting.start()
    try:
        restart_all(api, slots, [w for w in left if not w.evict_because], args.timeout, errors, seconds)
    except WatchFailed as err:  # reading the workloads failed: report it once the evictions end
        errors.insert(0, err)
    evicting.join()
    return seconds, errors


def main(argv: list[str] | None = None) -> int:
    args = cli.Rollout.from_argv(argv, __doc__)
    api = api_client(args)
    moved, errors = move(api, args, plan_workloads(json.load(sys.stdin)))
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    print(f"moved {len(moved)} of {len(moved) + len(errors)} workload(s) in "
          f"{len({w.namespace for w in moved})} namespace(s)", flush=True)
    print(account_line(moved), flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
