#!/usr/bin/env python3
"""Two (or more) coalesce-server binaries side by side on the request path.

For each round, each binary in turn: start it on the suite's identity models
(benchmarks/run_suite/models.py: one FP32 [16] input, batching on and off),
run coalesce-bench at each concurrency, and record the client's requests/s
and the server's CPU time per answered request (user + system time of the
whole process from /proc/PID/stat, over the successful-request counter of
its metrics endpoint). Rounds alternate the binaries, so the machine's load
drifts over all of them alike; the report gives the median of the rounds.

CPU per request is the steadier number on a shared machine: it does not
depend on how much of the 2 cores the client and the neighbours left.

Usage:
  benchmarks/request_path_ab.py --servers OLD_BINARY,build/server/coalesce-server
      [--models identity,identity_nobatch] [--concurrency 1,21] [--rounds 5]
Not a test: nothing here runs in CI.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from run_suite import models, servers  # noqa: E402

TMP = ROOT / "benchmarks" / "results" / "tmp" / "request_path_ab"
ROW_RE = re.compile(r"^\s*(\d+)\s+([\d.]+)\s")


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def answered(metrics_port: int, model: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    match = re.search(r'nv_inference_request_success\{[^}]*model="%s"[^}]*\} (\S+)' % re.escape(model), text)
    if match is None:
        raise RuntimeError(f"no nv_inference_request_success for {model}")
    return float(match.group(1))


def measure(bench: Path, server: servers.Server, metrics_port: int, model: str, concurrency: int):
    cpu0, n0 = process_cpu_s(server.proc.pid), answered(metrics_port, model)
    out = subprocess.run(
        [str(bench), "-m", model, "-u", server.url, "--concurrency-range", str(concurrency),
         "--warmup-ms", "300", "--window-ms", "2000", "--max-windows", "2",
         "--stability-percent", "50"],
        capture_output=True, text=True, timeout=300, check=True).stdout
    cpu1, n1 = process_cpu_s(server.proc.pid), answered(metrics_port, model)
    rows = [ROW_RE.match(line) for line in out.splitlines()]
    rate = next(float(m.group(2)) for m in rows if m)
    return rate, (cpu1 - cpu0) / (n1 - n0) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", required=True, help="comma-separated coalesce-server binaries")
    parser.add_argument("--models", default="identity,identity_nobatch")
    parser.add_argument("--concurrency", default="1,21")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bench", default=str(ROOT / "build/benchmarks/coalesce_bench/coalesce-bench"))
    args = parser.parse_args()
    binaries = [Path(b).resolve() for b in args.servers.split(",")]
    model_names = args.models.split(",")
    concurrencies = [int(c) for c in args.concurrency.split(",")]

    repo = TMP / "repo"
    repo.mkdir(parents=True, exist_ok=True)
    models.make_identity(repo)
    results: dict = {}
    try:
        for round_index in range(args.rounds):
            for b, binary in enumerate(binaries):
                metrics_port = servers.free_port()
                server = servers.Server(f"server{b}", [
                    binary, "--model-repository", repo, "--grpc-address", "127.0.0.1",
                    "--grpc-port", "0", "--http-address", "127.0.0.1", "--http-port", "0",
                    "--metrics-address", "127.0.0.1",
                    "--metrics-port", metrics_port], TMP / f"server{b}.log").start()
                try:
                    server.wait_serving(model_names, 120)
                    for model in model_names:
                        for c in concurrencies:
                            results.setdefault((model, c, b), []).append(
                                measure(Path(args.bench), server, metrics_port, model, c))
                finally:
                    server.stop()
            print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        servers.stop_all()

    names = [f"{i}: {os.path.relpath(b, ROOT) if b.is_relative_to(ROOT) else b.name}"
             for i, b in enumerate(binaries)]
    print("binaries: " + "; ".join(names))
    print("| model | concurrency | " + " | ".join(f"req/s [{i}]" for i in range(len(binaries)))
          + " | " + " | ".join(f"server CPU us/req [{i}]" for i in range(len(binaries))) + " |")
    print("|---|---:|" + "---:|" * (2 * len(binaries)))
    for model in model_names:
        for c in concurrencies:
            rates = [statistics.median(r for r, _ in results[(model, c, b)]) for b in range(len(binaries))]
            cpus = [statistics.median(u for _, u in results[(model, c, b)]) for b in range(len(binaries))]
            print(f"| {model} | {c} | " + " | ".join(f"{r:.0f}" for r in rates) + " | "
                  + " | ".join(f"{u:.1f}" for u in cpus) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
