"""The dashboard and the rules against a real Prometheus scraping a real server.

A coalesce-server (fake NVML from build/tests/fake_nvml when it is built, so
that the nv_gpu_* families exist) is scraped every second by Prometheus
(Debian's package, /usr/bin/prometheus or $PROMETHEUS) on 127.0.0.1, with
the labels a Kubernetes ServiceMonitor would add (job, namespace, pod) and
deploy/prometheus/coalesce-rules.yml evaluated every second. After a few
seconds of load (coalesce-bench, or a Python client loop when the bench is
not built):
- every expression of promql_expressions (dashboard targets and variable
  selectors, recording rules, alert signals) runs without error and returns
  data; whole alert expressions run without error;
- every rule group is healthy, and every recording rule has recorded data;
- the scraped counters agree with the ModelStatistics RPC: counts exactly,
  durations within 1%.
Without prometheus the test fails under CI=true or COALESCE_E2E_REQUIRE_SERVER=1
and is skipped otherwise.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
import yaml

import generate_models as gm
import promql_expressions as pe
from conftest import REPO_ROOT, server_binary, tiny_config, wait_for
from e2e_util import make_inputs, stop_process

NAMESPACE, POD, MODEL = "e2e", "coalesce-e2e-0", "m"
VARIABLES = {"namespace": NAMESPACE, "pod": POD, "model": MODEL}
RATE_WINDOW = "30s"          # $__rate_interval etc. in the dashboard's expressions
LOAD_SECONDS = 5.0
PROM_START_TIMEOUT_S = 60.0
SYNC_TIMEOUT_S = 30.0        # bound of each wait on Prometheus below
# Families the server leaves out when they cannot be read (docs/metrics.md):
# an expression on them may select nothing when the scrape lacks them.
OPTIONAL_FAMILIES = {"coalesce_cgroup_memory_usage_bytes", "coalesce_cgroup_memory_limit_bytes",
                     "coalesce_cgroup_cpu_limit_cores"}


def fake_nvml_library() -> Path:
    """$COALESCE_FAKE_NVML, else the fake NVML built beside the server binary."""
    env = os.environ.get("COALESCE_FAKE_NVML")
    if env:
        return Path(env)
    return server_binary().resolve().parents[1] / "tests" / "fake_nvml" / "libcoalesce_fake_nvml.so"


def bench_binary() -> Path:
    """$COALESCE_BENCH, else build/benchmarks/coalesce_bench/coalesce-bench (as test_coalesce_bench.py)."""
    env = os.environ.get("COALESCE_BENCH")
    path = Path(env) if env else REPO_ROOT / "build" / "benchmarks" / "coalesce_bench" / "coalesce-bench"
    return path if path.is_absolute() else REPO_ROOT / path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(predicate, what: str, timeout: float = SYNC_TIMEOUT_S, interval: float = 0.1, log=None):
    """predicate()'s first truthy value (conftest.wait_for); the TimeoutError
    also carries the log when given."""
    try:
        return wait_for(predicate, timeout, interval, what)
    except TimeoutError as exc:
        if log is None:
            raise
        raise TimeoutError(f"{exc}\n--- prometheus log (tail)\n{log()}") from None


def rfc3339(text: str) -> float:
    """Seconds since the epoch of Prometheus' RFC 3339 timestamps (nanoseconds)."""
    m = re.match(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", text)
    assert m, text
    base = datetime.fromisoformat(m.group(1) + (m.group(3).replace("Z", "+00:00")))
    return base.astimezone(timezone.utc).timestamp() + float("0." + (m.group(2) or "0"))


class Prometheus:
    """A prometheus process on 127.0.0.1 with its data in a temporary folder."""

    def __init__(self, binary: str, workdir: Path, target: str):
        self.binary, self.workdir, self.target = binary, Path(workdir), target
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.log_path = self.workdir / "prometheus.log"
        self._log_file = None

    def write_config(self) -> Path:
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(pe.RULES)],
            "scrape_configs": [{
                # job_name gives the job label the rules select (job="coalesce")
                "job_name": "coalesce",
                "static_configs": [{"targets": [self.target],
                                    "labels": {"namespace": NAMESPACE, "pod": POD}}],
            }],
        }
        path = self.workdir / "prometheus.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def start(self) -> "Prometheus":
        config = self.write_config()
        for attempt in range(3):  # the port picked may be taken before prometheus binds it
            self.port = free_port()
            self._log_file = open(self.log_path, "ab")
            self.proc = subprocess.Popen(
                [self.binary, f"--config.file={config}",
                 f"--storage.tsdb.path={self.workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=info"],
                stdout=self._log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=self.workdir)
            try:
                poll(self._ready, "prometheus /-/ready", PROM_START_TIMEOUT_S)
                return self
            except TimeoutError:
                exited = self.proc.poll() is not None
                self.stop()
                if not (exited and "address already in use" in self.log()) or attempt == 2:
                    raise RuntimeError(f"prometheus did not become ready\n{self.log()}") from None
        return self

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with {self.proc.returncode}")
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self, tail: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except FileNotFoundError:
            return ""

    def api(self, path: str, **params) -> dict:
        """GET /api/v1/PATH: the JSON body, for errors too ({"status": "error", ...})."""
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")
            try:
                return json.loads(body)
            except ValueError:
                return {"status": "error", "error": f"HTTP {exc.code}: {body[:500]}"}

    def query(self, expr: str, at: float | None = None) -> dict:
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self.api("query", **params)

    def vector(self, expr: str, at: float | None = None) -> list:
        doc = self.query(expr, at)
        assert doc.get("status") == "success", (expr, doc)
        return doc["data"]["result"]

    def stop(self) -> None:
        stop_process(self.proc, 20)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


