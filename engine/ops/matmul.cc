// MatMul with NumPy semantics: N-d operands are stacks of matrices whose batch
// dimensions broadcast; a 1-D A is a row vector and a 1-D B a column vector,
// and the added dimension is dropped from the result.
//
// FusedMatMul (internal domain) is MatMul + a bias [N] added to every row
// (optional third input) + a residual z (optional fourth input, broadcast
// with the product NumPy-style) + an activation (fused_activation_attr.h):
// y = act(A B + bias + z), which the graph optimizer makes from MatMul ->
// Add -> Add -> Relu chains.
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/fused_activation_attr.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/gemm_schema.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fused_activation.h"
#include "kernels/cpu/gemm.h"

namespace coalesce {
namespace {

// Both operands as stacks of matrices: batch dims + [rows, cols].
struct MatMulDims {
  Shape a_batch, b_batch, out_batch;
  int64_t m = 0, k = 0, n = 0;
};

absl::StatusOr<MatMulDims> Analyze(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) {
    return absl::InvalidArgumentError("MatMul operands must have rank >= 1");
  }
  MatMulDims d;
  const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  const Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  d.m = a2[a2.size() - 2];
  d.k = a2[a2.size() - 1];
  d.n = b2[b2.size() - 1];
  if (b2[b2.size() - 2] != d.k) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inner dimensions differ: A ", ShapeToString(a), " has K=", d.k, ", B ",
        ShapeToString(b), " has K=", b2[b2.size() - 2]));
  }
  d.a_batch.assign(a2.begin(), a2.end() - 2);
  d.b_batch.assign(b2.begin(), b2.end() - 2);
  auto batch = kernels::BroadcastShapes(d.a_batch, d.b_batch);
  if (!batch) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch dimensions of A ", ShapeToString(a), " and B ",
                     ShapeToString(b), " do not broadcast"));
  }
  d.out_batch = *batch;
  return d;
}

// Offset (in matrices) of batch entry `index` of `out_batch` within an operand
// whose batch dims `dims` broadcast to it.
int64_t BatchOffset(int64_t index, const Shape& dims, const Shape& out_batch) {
  const size_t pad = out_batch.size() - dims.size();
  int64_t offset = 0, stride = 1;
  for (size_t d = out_batch.size(); d-- > 0;) {
    const int64_t idx = index % out_batch[d];
    index /= out_batch[d];
    if (d >= pad && dims[d - pad] != 1) offset += idx * stride;
    if (d >= pad) stride *= dims[d - pad];
  }
  return offset;
}

class MatMulOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    const MatMulAttrs* attrs = node.resolved_as<MatMulAttrs>();
    if (attrs == nullptr) return absl::InternalError("MatMul has no schema");
    auto op = std::make_unique<MatMulOp>();
    op->activation_ = ToKernelActivation(attrs->activation);
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    for (int i : {0, 1}) {
      if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
        return s;
    }
    absl::StatusOr<MatMulDims> d = Analyze(in[0].shape, in[1].shape);
    if (!d.ok()) return d.status();
    Shape shape = d->out_batch;
    if (in[0].shape.size() > 1) shape.push_back(d->m);
    if (in[1].shape.size() > 1) shape.push_back(d->n);
    if (HasBias(in)) {
      if (absl::Status s = ExpectInputType(in, 2, DataType::kFp32); !s.ok())
        return s;
      if (in[2].shape != Shape{d->n}) {
        return absl::InvalidArgumentError(absl::StrCat(
            "bias ", ShapeToString(in[2].shape), " must be [", d->n, "]"));
      }
    }
    if (HasResidual(in)) {
      if (absl::Status s = ExpectInputType(in, 3, DataType::kFp32); !s.ok())
        return s;
      auto with_z = kernels::BroadcastShapes(shape, in[3].shape);
      if (!with_z) {
        return absl::InvalidArgumentError(absl::StrCat(
            "residual ", ShapeToString(in[3].shape),
            " does not broadcast with the product ", ShapeToString(shape)));
      }
      shape = *std::move(with_z);
    }
    out[0].dtype = DataType::kFp32;
    out[0].shape = std::move(shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    absl::StatusOr<MatMulDims> d = Analyze(*in[0].shape, *in[1].shape);
    if (!d.ok()) return d.status();
    if (HasResidual(in)) {
      if (absl::Status s = MultiplyAddResidual(*d, in, out); !s.ok()) return s;
    } else if (absl::Status s = Multiply(*d, in, out); !s.ok()) {
      return s;
    }
    kernels::ApplyFusedActivation(
        activation_, out[0].as<float>(),
        DimProduct(*out[0].shape, 0, out[0].shape->size()));
    return absl::OkStatus();
  }

 private:
  template <typename Span>
  static bool HasBias(const Span& in) {
    return in.size() > 2 && in[2].present();
  }

  template <typename Span>
  static bool HasResidual(const Span& in) {
    return in.size() > 3 && in[3].present();
  }

  // The product's shape: the output's, unless z broadcast it larger.
  static Shape ProductShape(const MatMulDims& d, const Shape& a,
                            const Shape& b) {
    Shape shape = d.out_batch;
    if (a.size() > 1) shape.push_back(d.m);
    if (b.size() > 1) shape.push_back(d.n);
    return shape;
  }

  // out = A B + bias + z: the product (and bias) into out, or into a
  // buffer of its own when z broadcasts it larger, then z added.
  static absl::Status MultiplyAddResidual(const MatMulDims& d,
                                          absl::Span<const ConstTensorView> in,
                                          absl::Span<const TensorView> out) {
    const Shape product = ProductShape(d, *in[0].shape, *in[1].shape);
    std::vector<float> buffer;
    TensorView target = out[0];
    if (product != *out[0].shape) {
      buffer.resize(DimProduct(product, 0, product.size()));
      target.data = reinterpret_cast<char*>(buffer.data());
      target.shape = &product;
    }
    absl::Status s = Multiply(d, in, absl::MakeConstSpan(&target, 1));
    if (!s.ok()) return s;
    kernels::BroadcastBinary(kernels::BinaryOp::kAdd, target.as<float>(),
                             product, in[3].as<float>(), *in[3].shape,
                             out[0].as<float>());
    return absl::OkStatus();
  }

  // The product, plus the bias when there is one (as C with beta 1).
  static absl::Status Multiply(const MatMulDims& dims,
                               absl::Span<const ConstTensorView> in,
                               absl::Span<const TensorView> out) {
    const MatMulDims* d = &dims;
    float beta = 0.0f;
    if (HasBias(in)) {
      const int64_t rows =
          DimProduct(*out[0].shape, 0, out[0].shape->size()) / d->n;
      kernels::BroadcastToMatrix(in[2].as<float>(), 1, d->n, rows, d->n,
                                 out[0].as<float>());
      beta = 1.0f;
    }
    const float* a = in[0].as<float>();
    const float* b = in[1].as<float>();
    float* y = out[0].as<float>();
    const int64_t a_batches = DimProduct(d->a_batch, 0, d->a_batch.size());
    const int64_t batches = DimProduct(d->out_batch, 0, d->out_batch.size());
    if (DimProduct(d->b_batch, 0, d->b_batch.size()) == 1 &&
        a_batches == batches) {
      // B is one matrix: fold A's batch into its rows, one large product.
      return kernels::Sgemm(
          {.m = batches * d->m, .n = d->n, .k = d->k, .beta = beta}, a, b, y);
    }
    return kernels::SgemmBatch(
        {.m = d->m, .n = d->n, .k = d->k, .beta = beta}, batches,
        [&](int64_t i) {
          return kernels::GemmOperands{
              .a = a + BatchOffset(i, d->a_batch, d->out_batch) * d->m * d->k,
              .b = b + BatchOffset(i, d->b_batch, d->out_batch) * d->k * d->n,
              .c = y + i * d->m * d->n};
        });
  }

  kernels::FusedActivation activation_;
};

}  // namespace

void RegisterMatMulOp(OpRegistry& registry) {
  registry.Register("MatMul", FactoryOf<MatMulOp>());
  registry.RegisterInternal("FusedMatMul", FactoryOf<MatMulOp>());
}

}  // namespace coalesce
