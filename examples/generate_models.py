#!/usr/bin/env python3
"""Deterministic generator for Coalesce's example ONNX models.

Writes (opset 17, IR version 8, float32 only, using only the ops Coalesce
supports: Gemm, MatMul, Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Softmax,
Identity, Flatten, Reshape, Concat, Transpose):

  <out>/mlp_classifier/1/model.onnx          input [batch,1024] -> probabilities [batch,1000]
  <out>/mlp_classifier_nobatch/1/model.onnx  the same model (hard link or copy)
  <out>/two_io/1/model.onnx                  a,b [batch,16] -> sum, product_proj

The config.pbtxt files are checked in beside the models under examples/models/.
With ``--out DIR`` (a directory other than examples/models) the checked-in
config.pbtxt of each example is copied next to the generated model, so DIR is a
complete model repository.

Tests import this module to build extra models::

    from generate_models import write_model, make_tiny_model
    write_model(repo, "tiny", make_tiny_model(), config_text)

Usage: python3 examples/generate_models.py [--out DIR] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
SEED = 20240611

EXAMPLES_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = EXAMPLES_DIR / "models"

MLP_IN = 1024
MLP_HIDDEN = 2048
MLP_CLASSES = 1000
TWO_IO_WIDTH = 16
TWO_IO_PROJ = 4

EXAMPLE_NAMES = ("mlp_classifier", "mlp_classifier_nobatch", "two_io")


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _f32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _io(name: str, dims) -> onnx.ValueInfoProto:
    """A float32 value info; dims may hold ints or symbolic names (str)."""
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))


def make_model(graph: onnx.GraphProto, *, producer: str = "coalesce-examples") -> onnx.ModelProto:
    """Wrap a graph into a checked opset-17 / IR-8 model."""
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_operatorsetid("", OPSET)],
        producer_name=producer,
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def save_model(model: onnx.ModelProto, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    onnx.save_model(model, str(tmp))
    os.replace(tmp, path)


def write_model(repo: Path | str, name: str, model: onnx.ModelProto | bytes | None,
                config_text: str | None = None, version: int = 1) -> Path:
    """Write <repo>/<name>/<version>/model.onnx (+ config.pbtxt when given).

    ``model`` may be raw bytes (e.g. garbage for a broken-model test) or None
    (only the config is written). Returns the model directory.
    """
    model_dir = Path(repo) / name
    model_dir.mkdir(parents=True, exist_ok=True)
    if model is not None:
        target = model_dir / str(version) / "model.onnx"
        if isinstance(model, (bytes, bytearray)):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(bytes(model))
        else:
            save_model(model, target)
    if config_text is not None:
        (model_dir / "config.pbtxt").write_text(config_text)
    return model_dir


# --------------------------------------------------------------------------
# example models
# --------------------------------------------------------------------------

def make_mlp_classifier(seed: int = SEED, in_features: int = MLP_IN,
                        hidden: int = MLP_HIDDEN, classes: int = MLP_CLASSES) -> onnx.ModelProto:
    """input [batch, in] -> Gemm+Relu -> Gemm+Relu -> Gemm -> Softmax -> probabilities.

    Weights are stored as [out, in] with transB=1, the layout PyTorch exports.
    He-scaled hidden layers keep activations O(1) for N(0,1) inputs; the last
    layer is scaled so the logits have a standard deviation of about 2, which
    gives a softmax that is neither uniform nor one-hot.
    """
    rng = np.random.default_rng(seed)

    def layer(fan_in: int, fan_out: int, std: float):
        w = rng.standard_normal((fan_out, fan_in), dtype=np.float32) * np.float32(std)
        b = rng.uniform(-0.05, 0.05, size=(fan_out,)).astype(np.float32)
        return _f32(w), _f32(b)

    w1, b1 = layer(in_features, hidden, np.sqrt(2.0 / in_features))
    w2, b2 = layer(hidden, hidden, np.sqrt(2.0 / hidden))
    # He layers + ReLU keep the mean square of the activations at about 1 per
    # unit (N(0,1) input), so std(logit) ~= std_w * sqrt(hidden) = 2.
    w3, b3 = layer(hidden, classes, 2.0 / np.sqrt(hidden))

    inits = [
        numpy_helper.from_array(w1, "fc1.weight"), numpy_helper.from_array(b1, "fc1.bias"),
        numpy_helper.from_array(w2, "fc2.weight"), numpy_helper.from_array(b2, "fc2.bias"),
        numpy_helper.from_array(w3, "fc3.weight"), numpy_helper.from_array(b3, "fc3.bias"),
    ]
    nodes = [
        helper.make_node("Gemm", ["input", "fc1.weight", "fc1.bias"], ["fc1_out"], name="fc1", transB=1),
        helper.make_node("Relu", ["fc1_out"], ["relu1_out"], name="relu1"),
        helper.make_node("Gemm", ["relu1_out", "fc2.weight", "fc2.bias"], ["fc2_out"], name="fc2", transB=1),
        helper.make_node("Relu", ["fc2_out"], ["relu2_out"], name="relu2"),
        helper.make_node("Gemm", ["relu2_out", "fc3.weight", "fc3.bias"], ["logits"], name="fc3", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp_classifier",
        inputs=[_io("input", ["batch", in_features])],
        outputs=[_io("probabilities", ["batch", classes])],
        initializer=inits,
    )
    return make_model(graph)


def make_two_io(seed: int = SEED + 1, width: int = TWO_IO_WIDTH, proj: int = TWO_IO_PROJ) -> onnx.ModelProto:
    """a, b [batch, width] -> sum = a + b, product_proj = MatMul(a * b, W[width, proj]) + bias."""
    rng = np.random.default_rng(seed)
    w = _f32(rng.standard_normal((width, proj), dtype=np.float32) / np.float32(np.sqrt(width)))
    bias = _f32(rng.uniform(-0.5, 0.5, size=(proj,)))
    nodes = [
        helper.make_node("Add", ["a", "b"], ["sum"], name="add"),
        helper.make_node("Mul", ["a", "b"], ["prod"], name="mul"),
        helper.make_node("MatMul", ["prod", "proj.weight"], ["proj_mm"], name="proj_matmul"),
        helper.make_node("Add", ["proj_mm", "proj.bias"], ["product_proj"], name="proj_bias"),
    ]
    graph = helper.make_graph(
        nodes, "two_io",
        inputs=[_io("a", ["batch", width]), _io("b", ["batch", width])],
        outputs=[_io("sum", ["batch", width]), _io("product_proj", ["batch", proj])],
        initializer=[numpy_helper.from_array(w, "proj.weight"), numpy_helper.from_array(bias, "proj.bias")],
    )
    return make_model(graph)


# --------------------------------------------------------------------------
# small models for tests
# --------------------------------------------------------------------------

def make_tiny_model(width: int = 4, scale: float = 2.0, offset: float = 1.0,
                    input_name: str = "x", output_name: str = "y") -> onnx.ModelProto:
    """x [batch, width] -> y = x * scale + offset. Cheap, for batching/queue tests."""
    nodes = [
        helper.make_node("Mul", [input_name, "scale"], ["scaled"], name="mul"),
        helper.make_node("Add", ["scaled", "offset"], [output_name], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        inputs=[_io(input_name, ["batch", width])],
        outputs=[_io(output_name, ["batch", width])],
        initializer=[
            numpy_helper.from_array(np.array([scale], dtype=np.float32), "scale"),
            numpy_helper.from_array(np.array([offset], dtype=np.float32), "offset"),
        ],
    )
    return make_model(graph)


def make_unsupported_op_model(op: str = "Det", width: int = 4) -> onnx.ModelProto:
    """x [batch, width] -> y = op(x), using an op Coalesce does not implement."""
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], name="unsupported")], "unsupported_" + op.lower(),
        inputs=[_io("x", ["batch", width])],
        outputs=[_io("y", ["batch", width])],
    )
    return make_model(graph)


def garbage_bytes(n: int = 4096, seed: int = 7) -> bytes:
    """Bytes that are not a valid ONNX ModelProto."""
    rng = np.random.default_rng(seed)
    return b"\xff\xfeNOT-AN-ONNX-MODEL" + rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()


# --------------------------------------------------------------------------
# generation of the example repository
# --------------------------------------------------------------------------

def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() or dst.is_symlink():
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _copy_config(name: str, out: Path) -> None:
    src = DEFAULT_OUT / name / "config.pbtxt"
    dst = out / name / "config.pbtxt"
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_file() and src.resolve() != dst.resolve():
        shutil.copyfile(src, dst)


def generate(out: Path | str = DEFAULT_OUT, only=None, verbose: bool = False) -> list[Path]:
    """Generate the example models into ``out``; returns the written model files."""
    out = Path(out)
    wanted = set(only) if only else set(EXAMPLE_NAMES)
    unknown = wanted - set(EXAMPLE_NAMES)
    if unknown:
        raise ValueError(f"unknown example model(s): {sorted(unknown)}")
    written = []
    t0 = time.monotonic()

    if wanted & {"mlp_classifier", "mlp_classifier_nobatch"}:
        mlp = make_mlp_classifier()
        first = None
        for name in ("mlp_classifier", "mlp_classifier_nobatch"):
            if name not in wanted:
                continue
            path = out / name / "1" / "model.onnx"
            if first is None:
                save_model(mlp, path)
                first = path
            else:
                _link_or_copy(first, path)
            written.append(path)
    if "two_io" in wanted:
        path = out / "two_io" / "1" / "model.onnx"
        save_model(make_two_io(), path)
        written.append(path)

    for name in wanted:
        _copy_config(name, out)
    if verbose:
        for p in written:
            print(f"wrote {p} ({p.stat().st_size / 1e6:.1f} MB)")
        print(f"done in {time.monotonic() - t0:.2f} s")
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT),
                    help="model repository to write into (default: examples/models)")
    ap.add_argument("--only", nargs="+", choices=EXAMPLE_NAMES, help="generate only these models")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    generate(args.out, args.only, verbose=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
