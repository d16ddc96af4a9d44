"""live.watch.apply: the rollout's view of its workloads follows the watch's events (pure)."""

from __future__ import annotations

from live.watch import apply, only


def _event(kind: str, namespace: str, name: str, generation: int = 1) -> dict:
    return {"type": kind, "raw_object": {"metadata": {"namespace": namespace, "name": name,
                                                      "generation": generation}}}


def test_added_and_modified_replace_the_object_and_deleted_drops_it():
    objects: dict = {}
    assert apply(objects, "Deployment", {"a"}, _event("ADDED", "a", "web"))
    assert apply(objects, "Deployment", {"a"}, _event("MODIFIED", "a", "web", generation=2))
    assert objects == {"a/Deployment/web": {"kind": "Deployment",
                                            "metadata": {"namespace": "a", "name": "web", "generation": 2}}}
    assert apply(objects, "Deployment", {"a"}, _event("DELETED", "a", "web"))
    assert objects == {}


def test_other_namespaces_bookmarks_and_unknown_deletes_change_nothing():
    objects: dict = {}
    assert not apply(objects, "StatefulSet", {"a"}, _event("ADDED", "b", "db"))
    assert not apply(objects, "StatefulSet", {"a"}, {"type": "BOOKMARK", "raw_object": {"metadata": {}}})
    assert not apply(objects, "StatefulSet", {"a"}, _event("DELETED", "a", "never-seen"))
    assert objects == {}


def test_one_namespace_is_read_alone_several_from_the_cluster():
    assert only({"a"}) == "a"
    assert only({"a", "b"}) is None
