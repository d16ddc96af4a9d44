"""The account of a move: what each moving command prints last, and the stack output gathered from it."""

from __future__ import annotations

from migration.account import account_line, move_account, read_account
from migration.workloads import Workload

WEB = Workload("kubeflow-user-001", "Deployment", "web")
NOTEBOOK = Workload("kubeflow-user-000", "StatefulSet", "nb", evict_because="controlled by Notebook/nb")


def test_each_workload_moved_with_its_way_and_seconds():
    output = "rolled out kubeflow-user-001/Deployment/web in 2.4s\n" + account_line({WEB: 2.43, NOTEBOOK: 11.0})
    assert read_account(output, "rollout") == [
        {"namespace": "kubeflow-user-000", "kind": "StatefulSet", "name": "nb", "way": "evict", "seconds": 11.0,
         "phase": "rollout"},
        {"namespace": "kubeflow-user-001", "kind": "Deployment", "name": "web", "way": "restart", "seconds": 2.4,
         "phase": "rollout"}]


def test_the_account_gathers_every_command_and_the_pods_left():
    account = move_account([("canary", account_line({WEB: 1.0})), ("rollout", account_line({NOTEBOOK: 3.0})),
                            ("rollout", None)], ["kubeflow-user-000/step-1 (Workflow/p): wait"])
    assert [(m["phase"], m["name"]) for m in account["moved"]] == [("canary", "web"), ("rollout", "nb")]
    assert account["left"] == ["kubeflow-user-000/step-1 (Workflow/p): wait"]


def test_a_command_that_moved_nothing_accounts_for_nothing():
    assert read_account("kubeflow-user-001/Deployment/web: no pod left, not moved again\n" + account_line({}),
                        "rollout") == []
    assert read_account(None, "canary") == []
