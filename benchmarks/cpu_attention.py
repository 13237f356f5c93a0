#!/usr/bin/env python3
"""The CPU's fused attention on and off, side by side (engine/cpu_attention.h).

The bert-base encoder of tests/models/make_encoder.py (12 layers, hidden
768, 12 heads) at each --seqs length, its padded keys masked with -10000
(BERT's original code) and with float32's lowest (current transformers,
which the fused kernel skips exactly), runs one batch of --batch rows of
lengths uniform on [8, S] through coalesce-onnx-run: padded with the
attention node by node (``--fused-attention off``), padded fused, and
token-packed fused (``--token-packing on``). Median ms of --repeat timed
runs, --rounds alternating rounds; the outputs of the fused runs are
checked against node by node at every real position.

With --exports (corpus exports of one float input, tests/models/real/),
each runs instead on a batch of --batch random inputs, node by node and
fused (torchvision's ViT: nn.MultiheadAttention, whose Transposes around
the projections the fused plan runs as row views), every output compared.

Prints a Markdown table. Usage: python3 benchmarks/cpu_attention.py
[--seqs 128,384] [--batch 8] [--exports vit_tiny__torchscript,...].
REQUIRES: the build (coalesce-onnx-run).
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
sys.path.insert(0, str(ROOT / "tests" / "models"))
ONNX_RUN = ROOT / "build" / "tools" / "coalesce-onnx-run"

RUNS = {  # name: coalesce-onnx-run flags
    "node by node": ["--fused-attention", "off"],
    "fused": ["--fused-attention", "on"],
    "fused, packed": ["--fused-attention", "on", "--token-packing", "on"],
}


def make_model(work: Path, fill: str) -> Path:
    import make_encoder
    value = float(np.finfo(np.float32).min) if fill == "lowest" else make_encoder.MASK_FILL
    path = work / f"bert-base-{fill}.onnx"
    cfg = make_encoder.preset("bert-base", seed=0, mask_fill=value)
    onnx.save(make_encoder.make_encoder(cfg), str(path))
    return path


def write_batch(work: Path, batch: int, seq: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seq)
    lengths = rng.integers(8, seq + 1, batch)
    tensors = {"input_ids": rng.integers(1, 1000, (batch, seq)).astype(np.int64),
               "attention_mask": (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int64)}
    args = []
    for name, value in tensors.items():
        path = work / f"{name}_{seq}.pb"
        path.write_bytes(numpy_helper.from_array(value, name).SerializeToString())
        args += ["--input", f"{name}={path}"]
    return args, lengths


def run(model: Path, inputs: list[str], out: Path, flags: list[str], args) -> float:
    timing = out / "timing.json"
    cmd = [str(ONNX_RUN), "--model", str(model), *inputs, "--output-dir", str(out),
           "--threads", str(args.threads), "--warmup", "1", "--repeat", str(args.repeat),
           "--timing-json", str(timing), *flags]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"coalesce-onnx-run failed: {proc.stderr[-2000:]}")
    return json.loads(timing.read_text())["median_ms"]


def real_diff(a_dir: Path, b_dir: Path, lengths: np.ndarray) -> float:
    a = numpy_helper.to_array(onnx.load_tensor(str(a_dir / "last_hidden_state.pb")))
    b = numpy_helper.to_array(onnx.load_tensor(str(b_dir / "last_hidden_state.pb")))
    return max(float(np.abs(a[r, :n] - b[r, :n]).max()) for r, n in enumerate(lengths))


def exports_table(names: list[str], args) -> list[str]:
    """Node by node against fused on corpus exports of one float input."""
    rows = ["| export | batch | node by node ms | fused ms | fused speedup | max diff |",
            "|---|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in names:
            model = ROOT / "tests" / "models" / "real" / name / "model.onnx"
            graph_input = onnx.load(str(model), load_external_data=False).graph.input[0]
            dims = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
            x = np.random.default_rng(0).standard_normal([args.batch, *dims[1:]])
            path = work / f"{name}.pb"
            path.write_bytes(numpy_helper.from_array(x.astype(np.float32),
                                                     graph_input.name).SerializeToString())
            inputs = ["--input", f"{graph_input.name}={path}"]
            times = {flag: [] for flag in ("off", "on")}
            for _ in range(args.rounds):
                for flag in times:
                    times[flag].append(run(model, inputs, work / f"{name}_{flag}",
                                           ["--fused-attention", flag], args))
            diff = 0.0
            for out in (work / f"{name}_off").glob("*.pb"):
                a = numpy_helper.to_array(onnx.load_tensor(str(out)))
                b = numpy_helper.to_array(onnx.load_tensor(str(work / f"{name}_on" / out.name)))
                diff = max(diff, float(np.abs(a - b).max()))
            off, on = statistics.median(times["off"]), statistics.median(times["on"])
            rows.append(f"| {name} | {args.batch} | {off:.1f} | {on:.1f} | {off / on:.2f} "
                        f"| {diff:.1e} |")
            print(rows[-1], file=sys.stderr)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seqs", default="128,384")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--exports", default="",
                        help="comma-separated corpus exports to run instead of bert-base")
    args = parser.parse_args()
    if args.exports:
        print("\n".join(exports_table(args.exports.split(","), args)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for fill in ("-10000", "lowest"):
            model = make_model(work, fill)
            for seq in (int(s) for s in args.seqs.split(",")):
                inputs, lengths = write_batch(work, args.batch, seq)
                times = {name: [] for name in RUNS}
                for _ in range(args.rounds):
                    for name, flags in RUNS.items():
                        out = work / f"{fill}_{seq}_{name.replace(' ', '_')}"
                        times[name].append(run(model, inputs, out, flags, args))
                ms = {name: statistics.median(t) for name, t in times.items()}
                base = work / f"{fill}_{seq}_node_by_node"
                diff = max(real_diff(base, work / f"{fill}_{seq}_{n.replace(' ', '_')}", lengths)
                           for n in RUNS if n != "node by node")
                fill_share = lengths.sum() / (args.batch * seq)
                rows.append(
                    f"| {fill} | {seq} | {fill_share:.0%} | {ms['node by node']:.1f} | "
                    f"{ms['fused']:.1f} | {ms['fused, packed']:.1f} | "
                    f"{ms['node by node'] / ms['fused']:.2f} | "
                    f"{ms['node by node'] / ms['fused, packed']:.2f} | {diff:.1e} |")
                print(rows[-1], file=sys.stderr)
    print(f"| mask fill | seq | real tokens | node by node ms | fused ms | fused, packed ms "
          f"| fused speedup | fused + packed speedup | max diff at real positions |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
