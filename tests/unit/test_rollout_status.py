"""migration.rollout_status: `kubectl rollout status`'s rules, one object at a time."""

import pytest

from migration.rollout_status import RolloutFailed, rolled_out, sequential_pod_starts


def deployment(generation=2, observed=2, replicas=2, updated=2, total=2, available=2, conditions=()):
    return {"kind": "Deployment", "metadata": {"namespace": "ns", "name": "app", "generation": generation},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "updatedReplicas": updated, "replicas": total,
                       "availableReplicas": available, "conditions": list(conditions)}}


def stateful_set(ready=2, current="r1", update="r2", strategy=None, observed=3):
    return {"kind": "StatefulSet", "metadata": {"namespace": "ns", "name": "db", "generation": 3},
            "spec": {"replicas": 2, "updateStrategy": strategy or {"type": "RollingUpdate"}},
            "status": {"observedGeneration": observed, "readyReplicas": ready, "currentRevision": current,
                       "updateRevision": update, "updatedReplicas": 1}}


@pytest.mark.parametrize("obj, done", [
    (deployment(), True),
    (deployment(observed=1), False),  # the controller has not seen the restart yet
    (deployment(updated=1), False),
    (deployment(total=3), False),  # an old replica still terminating
    (deployment(available=1), False),
    (stateful_set(), False),  # pods still on the old revision
    (stateful_set(current="r2"), True),
    (stateful_set(ready=1, current="r2"), False),
    (stateful_set(observed=2, current="r2"), False),
    (stateful_set(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}), True),
])
def test_rolled_out(obj, done):
    assert rolled_out(obj) is done


def test_a_deployment_past_its_progress_deadline_fails_by_name():
    stuck = deployment(updated=1, conditions=[{"type": "Progressing", "reason": "ProgressDeadlineExceeded",
                                               "message": "ReplicaSet app-1 has timed out progressing."}])
    with pytest.raises(RolloutFailed, match="ns/Deployment/app exceeded its progress deadline: ReplicaSet app-1"):
        rolled_out(stuck)


def test_an_on_delete_stateful_set_cannot_be_rolled():
    with pytest.raises(RolloutFailed, match="OnDelete"):
        rolled_out(stateful_set(strategy={"type": "OnDelete"}))


def _workload(kind, replicas=None, strategy=None, desired=None):
    spec = {} if replicas is None else {"replicas": replicas}
    spec["strategy" if kind == "Deployment" else "updateStrategy"] = strategy or {}
    return {"kind": kind, "metadata": {"namespace": "ns", "name": "w"}, "spec": spec,
            "status": {} if desired is None else {"desiredNumberScheduled": desired}}


@pytest.mark.parametrize("obj, starts", [
    (_workload("Deployment", 1), 1),  # maxSurge 25 % of 1 rounds up to 1
    (_workload("Deployment"), 1),  # replicas default to 1
    (_workload("Deployment", 8), 2),  # 2 surge + 2 unavailable at a time
    (_workload("Deployment", 10), 2),  # 3 surge (rounded up) + 2 unavailable (rounded down)
    (_workload("Deployment", 10, {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}), 10),
    (_workload("Deployment", 10, {"type": "Recreate"}), 1),
    (_workload("Deployment", 0), 0),
    (_workload("StatefulSet", 3), 3),  # one pod at a time, whatever podManagementPolicy says
    (_workload("StatefulSet", 5, {"rollingUpdate": {"partition": 3}}), 2),
    (_workload("StatefulSet", 4, {"rollingUpdate": {"maxUnavailable": "50%"}}), 2),
    (_workload("DaemonSet", desired=6), 6),  # maxUnavailable 1, no surge
    (_workload("DaemonSet", desired=6, strategy={"rollingUpdate": {"maxUnavailable": "50%"}}), 2),
    (_workload("DaemonSet", desired=0), 0),
])
def test_sequential_pod_starts_follow_each_controllers_rollout_strategy(obj, starts):
    assert sequential_pod_starts(obj) == starts
