#include "engine/device/device_ops.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/device/device_ops_internal.h"
#include "engine/schema/gemm_schema.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/normalization_schema.h"
#include "engine/schema/softmax_schema.h"
#include "engine/schema/tensor_schema.h"
#include "engine/schema/unary_schema.h"

namespace coalesce {
namespace {

using device_ops::AddHalfOperand;
using device_ops::Count;
using device_ops::DeviceFusedActivation;
using device_ops::F;
using device_ops::HalfOperand;
using device_ops::In;
using device_ops::NodeView;
using device_ops::Out;
using device_ops::Product;

// -- activations --------------------------------------------------------

// The device form of a unary node's resolved kind (engine/schema/
// unary_schema.h); the registry lists only the kinds that have one.
absl::StatusOr<ActivationSpec> UnaryActivation(const UnaryAttrs& u) {
  using K = UnaryKind;
  using D = DeviceActivation;
  switch (u.kind) {
    case K::kRelu:
      return ActivationSpec{D::kRelu};
    case K::kSigmoid:
      return ActivationSpec{D::kSigmoid};
    case K::kTanh:
      return ActivationSpec{D::kTanh};
    case K::kSqrt:
      return ActivationSpec{D::kSqrt};
    case K::kExp:
      return ActivationSpec{D::kExp};
    case K::kReciprocal:
      return ActivationSpec{D::kReciprocal};
    case K::kErf:
      return ActivationSpec{D::kErf};
    case K::kLeakyRelu:
      return ActivationSpec{D::kLeakyRelu, u.alpha};
    case K::kHardSigmoid:
      return ActivationSpec{D::kHardSigmoid, u.alpha, u.beta};
    case K::kGeluErf:
      return ActivationSpec{D::kGeluErf};
    case K::kGeluTanh:
      return ActivationSpec{D::kGeluTanh};
    case K::kFloor:
      return ActivationSpec{D::kFloor};
    case K::kCeil:
      return ActivationSpec{D::kCeil};
    case K::kSin:
      return ActivationSpec{D::kSin};
    case K::kCos:
      return ActivationSpec{D::kCos};
    case K::kHardSwish:
      return ActivationSpec{D::kHardSwish};
    case K::kClip:  // bounds from inputs: LowerActivation
      return ActivationSpec{D::kClip, u.alpha, u.beta};
    default:
      return absl::UnimplementedError("no GPU kernel for this operator");
  }
}

// The activation of an elementwise node: a unary op's resolved attributes,
// or Neg, Abs and Pow (whose exponent LowerActivation reads).
absl::StatusOr<ActivationSpec> NodeActivation(const NodeView& v) {
  const std::string& op = *v.node().op_type;
  if (op == "Neg") return ActivationSpec{DeviceActivation::kNeg};
  if (op == "Abs") return ActivationSpec{DeviceActivation::kAbs};
  if (op == "Pow") return ActivationSpec{DeviceActivation::kPow};
  auto attrs = v.resolved<UnaryAttrs>();
  if (!attrs.ok()) return attrs.status();
  return UnaryActivation(**attrs);
}

absl::Status CheckActivation(const PlanNode& node, int64_t opset) {
  NeutralPlan plan;
  plan.opset = opset;
  return NodeActivation(NodeView(plan, node)).status();
}

absl::StatusOr<LoweredNode> LowerActivation(const NodeView& v) {
  const std::string& op = *v.node().op_type;
  if ((op == "Neg" || op == "Abs") && v.in(0).info.dtype != DataType::kFp32)
    return device_ops::LowerTyped(v);
  if (absl::Status s = v.RequireFloat({0}); !s.ok()) return s;
  auto spec = NodeActivation(v);
  if (!spec.ok()) return spec.status();
  if (*v.node().op_type == "Pow") {
    auto exponent = v.ConstantScalar(1, 1.0f);
    if (!exponent.ok()) return exponent.status();
    spec->alpha = *exponent;
  }
  if (*v.node().op_type == "Clip" && v.opset() >= 11) {
    auto lo = v.ConstantScalar(1, spec->alpha);
    auto hi = v.ConstantScalar(2, spec->beta);
    if (!lo.ok()) return lo.status();
    if (!hi.ok()) return hi.status();
    spec->alpha = *lo;
    spec->beta = *hi;
  }
  const int x = v.in_id(0), y = v.out_id(0);
  const DeviceFloat x_type = v.in_type(0), y_type = v.out_type(0);
  const int64_t n = Count(v.out_shape(0));
  LoweredNode lowered;
  lowered.reads = {x};
  lowered.steps.push_back([=, f = *spec](const StepContext& c) {
    return c.kernels.Activation(c.stream, f, In(c, x, x_type),
                                Out(c, y, y_type), n);
  });
  return lowered;
}

// -- binary arithmetic --------------------------------------------------

DeviceBinaryOp BinaryOf(const std::string& op) {
  if (op == "Sub") return DeviceBinaryOp::kSub;
  if (op == "Mul") return DeviceBinaryOp::kMul;
  if (op == "Div") return DeviceBinaryOp::kDiv;
  return DeviceBinaryOp::kAdd;
}

// A step running Binary(`args`) over the float values a and b into y,
// stored as `types` (a, b, y) say.
DeviceStep BinaryStep(BinaryArgs args, int a, int b, int y,
                      std::array<DeviceFloat, 3> types = {}) {
  return [=](const StepContext& c) {
    BinaryArgs run = args;
    run.a = In(c, a, types[0]);
    run.b = In(c, b, types[1]);
    run.y = Out(c, y, types[2]);
    return c.kernels.Binary(c.stream, run);
  };
}

absl::StatusOr<LoweredNode> LowerBinary(const NodeView& v) {
  if (v.in(0).info.dtype != DataType::kFp32) return device_ops::LowerTyped(v);
  if (absl::Status s = v.RequireFloat({0, 1}); !s.ok()) return s;
  if (v.in_shape(0).size() > 8 || v.in_shape(1).size() > 8) {
    return absl::UnimplementedError("rank above 8");
  }
  const int a = v.in_id(0), b = v.in_id(1), y = v.out_id(0);
  const Shape a_shape = v.in_shape(0), b_shape = v.in_shape(1);
  const DeviceBinaryOp op = BinaryOf(*v.node().op_type);
  LoweredNode lowered;
  lowered.reads = {a, b};
  lowered.steps.push_back(
      BinaryStep({.op = op, .a_shape = a_shape, .b_shape = b_shape}, a, b, y,
                 {v.in_type(0), v.in_type(1), v.out_type(0)}));
  return lowered;
}

// Sum of inputs of the output's shape (ResNet's residual adds): pairwise
// adds into the output.
absl::StatusOr<LoweredNode> LowerSum(const NodeView& v) {
  std::vector<int> inputs;
  for (int i = 0; i < v.num_inputs(); ++i) {
    if (absl::Status s = v.RequireFloat({i}); !s.ok()) return s;
    if (v.in_shape(i) != v.out_shape(0)) {
      return absl::UnimplementedError(
          "Sum with broadcasting; the GPU adds inputs of the output's shape");
    }
    inputs.push_back(v.in_id(i));
  }
  const int y = v.out_id(0);
  const Shape shape = v.out_shape(0);
  LoweredNode lowered;
  lowered.reads = inputs;
  if (inputs.size() == 1) {
    const size_t bytes = v.out(0).byte_size;
    lowered.steps.push_back([=](const StepContext& c) {
      return c.device.CopyOnDevice(c.stream, c.addresses[y],
                                   c.addresses[inputs[0]], bytes);
    });
    return lowered;
  }
  for (size_t i = 1; i < inputs.size(); ++i) {
    const int a = i == 1 ? inputs[0] : y, b = inputs[i];
    lowered.steps.push_back(BinaryStep(
        {.op = DeviceBinaryOp::kAdd, .a_shape = shape, .b_shape = shape}, a, b,
        y));
  }
  return lowered;
}

// -- Gemm and MatMul ----------------------------------------------------

// Appends the steps that follow a product into y (stored as `y_type`):
// adding a C (stored as `c_type`) that is not a bias row (Gemm's C, a
// MatMul's broadcast residual), then an activation the GEMM did not fuse.
void AddEpilogue(LoweredNode& lowered, int y, DeviceFloat y_type,
                 const Shape& y_shape, int c, const Shape& c_shape,
                 ActivationSpec act, DeviceFloat c_type = DeviceFloat::kFloat) {
  if (c >= 0) {
    lowered.reads.push_back(c);
    lowered.steps.push_back(BinaryStep(
        {.op = DeviceBinaryOp::kAdd, .a_shape = y_shape, .b_shape = c_shape}, y,
        c, y, {y_type, c_type, y_type}));
  }
  if (act.kind != DeviceActivation::kIdentity) {
    const int64_t n = Count(y_shape);
    lowered.steps.push_back([=](const StepContext& ctx) {
      return ctx.kernels.Activation(ctx.stream, act, In(ctx, y, y_type),
                                    Out(ctx, y, y_type), n);
    });
  }
}

// The GEMM of `args` on inputs 0 and 1 into output 0, plus input 2 as a
// bias row when `bias`: float32, or in FP16 or BF16 mode on 16-bit
// operands, writing output 0 as it is stored (a 16-bit output reads a
// 16-bit copy of the bias); plus value `z` (>= 0: a residual of output 0's
// shape and stored type) added in the GEMM.
void AddGemm(const NodeView& v, const GemmArgs& args, bool bias,
             LoweredNode& lowered, int z = -1) {
  const int a = v.in_id(0), b = v.in_id(1), c = v.out_id(0);
  const bool half = v.options().half();
  const DeviceFloat half_type = v.options().activations;
  const DeviceFloat c_type = v.out_type(0);
  HalfOperand half_a, half_b, half_bias;
  if (half) {
    half_a = AddHalfOperand(v, 0, lowered);
    half_b = AddHalfOperand(v, 1, lowered);
  } else {
    lowered.reads.push_back(a);
    lowered.reads.push_back(b);
  }
  const bool bias_half = bias && c_type != DeviceFloat::kFloat;
  if (bias_half) {
    half_bias = AddHalfOperand(v, 2, lowered);
  } else if (bias) {
    lowered.reads.push_back(v.in_id(2));
  }
  const int bias_id = bias ? v.in_id(2) : -1;
  if (z >= 0) lowered.reads.push_back(z);
  lowered.steps.push_back([=](const StepContext& ctx) {
    GemmArgs g = args;
    if (half) {
      g.a_half = half_a.Address(ctx);
      g.b_half = half_b.Address(ctx);
      g.half_type = half_type;
    } else {
      g.a = F(ctx, a);
      g.b = F(ctx, b);
    }
    if (bias_half) {
      g.bias = FloatIn(half_bias.Address(ctx), c_type);
    } else if (bias_id >= 0) {
      g.bias = F(ctx, bias_id);
    }
    if (z >= 0) g.z = In(ctx, z, c_type);
    g.c = Out(ctx, c, c_type);
    return ctx.kernels.Gemm(ctx.stream, g);
  });
}

// True when C (of `shape`) is one row of n values: [n] or [1, n].
bool IsBiasRow(const Shape& shape, int64_t n) {
  return (shape.size() == 1 && shape[0] == n) ||
         (shape.size() == 2 && shape[0] == 1 && shape[1] == n);
}

absl::StatusOr<LoweredNode> LowerGemm(const NodeView& v) {
  if (absl::Status s = v.RequireFloat({0, 1, 2}); !s.ok()) return s;
  absl::StatusOr<const GemmAttrs*> attrs = v.resolved<GemmAttrs>();
  if (!attrs.ok()) return attrs.status();
  const GemmAttrs& gemm = **attrs;
  const ActivationSpec act = DeviceFusedActivation(gemm.activation);
  GemmArgs args;
  args.trans_a = gemm.trans_a;
  args.trans_b = gemm.trans_b;
  args.alpha = gemm.alpha;
  const Shape& a = v.in_shape(0);
  args.m = args.trans_a ? a[1] : a[0];
  args.k = args.trans_a ? a[0] : a[1];
  args.n = v.out_shape(0)[1];
  if (args.k == 0) return absl::UnimplementedError("inner dimension 0");
  const int iy = v.out_id(0);
  int bias = -1, c = -1;
  Shape c_shape;
  if (v.has_input(2) && gemm.beta != 0.0f) {
    if (gemm.beta != 1.0f) {
      return absl::UnimplementedError(
          "Gemm with beta other than 0 or 1 is not supported on the GPU");
    }
    (IsBiasRow(v.in_shape(2), args.n) ? bias : c) = v.in_id(2);
    c_shape = v.in_shape(2);
  }
  // Activations the GEMM fuses only when nothing is added after it.
  const bool fuse = c < 0;
  LoweredNode lowered;
  args.activation = fuse ? act : ActivationSpec{};
  AddGemm(v, args, bias >= 0, lowered);
  AddEpilogue(lowered, iy, v.out_type(0), v.out_shape(0), c, c_shape,
              fuse ? ActivationSpec{} : act);
  return lowered;
}

// MatMul's operands as stacks of matrices: batch count and strides.
struct MatMulLayout {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t stride_a = 0, stride_b = 0;
};

absl::StatusOr<MatMulLayout> LayoutMatMul(Shape a, Shape b) {
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulLayout l;
  l.m = a[a.size() - 2];
  l.k = a.back();
  l.n = b.back();
  const int64_t a_batch = Product(a, 0, a.size() - 2);
  const int64_t b_batch = Product(b, 0, b.size() - 2);
  if (b_batch == 1) {  // one B for every row of every A: one GEMM
    l.m *= a_batch;
    return l;
  }
  l.batch = b_batch;
  l.stride_b = l.k * l.n;
  if (a_batch == 1) return l;
  const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const size_t rank = std::max(ab.size(), bb.size());
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - ab.size() ? 1 : ab[i - (rank - ab.size())];
    const int64_t y = i < rank - bb.size() ? 1 : bb[i - (rank - bb.size())];
    if (x != y) {
      return absl::UnimplementedError(absl::StrCat(
          "MatMul batch dimensions ", ShapeToString(ab), " and ",
          ShapeToString(bb),
          " broadcast partially; the GPU takes equal batches or one matrix"));
    }
  }
  l.stride_a = l.m * l.k;
  return l;
}

absl::StatusOr<LoweredNode> LowerMatMul(const NodeView& v) {
  if (absl::Status s = v.RequireFloat({0, 1, 2, 3}); !s.ok()) return s;
  auto layout = LayoutMatMul(v.in_shape(0), v.in_shape(1));
  if (!layout.ok()) return layout.status();
  absl::StatusOr<const MatMulAttrs*> attrs = v.resolved<MatMulAttrs>();
  if (!attrs.ok()) return attrs.status();
  if (layout->k == 0) return absl::UnimplementedError("inner dimension 0");
  GemmArgs args;
  args.m = layout->m;
  args.n = layout->n;
  args.k = layout->k;
  args.batch = layout->batch;
  args.stride_a = layout->stride_a;
  args.stride_b = layout->stride_b;
  args.stride_c = layout->m * layout->n;
  const ActivationSpec act = DeviceFusedActivation((*attrs)->activation);
  args.activation = act;
  LoweredNode lowered;
  if (!v.has_input(3)) {
    AddGemm(v, args, v.has_input(2), lowered);
    return lowered;
  }
  // The residual z: in the GEMM when it is laid out and stored as the
  // output, else added after it (broadcast), then the activation.
  const Shape& y_shape = v.out_shape(0);
  if (layout->batch * layout->m * layout->n != Count(y_shape)) {
    return absl::UnimplementedError(
        absl::StrCat("a MatMul residual ", ShapeToString(v.in_shape(3)),
                     " broadcasting the product to ", ShapeToString(y_shape),
                     " is not supported on the GPU"));
  }
  if (v.in_shape(3) == y_shape && v.in_type(3) == v.out_type(0)) {
    AddGemm(v, args, v.has_input(2), lowered, v.in_id(3));
    return lowered;
  }
  args.activation = ActivationSpec{};
  AddGemm(v, args, v.has_input(2), lowered);
  AddEpilogue(lowered, v.out_id(0), v.out_type(0), y_shape, v.in_id(3),
              v.in_shape(3), act, v.in_type(3));
  return lowered;
}

// -- Softmax ------------------------------------------------------------

absl::StatusOr<LoweredNode> LowerSoftmax(const NodeView& v) {
  if (absl::Status s = v.RequireFloat({0}); !s.ok()) return s;
  const Shape& shape = v.in_shape(0);
  absl::StatusOr<const SoftmaxAttrs*> attrs = v.resolved<SoftmaxAttrs>();
  if (!attrs.ok()) return attrs.status();
  absl::StatusOr<int64_t> normalized =
      NormalizeAxis((*attrs)->axis, static_cast<int64_t>(shape.size()));
  if (!normalized.ok()) return normalized.status();
  const int64_t axis = *normalized;
  // From opset 13 Softmax normalizes one axis: rows are then contiguous
  // only when every later axis has size 1.
  if (!(*attrs)->legacy && Product(shape, axis + 1, shape.size()) != 1) {
    return absl::UnimplementedError(
        absl::StrCat("Softmax over axis ", axis, " of ", ShapeToString(shape),
                     " (not the last) is not supported on the GPU"));
  }
  const int64_t rows = Product(shape, 0, axis);
  const int64_t cols = Product(shape, axis, shape.size());
  const int x = v.in_id(0), y = v.out_id(0);
  const DeviceFloat x_type = v.in_type(0), y_type = v.out_type(0);
  LoweredNode lowered;
  lowered.reads = {x};
  if (rows * cols == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Softmax(c.stream, In(c, x, x_type), Out(c, y, y_type),
                             rows, cols);
  });
  return lowered;
}

