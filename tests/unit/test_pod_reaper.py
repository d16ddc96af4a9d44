"""devcluster.pod_reaper's choices (pure): which pods it removes, and after how long."""

from __future__ import annotations

import pytest

from devcluster.pod_reaper import delay_s, terminating


def pod(deleting=True, finalizers=None, node="kwok-node-0", delay=None):
    annotations = {"pod-delete.stage.kwok.x-k8s.io/delay": delay} if delay is not None else {}
    meta = {"name": "db-0", "namespace": "ns", "uid": "u1", "annotations": annotations,
            **({"deletionTimestamp": "2026-12-04T17:00:00Z"} if deleting else {}),
            **({"finalizers": finalizers} if finalizers else {})}
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


@pytest.mark.parametrize("text, seconds", [("250ms", 0.25), ("2000ms", 2.0), ("1s", 1.0), ("1m30s", 90.0),
                                           ("1.5s", 1.5), (None, 1.0), ("", 1.0), ("soon", 1.0), ("5", 1.0)])
def test_delay_is_the_kwok_annotation_as_a_go_duration_else_one_second(text, seconds):
    assert delay_s(pod(delay=text)) == pytest.approx(seconds)


def test_only_terminating_pods_on_a_node_without_finalizers():
    assert terminating(pod())
    assert not terminating(pod(deleting=False))
    assert not terminating(pod(finalizers=["example.com/keep"])), "a finalizer's owner removes it first"
    assert not terminating(pod(node=None)), "the apiserver removes an unscheduled pod itself"
