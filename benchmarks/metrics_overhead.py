#!/usr/bin/env python3
"""What the metrics endpoint costs: the overhead-floor model (tests/e2e's tiny
x*2+1 model, width 4, dynamic batching) served with metrics on (and scraped
every second, as Prometheus would) and with --allow-metrics false, side by
side on one machine: coalesce-bench closed loop at --concurrency, the two
servers alternating for --rounds rounds (which side goes first alternates
too, so drift in the machine's speed does not favour one side). Reports each
side's median requests/s, and the median of the rounds' on/off ratios
(cost = 1 - that).

Usage: python3 benchmarks/metrics_overhead.py [--build-dir build]
           [--concurrency 16] [--rounds 3] [--window-ms 2000]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "examples"))

import generate_models as gm  # noqa: E402
from conftest import tiny_config  # noqa: E402


def start(server: Path, repo: Path, log: Path, metrics: bool) -> tuple[subprocess.Popen, int, str | None]:
    args = [str(server), "--model-repository", str(repo), "--grpc-address", "127.0.0.1",
            "--grpc-port", "0", "--http-address", "127.0.0.1", "--http-port", "0",
            "--metrics-address", "127.0.0.1", "--metrics-port", "0"]
    if not metrics:
        args += ["--allow-metrics", "false"]
    out = open(log, "w")
    proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    for _ in range(300):
        text = log.read_text()
        if " ready" in text:
            port = int(re.search(r"listening on \S+:(\d+)", text).group(1))
            m = re.search(r"metrics on (http://\S+/metrics)", text)
            return proc, port, m.group(1) if m else None
        time.sleep(0.1)
    raise RuntimeError(f"server did not start: {log.read_text()[-2000:]}")


def bench(bench_bin: Path, port: int, args, prefix: Path) -> float:
    subprocess.run([str(bench_bin), "-m", "m", "-u", f"127.0.0.1:{port}",
                    "--concurrency-range", str(args.concurrency), "--window-ms", str(args.window_ms),
                    "--max-windows", "5", "--output", str(prefix)],
                   check=True, capture_output=True, timeout=600)
    return json.loads(prefix.with_suffix(".json").read_text())["levels"][0]["summary"]["throughput_infer_per_s"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window-ms", type=int, default=2000)
    args = ap.parse_args()
    build = Path(args.build_dir)
    server = build / "server" / "coalesce-server"
    bench_bin = build / "benchmarks" / "coalesce_bench" / "coalesce-bench"
    results = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = work / "repo"
        gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m", dynamic_batching=""))
        for r in range(args.rounds):
            for side in (("on", "off") if r % 2 == 0 else ("off", "on")):
                proc, port, url = start(server, repo, work / f"{side}{r}.log", side == "on")
                stop = threading.Event()

                def scrape():
                    while url and not stop.wait(1.0):
                        urllib.request.urlopen(url, timeout=5).read()
                scraper = threading.Thread(target=scrape, daemon=True)
                scraper.start()
                try:
                    results[side].append(bench(bench_bin, port, args, work / f"{side}{r}"))
                finally:
                    stop.set()
                    scraper.join()
                    proc.terminate()
                    proc.wait(timeout=60)
    on, off = statistics.median(results["on"]), statistics.median(results["off"])
    paired = statistics.median(a / b for a, b in zip(results["on"], results["off"]))
    print(f"concurrency {args.concurrency}, {args.rounds} rounds alternating")
    print(f"metrics on (scraped every 1 s): {on:.0f} requests/s  (rounds: "
          + ", ".join(f"{v:.0f}" for v in results["on"]) + ")")
    print(f"metrics off:                    {off:.0f} requests/s  (rounds: "
          + ", ".join(f"{v:.0f}" for v in results["off"]) + ")")
    print(f"on/off of the medians: {on / off:.3f}; median of the rounds' on/off: "
          f"{paired:.3f} (cost {100 * (1 - paired):.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