// -- LayerNormalization ---------------------------------------------------

absl::StatusOr<LoweredNode> LowerLayerNorm(
    const NodeView& v, const FusedResidual* fused = nullptr) {
  if (absl::Status s = v.RequireFloat({0, 1, 2}); !s.ok()) return s;
  // The schema refused Mean and InvStdDev at load.
  absl::StatusOr<const LayerNormAttrs*> attrs = v.resolved<LayerNormAttrs>();
  if (!attrs.ok()) return attrs.status();
  const Shape& shape = v.in_shape(0);
  absl::StatusOr<int64_t> normalized =
      NormalizeAxis((*attrs)->axis, static_cast<int64_t>(shape.size()));
  if (!normalized.ok()) return normalized.status();
  const int64_t axis = *normalized;
  const float epsilon = (*attrs)->epsilon;
  const int64_t rows = Product(shape, 0, axis);
  const int64_t cols = Product(shape, axis, shape.size());
  for (int i : {1, 2}) {
    if (v.has_input(i) && Count(v.in_shape(i)) != cols) {
      return absl::UnimplementedError(absl::StrCat(
          "input ", i, " of shape ", ShapeToString(v.in_shape(i)),
          " is broadcast; the GPU takes one value per normalized element"));
    }
  }
  const FusedResidual add = fused != nullptr ? *fused : FusedResidual{};
  const int x = fused != nullptr ? add.x : v.in_id(0);
  const int scale = v.in_id(1), y = v.out_id(0);
  const DeviceFloat x_type = v.stored(x), y_type = v.out_type(0);
  const DeviceFloat residual_type =
      fused != nullptr ? v.stored(add.residual) : DeviceFloat::kFloat;
  const DeviceFloat sum_type =
      fused != nullptr ? v.stored(add.sum) : DeviceFloat::kFloat;
  const int bias = v.has_input(2) ? v.in_id(2) : -1;
  LoweredNode lowered;
  lowered.reads = {x, scale};
  if (fused != nullptr) lowered.reads.push_back(add.residual);
  if (bias >= 0) lowered.reads.push_back(bias);
  if (rows * cols == 0) return lowered;
  lowered.steps.push_back([=, eps = epsilon](const StepContext& c) {
    LayerNormArgs args = {.x = In(c, x, x_type),
                          .scale = F(c, scale),
                          .bias = bias >= 0 ? F(c, bias) : nullptr,
                          .y = Out(c, y, y_type),
                          .rows = rows,
                          .cols = cols,
                          .epsilon = eps};
    if (add.residual >= 0) {
      args.residual = In(c, add.residual, residual_type);
      args.residual_rows = add.residual_rows;
      args.sum = add.write_sum ? Out(c, add.sum, sum_type)
                               : FloatOut(nullptr, sum_type);
    }
    return c.kernels.LayerNorm(c.stream, args);
  });
  return lowered;
}

