#!/usr/bin/env python3
"""Generates the ONNX files and label files of examples/triton_quickstart/.

That folder is a model repository laid out like Triton's quick-start example
repository: the same eight model names, inputs, outputs and configs
(config.pbtxt files are checked in; this script writes what is generated):

  densenet_onnx         data_0 [3,224,224] (reshaped to [1,3,224,224]) ->
                        fc6_1 [1000] (from [1,1000,1,1]), 1000 labels
  inception_onnx        input [b,299,299,3] -> InceptionV3/Predictions/Softmax
                        [b,1001] (from [b,1,1001]), 1001 labels
  simple                INPUT0, INPUT1 int32 [b,16] -> OUTPUT0 = sum,
                        OUTPUT1 = difference
  simple_int8           the same in int8 (wrapping)
  simple_string         the same on decimal strings (Cast STRING <-> INT32)
  simple_sequence       OUTPUT = INPUT + START (0 in a padding slot: x READY),
                        what Triton's example model answers and its sequence
                        client examples expect (simple_*_sequence_*_client.py)
  simple_dyna_sequence  the same; on END it adds the correlation ID (CORRID)
  simple_identity       a Python-backend model (model.py): refused by name

The two image models are small convolutional networks with random weights
and the real models' inputs and outputs, not DenseNet or Inception: what
matters here is that Triton's configs (reshape, labels, formats) work
unchanged.

Usage: python3 examples/generate_triton_quickstart.py [--out DIR]
(DIR defaults to examples/triton_quickstart; another DIR gets the configs
copied too, so that it is a complete repository.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
SEED = 20261124
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "triton_quickstart"
MODELS = ("densenet_onnx", "inception_onnx", "simple", "simple_int8",
          "simple_string", "simple_sequence", "simple_dyna_sequence")


def _model(graph) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="coalesce-triton-quickstart")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def _weights(rng, name, shape, scale):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def densenet(rng) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Conv", ["data_0", "w1", "b1"], ["c1"], kernel_shape=[7, 7],
                         strides=[4, 4], pads=[3, 3, 3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["pool"]),
        helper.make_node("Conv", ["pool", "w2", "b2"], ["fc6_1"], kernel_shape=[1, 1]),
    ]
    graph = helper.make_graph(
        nodes, "densenet_onnx",
        [helper.make_tensor_value_info("data_0", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("fc6_1", TensorProto.FLOAT, [1, 1000, 1, 1])],
        [_weights(rng, "w1", (16, 3, 7, 7), 0.1), _weights(rng, "b1", (16,), 0.1),
         _weights(rng, "w2", (1000, 16, 1, 1), 0.5), _weights(rng, "b2", (1000,), 0.1)])
    return _model(graph)


def inception(rng) -> onnx.ModelProto:
    out = "InceptionV3/Predictions/Softmax"
    nodes = [
        helper.make_node("Transpose", ["input"], ["nchw"], perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["nchw", "w1", "b1"], ["c1"], kernel_shape=[5, 5],
                         strides=[5, 5]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["pool"]),
        helper.make_node("Flatten", ["pool"], ["flat"]),
        helper.make_node("Gemm", ["flat", "w2", "b2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("Unsqueeze", ["probs", "axis1"], [out]),
    ]
    graph = helper.make_graph(
        nodes, "inception_onnx",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 299, 299, 3])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["batch", 1, 1001])],
        [_weights(rng, "w1", (8, 3, 5, 5), 0.1), _weights(rng, "b1", (8,), 0.1),
         _weights(rng, "w2", (8, 1001), 1.0), _weights(rng, "b2", (1001,), 0.1),
         numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1")])
    return _model(graph)


def add_sub(name: str, elem: int) -> onnx.ModelProto:
    """OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 in `elem`; strings
    are cast to INT32 and back."""
    io = lambda n: helper.make_tensor_value_info(n, elem, ["batch", 16])  # noqa: E731
    nodes, a, b = [], "INPUT0", "INPUT1"
    if elem == TensorProto.STRING:
        nodes += [helper.make_node("Cast", ["INPUT0"], ["a"], to=TensorProto.INT32),
                  helper.make_node("Cast", ["INPUT1"], ["b"], to=TensorProto.INT32)]
        a, b = "a", "b"
    sums = ["sum", "diff"] if elem == TensorProto.STRING else ["OUTPUT0", "OUTPUT1"]
    nodes += [helper.make_node("Add", [a, b], [sums[0]]),
              helper.make_node("Sub", [a, b], [sums[1]])]
    if elem == TensorProto.STRING:
        nodes += [helper.make_node("Cast", ["sum"], ["OUTPUT0"], to=TensorProto.STRING),
                  helper.make_node("Cast", ["diff"], ["OUTPUT1"], to=TensorProto.STRING)]
    graph = helper.make_graph(nodes, name, [io("INPUT0"), io("INPUT1")],
                              [io("OUTPUT0"), io("OUTPUT1")])
    return _model(graph)


def sequence_model(name: str, with_end: bool) -> onnx.ModelProto:
    """OUTPUT = READY * (INPUT + START) (+ END * CORRID with `with_end`), all
    int32 [batch, 1] (CORRID uint64): the answers Triton's sequence client
    examples check, request by request (its example model keeps no state)."""
    i32 = lambda n: helper.make_tensor_value_info(n, TensorProto.INT32, ["batch", 1])  # noqa: E731
    inputs = [i32("INPUT"), i32("START"), i32("READY")]
    nodes = [helper.make_node("Add", ["INPUT", "START"], ["started"])]
    if with_end:
        inputs += [i32("END"),
                   helper.make_tensor_value_info("CORRID", TensorProto.UINT64, ["batch", 1])]
        nodes += [helper.make_node("Cast", ["CORRID"], ["corrid32"], to=TensorProto.INT32),
                  helper.make_node("Mul", ["corrid32", "END"], ["bonus"]),
                  helper.make_node("Add", ["started", "bonus"], ["value"])]
    else:
        nodes.append(helper.make_node("Identity", ["started"], ["value"]))
    nodes.append(helper.make_node("Mul", ["value", "READY"], ["OUTPUT"]))
    graph = helper.make_graph(nodes, name, inputs, [i32("OUTPUT")])
    return _model(graph)


def build(name: str, rng) -> onnx.ModelProto:
    if name == "densenet_onnx":
        return densenet(rng)
    if name == "inception_onnx":
        return inception(rng)
    if name in ("simple", "simple_int8", "simple_string"):
        elem = {"simple": TensorProto.INT32, "simple_int8": TensorProto.INT8,
                "simple_string": TensorProto.STRING}[name]
        return add_sub(name, elem)
    return sequence_model(name, with_end=name == "simple_dyna_sequence")


def write_labels(path: Path, count: int) -> None:
    path.write_text("".join(f"class_{i:04d}\n" for i in range(count)))


def generate(out: Path) -> None:
    rng = np.random.default_rng(SEED)
    for name in MODELS:
        folder = out / name
        if folder.resolve() != (DEFAULT_OUT / name).resolve():
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copy(DEFAULT_OUT / name / "config.pbtxt", folder / "config.pbtxt")
        (folder / "1").mkdir(parents=True, exist_ok=True)
        onnx.save(build(name, rng), folder / "1" / "model.onnx")
    write_labels(out / "densenet_onnx" / "densenet_labels.txt", 1000)
    write_labels(out / "inception_onnx" / "inception_labels.txt", 1001)
    python_model = out / "simple_identity"
    if python_model.resolve() != (DEFAULT_OUT / "simple_identity").resolve():
        shutil.copytree(DEFAULT_OUT / "simple_identity", python_model, dirs_exist_ok=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    generate(args.out)
    print(f"wrote {len(MODELS)} ONNX models to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
