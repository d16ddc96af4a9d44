"""CPU time of an embedded cluster's processes, from /proc (for the bench: what istiod and the proxy simulator cost)."""

from __future__ import annotations

import os
import pathlib
import time

from devcluster.cluster import Cluster

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def _pids(cluster: Cluster, binary: str) -> list[int]:
    """Processes of this cluster running binary (matched by name and by the cluster's inner kubeconfig)."""
    found = []
    for proc in pathlib.Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and pathlib.Path(argv[0].decode()).name.startswith(binary) and \
                    any(str(cluster.inner_kubeconfig).encode() in a for a in argv):
                found.append(int(proc.name))
    return found


def cpu(cluster: Cluster) -> dict[str, float]:
    """CPU seconds so far of the cluster's istiods (pilot-discovery) and of its proxy simulator."""
    return {name: sum(_cpu_seconds(pid) for pid in _pids(cluster, binary))
            for name, binary in (("istiod", "pilot-discovery"), ("proxysim", "proxysim"))}


def cores_over(cluster: Cluster, seconds: float) -> dict[str, float]:
    """Average cores each used over the next seconds (e.g. with every simulated proxy connected, nothing changing)."""
    before = cpu(cluster)
    time.sleep(seconds)
    after = cpu(cluster)
    return {name: round((after[name] - before[name]) / seconds, 3) for name in before}
