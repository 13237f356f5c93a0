#!/usr/bin/env python3
"""Serve one ONNX model with MLServer (KServe v2 gRPC), onnxruntime inside.

Writes an MLServer settings folder (settings.json, model-settings.json) into
--workdir and execs `mlserver start` on it, so the caller's signals reach
MLServer itself. Adaptive batching is on unless --no-batching.

Usage (inside benchmarks/.venv-peers):
  python benchmarks/peers/mlserver_server.py --model-path M.onnx --name NAME \
      --workdir DIR --grpc-port P --http-port P2 --metrics-port P3 \
      [--max-batch-size 64] [--max-batch-time-s 0.001] [--no-batching]

Readiness: poll ModelReady on 127.0.0.1:P (gRPC).
"""

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import onnxruntime as ort

HERE = Path(__file__).resolve().parent
_ONNX_TO_KSERVE = {"tensor(float)": "FP32", "tensor(double)": "FP64", "tensor(int64)": "INT64",
                   "tensor(int32)": "INT32", "tensor(uint8)": "UINT8", "tensor(bool)": "BOOL"}


def signature(args):
    return [{"name": a.name, "datatype": _ONNX_TO_KSERVE[a.type],
             "shape": [d if isinstance(d, int) and d > 0 else -1 for d in a.shape]} for a in args]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--max-batch-size", type=int, default=64)
    parser.add_argument("--max-batch-time-s", type=float, default=0.001)
    parser.add_argument("--no-batching", action="store_true")
    parser.add_argument("--intra-op-threads", type=int, default=2)
    args = parser.parse_args()

    work = Path(args.workdir)
    model_dir = work / args.name
    model_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "mlserver_onnx.py", work / "mlserver_onnx.py")
    session = ort.InferenceSession(args.model_path, providers=["CPUExecutionProvider"])
    (work / "settings.json").write_text(json.dumps({
        "host": "127.0.0.1", "http_port": args.http_port, "grpc_port": args.grpc_port,
        "metrics_port": args.metrics_port, "parallel_workers": 0, "debug": False}))
    model = {
        "name": args.name,
        "implementation": "mlserver_onnx.OnnxRuntimeModel",
        "parameters": {"uri": str(Path(args.model_path).resolve()),
                       "extra": {"intra_op_threads": args.intra_op_threads}},
        "inputs": signature(session.get_inputs()),
        "outputs": signature(session.get_outputs()),
    }
    if not args.no_batching:
        model["max_batch_size"] = args.max_batch_size
        model["max_batch_time"] = args.max_batch_time_s
    (model_dir / "model-settings.json").write_text(json.dumps(model, indent=1))
    mlserver = Path(sys.executable).with_name("mlserver")
    os.chdir(work)
    os.execv(str(mlserver), [str(mlserver), "start", str(work)])


if __name__ == "__main__":
    main()
