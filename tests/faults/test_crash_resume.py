"""R1: `pulumi up --stack migrated` SIGKILLed at a kill point (the CLI and every plugin and command it started),
then resumed the documented way (`pulumi cancel`, `pulumi up`): the migration converges as if never interrupted."""

from __future__ import annotations

from demo.migrate import precheck_said
from demo.observe import snapshot
from demo.verification import checks
from devcluster import proxy_events
from tests.faults.harness import cancel_dead_update, legacy_mesh, up_killed_at


def test_crash_then_resume_converges(resume_point):
    mesh = legacy_mesh(f"r1-{resume_point[:10]}")
    try:
        mesh.workspace.init("migrated")
        up_killed_at(mesh.workspace, resume_point)
        cancel_dead_update(mesh.workspace)  # the dead update's lock
        resumed = mesh.pulumi("up", "--stack", "migrated", "--yes", "--skip-preview")
        second = mesh.pulumi("preview", "--stack", "migrated", "--expect-no-changes", check=False)
        states = mesh.history.stop()
        rows = checks(mesh.env, mesh.workspace.outputs("migrated"), mesh.before, snapshot(mesh.env), states,
                      second.returncode == 0, proxy_events.read(mesh.workspace.cluster.proxy_events),
                      precheck_said(resumed.stdout))
        failed = [f"{check}: {observed}" for check, observed, ok in rows if not ok]
        assert not failed, f"after a crash at {resume_point} and a resume: {failed}"
    finally:
        mesh.close()
