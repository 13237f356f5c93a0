#!/usr/bin/env python3
"""Latency-target batching against a sweep of static batching configs.

Issue 30's benchmark (docs/batching.md, "Latency target"). One
coalesce-server serves copies of one model, each with its own batching
config:
  target      latency_target_p99_ms: T (the policy chooses wait and batch)
  d<us>       max_queue_delay_microseconds: us, for each --delays-us
  d<us>p      the same with preferred_batch_size (--preferred)
which is the search Triton's Model Analyzer would run offline. For each,
coalesce-bench drives open-loop load (latency from the scheduled send
time):
  fixed       Poisson at each --rates fraction of the capacity (the capacity
              is measured first: closed loop at --capacity-concurrency on the
              d0 copy), and bursty (on 100 ms / off 100 ms) at --bursty-rates;
  step        half a --cycle-ms at 10 % of the peak rate, half at the peak
              (each --peak-fractions of the capacity);
  ramp        from 10 % of the peak to the peak and back over each cycle.
A run meets the target when its p99 (over successful requests) is within T
and at most 1 % of its requests failed: a request shed by the policy
(DEADLINE_EXCEEDED) counts as a miss, so shedding cannot buy a p99.

For each fixed rate: which configs meet T, the best static throughput among
them, and the target config's throughput as a ratio of it (issue 30: at
least 0.95 wherever some static config meets T). For step and ramp: whether
any single static config meets T with the target config's throughput.

Writes OUT/latency_target.md (tables) and OUT/latency_target.json (every
run); coalesce-bench's own files go to OUT/latency_target/. Not a test.

Usage: python3 benchmarks/latency_target.py [--model mlp|light_resnet50]
           [--target-ms 20] [--out-dir benchmarks/results/tmp] [--build-dir build]
           [--quick]
REQUIRES: scripts/bootstrap has run (server and coalesce-bench built, the
example models generated); light_resnet50 needs run-suite's model
(benchmarks/run_suite/models.py).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from run_suite import models, servers  # noqa: E402

MAX_FAILED = 0.01  # a run with more failed requests misses the target


def config_text(name: str, source_config: str, batching: str, parameters: str = "") -> str:
    """The source model's config with another name and dynamic_batching."""
    lines, depth, skipping = [], 0, False
    for line in source_config.splitlines():
        if line.startswith("name:"):
            line = f'name: "{name}"'
        if not skipping and line.lstrip().startswith("dynamic_batching"):
            skipping, depth = True, 0
        if skipping:
            code = line.split("#")[0]
            depth += code.count("{") - code.count("}")
            if depth <= 0 and "}" in code:
                skipping = False
            continue
        lines.append(line)
    return "\n".join(lines) + f"\ndynamic_batching {{ {batching} }}\n{parameters}"


def variants(args) -> dict[str, tuple[str, str]]:
    """name suffix -> (dynamic_batching body, extra config text)."""
    out = {"target": ("", f'parameters {{ key: "latency_target_p99_ms" value {{ string_value: "{args.target_ms}" }} }}\n')}
    for us in args.delays_us:
        out[f"d{us}"] = (f"max_queue_delay_microseconds: {us}", "")
        if args.preferred and us > 0:
            sizes = ", ".join(str(s) for s in args.preferred)
            out[f"d{us}p"] = (f"max_queue_delay_microseconds: {us} preferred_batch_size: [ {sizes} ]", "")
    return out


