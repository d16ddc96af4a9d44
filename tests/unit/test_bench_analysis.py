"""The benchmark's numbers come from pure functions over recorded events: checked here on hand-made recordings."""

from __future__ import annotations

import json

from bench.analysis import growth, rollout_spans, summarize_run
from bench.crd_state import held_bytes
from bench.report import LOOP, table
from update_timeline.spans import ISTIOD_STEP, START, step_phase, step_phases


def event(t, ns, name, *, restarted=None, generation=1, observed=1, updated=1, available=1, replicas=1,
          status_replicas=1, condition="True", kind="MODIFIED", workload="Deployment"):
    return {"t": t, "type": kind, "kind": workload, "namespace": ns, "name": name, "restarted_at": restarted,
            "generation": generation, "observed": observed, "replicas": replicas, "status_replicas": status_replicas,
            "updated": updated, "available": available, "available_condition": condition}


EVENTS = [
    event(0.0, "p0", "a", kind="LISTED"), event(0.0, "p0", "b", kind="LISTED"),
    event(0.0, "kubeflow", "istiod", kind="LISTED"),
    event(3.0, "istio-system", "istiod-kf-1-30", kind="ADDED", condition="False", available=0, updated=0),
    event(9.0, "istio-system", "istiod-kf-1-30", condition="True"),
    # a: restarted at 12, a surge pod exists, then the old one goes at 15
    event(12.0, "p0", "a", restarted="r1", generation=2, observed=1),
    event(12.5, "p0", "a", restarted="r1", generation=2, observed=2, updated=1, available=1, status_replicas=2),
    event(15.0, "p0", "a", restarted="r1", generation=2, observed=2),
    # b: restarted at 13, done at 14
    event(13.0, "p0", "b", restarted="r1", generation=2, observed=1),
    event(14.0, "p0", "b", restarted="r1", generation=2, observed=2),
    # db (a StatefulSet of 2): restarted at 12, pods replaced one after the other, done at 18
    event(0.0, "p0", "db", kind="LISTED", workload="StatefulSet", replicas=2, updated=2, available=2, status_replicas=2),
    event(12.0, "p0", "db", restarted="r1", generation=2, observed=2, updated=0, available=2, replicas=2,
          status_replicas=2, workload="StatefulSet"),
    event(15.0, "p0", "db", restarted="r1", generation=2, observed=2, updated=1, available=2, replicas=2,
          status_replicas=2, workload="StatefulSet"),
    event(18.0, "p0", "db", restarted="r1", generation=2, observed=2, updated=2, available=2, replicas=2,
          status_replicas=2, workload="StatefulSet"),
    event(20.0, "kubeflow", "istiod", kind="DELETED"),
]


def test_rollout_spans_end_when_rollout_status_would_return():
    assert rollout_spans(EVENTS, ["p0"]) == {"Deployment p0/a": (12.0, 15.0), "Deployment p0/b": (13.0, 14.0),
                                             "StatefulSet p0/db": (12.0, 18.0)}


def test_unrestarted_deployments_have_no_span():
    assert rollout_spans(EVENTS[:5], ["p0"]) == {}


