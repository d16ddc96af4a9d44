"""Benchmarks on the embedded cluster: migration speed (P1), the zero window under churn (P2), preview scaling (P3)."""
