// The typed elementwise family of the device registry: the integer and
// boolean operators exporters write for attention masks and position ids
// (comparisons, And/Or/Xor/Not, IsNaN/IsInf, Where, Cast, integer
// arithmetic, Max/Min), lowered onto DeviceKernels::Typed, Where and Cast;
// and QuantizeLinear/DequantizeLinear (QDQ models), reading their schema's
// attributes (engine/schema/quantize_schema.h).
// Float32 Add/Sub/Mul/Div keep the float Binary kernel (device_ops.cc).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/device_ops_internal.h"
#include "engine/schema/elementwise_schema.h"
#include "engine/schema/quantize_schema.h"

namespace coalesce {
namespace device_ops {
namespace {

struct TypedOpInfo {
  DeviceTypedOp op;
  enum Operands { kArithmetic, kComparable, kBool, kFloat } operands;
};

// The operator's typed op and the operand types it takes: kArithmetic
// (float32, int64, int32), kComparable (those and bool), kBool, kFloat.
absl::StatusOr<TypedOpInfo> TypedOpOf(const NodeView& v) {
  const std::string& op = *v.node().op_type;
  using D = DeviceTypedOp;
  if (op == "Add") return TypedOpInfo{D::kAdd, TypedOpInfo::kArithmetic};
  if (op == "Sub") return TypedOpInfo{D::kSub, TypedOpInfo::kArithmetic};
  if (op == "Mul") return TypedOpInfo{D::kMul, TypedOpInfo::kArithmetic};
  if (op == "Div") return TypedOpInfo{D::kDiv, TypedOpInfo::kArithmetic};
  if (op == "Max") return TypedOpInfo{D::kMax, TypedOpInfo::kArithmetic};
  if (op == "Min") return TypedOpInfo{D::kMin, TypedOpInfo::kArithmetic};
  if (op == "Neg") return TypedOpInfo{D::kNeg, TypedOpInfo::kArithmetic};
  if (op == "Abs") return TypedOpInfo{D::kAbs, TypedOpInfo::kArithmetic};
  if (op == "Mod") {
    auto attrs = v.resolved<ModAttrs>();
    if (!attrs.ok()) return attrs.status();
    return TypedOpInfo{(*attrs)->fmod ? D::kFmod : D::kMod,
                       TypedOpInfo::kArithmetic};
  }
  if (op == "Equal") return TypedOpInfo{D::kEqual, TypedOpInfo::kComparable};
  if (op == "Less") return TypedOpInfo{D::kLess, TypedOpInfo::kArithmetic};
  if (op == "LessOrEqual")
    return TypedOpInfo{D::kLessOrEqual, TypedOpInfo::kArithmetic};
  if (op == "Greater")
    return TypedOpInfo{D::kGreater, TypedOpInfo::kArithmetic};
  if (op == "GreaterOrEqual")
    return TypedOpInfo{D::kGreaterOrEqual, TypedOpInfo::kArithmetic};
  if (op == "And") return TypedOpInfo{D::kAnd, TypedOpInfo::kBool};
  if (op == "Or") return TypedOpInfo{D::kOr, TypedOpInfo::kBool};
  if (op == "Xor") return TypedOpInfo{D::kXor, TypedOpInfo::kBool};
  if (op == "Not") return TypedOpInfo{D::kNot, TypedOpInfo::kBool};
  if (op == "IsNaN") return TypedOpInfo{D::kIsNaN, TypedOpInfo::kFloat};
  if (op == "IsInf") {
    auto attrs = v.resolved<FloatClassAttrs>();
    if (!attrs.ok()) return attrs.status();
    const bool neg = (*attrs)->negative, pos = (*attrs)->positive;
    if (!neg && !pos) {
      return absl::UnimplementedError(
          "IsInf detecting neither sign (always false)");
    }
    const D test = !neg ? D::kIsPosInf : !pos ? D::kIsNegInf : D::kIsInf;
    return TypedOpInfo{test, TypedOpInfo::kFloat};
  }
  return absl::InternalError(absl::StrCat(op, " is not a typed operator"));
}

absl::Status CheckOperandType(const NodeView& v, int i,
                              TypedOpInfo::Operands operands) {
  const DataType t = v.in(i).info.dtype;
  bool ok = false;
  switch (operands) {
    case TypedOpInfo::kArithmetic:
      ok = t == DataType::kFp32 || t == DataType::kInt64 ||
           t == DataType::kInt32;
      break;
    case TypedOpInfo::kComparable:
      ok = t == DataType::kFp32 || t == DataType::kInt64 ||
           t == DataType::kInt32 || t == DataType::kBool;
      break;
    case TypedOpInfo::kBool:
      ok = t == DataType::kBool;
      break;
    case TypedOpInfo::kFloat:
      ok = t == DataType::kFp32;
      break;
  }
  if (ok) return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrCat("input ", i, " is ", std::string(DataTypeName(t)),
                   "; the GPU runs this operator on float32, int64, int32 or "
                   "bool as ONNX allows"));
}

absl::Status CheckRank(const NodeView& v) {
  for (int i = 0; i < v.num_inputs(); ++i) {
    if (v.has_input(i) && v.in_shape(i).size() > 8)
      return absl::UnimplementedError("rank above 8");
  }
  if (v.out_shape(0).size() > 8)
    return absl::UnimplementedError("rank above 8");
  return absl::OkStatus();
}

// A step running Typed(`args`) over the values a and b into y.
DeviceStep TypedStep(TypedArgs args, int a, int b, int y) {
  return [=](const StepContext& c) {
    TypedArgs run = args;
    run.a = c.addresses[a];
    run.b = c.addresses[b];
    run.y = c.addresses[y];
    return c.kernels.Typed(c.stream, run);
  };
}

}  // namespace

// Every typed operator of one or more inputs. Variadic Max and Min fold
// their inputs pairwise into the output (each step broadcasts to the
// output's shape, so the output may be read as it is written).
absl::StatusOr<LoweredNode> LowerTyped(const NodeView& v) {
  auto info = TypedOpOf(v);
  if (!info.ok()) return info.status();
  if (absl::Status s = CheckRank(v); !s.ok()) return s;
  std::vector<int> inputs;
  for (int i = 0; i < v.num_inputs(); ++i) {
    if (!v.has_input(i)) continue;
    if (absl::Status s = CheckOperandType(v, i, info->operands); !s.ok())
      return s;
    inputs.push_back(i);
  }
  if (inputs.empty()) return absl::InvalidArgumentError("no inputs");
  const DataType type = v.in(inputs[0]).info.dtype;
  const DeviceTypedOp op = info->op;
  const int y = v.out_id(0);
  const Shape y_shape = v.out_shape(0);
  LoweredNode lowered;
  for (int i : inputs) lowered.reads.push_back(v.in_id(i));
  if (Count(y_shape) == 0) return lowered;
  const bool unary = IsUnary(op);
  if (unary || inputs.size() == 1) {
    // One input: the unary op, or a one-input Max/Min (a broadcast copy).
    const int x = v.in_id(inputs[0]);
    const Shape x_shape = v.in_shape(inputs[0]);
    const DeviceTypedOp one = unary ? op : DeviceTypedOp::kMax;
    lowered.steps.push_back(TypedStep({.op = one,
                                       .type = type,
                                       .a_shape = x_shape,
                                       .b_shape = x_shape,
                                       .y_shape = y_shape},
                                      x, x, y));
    return lowered;
  }
  for (size_t k = 1; k < inputs.size(); ++k) {
    const int a = k == 1 ? v.in_id(inputs[0]) : y;
    const Shape a_shape = k == 1 ? v.in_shape(inputs[0]) : y_shape;
    const int b = v.in_id(inputs[k]);
    const Shape b_shape = v.in_shape(inputs[k]);
    lowered.steps.push_back(TypedStep({.op = op,
                                       .type = type,
                                       .a_shape = a_shape,
                                       .b_shape = b_shape,
                                       .y_shape = y_shape},
                                      a, b, y));
  }
  return lowered;
}

absl::StatusOr<LoweredNode> LowerWhere(const NodeView& v) {
  if (absl::Status s = CheckRank(v); !s.ok()) return s;
  if (v.in(0).info.dtype != DataType::kBool) {
    return absl::InvalidArgumentError("condition that is not bool");
  }
  const size_t elem = ElementByteSize(v.out(0).info.dtype);
  if (absl::Status s = CheckElementCopy(elem, v.out_shape(0).size()); !s.ok())
    return s;
  const int cond = v.in_id(0), x = v.in_id(1), z = v.in_id(2);
  const int y = v.out_id(0);
  const Shape cond_shape = v.in_shape(0), x_shape = v.in_shape(1),
              z_shape = v.in_shape(2), y_shape = v.out_shape(0);
  LoweredNode lowered;
  lowered.reads = {cond, x, z};
  if (Count(y_shape) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Where(c.stream, {.cond = c.addresses[cond],
                                      .cond_shape = cond_shape,
                                      .x = c.addresses[x],
                                      .x_shape = x_shape,
                                      .z = c.addresses[z],
                                      .z_shape = z_shape,
                                      .element_bytes = elem,
                                      .y = c.addresses[y],
                                      .y_shape = y_shape});
  });
  return lowered;
}

