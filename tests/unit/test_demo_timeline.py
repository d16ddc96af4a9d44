"""The demo's timeline comes from pure functions over its recordings (pods, the engine's event log, the injector
injector history's states): checked here on a hand-made update that started at t=100."""

from __future__ import annotations

import json

from demo.timeline import Move, draw, injector_series, planned_ways, timeline_of, unmanaged_ways, workload_moves
from update_timeline.recorder import pod_event

OLD, NEW = "istiod.kubeflow.svc:15012", "istiod-kf-1-30.istio-system.svc:15012"
STARTED = 100.0
URN = "urn:pulumi:migrated::kf-istio-migrate::"
CONTROLLERS = {
    ("ReplicaSet", "p0", "web-1"): {"owner": ("Deployment", "web")},
    ("ReplicaSet", "p0", "web-2"): {"owner": ("Deployment", "web")},
    ("Deployment", "p0", "web"): {"owner": None},
    ("StatefulSet", "p0", "nb-0"): {"owner": ("Notebook", "nb-0")},
    ("ReplicaSet", "kubeflow", "gw-0"): {"owner": ("Deployment", "gw")},
    ("ReplicaSet", "kubeflow", "gw-1"): {"owner": ("Deployment", "gw")},
    ("ReplicaSet", "kubeflow", "gw-2"): {"owner": ("Deployment", "gw")},
    ("ReplicaSet", "p0", "quiet-1"): {"owner": ("Deployment", "quiet")},
}


