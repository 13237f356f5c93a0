#!/usr/bin/env python3
"""Whole networks on the GPU against ONNX Runtime: the consistency check of
the light networks and the encoders, run by gpu-check on a GPU machine.

For each of the nine light networks (``light_*.onnx`` in --light-dir, random
weights from randomize_light, batch 2 with a symbolic batch dim, logits
exposed) and the tiny encoder of make_encoder (batch 2, sequence 16, padded
rows), on fresh random inputs (seed from the clock, printed):
coalesce-onnx-run --device gpu in FP32, TF32 and FP16 against ONNX Runtime
on the CPU (optimizations off) with runners.compare_outputs. Tolerances, as
rtol / atol relative to the output's largest magnitude:

  fp32  1e-3 / 1e-4  (the CPU engine's own, docs/conformance.md)
  tf32  2e-2 / 2e-2  (10-bit mantissas in GEMM and convolution operands)
  fp16  2e-2 / 2e-2  (float16 operands, float32 accumulation)

Prints one line per network and precision and exits 1 when any run failed
or differed, 0 otherwise. Needs numpy, onnx and onnxruntime.

Usage: gpu_networks.py --onnx-run BIN --light-dir DIR [--precisions fp32,tf32,fp16]
                       [--device gpu|simulated]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_encoder  # noqa: E402
import randomize_light  # noqa: E402
import runners  # noqa: E402

TOLERANCE = {"fp32": (runners.RTOL, runners.ATOL_SCALE), "tf32": (2e-2, 2e-2),
             "fp16": (2e-2, 2e-2)}


def cases(light_dir: Path, seed: int):
    """(name, ModelProto, feeds) for each network."""
    for path in sorted(light_dir.glob("light_*.onnx")):
        model = randomize_light.randomize_light(onnx.load(str(path)), seed=0,
                                                make_batchable=True, expose_logits=True)
        yield path.stem, model, randomize_light.random_inputs(model, batch=2, seed=seed)
    cfg = make_encoder.preset("tiny", seed=0)
    yield ("encoder_tiny", make_encoder.make_encoder(cfg),
           make_encoder.encoder_inputs(cfg, batch=2, seq=16, seed=seed, padded=True))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnx-run", type=Path, required=True)
    ap.add_argument("--light-dir", type=Path, required=True)
    ap.add_argument("--precisions", default="fp32,tf32,fp16")
    ap.add_argument("--device", default="gpu", choices=["gpu", "simulated"],
                    help="simulated: the CUDA kernels' math on the host (tests this script)")
    args = ap.parse_args(argv)
    seed = time.time_ns() % (1 << 31)
    print(f"inputs seed {seed}")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, feeds in cases(args.light_dir, seed):
            path = Path(tmp) / f"{name}.onnx"
            onnx.save(model, str(path))
            expected = runners.run_onnxruntime(model, feeds, threads=8)
            for precision in args.precisions.split(","):
                rtol, atol = TOLERANCE[precision]
                try:
                    run = runners.run_coalesce(path, feeds, Path(tmp) / "run",
                                               binary=args.onnx_run, device=args.device,
                                               extra_args=["--gpu-precision", precision])
                    problems = runners.compare_outputs(run.outputs, expected, rtol, atol)
                except runners.CoalesceRunError as e:
                    problems = [str(e).splitlines()[1] if "\n" in str(e) else str(e)]
                failed += bool(problems)
                print(f"{name} {precision}: " + ("; ".join(problems) if problems else
                                                 f"ok (rtol {rtol}, atol {atol} x max)"),
                      flush=True)
    print(f"gpu_networks: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