// -- Gather ------------------------------------------------------

absl::StatusOr<LoweredNode> LowerGather(const NodeView& v) {
  const Shape& data = v.in_shape(0);
  const size_t elem = v.in_element_bytes(0);  // float16 in FP16 mode
  const DataType index_type = v.in(1).info.dtype;
  if (elem != 1 && elem != 2 && elem != 4 && elem != 8) {
    return absl::UnimplementedError(absl::StrCat(
        "data of type ", std::string(DataTypeName(v.in(0).info.dtype))));
  }
  if (index_type != DataType::kInt64 && index_type != DataType::kInt32) {
    return absl::UnimplementedError("indices that are not int64 or int32");
  }
  auto attrs = v.resolved<GatherAttrs>();
  if (!attrs.ok()) return attrs.status();
  auto normalized = NormalizeAxis((*attrs)->axis, data.size());
  if (!normalized.ok()) return normalized.status();
  const int64_t axis = *normalized;
  const int64_t outer = Product(data, 0, axis), axis_dim = data[axis];
  const int64_t inner = Product(data, axis + 1, data.size());
  const int64_t num_indices = Count(v.in_shape(1));
  const bool int64_indices = index_type == DataType::kInt64;
  const int d = v.in_id(0), ix = v.in_id(1), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {d, ix};
  if (outer * num_indices * inner == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Gather(c.stream, {.data = c.addresses[d],
                                       .element_bytes = elem,
                                       .outer = outer,
                                       .axis_dim = axis_dim,
                                       .inner = inner,
                                       .indices = c.addresses[ix],
                                       .indices_int64 = int64_indices,
                                       .num_indices = num_indices,
                                       .y = c.addresses[y]});
  });
  return lowered;
}

