"""The live view of the in-use gate: istioctl proxy-status's JSON (recorded from the real istioctl against the
embedded cluster's istiods and simulated proxies, tests/fixtures/proxy_status) and what the gate makes of it."""

from __future__ import annotations

import dataclasses
import pathlib
import shlex

from components.checks import analysis_script, verification_script
from migration.decide import decide
from migration.proxies import ConnectedProxy, live_offenders, namespace_of, parse_proxy_status
from migration.target import KubeTarget
from tests.fixtures import recorded
from tests.unit.live_mesh import CFG, LEGACY_ISTIOD, NEW_ISTIOD, charm_install, pod

RECORDED = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "proxy_status"


def test_parses_every_proxy_of_every_istiod_from_the_recorded_output():
    proxies = parse_proxy_status((RECORDED / "migrated.json").read_text())
    assert len(proxies) == 5
    assert {p.istiod for p in proxies} == {"istiod-kf-1-30-85dcd4868-4b26z"}
    assert {p.version for p in proxies} == {"1.30-dev"}
    assert ("kubeflow", "istio-ingressgateway-workload-64cff469d5-m8mvc") in {(p.namespace, p.pod) for p in proxies}
    assert {p.namespace for p in proxies} == {"kubeflow", "kubeflow-user-000", "kubeflow-user-001"}


def test_two_istiods_in_one_stream_and_an_istiod_serving_nobody():
    one = (RECORDED / "migrated.json").read_text()
    empty = ('{"versionInfo": "x", "typeUrl": "istio.io/debug/syncz", "controlPlane": {"identifier": '
             '"{\\"Component\\":\\"istiod\\",\\"ID\\":\\"istiod-b\\"}"}}')
    proxies = parse_proxy_status(one + "\n" + empty + "\n")
    assert len(proxies) == 5 and parse_proxy_status(empty) == [] and parse_proxy_status("") == []


def test_istioctls_warnings_on_stdout_between_the_documents_are_skipped():
    """istioctl's logger writes to stdout by default (istio pkg/log, defaultOutputPath "stdout"), so a warning
    during the port-forwards lands between the JSON documents; its timestamp must not be read as a number."""
    one = (RECORDED / "migrated.json").read_text()
    warning = "2026-12-04T13:55:01.123456Z\twarn\tklog\tan error occurred forwarding 41234 -> 15014\n"
    assert len(parse_proxy_status(warning + one + "\n" + warning)) == 5


def _on(istiod: str, namespace: str, name: str) -> ConnectedProxy:
    return ConnectedProxy(istiod, namespace, name, "1.30-dev")


def test_a_proxy_still_connected_to_the_plane_being_left_is_named():
    pods = [pod("team", "web-1", ("ReplicaSet", "web"), NEW_ISTIOD)]
    bad = live_offenders([_on("istiod-old", "team", "web-0")], [_on("istiod-new", "team", "web-1")], pods, NEW_ISTIOD)
    assert bad == ["team/web-0: proxy 1.30-dev still connected to istiod istiod-old"]


def test_a_pod_pointed_at_the_destination_that_no_destination_istiod_serves_is_named():
    pods = [pod("team", "web-1", ("ReplicaSet", "web"), NEW_ISTIOD), pod("team", "web-2", ("ReplicaSet", "web"), NEW_ISTIOD)]
    bad = live_offenders([], [_on("istiod-new", "team", "web-1")], pods, NEW_ISTIOD)
    assert bad == [f"team/web-2: its proxy names {NEW_ISTIOD} but no istiod of istio-system serves it"]


def test_pods_that_are_not_running_or_not_on_the_destination_are_not_asked_for():
    pods = [pod("team", "done", None, NEW_ISTIOD, phase="Succeeded"), pod("team", "plain", None, None),
            pod("team", "old", None, LEGACY_ISTIOD)]
    assert live_offenders([], [], pods, NEW_ISTIOD) == []  # the pod-spec check names the one still on the old plane


def test_namespace_of_an_istiod_address():
    assert namespace_of(NEW_ISTIOD) == "istio-system" and namespace_of(LEGACY_ISTIOD) == "kubeflow"


def test_the_gate_asks_both_planes_with_the_destination_versions_istioctl():
    """decide: the destination's version and configured istioctl, each plane's revision, the rollout timeout; the
    step's command passes them to live.verify, and the leaving plane's to live.analyze (the analyzers' look before
    the move, which live.verify reads on its standard input)."""
    cfg = dataclasses.replace(CFG, istioctl={recorded.PINNED: "/opt/istioctl"}, rollout_timeout_seconds=42)
    args = decide(cfg, recorded.renders(CFG), charm_install(), KubeTarget("/k", "ctx", "https://x")).steps.verification
    assert (args.istiod_address, args.leaving) == (NEW_ISTIOD, LEGACY_ISTIOD)
    assert (args.istioctl_version, args.istioctl, args.revisions, args.timeout_seconds) == \
        (recorded.PINNED, "/opt/istioctl", ("kf-1-30", "default"), 42)
    command = shlex.split(verification_script(args))
    assert command[1:3] == ["-m", "live.verify"]
    flags = dict(zip(command[3::2], command[4::2]))
    assert flags == {"--kubeconfig": "/k", "--context": "ctx", "--istiod": NEW_ISTIOD, "--leaving": LEGACY_ISTIOD,
                     "--istioctl-version": recorded.PINNED, "--timeout": "42", "--revision": "kf-1-30",
                     "--leaving-revision": "default", "--istioctl": "/opt/istioctl", "--analysis-before": "-"}
    assert "--require-live-view" not in command
    required = dataclasses.replace(args, require_live_view=True)
    assert shlex.split(verification_script(required))[-1] == "--require-live-view"
    assert "pod specs alone where that view cannot be had" in args.judged_by
    assert "required: the gate fails while it cannot be had" in required.judged_by
    command = shlex.split(analysis_script(args))
    assert command[1:3] == ["-m", "live.analyze"]
    assert dict(zip(command[3::2], command[4::2])) == {
        "--kubeconfig": "/k", "--context": "ctx", "--istio-namespace": "kubeflow", "--revision": "default",
        "--istioctl-version": recorded.PINNED, "--istioctl": "/opt/istioctl"}