def test_summary_lower_bound_and_ratio():
    states = [{"t": 1.0, "injectors": {"p0": 1}, "injector_targets": ["kubeflow/istiod"]},
               {"t": 11.0, "injectors": {"p0": 1}, "injector_targets": ["istio-system/istiod-kf-1-30"]}]
    churn = [{"t": 2.0, "outcome": "ok", "detail": ""}, {"t": 10.5, "outcome": "rejected", "detail": "p0/churn-1"},
             {"t": 40.0, "outcome": "ok", "detail": "after the update: not counted"}]
    summary = summarize_run("p4", 0.0, 24.0, EVENTS, states, churn, ["p0"])
    assert summary["istiod_available_s"] == 9.0 and summary["slowest_rollout_s"] == 6.0
    assert summary["lower_bound_s"] == 15.0 and summary["ratio_to_lower_bound"] == 1.6
    assert summary["slot_bound_s"] is None, "no slots given: no bound counting them"
    one_slot = summarize_run("p1", 0.0, 24.0, EVENTS, states, churn, ["p0"], slots=1)
    assert one_slot["slot_bound_s"] == 9.0 + 3.0 + 1.0 + 6.0, "one at a time: Available + every rollout in turn"
    assert one_slot["ratio_to_slot_bound"] == round(24 / 19, 2)
    three_slots = summarize_run("p3", 0.0, 24.0, EVENTS, states, churn, ["p0"], slots=3)
    assert three_slots["slot_bound_s"] == 15.0, "with a slot each, the slowest rollout bounds it"
    assert summary["median_rollout_by_kind_s"] == {"Deployment": 3.0, "StatefulSet": 6.0}
    assert summary["rollouts_by_kind"] == {"Deployment": 2, "StatefulSet": 1}
    assert summary["switch_s"] == 11.0 and summary["old_istiod_deleted_s"] == 20.0
    assert summary["churn"]["created"] == 2 and summary["churn"]["rejected"] == 1
    assert summary["churn"]["examples"] == ["p0/churn-1"]
    assert (summary["injectors_min"], summary["injectors_max"]) == (1, 1)
    assert summary["most_rolling_at_once"] == 3, "a, b and db overlap at 13-14 s"
    assert summary["istiod_created_s"] == 3.0


def test_growth_and_table():
    g = growth({25: 10.0, 100: 16.0, 400: 40.0}, {25: (120, 4.0), 400: (2000, 10.0)})
    assert g["growth_ratio"] == 4.0 and g["namespace_ratio"] == 16.0 and g["ms_per_namespace_marginal"] == 80.0
    assert g["ratio_to_plain"] == {"25": 2.5, "400": 4.0}, "no plain preview measured at 100: no ratio there"
    loop = dict(summarize_run("fast-loop", 0.0, 24.0, EVENTS, [], [], ["p0"]), config={"rolloutStrategy": LOOP},
                pods="fast")
    text = table({"migrations": [loop, dict(loop, label="fast-p10", wall_s=12.0, config={}),
                                 dict(loop, label="slow-p10", pods="slow", config={})], "previews": g})
    assert "speed-up vs the namespace loop" in text and "2.00x" in text and "400 namespaces" in text
    assert "plain preview of 120 resources 4.0s, ratio 2.5x" in text
    speed_up = next(line for line in text.splitlines() if line.startswith("speed-up"))
    assert speed_up.split()[-3:] == ["1.00x", "2.00x", "-"], "no loop run with slow pods: no ratio for them"
    assert "median rollout, StatefulSet" in text


def test_each_run_is_a_ratio_to_the_peer_of_its_pod_profile():
    """The peer (Istio's canary procedure, scripted) of the same pods: each run's wall time as a ratio to it."""
    wave = dict(summarize_run("fast-p50", 0.0, 30.0, EVENTS, [], [], ["p0"]), config={}, pods="fast")
    text = table({"migrations": [wave, dict(wave, label="fast-peer", wall_s=40.0, peer=True),
                                 dict(wave, label="slow-p50", pods="slow")]})
    ratio = next(line for line in text.splitlines() if line.startswith("wall / Istio canary procedure"))
    assert ratio.split()[-3:] == ["0.75", "1.00", "-"], "no peer with slow pods: no ratio for them"
    assert "wall / Istio canary" not in table({"migrations": [wave]})


def test_an_upgrade_is_a_ratio_to_the_peer_upgrade_not_to_the_peer_move():
    """P4: the stack's upgrade beside Istio's canary upgrade of the same pods; the move's peer does not judge it."""
    wave = dict(summarize_run("fast-p50", 0.0, 30.0, EVENTS, [], [], ["p0"]), config={}, pods="fast")
    upgrade = dict(wave, label="fast-upgrade", wall_s=45.0, procedure="upgrade")
    text = table({"migrations": [wave, dict(wave, label="fast-peer", wall_s=40.0, peer=True), upgrade,
                                 dict(upgrade, label="fast-upgrade-peer", wall_s=30.0, peer=True)]})
    ratio = next(line for line in text.splitlines() if line.startswith("wall / Istio canary procedure"))
    assert ratio.split()[-4:] == ["0.75", "1.00", "1.50", "1.00"]