// -- data movement ------------------------------------------------------

absl::StatusOr<LoweredNode> LowerView(const NodeView& v, bool allow_view) {
  const int x = v.in_id(0), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {x};
  if (*v.node().op_type == "Dropout" && v.node().outputs.size() > 1 &&
      v.node().outputs[1] >= 0) {
    // At inference the mask is all true: copied from a derived constant of
    // 1 bytes (the mask is bool).
    const int mask = v.out_id(1);
    const size_t bytes = v.out(1).byte_size;
    float ones;
    std::memset(&ones, 1, sizeof(ones));
    lowered.derived.push_back(std::vector<float>((bytes + 3) / 4, ones));
    if (bytes > 0) {
      lowered.steps.push_back([=](const StepContext& c) {
        return c.device.CopyOnDevice(c.stream, c.addresses[mask], c.derived[0],
                                     bytes);
      });
    }
  }
  if (allow_view) {
    lowered.view_of = x;
    return lowered;
  }
  const size_t bytes = v.out(0).byte_size;
  if (bytes == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.device.CopyOnDevice(c.stream, c.addresses[y], c.addresses[x],
                                 bytes);
  });
  return lowered;
}

absl::StatusOr<LoweredNode> LowerConcat(const NodeView& v) {
  const Shape& out = v.out_shape(0);
  auto attrs = v.resolved<ConcatAttrs>();
  if (!attrs.ok()) return attrs.status();
  const int64_t rank = static_cast<int64_t>(out.size());
  auto normalized = NormalizeAxis((*attrs)->axis, rank);
  if (!normalized.ok()) return normalized.status();
  const int64_t axis = *normalized;
  // Every input is stored as the output is (DeviceHalfUse::kMove).
  const size_t elem = v.out_type(0) != DeviceFloat::kFloat
                          ? sizeof(Half)
                          : ElementByteSize(v.out(0).info.dtype);
  if (elem == 0) return absl::UnimplementedError("variable-size elements");
  const size_t rows = Product(out, 0, axis);
  const size_t dst_pitch = Product(out, axis, out.size()) * elem;
  const int y = v.out_id(0);
  LoweredNode lowered;
  size_t offset = 0;
  for (int i = 0; i < v.num_inputs(); ++i) {
    const int x = v.in_id(i);
    const size_t row_bytes = Product(v.in_shape(i), axis, rank) * elem;
    lowered.reads.push_back(x);
    if (row_bytes > 0 && rows > 0) {
      lowered.steps.push_back([=](const StepContext& c) {
        return c.kernels.Copy2D(
            c.stream, {.dst = static_cast<char*>(c.addresses[y]) + offset,
                       .dst_pitch = dst_pitch,
                       .src = c.addresses[x],
                       .src_pitch = row_bytes,
                       .row_bytes = row_bytes,
                       .rows = rows});
      });
    }
    offset += row_bytes;
  }
  return lowered;
}

