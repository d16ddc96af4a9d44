"""What reads or probes the live cluster: resolving the target cluster, preflight discovery, verification.

Everything here talks to exactly the cluster named by one migration.target.KubeTarget. live.cli, which talks to none,
describes the command line of each command the program's steps run, for those steps and the commands alike."""
