"""The live commands' command lines (live.cli): what a component writes is what the command reads back, and the
strings the components write stay byte for byte what existing stacks hold (a `create` input of a pulumi-command
resource: any change is a diff in `pulumi preview`)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from components import REPO
from components.canary import canary_script, put_back_script
from components.checks import analysis_script, verification_script
from components.hand_over import hand_over_script
from components.rollouts import rollout_script, unmanaged_pods_script
from live import cli
from migration.args import CanaryArgs, HelmHandOverArgs, PutBackArgs, RolloutsArgs, UnmanagedPodsArgs, VerificationArgs
from migration.target import KubeTarget
from migration.workloads import Workload

TARGET = KubeTarget(kubeconfig="/run/user/1000/kf istio/target-0123.kubeconfig", context="admin@kf's",
                    server="https://10.0.0.1:6443")
NEW, OLD = "istiod-kf-1-30.istio-system.svc:15012", "istiod.kubeflow.svc:15012"
ON_PATH = VerificationArgs(istiod_address=NEW, leaving=OLD, target=TARGET, istioctl_version="1.30.1", istioctl=None,
                           timeout_seconds=600, revisions=("kf-1-30", "default"))
CONFIGURED = VerificationArgs(istiod_address=NEW, leaving=OLD, target=TARGET, istioctl_version="1.30.1",
                              istioctl="/opt/istio 1.30/bin/istioctl", timeout_seconds=900,
                              revisions=("kf-1-30", "default"), require_live_view=True)
TO = "--kubeconfig '/run/user/1000/kf istio/target-0123.kubeconfig' --context 'admin@kf'\"'\"'s'"
WAVE = f"'https://10.0.0.1:6443|{OLD}->{NEW}'"

WRITTEN = {
    "rollout": (rollout_script(RolloutsArgs(
        batches=((Workload("ns", "Deployment", "web"),),), strategy="wave", parallelism=10, timeout_seconds=600,
        istiod_address=NEW, leaving=OLD, target=TARGET)),
        f"-m live.rollout {TO} --wave {WAVE} --limit 10 --leaving {OLD} --istiod {NEW} --timeout 600"),
    "unmanaged pods": (unmanaged_pods_script(UnmanagedPodsArgs(
        policy="evict", timeout_seconds=3600, istiod_address=NEW, leaving=OLD, target=TARGET)),
        f"-m live.evict {TO} --leaving {OLD} --istiod {NEW} --timeout 3600 --unmanaged evict"),
    "analysis, istioctl on PATH": (analysis_script(ON_PATH),
        f"-m live.analyze {TO} --istio-namespace kubeflow --revision default --istioctl-version 1.30.1"),
    "analysis, istioctl configured": (analysis_script(CONFIGURED),
        f"-m live.analyze {TO} --istio-namespace kubeflow --revision default --istioctl-version 1.30.1 "
        "--istioctl '/opt/istio 1.30/bin/istioctl'"),
    "verification, istioctl on PATH": (verification_script(ON_PATH),
        f"-m live.verify {TO} --istiod {NEW} --leaving {OLD} --timeout 600 --revision kf-1-30 --leaving-revision "
        "default --analysis-before - --istioctl-version 1.30.1"),
    "verification, live view required": (verification_script(CONFIGURED),
        f"-m live.verify {TO} --istiod {NEW} --leaving {OLD} --timeout 900 --revision kf-1-30 --leaving-revision "
        "default --analysis-before - --istioctl-version 1.30.1 --istioctl '/opt/istio 1.30/bin/istioctl' "
        "--require-live-view"),
    "canary": (canary_script(CanaryArgs(namespaces=("kubeflow-user-a", "team b"), injector="istio-sidecar-injector",
                                        workloads=(), soak_seconds=60, parallelism=5, check=ON_PATH)),
        f"-m live.canary {TO} --istiod {NEW} --leaving {OLD} --revision kf-1-30 --leaving-revision default "
        f"--injector istio-sidecar-injector --namespaces 'kubeflow-user-a,team b' --soak 60 --timeout 600 --limit 5 "
        f"--wave {WAVE} --istioctl-version 1.30.1"),
    "canary, no soak": (canary_script(CanaryArgs(namespaces=("kubeflow-user-a",), injector="istio-sidecar-injector",
                                                 workloads=(), soak_seconds=0, parallelism=1, check=CONFIGURED)),
        f"-m live.canary {TO} --istiod {NEW} --leaving {OLD} --revision kf-1-30 --leaving-revision default "
        f"--injector istio-sidecar-injector --namespaces kubeflow-user-a --soak 0 --timeout 900 --limit 1 "
        f"--wave {WAVE} --istioctl-version 1.30.1 --istioctl '/opt/istio 1.30/bin/istioctl'"),
    "canary put back": (put_back_script(PutBackArgs(revision="kf-1-30", target=TARGET)),
        f"-m live.canary {TO} --put-back --revision kf-1-30"),
    "helm hand-over": (hand_over_script(HelmHandOverArgs(
        refs=("v1/ServiceAccount/istio-system/istiod",
              "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration//istio-sidecar-injector"), target=TARGET)),
        f"-m live.disown {TO} v1/ServiceAccount/istio-system/istiod "
        "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration//istio-sidecar-injector"),
}
COMMANDS = {c.module: c for c in (cli.Analyze, cli.Canary, cli.Disown, cli.Evict, cli.Rollout, cli.Verify)}


@pytest.mark.parametrize("step", WRITTEN)
def test_the_components_write_the_command_lines_existing_stacks_hold(step):
    written, expected = WRITTEN[step]
    assert written == f"{shlex.quote(sys.executable)} {expected}"


@pytest.mark.parametrize("step", WRITTEN)
def test_each_command_reads_back_the_line_its_component_writes(step):
    """Every flag the component writes is one the command reads, in the same order (a value may be written back in
    another form: --timeout 600 read as 600.0)."""
    python, _, module, *argv = shlex.split(WRITTEN[step][0])
    read = COMMANDS[module.removeprefix("live.")].from_argv(argv)
    flags = [a for a in argv if a.startswith("--")]
    assert python == sys.executable and [a for a in read.argv() if a.startswith("--")] == flags
    assert type(read).from_argv(read.argv()) == read


ROUND_TRIPS = [
    cli.Analyze(istio_namespace="kubeflow", revision="default"),
    cli.Analyze(kubeconfig="/k", context="c", istio_namespace="kubeflow", revision="default",
                istioctl_version="1.30.1", istioctl="/bin/istioctl"),
    cli.Canary(kubeconfig="/k", context="c", istiod=NEW, leaving=OLD, revision="kf-1-30", leaving_revision="default",
               namespaces=("a", "b c"), soak=0, timeout=600, limit=5, wave="w", istioctl_version="1.30.1",
               istioctl="/bin/istioctl"),
    cli.Canary(kubeconfig="/k", context="c", put_back=True, revision="kf-1-30"),
    cli.Disown(refs=("v1/ServiceAccount/istio-system/istiod",)),
    cli.Disown(kubeconfig="/k", context="c", refs=("v1/Namespace//istio-system", "apps/v1/Deployment/ns/web")),
    cli.Evict(leaving=OLD, istiod=NEW, timeout=60, unmanaged="wait"),
    cli.Rollout(kubeconfig="/k", context="c", wave="w", limit=3, leaving=OLD, istiod=NEW, timeout=60),
    cli.Verify(istiod=NEW, leaving=OLD),
    cli.Verify(kubeconfig="/k", context="c", istiod=NEW, leaving=OLD, timeout=2.5, revision="kf-1-30",
               leaving_revision="kf-1-29", analysis_before="-", istioctl_version="1.30.1", istioctl="/bin/istioctl",
               require_live_view=True),
]


@pytest.mark.parametrize("command", ROUND_TRIPS, ids=lambda c: f"{c.module}-{len(c.argv())}")
def test_every_argument_reads_back_as_it_was_written(command):
    assert type(command).from_argv(command.argv()) == command


def test_the_way_back_writes_only_what_it_reads():
    """--put-back reads the cluster and --revision: the canary's own settings (defaults here) are not written."""
    assert cli.Canary(put_back=True, revision="kf-1-30").argv() == ["--put-back", "--revision", "kf-1-30"]


