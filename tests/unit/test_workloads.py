"""Which pods need moving, which workload owns each and how it is moved: pure functions over pods shaped as the
API returns them (slimmed), with the injector webhooks istioctl renders for the charm's install."""

from __future__ import annotations

import dataclasses
import json
import shlex

import pytest

from migration import plan
from migration.args import RolloutsArgs
from migration.decide import decide
from migration.target import KubeTarget
from migration.workloads import Workload, moves, needs_move, offenders, owner, slim
from tests.fixtures import recorded
from tests.unit.live_mesh import CFG, LEGACY_ISTIOD, NEW_ISTIOD, charm_install, pod

WEBHOOKS = charm_install().mutating_webhooks
PLANES = {"istiod.kubeflow", "istiod-kf-1-30.istio-system"}
NAMESPACES = {"injected": {"istio-injection": "enabled"}, "rev": {"istio.io/rev": "default"}, "plain": {},
              "disabled": {"istio-injection": "disabled"}}
NO = {"sidecar.istio.io/inject": "false"}
YES = {"sidecar.istio.io/inject": "true"}


def _with(p, **spec):
    p["spec"].update(spec.pop("spec", {}))
    p["metadata"].update(spec)
    return p


# (row, pod, needs moving off the legacy istiod?)
TABLE = [
    ("injected namespace, sidecar on the old istiod", pod("injected", "a", None, LEGACY_ISTIOD), True),
    ("injected namespace, sidecar on the new istiod", pod("injected", "a", None, NEW_ISTIOD), False),
    ("injected namespace, no sidecar yet", pod("injected", "a", None, None), True),
    ("opt-out by label", pod("injected", "a", None, None, labels=NO), False),
    ("opt-out by annotation", pod("injected", "a", None, None, annotations=NO), False),
    ("the label wins over the annotation", pod("injected", "a", None, None, labels=YES, annotations=NO), True),
    ("namespace labelled istio.io/rev=default", pod("rev", "a", None, None), True),
    ("pod labelled inject=true in an unlabelled namespace", pod("plain", "a", None, None, labels=YES), True),
    ("unlabelled namespace, plain pod", pod("plain", "a", None, None), False),
    ("an annotation alone selects no webhook", pod("plain", "a", None, None, annotations=YES), False),
    ("namespace with injection disabled", pod("disabled", "a", None, None), False),
    ("Succeeded", pod("injected", "a", None, LEGACY_ISTIOD, phase="Succeeded"), False),
    ("Failed", pod("injected", "a", None, LEGACY_ISTIOD, phase="Failed"), False),
    ("terminating", _with(pod("injected", "a", None, LEGACY_ISTIOD), deletionTimestamp="2026-12-03T10:00:00Z"),
     False),
    ("host network: istiod never injects it", _with(pod("injected", "a", None, None), spec={"hostNetwork": True}),
     False),
    ("a proxy of another control plane is not ours", pod("injected", "a", None, "istiod-canary.other.svc:15012"),
     False),
    ("the gateway opts out of injection but is a proxy on the old istiod", pod("plain", "gw", None, LEGACY_ISTIOD,
                                                                               labels=NO), True),
]


@pytest.mark.parametrize("row,p,expected", TABLE, ids=[r[0] for r in TABLE])
def test_needs_move(row, p, expected):
    assert needs_move(p, LEGACY_ISTIOD, NAMESPACES[p["metadata"]["namespace"]], WEBHOOKS, PLANES) is expected


def test_offenders_name_the_pod_its_owner_and_why():
    pods = [pod("injected", "old", ("StatefulSet", "nb"), LEGACY_ISTIOD), pod("injected", "bare", None, None),
            pod("injected", "moved", None, NEW_ISTIOD)]
    found = offenders(pods, {("StatefulSet", "injected", "nb"): {"owner": ("Notebook", "nb")}}, NAMESPACES,
                      WEBHOOKS, LEGACY_ISTIOD, NEW_ISTIOD)
    assert found == [
        "injected/old (StatefulSet/nb, evicted because controlled by Notebook/nb, which owns its template): "
        "sidecar on istiod.kubeflow.svc:15012",
        "injected/bare (no controller, see kf-istio-migrate:unmanagedPods): no sidecar yet"]


