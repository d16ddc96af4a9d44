"""The migration's checkpoints as components: the destination istiod serves, every sidecar moved, the other plane
is removed. Each is one kubectl-driven Command bound to the stack's cluster."""

from __future__ import annotations

import json
import shlex
from typing import Any, Mapping, Sequence

import pulumi

from components import PACKAGE, REPO
from components.commands import step
from components.objects import child_options
from live import cli
from migration.args import RetiredRevisionArgs, ServingCheckArgs, TeardownArgs, VerificationArgs
from migration.live_mesh import ObjectId
from migration.proxies import namespace_of
from migration.target import KubeTarget


class ServingCheck(pulumi.ComponentResource):
    """Waits until the destination istiod really serves webhooks through the apiserver: istiod switches its own
    validator to failurePolicy=Fail only after the apiserver delivered it an invalid object and it rejected it."""

    def __init__(self, name: str, args: ServingCheckArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:ServingCheck", name, None, opts)
        validator = shlex.quote(args.validator)
        check = (f"{args.target.kubectl()} get validatingwebhookconfiguration {validator} "
                 f"-o jsonpath='{{.webhooks[*].failurePolicy}}'")
        script = (f"for i in $(seq {args.timeout_seconds}); do [ \"$({check})\" = Fail ] && exit 0; sleep 1; done; "
                  f"echo 'istiod never armed {args.validator}: is it serving?' >&2; exit 1")
        self.command = step(name, script, [args.validator], args.target, child_options(self, opts))
        self.register_outputs({"validator": args.validator})


def analysis_script(args: VerificationArgs) -> str:
    return cli.Analyze.on(args.target, istio_namespace=namespace_of(args.leaving), revision=args.revisions[1],
                          istioctl_version=args.istioctl_version, istioctl=args.istioctl).command_line()


class MeshAnalysis(pulumi.ComponentResource):
    """Istio's own analyzers on the mesh before anything changes (`istioctl analyze --all-namespaces`, live.analyze):
    its messages are what the verification compares with afterwards (`stdout`, the stack output analysisBefore); it
    fails, before any change, on conflicting injection webhooks (IST0139)."""

    def __init__(self, name: str, args: VerificationArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:MeshAnalysis", name, None, opts)
        self.command = step(name, analysis_script(args), [args.istiod_address, args.leaving], args.target,
                            child_options(self, opts), directory=str(REPO))
        self.register_outputs({"istioNamespace": namespace_of(args.leaving)})


def verification_script(args: VerificationArgs) -> str:
    return cli.Verify.on(args.target, istiod=args.istiod_address, leaving=args.leaving, timeout=args.timeout_seconds,
                         revision=args.revisions[0], leaving_revision=args.revisions[1], analysis_before="-",
                         istioctl_version=args.istioctl_version, istioctl=args.istioctl,
                         require_live_view=args.require_live_view).command_line()


class Verification(pulumi.ComponentResource):
    """The in-use gate before teardown: fails the update, naming each pod with its owner and why it was not moved,
    while any running pod in the cluster still uses the plane being left or lacks the sidecar its injector would
    give it (the gateway included) -- by its spec, then live: a proxy still connected to the plane being left, or
    one no destination istiod serves (live.verify; says so when the live view cannot be had). Then Istio's analyzers:
    no Error message that MeshAnalysis did not see before the move, no IST0139, and one injecting webhook for a pod
    of every namespace with sidecars (`istioctl x check-inject`)."""

    def __init__(self, name: str, args: VerificationArgs, analysis: MeshAnalysis,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Verification", name, None, opts)
        script = verification_script(args)
        # The kubeconfig path is not a trigger: only what is verified decides whether it runs again.
        self.command = step(name, script, [args.istiod_address, args.leaving], args.target,
                            child_options(self, opts), directory=str(REPO), stdin=analysis.command.stdout)
        self.register_outputs({"istiodAddress": args.istiod_address})


def admitted_script(target: KubeTarget, manifest: Mapping[str, Any], tries: int = 30) -> str:
    """Retry a server-side dry-run create of manifest once a second until admitted; print the last refusal and fail
    after tries."""
    create = f"echo {shlex.quote(json.dumps(manifest))} | {target.kubectl()} create -f - --dry-run=server -o name"
    return (f"for i in $(seq {tries}); do out=$({create} 2>&1) && break; "
            f"[ $i = {tries} ] && {{ echo \"$out\" >&2; exit 1; }}; sleep 1; done")


def refused_script(target: KubeTarget, ref: str, refusal: str, tries: int = 30) -> str:
    """Retry a server-side dry-run delete of ref once a second until refused with refusal; print the last answer and
    fail after tries."""
    delete = f"{target.kubectl()} delete {shlex.quote(ref)} --dry-run=server"
    return (f"for i in $(seq {tries}); do out=$({delete} 2>&1); case \"$out\" in *{shlex.quote(refusal)}*) break;; "
            f"esac; [ $i = {tries} ] && {{ echo \"$out\" >&2; exit 1; }}; sleep 1; done")


def teardown_script(target: KubeTarget, objects: Sequence[ObjectId],
                    admitted_after: Mapping[str, Any] | None = None) -> str:
    """One `kubectl delete` per run of consecutive objects in one namespace (cluster-scoped ones join any run), in
    deletion order, then the wait for admitted_after. Each delete is retried briefly: right after the guard's binding
    is deleted, admission may still deny."""
    runs: list[tuple[str, list[str]]] = []
    for kind, ns, name in objects:
        if runs and (not ns or runs[-1][0] in (ns, "")):
            runs[-1] = (runs[-1][0] or ns, runs[-1][1] + [f"{kind}/{name}"])
        else:
            runs.append((ns, [f"{kind}/{name}"]))
    deletes = [f"for i in 1 2 3 4 5 6 7 8 9 10; do {target.kubectl()} delete "
               f"{' '.join(shlex.quote(ref) for ref in refs)} --ignore-not-found --wait=false"
               f"{f' -n {shlex.quote(ns)}' if ns else ''} && break; sleep 1; [ $i = 10 ] && exit 1; done"
               for ns, refs in runs]
    waits = [admitted_script(target, admitted_after)] if admitted_after else []
    return " && ".join(deletes + waits) or "true"


class Teardown(pulumi.ComponentResource):
    def __init__(self, name: str, args: TeardownArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Teardown", name, None, opts)
        self.command = step(name, teardown_script(args.target, args.objects, args.admitted_after),
                            [f"{k}/{ns}/{n}" for k, ns, n in args.objects], args.target, child_options(self, opts))
        self.register_outputs({"removed": len(args.objects)})


class RetiredRevision(pulumi.ComponentResource):
    """Once no sidecar uses the revision the upgrade replaced (after the in-use gate), its objects are annotated
    for the guard to let them go (live.retire, which first fails while another webhook still calls its istiod); the
    engine then deletes them at the end of the update, since the stack no longer declares them (`pulumi preview`
    lists them as deletes). Its inputs name the retired revision and its istiod's UID only, as the new istiod
    records them, so later runs declare the same step."""

    def __init__(self, name: str, args: RetiredRevisionArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:RetiredRevision", name, None, opts)
        script = cli.Retire.on(args.target, revision=args.revision, namespace=args.namespace).command_line()
        self.command = step(name, script, [args.revision, args.istiod_uid], args.target, child_options(self, opts),
                            directory=str(REPO))
        self.register_outputs({"revision": args.revision})
