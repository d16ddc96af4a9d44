"""The migrated stack's upgrade (kf-1-30 at the pinned build to kf-1-31 at the next minor, after the move) SIGKILLed
at a kill point (the CLI and every plugin and command it started), then resumed as the runbook says for an
interrupted upgrade (`pulumi cancel`, `pulumi refresh`, `pulumi up`): it converges as if never interrupted, with one
injector per profile namespace in every state of both runs."""

from __future__ import annotations

from demo import fixture
from demo.observe import snapshot
from devcluster import toolchain
from tests.faults.harness import PROFILES, SIZE, UPGRADE_KILL_POINTS, cancel_dead_update, up_killed_at
from tests.next_owner import NEXT, NEXT_REVISION, next_istioctl
from tests.support import followed, fresh_workspace, purged
from tests.upgrades import on_the_revision, revision_objects, set_revision, upgraded


def test_upgrade_crash_then_resume_converges(upgrade_point):
    toolchain.ensure("istio-next")
    with purged(fresh_workspace(f"u1-{upgrade_point[:10]}")) as workspace:
        env = workspace.env
        fixture.build(env, SIZE)
        workspace.up("migrated")
        before = snapshot(env)
        set_revision(workspace, NEXT_REVISION, NEXT)
        with followed(workspace, PROFILES) as killed:
            up_killed_at(workspace, upgrade_point, probe=UPGRADE_KILL_POINTS[upgrade_point])
        cancel_dead_update(workspace)
        workspace.pulumi("refresh", "--stack", "migrated", "--yes")
        resumed = upgraded(workspace, NEXT_REVISION, NEXT, PROFILES)
        on_the_revision(workspace, {**resumed, "before": before, "states": killed + resumed["states"]},
                        NEXT_REVISION, NEXT, next_istioctl(), PROFILES)
        assert revision_objects(env, "kf-1-30") == []
