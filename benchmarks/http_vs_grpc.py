#!/usr/bin/env python3
"""The HTTP frontend against the gRPC one, with Triton's perf_analyzer, on one
coalesce-server, side by side in one run (issue 29): for each model and
concurrency, perf_analyzer over HTTP (its default: binary tensor data) and
over gRPC, the two alternating per round. Reports each protocol's median
throughput over the rounds, its p50 and p99 latency in that round, and the
HTTP/gRPC throughput ratio, and the server's CPU time per inference for
each (its threads' user + system time over the inferences it counted).
With --pin the server runs on CPU 0 and perf_analyzer on CPU 1: on a
2-core machine the two otherwise take cycles from each other, and the
ratio is the whole system's.

Models: `identity` (FP32 [16] -> the same, the transport alone) and
`mlp_classifier` (examples/models: 1024 -> 1000 probabilities).

With --transports it compares HTTP libraries instead: coalesce-server's HTTP
port (Boost.Beast) against the same REST frontend behind cpp-httplib
(build/benchmarks/http-transport-ab) with 8 and with 64 pool threads, all
over perf_analyzer's HTTP, alternating per round.

Concurrency 64 is not in the default levels: there, perf_analyzer's HTTP
client (the PyPI build for glibc 2.38, run here through
tests/e2e/perf_analyzer's compatibility shim) deadlocks now and then in
glibc's malloc, its 64 request threads stuck on the main arena's lock while
the server sits idle with nothing in flight (both stacks, gdb, 2026-11-27).
A run that does not finish in 180 s dumps both processes' stacks here.

Usage: python3 benchmarks/http_vs_grpc.py [--build-dir build]
           [--concurrency 1,4,16] [--rounds 3] [--interval-ms 2000]
           [--models identity,mlp_classifier] [--pin] [--only-model] [--transports]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "examples"))

import generate_models as gm  # noqa: E402
from conftest import ServerProcess  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

IDENTITY_CONFIG = """name: "identity"
max_batch_size: 64
input [ { name: "x", data_type: TYPE_FP32, dims: [ 16 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ 16 ] } ]
dynamic_batching { }
"""


def identity_model():
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])])
    return gm.make_model(graph)


def perf_analyzer() -> Path:
    for candidate in (os.environ.get("PERF_ANALYZER"),
                      ROOT / "build" / "perf_analyzer" / "perf_analyzer"):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    sys.exit("perf_analyzer not found: run bash tests/e2e/perf_analyzer/setup.sh")


# The server's pid, for a stack dump when perf_analyzer hangs.
SERVER_PID: list = []


def dump_server_stacks() -> str:
    """Every server thread's stack (gdb), written next to the current dir."""
    if not SERVER_PID:
        return "(no server pid)"
    out = Path("http_vs_grpc_server_stacks.txt").resolve()
    with open(out, "w") as f:
        subprocess.run(["gdb", "-p", str(SERVER_PID[0]), "-batch", "-ex", "thread apply all bt 16"],
                       stdout=f, stderr=subprocess.STDOUT, timeout=120)
    return str(out)


def server_cpu_seconds(pid: int) -> float:
    """User + system CPU time of every thread of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pin_process(pid: int, cpu: int) -> None:
    """Every thread of `pid` (and so the threads they start) on `cpu`."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(tid), {cpu})


def inference_count(srv, model: str) -> int:
    stats = srv.client().get_inference_statistics(model, as_json=True)
    return int(stats["model_stats"][0].get("inference_count", 0))


