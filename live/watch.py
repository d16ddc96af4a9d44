"""The workloads a rollout waits on, kept current by one list and then one watch per kind, as an informer does: the
apiserver sends each change once instead of the whole list on every poll (a few hundred Deployments are ~1-2 MB
per list on a Kubeflow cluster).

Each kind has a thread: list (of the one namespace, or of the cluster), then watch from the list's resourceVersion;
when the watch ends (the apiserver closes it after WATCH_SECONDS), expires (410 Gone) or breaks, list again. The
waiting thread calls changed() and reads snapshot().
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Iterable, Mapping

from kubernetes import client, watch

RELIST_BACKOFF_SECONDS = 1.0
WATCH_SECONDS = 240  # as client-go's reflectors, a watch is renewed every few minutes: a silently dead connection
READ_TIMEOUT = (10, WATCH_SECONDS + 30)  # does not keep a stale view for longer (no byte within the read timeout)
_LIST = {"Deployment": "deployment", "StatefulSet": "stateful_set", "DaemonSet": "daemon_set"}


def key(namespace: str, kind: str, name: str) -> str:
    """How a workload is named in a WorkloadWatch: 'namespace/Kind/name'."""
    return f"{namespace}/{kind}/{name}"


def only(namespaces: set[str]) -> str | None:
    """The namespace to read when there is just one; None: read the cluster."""
    return next(iter(namespaces)) if len(namespaces) == 1 else None


def apply(objects: dict[str, dict[str, Any]], kind: str, namespaces: set[str], event: Mapping[str, Any]) -> bool:
    """Apply one watch event of kind to objects ('namespace/Kind/name' -> object); objects outside namespaces are
    ignored. Whether objects changed."""
    obj = event["raw_object"]
    meta = obj.get("metadata") or {}
    if event["type"] not in ("ADDED", "MODIFIED", "DELETED") or meta.get("namespace") not in namespaces:
        return False
    name = key(meta["namespace"], kind, meta["name"])
    if event["type"] == "DELETED":
        return objects.pop(name, None) is not None
    objects[name] = obj | {"kind": kind}
    return True


class WatchFailed(RuntimeError):
    """A kind could not be listed at all (the message says which and why)."""


class WorkloadWatch:
    """The Deployments, StatefulSets and DaemonSets (of kinds) in namespaces, current to within the watch's delay:
    read from the one namespace when there is one, else from the cluster. Returns once each kind was listed."""

    def __init__(self, api: client.ApiClient, namespaces: set[str], kinds: Iterable[str]):
        self._apps, self._namespaces, kinds = client.AppsV1Api(api), set(namespaces), set(kinds)
        self._only = only(self._namespaces)
        self._objects: dict[str, dict[str, Any]] = {}
        self._changed = threading.Condition()
        self._generation = 0
        self._failed: WatchFailed | None = None
        self._listed: set[str] = set()
        for kind in sorted(kinds):
            threading.Thread(target=self._follow, args=(kind,), daemon=True, name=f"watch-{kind}").start()
        with self._changed:
            self._changed.wait_for(lambda: self._failed is not None or len(self._listed) == len(kinds))
        self._raise_if_failed()

    def _list_call(self, kind: str) -> tuple[Callable[..., Any], tuple[str, ...]]:
        resource = _LIST[kind]
        if self._only:
            return getattr(self._apps, f"list_namespaced_{resource}"), (self._only,)
        return getattr(self._apps, f"list_{resource}_for_all_namespaces"), ()

    def _follow(self, kind: str) -> None:
        listing, args = self._list_call(kind)
        while True:
            try:
                version = self._relist(kind, listing, args)
                for event in watch.Watch(return_type="object").stream(
                        listing, *args, resource_version=version, timeout_seconds=WATCH_SECONDS,
                        _request_timeout=READ_TIMEOUT):
                    with self._changed:
                        if apply(self._objects, kind, self._namespaces, event):
                            self._notify()
            except client.ApiException as err:
                if err.status != 410:  # 410: the watch expired, listing again is the cure
                    self._fail_if_unlisted(kind, err)
                    time.sleep(RELIST_BACKOFF_SECONDS)
            except Exception as err:  # a broken connection: list again after a pause
                self._fail_if_unlisted(kind, err)
                time.sleep(RELIST_BACKOFF_SECONDS)

    def _relist(self, kind: str, listing: Callable[..., Any], args: tuple[str, ...]) -> str:
        """Replace what is known of kind by a fresh list; its resourceVersion, to watch from."""
        found = json.loads(listing(*args, _preload_content=False).data)
        with self._changed:
            for name in [n for n, o in self._objects.items() if o["kind"] == kind]:
                del self._objects[name]
            for item in found["items"]:
                apply(self._objects, kind, self._namespaces, {"type": "ADDED", "raw_object": item})
            self._listed.add(kind)
            self._notify()
        return found["metadata"]["resourceVersion"]

    def _fail_if_unlisted(self, kind: str, err: BaseException) -> None:
        """A kind never listed fails the watch (e.g. no right to list it); one listed before is listed again."""
        with self._changed:
            if kind not in self._listed:
                where = f"namespace {self._only}" if self._only else "the cluster"
                self._failed = WatchFailed(f"listing the {kind}s of {where}: {err}")
                self._notify()

    def _notify(self) -> None:
        self._generation += 1
        self._changed.notify_all()

    def _raise_if_failed(self) -> None:
        if self._failed is not None:
            raise self._failed

    def changed(self, seen: int, timeout: float) -> int:
        """Wait until objects change after generation seen (or timeout seconds pass); the generation now."""
        with self._changed:
            self._changed.wait_for(lambda: self._generation != seen, timeout)
            self._raise_if_failed()
            return self._generation

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._changed:
            return dict(self._objects)
