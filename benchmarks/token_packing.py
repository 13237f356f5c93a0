#!/usr/bin/env python3
"""Token packing on and off, side by side, on the CPU (issue 27).

A bert-base encoder (tests/models/make_encoder.py, 12 layers, hidden 768,
sequence 128; or --model, any export with [batch, seq] inputs and an
``attention_mask``) runs batches whose rows have lengths drawn uniformly
from [--min-length, S]:

- engine only: coalesce-onnx-run on one batch per size, ``--token-packing
  off`` and ``on`` in turn (--rounds times, alternating), median ms of the
  timed runs; the packed outputs are checked against the padded ones at
  every real position;
- served: coalesce-server with the model twice, ``token_packing`` "false"
  and "true" (max_batch_size 32, 5 ms queue delay, one CPU instance), and
  coalesce-bench closed loop with ``--padding-mask
  attention_mask=uniform:MIN`` (--request-variants 64), one model after the
  other at each concurrency: items/s, p50 and p99, the batch formed.

Prints a Markdown table: each row padded, packed, and packed / padded.
With --baseline-onnx-run (a copy of an earlier build's binary), the engine
rows also time the packed batch with it, in the same rounds.
Usage: python3 benchmarks/token_packing.py [--batches 8,32] [--concurrency 32]
REQUIRES: the build (coalesce-onnx-run, coalesce-server, coalesce-bench).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "models"))

from run_suite import servers  # noqa: E402

BUILD = ROOT / "build"
ONNX_RUN = BUILD / "tools" / "coalesce-onnx-run"
SERVER = BUILD / "server" / "coalesce-server"
BENCH = BUILD / "benchmarks" / "coalesce_bench" / "coalesce-bench"
SEQ = 128


def make_model(work: Path) -> Path:
    import make_encoder
    path = work / "bert-base.onnx"
    onnx.save(make_encoder.make_encoder(make_encoder.preset("bert-base", seed=0)), str(path))
    return path


def model_inputs(path: Path) -> list[str]:
    graph = onnx.load(str(path), load_external_data=False).graph
    init = {i.name for i in graph.initializer}
    return [i.name for i in graph.input if i.name not in init]


def write_batch(work: Path, names: list[str], batch: int, min_length: int,
                seed: int) -> tuple[list[str], np.ndarray]:
    """Inputs of `batch` rows of lengths uniform on [min_length, SEQ]."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_length, SEQ + 1, batch)
    args = []
    for name in names:
        if name == "attention_mask":
            value = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int64)
        elif name == "input_ids":
            value = rng.integers(1, 1000, (batch, SEQ)).astype(np.int64)
        else:
            value = np.zeros((batch, SEQ), np.int64)
        path = work / f"{name}_{batch}.pb"
        path.write_bytes(numpy_helper.from_array(value, name).SerializeToString())
        args += ["--input", f"{name}={path}"]
    return args, lengths


def run_engine(model: Path, inputs: list[str], out: Path, packing: str, threads: int,
               repeat: int, binary: Path = ONNX_RUN) -> float:
    timing = out / "timing.json"
    cmd = [str(binary), "--model", str(model), *inputs, "--output-dir", str(out),
           "--token-packing", packing, "--threads", str(threads), "--warmup", "1",
           "--repeat", str(repeat), "--timing-json", str(timing)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"coalesce-onnx-run failed: {proc.stderr[-2000:]}")
    if packing == "on" and "token packing: mask" not in proc.stderr:
        sys.exit(f"the model was not packed: {proc.stderr[-2000:]}")
    return json.loads(timing.read_text())["median_ms"]


def max_real_diff(padded: Path, packed: Path, lengths: np.ndarray) -> float:
    worst = 0.0
    for f in padded.glob("*.pb"):
        a = numpy_helper.to_array(onnx.load_tensor(str(f)))
        b = numpy_helper.to_array(onnx.load_tensor(str(packed / f.name)))
        if a.ndim >= 2 and a.shape[:2] == (len(lengths), SEQ):
            for row, length in enumerate(lengths):
                worst = max(worst, float(np.abs(a[row, :length] - b[row, :length]).max()))
        else:
            worst = max(worst, float(np.abs(a - b).max()))
    return worst


