"""python -m devcluster up|down|status|env|tools [--name NAME] [--purge], or exec [--name NAME] -- COMMAND...
python -m devcluster state-up|state-down [--name NAME]

`tools` prints the exports that put the built toolchain (pulumi, istioctl, kubectl) on PATH and nothing else: use it
for a real cluster. `env` also points KUBECONFIG, the Pulumi backend, PULUMI_HOME and the passphrase at embedded
cluster NAME. `state-up` starts (or finds) a shared state store NAME (an S3-compatible server on loopback,
devcluster.statestore) and prints the exports that point Pulumi at a bucket on it; `state-down` stops it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from devcluster import statestore
from devcluster.cluster import Cluster, ClusterError
from devcluster.toolchain import ToolchainMissing, let_children_be_interrupted, tool_env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "status", "env", "tools", "exec", "state-up", "state-down"])
    parser.add_argument("--name", default=os.environ.get("KFISTIO_CLUSTER", "dev"), help="cluster name (default dev)")
    parser.add_argument("--purge", action="store_true", help="with down: also delete the cluster's data")
    argv = sys.argv[1:] if argv is None else argv
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    let_children_be_interrupted()
    cluster = Cluster(args.name)
    try:
        if args.command == "up":
            cluster.up()
            print(f"cluster '{args.name}' is up; export KUBECONFIG={cluster.kubeconfig}")
        elif args.command == "down":
            cluster.down(purge=args.purge)
        elif args.command == "status":
            for name, running in cluster.status().items():
                print(f"{name:26} {'running' if running else 'stopped'}")
            cluster.require_running()
        elif args.command == "tools":
            env = tool_env()
            for key in ("PATH", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "PULUMI_SKIP_UPDATE_CHECK"):
                print(f"export {key}={shlex.quote(env[key])}")
        elif args.command == "env":
            env = cluster.env()
            for key in ("KUBECONFIG", "PATH", "PULUMI_BACKEND_URL", "PULUMI_HOME",
                        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "PULUMI_SKIP_UPDATE_CHECK",
                        "PULUMI_CONFIG_PASSPHRASE_FILE"):
                print(f"export {key}={shlex.quote(env[key])}")
        elif args.command == "state-up":
            store = statestore.start(args.name)
            for key, value in store.env().items():
                print(f"export {key}={shlex.quote(value)}")
            print(f"# versitygw {store.endpoint} (pid {store.pid}), bucket {store.bucket}; data in {store.dir}")
        elif args.command == "state-down":
            if store := statestore.find(args.name):
                store.stop()
        elif args.command == "exec":
            if not command:
                parser.error("exec needs a command after --, e.g. exec -- kubectl get pods -A")
            os.execvpe(command[0], command, cluster.env())
    except (ClusterError, ToolchainMissing, statestore.StateStoreError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
