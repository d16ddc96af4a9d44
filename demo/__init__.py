"""The main job: a Kubeflow-like mesh on the embedded cluster, migrated legacy -> migrated, then verified."""
