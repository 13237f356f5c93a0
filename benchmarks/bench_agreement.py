#!/usr/bin/env python3
"""Agreement of coalesce-bench with Triton's perf_analyzer on the same server.

Starts coalesce-server on 127.0.0.1 (any free port) on the example models,
then for each model and concurrency runs perf_analyzer and coalesce-bench
alternately (PA, CB, then CB, PA, ... for --rounds rounds), so both see the
same machine state. Each tool's median over its rounds is compared:
throughput ratio (CB / PA) and p50 ratio (CB / PA). Target: within 10% on
throughput and 15% on p50.

Two models by default:
  mlp_classifier  the CPU-bound example: what users run, but on a small shared
                  machine its numbers also depend on how much CPU the client
                  itself takes from the server, and on everything else running;
  two_io_delay    two_io's ONNX file behind a 20 ms batching delay
                  (max_batch_size 64): latency and throughput are set by the
                  delay, not by CPU, so this isolates the measurement itself
                  (windows, latency start/end, throughput definition).
The server's repository is a temporary directory holding links to
examples/models/* plus two_io_delay.

Writes benchmarks/results/agreement.md (the table, the commands, the machine
load) and benchmarks/results/agreement.csv (every run).

Usage: python3 benchmarks/bench_agreement.py [--models mlp_classifier,two_io_delay]
           [--concurrency 1,4,16] [--rounds 3] [--window-ms 3000]
REQUIRES: the server and coalesce-bench built (build/ by default, or --build
DIR), the example models generated, perf_analyzer installed in
build/perf_analyzer (tests/e2e/perf_analyzer/setup.sh).
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from run_suite import servers  # noqa: E402
RESULTS = ROOT / "benchmarks" / "results"
RUN_TIMEOUT_S = 600
THROUGHPUT_TARGET = 0.10
P50_TARGET = 0.15


DELAY_CONFIG = """name: "two_io_delay"
max_batch_size: 64
input [
  { name: "a" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "b" data_type: TYPE_FP32 dims: [ 16 ] }
]
output [
  { name: "sum" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "product_proj" data_type: TYPE_FP32 dims: [ 4 ] }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: 20000 }
