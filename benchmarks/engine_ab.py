#!/usr/bin/env python3
"""Two (or more) coalesce-onnx-run binaries side by side on the CPU engine.

Each round runs every model through each binary (--warmup, then --repeat
timed runs, one thread) and records the binary's median latency; rounds
alternate which binary goes first, so the machine's drift and any order
effect fall on all of them alike. The report gives, per model, the median of
the per-round medians and the ratio to the first binary.

Models: the corpus exports in tests/models/real/ (their test_data_set_0
inputs) and examples/models/mlp_classifier (random [16, 1024] input).

Usage:
  benchmarks/engine_ab.py --binaries OLD/coalesce-onnx-run,build/tools/coalesce-onnx-run
      [--models mlp_classifier,resnet_bottleneck_tiny__torchscript,...]
      [--rounds 10] [--repeat 300]
Not a test: nothing here runs in CI.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "models" / "real"
MLP = ROOT / "examples" / "models" / "mlp_classifier" / "1" / "model.onnx"
DEFAULT_MODELS = ("mlp_classifier,resnet_bottleneck_tiny__torchscript,convnext_tiny__dynamo,"
                  "bert_tiny__torchscript,vit_tiny__dynamo")


def model_and_inputs(name: str, work: Path) -> tuple[Path, list[str]]:
    """The model file and its --input flags."""
    if name == "mlp_classifier":
        pb = work / "mlp_input.pb"
        x = np.random.default_rng(1).random((16, 1024), dtype=np.float32)
        pb.write_bytes(numpy_helper.from_array(x, "input").SerializeToString())
        return MLP, ["--input", f"input={pb}"]
    args = []
    for pb in sorted((CORPUS / name / "test_data_set_0").glob("input_*.pb")):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(pb.read_bytes())
        args += ["--input", f"{tensor.name}={pb}"]
    return CORPUS / name / "model.onnx", args


def median_ms(binary: str, model: Path, inputs: list[str], work: Path, repeat: int) -> float:
    timing = work / "timing.json"
    subprocess.run([binary, "--model", str(model), *inputs, "--output-dir", str(work),
                    "--warmup", "20", "--repeat", str(repeat), "--timing-json", str(timing)],
                   check=True, capture_output=True)
    return json.loads(timing.read_text())["median_ms"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binaries", required=True, help="comma-separated coalesce-onnx-run binaries")
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    binaries = args.binaries.split(",")
    models = args.models.split(",")
    work = Path(tempfile.mkdtemp(prefix="engine_ab_"))
    prepared = {m: model_and_inputs(m, work) for m in models}
    times = {(m, b): [] for m in models for b in range(len(binaries))}
    for r in range(args.rounds):
        order = range(len(binaries)) if r % 2 == 0 else reversed(range(len(binaries)))
        for b in order:
            for m in models:
                times[(m, b)].append(median_ms(binaries[b], *prepared[m], work, args.repeat))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print("binaries: " + "; ".join(f"{i}: {b}" for i, b in enumerate(binaries)))
    header = " | ".join(f"ms [{i}]" for i in range(len(binaries)))
    ratios = " | ".join(f"[{i}]/[0]" for i in range(1, len(binaries)))
    print(f"| model | {header} | {ratios} |")
    print("|---|" + "---:|" * (2 * len(binaries) - 1))
    for m in models:
        med = [statistics.median(times[(m, b)]) for b in range(len(binaries))]
        cells = " | ".join(f"{v:.3f}" for v in med)
        rel = " | ".join(f"{v / med[0]:.3f}" for v in med[1:])
        print(f"| {m} | {cells} | {rel} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
