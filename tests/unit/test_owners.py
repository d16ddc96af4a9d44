"""migration.owners: which declared fields belong to istiod or the API server once the object exists."""

from __future__ import annotations

from migration.owners import fields_owned_elsewhere


def validator(labels):
    return {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v", "labels": labels},
            "webhooks": [{"name": "rev.validation.istio.io", "failurePolicy": "Ignore"}]}


def test_istiod_owns_the_failure_policy_of_its_revisions_validators_only():
    assert fields_owned_elsewhere(validator({"istio.io/rev": "kf-1-30"})) == ["webhooks[*].failurePolicy"]
    assert fields_owned_elsewhere(validator({"app": "something-else"})) == []
    assert fields_owned_elsewhere(validator(None)) == []


def test_the_api_server_owns_a_services_cluster_ips_and_nothing_else_is_left():
    assert fields_owned_elsewhere({"kind": "Service", "metadata": {"name": "istiod"}}) == ["spec.clusterIP",
                                                                                           "spec.clusterIPs"]
    assert fields_owned_elsewhere({"kind": "Deployment", "metadata": {"name": "istiod"}}) == []
