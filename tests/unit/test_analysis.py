"""Reading and judging what Istio's analyzers print (istioctl 1.30's formats, copied from its runs on the embedded
cluster)."""

from __future__ import annotations

import json

from live.analyze import INJECTION_STATUS, injected_pods
from migration.analysis import AnalysisMessage, new_problems, parse_check_inject, parse_messages
from tests.unit.live_mesh import LEGACY_ISTIOD, NEW_ISTIOD, pod

TICK, CROSS = "\x1b[32m\u2714\x1b[0m", "\x1b[31m\u2718\x1b[0m"
CHECK_INJECT = (
    "WEBHOOK                              REVISION  INJECTED      REASON\n"
    f"istio-revision-tag-default-kubeflow  default   {TICK}             "
    "Namespace label istio-injection=enabled matches\n"
    f"istio-sidecar-injector-kubeflow      default   {CROSS}             "
    "The injection webhook is deactivated, and will never match labels.\n")


def message(code: str, level: str, origin: str, text: str) -> dict:
    return {"code": code, "level": level, "message": text, "origin": origin,
            "documentationUrl": f"https://istio.io/v1.30/docs/reference/config/analysis/{code.lower()}/"}


def test_analyze_json_is_read_whole_and_empty_output_is_no_message():
    text = json.dumps([message("IST0101", "Error", "VirtualService kubeflow/katib-ui", "Referenced host not found"),
                       message("IST0102", "Info", "Namespace default", "The namespace is not enabled")])
    assert parse_messages(text) == (
        AnalysisMessage("IST0101", "Error", "VirtualService kubeflow/katib-ui", "Referenced host not found"),
        AnalysisMessage("IST0102", "Info", "Namespace default", "The namespace is not enabled"))
    assert parse_messages("") == () and parse_messages("[]\n") == ()


def test_only_new_errors_and_every_conflicting_webhook_fail_the_move():
    known = AnalysisMessage("IST0101", "Error", "VirtualService kubeflow/katib-ui", "Referenced host not found")
    new_error = AnalysisMessage("IST0101", "Error", "Gateway kubeflow/kubeflow-gateway",
                                "Referenced selector not found")
    warning = AnalysisMessage("IST0174", "Warning", "DestinationRule kubeflow/ml-pipeline", "no such service")
    overlap = AnalysisMessage("IST0139", "Error", "MutatingWebhookConfiguration second-injector",
                              "Webhook overlaps with others")
    assert new_problems([known], [known, warning]) == []
    assert new_problems([known], [known, new_error, warning]) == [new_error]
    assert new_problems([overlap], [overlap]) == [overlap], "a conflict fails the move even if it was there before"


def test_check_inject_counts_the_ticks_of_its_coloured_table():
    assert parse_check_inject("kubeflow-user-000/nb-0-0", CHECK_INJECT).problem is None
    twice = (CHECK_INJECT + f"second-injector                      kf-1-30   {TICK}             Namespace label "
             "matches\nERROR: multiple webhooks will inject, which can lead to errors")
    assert parse_check_inject("ns/pod", twice).problem == ("ns/pod: 2 webhooks would inject it "
                                                           "(istio-revision-tag-default-kubeflow, second-injector), "
                                                           "expected exactly one")
    assert parse_check_inject("ns/pod", "ERROR: no Istio injection hooks present.\n").problem == (
        "ns/pod: 0 webhooks would inject it (none), expected exactly one")
    no_revision = f"WEBHOOK  REVISION  INJECTED  REASON\nistio-sidecar-injector  {TICK}  Namespace label matches\n"
    assert parse_check_inject("ns/pod", no_revision).injecting == ("istio-sidecar-injector",)


def test_check_inject_asks_about_one_injected_running_pod_per_namespace():
    injected = {INJECTION_STATUS: "{}"}
    pods = [pod("team", "b", None, NEW_ISTIOD, annotations=injected), pod("team", "a", None, NEW_ISTIOD,
                                                                         annotations=injected),
            pod("kubeflow", "gateway", None, NEW_ISTIOD),  # a gateway's proxy is its own: nothing injected it
            pod("done", "step", None, NEW_ISTIOD, annotations=injected, phase="Succeeded"),
            pod("old", "left", None, LEGACY_ISTIOD, annotations=injected)]
    assert injected_pods(pods, NEW_ISTIOD) == [("team", "a")]