def test_an_upgrade_is_judged_by_the_revisions_it_goes_between():
    """The istiod an upgrade creates and the one it deletes are both in istio-system: the summary follows the ones
    named, not the move's."""
    rename = {("istio-system", "istiod-kf-1-30"): ("istio-system", "istiod-kf-1-31"),
              ("kubeflow", "istiod"): ("istio-system", "istiod-kf-1-30")}
    events = [dict(e, **dict(zip(("namespace", "name"), rename.get((e["namespace"], e["name"]),
                                                                (e["namespace"], e["name"]))))) for e in EVENTS]
    states = [{"t": 1.0, "injectors": {"p0": 1}, "injector_targets": ["istio-system/istiod-kf-1-30"]},
              {"t": 11.0, "injectors": {"p0": 1}, "injector_targets": ["istio-system/istiod-kf-1-31"]}]
    new, old = ("istio-system", "istiod-kf-1-31"), ("istio-system", "istiod-kf-1-30")
    summary = summarize_run("upgrade", 0.0, 24.0, events, states, [], ["p0"], new_istiod=new, old_istiod=old)
    assert (summary["istiod_created_s"], summary["istiod_available_s"]) == (3.0, 9.0)
    assert (summary["switch_s"], summary["old_istiod_deleted_s"]) == (11.0, 20.0)
    moved_defaults = summarize_run("move", 0.0, 24.0, events, states, [], ["p0"])
    assert moved_defaults["switch_s"] == 1.0 and moved_defaults["old_istiod_deleted_s"] is None


URN = "urn:pulumi:migrated::kf-istio-migrate::"


def _step(kind: str, urn: str) -> dict:
    return {kind: {"metadata": {"urn": URN + urn, "op": "create"}}}


def test_phases_come_from_the_component_and_span_their_steps():
    crd = "kfistio:istio:Crds$kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition::istio-crds-"
    istiod = "kfistio:istio:ControlPlane$kubernetes:apps/v1:Deployment::control-plane-istiod"
    config_map = "kfistio:istio:ControlPlane$kubernetes:core/v1:ConfigMap::control-plane-istio"
    rollout = "kfistio:migration:Rollouts$command:local:Command::rollout-p0"
    assert step_phase(URN + crd + "a") == "CRDs" and step_phase(URN + istiod) == ISTIOD_STEP
    assert step_phase(URN + "kfistio:istio:Crds::istio-crds") is None, "a component spans the whole update"
    assert step_phase(URN + "pulumi:pulumi:Stack::kf-istio-migrate-migrated") is None
    assert step_phase(URN + "pulumi:providers:kubernetes::cluster") is None
    teardown = "kfistio:migration:Teardown$command:local:Command::"
    assert step_phase(URN + teardown + "lift-guard") == "lift guard"
    assert step_phase(URN + teardown + "teardown-legacy-control-plane") == "teardown"
    stamped = [(12.0, _step("resourcePreEvent", crd + "a")), (12.5, _step("resourcePreEvent", crd + "b")),
               (14.0, _step("resOutputsEvent", crd + "a")), (15.0, _step("resOutputsEvent", crd + "b")),
               (15.5, _step("resourcePreEvent", config_map)), (15.6, _step("resourcePreEvent", istiod)),
               (16.0, _step("resOutputsEvent", config_map)), (19.0, _step("resOutputsEvent", istiod)),
               (20.0, _step("resourcePreEvent", rollout)), (24.0, _step("resOpFailedEvent", rollout)),
               (24.5, {"summaryEvent": {}})]
    assert step_phases(stamped, 10.0) == [(START, 0.0, 2.0), ("CRDs", 2.0, 5.0),
                                          ("control plane", 5.5, 6.0), (ISTIOD_STEP, 5.6, 9.0),
                                          ("workloads", 10.0, 14.0)]
    loop = dict(summarize_run("fast-loop", 0.0, 24.0, EVENTS, [], [], ["p0"]), config={},
                phases=step_phases(stamped, 10.0), state_mb=2.1, debug_log_mb=40.0)
    text = table({"migrations": [loop, dict(loop, phases=[])]})
    assert "CRDs                                          2.0-5.0              -" in text


