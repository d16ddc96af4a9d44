"""The stacks' state in an S3 bucket, as a team shares it: a real S3-compatible server (versitygw, built from
tools/pins.env, started by devcluster.statestore) and Pulumi's own S3 backend and locks. One mesh, in order: an
update killed half-way through its rollouts while a second update of the same stack is refused by the lock; the
dead update's lock seen and cleared with `pulumi cancel`, and the migration resumed (the crash/resume case on this
backend); a second checkout reading the shared stack with the passphrase; the rollback, its state in the bucket
too."""

from __future__ import annotations

import os
import shutil
import threading

import pytest

from demo.migrate import precheck_said
from demo.observe import snapshot
from demo.verification import checks
from devcluster import proxy_events, statestore
from fleet import project
from tests.faults.harness import PROFILES, cancel_dead_update, legacy_mesh, up_killed_at
from tests.support import poll, roll_back_and_check, run

LOCKED = "the stack is currently locked"
KILLED_AT = "half-the-rollouts"


@pytest.fixture(scope="module")
def shared():
    store = statestore.start(f"s3-{os.getpid()}")
    mesh = None
    try:
        mesh = legacy_mesh("s3")
        prefix = mesh.workspace.cluster.name
        mesh.workspace.env.update(store.env(prefix=prefix))
        yield store, mesh, prefix
    finally:
        if mesh:
            mesh.close()
        store.stop()
        shutil.rmtree(store.dir, ignore_errors=True)


def locks(store: statestore.StateStore, prefix: str) -> list[str]:
    return store.keys(f"{prefix}/.pulumi/locks/")


def test_a_second_update_is_refused_while_one_runs_and_a_killed_one_leaves_its_lock(shared):
    store, mesh, prefix = shared
    workspace = mesh.workspace
    workspace.init("migrated")
    assert store.keys(f"{prefix}/.pulumi/stacks/"), "the stack was not created in the bucket"
    second = {}

    def second_update() -> None:  # as soon as the first update holds its lock
        poll(lambda: locks(store, prefix), 120, "the first update's lock object")
        second["proc"] = workspace.pulumi("up", "--stack", "migrated", "--yes", "--skip-preview", check=False)

    other = threading.Thread(target=second_update)
    other.start()
    up_killed_at(workspace, KILLED_AT)
    other.join()
    refused = second["proc"]
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and LOCKED in said, said[-3000:]
    print("the second update:", *[line.strip() for line in said.splitlines() if "lock" in line][:2], sep="\n  ")
    assert not any(word in said for word in (" created (", " updated (", " imported (")), said[-3000:]

    dead = locks(store, prefix)
    assert len(dead) == 1, f"the killed update's lock: {dead}"
    print(f"the killed update left {dead[0]}")
    again = workspace.pulumi("up", "--stack", "migrated", "--yes", "--skip-preview", check=False)
    assert again.returncode != 0 and LOCKED in again.stdout + again.stderr, "a dead update's lock still holds"


def test_cancel_clears_the_dead_lock_and_the_migration_resumes(shared):
    store, mesh, prefix = shared
    cancel_dead_update(mesh.workspace)
    assert locks(store, prefix) == [], "pulumi cancel left the lock object"
    resumed = mesh.pulumi("up", "--stack", "migrated", "--yes", "--skip-preview")
    second = mesh.pulumi("preview", "--stack", "migrated", "--expect-no-changes", check=False)
    rows = checks(mesh.env, mesh.workspace.outputs("migrated"), mesh.before, snapshot(mesh.env), mesh.history.stop(),
                  second.returncode == 0, proxy_events.read(mesh.workspace.cluster.proxy_events),
                  precheck_said(resumed.stdout))
    failed = [f"{check}: {observed}" for check, observed, ok in rows if not ok]
    assert not failed, f"after a crash, `pulumi cancel` and a resume with state in S3: {failed}"
    assert locks(store, prefix) == []


def test_a_second_checkout_reads_the_shared_stack_with_the_passphrase(shared, tmp_path):
    """What a colleague does on another machine: the team's project checked out (Pulumi.yaml running this program,
    and the stack file with its encryption salt), the bucket's URL and credentials and the passphrase set, an empty
    PULUMI_HOME."""
    store, mesh, prefix = shared
    workspace = mesh.workspace
    project.write(tmp_path, None, None, {})
    shutil.copy(workspace.dir / "Pulumi.migrated.yaml", tmp_path / "Pulumi.migrated.yaml")
    passphrase = (workspace.cluster.dir / "passphrase").read_text()
    env = {k: v for k, v in workspace.env.items() if k != "PULUMI_CONFIG_PASSPHRASE_FILE"}
    env |= {"PULUMI_HOME": str(tmp_path / "home"), **store.env(prefix=prefix)}
    preview = ["pulumi", "preview", "--stack", "migrated", "--expect-no-changes", "--non-interactive"]
    wrong = run(preview, env | {"PULUMI_CONFIG_PASSPHRASE": "not-the-team-passphrase"}, cwd=tmp_path, check=False)
    assert wrong.returncode != 0 and "passphrase" in (wrong.stdout + wrong.stderr).lower(), wrong.stdout[-2000:]
    right = run(preview, env | {"PULUMI_CONFIG_PASSPHRASE": passphrase}, cwd=tmp_path, check=False)
    assert right.returncode == 0, right.stdout[-4000:] + right.stderr[-2000:]


def test_the_rollback_keeps_its_state_in_the_bucket(shared):
    store, mesh, prefix = shared
    roll_back_and_check(mesh.workspace, PROFILES)
    stacks = store.keys(f"{prefix}/.pulumi/stacks/")
    assert any(key.endswith("/legacy.json") for key in stacks), stacks
    assert not (mesh.workspace.cluster.dir / "pulumi" / ".pulumi" / "stacks").exists(), \
        "a stack was written to the cluster's file backend"
