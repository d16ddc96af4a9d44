"""One cluster's preview and update through Pulumi's Automation API, and the order a fleet runs them in.

The Automation API's known limits shape this: selecting or creating a stack rewrites the workspace file under
PULUMI_HOME, so two at once corrupt it (pulumi/pulumi#8186); processes installing plugins into one PULUMI_HOME at
once interfere (pulumi/pulumi#22784); and a Python inline program keeps global state, one update per process
(pulumi/pulumi#6052). So each cluster gets its own project directory (fleet.project) with this repository's program
as a local program (every operation is its own `pulumi` process, the program its own Python), its own PULUMI_HOME
and its own backend prefix (its own stacks and locks); and the fleet installs no plugin: it runs with automatic
plugin acquisition off, each PULUMI_HOME's plugins linked to the operator's, installed once beforehand.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import pathlib
import shutil
import threading
import time
from typing import Any, Callable, Iterable, Mapping, TypeVar

from pulumi import automation as auto

from fleet import project
from fleet.spec import ClusterSpec, Fleet
from migration.phases import phase_of

STACK_TYPE = "pulumi:pulumi:Stack"


@dataclasses.dataclass
class Outcome:
    cluster: str
    stack: str
    operation: str
    """preview or up."""
    ok: bool
    seconds: float
    outputs: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The stack's outputs: after an update, the stack's; after a preview, the values the plan already knows."""
    errors: list[str] = dataclasses.field(default_factory=list)


class Printer:
    """One line per event, whole lines only, from any thread."""

    def __init__(self, write: Callable[[str], Any] = print):
        self._write, self._lock = write, threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            self._write(line)


class ClusterStack:
    """One cluster's stack (legacy or migrated), driven through the Automation API."""

    def __init__(self, fleet: Fleet, spec: ClusterSpec, stack: str, work_root: pathlib.Path,
                 env: Mapping[str, str], say: Printer):
        self.spec, self.stack_name, self.say = spec, stack, say
        root = work_root / spec.name
        self.dir = project.write(root / "project", spec.kubeconfig, spec.context, spec.config)
        self.home = root / "pulumi-home"
        self.home.mkdir(parents=True, exist_ok=True)
        _share_plugins(self.home, env)
        # Set over the fleet's own environment (its PATH, passphrase and AWS credentials) for every pulumi it runs.
        self.env = {"PULUMI_BACKEND_URL": fleet.backend_of(spec), "PULUMI_HOME": str(self.home),
                    "PULUMI_SKIP_UPDATE_CHECK": "true", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true"}
        self.command = auto.PulumiCommand(root=_pulumi_root(env), skip_version_check=True)

    def _stack(self) -> auto.Stack:
        workspace = auto.LocalWorkspace(work_dir=str(self.dir), pulumi_home=str(self.home), env_vars=self.env,
                                        pulumi_command=self.command)
        return auto.Stack.create_or_select(self.stack_name, workspace)

    def _events(self, operation: str, outputs: dict[str, Any], errors: list[str]):
        seen: set[str] = set()

        def on_event(event: auto.EngineEvent) -> None:
            if event.resource_pre_event and (phase := phase_of(event.resource_pre_event.metadata.urn)):
                # A preview plans every phase at once: only its start and end are reported.
                if operation == "up" and phase not in seen:
                    seen.add(phase)
                    self.say(f"[{self.spec.name}] {operation} {self.stack_name}: {phase}")
            elif event.res_outputs_event and event.res_outputs_event.metadata.type == STACK_TYPE:
                state = event.res_outputs_event.metadata.new
                outputs.update((state.outputs or {}) if state else {})
            elif event.diagnostic_event and event.diagnostic_event.severity == "error":
                errors.append(event.diagnostic_event.message.strip())
        return on_event

    def run(self, operation: str) -> Outcome:
        """`preview` or `up` of this cluster's stack; never raises for a failed operation (the Outcome says)."""
        self.say(f"[{self.spec.name}] {operation} {self.stack_name}: started")
        began, outputs, errors = time.monotonic(), {}, []
        try:
            stack = self._stack()
            on_event = self._events(operation, outputs, errors)
            if operation == "preview":
                stack.preview(on_event=on_event, color="never")
            else:
                outputs = {k: v.value for k, v in stack.up(on_event=on_event, color="never").outputs.items()}
            ok = True
        except auto.errors.CommandError as err:
            ok = False
            if not errors:
                errors.append(str(err).strip().splitlines()[-1] if str(err).strip() else repr(err))
        outcome = Outcome(self.spec.name, self.stack_name, operation, ok, time.monotonic() - began, outputs,
                          [_one_line(e) for e in errors])
        self.say(f"[{self.spec.name}] {operation} {self.stack_name}: {'done' if ok else 'FAILED'} in "
                 f"{outcome.seconds:.0f}s" + ("" if ok else f": {outcome.errors[0] if outcome.errors else ''}"))
        return outcome


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _pulumi_root(env: Mapping[str, str]) -> str:
    """The directory whose bin/pulumi the Automation API runs: the pulumi first on env's PATH."""
    found = shutil.which("pulumi", path=env.get("PATH"))
    if not found:
        raise FileNotFoundError("no `pulumi` on PATH: install the Pulumi CLI (for the embedded clusters: "
                                "eval \"$(.venv/bin/python -m devcluster tools)\")")
    return str(pathlib.Path(found).resolve().parent.parent)


def _share_plugins(home: pathlib.Path, env: Mapping[str, str]) -> None:
    """Link the operator's installed plugins into a cluster's PULUMI_HOME (read there, never installed there)."""
    plugins = pathlib.Path(env.get("PULUMI_HOME") or pathlib.Path.home() / ".pulumi") / "plugins"
    link = home / "plugins"
    if plugins.is_dir() and not link.exists():
        link.symlink_to(plugins, target_is_directory=True)


T = TypeVar("T")
R = TypeVar("R")


def bounded(items: Iterable[T], run: Callable[[T], R], failed: Callable[[R], bool], max_parallel: int,
            max_failures: int) -> tuple[list[R], list[T]]:
    """Run items with at most max_parallel at once; once max_failures have failed, start no more (the running ones
    finish). Returns the results in the order they ended, and the items never started."""
    waiting, running, results, failures = list(items), set(), [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, max_parallel)) as pool:
        while waiting or running:
            while waiting and len(running) < max_parallel and failures < max_failures:
                running.add(pool.submit(run, waiting.pop(0)))
            if not running:
                break
            done, running = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                results.append(future.result())
                failures += failed(results[-1])
    return results, waiting
