"""python -m live.analyze [--kubeconfig FILE --context NAME] --istio-namespace NS --revision R
                         (--istioctl-version V | --istioctl PATH)

The mesh as Istio's own analyzers see it before the move, the first step of a migration or a way back: prints the
messages of `istioctl analyze --all-namespaces -o json` (for the verification to compare with afterwards, and as
the stack output `analysisBefore`), and fails, changing nothing, when one is IST0139: the move would start from a
mesh whose webhooks inject twice or call nothing. Also the runner of `istioctl x precheck` (preflight) and
`istioctl x check-inject` (the verification). migration.analysis parses and judges.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import subprocess
import sys
from typing import Iterable

from live import cli
from migration import istioctls
from migration.analysis import (CONFLICTING_WEBHOOKS, AnalysisMessage, InjectionCheck, parse_check_inject,
                                parse_messages)
from migration.workloads import proxy_address, service_of

FOUND_ISSUES = 79
"""istioctl's exit code when analyze found messages at its failure threshold (they are printed all the same)."""
CHECKS_AT_ONCE = 8
INJECTION_STATUS = "sidecar.istio.io/status"
"""What istiod's injector writes on every pod it injects."""


class AnalysisFailed(RuntimeError):
    """istioctl could not analyze the cluster (the message names the command and its last line of output)."""


def _run(istioctl: str, args: list[str], kubeconfig: str | None,
         context: str | None) -> subprocess.CompletedProcess:
    return subprocess.run([istioctl, *args, *istioctls.cluster_flags(kubeconfig, context)], capture_output=True,
                          text=True)


def _failed(args: list[str], proc: subprocess.CompletedProcess) -> AnalysisFailed:
    last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
    return AnalysisFailed(f"`istioctl {' '.join(args)}` failed (exit {proc.returncode}): {last}")


def _istioctl(istioctl: str, args: list[str], kubeconfig: str | None, context: str | None,
              ok: tuple[int, ...] = (0,)) -> str:
    proc = _run(istioctl, args, kubeconfig, context)
    if proc.returncode not in ok:
        raise _failed(args, proc)
    return proc.stdout


def analyze(istioctl: str, istio_namespace: str, revision: str, kubeconfig: str | None = None,
            context: str | None = None) -> tuple[AnalysisMessage, ...]:
    """Every message of `istioctl analyze --all-namespaces` for the control plane in istio_namespace (revision)."""
    return parse_messages(_istioctl(istioctl, ["analyze", "--all-namespaces", "-o", "json", "-i", istio_namespace,
                                               "-r", revision], kubeconfig, context, ok=(0, FOUND_ISSUES)))


def precheck(istioctl: str, istio_namespace: str, kubeconfig: str | None = None,
             context: str | None = None) -> tuple[AnalysisMessage, ...]:
    """The messages of `istioctl x precheck` for an install into istio_namespace, Info and up (it exits non-zero
    on any Warning; judging them is the caller's)."""
    args = ["x", "precheck", "-i", istio_namespace, "-o", "json", "--output-threshold", "Info"]
    proc = _run(istioctl, args, kubeconfig, context)
    try:
        messages = parse_messages(proc.stdout)
    except (json.JSONDecodeError, KeyError, TypeError):
        raise _failed(args, proc) from None
    if proc.returncode != 0 and not messages:  # it could not look: that is no verdict of "no issues"
        raise _failed(args, proc)
    return messages


def injected_pods(pods: Iterable[dict], istiod: str) -> list[tuple[str, str]]:
    """(namespace, pod): one running pod per namespace that istiod's injector gave its sidecar (not a gateway, whose
    proxy is its own), the first by name."""
    chosen: dict[str, str] = {}
    for pod in sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
        if INJECTION_STATUS in (pod["metadata"].get("annotations") or {}) and pod["status"]["phase"] == "Running" \
                and service_of(proxy_address(pod) or "") == service_of(istiod):
            chosen.setdefault(pod["metadata"]["namespace"], pod["metadata"]["name"])
    return sorted(chosen.items())


def check_inject(istioctl: str, pods: Iterable[tuple[str, str]], kubeconfig: str | None = None,
                 context: str | None = None) -> list[InjectionCheck]:
    """`istioctl x check-inject` for each (namespace, pod), a few at a time."""
    def one(pod: tuple[str, str]) -> InjectionCheck:
        namespace, name = pod
        out = _istioctl(istioctl, ["x", "check-inject", "-n", namespace, name], kubeconfig, context)
        return parse_check_inject(f"{namespace}/{name}", out)
    with concurrent.futures.ThreadPoolExecutor(CHECKS_AT_ONCE) as pool:
        return list(pool.map(one, sorted(pods)))


def main(argv: list[str] | None = None) -> int:
    args = cli.Analyze.from_argv(argv, __doc__)
    try:
        istioctl = istioctls.named(args.istioctl_version, args.istioctl)
        messages = analyze(istioctl, args.istio_namespace, args.revision, args.kubeconfig, args.context)
    except (istioctls.RenderError, AnalysisFailed) as err:
        print(err, file=sys.stderr)
        return 1
    print(json.dumps([dataclasses.asdict(m) for m in messages], indent=1))
    conflicts = [m for m in messages if m.code == CONFLICTING_WEBHOOKS]
    for m in conflicts:
        print(f"refused before any change: {m}", file=sys.stderr)
    return 1 if conflicts else 0


if __name__ == "__main__":
    sys.exit(main())
