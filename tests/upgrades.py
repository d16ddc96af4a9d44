"""The migrated stack's own upgrades, as its tests drive and judge them (tests/integration/test_upgrade.py, and the
fault suite's kill points in tests/faults/test_upgrade_crash.py)."""

from __future__ import annotations

from demo.observe import read, snapshot
from devcluster.workspace import Workspace
from migration.render import revision_address
from migration.versions import build_of, istiod_image
from tests.next_owner import a_live_validator_judges_istio_writes, every_proxy_on
from tests.support import new_pods_get, nothing_lost, one_injector_throughout, run, up_with_history


def istiod_address(revision: str) -> str:
    """Where revision's sidecars reach its istiod in istio-system."""
    return revision_address("istio-system", revision)


def revision_objects(env: dict[str, str], revision: str) -> list[str]:
    """Every object of revision's plane left on the cluster: labelled for it as istioctl labels a plane's objects."""
    selector = f"istio.io/rev={revision},operator.istio.io/component=Pilot"
    kinds = "serviceaccounts,configmaps,services,deployments,roles,rolebindings,clusterroles,clusterrolebindings," \
            "mutatingwebhookconfigurations,validatingwebhookconfigurations"
    return run(["kubectl", "get", kinds, "-A", "-l", selector, "-o", "name"], env).stdout.split()


def set_revision(workspace: Workspace, revision: str, version: str) -> None:
    """`pulumi config set` revision and targetVersion on the migrated stack."""
    workspace.set_config("migrated", "kf-istio-migrate:revision", revision)
    workspace.set_config("migrated", "kf-istio-migrate:targetVersion", version)


def upgraded(workspace: Workspace, revision: str, version: str, profiles: list[str]) -> dict:
    """set_revision, then `pulumi up` with the injector history of profiles followed: the snapshot before, the
    history, and the stack's outputs."""
    set_revision(workspace, revision, version)
    before = snapshot(workspace.env)
    states = up_with_history(workspace, "migrated", profiles)
    return {"before": before, "states": states, "outputs": workspace.outputs("migrated")}


def clean_after(workspace: Workspace) -> None:
    """`pulumi refresh` finds the cluster as the stack left it, and a preview proposes nothing."""
    workspace.pulumi("refresh", "--stack", "migrated", "--yes", "--expect-no-changes")
    workspace.pulumi("preview", "--stack", "migrated", "--expect-no-changes")


def on_the_revision(workspace: Workspace, run_: dict, revision: str, version: str, istioctl: str,
                    profiles: list[str]) -> None:
    """What every upgrade (or its way back) leaves, run_ being what `upgraded` returned: one injector per profile
    namespace in every state, nothing lost, only revision's istiod (at version), every proxy listed by it (istioctl,
    of that version), new pods injected by it, a validator judging Istio writes, a clean refresh and preview."""
    env = workspace.env
    one_injector_throughout(run_["states"])
    nothing_lost(env, run_["before"])
    istiods = {d["metadata"]["name"]: build_of(istiod_image(d)).version
               for d in read(env, "deployments", "istio-system", label_selector="app=istiod")["items"]}
    assert istiods == {f"istiod-{revision}": version}
    every_proxy_on(env, revision, istioctl)
    new_pods_get(env, profiles[-1], istiod_address(revision))
    a_live_validator_judges_istio_writes(env, profiles[0])
    clean_after(workspace)
