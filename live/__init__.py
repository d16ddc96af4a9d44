"""What reads or probes the live cluster: resolving the target cluster, preflight discovery, verification.

Everything here talks to exactly the cluster named by one migration.target.KubeTarget."""
