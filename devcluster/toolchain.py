"""Where the pinned toolchain lives, building a tool set that only some features use the first time one needs it,
and a clear failure naming the command that builds what is missing."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import threading

REPO = pathlib.Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO / "tools" / "build-toolchain.sh"
VENV_BIN = REPO / ".venv" / "bin"
# What every embedded cluster, and so the demo, runs; `make demo` builds this set alone.
DEMO_TOOLS = "demo"
SETUP_HINT = ("run `make demo` (builds the demo's tools, about 20 minutes cold) or `make setup` (every tool) "
              "to build the pinned toolchain into the cache")


class ToolchainMissing(RuntimeError):
    pass


def pins() -> dict[str, str]:
    """tools/pins.env: NAME -> value (the versions the toolchain is built at)."""
    lines = (line.split("#", 1)[0].strip() for line in (REPO / "tools" / "pins.env").read_text().splitlines())
    return dict(line.split("=", 1) for line in lines if "=" in line)


def _script(*args: str) -> str:
    return subprocess.run([str(BUILD_SCRIPT), *args], check=True, capture_output=True, text=True).stdout.strip()


def toolsets() -> dict[str, list[str]]:
    """Each tool set the build script knows -> the binaries it installs (`tools/build-toolchain.sh --sets`)."""
    lines = (line.split(":", 1) for line in _script("--sets").splitlines())
    return {name: binaries.split() for name, binaries in lines}


def _pinned_bin() -> pathlib.Path:
    """The bin directory this pin set builds into, built or not."""
    return pathlib.Path(_script("--dir"))


def _is_built(toolset: str, bin_path: pathlib.Path) -> bool:
    return (bin_path.parent / f".complete-{toolset}").is_file()


def bin_dir() -> pathlib.Path:
    """The bin directory of the toolchain for the current pins, with the demo's tools built; raises
    ToolchainMissing if they are not."""
    path = _pinned_bin()
    if not _is_built(DEMO_TOOLS, path):
        raise ToolchainMissing(f"the pinned toolchain is not built (expected {path}): {SETUP_HINT}")
    return path


def ensure(toolset: str) -> pathlib.Path:
    """Build a tool set that only some features use (a second Istio minor, ...) the first time one of them needs it,
    with the same pin-hash cache as the rest, and return the bin directory; raises ToolchainMissing naming the
    command if the build fails."""
    path = _pinned_bin()
    if _is_built(toolset, path):
        return path
    print(f"building the {toolset} tools on first use: tools/build-toolchain.sh {toolset}", file=sys.stderr,
          flush=True)
    built = subprocess.run([str(BUILD_SCRIPT), toolset], stdout=subprocess.DEVNULL)  # progress goes to stderr
    if built.returncode != 0 or not _is_built(toolset, path):
        raise ToolchainMissing(f"building the {toolset} tools failed (exit {built.returncode}): run "
                               f"`tools/build-toolchain.sh {toolset}` and read the error it prints")
    return path


def binary(name: str, toolset: str = DEMO_TOOLS) -> pathlib.Path:
    """One toolchain binary of a tool set (or kubectl from the project virtualenv); a set other than the demo's is
    built on first use. Raises ToolchainMissing naming the fix."""
    if name == "kubectl":
        path = VENV_BIN / name
    elif toolset == DEMO_TOOLS:
        path = bin_dir() / name
    else:
        path = ensure(toolset) / name
    if not path.is_file():
        raise ToolchainMissing(f"{path} is missing: {SETUP_HINT}")
    return path


def share_file(name: str) -> pathlib.Path:
    return bin_dir().parent / "share" / name


def tool_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for running Pulumi and kubectl with zero network: toolchain and venv first on PATH."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = os.pathsep.join([str(bin_dir()), str(VENV_BIN), env.get("PATH", "")])
    env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
    env["PULUMI_SKIP_UPDATE_CHECK"] = "true"
    return env


def let_children_be_interrupted() -> None:
    """Undo an inherited "ignore SIGINT" before starting tools. A shell starts background jobs (`cmd &`, nohup'd
    scripts, some CI runners) with SIGINT ignored, and every child inherits that; the Pulumi CLI stops each plugin
    (language host, providers) with SIGINT and kills it only after waiting 5 s, so every pulumi command took ~5 s
    longer (a 64-resource preview 6.3 s instead of 1.5 s, docs/benchmarks.md, 2026-12-05). A Python handler is reset
    to the default in exec'd children. Call it from the main thread of an entry point; elsewhere it does nothing."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