def link_or_copy(src: str, dst: str) -> None:
    """A hard link (ResNet-50 is 100 MB a copy), else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def make_repo(args, repo: Path) -> tuple[str, list[str]]:
    """Copies of the model, one per variant; returns (base name, copies)."""
    if args.model == "mlp":
        models.copy_mlp(ROOT, repo)
        base = "mlp_classifier"
    else:
        models.make_resnet(ROOT, repo, Path(args.light_dir))
        base = "light_resnet50"
    source = (repo / base / "config.pbtxt").read_text()
    names = []
    for suffix, (batching, extra) in variants(args).items():
        name = f"{base}_{suffix}"
        dst = repo / name
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(repo / base / "1", dst / "1", copy_function=link_or_copy)
        (dst / "config.pbtxt").write_text(config_text(name, source, batching, extra))
        names.append(name)
    return base, names


def bench(args, url: str, model: str, tag: str, flags: list[str]) -> dict:
    prefix = args.out_dir / "latency_target" / f"{model}_{tag}"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(args.build_dir / "benchmarks" / "coalesce_bench" / "coalesce-bench"), "-m", model, "-u", url, "--timeout", "10000",
           "--stability-percent", "100", "--output", str(prefix)] + flags
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    level = json.loads(Path(f"{prefix}.json").read_text())["levels"][0]["summary"]
    total = level["successes"] + level["error_count"]
    return dict(model=model, tag=tag, command=shown(cmd),
                throughput=level["throughput_infer_per_s"],
                p50=level["latency_ms"]["p50"], p99=level["latency_ms"]["p99"],
                failed=level["error_count"] / max(1, total),
                batch=level["server"]["avg_batch_size"] if level.get("server") else None)


def shown(cmd: list[str]) -> str:
    return " ".join(c.replace(str(ROOT) + "/", "") for c in cmd)


def meets(run: dict, target_ms: float) -> bool:
    return run["p99"] <= target_ms and run["failed"] <= MAX_FAILED


def fixed_table(runs: list[dict], target_ms: float, base: str) -> list[str]:
    lines = ["| load | rate/s | target: infer/s, p99 ms, failed | static configs meeting the target | best static: config, infer/s | target / best |",
             "|---|---:|---|---|---|---:|"]
    for key in sorted({(r["arrival"], r["rate"]) for r in runs}, key=lambda k: (k[0], k[1])):
        group = [r for r in runs if (r["arrival"], r["rate"]) == key]
        target = next(r for r in group if r["model"].endswith("_target"))
        static = [r for r in group if not r["model"].endswith("_target") and meets(r, target_ms)]
        best = max(static, key=lambda r: r["throughput"], default=None)
        ratio = f"{target['throughput'] / best['throughput']:.2f}" if best else "n/a"
        mark = "" if meets(target, target_ms) else " **missed**"
        lines.append(
            f"| {key[0]} | {key[1]:.0f} | {target['throughput']:.0f}, {target['p99']:.1f}, "
            f"{100 * target['failed']:.1f}%{mark} | {len(static)} of {len(group) - 1} | "
            + (f"{best['model'].removeprefix(base + '_')}, {best['throughput']:.0f}" if best else "none")
            + f" | {ratio} |")
    return lines


def shape_table(runs: list[dict], target_ms: float, base: str) -> list[str]:
    lines = ["| load | config | infer/s | p50 ms | p99 ms | failed | avg batch | meets target |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in sorted(runs, key=lambda r: (r["arrival"], r["rate"], not r["model"].endswith("_target"), r["model"])):
        lines.append(f"| {r['arrival']} (peak {r['rate']:.0f}/s) | {r['model'].removeprefix(base + '_')} | "
                     f"{r['throughput']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} | {100 * r['failed']:.1f}% | "
                     f"{r['batch'] or 0:.1f} | {'yes' if meets(r, target_ms) else 'no'} |")
    for arrival, peak in sorted({(r["arrival"], r["rate"]) for r in runs}):
        group = [r for r in runs if (r["arrival"], r["rate"]) == (arrival, peak)]
        target = next(r for r in group if r["model"].endswith("_target"))
        rivals = [r for r in group if not r["model"].endswith("_target") and meets(r, target_ms)
                  and r["throughput"] >= 0.95 * target["throughput"]]
        verdict = ("the target config meets the target, and no static config does so at 0.95x its throughput or more"
                   if meets(target, target_ms) and not rivals else
                   "the target config misses the target" if not meets(target, target_ms) else
                   "static configs that match it: " + ", ".join(r["model"].removeprefix(base + "_") for r in rivals))
        lines.append(f"\n{arrival} (peak {peak:.0f}/s): {verdict}.")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["mlp", "light_resnet50"], default="mlp")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build")
    parser.add_argument("--light-dir", default=str(ROOT.parent / "shared" / "onnx-conformance" / "light"))
    parser.add_argument("--target-ms", type=float, default=20)
    parser.add_argument("--delays-us", type=lambda s: [int(x) for x in s.split(",")],
                        default=[0, 1000, 2000, 5000, 10000])
    parser.add_argument("--preferred", type=lambda s: [int(x) for x in s.split(",")] if s else [],
                        default=[8, 16])
    parser.add_argument("--rates", type=lambda s: [float(x) for x in s.split(",")] if s else [],
                        default=[0.1, 0.3, 0.5, 0.7, 0.9, 0.95])
    parser.add_argument("--bursty-rates", type=lambda s: [float(x) for x in s.split(",")] if s else [],
                        default=[0.5, 0.8])
    parser.add_argument("--capacity-concurrency", type=int, default=32)
    parser.add_argument("--peak-fractions", type=lambda s: [float(x) for x in s.split(",")] if s else [],
                        default=[0.7, 0.95], help="step and ramp peaks, fractions of the capacity")
    parser.add_argument("--cycle-ms", type=int, default=4000)
    parser.add_argument("--window-ms", type=int, default=2000)
    parser.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results" / "tmp")
    parser.add_argument("--quick", action="store_true", help="fewer configs and rates, shorter windows")
    args = parser.parse_args()
    if args.quick:
        args.delays_us, args.preferred = [0, 2000, 10000], []
        args.rates, args.bursty_rates, args.window_ms = [0.3, 0.9], [], 1000
        args.peak_fractions = [0.7]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    common = ["--window-ms", str(args.window_ms), "--max-windows", "3", "--warmup-ms", "1000"]
    runs: dict[str, list[dict]] = {"fixed": [], "shape": []}
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        base, names = make_repo(args, repo)
        server = servers.Server("coalesce-server", [
            args.build_dir / "server" / "coalesce-server", "--model-repository", repo, "--grpc-address", "127.0.0.1", "--grpc-port", "0",
            "--http-port", "0", "--metrics-port", "0", "--model-control-mode", "explicit"]
            + sum((["--load-model", n] for n in names), []), Path(tmp) / "server.log").start()
        try:
            url = server.wait_serving(names, 300)
            cap = bench(args, url, f"{base}_d0", "capacity",
                        ["--concurrency-range", str(args.capacity_concurrency)] + common)
            capacity = cap["throughput"]
            print(f"capacity {capacity:.0f} infer/s (closed loop, concurrency "
                  f"{args.capacity_concurrency}, {base}_d0)", file=sys.stderr, flush=True)
            loads = [("poisson", f, []) for f in args.rates]
            loads += [("bursty", f, ["--burst-on-ms", "100", "--burst-off-ms", "100"]) for f in args.bursty_rates]
            for arrival, fraction, extra in loads:
                rate = fraction * capacity
                for name in names:
                    r = bench(args, url, name, f"{arrival}_{fraction}",
                              ["--request-rate-range", f"{rate:.1f}", "--arrival", arrival] + extra + common)
                    runs["fixed"].append(dict(r, arrival=arrival, rate=rate, fraction=fraction))
                    print(f"{arrival} {rate:.0f}/s {name}: {r['throughput']:.0f}/s p99 {r['p99']:.1f} ms "
                          f"failed {100 * r['failed']:.1f}%", file=sys.stderr, flush=True)
            cycle = ["--cycle-ms", str(args.cycle_ms), "--low-fraction", "0.1",
                     "--window-ms", str(args.cycle_ms), "--max-windows", "3", "--warmup-ms", str(args.cycle_ms)]
            for arrival, fraction in itertools.product(("step", "ramp"), args.peak_fractions):
                peak = fraction * capacity
                for name in names:
                    r = bench(args, url, name, f"{arrival}_{fraction}",
                              ["--request-rate-range", f"{peak:.1f}", "--arrival", arrival] + cycle)
                    runs["shape"].append(dict(r, arrival=arrival, rate=peak))
                    print(f"{arrival} {peak:.0f}/s {name}: {r['throughput']:.0f}/s p99 {r['p99']:.1f} ms",
                          file=sys.stderr, flush=True)
        finally:
            server.stop()
    md = [f"Model `{base}` on the CPU, latency target p99 {args.target_ms:g} ms; capacity {capacity:.0f} infer/s "
          f"(closed loop, concurrency {args.capacity_concurrency}, no batching delay). Static configs: "
          f"max_queue_delay {', '.join(str(d) for d in args.delays_us)} us"
          + (f", each (but 0) also with preferred_batch_size {args.preferred}" if args.preferred else "")
          + ". A run meets the target when its p99 is within it and at most 1 % of its requests failed.",
          "", "```", shown([sys.executable.split('/')[-1], "benchmarks/latency_target.py"] + sys.argv[1:]), "```", "",
          "Fixed rates (fractions of the capacity):", ""]
    md += fixed_table(runs["fixed"], args.target_ms, base)
    md += ["", f"Step and ramp, peak {', '.join(f'{f:g}' for f in args.peak_fractions)}x capacity, "
           f"low 10 % of the peak, cycle {args.cycle_ms} ms:", ""]
    md += shape_table(runs["shape"], args.target_ms, base)
    (args.out_dir / "latency_target.md").write_text("\n".join(md) + "\n")
    (args.out_dir / "latency_target.json").write_text(json.dumps(dict(capacity=capacity, target_ms=args.target_ms, **runs), indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