@pytest.fixture
def prometheus_binary() -> str:
    return pe.require_binary("prometheus")


@pytest.fixture
def prom_factory(prometheus_binary, tmp_path):
    started = []

    def start(target: str) -> Prometheus:
        workdir = tmp_path / f"prometheus{len(started)}"
        workdir.mkdir()
        prom = Prometheus(prometheus_binary, workdir, target)
        started.append(prom)
        return prom.start()

    try:
        yield start
    finally:
        for prom in started:
            prom.stop()


def drive_load(url: str, seconds: float) -> str:
    """Closed-loop load on MODEL for about `seconds`: coalesce-bench when it is
    built, else four client threads. Returns a report for failure messages."""
    bench = bench_binary()
    if bench.is_file() and os.access(bench, os.X_OK):
        window_ms = int(seconds * 1000 / 4)
        cmd = [str(bench), "-m", MODEL, "-u", url, "--concurrency-range", "4",
               "--warmup-ms", str(window_ms), "--window-ms", str(window_ms),
               "--max-windows", "3", "--stability-percent", "100"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        report = (f"$ {' '.join(cmd)}\nexit {proc.returncode}\n--- stdout\n{proc.stdout}"
                  f"\n--- stderr\n{proc.stderr}")
        assert proc.returncode == 0, report
        return report
    import tritonclient.grpc as grpcclient

    stop = time.monotonic() + seconds
    errors, counts = [], [0] * 4

    def worker(i):
        client = grpcclient.InferenceServerClient(url=url)
        try:
            while time.monotonic() < stop:
                x = np.full((1 + i % 2, 4), i, dtype=np.float32)
                client.infer(MODEL, make_inputs(x=x), client_timeout=30)
                counts[i] += 1
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 60)
    report = f"python client loop: {sum(counts)} requests, errors {errors}"
    assert not errors and sum(counts) > 0, report
    return report


def exposed_families(metrics_url: str) -> set[str]:
    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    return {re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
            for line in text.splitlines() if line and not line.startswith("#")}


def num(stats: dict, *keys: str) -> int:
    """A ModelStatistics number from its JSON form, where zeros are left out."""
    for key in keys:
        stats = stats.get(key, {})
    return int(stats or 0)


def last_sample(prom: Prometheus, selector: str, at: float) -> tuple[float, float]:
    """(timestamp, value) of the last raw sample of one series."""
    series = prom.vector(f"{selector}[1h]", at)
    assert len(series) == 1, (selector, series)
    ts, value = series[0]["values"][-1]
    return float(ts), float(value)


