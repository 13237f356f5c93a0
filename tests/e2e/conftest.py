"""Fixtures for Coalesce's end-to-end tests: run the real server binary.

The server binary comes from $COALESCE_SERVER, default
<repo>/build/server/coalesce-server. When it is missing the tests are skipped,
unless COALESCE_E2E_REQUIRE_SERVER=1, which turns the skip into a failure (CI).

Every server is started on 127.0.0.1 with --grpc-port 0 and --http-port 0;
the ports are parsed from the log lines "listening on ADDRESS:PORT" (gRPC) and
"HTTP on http://ADDRESS:PORT/v2". Each server writes its log to a
file in the test's temporary directory (shown on failure) and is always
terminated at teardown (SIGTERM, then SIGKILL after a bounded wait).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "examples"))

import generate_models as gm  # noqa: E402

import tritonclient.grpc as grpcclient  # noqa: E402

from e2e_util import stop_process  # noqa: E402

LISTEN_RE = re.compile(r"listening on (\S+):(\d+)")
METRICS_RE = re.compile(r"metrics on http://(\S+):(\d+)/metrics")
HTTP_RE = re.compile(r"HTTP on http://(\S+):(\d+)/v2")
START_TIMEOUT_S = float(os.environ.get("COALESCE_E2E_START_TIMEOUT", "90"))
STOP_TIMEOUT_S = 45.0


def server_binary() -> Path:
    env = os.environ.get("COALESCE_SERVER")
    path = Path(env) if env else REPO_ROOT / "build" / "server" / "coalesce-server"
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path


def wait_for(predicate, timeout: float, interval: float = 0.02, what: str = "condition"):
    """Poll predicate() until it returns a truthy value or timeout expires."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - kept for the error message
            last_exc = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.1f}s waiting for {what}"
                               + (f" (last error: {last_exc!r})" if last_exc else ""))
        time.sleep(interval)


