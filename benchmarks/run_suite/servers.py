"""Server processes for the benchmark suite, each with a bounded lifetime.

Every process is started in its own session (process group) with its log in
a file; `stop()` sends SIGTERM to the whole group, waits a bounded time, then
SIGKILL. `stop_all()` runs at exit and on SIGINT/SIGTERM of the suite, so no
server outlives it. Readiness is polled with a deadline, never slept for.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

LISTEN_RE = re.compile(r"listening on (\S+):(\d+)")
_RUNNING: list["Server"] = []


def free_port() -> int:
    """A port the OS had free a moment ago on 127.0.0.1 (for servers that
    cannot bind port 0 and report it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(predicate, timeout_s: float, what: str, interval_s: float = 0.1, alive=None):
    """Calls predicate() until truthy; TimeoutError after timeout_s,
    RuntimeError as soon as alive() is false."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - the last one is reported
            last = exc
        if alive is not None and not alive():
            raise RuntimeError(f"{what}: process exited")
        time.sleep(interval_s)
    raise TimeoutError(f"{what}: not within {timeout_s:.0f} s" + (f" (last error: {last!r})" if last else ""))


def model_ready(url: str, model: str) -> bool:
    import tritonclient.grpc as grpcclient
    client = grpcclient.InferenceServerClient(url)
    try:
        return client.is_model_ready(model)
    finally:
        client.close()


class Server:
    """One server process. `command` is shown in the report as run."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env=None, cwd=None):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.log_path = Path(log_path)
        self.env = env
        self.cwd = cwd
        self.proc: subprocess.Popen | None = None
        self.url: str | None = None

    def start(self) -> "Server":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     env=self.env, cwd=self.cwd)
        log.close()
        _RUNNING.append(self)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_listening(self, timeout_s: float) -> str:
        """Waits for the "listening on ADDR:PORT" line; sets and returns url."""
        match = poll(lambda: LISTEN_RE.search(self.log()), timeout_s,
                     f"{self.name} listening", alive=self.alive)
        self.url = f"127.0.0.1:{match.group(2)}"
        return self.url

    def wait_model_ready(self, models, timeout_s: float) -> None:
        for model in models:
            poll(lambda: model_ready(self.url, model), timeout_s,
                 f"{self.name} model {model} ready", interval_s=0.25, alive=self.alive)

    def wait_serving(self, models, timeout_s: float) -> str:
        """wait_listening, then every model in `models` ready; returns url."""
        self.wait_listening(timeout_s)
        self.wait_model_ready(models, timeout_s)
        return self.url

    def stop(self, timeout_s: float = 30) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        try:  # whatever is left of the group (Triton's stubs, MLServer workers)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=10)
        if self in _RUNNING:
            _RUNNING.remove(self)


def stop_all() -> None:
    for server in list(_RUNNING):
        server.stop(timeout_s=10)
