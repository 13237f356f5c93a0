#!/usr/bin/env python3
"""Random weights for the ONNX backend-test "light" networks.

The light networks (``light_*.onnx``: AlexNet, DenseNet-121, Inception v1/v2,
ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512; IR 3, opset 9) ship with
every large float weight replaced by a ``ConstantOfShape`` node whose shape is
an int64 initializer ``<weight>__SHAPE``. All logits are then equal, so their
expected output (a uniform softmax) checks nothing numerically.

``randomize_light`` turns each weight into a seeded random initializer whose
scale suits the layer it feeds, so the network computes something non-trivial
and activations stay O(1) through 50+ layers:

=========================  ===================================================
weight (found by its user)  values (mean 0 and std s: uniform on +-sqrt(3) s)
=========================  ===================================================
Conv W [M, C/g, kh, kw]     s^2 = 2 / fan_in before a ReLU (He), else 1 / fan_in;
                            fan_in = C/g * kh * kw
Gemm B                      the same, fan_in = K (the reduced dimension)
Conv / Gemm bias            s = 0.05
BatchNormalization          scale U(0.8, 1.2), bias and mean s = 0.1,
                            var U(0.5, 1.5); scale x ``RESIDUAL_GAIN`` when
                            the BN's output is added to an identity shortcut,
                            so the sums of ResNet-50 and ShuffleNet do not
                            grow the variance block after block
Caffe "Scale" Mul / Add     U(0.8, 1.2) / s = 0.1 (through Unsqueeze)
=========================  ===================================================

"Before a ReLU" means through BN / Scale only; ShuffleNet's depthwise and
last grouped convolutions have no ReLU and would double the variance at each
block with He scaling. With these rules, seed 0 and N(0, 1) inputs, every
activation of the nine nets has an RMS between 0.001 and 30 and the logits a
standard deviation between 0.3 (DenseNet) and 12 (Inception v2): nothing
vanishes or overflows, and the logits differ from class to class.

The light files also keep a few small float initializers with their
pretrained values (biases, and DenseNet / Inception-v2 / ResNet-50 BN
statistics, some variances 1e-12). Mixed with random weights those values mean
nothing and a 1e-12 variance multiplies a random channel by ~300, so they are
re-drawn by the same rules (``keep_pretrained=True`` keeps them). Random
values depend only on (seed, tensor name), not on graph order.

IR 3 requires every initializer to be a graph input as well, so new
initializers are also listed as inputs; the now unused ``__SHAPE`` tensors and
unused initializers are removed. Runtimes treat inputs that are initializers
in an IR-3 model as constants (the engine and ONNX Runtime alike), so the
model's only real input stays the image.

``make_batchable=True`` gives the image input and the outputs a symbolic
first dimension ``N`` and rewrites every Reshape whose constant target shape
hard-codes batch 1 on an activation (``[1, 9216]``, ShuffleNet's channel
shuffles ``[1, 4, 28, 56, 56]``) to ``0`` there, which Reshape (opset 9,
allowzero absent) defines as "copy the input's dimension": the batch. ONNX
shape inference then checks that ``N`` reaches every rewritten Reshape and
every output.

CLI::

    python3 tests/models/randomize_light.py IN.onnx OUT.onnx [--seed S]
        [--batchable] [--expose-logits] [--check]
"""

from __future__ import annotations

import argparse
import sys
import zlib
from collections import defaultdict

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LIGHT_NETS = (
    "light_bvlc_alexnet", "light_densenet121", "light_inception_v1",
    "light_inception_v2", "light_resnet50", "light_shufflenet",
    "light_squeezenet", "light_vgg19", "light_zfnet512",
)

BATCH_DIM = "N"
RESIDUAL_GAIN = 0.2
BIAS_STD = 0.05
BN_SHIFT_STD = 0.1