CONTROLLERS = {
    ("ReplicaSet", "ns", "web-1"): {"owner": ("Deployment", "web")}, ("Deployment", "ns", "web"): {"owner": None},
    ("ReplicaSet", "ns", "kserve-1"): {"owner": ("Deployment", "kserve")},
    ("Deployment", "ns", "kserve"): {"owner": ("Revision", "kserve-00001")},
    ("StatefulSet", "ns", "db"): {"owner": None, "strategy": "RollingUpdate"},
    ("StatefulSet", "ns", "nb"): {"owner": ("Notebook", "nb"), "strategy": "RollingUpdate"},
    ("StatefulSet", "ns", "legacy-db"): {"owner": None, "strategy": "OnDelete"},
    ("DaemonSet", "ns", "agent"): {"owner": None, "strategy": "RollingUpdate"},
    ("DaemonSet", "ns", "old-agent"): {"owner": None, "strategy": "OnDelete"},
    ("ReplicaSet", "ns", "lonely"): {"owner": None}, ("Job", "ns", "train"): {"owner": None},
}
OWNERS = [
    (("ReplicaSet", "web-1"), Workload("ns", "Deployment", "web")),
    (("ReplicaSet", "kserve-1"), Workload("ns", "Deployment", "kserve",
                                          "controlled by Revision/kserve-00001, which owns its template")),
    (("StatefulSet", "db"), Workload("ns", "StatefulSet", "db")),
    (("StatefulSet", "nb"), Workload("ns", "StatefulSet", "nb", "controlled by Notebook/nb, which owns its template")),
    (("StatefulSet", "legacy-db"), Workload("ns", "StatefulSet", "legacy-db",
                                            "updateStrategy OnDelete replaces pods only when they are deleted")),
    (("DaemonSet", "agent"), Workload("ns", "DaemonSet", "agent")),
    (("DaemonSet", "old-agent"), Workload("ns", "DaemonSet", "old-agent",
                                          "updateStrategy OnDelete replaces pods only when they are deleted")),
    (("ReplicaSet", "lonely"), Workload("ns", "ReplicaSet", "lonely", "a ReplicaSet without a Deployment cannot be rolled")),
    (("Job", "train"), "Job/train"),
    (("Workflow", "pipeline-x"), "Workflow/pipeline-x"),
    (None, "no controller"),
]


@pytest.mark.parametrize("controller,expected", OWNERS, ids=[str(o[1]) for o in OWNERS])
def test_owner(controller, expected):
    assert owner(pod("ns", "p", controller, LEGACY_ISTIOD), CONTROLLERS) == expected


def test_moves_groups_pods_by_workload_and_keeps_moved_ones():
    """Every workload with a pod on either plane (so the set is the same before and after the move), the gateway
    left to its component, pods outside the mesh ignored, pods without a workload listed."""
    pods = [pod("ns", "web-1-a", ("ReplicaSet", "web-1"), LEGACY_ISTIOD),
            pod("ns", "web-1-b", ("ReplicaSet", "web-1"), NEW_ISTIOD),
            pod("ns", "nb-0", ("StatefulSet", "nb"), NEW_ISTIOD),
            pod("ns", "agent-x", ("DaemonSet", "agent"), LEGACY_ISTIOD),
            pod("ns", "gw-1-a", ("ReplicaSet", "gw-1"), LEGACY_ISTIOD),
            pod("ns", "train-x", ("Job", "train"), LEGACY_ISTIOD),
            pod("ns", "train-done", ("Job", "train"), LEGACY_ISTIOD, phase="Succeeded"),
            pod("ns", "step-1", ("Workflow", "pipeline-x"), None),
            pod("plain", "other", ("ReplicaSet", "other-1"), None)]
    controllers = {**CONTROLLERS, ("ReplicaSet", "ns", "gw-1"): {"owner": ("Deployment", "gw")}}
    found = moves(pods, controllers, {"ns": {"istio-injection": "enabled"}, "plain": {}}, WEBHOOKS, LEGACY_ISTIOD,
                  NEW_ISTIOD, excluded=[("Deployment", "ns", "gw")])
    assert [w.ref for w in found.workloads] == ["DaemonSet/agent", "Deployment/web", "StatefulSet/nb"]
    assert found.unmanaged == ("ns/step-1 (Workflow/pipeline-x)", "ns/train-x (Job/train)")


