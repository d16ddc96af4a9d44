"""The benchmark table printed at the end of `make bench` (pure)."""

from __future__ import annotations

from typing import Any

LOOP = "one-namespace-at-a-time"
"""The manual runbook's loop (the baseline): one namespace at a time, all its workloads restarted together."""
COLUMN = 15  # width of a run's column: labels such as fast-p10-nolog fit


def _phases(runs: list[dict[str, Any]]) -> list[str]:
    """Each phase of `pulumi up` (from the engine's event log): first step began - last step ended, in seconds."""
    if not any(r.get("phases") for r in runs):
        return []
    order = list(dict.fromkeys(p for r in runs for p, _, _ in r.get("phases", [])))
    lines = ["", "Phases of `pulumi up` (s from its start: first step began-last step ended)"]
    for phase in order:
        cells = [next((f"{s:.1f}-{e:.1f}" for p, s, e in r.get("phases", []) if p == phase), "-") for r in runs]
        lines.append(f"{phase[:37]:<38}" + "".join(f"{c:>{COLUMN}}" for c in cells))
    return lines


def _debug_log_cost(runs: list[dict[str, Any]]) -> list[str]:
    """What the CLI's debug log costs: each run made without it beside the same run with it (label minus -nolog)."""
    by_label = {r["label"]: r for r in runs}
    lines = []
    for without in (r for r in runs if r.get("debug_log") is False):
        with_log = by_label.get(without["label"].removesuffix("-nolog"))
        if with_log and with_log.get("cli_cpu_s") is not None and without.get("cli_cpu_s") is not None:
            lines.append(f"debug log cost ({with_log['label']} - {without['label']}): "
                         f"wall {with_log['wall_s'] - without['wall_s']:+.1f} s, "
                         f"CPU {with_log['cli_cpu_s'] - without['cli_cpu_s']:+.1f} s")
    return lines


def _procedure(run: dict[str, Any]) -> tuple[str | None, str]:
    """What a run is compared with its peer on: its pod profile, and whether it moved the mesh or upgraded it."""
    return run.get("pods"), run.get("procedure", "move")


def table(report: dict[str, Any]) -> str:
    """P1/P2 for the migrations the report holds (if any), then P3 for its previews (if any)."""
    lines = _migrations(report["migrations"]) if report["migrations"] else []
    if report.get("previews"):
        lines += _previews(report["previews"])
    return "\n".join(lines)


def _migrations(runs: list[dict[str, Any]]) -> list[str]:
    lines = ["", "P1 migration wall time (s)            " + "".join(f"{r['label']:>{COLUMN}}" for r in runs)]
    rows = [("pulumi up wall", "wall_s"), ("new istiod created at", "istiod_created_s"),
            ("new istiod Available at", "istiod_available_s"),
            ("slowest single rollout", "slowest_rollout_s"), ("median rollout", "median_rollout_s"),
            ("lower bound (Available + slowest)", "lower_bound_s"), ("wall / lower bound", "ratio_to_lower_bound"),
            ("bound counting rollout slots", "slot_bound_s"), ("wall / bound counting slots", "ratio_to_slot_bound"),
            ("rollouts observed", "rollouts"), ("most workloads rolling at once", "most_rolling_at_once")]
    for title, key in rows:
        lines.append(f"{title:<38}" + "".join(f"{str(r[key]):>{COLUMN}}" for r in runs))
    for kind in sorted({k for r in runs for k in r.get("median_rollout_by_kind_s", {})}):
        lines.append(f"{'median rollout, ' + kind:<38}"
                     + "".join(f"{str(r['median_rollout_by_kind_s'].get(kind)):>{COLUMN}}" for r in runs))
        lines.append(f"{'rollouts observed, ' + kind:<38}"
                     + "".join(f"{str(r['rollouts_by_kind'].get(kind)):>{COLUMN}}" for r in runs))
    loops = {_procedure(r): r for r in runs if r["config"].get("rolloutStrategy") == LOOP}
    if loops:
        lines.append(f"{'speed-up vs the namespace loop':<38}" + "".join(
            f"{loops[_procedure(r)]['wall_s'] / r['wall_s']:>{COLUMN - 1}.2f}x" if _procedure(r) in loops
            else f"{'-':>{COLUMN}}" for r in runs))
    peers = {_procedure(r): r for r in runs if r.get("peer")}
    if peers:
        lines.append(f"{'wall / Istio canary procedure (peer)':<38}" + "".join(
            f"{r['wall_s'] / peers[_procedure(r)]['wall_s']:>{COLUMN}.2f}" if _procedure(r) in peers
            else f"{'-':>{COLUMN}}" for r in runs))
    for title, key in [("state after the update (MB)", "state_mb"), ("CLI debug log written (MB)", "debug_log_mb"),
                       ("CPU s of pulumi up and all it ran", "cli_cpu_s")]:
        lines.append(f"{title:<38}" + "".join(f"{str(r.get(key)):>{COLUMN}}" for r in runs))
    lines += _debug_log_cost(runs)
    lines += _phases(runs)
    lines += ["", "P2 zero window (churn during the whole `pulumi up`; target 0/0/0)"]
    for title, key in [("pods created", "created"), ("rate (pods/s)", "rate_per_s"), ("rejected", "rejected"),
                       ("admitted without sidecar", "no sidecar"), ("sidecar -> nonexistent istiod", "no such istiod")]:
        lines.append(f"{title:<38}" + "".join(f"{str(r['churn'][key]):>{COLUMN}}" for r in runs))
    lines.append(f"{'injectors per namespace (min-max)':<38}"
                 + "".join(f"{r['injectors_min']}-{r['injectors_max']:<1} ({r['injector_states']})".rjust(12)
                           for r in runs))
    if all("data_plane" in r for r in runs):
        lines += ["", "Data plane (simulated istio-proxy per pod: token, CSR, ADS over mTLS; targets 0 and <= a pod restart;",
                  "watched until 15 s after the end)"]
        for title, key in [("proxies connected before the update", "proxies"),
                           ("lost their istiod while the pod ran", "proxies_lost_control_plane"),
                           ("longest without an istiod (s)", "longest_without_istiod_s"),
                           ("istiod cores, all proxies connected", "istiod_cores_all_connected"),
                           ("simulator cores, all connected", "proxysim_cores_all_connected"),
                           ("simulator cores during the update", "proxysim_cores_during_up")]:
            lines.append(f"{title:<38}" + "".join(f"{str(r['data_plane'][key]):>{COLUMN}}" for r in runs))
    return lines


def _previews(p: dict[str, Any]) -> list[str]:
    lines = ["", "P3 `pulumi preview --stack migrated`"]
    for n, s in p["seconds"].items():
        plain = (f"   plain preview of {p['resources'][n]} resources {p['plain_seconds'][n]}s, "
                 f"ratio {p['ratio_to_plain'][n]}x" if n in p.get("ratio_to_plain", {}) else "")
        lines.append(f"{n + ' namespaces':<38}{s:>11}s{plain}")
    if "growth_ratio" in p:
        lines.append(f"{'growth (time ratio / namespace ratio)':<38}{p['growth_ratio']:>11}x / "
                     f"{p['namespace_ratio']}x")
        lines.append(f"{'marginal cost per namespace':<38}{p['ms_per_namespace_marginal']:>10}ms")
    return lines
