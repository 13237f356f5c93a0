#include "engine/device/kernel_checks.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/kernel_args.h"
#include "engine/shape.h"

namespace coalesce {
namespace {

namespace kc = kernels::cuda;

absl::Status NoBroadcast(const std::vector<const Shape*>& inputs,
                         const Shape& y) {
  std::string shapes;
  for (const Shape* s : inputs)
    absl::StrAppend(&shapes, ShapeToString(*s), " ");
  return absl::InvalidArgumentError(absl::StrCat(
      "shapes ", shapes, "do not broadcast to ", ShapeToString(y)));
}

std::string TypeName(DataType type) { return std::string(DataTypeName(type)); }

}  // namespace

absl::StatusOr<int64_t> CheckBinary(const BinaryArgs& a,
                                    kc::BroadcastIndexer* ix) {
  const int64_t n = BroadcastIndexerFor(a.a_shape, a.b_shape, ix);
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shapes ", ShapeToString(a.a_shape), " and ",
                     ShapeToString(a.b_shape), " do not broadcast"));
  }
  return n;
}

absl::StatusOr<int64_t> CheckTranspose(const TransposeArgs& a,
                                       kc::TransposeIndexer* ix) {
  const int64_t n = TransposeIndexerFor(a.x_shape, a.perm, ix);
  if (n < 0) return absl::InvalidArgumentError("bad transpose permutation");
  return n;
}

absl::StatusOr<int64_t> CheckBroadcast(const BroadcastArgs& a,
                                       kc::TransposeIndexer* ix) {
  const int64_t n = ExpandIndexerFor(a.x_shape, a.y_shape, ix);
  if (n < 0) return NoBroadcast({&a.x_shape}, a.y_shape);
  return n;
}

absl::StatusOr<int64_t> CheckTyped(const TypedArgs& a, kc::ElementType* element,
                                   kc::TypedIndexer* ix) {
  if (!ElementTypeOf(a.type, element)) {
    return absl::InvalidArgumentError(
        absl::StrCat("typed kernels do not take ", TypeName(a.type)));
  }
  const int64_t n =
      kc::IsUnaryTyped(ToKernel(a.op))
          ? TypedIndexerFor({&a.a_shape}, a.y_shape, ix)
          : TypedIndexerFor({&a.a_shape, &a.b_shape}, a.y_shape, ix);
  if (n < 0) return NoBroadcast({&a.a_shape, &a.b_shape}, a.y_shape);
  return n;
}

absl::StatusOr<int64_t> CheckWhere(const WhereArgs& a, kc::TypedIndexer* ix) {
  const std::vector<const Shape*> inputs = {&a.cond_shape, &a.x_shape,
                                            &a.z_shape};
  const int64_t n = TypedIndexerFor(inputs, a.y_shape, ix);
  if (n < 0) return NoBroadcast(inputs, a.y_shape);
  if (a.element_bytes != 1 && a.element_bytes != 2 && a.element_bytes != 4 &&
      a.element_bytes != 8) {
    return absl::InvalidArgumentError("Where of elements of this size");
  }
  return n;
}