def measure(pa: Path, url: str, protocol: str, model: str, concurrency: int,
            interval_ms: int, srv=None, client_cpu: int | None = None) -> dict:
    """One perf_analyzer run; with `srv`, also the server's CPU time per
    inference over the run (its threads' CPU time over the inferences its
    statistics counted, warm-up windows included)."""
    before = (server_cpu_seconds(srv.proc.pid), inference_count(srv, model)) if srv else None
    cmd = [str(pa), "-m", model, "-u", url, "-i", protocol,
           "--concurrency-range", str(concurrency),
           "--measurement-interval", str(interval_ms),
           # perf_analyzer's own stability rule (p99 and throughput within a
           # percentage over 3 windows) fails often on a shared 2-core machine
           # at low concurrency; the rounds, alternated and reduced to their
           # median, stand in for it.
           "--max-trials", "3", "--stability-percentage", "1000"]
    pin = (lambda: os.sched_setaffinity(0, {client_cpu})) if client_cpu is not None else None
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=pin)
    try:
        out, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        stacks = dump_server_stacks()
        with open(Path("http_vs_grpc_client_stacks.txt").resolve(), "w") as f:
            subprocess.run(["gdb", "-p", str(proc.pid), "-batch", "-ex", "thread apply all bt 16"],
                           stdout=f, stderr=subprocess.STDOUT, timeout=120)
        proc.kill()
        sys.exit(f"perf_analyzer did not finish in 180 s against {url} ({protocol}): "
                 f"{' '.join(cmd)}\n"
                 f"server stacks: {stacks}, perf_analyzer's in http_vs_grpc_client_stacks.txt")
    thr = re.search(r"Throughput: ([\d.]+) infer/sec", out)
    p50 = re.search(r"p50 latency: (\d+) usec", out)
    p99 = re.search(r"p99 latency: (\d+) usec", out)
    if proc.returncode != 0 or not thr:
        sys.exit(f"perf_analyzer failed: {' '.join(cmd)}\n{out}\n{err}")
    result = {"throughput": float(thr.group(1)),
              "p50_ms": int(p50.group(1)) / 1000 if p50 else float("nan"),
              "p99_ms": int(p99.group(1)) / 1000 if p99 else float("nan"),
              "cpu_us": float("nan")}
    if before:
        cpu = server_cpu_seconds(srv.proc.pid) - before[0]
        count = inference_count(srv, model) - before[1]
        result["cpu_us"] = 1e6 * cpu / count if count else float("nan")
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_httplib(binary: Path, repo: Path, threads: int, log: Path):
    """http-transport-ab on a free port, once it answers /v2/health/ready."""
    import http.client
    import time
    port = free_port()
    proc = subprocess.Popen([str(binary), "--model-repository", str(repo), "--port", str(port),
                             "--threads", str(threads)], stdout=open(log, "w"),
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/v2/health/ready")
            if conn.getresponse().status == 200:
                return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit(f"http-transport-ab did not start; log: {log.read_text()}")


def median_run(results: list) -> dict:
    median = statistics.median(r["throughput"] for r in results)
    # The latencies of the round whose throughput is the median.
    best = dict(min(results, key=lambda r: abs(r["throughput"] - median)))
    best["median"] = median
    return best


def transports(args, pa: Path, srv, repo: Path, tmp: Path, levels, models) -> None:
    binary = Path(args.build_dir) / "benchmarks" / "http-transport-ab"
    targets = {"Beast (coalesce-server)": srv.http_url}
    procs = []
    for threads in (8, 64):
        proc, url = start_httplib(binary, repo, threads, tmp / f"httplib{threads}.log")
        procs.append(proc)
        targets[f"cpp-httplib, {threads} threads"] = url
    for name, url in targets.items():
        print(f"# {name}: {url}", file=sys.stderr)
    try:
        names = list(targets)
        print("| model | concurrency | " + " | ".join(f"{n} infer/s (p99 ms)" for n in names)
              + " | " + " | ".join(f"{n} / Beast" for n in names[1:]) + " |")
        print("|---|---:|" + "---:|" * (2 * len(names) - 1))
        for model in models:
            for c in levels:
                runs = {n: [] for n in names}
                for _ in range(args.rounds):
                    for n, url in targets.items():
                        runs[n].append(measure(pa, url, "http", model, c, args.interval_ms))
                best = {n: median_run(r) for n, r in runs.items()}
                base = best[names[0]]["median"]
                cells = [f"{best[n]['median']:.0f} ({best[n]['p99_ms']:.2f})" for n in names]
                ratios = [f"{best[n]['median'] / base:.2f}" for n in names[1:]]
                print(f"| {model} | {c} | " + " | ".join(cells) + " | " + " | ".join(ratios)
                      + " |", flush=True)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--interval-ms", type=int, default=2000)
    ap.add_argument("--models", default="identity,mlp_classifier")
    ap.add_argument("--pin", action="store_true",
                    help="the server on CPU 0 and perf_analyzer on CPU 1, so neither takes the other's core")
    ap.add_argument("--only-model", action="store_true",
                    help="load only the models measured (the default loads identity and mlp_classifier)")
    ap.add_argument("--transports", action="store_true",
                    help="compare HTTP libraries (Beast, cpp-httplib) instead of HTTP and gRPC")
    args = ap.parse_args()
    os.environ.setdefault("COALESCE_SERVER", str(Path(args.build_dir) / "server" / "coalesce-server"))
    pa = perf_analyzer()
    levels = [int(c) for c in args.concurrency.split(",")]
    models = args.models.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        if "identity" in models or not args.only_model:
            gm.write_model(repo, "identity", identity_model(), IDENTITY_CONFIG)
        if "mlp_classifier" in models or not args.only_model:
            gm.generate(repo, only=["mlp_classifier"])
        srv = ServerProcess(repo, Path(tmp) / "server.log", ["--allow-metrics", "false"]).start()
        SERVER_PID.append(srv.proc.pid)
        client_cpu = None
        if args.pin:
            pin_process(srv.proc.pid, 0)
            client_cpu = 1
        if args.transports:
            try:
                transports(args, pa, srv, repo, Path(tmp), levels, models)
            finally:
                srv.stop()
            return 0
        try:
            print("| model | concurrency | gRPC infer/s | HTTP infer/s | HTTP/gRPC | "
                  "gRPC p50 / p99 ms | HTTP p50 / p99 ms | server CPU us/infer gRPC / HTTP |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            for model in models:
                for c in levels:
                    runs = {"grpc": [], "http": []}
                    for _ in range(args.rounds):
                        runs["grpc"].append(measure(pa, srv.url, "grpc", model, c, args.interval_ms,
                                                    srv, client_cpu))
                        runs["http"].append(measure(pa, srv.http_url, "http", model, c,
                                                    args.interval_ms, srv, client_cpu))
                    g, h = median_run(runs["grpc"]), median_run(runs["http"])
                    print(f"| {model} | {c} | {g['median']:.0f} | {h['median']:.0f} | "
                          f"{h['median'] / g['median']:.2f} | {g['p50_ms']:.2f} / {g['p99_ms']:.2f} | "
                          f"{h['p50_ms']:.2f} / {h['p99_ms']:.2f} | "
                          f"{statistics.median(r['cpu_us'] for r in runs['grpc']):.0f} / "
                          f"{statistics.median(r['cpu_us'] for r in runs['http']):.0f} |", flush=True)
        finally:
            srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
