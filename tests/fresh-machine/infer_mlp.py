#!/usr/bin/env python3
"""One tritonclient infer on the example MLP, checked against onnxruntime.

scripts/check-fresh-machine polls this inside the fresh Debian root while the
README's first command starts the server. Exit codes tell it what to do:
  0  the server answered and the output matches onnxruntime
  3  not yet: tritonclient not installed yet, or no server listening yet
  4  the server is live but mlp_classifier is not ready (still loading)
  1  a real failure: the infer failed or gave a wrong answer

Usage: python3 tests/fresh-machine/infer_mlp.py [HOST:PORT [MODEL_REPOSITORY]]
(the repository the server serves, for the reference run; default
examples/models of this checkout)
"""
import sys
from pathlib import Path

MODEL = "mlp_classifier"
DEFAULT_REPOSITORY = Path(__file__).resolve().parents[2] / "examples/models"

try:
    import numpy as np
    import onnxruntime as ort
    import tritonclient.grpc as grpcclient
except ImportError as e:
    print(f"not yet: {e}")
    sys.exit(3)


def main(url: str, repository: Path) -> int:
    client = grpcclient.InferenceServerClient(url)
    try:
        if not client.is_server_live():
            return 3
    except Exception as e:  # connection refused while the server is not up
        print(f"not yet: {e}")
        return 3
    if not client.is_model_ready(MODEL):
        print(f"{MODEL} is not ready")
        return 4

    x = np.random.default_rng(9).random((4, 1024), dtype=np.float32)
    inp = grpcclient.InferInput("input", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    got = client.infer(MODEL, [inp]).as_numpy("probabilities")

    model_file = repository / MODEL / "1" / "model.onnx"
    want = ort.InferenceSession(str(model_file), providers=["CPUExecutionProvider"]).run(
        ["probabilities"], {"input": x})[0]
    if got is None or got.shape != want.shape:
        print(f"wrong output shape: {None if got is None else got.shape}, want {want.shape}")
        return 1
    diff = float(np.max(np.abs(got - want)))
    if not diff <= 1e-4:
        print(f"output differs from onnxruntime: max |diff| {diff:g}")
        return 1
    print(f"infer {MODEL} {list(x.shape)} -> probabilities {list(got.shape)}, "
          f"max |diff| vs onnxruntime {diff:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:8001",
                  Path(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_REPOSITORY))