def test_dashboard_and_rules_on_a_real_prometheus(start_server, prom_factory, tmp_path):
    repo = tmp_path / "repo"
    # With a latency target, so the dashboard's "Latency target" row has data.
    gm.write_model(repo, MODEL, gm.make_tiny_model(),
                   tiny_config(MODEL, 8, "max_queue_delay_microseconds: 2000")
                   + 'parameters { key: "latency_target_p99_ms" value { string_value: "50" } }\n')
    nvml = fake_nvml_library()
    env = {"COALESCE_NVML_LIBRARY": str(nvml)} if nvml.is_file() else None
    srv = start_server(repo, env=env)
    assert srv.metrics_url, f"no 'metrics on' line in the log:\n{srv.log()}"
    target = urllib.parse.urlparse(srv.metrics_url).netloc
    prom = prom_factory(target)

    def context() -> str:
        return (f"\n--- prometheus log (tail)\n{prom.log()}\n--- server log (tail)\n{srv.log()[-4000:]}"
                + ("" if env else f"\n(no fake NVML at {nvml}: the nv_gpu_* families are absent)"))

    # A first scrape before any traffic: the counters' first samples are 0.
    selector = f'{{job="coalesce", namespace="{NAMESPACE}", pod="{POD}", model="{MODEL}", version="1"}}'
    poll(lambda: prom.vector(f"nv_inference_request_success{selector}"),
         "the first scrape of the server", log=prom.log)
    up = prom.vector('up{job="coalesce"}')
    assert [s["value"][1] for s in up] == ["1"], f"{up}{context()}"

    client = srv.client()
    before = client.get_inference_statistics(MODEL, as_json=True)["model_stats"][0]
    assert num(before, "inference_stats", "success", "count") == 0, before
    load_report = drive_load(srv.url, LOAD_SECONDS)

    # Load has stopped: the server's statistics are final. Wait for a scrape
    # taken after reading them, then for every rule group to evaluate after it.
    stats = client.get_inference_statistics(MODEL, as_json=True)["model_stats"][0]
    stats_read = time.time()
    scraped = poll(lambda: next((float(s["value"][1]) for s in prom.vector(
        f"timestamp(nv_inference_request_success{selector})") if float(s["value"][1]) > stats_read), None),
        "a scrape after the load", log=prom.log)

    def groups_evaluated_after_scrape():
        groups = prom.api("rules")["data"]["groups"]
        return groups if groups and all(rfc3339(g["lastEvaluation"]) > scraped for g in groups) else None

    groups = poll(groups_evaluated_after_scrape, "every rule group to evaluate after the scrape",
                  log=prom.log)
    assert stats == client.get_inference_statistics(MODEL, as_json=True)["model_stats"][0], \
        "ModelStatistics changed after the load had stopped"
    at = time.time()

    # -- the rule groups are healthy and every recording rule recorded data
    assert {g["name"] for g in groups} == {"coalesce.recording", "coalesce.alerts"}, groups
    unhealthy = [f'{g["name"]}/{r["name"]}: health {r["health"]} {r.get("lastError", "")}'
                 for g in groups for r in g["rules"] if r["health"] != "ok" or r.get("lastError")]
    assert not unhealthy, "\n".join(unhealthy) + context()
    rules_loaded = {r["name"] for g in groups for r in g["rules"]}
    assert rules_loaded == set(pe.recording_rule_names()) | set(pe.alert_names()), rules_loaded

    # -- every expression: no error; data unless it is a whole alert expression
    families = exposed_families(srv.metrics_url)
    failures, notes = [], []
    expressions = pe.all_expressions(VARIABLES, RATE_WINDOW)
    expressions += [pe.Expression("rules", "recorded", f"recorded series {name}", name, True)
                    for name in pe.recording_rule_names()]
    for e in expressions:
        doc = prom.query(e.expr, at)
        if doc.get("status") != "success":
            failures.append(f"ERROR {e}\n    {doc.get('errorType')}: {doc.get('error')}")
            continue
        data = doc["data"]
        empty = data["resultType"] in ("vector", "matrix") and not data["result"]
        if empty and e.require_data:
            optional = {f for f in re.findall(r"[a-zA-Z_:][\w:]*", e.expr)
                        if f in OPTIONAL_FAMILIES and f not in families}
            if optional:
                notes.append(f"empty, {sorted(optional)} not exposed here: {e}")
            else:
                failures.append(f"EMPTY {e}")
    assert not failures, (f"{len(failures)} of {len(expressions)} expressions failed "
                          f"(variables {VARIABLES}, rate window {RATE_WINDOW}):\n"
                          + "\n".join(failures) + ("\nnotes:\n" + "\n".join(notes) if notes else "")
                          + f"\n--- load\n{load_report[-2000:]}" + context())

    # -- Prometheus agrees with ModelStatistics. The counters were 0 at the
    # first scrape, so increase() over a window holding every sample, taken at
    # the last sample, is not extrapolated: it is exactly last - first.
    successes = num(stats, "inference_stats", "success", "count")
    exact = {
        "nv_inference_request_success": successes,
        "nv_inference_count": num(stats, "inference_count"),
        "nv_inference_exec_count": num(stats, "execution_count"),
        "coalesce_request_duration_seconds_count": successes,
        "coalesce_batch_size_count": num(stats, "execution_count"),
        "coalesce_batch_size_sum": num(stats, "inference_count"),
    }
    ns = {key: num(stats, "inference_stats", key, "ns")
          for key in ("success", "queue", "compute_input", "compute_infer", "compute_output")}
    approx = {
        "nv_inference_request_duration_us": ns["success"] / 1e3,
        "nv_inference_queue_duration_us": ns["queue"] / 1e3,
        "nv_inference_compute_input_duration_us": ns["compute_input"] / 1e3,
        "nv_inference_compute_infer_duration_us": ns["compute_infer"] / 1e3,
        "nv_inference_compute_output_duration_us": ns["compute_output"] / 1e3,
        "coalesce_request_duration_seconds_sum": ns["success"] / 1e9,
        "coalesce_queue_duration_seconds_sum": ns["queue"] / 1e9,
    }
    assert exact["nv_inference_request_success"] > 0 and exact["nv_inference_exec_count"] > 0, stats
    mismatches = []
    for family, want in {**exact, **approx}.items():
        ts, last = last_sample(prom, f"{family}{selector}", at)
        first = float(prom.vector(f"{family}{selector}[1h]", at)[0]["values"][0][1])
        increase = prom.vector(f"increase({family}{selector}[1h])", ts)
        increase = float(increase[0]["value"][1]) if increase else None
        if family in exact:
            ok = first == 0 and last == want and increase == want
        else:
            ok = (first == 0 and last == pytest.approx(want, rel=0.01)
                  and increase is not None and increase == pytest.approx(want, rel=0.01))
        if not ok:
            mismatches.append(f"{family}: ModelStatistics {want}, Prometheus first sample {first}, "
                              f"last sample {last}, increase() {increase}")
    assert not mismatches, "\n".join(mismatches) + f"\nstatistics: {stats}" + context()
