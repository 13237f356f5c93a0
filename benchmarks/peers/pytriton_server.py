#!/usr/bin/env python3
"""Serve one ONNX model through Triton's core with PyTriton.

Triton (the server binary bundled in the `nvidia-pytriton` wheel) owns the
KServe v2 gRPC endpoint and the dynamic batcher; each batch it forms is handed
to a Python callable that runs it with onnxruntime (CPU). Inputs and outputs
are the ONNX graph's, the first dimension is the batch.

Usage (inside benchmarks/.venv-peers):
  python benchmarks/peers/pytriton_server.py --model-path M.onnx --name NAME \
      --grpc-port P --http-port P2 --metrics-port P3 [--max-batch-size 64] \
      [--intra-op-threads 2]

Prints "listening on 127.0.0.1:PORT" once Triton reports the model ready,
then serves until SIGINT/SIGTERM.
"""

import argparse
import os
import signal
import sys
import sysconfig

import numpy as np
import onnxruntime as ort
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig

_ONNX_TO_NUMPY = {
    "tensor(float)": np.float32, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32,
    "tensor(uint8)": np.uint8, "tensor(int8)": np.int8, "tensor(bool)": np.bool_,
}


def use_this_libpython():
    """Triton's Python backend stub links libpython3.X.so dynamically and
    imports the standard library of the interpreter running this script. When
    the loader would find a different patch release first (a pyenv Python on a
    Debian system: /lib has 3.11.2, the stdlib is 3.11.7), the stub fails in
    multiprocessing ('_thread.RLock' object has no attribute
    '_recursion_count'). Putting this interpreter's LIBDIR first makes the
    stub load the matching libpython; the stub inherits our environment."""
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir and os.path.exists(os.path.join(libdir, sysconfig.get_config_var("LDLIBRARY") or "")):
        current = os.environ.get("LD_LIBRARY_PATH", "")
        os.environ["LD_LIBRARY_PATH"] = libdir + (":" + current if current else "")


def make_session(path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def tensors(args, batched):
    """PyTriton Tensor specs of the graph's inputs and outputs (batch dim dropped)."""
    def spec(arg):
        dims = [d if isinstance(d, int) and d > 0 else -1 for d in arg.shape]
        return Tensor(name=arg.name, dtype=_ONNX_TO_NUMPY[arg.type],
                      shape=tuple(dims[1:] if batched else dims))
    return [spec(a) for a in args]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--max-batch-size", type=int, default=64)
    parser.add_argument("--intra-op-threads", type=int, default=2)
    args = parser.parse_args()
    use_this_libpython()

    session = make_session(args.model_path, args.intra_op_threads)
    output_names = [o.name for o in session.get_outputs()]

    @batch
    def infer(**inputs):
        return dict(zip(output_names, session.run(output_names, inputs)))

    batcher = DynamicBatcher(max_queue_delay_microseconds=0)
    config = TritonConfig(grpc_address="127.0.0.1", grpc_port=args.grpc_port,
                          http_address="127.0.0.1", http_port=args.http_port,
                          metrics_address="127.0.0.1", metrics_port=args.metrics_port)
    triton = Triton(config=config)

    def stop(signum, frame):  # serve() returns once the server is stopped
        triton.stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    with triton:
        triton.bind(model_name=args.name, infer_func=infer,
                    inputs=tensors(session.get_inputs(), True),
                    outputs=tensors(session.get_outputs(), True),
                    config=ModelConfig(max_batch_size=args.max_batch_size, batcher=batcher,
                                       batching=True),
                    strict=False)
        print(f"listening on 127.0.0.1:{args.grpc_port}", flush=True)
        triton.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