absl::StatusOr<LoweredNode> LowerCast(const NodeView& v) {
  const DataType from = v.in(0).info.dtype, to = v.out(0).info.dtype;
  for (DataType t : {from, to}) {
    if (t != DataType::kFp32 && t != DataType::kInt64 &&
        t != DataType::kInt32 && t != DataType::kUint8 &&
        t != DataType::kBool) {
      return absl::UnimplementedError(absl::StrCat(
          "Cast from ", std::string(DataTypeName(from)), " to ",
          std::string(DataTypeName(to)),
          "; the GPU casts between float32, int64, int32, uint8 and bool"));
    }
  }
  const int x = v.in_id(0), y = v.out_id(0);
  const int64_t n = Count(v.out_shape(0));
  LoweredNode lowered;
  lowered.reads = {x};
  if (n == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Cast(c.stream, {.from = from,
                                     .x = c.addresses[x],
                                     .to = to,
                                     .y = c.addresses[y],
                                     .count = n});
  });
  return lowered;
}

absl::StatusOr<LoweredNode> LowerQuantize(const NodeView& v) {
  auto attrs = v.resolved<QuantizeAttrs>();
  if (!attrs.ok()) return attrs.status();
  const bool quantize = (*attrs)->quantize;
  auto layout = QuantizeLayout(**attrs, v.in_shape(0), v.in_shape(1));
  if (!layout.ok()) return layout.status();
  QuantizeArgs args;
  args.quantize = quantize;
  args.quantized = quantize ? v.out(0).info.dtype : v.in(0).info.dtype;
  args.outer = layout->outer;
  args.channels = layout->channels;
  args.inner = layout->inner;
  const int x = v.in_id(0), scale = v.in_id(1), y = v.out_id(0);
  const int zero = v.has_input(2) ? v.in_id(2) : -1;
  LoweredNode lowered;
  lowered.reads = {x, scale};
  if (zero >= 0) lowered.reads.push_back(zero);
  if (Count(v.out_shape(0)) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    QuantizeArgs a = args;
    a.x = c.addresses[x];
    a.scale = F(c, scale);
    a.zero_point = zero >= 0 ? c.addresses[zero] : nullptr;
    a.y = c.addresses[y];
    return c.kernels.Quantize(c.stream, a);
  });
  return lowered;
}

}  // namespace device_ops
}  // namespace coalesce
