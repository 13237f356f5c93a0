#!/usr/bin/env python3
"""Writes the seed corpus of onnx_model_fuzzer: small valid ONNX models
(opset 17, batch dim "N") that load, plan and run on the engine, each using a
different family of its operators, so that mutations start from graphs that
reach the kernels.

Seeds (tests/fuzz/corpus/onnx_model_fuzzer/<name>):

- mlp_gemm_relu: Gemm, Relu, Gemm, Softmax (activation fusion);
- cnn_conv_bn_pool: Conv, BatchNormalization, Relu, MaxPool, grouped Conv,
  AveragePool, GlobalAveragePool, Flatten (Conv + BN folding);
- attention: Reshape with 0 and -1, Transpose, MatMul, Div, Softmax;
- encoder_decomposed, encoder_fused_ops: one-layer BERT encoders from
  tests/models/make_encoder.py (shape arithmetic, Gather, Slice, Expand,
  LayerNorm and GELU as exporters emit them, or as LayerNormalization);
- gather_slice_concat_cast: Gather, stepped and negative Slice, Concat, Cast,
  Shape;
- layer_norm: the decomposed LayerNorm chain (fused at load) beside a
  LayerNormalization node;
- strings: STRING inputs through Cast to numbers and back, Less and Where;
- strings_equal: Equal on STRING and Not (opset 19, where Equal takes it);
- fp16: FLOAT16 input, weights and output, a BFLOAT16 output;
- shape_ops: Shape, ConstantOfShape, Expand, Range, Tile, Where, ArgMax,
  ReduceSum, Split, Squeeze, Unsqueeze, Clip, Pow;
- conv_transpose_resize: ConvTranspose, Resize, Pad, SpaceToDepth, LRN,
  DepthToSpace.

Each is checked with onnx.checker (full shape inference) and kept under
20 KB. Run from anywhere:

    python3 tests/fuzz/make_onnx_seeds.py [OUT_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tests" / "models"))
import make_encoder  # noqa: E402

OPSET = 17
IR_VERSION = 8
MAX_SEED_BYTES = 20 * 1024
DEFAULT_OUT = REPO_ROOT / "tests" / "fuzz" / "corpus" / "onnx_model_fuzzer"


class Graph:
    """Nodes, initializers and the signature of one model under construction."""

    def __init__(self, seed: int):
        self.nodes, self.initializers = [], []
        self.inputs, self.outputs = [], []
        self._rng = np.random.default_rng(seed)

    def input(self, name: str, elem_type: int, dims) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, dims))
        return name

    def output(self, name: str, elem_type: int, dims) -> None:
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, dims))

    def op(self, op_type: str, inputs, outputs=None, **attrs) -> str:
        """Adds a node; returns its (first) output."""
        name = f"{op_type}_{len(self.nodes)}"
        outputs = outputs or [f"{name}_out"]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=name, **attrs))
        return outputs[0]

    def const(self, name: str, value, dtype=np.float32) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def random(self, name: str, shape, scale: float = 0.5, dtype=np.float32) -> str:
        return self.const(name, self._rng.uniform(-scale, scale, size=shape), dtype)

    def model(self, name: str, opset: int = OPSET) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, self.inputs, self.outputs, self.initializers)
        return finish(helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", opset)],
                                        producer_name="coalesce-fuzz-seeds"))


def finish(model: onnx.ModelProto) -> onnx.ModelProto:
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def mlp_gemm_relu() -> onnx.ModelProto:
    g = Graph(1)
    x = g.input("x", TensorProto.FLOAT, ["N", 8])
    h = g.op("Gemm", [x, g.random("w1", (16, 8)), g.random("b1", (16,))], transB=1)
    h = g.op("Gemm", [g.op("Relu", [h]), g.random("w2", (16, 4)), g.random("b2", (4,))],
             alpha=0.5, beta=2.0)
    g.op("Softmax", [h], outputs=["y"], axis=-1)
    g.output("y", TensorProto.FLOAT, ["N", 4])
    return g.model("mlp")


def cnn_conv_bn_pool() -> onnx.ModelProto:
    g = Graph(2)
    x = g.input("x", TensorProto.FLOAT, ["N", 3, 8, 8])
    c = g.op("Conv", [x, g.random("w", (4, 3, 3, 3)), g.random("b", (4,))], pads=[1, 1, 1, 1])
    n = g.op("BatchNormalization", [c, g.random("scale", (4,)), g.random("bias", (4,)),
                                    g.random("mean", (4,)), g.const("var", [1.0, 0.5, 2.0, 1.5])])
    p = g.op("MaxPool", [g.op("Relu", [n])], kernel_shape=[2, 2], strides=[2, 2])
    c2 = g.op("Conv", [p, g.random("w2", (4, 2, 3, 3))], group=2, strides=[2, 2],
              auto_pad="SAME_UPPER")
    a = g.op("AveragePool", [c2], kernel_shape=[2, 2], pads=[0, 0, 1, 1], count_include_pad=0)
    g.op("Flatten", [g.op("GlobalAveragePool", [a])], outputs=["y"])
    g.output("y", TensorProto.FLOAT, ["N", 4])
    return g.model("cnn")


def attention() -> onnx.ModelProto:
    """Two-head self-attention of x [N, 4, 8] with itself as Q, K and V."""
    g = Graph(3)
    x = g.input("x", TensorProto.FLOAT, ["N", 4, 8])
    q = g.op("MatMul", [x, g.random("wq", (8, 8))])
    heads = g.op("Transpose", [g.op("Reshape", [q, g.const("split", [0, 0, 2, -1], np.int64)])],
                 perm=[0, 2, 1, 3])
    keys = g.op("Transpose", [heads], perm=[0, 1, 3, 2])
    scores = g.op("Div", [g.op("MatMul", [heads, keys]), g.const("scale", 2.0)])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), heads])
    merged = g.op("Transpose", [context], perm=[0, 2, 1, 3])
    g.op("Reshape", [merged, g.const("merge", [0, 0, 8], np.int64)], outputs=["y"])
    g.output("y", TensorProto.FLOAT, ["N", 4, 8])
    return g.model("attention")


def encoder(**overrides) -> onnx.ModelProto:
    cfg = make_encoder.preset("tiny", layers=1, hidden=8, heads=2, intermediate=16, vocab=16,
                              max_position=8, type_vocab=16, **overrides)
    return finish(make_encoder.make_encoder(cfg))


def gather_slice_concat_cast() -> onnx.ModelProto:
    g = Graph(4)
    ids = g.input("ids", TensorProto.INT64, ["N", 4])
    rows = g.op("Gather", [g.random("table", (10, 6)), ids], axis=0)  # [N, 4, 6]
    i64 = lambda name, v: g.const(name, v, np.int64)  # noqa: E731
    even = g.op("Slice", [rows, i64("s0", [0]), i64("e0", [6]), i64("a0", [2]), i64("st0", [2])])
    tail = g.op("Slice", [rows, i64("s1", [-2]), i64("e1", [100]), i64("a1", [-1])])
    joined = g.op("Concat", [even, tail], axis=2)  # [N, 4, 5]
    as_int = g.op("Cast", [g.op("Mul", [joined, g.const("ten", 10.0)])], to=TensorProto.INT32)
    g.op("Cast", [as_int], outputs=["y"], to=TensorProto.FLOAT)
    g.op("Cast", [g.op("Shape", [joined])], outputs=["shape"], to=TensorProto.INT32)
    g.output("y", TensorProto.FLOAT, ["N", 4, 5])
    g.output("shape", TensorProto.INT32, [3])
    return g.model("gather_slice_concat_cast")


def layer_norm() -> onnx.ModelProto:
    g = Graph(5)
    x = g.input("x", TensorProto.FLOAT, ["N", 5, 8])
    gamma, beta = g.random("gamma", (8,)), g.random("beta", (8,))
    mean = g.op("ReduceMean", [x], axes=[-1], keepdims=1)
    centered = g.op("Sub", [x, mean])
    variance = g.op("ReduceMean", [g.op("Pow", [centered, g.const("two", 2.0)])], axes=[-1])
    std = g.op("Sqrt", [g.op("Add", [variance, g.const("eps", 1e-5)])])
    scaled = g.op("Mul", [g.op("Div", [centered, std]), gamma])
    g.op("Add", [scaled, beta], outputs=["decomposed"])
    g.op("LayerNormalization", [x, gamma, beta], outputs=["op"], axis=-1, epsilon=1e-5)
    for name in ("decomposed", "op"):
        g.output(name, TensorProto.FLOAT, ["N", 5, 8])
    return g.model("layer_norm")


def strings() -> onnx.ModelProto:
    g = Graph(6)
    words = g.input("words", TensorProto.STRING, ["N", 3])
    numbers = g.input("numbers", TensorProto.STRING, ["N", 3])
    parsed = g.op("Cast", [numbers], to=TensorProto.FLOAT)
    small = g.op("Less", [parsed, g.const("limit", 1.0)])
    g.op("Where", [small, words, g.const("big", ["big"], object)], outputs=["labels"])
    shifted = g.op("Add", [parsed, g.const("one", 1.0)])
    g.op("Cast", [shifted], outputs=["text"], to=TensorProto.STRING)
    rounded = g.op("Cast", [g.op("Cast", [words], to=TensorProto.FLOAT)], to=TensorProto.INT64)
    g.op("Cast", [rounded], outputs=["ints"], to=TensorProto.STRING)
    g.output("labels", TensorProto.STRING, ["N", 3])
    g.output("text", TensorProto.STRING, ["N", 3])
    g.output("ints", TensorProto.STRING, ["N", 3])
    return g.model("strings")


def strings_equal() -> onnx.ModelProto:
    """Equal on STRING, which ONNX has from opset 19."""
    g = Graph(10)
    words = g.input("words", TensorProto.STRING, ["N", 3])
    known = g.const("known", ["0.5", "-1.5", "cat"], object)
    is_known = g.op("Equal", [words, known])
    g.op("Cast", [g.op("Not", [is_known])], outputs=["unknown"], to=TensorProto.FLOAT)
    g.output("unknown", TensorProto.FLOAT, ["N", 3])
    return g.model("strings_equal", opset=19)


def fp16() -> onnx.ModelProto:
    g = Graph(7)
    x = g.input("x", TensorProto.FLOAT16, ["N", 4])
    h = g.op("MatMul", [x, g.random("w", (4, 6), dtype=np.float16)])
    h = g.op("Relu", [g.op("Add", [h, g.random("b", (6,), dtype=np.float16)])], outputs=["y"])
    g.op("Cast", [g.op("Sigmoid", [h])], outputs=["y_bf16"], to=TensorProto.BFLOAT16)
    g.output("y", TensorProto.FLOAT16, ["N", 6])
    g.output("y_bf16", TensorProto.BFLOAT16, ["N", 6])
    return g.model("fp16")


def shape_ops() -> onnx.ModelProto:
    g = Graph(8)
    x = g.input("x", TensorProto.FLOAT, ["N", 4])
    i64 = lambda name, v: g.const(name, v, np.int64)  # noqa: E731
    ones = g.op("ConstantOfShape", [g.op("Shape", [x])],
                value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5]))
    wide = g.op("Expand", [g.op("Unsqueeze", [x, i64("ax2", [2])]), i64("to", [1, 4, 3])])
    steps = g.op("Range", [g.const("r0", 0.0), g.const("r1", 3.0), g.const("r2", 1.0)])
    tiled = g.op("Tile", [g.op("Add", [wide, steps]), i64("reps", [1, 1, 2])])  # [N, 4, 6]
    signed = g.op("Where", [g.op("Greater", [x, ones]), x, g.op("Neg", [x])])
    g.op("ArgMax", [tiled], outputs=["argmax"], axis=2, keepdims=0)
    total = g.op("ReduceSum", [tiled, i64("axes", [1])], keepdims=0)  # [N, 6]
    left, right = "left", "right"
    g.op("Split", [total, i64("parts", [2, 4])], outputs=[left, right], axis=1)
    squeezed = g.op("Squeeze", [g.op("Unsqueeze", [left, i64("ax0", [0])]), i64("ax0b", [0])])
    clipped = g.op("Clip", [g.op("Pow", [right, g.const("p", 2.0)]), g.const("lo", 0.0),
                            g.const("hi", 10.0)])
    g.op("Concat", [squeezed, clipped, signed], outputs=["y"], axis=1)
    g.output("argmax", TensorProto.INT64, ["N", 4])
    g.output("y", TensorProto.FLOAT, ["N", 10])
    return g.model("shape_ops")


def conv_transpose_resize() -> onnx.ModelProto:
    g = Graph(9)
    x = g.input("x", TensorProto.FLOAT, ["N", 2, 4, 4])
    up = g.op("ConvTranspose", [x, g.random("w", (2, 4, 3, 3)), g.random("b", (4,))],
              strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])  # [N, 4, 8, 8]
    resized = g.op("Resize", [up, "", g.const("scales", [1.0, 1.0, 0.5, 0.5])],
                   mode="linear")  # [N, 4, 4, 4]
    padded = g.op("Pad", [resized, g.const("pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64)],
                  mode="reflect")  # [N, 4, 6, 6]
    packed = g.op("SpaceToDepth", [padded], blocksize=2)  # [N, 16, 3, 3]
    normed = g.op("LRN", [packed], size=3)
    g.op("DepthToSpace", [normed], outputs=["y"], blocksize=2, mode="CRD")
    g.output("y", TensorProto.FLOAT, ["N", 4, 6, 6])
    return g.model("conv_transpose_resize")


SEEDS = {
    "mlp_gemm_relu": mlp_gemm_relu,
    "cnn_conv_bn_pool": cnn_conv_bn_pool,
    "attention": attention,
    "encoder_decomposed": lambda: encoder(),
    "encoder_fused_ops": lambda: encoder(layer_norm="op", gelu="tanh", token_type_ids=True,
                                         pooler=True),
    "gather_slice_concat_cast": gather_slice_concat_cast,
    "layer_norm": layer_norm,
    "strings": strings,
    "strings_equal": strings_equal,
    "fp16": fp16,
    "shape_ops": shape_ops,
    "conv_transpose_resize": conv_transpose_resize,
}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    for name, build in SEEDS.items():
        data = build().SerializeToString()
        if len(data) > MAX_SEED_BYTES:
            raise SystemExit(f"seed {name} is {len(data)} bytes, more than {MAX_SEED_BYTES}")
        (out / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
