#!/usr/bin/env python3
"""Dynamic batching on and off, side by side, for the MLP example.

Starts coalesce-server on 127.0.0.1 with the example repository, then for each
client concurrency runs Triton's perf_analyzer against `mlp_classifier`
(dynamic batching) and `mlp_classifier_nobatch` (none) back to back, so both
see the same machine state. Prints a Markdown table (throughput, p50, p99,
average executed batch size from the server's statistics) and writes the raw
CSV rows to benchmarks/results/mlp_batching.csv.

Usage: python3 benchmarks/mlp_batching.py [--concurrency 1,8,64]
REQUIRES: scripts/bootstrap has run (server built, models generated,
perf_analyzer installed in build/perf_analyzer).
"""

import argparse
import csv
import io
import subprocess
import sys
import tempfile
from pathlib import Path

import tritonclient.grpc as grpcclient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from run_suite import servers  # noqa: E402
SERVER = ROOT / "build" / "server" / "coalesce-server"
PERF = ROOT / "build" / "perf_analyzer" / "perf_analyzer"
MODELS = {"on": "mlp_classifier", "off": "mlp_classifier_nobatch"}


def executed(client, model):
    stats = client.get_inference_statistics(model).model_stats[0]
    return stats.inference_count, stats.execution_count


def run_perf(url, model, concurrency, args):
    with tempfile.NamedTemporaryFile(suffix=".csv") as out:
        cmd = [str(PERF), "-i", "grpc", "-u", url, "-m", model,
               "--concurrency-range", str(concurrency),
               "--measurement-interval", str(args.interval_ms),
               "--stability-percentage", "20", "--max-trials", "6",
               "-f", out.name]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            sys.exit(f"perf_analyzer failed ({' '.join(cmd)}):\n{result.stdout}\n{result.stderr}")
        rows = list(csv.DictReader(io.StringIO(Path(out.name).read_text())))
    return rows[0], " ".join(["perf_analyzer"] + cmd[1:-2])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument("--interval-ms", type=int, default=4000)
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        server = servers.Server("coalesce-server", [
            SERVER, "--model-repository", ROOT / "examples" / "models",
            "--grpc-address", "127.0.0.1", "--grpc-port", "0",
            "--http-address", "127.0.0.1", "--http-port", "0",
            "--metrics-address", "127.0.0.1", "--metrics-port", "0",
            "--model-control-mode", "explicit",
            "--load-model", MODELS["on"], "--load-model", MODELS["off"]],
            Path(tmp) / "server.log").start()
        try:
            url = server.wait_serving(list(MODELS.values()), 120)
            client = grpcclient.InferenceServerClient(url)
            for concurrency in levels:
                for batching in ("on", "off"):
                    model = MODELS[batching]
                    before = executed(client, model)
                    row, command = run_perf(url, model, concurrency, args)
                    after = executed(client, model)
                    batch = (after[0] - before[0]) / max(1, after[1] - before[1])
                    results.append(dict(concurrency=concurrency, batching=batching,
                                        throughput=float(row["Inferences/Second"]),
                                        p50_ms=int(row["p50 latency"]) / 1000,
                                        p99_ms=int(row["p99 latency"]) / 1000,
                                        avg_batch=batch, command=command))
                    print(f"# {command}", file=sys.stderr)
        finally:
            server.stop()
    out = ROOT / "benchmarks" / "results" / "mlp_batching.csv"
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(results[0]))
        writer.writeheader()
        writer.writerows(results)
    print("| concurrency | batching | infer/s | p50 ms | p99 ms | avg executed batch | on/off throughput |")
    print("|---:|:---:|---:|---:|---:|---:|---:|")
    for i in range(0, len(results), 2):
        on, off = results[i], results[i + 1]
        for r in (on, off):
            ratio = f"{on['throughput'] / off['throughput']:.2f}x" if r is on else ""
            print(f"| {r['concurrency']} | {r['batching']} | {r['throughput']:.0f} | "
                  f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['avg_batch']:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