def test_an_operators_check_by_hand_reads_as_before():
    """The runbook's and the test harness's own calls of live.verify: the cluster and the leaving revision left out
    take their defaults."""
    argv = ["--istiod", NEW, "--leaving", OLD, "--istioctl", "istioctl", "--revision", "kf-1-30",
            "--analysis-before", "analysis-before.json"]
    assert cli.Verify.from_argv(argv) == cli.Verify(istiod=NEW, leaving=OLD, istioctl="istioctl", revision="kf-1-30",
                                                    analysis_before="analysis-before.json")
    assert cli.Verify.from_argv([*argv, "--timeout", "60"]).timeout == 60.0


@pytest.mark.parametrize("argv", [
    ["--leaving", OLD, "--istiod", NEW, "--timeout", "60", "--unmanaged", "fail"],
    ["--leaving", OLD, "--istiod", NEW, "--timeout", "soon", "--unmanaged", "wait"],
    ["--leaving", OLD, "--istiod", NEW, "--unmanaged", "wait"],
], ids=["unknown policy", "not a number", "required flag left out"])
def test_a_wrong_command_line_is_refused(argv, capsys):
    with pytest.raises(SystemExit):
        cli.Evict.from_argv(argv)
    assert capsys.readouterr().err.startswith("usage: python -m live.evict")


def test_a_rollout_names_its_cluster():
    with pytest.raises(SystemExit):
        cli.Rollout.from_argv(["--wave", "w", "--limit", "3", "--leaving", OLD, "--istiod", NEW, "--timeout", "60"])


def test_the_descriptions_load_neither_pulumi_nor_a_cluster_client():
    """components/ and live/ both import live.cli: it stays plain data, cheap to load on either side."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, live.cli; print(' '.join(sys.modules))"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    heavy = {"pulumi", "pulumi_command", "pulumi_kubernetes", "kubernetes", "components"}
    assert not {name.split(".")[0] for name in loaded} & heavy