class ServerProcess:
    """One coalesce-server process on 127.0.0.1 with an OS-chosen port."""

    def __init__(self, repo: Path, log_path: Path, extra_args=(), env: dict | None = None):
        self.repo = Path(repo)
        self.env = dict(env or {})  # added to the test's environment
        self.log_path = Path(log_path)
        self.args = [
            str(server_binary()),
            "--model-repository", str(self.repo),
            "--grpc-address", "127.0.0.1",
            "--grpc-port", "0",
            "--http-address", "127.0.0.1",
            "--http-port", "0",
            "--metrics-address", "127.0.0.1",
            "--metrics-port", "0",
            "--log-level", "info",
            *extra_args,
        ]
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self._log_file = None
        self._clients = []

    # -- lifecycle -------------------------------------------------------
    def start(self, wait_ready: bool = True) -> "ServerProcess":
        self._log_file = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.args, stdout=self._log_file, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, **self.env} if self.env else None,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        # Each frontend announces itself on its own line, gRPC first: wait for
        # all that are on, so a test that does not wait for readiness still
        # finds its HTTP and metrics ports.
        announced = [LISTEN_RE] + [pattern for flag, pattern in
                                   (("--allow-http", HTTP_RE), ("--allow-metrics", METRICS_RE))
                                   if self._flag_on(flag)]
        while self.port is None:
            log = self.log()
            if all(pattern.search(log) for pattern in announced):
                self.port = int(LISTEN_RE.search(log).group(2))
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"coalesce-server exited with {self.proc.returncode} "
                                   f"before listening; log:\n{self.log()}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"not every endpoint announced within {START_TIMEOUT_S}s; "
                                   f"log:\n{self.log()}")
            time.sleep(0.02)
        if wait_ready:
            client = self.client()
            remaining = max(1.0, deadline - time.monotonic())
            try:
                wait_for(lambda: client.is_server_ready(), remaining, 0.05, "server readiness")
            except TimeoutError as exc:
                raise TimeoutError(f"{exc}; log:\n{self.log()}") from None
        return self

    def _flag_on(self, flag: str) -> bool:
        """A boolean flag's last value on the command line (default on)."""
        values = [self.args[i + 1] for i, arg in enumerate(self.args[:-1]) if arg == flag]
        values += [arg.split("=", 1)[1] for arg in self.args if arg.startswith(flag + "=")]
        return not values or values[-1].lower() not in ("false", "0", "no", "off")

    @property
    def url(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str | None:
        """http://127.0.0.1:PORT/metrics from the log, or None when metrics are off."""
        m = METRICS_RE.search(self.log())
        return f"http://127.0.0.1:{m.group(2)}/metrics" if m else None

    @property
    def http_url(self) -> str | None:
        """127.0.0.1:PORT of the HTTP frontend from the log, or None when it is off."""
        m = HTTP_RE.search(self.log())
        return f"127.0.0.1:{m.group(2)}" if m else None

    def http_client(self, **kwargs):
        """A tritonclient.http client of the HTTP frontend."""
        import tritonclient.http as httpclient

        c = httpclient.InferenceServerClient(url=self.http_url, **kwargs)
        self._clients.append(c)
        return c

    def client(self) -> grpcclient.InferenceServerClient:
        c = grpcclient.InferenceServerClient(url=self.url)
        self._clients.append(c)
        return c

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def send_signal(self, sig=signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM, wait up to timeout, then SIGKILL. Returns the exit code."""
        for c in self._clients:
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass
        self._clients.clear()
        if self.proc is None:
            return None
        stop_process(self.proc, timeout)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return self.proc.returncode


# --------------------------------------------------------------------------
# model repositories
# --------------------------------------------------------------------------

def tiny_config(name: str, max_batch_size: int = 8, dynamic_batching: str | None = None,
                width: int = 4, instances: int = 1) -> str:
    """config.pbtxt for gm.make_tiny_model(width): x [width] -> y [width]."""
    text = f"""name: "{name}"
max_batch_size: {max_batch_size}
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ {width} ] }} ]
output [ {{ name: "y" data_type: TYPE_FP32 dims: [ {width} ] }} ]
instance_group [ {{ count: {instances} kind: KIND_CPU }} ]
"""
    if dynamic_batching is not None:
        text += f"dynamic_batching {{ {dynamic_batching} }}\n"
    return text


# Test models of the shared repository: name -> dynamic_batching body (None: no batcher).
SHARED_TINY_MODELS = {
    # plain: no dynamic batching, for misc checks
    "tiny_plain": None,
    # merging: a 200 ms window so concurrent requests are certainly merged
    "tiny_batching": "max_queue_delay_microseconds: 200000",
    # queue full: the first request sits 3 s in the queue, the queue holds one
    "tiny_qfull": "max_queue_delay_microseconds: 3000000 "
                  "default_queue_policy { max_queue_size: 1 }",
    # queue timeout, REJECT: 100 ms timeout while the batcher would wait 2 s
    "tiny_qreject": "max_queue_delay_microseconds: 2000000 "
                    "default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 100000 }",
    # queue timeout, DELAY: the request times out but is still executed
    "tiny_qdelay": "max_queue_delay_microseconds: 300000 "
                   "default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 50000 }",
    # client deadlines: a 2 s batching window
    "tiny_slowq": "max_queue_delay_microseconds: 2000000",
}


def build_shared_repo(repo: Path) -> Path:
    gm.generate(repo, only=["mlp_classifier", "mlp_classifier_nobatch", "two_io"])
    for name, batching in SHARED_TINY_MODELS.items():
        gm.write_model(repo, name, gm.make_tiny_model(), tiny_config(name, 8, batching))
    # no config.pbtxt: the server completes it from the ONNX model
    gm.write_model(repo, "tiny_noconfig", gm.make_tiny_model())
    return repo


def _require_binary():
    path = server_binary()
    if not (path.is_file() and os.access(path, os.X_OK)):
        msg = f"coalesce-server binary not found at {path} (set COALESCE_SERVER or build it)"
        if os.environ.get("COALESCE_E2E_REQUIRE_SERVER") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="session")
def shared_repo(tmp_path_factory) -> Path:
    return build_shared_repo(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="session")
def server(shared_repo, tmp_path_factory):
    """The session's server on the shared repository (model control mode none)."""
    _require_binary()
    srv = ServerProcess(shared_repo, tmp_path_factory.mktemp("log") / "server.log")
    try:
        srv.start()
        yield srv
    finally:
        code = srv.stop()
        if code not in (0, None):
            sys.stderr.write(f"shared coalesce-server exited with {code}; log:\n{srv.log()[-8000:]}\n")


@pytest.fixture
def client(server):
    c = grpcclient.InferenceServerClient(url=server.url)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def start_server(tmp_path):
    """Factory: start_server(repo, *extra_args, wait_ready=True, env=None) -> ServerProcess
    (env: variables added to the server's environment).

    Every server it starts is stopped at teardown, whatever the test did.
    """
    _require_binary()
    started = []

    def _start(repo, *extra_args, wait_ready=True, env=None):
        srv = ServerProcess(repo, tmp_path / f"server{len(started)}.log", extra_args, env)
        started.append(srv)
        return srv.start(wait_ready=wait_ready)

    try:
        yield _start
    finally:
        for srv in started:
            srv.stop()


# --------------------------------------------------------------------------
# reference outputs
# --------------------------------------------------------------------------

class Reference:
    """onnxruntime sessions over the models of a repository (one thread each)."""

    def __init__(self, repo: Path):
        import onnxruntime as ort
        self._ort = ort
        self.repo = Path(repo)
        self._sessions = {}

    def session(self, model: str):
        if model not in self._sessions:
            so = self._ort.SessionOptions()
            so.intra_op_num_threads = 1
            so.inter_op_num_threads = 1
            self._sessions[model] = self._ort.InferenceSession(
                str(self.repo / model / "1" / "model.onnx"), so, providers=["CPUExecutionProvider"])
        return self._sessions[model]

    def run(self, model: str, feeds: dict) -> dict:
        sess = self.session(model)
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, sess.run(names, feeds)))


@pytest.fixture(scope="session")
def reference(shared_repo) -> Reference:
    return Reference(shared_repo)


@pytest.fixture
def rng(request):
    # a per-test deterministic generator
    seed = sum(request.node.nodeid.encode()) % (2**32)
    return np.random.default_rng(seed)