# Ops that only move a weight's elements around on its way to the layer that
# uses it (Inception v1 reshapes its classifier weight, DenseNet and
# Inception v2 unsqueeze their Caffe "Scale" parameters).
_PASS_THROUGH = {"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}


# --------------------------------------------------------------------------
# graph queries
# --------------------------------------------------------------------------

class _Graph:
    """Producer and consumer maps of a GraphProto (read-only views)."""

    def __init__(self, graph: onnx.GraphProto):
        self.graph = graph
        self.producer = {o: n for n in graph.node for o in n.output}
        self.consumers = defaultdict(list)  # tensor -> [(node, input index)]
        for n in graph.node:
            for i, name in enumerate(n.input):
                self.consumers[name].append((n, i))
        self.initializers = {t.name: t for t in graph.initializer}

    def use_of(self, tensor: str):
        """The (node, input index) that finally uses `tensor`, following
        _PASS_THROUGH ops on their data input. None when it is not unique."""
        uses = self.consumers.get(tensor, [])
        for _ in range(8):  # the light nets need at most one hop
            if len(uses) != 1:
                return None
            node, index = uses[0]
            if node.op_type not in _PASS_THROUGH or index != 0:
                return node, index
            uses = self.consumers.get(node.output[0], [])
        return None

    def feeds_relu(self, node: onnx.NodeProto) -> bool:
        """True when `node`'s output reaches a Relu through per-channel affine
        ops only (BatchNormalization, Caffe "Scale" Mul/Add)."""
        tensor = node.output[0]
        for _ in range(4):
            uses = self.consumers.get(tensor, [])
            if any(n.op_type == "Relu" for n, _ in uses):
                return True
            if len(uses) != 1 or uses[0][0].op_type not in ("BatchNormalization", "Mul", "Add"):
                return False
            tensor = uses[0][0].output[0]
        return False

    def feeds_identity_residual(self, node: onnx.NodeProto) -> bool:
        """True for a BN whose output is added (Sum/Add) to an identity
        shortcut, an activation no BN made (ResNet-50, ShuffleNet). A
        projection shortcut (BN + BN) starts a fresh sum and DenseNet's Caffe
        "Scale" Add has a constant second input: neither counts."""
        for n, _ in self.consumers.get(node.output[0], []):
            if n.op_type not in ("Sum", "Add"):
                continue
            others = [self.producer.get(i) for i in n.input if i != node.output[0]]
            if others and all(o is not None and o.op_type not in ("BatchNormalization", "Unsqueeze")
                              for o in others):
                return True
        return False


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


# --------------------------------------------------------------------------
# weight values
# --------------------------------------------------------------------------

def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _centered(rng, shape, std):
    """Zero-mean values of standard deviation `std`: U(-a, a) with
    a = sqrt(3) std (PyTorch's default init is uniform too), twice as fast to
    draw as normals, which matters for VGG-19's 143 M weights."""
    values = rng.random(shape, dtype=np.float32)
    values -= np.float32(0.5)
    values *= np.float32(2.0 * np.sqrt(3.0) * std)
    return values


def _uniform(rng, shape, low, high):
    return rng.uniform(low, high, size=shape).astype(np.float32)


def _gemm_fan_in(node: onnx.NodeProto, shape) -> int:
    """K of Gemm's B (shape as the Gemm sees it): [N, K] with transB."""
    if len(shape) != 2:
        raise ValueError(f"Gemm '{node.name}' weight of shape {shape} is not 2-D")
    return int(shape[1] if _attr(node, "transB", 0) else shape[0])


def _final_shape(g: _Graph, tensor: str, shape):
    """`shape` after the pass-through ops between `tensor` and its user."""
    for _ in range(8):
        uses = g.consumers.get(tensor, [])
        node, index = uses[0]
        if node.op_type not in _PASS_THROUGH or index != 0:
            return list(shape)
        if node.op_type == "Reshape":  # 0 copies the input's dimension
            target = numpy_helper.to_array(g.initializers[node.input[1]]).tolist()
            target = [shape[i] if t == 0 else t for i, t in enumerate(target)]
            shape = np.empty(shape, dtype=np.uint8).reshape(target).shape
        elif node.op_type == "Unsqueeze":
            for axis in sorted(_attr(node, "axes")):
                shape = list(shape[:axis]) + [1] + list(shape[axis:])
        tensor = node.output[0]
    return list(shape)


def _weight_values(g: _Graph, name: str, shape, seed: int) -> np.ndarray:
    """Random values for weight `name` of `shape`, by the layer that uses it."""
    use = g.use_of(name)
    if use is None:
        raise ValueError(f"weight '{name}' has no single user: cannot tell its role")
    node, index = use
    rng = _rng(seed, name)
    op = node.op_type
    gain = 2.0 if g.feeds_relu(node) else 1.0  # He before a ReLU, else LeCun
    if op == "Conv" and index == 1:
        fan_in = int(np.prod(shape[1:]))
        return _centered(rng, shape, np.sqrt(gain / fan_in))
    if op == "Gemm" and index == 1:
        fan_in = _gemm_fan_in(node, _final_shape(g, name, shape))
        return _centered(rng, shape, np.sqrt(gain / fan_in))
    if op in ("Conv", "Gemm") and index == 2:
        return _centered(rng, shape, BIAS_STD)
    if op == "BatchNormalization":
        return _bn_values(g, node, index, rng, shape)
    if op == "Mul" and index == 1:  # Caffe Scale: per-channel multiplier
        return _uniform(rng, shape, 0.8, 1.2)
    if op == "Add" and index == 1:  # Caffe Scale: per-channel bias
        return _centered(rng, shape, BN_SHIFT_STD)
    raise ValueError(f"weight '{name}' feeds input {index} of {op} '{node.name}': "
                     "no rule for its values")


def _bn_values(g: _Graph, node, index: int, rng, shape) -> np.ndarray:
    if index == 1:  # scale (gamma)
        gain = RESIDUAL_GAIN if g.feeds_identity_residual(node) else 1.0
        return _uniform(rng, shape, 0.8, 1.2) * np.float32(gain)
    if index in (2, 3):  # bias (beta), running mean
        return _centered(rng, shape, BN_SHIFT_STD)
    if index == 4:  # running variance: positive, about 1
        return _uniform(rng, shape, 0.5, 1.5)
    raise ValueError(f"BatchNormalization '{node.name}' input {index} is not a parameter")


# --------------------------------------------------------------------------
# rewriting the graph
# --------------------------------------------------------------------------

def _constant_of_shape_weights(g: _Graph) -> dict:
    """Weight name -> shape for each ConstantOfShape making a float tensor
    from a constant shape."""
    found = {}
    for node in g.graph.node:
        if node.op_type != "ConstantOfShape":
            continue
        value = _attr(node, "value")
        if value is not None and value.data_type != TensorProto.FLOAT:
            continue
        shape_init = g.initializers.get(node.input[0])
        if shape_init is None:
            raise ValueError(f"ConstantOfShape '{node.output[0]}' has a non-constant shape")
        found[node.output[0]] = numpy_helper.to_array(shape_init).tolist()
    return found


def _weights_to_randomize(g: _Graph, keep_pretrained: bool) -> dict:
    """Weight name -> shape: the ConstantOfShape weights, and unless
    keep_pretrained the float initializers some node reads."""
    weights = _constant_of_shape_weights(g)
    if not keep_pretrained:
        for t in g.graph.initializer:
            if t.data_type == TensorProto.FLOAT and t.name in g.consumers:
                weights[t.name] = list(t.dims)
    return weights


def _replace_list(field, items) -> None:
    del field[:]
    field.extend(items)


def _skeleton(model: onnx.ModelProto, weights: dict) -> onnx.ModelProto:
    """`model` without the weights' producers and data: each weight becomes a
    float graph input of its shape, so the checker and shape inference work
    on a few-kilobyte graph. _attach_weights completes it."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    _replace_list(graph.node, [n for n in graph.node
                               if not (n.op_type == "ConstantOfShape" and n.output[0] in weights)])
    _replace_list(graph.initializer, [t for t in graph.initializer if t.name not in weights])
    inputs = [vi for vi in graph.input if vi.name not in weights]
    inputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
               for name, shape in weights.items()]
    _replace_list(graph.input, inputs)
    return out


def _attach_weights(model: onnx.ModelProto, g: _Graph, weights: dict, seed: int) -> None:
    """Adds the random initializers (IR < 4 keeps them listed as inputs too,
    as that IR requires)."""
    for name, shape in weights.items():
        tensor = model.graph.initializer.add()  # filled in place: no copy of a 400 MB list
        tensor.name = name
        tensor.data_type = TensorProto.FLOAT
        tensor.dims.extend(shape)
        tensor.raw_data = _weight_values(g, name, shape, seed).tobytes()
    if model.ir_version >= 4:
        _replace_list(model.graph.input, [vi for vi in model.graph.input if vi.name not in weights])


def _drop_unused_constants(graph: onnx.GraphProto) -> None:
    """Removes initializers no node reads (the __SHAPE tensors, Caffe2's
    'imagenet1k_blobs_queue' leftovers) and their graph-input entries."""
    used = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    unused = {t.name for t in graph.initializer if t.name not in used}
    _replace_list(graph.initializer, [t for t in graph.initializer if t.name not in unused])
    _replace_list(graph.input, [vi for vi in graph.input if vi.name not in unused])


def real_inputs(model: onnx.ModelProto, exclude=()) -> list:
    """Graph inputs that are not initializers (nor in `exclude`): what a
    caller feeds."""
    constant = {t.name for t in model.graph.initializer} | set(exclude)
    return [vi for vi in model.graph.input if vi.name not in constant]


def _set_first_dim_symbolic(value_info: onnx.ValueInfoProto) -> None:
    dims = value_info.type.tensor_type.shape.dim
    if not dims or dims[0].dim_value != 1:
        raise ValueError(f"'{value_info.name}' does not start with a batch dimension of 1")
    dims[0].dim_param = BATCH_DIM


def _batch_reshapes(graph: onnx.GraphProto, weights) -> list:
    """Reshape nodes on activations whose constant target shape starts with 1."""
    constants = {t.name: t for t in graph.initializer}
    found = []
    for node in graph.node:
        if node.op_type != "Reshape" or node.input[0] in constants or node.input[0] in weights:
            continue
        target = constants.get(node.input[1])
        if target is None:
            raise ValueError(f"Reshape '{node.output[0]}' has a non-constant shape")
        if numpy_helper.to_array(target).ravel()[0] == 1:
            found.append(node)
    return found


def _rewrite_batch_reshape(graph: onnx.GraphProto, node: onnx.NodeProto) -> None:
    """Points `node` at a copy of its target shape with 0 (copy the input's
    batch dimension) in place of the leading 1."""
    target = numpy_helper.to_array(
        next(t for t in graph.initializer if t.name == node.input[1])).copy()
    target[0] = 0
    name = node.input[1] + "__batch"
    graph.initializer.append(numpy_helper.from_array(target, name))
    graph.input.append(helper.make_tensor_value_info(name, TensorProto.INT64, list(target.shape)))
    node.input[1] = name


def _check_batch_flows(model: onnx.ModelProto, reshapes: list) -> None:
    """ONNX shape inference must carry N to every rewritten Reshape and output."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    types = {vi.name: vi.type for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for name in [n.output[0] for n in reshapes] + [o.name for o in model.graph.output]:
        dims = types[name].tensor_type.shape.dim if name in types else []
        if not dims or dims[0].dim_param != BATCH_DIM:
            raise ValueError(f"after the batch rewrite, '{name}' does not start with {BATCH_DIM}: "
                             f"{[d.dim_param or d.dim_value for d in dims]}")


def _make_batchable(model: onnx.ModelProto, weights) -> None:
    graph = model.graph
    for vi in real_inputs(model, exclude=weights):
        _set_first_dim_symbolic(vi)
    for vi in graph.output:
        _set_first_dim_symbolic(vi)
    del graph.value_info[:]  # stale batch-1 shapes, if any
    reshapes = _batch_reshapes(graph, weights)
    for node in reshapes:
        _rewrite_batch_reshape(graph, node)
    _drop_unused_constants(graph)
    _check_batch_flows(model, reshapes)


def _expose_logits(model: onnx.ModelProto) -> str | None:
    """Adds the input of the Softmax that makes the first output as an extra
    graph output (named as the tensor), with its inferred type. Returns its
    name, or None when the first output is not a Softmax's."""
    g = _Graph(model.graph)
    node = g.producer.get(model.graph.output[0].name)
    if node is None or node.op_type != "Softmax":
        return None  # DenseNet-121 and SqueezeNet end otherwise
    logits = node.input[0]
    inferred = onnx.shape_inference.infer_shapes(model)
    info = next((vi for vi in inferred.graph.value_info if vi.name == logits), None)
    if info is None:
        info = helper.make_tensor_value_info(logits, TensorProto.FLOAT, None)
    model.graph.output.append(info)
    return logits


def randomize_light(model: onnx.ModelProto, seed: int = 0, *, make_batchable: bool = False,
                    expose_logits: bool = False, keep_pretrained: bool = False) -> onnx.ModelProto:
    """A copy of light model `model` with random weights (see the module doc).

    make_batchable: symbolic first dimension 'N' on input and outputs, batch-1
      Reshapes rewritten. expose_logits: the Softmax's input becomes a second
      output (a stricter comparison than probabilities). Raises ValueError for
      a weight whose role it cannot tell or a batch it cannot free.
    """
    g = _Graph(model.graph)
    weights = _weights_to_randomize(g, keep_pretrained)
    out = _skeleton(model, weights)
    _drop_unused_constants(out.graph)
    if make_batchable:
        _make_batchable(out, weights)
    if expose_logits:
        _expose_logits(out)
    onnx.checker.check_model(out)  # the skeleton: cheap, and the weights are typed by construction
    _attach_weights(out, g, weights, seed)
    return out


def random_inputs(model: onnx.ModelProto, batch: int = 1, seed: int = 0) -> dict:
    """N(0, 1) float32 images (like mean/std-normalized pixels) for every real
    input; a symbolic first dimension becomes `batch`."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in real_inputs(model):
        dims = [d.dim_value if d.dim_value > 0 else batch
                for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.elem_type != TensorProto.FLOAT:
            raise ValueError(f"input '{vi.name}' is not float")
        feeds[vi.name] = rng.standard_normal(dims).astype(np.float32)
    return feeds


def check_outputs(outputs: dict) -> None:
    """Raises ValueError when an output has NaN/inf or is (nearly) constant
    (what the unrandomized light nets give)."""
    for name, value in outputs.items():
        if not np.all(np.isfinite(value)):
            raise ValueError(f"output '{name}' has NaN or infinite values")
        if value.size > 1 and float(np.std(value)) <= 1e-6 * max(float(np.abs(value).max()), 1e-30):
            raise ValueError(f"output '{name}' is constant ({value.ravel()[0]})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="light_X.onnx")
    ap.add_argument("output", help="where to write the randomized model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batchable", action="store_true", help="symbolic batch dimension N")
    ap.add_argument("--expose-logits", action="store_true", help="the Softmax input as a second output")
    ap.add_argument("--keep-pretrained", action="store_true",
                    help="keep the float initializers the light file still has")
    ap.add_argument("--check", action="store_true",
                    help="run it once in onnxruntime (batch 2 when --batchable) and print output stats")
    args = ap.parse_args(argv)
    model = randomize_light(onnx.load(args.input), args.seed, make_batchable=args.batchable,
                            expose_logits=args.expose_logits, keep_pretrained=args.keep_pretrained)
    onnx.save(model, args.output)
    print(f"wrote {args.output}")
    if args.check:
        import runners  # tests/models, beside this file
        outputs = runners.run_onnxruntime(model, random_inputs(model, 2 if args.batchable else 1, args.seed))
        check_outputs(outputs)
        for name, v in outputs.items():
            print(f"  {name} {list(v.shape)}: min {v.min():.4g} max {v.max():.4g} std {v.std():.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