"""


def make_repository(path: Path) -> Path:
    """examples/models/* (linked) plus two_io_delay (two_io's model file)."""
    examples = ROOT / "examples" / "models"
    path.mkdir(parents=True, exist_ok=True)
    for model in examples.iterdir():
        if model.is_dir():
            (path / model.name).symlink_to(model.resolve(), target_is_directory=True)
    delay = path / "two_io_delay"
    (delay / "1").mkdir(parents=True)
    shutil.copy(examples / "two_io" / "1" / "model.onnx", delay / "1" / "model.onnx")
    (delay / "config.pbtxt").write_text(DELAY_CONFIG)
    return path


def run(cmd, attempts=3):
    """Runs cmd; perf_analyzer exits 1 when no 3 windows were stable, which a
    shared machine causes now and then: that is retried (bounded)."""
    for _ in range(attempts):
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - start
        if result.returncode == 0:
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            return cpu / wall
        if "Failed to obtain stable measurement" not in result.stdout + result.stderr:
            break
        print(f"unstable, retrying: {' '.join(map(str, cmd))}", file=sys.stderr)
    stderr = "\n".join(l for l in result.stderr.splitlines() if "weak version" not in l)
    sys.exit(f"failed ({' '.join(map(str, cmd))}):\n{result.stdout}\n{stderr}")


def pa_command(args, url, model, concurrency, out):
    return [str(args.perf_analyzer), "-i", "grpc", "-u", url, "-m", model, "-b", "1",
            "--concurrency-range", str(concurrency),
            "--measurement-interval", str(args.window_ms),
            "--stability-percentage", str(args.stability_percent),
            "--max-trials", str(args.max_windows), "-f", str(out)]


def cb_command(args, url, model, concurrency, prefix):
    return [str(args.bench), "-m", model, "-u", url,
            "--concurrency-range", str(concurrency),
            "--window-ms", str(args.window_ms),
            "--stability-percent", str(args.stability_percent),
            "--max-windows", str(args.max_windows), "--warmup-ms", "500",
            "--output", str(prefix)]


def perf_analyzer(args, url, model, concurrency):
    with tempfile.NamedTemporaryFile(suffix=".csv") as out:
        cores = run(pa_command(args, url, model, concurrency, out.name))
        row = next(csv.DictReader(Path(out.name).read_text().splitlines()))
    return {"throughput": float(row["Inferences/Second"]),
            "p50_ms": float(row["p50 latency"]) / 1000,
            "p99_ms": float(row["p99 latency"]) / 1000,
            "server_infer_us": float(row["Server Compute Infer"]),
            "client_cores": round(cores, 3)}


def coalesce_bench(args, url, model, concurrency):
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "cb"
        cores = run(cb_command(args, url, model, concurrency, prefix))
        row = next(csv.DictReader(Path(f"{prefix}.csv").read_text().splitlines()))
    return {"throughput": float(row["throughput_infer_per_s"]),
            "p50_ms": float(row["p50_ms"]),
            "p99_ms": float(row["p99_ms"]),
            "server_infer_us": float(row["server_compute_infer_us"]),
            "client_cores": round(cores, 3)}


TOOLS = {"perf_analyzer": perf_analyzer, "coalesce-bench": coalesce_bench}
METRICS = ("throughput", "p50_ms", "p99_ms", "server_infer_us", "client_cores")


def measure(args, url):
    rows = []
    for model in args.models:
        for concurrency in args.concurrency:
            for rnd in range(args.rounds):
                # alternate which tool goes first, so neither always follows the other
                order = list(TOOLS) if rnd % 2 == 0 else list(reversed(TOOLS))
                for name in order:
                    result = TOOLS[name](args, url, model, concurrency)
                    rows.append({"model": model, "concurrency": concurrency, "round": rnd,
                                 "tool": name, "load_1min": round(os.getloadavg()[0], 2),
                                 **result})
                    print(f"{model} c={concurrency} round {rnd} {name}: {result}",
                          file=sys.stderr)
    return rows


def read_rows(path: Path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append({"model": r["model"], "concurrency": int(r["concurrency"]),
                         "round": int(r["round"]), "tool": r["tool"],
                         "load_1min": float(r["load_1min"]),
                         **{k: float(r[k]) for k in METRICS}})
    return rows


def summarize(rows, model, concurrency):
    """Per tool: the medians, and the spread (max / min) of its throughput."""
    out = {}
    for tool in TOOLS:
        mine = [r for r in rows if r["model"] == model and r["concurrency"] == concurrency
                and r["tool"] == tool]
        out[tool] = {k: statistics.median(r[k] for r in mine) for k in METRICS}
        tput = [r["throughput"] for r in mine]
        out[tool]["spread"] = max(tput) / min(tput)
    return out


def table(rows, model, concurrencies):
    lines = [
        "| concurrency | PA infer/s | CB infer/s | throughput ratio | PA p50 ms | CB p50 ms "
        "| p50 ratio | PA p99 ms | CB p99 ms | PA server infer us | CB server infer us "
        "| PA spread | CB spread | PA client cores | CB client cores | within target |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    verdicts = []
    for c in concurrencies:
        s = summarize(rows, model, c)
        pa, cb = s["perf_analyzer"], s["coalesce-bench"]
        t_ratio = cb["throughput"] / pa["throughput"]
        p_ratio = cb["p50_ms"] / pa["p50_ms"]
        ok = abs(t_ratio - 1) <= THROUGHPUT_TARGET and abs(p_ratio - 1) <= P50_TARGET
        noisy = min(pa["spread"], cb["spread"]) - 1 > THROUGHPUT_TARGET
        verdicts.append((c, ok, noisy))
        lines.append(
            f"| {c} | {pa['throughput']:.1f} | {cb['throughput']:.1f} | {t_ratio:.3f} | "
            f"{pa['p50_ms']:.2f} | {cb['p50_ms']:.2f} | {p_ratio:.3f} | "
            f"{pa['p99_ms']:.2f} | {cb['p99_ms']:.2f} | "
            f"{pa['server_infer_us']:.0f} | {cb['server_infer_us']:.0f} | {pa['spread']:.2f} | "
            f"{cb['spread']:.2f} | {pa['client_cores']:.2f} | {cb['client_cores']:.2f} | "
            f"{'yes' if ok else 'NO'} |")
    return lines, verdicts


def reading(model, verdicts):
    failed = [c for c, ok, _ in verdicts if not ok]
    if not failed:
        return [f"{model}: every concurrency within target."]
    noisy = [c for c, ok, n in verdicts if not ok and n]
    text = f"{model}: outside the target at concurrency {', '.join(map(str, failed))}."
    if noisy == failed:
        text += (" There, each tool's own run-to-run spread (max/min throughput over its "
                 "rounds) already exceeds the 10% target, so the difference between the "
                 "medians is machine noise, not a difference the runs can resolve.")
    return [text]


def markdown(args, rows):
    models = list(dict.fromkeys(r["model"] for r in rows))
    concurrencies = sorted({r["concurrency"] for r in rows})
    rounds = max(r["round"] for r in rows) + 1
    loads = [r["load_1min"] for r in rows]
    lines = [
        "# coalesce-bench vs perf_analyzer",
        "",
        "coalesce-server on 127.0.0.1, gRPC, closed loop, batch 1. Per model and "
        f"concurrency each tool ran {rounds} times, alternately; the tables compare the "
        "medians. Ratios are coalesce-bench / perf_analyzer; target: throughput within "
        f"{THROUGHPUT_TARGET:.0%}, p50 within {P50_TARGET:.0%}. Spread: max / min "
        "throughput over a tool's rounds. Server infer: the server's own compute_infer per "
        "request over the tool's windows (ModelStatistics), which shows whether both tools "
        "gave the server the same work. Client cores: the tool's CPU time over its "
        "whole run (getrusage of the child) divided by wall time.",
        "",
        "Inputs: each tool's default. perf_analyzer's `random` data are random bytes (FP32 "
        "NaNs, values up to about 3e38, a few denormals); coalesce-bench sends uniform floats "
        "in [-1, 1). The server flushes denormals to zero (`docs/engine.md`, Running), so the "
        "two kinds of data cost it the same; the server infer columns check that.",
        "",
    ]
    notes = []
    for model in models:
        body, verdicts = table(rows, model, concurrencies)
        lines += [f"## {model}", "", *body, ""]
        notes += reading(model, verdicts)
    lines += [
        "## Reading", "", *[f"- {n}" for n in notes], "",
        f"Machine: {os.cpu_count()} cores shared with other work; load average (1 min) "
        f"between {min(loads):.2f} and {max(loads):.2f} during the runs. The clients run "
        "on the same cores as the server. Every run is in `agreement.csv`.",
        "",
        "Commands (PORT chosen by the server; the last model and concurrency shown):",
        "",
        "```",
        " ".join(["python3 benchmarks/bench_agreement.py",
                  *(a for a in sys.argv[1:] if a != "--report-only")])
        .replace(str(ROOT) + "/", ""),
        display(pa_command(args, "URL", models[-1], concurrencies[-1], "OUT.csv")),
        display(cb_command(args, "URL", models[-1], concurrencies[-1], "OUT")),
        "```",
        "",
    ]
    return "\n".join(lines)


def display(cmd):
    """A command as written in the report: repository-relative, port-free."""
    text = " ".join(str(c) for c in cmd).replace("URL", "127.0.0.1:PORT")
    return text.replace(str(ROOT) + "/", "")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp_classifier,two_io_delay",
                        type=lambda s: s.split(","))
    parser.add_argument("--concurrency", default="1,4,16",
                        type=lambda s: [int(c) for c in s.split(",")])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window-ms", type=int, default=3000)
    parser.add_argument("--max-windows", type=int, default=10)
    parser.add_argument("--stability-percent", type=int, default=20,
                        help="both tools' stability tolerance; perf_analyzer fails "
                             "when it is not met, so a shared machine needs room")
    parser.add_argument("--build", type=Path, default=ROOT / "build",
                        help="build directory with server/ and benchmarks/")
    parser.add_argument("--perf-analyzer", type=Path,
                        default=ROOT / "build" / "perf_analyzer" / "perf_analyzer")
    parser.add_argument("--out", type=Path, default=RESULTS / "agreement")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite OUT.md from an existing OUT.csv without measuring")
    args = parser.parse_args()
    args.server = args.build / "server" / "coalesce-server"
    args.bench = args.build / "benchmarks" / "coalesce_bench" / "coalesce-bench"
    for path in (args.server, args.bench, args.perf_analyzer):
        if not os.access(path, os.X_OK):
            sys.exit(f"missing executable {path}")
    return args


def main():
    args = parse_args()
    if args.report_only:
        rows = read_rows(Path(f"{args.out}.csv"))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            repo = make_repository(Path(tmp) / "repo")
            server = servers.Server("coalesce-server", [
                args.server, "--model-repository", repo,
                "--grpc-address", "127.0.0.1", "--grpc-port", "0",
                "--http-address", "127.0.0.1", "--http-port", "0",
                "--metrics-address", "127.0.0.1", "--metrics-port", "0"],
                Path(tmp) / "server.log").start()
            try:
                rows = measure(args, server.wait_serving(args.models, 120))
            finally:
                server.stop()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{args.out}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    text = markdown(args, rows)
    Path(f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