def engine_rows(model: Path, work: Path, args) -> list[str]:
    names = model_inputs(model)
    rows = []
    for batch in args.batches:
        inputs, lengths = write_batch(work, names, batch, args.min_length, batch)
        runs = {"off": ("off", ONNX_RUN), "on": ("on", ONNX_RUN)}
        if args.baseline_onnx_run:
            runs["baseline"] = ("on", args.baseline_onnx_run)
        times = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, (packing, binary) in runs.items():
                out = work / f"engine_{batch}_{name}"
                times[name].append(run_engine(model, inputs, out, packing,
                                              args.threads, args.repeat, binary))
        diff = max_real_diff(work / f"engine_{batch}_off", work / f"engine_{batch}_on", lengths)
        off, on = statistics.median(times["off"]), statistics.median(times["on"])
        fill = lengths.sum() / (batch * SEQ)
        baseline = ""
        if "baseline" in times:
            base = statistics.median(times["baseline"])
            baseline = f", baseline binary packed {base:.1f} ms ({base / on:.2f}x)"
        rows.append(f"| engine | batch {batch} | {fill:.0%} | {batch / off * 1000:.1f} | "
                    f"{batch / on * 1000:.1f} | {off / on:.2f} | {off:.1f} / {on:.1f} ms, "
                    f"max diff {diff:.1e}{baseline} |")
        print(rows[-1], file=sys.stderr)
    return rows


CONFIG = """name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [
{inputs}
]
dynamic_batching {{ max_queue_delay_microseconds: 5000 }}
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
parameters {{ key: "token_packing" value: {{ string_value: "{packing}" }} }}
"""


def served_rows(model: Path, work: Path, args) -> list[str]:
    names = model_inputs(model)
    inputs = ",\n".join(f'  {{ name: "{n}" data_type: TYPE_INT64 dims: [ {SEQ} ] }}'
                        for n in names)
    repo = work / "repo"
    for packing in ("false", "true"):
        name = f"bert_packing_{packing}"
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "1" / "model.onnx").symlink_to(model)
        (repo / name / "config.pbtxt").write_text(
            CONFIG.format(name=name, inputs=inputs, packing=packing))
    models = [f"bert_packing_{p}" for p in ("false", "true")]
    server = servers.Server("coalesce-server", [
        SERVER, "--model-repository", repo, "--grpc-address", "127.0.0.1",
        "--grpc-port", "0", "--allow-http", "false", "--allow-metrics", "false"],
        work / "server.log").start()
    rows = []
    try:
        url = server.wait_serving(models, 600)
        if "token packing on padding mask" not in server.log():
            sys.exit(f"the server did not pack the model:\n{server.log()[-3000:]}")
        for concurrency in args.concurrency:
            result = {}
            for name in models:
                prefix = work / f"{name}_c{concurrency}"
                cmd = [str(BENCH), "-m", name, "-u", url, "--concurrency-range",
                       str(concurrency), "--padding-mask",
                       f"attention_mask=uniform:{args.min_length}", "--request-variants",
                       "64", "--warmup-ms", "3000", "--window-ms", str(args.window_ms),
                       "--max-windows", "6", "--stability-percent", "10",
                       "--output", str(prefix)]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
                if proc.returncode != 0:
                    sys.exit(f"coalesce-bench failed: {proc.stderr[-2000:]}")
                level = json.loads(prefix.with_suffix(".json").read_text())["levels"][0]
                result[name] = level["summary"]
            off, on = (result[m] for m in models)
            rows.append(
                f"| served | concurrency {concurrency} | mixed | "
                f"{off['throughput_infer_per_s']:.1f} | {on['throughput_infer_per_s']:.1f} | "
                f"{on['throughput_infer_per_s'] / off['throughput_infer_per_s']:.2f} | "
                f"p50 {off['latency_ms']['p50']:.0f} / {on['latency_ms']['p50']:.0f} ms, "
                f"p99 {off['latency_ms']['p99']:.0f} / {on['latency_ms']['p99']:.0f} ms, "
                f"batch {(off['server'] or {}).get('avg_batch_size', 0):.1f} / "
                f"{(on['server'] or {}).get('avg_batch_size', 0):.1f} |")
            print(rows[-1], file=sys.stderr)
    finally:
        server.stop()
    return rows


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="an export to use instead of bert-base")
    parser.add_argument("--batches", type=int_list, default=[8, 32])
    parser.add_argument("--concurrency", type=int_list, default=[32])
    parser.add_argument("--min-length", type=int, default=8)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--window-ms", type=int, default=8000)
    parser.add_argument("--skip-served", action="store_true")
    parser.add_argument("--baseline-onnx-run", type=Path,
                        help="another coalesce-onnx-run (an earlier build): its packed time "
                             "too, in the same rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = args.model.resolve() if args.model else make_model(work)
        rows = engine_rows(model, work, args)
        if not args.skip_served:
            rows += served_rows(model, work, args)
    print("| | load | fill | padded items/s | packed items/s | packed / padded | notes |")
    print("|---|---|---:|---:|---:|---:|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