def test_slim_keeps_what_the_rules_read():
    full = {"metadata": {"namespace": "ns", "name": "p", "uid": "u", "labels": {"a": "b"}, "annotations": {},
                         "ownerReferences": None, "resourceVersion": "1", "managedFields": [{"x": 1}]},
            "spec": {"containers": [{"name": "main", "image": "x", "env": [{"name": "A", "value": "1"}]},
                                    {"name": "istio-proxy", "env": [{"name": "CA_ADDR", "value": LEGACY_ISTIOD},
                                                                    {"name": "ISTIO_META_X", "value": "y"}]}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "main", "restartCount": 5},
                                             {"name": "istio-proxy", "restartCount": 2}]}}
    small = slim(full)
    assert small["spec"]["containers"] == [{"name": "istio-proxy", "env": [{"name": "CA_ADDR", "value": LEGACY_ISTIOD}]}]
    assert small["status"] == {"phase": "Running", "ready": True, "proxyRestarts": 2}
    assert "managedFields" not in small["metadata"]
    assert needs_move(small, LEGACY_ISTIOD, {}, WEBHOOKS, PLANES)


def _decide(unmanaged_pods: str):
    live = charm_install()
    live = dataclasses.replace(live, pods=live.pods + [pod("kubeflow-user-000", "step-1", None, LEGACY_ISTIOD)])
    cfg = dataclasses.replace(CFG, unmanaged_pods=unmanaged_pods)
    return decide(cfg, recorded.renders(CFG), live, KubeTarget("/k", "ctx", "https://x"))


def test_unmanaged_pods_fail_refuses_naming_them():
    with pytest.raises(plan.PreflightRefused, match=r"kubeflow-user-000/step-1 \(no controller\).*unmanagedPods"):
        _decide("fail")


def test_preview_shows_the_work():
    outputs = _decide("wait").outputs
    assert outputs["workloadMoves"] == {"kubeflow-user-000": {"restart Deployment": 2},
                                        "kubeflow-user-001": {"restart Deployment": 2}}
    assert outputs["unmanagedPods"] == ["kubeflow-user-000/step-1 (no controller): wait"]


def test_one_process_restarts_some_and_evicts_others_named_on_its_standard_input():
    from components.rollouts import rollout_plan, rollout_script
    from live.rollout import plan_workloads
    target = KubeTarget("/k", "ctx", "https://x")
    batch = (Workload("ns", "Deployment", "web"), Workload("ns", "StatefulSet", "db"),
             Workload("ns", "StatefulSet", "nb", "controlled by Notebook/nb, which owns its template"),
             Workload("other", "Deployment", "web"))
    args = RolloutsArgs(batches=(batch,), strategy="wave", parallelism=3, timeout_seconds=60,
                        istiod_address=NEW_ISTIOD, leaving=LEGACY_ISTIOD, target=target)
    argv = shlex.split(rollout_script(args))
    assert argv[1:] == ["-m", "live.rollout", "--kubeconfig", "/k", "--context", "ctx",
                        "--wave", f"https://x|{LEGACY_ISTIOD}->{NEW_ISTIOD}", "--limit", "3",
                        "--leaving", LEGACY_ISTIOD, "--istiod", NEW_ISTIOD, "--timeout", "60"]
    plan = rollout_plan(batch)
    assert plan == {"ns": {"restart": ["Deployment/web", "StatefulSet/db"], "evict": ["StatefulSet/nb"]},
                    "other": {"restart": ["Deployment/web"], "evict": []}}
    moved = plan_workloads(json.loads(json.dumps(plan)))
    assert [(w.namespace, w.ref, bool(w.evict_because)) for w in moved] == [
        ("ns", "Deployment/web", False), ("ns", "StatefulSet/db", False), ("other", "Deployment/web", False),
        ("ns", "StatefulSet/nb", True)], "the command reads back exactly the workloads planned, restarts first"


def test_the_wave_starts_the_rollouts_with_the_most_pod_starts_in_sequence_first():
    from live.rollout import longest_first
    web, db, big, gone = (Workload("a", "Deployment", "web"), Workload("a", "StatefulSet", "db"),
                          Workload("b", "Deployment", "big"), Workload("b", "Deployment", "gone"))
    objects = {"a/Deployment/web": {"kind": "Deployment", "spec": {"replicas": 1}},
               "a/StatefulSet/db": {"kind": "StatefulSet", "spec": {"replicas": 3}},
               "b/Deployment/big": {"kind": "Deployment", "spec": {"replicas": 8}}}
    assert longest_first([gone, web, big, db], objects) == [db, big, web, gone]
    assert longest_first([web, Workload("c", "Deployment", "web")],
                         objects | {"c/Deployment/web": objects["a/Deployment/web"]})[0] == web, "ties keep order"
