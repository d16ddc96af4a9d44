"""Where the pinned toolchain lives, and a clear failure when it has not been built."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import threading

REPO = pathlib.Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO / "tools" / "build-toolchain.sh"
VENV_BIN = REPO / ".venv" / "bin"
SETUP_HINT = "run `make setup` (builds the pinned toolchain into the cache, about 25 minutes cold)"


class ToolchainMissing(RuntimeError):
    pass


def pins() -> dict[str, str]:
    """tools/pins.env: NAME -> value (the versions the toolchain is built at)."""
    lines = (line.split("#", 1)[0].strip() for line in (REPO / "tools" / "pins.env").read_text().splitlines())
    return dict(line.split("=", 1) for line in lines if "=" in line)


def bin_dir() -> pathlib.Path:
    """The bin directory of the built toolchain for the current pins; raises ToolchainMissing if not built."""
    out = subprocess.run([str(BUILD_SCRIPT), "--dir"], check=True, capture_output=True, text=True).stdout.strip()
    path = pathlib.Path(out)
    if not (path.parent / ".complete").is_file():
        raise ToolchainMissing(f"the pinned toolchain is not built (expected {path}): {SETUP_HINT}")
    return path


def binary(name: str) -> pathlib.Path:
    """One toolchain binary (or kubectl from the project virtualenv); raises ToolchainMissing naming the fix."""
    path = VENV_BIN / name if name == "kubectl" else bin_dir() / name
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