def pod(t: float, event: str, name: str, uid: str, controller: tuple[str, str], istiod: str | None,
        ns: str = "p0", ready: bool = True, phase: str = "Running", deleting: bool = False) -> dict:
    """A pod watch event as update_timeline.recorder.PodRecorder records it, at time t."""
    proxy = [{"name": "istio-proxy", "env": [{"name": "CA_ADDR", "value": istiod}]}] if istiod else []
    raw = {"metadata": {"namespace": ns, "name": name, "uid": uid,
                        "ownerReferences": [{"kind": controller[0], "name": controller[1], "controller": True}],
                        "deletionTimestamp": "2026-12-06T00:00:00Z" if deleting else None},
           "spec": {"containers": [{"name": "main"}, *proxy]},
           "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    return dict(pod_event(event, raw), t=t)


POD_EVENTS = [
    # web (restarted): a surge pod on the new istiod, Ready at 112; the old one terminates at 113
    pod(99.0, "LISTED", "web-1-a", "w1", ("ReplicaSet", "web-1"), OLD),
    pod(110.0, "ADDED", "web-2-b", "w2", ("ReplicaSet", "web-2"), NEW, ready=False),
    pod(112.0, "MODIFIED", "web-2-b", "w2", ("ReplicaSet", "web-2"), NEW),
    pod(113.0, "MODIFIED", "web-1-a", "w1", ("ReplicaSet", "web-1"), OLD, deleting=True),
    pod(114.0, "DELETED", "web-1-a", "w1", ("ReplicaSet", "web-1"), OLD, deleting=True),
    # the notebook (evicted): its pod goes at 115, the replacement is Ready on the new istiod at 119
    pod(99.0, "LISTED", "nb-0-0", "n1", ("StatefulSet", "nb-0"), OLD),
    pod(115.0, "MODIFIED", "nb-0-0", "n1", ("StatefulSet", "nb-0"), OLD, deleting=True),
    pod(116.0, "DELETED", "nb-0-0", "n1", ("StatefulSet", "nb-0"), OLD, deleting=True),
    pod(117.0, "ADDED", "nb-0-0", "n2", ("StatefulSet", "nb-0"), NEW, ready=False),
    pod(119.0, "MODIFIED", "nb-0-0", "n2", ("StatefulSet", "nb-0"), NEW),
    # the gateway (patched): rolled twice, first onto a pod still on the old istiod, done at 108
    pod(99.0, "LISTED", "gw-0-a", "g0", ("ReplicaSet", "gw-0"), OLD, ns="kubeflow"),
    pod(103.0, "ADDED", "gw-1-a", "g1", ("ReplicaSet", "gw-1"), OLD, ns="kubeflow"),
    pod(104.0, "DELETED", "gw-0-a", "g0", ("ReplicaSet", "gw-0"), OLD, ns="kubeflow"),
    pod(106.0, "ADDED", "gw-2-a", "g2", ("ReplicaSet", "gw-2"), NEW, ns="kubeflow", ready=False),
    pod(108.0, "MODIFIED", "gw-2-a", "g2", ("ReplicaSet", "gw-2"), NEW, ns="kubeflow"),
    pod(108.0, "MODIFIED", "gw-1-a", "g1", ("ReplicaSet", "gw-1"), OLD, ns="kubeflow", deleting=True),
    # a pipeline step (unmanaged, waited for): finishes at 140
    pod(99.0, "LISTED", "pipeline-x-train-1", "s1", ("Workflow", "pipeline-x"), OLD),
    pod(140.0, "MODIFIED", "pipeline-x-train-1", "s1", ("Workflow", "pipeline-x"), OLD, phase="Succeeded",
        ready=False),
    # a Deployment that opted out: no sidecar, never touched
    pod(99.0, "LISTED", "quiet-1-a", "q1", ("ReplicaSet", "quiet-1"), None),
]


def step(t: float, kind: str, urn: str, type_: str, inputs: dict | None = None) -> tuple[float, dict]:
    """An engine event of the update's event log, stamped at t (update_timeline.event_log.EventLogTail)."""
    return t, {kind: {"metadata": {"urn": URN + urn, "type": type_, "op": "create", "new": {"inputs": inputs or {}}}}}


PLAN = {"p0": {"restart": ["Deployment/web"], "evict": ["StatefulSet/nb-0"]}}
STAMPED = [
    step(102.0, "resourcePreEvent", "kfistio:kubeflow:IngressGateway$kubernetes:apps/v1:DeploymentPatch::gateway-gw",
         "kubernetes:apps/v1:DeploymentPatch", {"metadata": {"namespace": "kubeflow", "name": "gw"}}),
    step(103.0, "resOutputsEvent", "kfistio:kubeflow:IngressGateway$kubernetes:apps/v1:DeploymentPatch::gateway-gw",
         "kubernetes:apps/v1:DeploymentPatch"),
    step(105.0, "resourcePreEvent", "kfistio:migration:WebhookSwitch$kubernetes:admissionregistration.k8s.io/v1:"
         "MutatingWebhookConfiguration::switch-injector", "kubernetes:admissionregistration.k8s.io/v1:"
         "MutatingWebhookConfiguration"),
    step(106.0, "resOutputsEvent", "kfistio:migration:WebhookSwitch$kubernetes:admissionregistration.k8s.io/v1:"
         "MutatingWebhookConfiguration::switch-injector", "kubernetes:admissionregistration.k8s.io/v1:"
         "MutatingWebhookConfiguration"),
    step(109.0, "resourcePreEvent", "kfistio:migration:Rollouts$command:local:Command::rollouts-wave",
         "command:local:Command", {"stdin": json.dumps(PLAN)}),
    step(120.0, "resourcePreEvent", "kfistio:migration:UnmanagedPods$command:local:Command::unmanaged-pods",
         "command:local:Command"),
    step(121.0, "resOutputsEvent", "kfistio:migration:Rollouts$command:local:Command::rollouts-wave",
         "command:local:Command"),
    step(141.0, "resOutputsEvent", "kfistio:migration:UnmanagedPods$command:local:Command::unmanaged-pods",
         "command:local:Command"),
]
OUTPUTS = {"istiodAddress": NEW, "unmanagedPods": ["p0/pipeline-x-train-1 (Workflow/pipeline-x): wait"]}
STATES = [{"t": 99.5 + i, "injectors": {"p0": 1, "p1": 1 if i != 6 else 2}} for i in range(45)]


def test_ways_come_from_the_rollout_plan_and_the_gateway_steps_the_update_ran():
    assert planned_ways(STAMPED) == {"p0/Deployment/web": "restart", "p0/StatefulSet/nb-0": "evict",
                                     "kubeflow/Deployment/gw": "patch"}


def test_unmanaged_pods_and_their_policy_come_from_the_stack_output():
    assert unmanaged_ways(["p0/pipeline-x-train-1 (Workflow/pipeline-x): wait", "p1/bare (no controller): evict"]) \
        == {"p0/pipeline-x-train-1": ("Workflow/pipeline-x", "wait"), "p1/bare": ("no controller", "evict")}


def test_each_moved_workload_is_one_bar_with_its_way_in_the_order_they_started():
    timeline = timeline_of(STAMPED, POD_EVENTS, CONTROLLERS, STATES, OUTPUTS, STARTED, 145.0)
    assert timeline.moves == [
        Move("kubeflow/Deployment/gw", "patch", 3.0, 8.0),  # its first rollout, still on the old istiod, is not done
        Move("p0/Deployment/web", "restart", 10.0, 13.0),
        Move("p0/StatefulSet/nb-0", "evict", 15.0, 19.0),
        Move("p0/pipeline-x-train-1 (Workflow/pipeline-x)", "wait", 20.0, 40.0),  # from its step's start
    ]
    assert timeline.wall == 45.0 and timeline.destination == NEW
    assert [phase for phase, _, _ in timeline.phases][1:] == ["gateway", "webhook switch", "workloads",
                                                              "pods no workload covers"]


def test_a_move_the_recording_did_not_see_end_has_no_done_and_an_untouched_workload_no_bar():
    before_ready = [e for e in POD_EVENTS if e["t"] < 119.0]
    ways = {"p0/StatefulSet/nb-0": "evict", "p0/Deployment/quiet": "restart"}
    moves = workload_moves(before_ready, CONTROLLERS, ways, {}, NEW, STARTED, 20.0)
    assert moves == [Move("p0/StatefulSet/nb-0", "evict", 15.0, None)]


def test_a_pod_that_finished_before_its_step_began_is_drawn_when_it_finished():
    moves = workload_moves(POD_EVENTS, CONTROLLERS, {}, {"p0/pipeline-x-train-1": ("Workflow/pipeline-x", "wait")},
                           NEW, STARTED, 50.0)
    assert moves == [Move("p0/pipeline-x-train-1 (Workflow/pipeline-x)", "wait", 40.0, 40.0)]


def test_the_injector_series_is_the_fewest_and_most_over_the_namespaces_of_each_state():
    series = injector_series(STATES, STARTED)
    assert len(series) == len(STATES) and series[0] == (-0.5, 1, 1) and series[6] == (5.5, 1, 2)
    assert injector_series([{"t": 101.0, "injectors": {}}], STARTED) == [], "a state of no namespace says nothing"
    timeline = timeline_of(STAMPED, POD_EVENTS, CONTROLLERS, STATES, OUTPUTS, STARTED, 145.0)
    assert timeline.injectors == series and timeline.namespaces == 2


def test_draw_writes_a_png(tmp_path):
    path = tmp_path / "demo" / "timeline.png"
    draw(timeline_of(STAMPED, POD_EVENTS, CONTROLLERS, STATES, OUTPUTS, STARTED, 145.0), path)
    assert path.read_bytes().startswith(b"\x89PNG")