absl::StatusOr<LoweredNode> LowerTranspose(const NodeView& v) {
  const Shape& shape = v.in_shape(0);
  auto attrs = v.resolved<TransposeAttrs>();
  if (!attrs.ok()) return attrs.status();
  const std::vector<int64_t> perm = TransposePerm(**attrs, shape.size());
  const size_t elem = v.in_element_bytes(0);
  if (absl::Status s = device_ops::CheckElementCopy(elem, shape.size());
      !s.ok())
    return s;
  const int x = v.in_id(0), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {x};
  if (Count(shape) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Transpose(c.stream, {.x = c.addresses[x],
                                          .x_shape = shape,
                                          .perm = perm,
                                          .element_bytes = elem,
                                          .y = c.addresses[y]});
  });
  return lowered;
}

// Expand: input 0 broadcast to the output's shape (the planner has read the
// shape input; it is not read at run time).
absl::StatusOr<LoweredNode> LowerExpand(const NodeView& v) {
  const Shape& x_shape = v.in_shape(0);
  const Shape& y_shape = v.out_shape(0);
  const size_t elem = ElementByteSize(v.in(0).info.dtype);
  if (absl::Status s = device_ops::CheckElementCopy(elem, y_shape.size());
      !s.ok())
    return s;
  const int x = v.in_id(0), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {x};
  if (Count(y_shape) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Broadcast(c.stream, {.x = c.addresses[x],
                                          .x_shape = x_shape,
                                          .y_shape = y_shape,
                                          .element_bytes = elem,
                                          .y = c.addresses[y]});
  });
  return lowered;
}