def test_debug_log_cost_pairs_a_run_without_the_log_with_the_same_run_with_it():
    run = dict(summarize_run("fast-p10", 0.0, 24.0, EVENTS, [], [], ["p0"]), config={}, debug_log=True,
               cli_cpu_s=50.0)
    text = table({"migrations": [run, dict(run, label="fast-p10-nolog", wall_s=20.0, debug_log=False,
                                           cli_cpu_s=38.5)]})
    assert "debug log cost (fast-p10 - fast-p10-nolog): wall +4.0 s, CPU +11.5 s" in text
    assert "debug log cost" not in table({"migrations": [run]})


def _proxy(second: float, event: str, pod: str, **extra) -> dict:
    whole, fraction = divmod(second, 1)
    return {"time": f"2026-12-03T10:00:{int(whole):02d}.{int(round(fraction * 1e9)):09d}Z", "event": event,
            "pod": pod, **extra}


def test_data_plane_counts_lost_streams_and_the_longest_gap():
    from devcluster.proxy_events import data_plane, seconds
    t0 = seconds("2026-12-03T10:00:00Z")
    events = [
        _proxy(1, "certificate", "ns/a", istiod="kubeflow/i", issuer="r"), _proxy(1.5, "connected", "ns/a"),
        _proxy(10, "stopped", "ns/a"),  # its pod went away: not a lost stream, no gap
        _proxy(11, "certificate", "ns/b"), _proxy(13.25, "connected", "ns/b"),  # a restarted pod: 2.25 s
        _proxy(20, "disconnected", "ns/c", error="EOF"), _proxy(24, "connected", "ns/c"),  # lost for 4 s
        _proxy(30, "start-failed", "ns/d", error="no endpoint"),  # never connected: counts to the end
    ]
    assert data_plane(events, t0 + 5, t0 + 40) == {"proxies_lost_control_plane": 1,
                                                   "longest_without_istiod_s": 10.0,
                                                   "longest_without_istiod_pod": "ns/d (never connected)"}
    assert data_plane(events, t0 + 5, t0 + 25) == {"proxies_lost_control_plane": 1,
                                                   "longest_without_istiod_s": 4.0,
                                                   "longest_without_istiod_pod": "ns/c"}
    assert seconds("2026-12-03T10:00:01.500000000Z") - t0 == 1.5


def test_one_preview_size_reports_no_growth():
    p = growth({25: 5.0}, {25: (65, 2.0)})
    assert p["ratio_to_plain"] == {"25": 2.5} and "growth_ratio" not in p
    text = table({"migrations": [], "previews": p})
    assert "ratio 2.5x" in text and "marginal" not in text
    assert "P1" not in text and "P2" not in text  # a P3-only bench (--pods '') prints no empty migration table


def test_crd_state_counts_each_copy_of_a_crd_in_the_state(tmp_path):
    crd_inputs = {"spec": {"group": "networking.istio.io"}}
    state = {"checkpoint": {"latest": {"resources": [
        {"type": "pulumi:providers:kubernetes", "inputs": {"big": "x" * 1000}, "outputs": {}},
        {"type": "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", "inputs": crd_inputs,
         "outputs": {"spec": {"group": "networking.istio.io"}, "status": {}, "__inputs": crd_inputs}}]}}}
    (tmp_path / "s.json").write_text(json.dumps(state))
    held = held_bytes(tmp_path / "s.json")
    assert held == {"inputs": len(json.dumps(crd_inputs)), "__inputs": len(json.dumps(crd_inputs)),
                    "live object": len(json.dumps({"spec": {"group": "networking.istio.io"}, "status": {}}))}
