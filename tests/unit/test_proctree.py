"""kill_tree reaches what killpg does not: a descendant in a process group of its own, as the Pulumi CLI's plugins."""

import os
import subprocess
import time

from tests.faults.proctree import kill_tree


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_kills_descendants_in_their_own_process_groups():
    # parent -> child in a new session (its own group, like a plugin) -> grandchild
    parent = subprocess.Popen(["sh", "-c", "setsid sh -c 'sleep 300 & echo $$ $!; wait' & wait"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    child, grandchild = (int(p) for p in parent.stdout.readline().split())
    assert os.getpgid(child) != os.getpgid(parent.pid)

    killed = kill_tree(parent.pid)
    parent.wait(timeout=5)

    assert {parent.pid, child, grandchild} <= set(killed)
    deadline = time.monotonic() + 5
    while (_alive(child) or _alive(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child) and not _alive(grandchild)


def test_a_process_that_already_exited_is_no_error():
    done = subprocess.Popen(["true"])
    done.wait()
    assert kill_tree(done.pid) == [done.pid]