// -- the registry ---------------------------------------------------------

enum class Family {
  kActivation,
  kBinary,
  kGemm,
  kMatMul,
  kSoftmax,
  kView,
  kConcat,
  kTranspose,
  kExpand,
  kLayerNorm,
  kGather,
  kCast,
  kTyped,
  kWhere,
  kGatherNd,
  kGatherElements,
  kCumSum,
  kArgMax,
  kSlice,
  kSplit,
  kPad,
  kQuantize,
  kResize,
  kSum,
  kConv,
  kPool,
  kLrn,
  kBatchNorm,
  kReduce
};

// Keyed by (internal domain?, op type): the ONNX operators, and the fused
// ones the graph optimizer makes (engine/optimizer/).
using RegistryKey = std::pair<bool, std::string>;

const std::map<RegistryKey, Family>& Registry() {
  static const auto* registry = [] {
    auto* r = new std::map<RegistryKey, Family>;
    for (const char* op :
         {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "Gelu", "Erf", "Sqrt",
          "Exp", "Pow", "HardSigmoid", "HardSwish", "Reciprocal", "Neg", "Abs",
          "Sin", "Cos", "Floor", "Ceil"})
      (*r)[{false, op}] = Family::kActivation;
    for (const char* op : {"Add", "Sub", "Mul", "Div"})
      (*r)[{false, op}] = Family::kBinary;
    for (const char* op :
         {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Dropout"})
      (*r)[{false, op}] = Family::kView;
    (*r)[{false, "Gemm"}] = Family::kGemm;
    (*r)[{false, "MatMul"}] = Family::kMatMul;
    (*r)[{false, "Softmax"}] = Family::kSoftmax;
    (*r)[{false, "Concat"}] = Family::kConcat;
    (*r)[{false, "Transpose"}] = Family::kTranspose;
    (*r)[{false, "Expand"}] = Family::kExpand;
    (*r)[{false, "LayerNormalization"}] = Family::kLayerNorm;
    (*r)[{false, "Gather"}] = Family::kGather;
    (*r)[{false, "Cast"}] = Family::kCast;
    for (const char* op :
         {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And",
          "Or", "Xor", "Not", "IsNaN", "IsInf", "Mod", "Max", "Min"})
      (*r)[{false, op}] = Family::kTyped;
    (*r)[{false, "Where"}] = Family::kWhere;
    (*r)[{false, "GatherND"}] = Family::kGatherNd;
    (*r)[{false, "GatherElements"}] = Family::kGatherElements;
    (*r)[{false, "CumSum"}] = Family::kCumSum;
    (*r)[{false, "ArgMax"}] = Family::kArgMax;
    (*r)[{false, "Slice"}] = Family::kSlice;
    (*r)[{false, "Split"}] = Family::kSplit;
    (*r)[{false, "Pad"}] = Family::kPad;
    (*r)[{false, "QuantizeLinear"}] = Family::kQuantize;
    (*r)[{false, "Resize"}] = Family::kResize;
    (*r)[{false, "Upsample"}] = Family::kResize;
    (*r)[{false, "DequantizeLinear"}] = Family::kQuantize;
    (*r)[{false, "Sum"}] = Family::kSum;
    (*r)[{false, "Conv"}] = Family::kConv;
    (*r)[{true, "FusedConv"}] = Family::kConv;
    for (const char* op :
         {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
      (*r)[{false, op}] = Family::kPool;
    (*r)[{false, "LRN"}] = Family::kLrn;
    (*r)[{false, "BatchNormalization"}] = Family::kBatchNorm;
    for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum",
                           "ReduceSumSquare", "ReduceL1", "ReduceL2"})
      (*r)[{false, op}] = Family::kReduce;
    (*r)[{true, "FusedGemm"}] = Family::kGemm;
    (*r)[{true, "FusedMatMul"}] = Family::kMatMul;
    (*r)[{true, "Gelu"}] = Family::kActivation;  // the erf/tanh patterns
    return r;
  }();
  return *registry;
}

absl::StatusOr<Family> FamilyOf(const PlanNode& node) {
  auto it = Registry().find({!node.domain->empty(), *node.op_type});
  if (it == Registry().end()) {
    return absl::UnimplementedError("no GPU kernel for this operator");
  }
  return it->second;
}

}  // namespace

ActivationSpec device_ops::DeviceFusedActivation(
    const FusedActivationAttr& attr) {
  using Kind = FusedActivationAttr::Kind;
  switch (attr.kind) {
    case Kind::kNone:
      return ActivationSpec{};
    case Kind::kRelu:
      return ActivationSpec{DeviceActivation::kRelu};
    case Kind::kLeakyRelu:
      return ActivationSpec{DeviceActivation::kLeakyRelu, attr.alpha};
    case Kind::kClip:
      return ActivationSpec{DeviceActivation::kClip, attr.alpha, attr.beta};
    case Kind::kSigmoid:
      return ActivationSpec{DeviceActivation::kSigmoid};
    case Kind::kTanh:
      return ActivationSpec{DeviceActivation::kTanh};
    case Kind::kSilu:
      return ActivationSpec{DeviceActivation::kSilu, attr.alpha};
    case Kind::kHardSwish:
      return ActivationSpec{DeviceActivation::kHardSwish};
    case Kind::kHardSigmoid:
      return ActivationSpec{DeviceActivation::kHardSigmoid, attr.alpha,
                            attr.beta};
    case Kind::kGeluErf:
      return ActivationSpec{DeviceActivation::kGeluErf};
    case Kind::kGeluTanh:
      return ActivationSpec{DeviceActivation::kGeluTanh};
  }
  return ActivationSpec{};
}

DeviceHalfUse HalfUseOf(const PlanNode& node) {
  auto family = FamilyOf(node);
  if (!family.ok()) return DeviceHalfUse::kNone;
  switch (*family) {
    case Family::kActivation:
    case Family::kBinary:
    case Family::kConv:
    case Family::kPool:
    case Family::kBatchNorm:
    case Family::kLayerNorm:
      return DeviceHalfUse::kCompute;
    case Family::kSoftmax:
      return DeviceHalfUse::kResult;
    case Family::kView:
      // Dropout's mask output is written from a float32 constant's bytes;
      // it is bool, so the storage pass never ties it.
    case Family::kConcat:
    case Family::kTranspose:
    case Family::kSlice:
    case Family::kSplit:
    case Family::kGather:
      return DeviceHalfUse::kMove;
    case Family::kGemm:
    case Family::kMatMul:
      return DeviceHalfUse::kProducts;
    default:
      return DeviceHalfUse::kNone;
  }
}

std::vector<std::string> DeviceOnnxOperators() {
  std::vector<std::string> ops;
  for (const auto& [key, family] : Registry()) {
    if (!key.first) ops.push_back(key.second);
  }
  return ops;  // std::map keeps them sorted
}

absl::Status CheckDeviceNode(const PlanNode& node, int64_t opset) {
  auto family = FamilyOf(node);
  if (!family.ok()) return family.status();
  auto channels_last = node.attributes->GetInt("channels_last", 0);
  if (!channels_last.ok()) return channels_last.status();
  if (*channels_last != 0 && *family != Family::kConv &&
      *family != Family::kPool && *family != Family::kBatchNorm) {
    return absl::UnimplementedError(
        "a channels-last node of an operator the GPU runs NCHW only");
  }
  // Every fused activation the schemas resolve has a device form.
  if (*family == Family::kActivation) return CheckActivation(node, opset);
  return absl::OkStatus();
}

absl::StatusOr<LoweredNode> LowerResidualLayerNorm(const NeutralPlan& plan,
                                                   const PlanNode& norm,
                                                   const FusedResidual& fused,
                                                   LoweringOptions options) {
  return LowerLayerNorm(NodeView(plan, norm, options), &fused);
}

absl::StatusOr<LoweredNode> LowerDeviceNode(const NeutralPlan& plan,
                                            const PlanNode& node,
                                            bool allow_view,
                                            LoweringOptions options) {
  auto family = FamilyOf(node);
  if (!family.ok()) return family.status();
  // STRING tensors hold host pointers (engine/string_ref.h).
  for (const std::vector<int>* ids : {&node.inputs, &node.outputs}) {
    for (int id : *ids) {
      if (id >= 0 && plan.values[id].info.dtype == DataType::kBytes)
        return absl::UnimplementedError(
            "STRING tensors run on the CPU executor only");
    }
  }
  if (options.storage != nullptr && HalfUseOf(node) == DeviceHalfUse::kNone) {
    for (const std::vector<int>* ids : {&node.inputs, &node.outputs}) {
      for (int id : *ids) {
        if (id >= 0 && (*options.storage)[id] != DeviceFloat::kFloat)
          return absl::InternalError(
              "a 16-bit value reaches an operator that reads float32 only");
      }
    }
  }
  const NodeView v(plan, node, options);
  switch (*family) {
    case Family::kActivation:
      return LowerActivation(v);
    case Family::kBinary:
      return LowerBinary(v);
    case Family::kGemm:
      return LowerGemm(v);
    case Family::kMatMul:
      return LowerMatMul(v);
    case Family::kSoftmax:
      return LowerSoftmax(v);
    case Family::kView:
      return LowerView(v, allow_view);
    case Family::kConcat:
      return LowerConcat(v);
    case Family::kTranspose:
      return LowerTranspose(v);
    case Family::kExpand:
      return LowerExpand(v);
    case Family::kLayerNorm:
      return LowerLayerNorm(v);
    case Family::kGather:
      return LowerGather(v);
    case Family::kCast:
      return device_ops::LowerCast(v);
    case Family::kTyped:
      return device_ops::LowerTyped(v);
    case Family::kWhere:
      return device_ops::LowerWhere(v);
    case Family::kGatherNd:
      return device_ops::LowerGatherNd(v);
    case Family::kGatherElements:
      return device_ops::LowerGatherElements(v);
    case Family::kCumSum:
      return device_ops::LowerCumSum(v);
    case Family::kArgMax:
      return device_ops::LowerArgMax(v);
    case Family::kSlice:
      return device_ops::LowerSlice(v);
    case Family::kSplit:
      return device_ops::LowerSplit(v);
    case Family::kPad:
      return device_ops::LowerPad(v);
    case Family::kQuantize:
      return device_ops::LowerQuantize(v);
    case Family::kResize:
      return device_ops::LowerResize(v);
    case Family::kSum:
      return LowerSum(v);
    case Family::kConv:
      return device_ops::LowerConv(v);
    case Family::kPool:
      return device_ops::LowerPool(v);
    case Family::kLrn:
      return device_ops::LowerLrn(v);
    case Family::kBatchNorm:
      return device_ops::LowerBatchNorm(v);
    case Family::kReduce:
      return device_ops::LowerReduce(v);
  }
  return absl::InternalError("unknown operator family");
}

}  // namespace coalesce
