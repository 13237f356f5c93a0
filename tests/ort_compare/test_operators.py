"""Single operators against ONNX Runtime: the ops today's exporters emit for
transformer masks, rotary embeddings and vision models (docs/engine.md,
"Adding an operator").

Each case is one node whose inputs are graph inputs (so nothing is folded
while planning, and the kernel itself runs). It runs in ONNX Runtime (every
optimization off) and through coalesce-onnx-run on the CPU, and must match:
integers and booleans exactly, floats at runners.py's tolerance. Then the
same model runs as a GPU instance on the simulated device: where the device
registry has no kernel for the op, the load must refuse it naming the node
and op (DEVICE_REFUSES lists those ops; an op that gains a device kernel
must leave the list, or the test fails).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import runners

# Ops with no kernel in the device registry (engine/device/device_ops.cc):
# a model that computes them at run time is refused as a GPU instance.
DEVICE_REFUSES = {
    "Sign", "Round", "Mish", "Celu", "ThresholdedRelu",
    "Trilu",
    "ScatterND", "ReduceProd", "ReduceLogSum", "ReduceLogSumExp", "InstanceNormalization",
    "GroupNormalization", "TopK", "OneHot", "ScatterElements", "Einsum",
}

RNG = np.random.default_rng(0)


def _floats(*shape, scale=3.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _ints(*shape, low=-20, high=20, dtype=np.int64):
    return RNG.integers(low, high, size=shape).astype(dtype)


def _bools(*shape):
    return RNG.integers(0, 2, size=shape).astype(bool)


@dataclasses.dataclass
class Case:
    id: str
    op: str
    inputs: dict  # name -> array, in the node's input order
    output: type  # numpy dtype of the single output
    attrs: dict = dataclasses.field(default_factory=dict)
    opset: int = 17
    # Inputs that are initializers (known while planning, as axes must be),
    # placed after `inputs` in the node's input list.
    constants: dict = dataclasses.field(default_factory=dict)
    outputs: tuple = ("y",)  # the first has dtype `output`; others int64
    same_outputs: bool = False  # every output has dtype `output` (Split)
    # The device's refusal, when it refuses this form of an op it runs.
    device_refusal: str = ""


SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, 0.5, -0.5, 2.5, np.nan, np.inf, -np.inf, 3.7, -3.7],
                   dtype=np.float32)

CASES = [
    Case("ge_float_broadcast", "GreaterOrEqual",
         {"a": np.round(_floats(2, 3, 4)), "b": np.round(_floats(4))}, np.bool_),
    Case("ge_int64", "GreaterOrEqual", {"a": _ints(3, 5), "b": _ints(3, 1)}, np.bool_, opset=16),
    Case("le_float_nan", "LessOrEqual", {"a": SPECIAL, "b": SPECIAL[::-1].copy()}, np.bool_),
    Case("le_int32", "LessOrEqual", {"a": _ints(4, 4, dtype=np.int32), "b": _ints(4, dtype=np.int32)},
         np.bool_),
    Case("and", "And", {"a": _bools(2, 3, 4), "b": _bools(3, 1)}, np.bool_),
    Case("or", "Or", {"a": _bools(2, 3, 4), "b": _bools(4)}, np.bool_),
    Case("xor", "Xor", {"a": _bools(5, 6), "b": _bools(5, 6)}, np.bool_),
    Case("isnan", "IsNaN", {"x": SPECIAL}, np.bool_),
    Case("isinf", "IsInf", {"x": SPECIAL}, np.bool_),
    Case("isinf_positive_only", "IsInf", {"x": SPECIAL}, np.bool_, {"detect_negative": 0}),
    Case("isinf_negative_only", "IsInf", {"x": SPECIAL}, np.bool_, {"detect_positive": 0}),
    Case("mod_int64_floored", "Mod", {"a": _ints(4, 6), "b": _ints(6, low=1, high=7) *
                                       np.where(_bools(6), 1, -1)}, np.int64),
    Case("mod_int32_fmod", "Mod", {"a": _ints(4, 6, dtype=np.int32),
                                   "b": np.array([3, -3, 5, -7, 2, 9], dtype=np.int32)},
         np.int32, {"fmod": 1}),
    Case("mod_float_fmod", "Mod", {"a": _floats(3, 4), "b": np.array([1.5, -2.0, 0.7, 3.0],
                                                                      dtype=np.float32)},
         np.float32, {"fmod": 1}),
    Case("sign_float", "Sign", {"x": SPECIAL}, np.float32),
    Case("sign_int64", "Sign", {"x": _ints(3, 7)}, np.int64),
    Case("floor", "Floor", {"x": SPECIAL}, np.float32),
    Case("ceil", "Ceil", {"x": SPECIAL}, np.float32),
    Case("round_ties_to_even", "Round", {"x": SPECIAL}, np.float32),
    Case("sin", "Sin", {"x": _floats(4, 16)}, np.float32),
    Case("cos", "Cos", {"x": _floats(4, 16)}, np.float32),
    Case("hardswish", "HardSwish", {"x": _floats(3, 20)}, np.float32),
    Case("mish", "Mish", {"x": _floats(3, 20)}, np.float32, opset=18),
    Case("celu", "Celu", {"x": _floats(3, 20)}, np.float32, {"alpha": 0.5}),
    Case("thresholded_relu", "ThresholdedRelu", {"x": _floats(3, 20)}, np.float32,
         {"alpha": 0.3}),
    Case("gather_elements_axis0", "GatherElements",
         {"data": _floats(4, 5), "indices": _ints(3, 5, low=-4, high=4)}, np.float32),
    Case("gather_elements_axis1_int32", "GatherElements",
         {"data": _ints(2, 3, 6), "indices": _ints(2, 2, 4, low=0, high=6, dtype=np.int32)},
         np.int64, {"axis": -1}),
    Case("trilu_upper", "Trilu", {"x": _floats(2, 4, 5)}, np.float32),
    Case("trilu_lower_k", "Trilu", {"x": _ints(3, 6), "k": np.array(-1, dtype=np.int64)},
         np.int64, {"upper": 0}),
    Case("trilu_upper_k_bool", "Trilu", {"x": _bools(5, 5), "k": np.array(2, dtype=np.int64)},
         np.bool_),
    Case("cumsum", "CumSum", {"x": _floats(3, 8)}, np.float32,
         constants={"axis": np.array(1, dtype=np.int64)}),
    Case("cumsum_axis_at_run_time", "CumSum",
         {"x": _floats(3, 8), "axis": np.array(1, dtype=np.int64)}, np.float32,
         device_refusal="a CumSum axis computed at run time"),
    Case("cumsum_exclusive_reverse", "CumSum", {"x": _floats(2, 5, 3)}, np.float32,
         {"exclusive": 1, "reverse": 1}, constants={"axis": np.array(-2, dtype=np.int32)}),
    Case("cumsum_int64_axis0", "CumSum", {"x": _ints(6, 2)}, np.int64,
         constants={"axis": np.array(0, dtype=np.int64)}),
    Case("cumsum_int32", "CumSum", {"x": _ints(2, 7, dtype=np.int32)}, np.int32,
         constants={"axis": np.array(-1, dtype=np.int64)}),
    # Ties (x / scale = k + 0.5) round to even; values beyond the range saturate.
    Case("quantize_uint8_per_tensor", "QuantizeLinear",
         {"x": np.concatenate([_floats(20, scale=40.0), np.array([0.25, 0.75, -0.25, 1e6, -1e6],
                                                                 dtype=np.float32)]),
          "scale": np.array(0.5, dtype=np.float32), "zero": np.array(128, dtype=np.uint8)},
         np.uint8),
    Case("quantize_int8_per_axis", "QuantizeLinear",
         {"x": _floats(2, 3, 4, scale=20.0), "scale": np.array([0.1, 0.2, 0.3], dtype=np.float32),
          "zero": np.array([0, -3, 5], dtype=np.int8)}, np.int8, {"axis": 1}),
    Case("dequantize_uint8", "DequantizeLinear",
         {"x": _ints(4, 5, low=0, high=256, dtype=np.uint8), "scale": np.array(0.02, np.float32),
          "zero": np.array(100, dtype=np.uint8)}, np.float32),
    Case("dequantize_int8_per_axis", "DequantizeLinear",
         {"x": _ints(3, 4, low=-128, high=128, dtype=np.int8),
          "scale": np.array([0.5, 0.25, 0.125, 1.0], dtype=np.float32)}, np.float32, {"axis": -1}),
    Case("max_int64", "Max", {"a": _ints(3, 4), "b": _ints(4)}, np.int64, opset=13),
    Case("min_int32", "Min", {"a": _ints(3, 1, dtype=np.int32), "b": _ints(3, 5, dtype=np.int32)},
         np.int32, opset=13),
    Case("max_int64_three_broadcast", "Max",
         {"a": _ints(3, 1), "b": _ints(1, 4), "c": np.array(2, dtype=np.int64)}, np.int64,
         opset=13),
    Case("min_float_three", "Min",
         {"a": _floats(2, 3), "b": _floats(3), "c": np.array([np.nan], dtype=np.float32)},
         np.float32, opset=13),
    Case("equal_bool", "Equal", {"a": _bools(3, 4), "b": _bools(4)}, np.bool_, opset=13),
    Case("not", "Not", {"x": _bools(2, 5)}, np.bool_),
    Case("where_int64_broadcast", "Where",
         {"c": _bools(3, 1), "x": _ints(1, 4), "z": _ints(3, 4)}, np.int64),
    Case("where_uint8", "Where",
         {"c": _bools(2, 3), "x": _ints(2, 3, low=0, high=255, dtype=np.uint8),
          "z": _ints(3, low=0, high=255, dtype=np.uint8)}, np.uint8),
    Case("div_int64_truncates", "Div",
         {"a": _ints(3, 4), "b": _ints(4, low=1, high=6) * np.array([1, -1, 1, -1])}, np.int64),
    Case("sub_int32", "Sub", {"a": _ints(3, 4, dtype=np.int32), "b": _ints(4, dtype=np.int32)},
         np.int32),
    Case("neg_int64", "Neg", {"x": _ints(2, 5)}, np.int64),
    Case("cast_float_to_int32", "Cast", {"x": _floats(4, 5, scale=50.0)}, np.int32,
         {"to": onnx.TensorProto.INT32}),
    Case("cast_int64_to_bool", "Cast", {"x": _ints(4, 5, low=-2, high=3)}, np.bool_,
         {"to": onnx.TensorProto.BOOL}),
    Case("cast_bool_to_int64", "Cast", {"x": _bools(4, 5)}, np.int64,
         {"to": onnx.TensorProto.INT64}),
    Case("cast_int64_to_int32", "Cast", {"x": _ints(4, 5, low=-10**6, high=10**6)}, np.int32,
         {"to": onnx.TensorProto.INT32}),
    Case("gather_bool_axis1", "Gather",
         {"data": _bools(3, 5, 2), "indices": np.array([[4, -1], [0, 2]], dtype=np.int64)},
         np.bool_, {"axis": 1}),
    Case("argmax_float_keepdims", "ArgMax", {"x": _floats(3, 5, 4)}, np.int64, {"axis": 1}),
    Case("argmax_int32_last", "ArgMax", {"x": _ints(4, 6, low=0, high=3, dtype=np.int32)},
         np.int64, {"axis": -1, "keepdims": 0, "select_last_index": 1}),
    Case("gather_nd_bool", "GatherND",
         {"data": _bools(2, 3, 4), "indices": np.array([[1, 2], [0, -1]], dtype=np.int64)},
         np.bool_),
    Case("split_last_axis", "Split", {"x": _floats(2, 5, 12)}, np.float32, {"axis": -1},
         constants={"split": np.array([4, 3, 5], dtype=np.int64)}, outputs=("y", "y1", "y2"),
         same_outputs=True),
    Case("slice_steps", "Slice", {"x": _floats(4, 6, 5)}, np.float32,
         constants={"starts": np.array([3, 1, -1], dtype=np.int64),
                    "ends": np.array([0, 6, -100], dtype=np.int64),
                    "axes": np.array([0, 1, 2], dtype=np.int64),
                    "steps": np.array([-1, 2, -2], dtype=np.int64)}),
    Case("pad_constant_value", "Pad", {"x": _floats(2, 3, 4)}, np.float32,
         constants={"pads": np.array([0, 1, -1, 1, 2, 0], dtype=np.int64),
                    "value": np.array(1.5, dtype=np.float32)}),
    Case("pad_reflect", "Pad", {"x": _ints(2, 5)}, np.int64, {"mode": "reflect"},
         constants={"pads": np.array([1, 3, 1, 4], dtype=np.int64)}),
    Case("pad_edge_axes", "Pad", {"x": _floats(2, 3, 4)}, np.float32, {"mode": "edge"},
         opset=18, constants={"pads": np.array([2, 1, 0, 3], dtype=np.int64),
                              "value": np.array(0.0, dtype=np.float32),
                              "axes": np.array([-1, 0], dtype=np.int64)}),
    # Resize: X, roi, scales, sizes (roi and scales empty where sizes rule).
    Case("resize_linear_sizes_half_pixel", "Resize", {"x": _floats(1, 3, 5, 4)}, np.float32,
         {"mode": "linear"}, opset=19,
         constants={"roi": np.zeros(0, np.float32), "scales": np.zeros(0, np.float32),
                    "sizes": np.array([1, 3, 11, 9], dtype=np.int64)}),
    Case("resize_nearest_scales", "Resize", {"x": _floats(2, 2, 3, 3)}, np.float32,
         {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
          "nearest_mode": "floor"}, opset=13,
         constants={"roi": np.zeros(0, np.float32),
                    "scales": np.array([1, 1, 2.5, 1.5], dtype=np.float32)}),
    Case("resize_linear_align_corners_down", "Resize", {"x": _floats(1, 2, 8, 5)}, np.float32,
         {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, opset=13,
         constants={"roi": np.zeros(0, np.float32),
                    "scales": np.array([1, 1, 0.5, 0.6], dtype=np.float32)}),
    Case("resize_nearest_pytorch_half_pixel_ceil", "Resize", {"x": _floats(1, 1, 4, 6)},
         np.float32, {"mode": "nearest", "coordinate_transformation_mode": "pytorch_half_pixel",
                      "nearest_mode": "round_prefer_ceil"}, opset=13,
         constants={"roi": np.zeros(0, np.float32), "scales": np.zeros(0, np.float32),
                    "sizes": np.array([1, 1, 7, 3], dtype=np.int64)}),
    Case("resize_cubic", "Resize", {"x": _floats(1, 1, 4, 4)}, np.float32,
         {"mode": "cubic"}, opset=13,
         constants={"roi": np.zeros(0, np.float32),
                    "scales": np.array([1, 1, 2, 2], dtype=np.float32)},
         device_refusal="cubic Resize"),
    # NonZero's output shape depends on its data: its input must be known
    # while planning (here an initializer; -0.0 and 0 are zero, NaN is not).
    Case("nonzero_constant", "NonZero", {}, np.int64,
         constants={"x": np.array([[0.0, -0.0, 1.5], [np.nan, 0.0, -2.0]], dtype=np.float32)}),
    Case("nonzero_constant_int_3d", "NonZero", {}, np.int64,
         constants={"x": _ints(2, 3, 4, low=-1, high=2)}),
    Case("gather_nd", "GatherND",
         {"data": _floats(4, 5, 6), "indices": _ints(3, 2, low=-4, high=4)}, np.float32),
    Case("gather_nd_batch_dims", "GatherND",
         {"data": _ints(2, 5, 3), "indices": _ints(2, 4, 1, low=0, high=5)}, np.int64,
         {"batch_dims": 1}),
    Case("scatter_nd", "ScatterND",
         {"data": _floats(5, 4), "indices": np.array([[4], [0], [2]], dtype=np.int64),
          "updates": _floats(3, 4)}, np.float32),
    Case("scatter_nd_elements", "ScatterND",
         {"data": _ints(3, 4), "indices": np.array([[0, 1], [2, 3], [1, 0]], dtype=np.int64),
          "updates": _ints(3)}, np.int64, opset=18),
    Case("reduce_min_attr", "ReduceMin", {"x": _floats(3, 4, 5)}, np.float32,
         {"axes": [0, 2], "keepdims": 0}, opset=13,
         device_refusal="a reduction over axes that are not the last ones"),
    Case("reduce_min_last", "ReduceMin", {"x": _floats(3, 4, 5)}, np.float32,
         {"axes": [-1]}, opset=13),
    Case("reduce_sum_trailing", "ReduceSum", {"x": _floats(3, 4, 5)}, np.float32,
         constants={"axes": np.array([1, 2], dtype=np.int64)}),
    Case("reduce_prod", "ReduceProd", {"x": _floats(3, 4, scale=1.0)}, np.float32,
         constants={"axes": np.array([1], dtype=np.int64)}, opset=18),
    Case("reduce_l1", "ReduceL1", {"x": _floats(2, 3, 4)}, np.float32,
         constants={"axes": np.array([-1], dtype=np.int64)}, opset=18),
    Case("reduce_l2_swin", "ReduceL2", {"x": _floats(2, 3, 8)}, np.float32,
         constants={"axes": np.array([-1], dtype=np.int64)}, opset=18),
    Case("reduce_l2_attr", "ReduceL2", {"x": _floats(2, 3, 8)}, np.float32,
         {"axes": [-1]}, opset=17),
    Case("reduce_sum_square_all", "ReduceSumSquare", {"x": _floats(3, 5)}, np.float32,
         {"keepdims": 0}, opset=18),
    Case("reduce_log_sum", "ReduceLogSum", {"x": np.abs(_floats(4, 6)) + 0.1}, np.float32,
         constants={"axes": np.array([0], dtype=np.int64)}, opset=18),
    Case("reduce_log_sum_exp", "ReduceLogSumExp", {"x": _floats(4, 6)}, np.float32,
         constants={"axes": np.array([1], dtype=np.int64)}, opset=18),
    Case("instance_norm", "InstanceNormalization",
         {"x": _floats(2, 3, 4, 5), "scale": _floats(3), "bias": _floats(3)}, np.float32,
         {"epsilon": 1e-3}),
    # Opsets 18 to 20 scale per group (as that version of the spec says).
    Case("group_norm_18_per_group", "GroupNormalization",
         {"x": _floats(2, 6, 4, 4), "scale": _floats(3), "bias": _floats(3)}, np.float32,
         {"num_groups": 3}, opset=18),
    Case("group_norm_21", "GroupNormalization",
         {"x": _floats(2, 6, 4, 4), "scale": _floats(6), "bias": _floats(6)}, np.float32,
         {"num_groups": 3}, opset=21),
    Case("topk_largest", "TopK", {"x": _floats(3, 10)}, np.float32, {"axis": 1},
         constants={"k": np.array([4], dtype=np.int64)}, outputs=("values", "indices")),
    Case("topk_smallest_ties", "TopK", {"x": np.round(_floats(2, 8, 3))}, np.float32,
         {"axis": 1, "largest": 0}, constants={"k": np.array([3], dtype=np.int64)},
         outputs=("values", "indices")),
    Case("topk_int64", "TopK", {"x": _ints(4, 6)}, np.int64,
         constants={"k": np.array([2], dtype=np.int64)}, outputs=("values", "indices")),
    Case("onehot", "OneHot", {"indices": _ints(2, 3, low=-5, high=7)}, np.float32,
         {"axis": 1}, opset=11,
         constants={"depth": np.array(5, dtype=np.int64),
                    "values": np.array([0.0, 3.0], dtype=np.float32)}),
    Case("scatter_elements", "ScatterElements",
         {"data": _floats(4, 5), "indices": np.array([[1, 0, 3], [-1, 2, 0]], dtype=np.int64),
          "updates": _floats(2, 3)}, np.float32, {"axis": 1}, opset=13),
    Case("scatter_elements_add", "ScatterElements",
         {"data": _ints(4, 3), "indices": np.array([[1, 1, 0], [1, 3, 2]], dtype=np.int64),
          "updates": _ints(2, 3)}, np.int64, {"axis": 0, "reduction": "add"}, opset=16),
    Case("einsum_attention", "Einsum", {"q": _floats(2, 3, 5, 4), "k": _floats(2, 3, 6, 4)},
         np.float32, {"equation": "bhqd,bhkd->bhqk"}),
    Case("einsum_ellipsis_broadcast", "Einsum", {"a": _floats(2, 1, 3, 4), "b": _floats(1, 5, 4, 2)},
         np.float32, {"equation": "...ij,...jk->...ik"}),
    Case("einsum_implicit_trace", "Einsum", {"a": _floats(4, 4), "b": _floats(4, 3)}, np.float32,
         {"equation": "ii,ij"}),
    Case("reduce_mean_spatial", "ReduceMean", {"x": _floats(2, 3, 4, 5)}, np.float32,
         constants={"axes": np.array([2, 3], dtype=np.int64)}, opset=18),
    Case("reduce_max_last", "ReduceMax", {"x": _floats(3, 4, 6)}, np.float32,
         {"axes": [-1], "keepdims": 0}, opset=13),
    Case("reduce_mean_middle", "ReduceMean", {"x": _floats(3, 4, 6)}, np.float32,
         {"axes": [1]}, opset=13,
         device_refusal="a reduction over axes that are not the last ones"),
    Case("dequantize_int32_bias", "DequantizeLinear",
         {"x": _ints(8, low=-100000, high=100000, dtype=np.int32),
          "scale": np.array(0.001, np.float32)}, np.float32),
]


def _model(case: Case) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype),
                                            list(v.shape))
              for name, v in case.inputs.items()]
    node = helper.make_node(case.op, [*case.inputs, *case.constants], list(case.outputs),
                            name=f"{case.id}_node", **case.attrs)
    outs = [helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(
            np.dtype(case.output if i == 0 or case.same_outputs else np.int64)), None)
        for i, name in enumerate(case.outputs)]
    initializers = [numpy_helper.from_array(v, name) for name, v in case.constants.items()]
    graph = helper.make_graph([node], case.id, inputs, outs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model.ir_version = 8
    return model


def _exact_problems(actual: dict, expected: dict) -> list:
    problems = []
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            problems.append(f"no output {name!r} (got {sorted(actual)})")
            continue
        if got.dtype != want.dtype or got.shape != want.shape:
            problems.append(f"{name}: {got.dtype} {list(got.shape)}, expected {want.dtype} "
                            f"{list(want.shape)}")
            continue
        if np.issubdtype(want.dtype, np.floating):
            # NaN matches NaN and an infinity the same infinity; finite values
            # within runners.py's tolerance, scaled by the largest finite one.
            finite = np.isfinite(want)
            scale = float(np.max(np.abs(want[finite]), initial=0.0))
            close = np.abs(got.astype(np.float64) - want) <= (
                runners.ATOL_SCALE * scale + runners.RTOL * np.abs(want.astype(np.float64)))
            same = np.where(finite, close, (got == want) | (np.isnan(got) & np.isnan(want)))
            # -0 and 0 are told apart where the reference makes them differ.
            same &= (np.signbit(got) == np.signbit(want)) | np.isnan(want) | (want != 0)
            bad = np.argwhere(~same)
        else:
            bad = np.argwhere(got != want)
        if bad.size:
            at = tuple(bad[0])
            problems.append(f"{name}: {len(bad)} of {want.size} differ; first at {at}: "
                            f"got {got[at]!r}, expected {want[at]!r}")
    return problems


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_operator_matches_onnxruntime_on_the_cpu(case, onnx_run, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(_model(case), str(path))
    expected = runners.run_onnxruntime(path, case.inputs)
    try:
        run = runners.run_coalesce(path, case.inputs, tmp_path, binary=onnx_run)
    except runners.CoalesceRunError as err:
        pytest.fail(str(err), pytrace=False)
    problems = _exact_problems(run.outputs, expected)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_operator_on_the_simulated_device(case, onnx_run, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(_model(case), str(path))
    try:
        run = runners.run_coalesce(path, case.inputs, tmp_path, binary=onnx_run,
                                   device="simulated")
    except runners.CoalesceRunError as err:
        refusal = case.device_refusal or (
            "no GPU kernel for this operator" if case.op in DEVICE_REFUSES else None)
        assert refusal, f"{case.op} should run on the device:\n{err}"
        assert f"node '{case.id}_node' (op '{case.op}')" in err.stderr, err.stderr
        assert refusal in err.stderr, err.stderr
        return
    assert case.op not in DEVICE_REFUSES, f"{case.op} now runs on the device: update DEVICE_REFUSES"
    assert not case.device_refusal, f"{case.id} now runs on the device"
    problems = _exact_problems(run.outputs, runners.run_onnxruntime(path, case.inputs))
    assert not problems, "\n".join(problems)


def test_the_cases_cover_every_op_the_device_refuses():
    assert DEVICE_REFUSES <= {c.op for c in CASES}