absl::Status CheckCast(const CastArgs& a, kc::ElementType* from,
                       kc::ElementType* to) {
  if (!ElementTypeOf(a.from, from) || !ElementTypeOf(a.to, to)) {
    return absl::InvalidArgumentError(absl::StrCat("cast kernel does not take ",
                                                   TypeName(a.from), " to ",
                                                   TypeName(a.to)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CheckStridedCopy(const StridedCopyArgs& a,
                                         kc::TransposeIndexer* ix) {
  const int64_t n = StridedIndexerFor(a.strides, a.y_shape, ix);
  if (n < 0) return absl::InvalidArgumentError("strided copy above rank 8");
  if (!StridedViewInBounds(a.x_count, a.offset, a.strides, a.y_shape)) {
    return absl::InvalidArgumentError("strided copy reads outside its source");
  }
  return n;
}

absl::StatusOr<int64_t> CheckPad(const PadArgs& a, kc::PadIndexer* ix) {
  const int64_t n = PadIndexerFor(a, ix);
  if (n < 0) return absl::InvalidArgumentError("Pad shapes");
  return n;
}

absl::Status CheckQuantize(const QuantizeArgs& a, kc::QuantType* type) {
  if (!QuantTypeOf(a.quantized, type) ||
      (a.quantize && a.quantized == DataType::kInt32)) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantized type ", TypeName(a.quantized)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CheckResize(const ResizeArgs& a,
                                    kc::ResizeIndexer* ix) {
  const int64_t n = ResizeIndexerFor(a, ix);
  if (n < 0) return absl::InvalidArgumentError("a Resize the kernel lacks");
  return n;
}

absl::Status CheckGatherNd(const GatherNdArgs& a, kc::GatherNdIndexer* ix) {
  if (!GatherNdIndexerFor(a, ix)) {
    return absl::InvalidArgumentError("GatherND index tuples above 8");
  }
  return absl::OkStatus();
}

absl::Status CheckGatherElements(const GatherElementsArgs& a,
                                 kc::GatherElementsIndexer* ix) {
  if (!GatherElementsIndexerFor(a, ix)) {
    return absl::InvalidArgumentError("GatherElements shapes or axis");
  }
  return absl::OkStatus();
}

absl::Status CheckOne16BitType(std::initializer_list<DeviceFloat> types,
                               absl::string_view primitive) {
  DeviceFloat seen = DeviceFloat::kFloat;
  for (DeviceFloat t : types) {
    if (t == DeviceFloat::kFloat) continue;
    if (seen != DeviceFloat::kFloat && t != seen) {
      return absl::InvalidArgumentError(
          absl::StrCat(primitive, ": operands of two 16-bit types (",
                       DeviceFloatName(seen), ", ", DeviceFloatName(t), ")"));
    }
    seen = t;
  }
  return absl::OkStatus();
}

absl::Status CheckLayerNorm(const LayerNormArgs& a) {
  if (a.rows < 0 || a.cols < 0)
    return absl::InvalidArgumentError("layer norm size below 0");
  const DeviceFloat none = DeviceFloat::kFloat;
  if (absl::Status s = CheckOne16BitType(
          {a.x.type, a.residual.data != nullptr ? a.residual.type : none,
           a.sum.data != nullptr ? a.sum.type : none, a.y.type},
          "layer norm");
      !s.ok()) {
    return s;
  }
  if (a.residual.data == nullptr) {
    // The sum is x + residual: without a residual there is none to write
    // (the CUDA kernels and the simulated device would disagree on it).
    if (a.sum.data != nullptr) {
      return absl::InvalidArgumentError(
          "layer norm: a sum to write without a residual");
    }
    return absl::OkStatus();
  }
  if (a.residual_rows <= 0 || a.rows % a.residual_rows != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer norm residual of ", a.residual_rows,
                     " rows does not repeat over ", a.rows, " rows"));
  }
  if (a.y.data == a.x.data || a.y.data == a.residual.data ||
      (a.sum.data != nullptr && a.sum.data == a.y.data)) {
    return absl::InvalidArgumentError(
        "layer norm with a residual: y or sum over an input");
  }
  return absl::OkStatus();
}

absl::Status CheckAttention(const AttentionArgs& a) {
  for (int64_t size : {a.batch, a.heads, a.q_len, a.kv_len, a.head_dim}) {
    if (size < 0) return absl::InvalidArgumentError("attention size below 0");
  }
  if (a.head_dim > kMaxAttentionHeadDim) {
    return absl::InvalidArgumentError(absl::StrCat("attention head dimension ",
                                                   a.head_dim, " above ",
                                                   kMaxAttentionHeadDim));
  }
  if (a.q.type != a.k.type || a.q.type != a.v.type) {
    return absl::InvalidArgumentError(
        "attention q, k and v of different types");
  }
  if (a.pack != nullptr && (a.q_len != a.kv_len || a.packed_rows < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention over ", a.packed_rows, " packed rows with ",
                     a.q_len, " queries and ", a.kv_len, " keys a sequence"));
  }
  for (const auto* s :
       {&a.q_strides, &a.k_strides, &a.v_strides, &a.out_strides}) {
    if ((*s)[3] != 1 && a.head_dim > 1) {
      return absl::InvalidArgumentError(
          "attention head dimension not contiguous");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckArithmetic(DataType type, absl::string_view primitive,
                             kc::ElementType* element) {
  if (type == DataType::kFp32 || type == DataType::kInt64 ||
      type == DataType::kInt32) {
    kc::ElementType unused;
    ElementTypeOf(type, element != nullptr ? element : &unused);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      primitive, " of ", TypeName(type), "; expected float32, int64 or int32"));
}

}  // namespace coalesce
