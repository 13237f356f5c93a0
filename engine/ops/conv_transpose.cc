// ConvTranspose (opsets 1 to 22): X is [N, C, spatial...] (1 to 3 spatial
// dims), W is [C, M / group, kernel...], the optional B is [M]. Computed per
// image and group as columns = W_g^T * X_g (one GEMM) scattered by col2im,
// then the bias. The output size comes from output_shape when given, else
// from strides, output_padding, the dilated kernel and pads (or auto_pad).
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"
#include "engine/schema/conv_schema.h"
#include "engine/schema/window_limits.h"
#include "kernels/cpu/col2im.h"
#include "kernels/cpu/gemm.h"

namespace coalesce {
namespace {

struct TransposeGeometry {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  kernels::Col2ImGeometry col2im;  // per group: channels = out_channels/group

  int64_t in_size() const {
    return DimProduct(col2im.in_spatial, 0, col2im.in_spatial.size());
  }
  int64_t out_size() const {
    return DimProduct(col2im.out_spatial, 0, col2im.out_spatial.size());
  }
  int64_t kernel_size() const {
    return DimProduct(col2im.kernel, 0, col2im.kernel.size());
  }
};

absl::Status RunTranspose(const TransposeGeometry& g, const float* x,
                          const float* w, const float* bias, float* y,
                          float* cols) {
  const int64_t cin = g.in_channels / g.group, cout = g.out_channels / g.group;
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  const int64_t rows = cout * g.kernel_size();
  std::fill(y, y + g.batch * g.out_channels * out_size, 0.0f);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const float* x_g = x + (n * g.in_channels + grp * cin) * in_size;
      const float* w_g = w + grp * cin * rows;
      float* y_g = y + (n * g.out_channels + grp * cout) * out_size;
      kernels::GemmParams p{.trans_a = true, .m = rows, .n = in_size, .k = cin};
      if (absl::Status s = kernels::Sgemm(p, w_g, x_g, cols); !s.ok()) return s;
      kernels::Col2ImAdd(g.col2im, cols, y_g);
    }
    if (bias == nullptr) continue;
    for (int64_t m = 0; m < g.out_channels; ++m) {
      float* plane = y + (n * g.out_channels + m) * out_size;
      for (int64_t i = 0; i < out_size; ++i) plane[i] += bias[m];
    }
  }
  return absl::OkStatus();
}

class PreparedConvTranspose : public PreparedKernel {
 public:
  explicit PreparedConvTranspose(TransposeGeometry g) : g_(std::move(g)) {}

  size_t scratch_bytes() const override {
    return (g_.out_channels / g_.group) * g_.kernel_size() * g_.in_size() *
           sizeof(float);
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    const float* bias =
        in.size() > 2 && in[2].present() ? in[2].as<float>() : nullptr;
    return RunTranspose(g_, in[0].as<float>(), in[1].as<float>(), bias,
                        out[0].as<float>(), reinterpret_cast<float*>(scratch));
  }

 private:
  TransposeGeometry g_;
};

class ConvTransposeOp : public PreparedOnlyKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    auto op = std::make_unique<ConvTransposeOp>();
    absl::StatusOr<ConvAttributes> attrs =
        ResolveConvAttributes(node.attributes());
    absl::StatusOr<std::vector<int64_t>> output_padding =
        node.GetInts("output_padding");
    absl::StatusOr<std::vector<int64_t>> output_shape =
        node.GetInts("output_shape");
    for (const absl::Status& s :
         {attrs.status(), output_padding.status(), output_shape.status()})
      if (!s.ok()) return s;
    op->attrs_ = *std::move(attrs);
    op->output_padding_ = *std::move(output_padding);
    op->output_shape_ = *std::move(output_shape);
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    absl::StatusOr<TransposeGeometry> g = Geometry(in);
    if (!g.ok()) return g.status();
    out[0].dtype = DataType::kFp32;
    out[0].shape = {g->batch, g->out_channels};
    for (int64_t d : g->col2im.out_spatial) out[0].shape.push_back(d);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<TransposeGeometry> g = Geometry(in);
    if (!g.ok()) return g.status();
    return std::make_unique<PreparedConvTranspose>(*std::move(g));
  }

 private:
  absl::StatusOr<TransposeGeometry> Geometry(
      absl::Span<const TensorInfo> in) const;
  absl::Status ResolveSpatial(TransposeGeometry& g) const;

  ConvAttributes attrs_;
  std::vector<int64_t> output_padding_, output_shape_;
};

absl::StatusOr<TransposeGeometry> ConvTransposeOp::Geometry(
    absl::Span<const TensorInfo> in) const {
  for (int i : {0, 1})
    if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
      return s;
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("X ", ShapeToString(x), " and W ", ShapeToString(w),
                     " must have the same rank, 3 to 5"));
  }
  if (x[1] != w[0] || x[1] % attrs_.group != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("X ", ShapeToString(x), " has ", x[1], " channels but W ",
                     ShapeToString(w), " expects ", w[0],
                     " (divisible by group ", attrs_.group, ")"));
  }
  TransposeGeometry g{.batch = x[0],
                      .in_channels = x[1],
                      .out_channels = w[1] * attrs_.group,
                      .group = attrs_.group};
  if (in.size() > 2 && in[2].present()) {
    if (absl::Status s = ExpectInputType(in, 2, DataType::kFp32); !s.ok())
      return s;
    if (in[2].shape != Shape{g.out_channels}) {
      return absl::InvalidArgumentError(absl::StrCat(
          "B ", ShapeToString(in[2].shape), " must be [", g.out_channels, "]"));
    }
  }
  g.col2im.channels = w[1];
  g.col2im.in_spatial.assign(x.begin() + 2, x.end());
  g.col2im.kernel.assign(w.begin() + 2, w.end());
  if (absl::Status s = ResolveSpatial(g); !s.ok()) return s;
  return g;
}

absl::Status ConvTransposeOp::ResolveSpatial(TransposeGeometry& g) const {
  kernels::Col2ImGeometry& c = g.col2im;
  const size_t rank = c.in_spatial.size();
  // Conv's rule checks the per-axis attributes; its output size is unused.
  ConvAttributes plain = attrs_;
  plain.auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> large_input(rank, 1 << 30);
  absl::StatusOr<SpatialGeometry> s =
      ResolveConvGeometry(plain, large_input, c.kernel);
  if (!s.ok()) return s.status();
  std::vector<int64_t> out_pad = output_padding_;
  if (out_pad.empty()) out_pad.assign(rank, 0);
  bool pads_in_range = out_pad.size() == rank;
  for (int64_t p : out_pad)
    pads_in_range = pads_in_range && p >= 0 && p <= kMaxWindowAttribute;
  if (!pads_in_range) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output_padding [", absl::StrJoin(output_padding_, ","), "] needs ",
        rank, " values in [0, ", kMaxWindowAttribute, "]"));
  }
  c.strides = s->strides;
  c.dilations = s->dilations;
  c.pads_begin = s->pads_begin;
  c.out_spatial.resize(rank);
  const bool explicit_shape = !output_shape_.empty();
  if (explicit_shape && output_shape_.size() < rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("output_shape [", absl::StrJoin(output_shape_, ","),
                     "] needs ", rank, " spatial values"));
  }
  for (size_t i = 0; i < rank; ++i) {
    const int64_t full = c.strides[i] * (c.in_spatial[i] - 1) + out_pad[i] +
                         (c.kernel[i] - 1) * c.dilations[i] + 1;
    const bool same = attrs_.auto_pad == AutoPad::kSameUpper ||
                      attrs_.auto_pad == AutoPad::kSameLower;
    if (explicit_shape || same) {
      const int64_t target =
          explicit_shape ? output_shape_[output_shape_.size() - rank + i]
                         : c.in_spatial[i] * c.strides[i];
      if (target < 1 || target > kMaxShapeProduct) {
        return absl::InvalidArgumentError(
            absl::StrCat("output spatial dim ", i, " would be ", target));
      }
      const int64_t total = full - target;
      c.pads_begin[i] = attrs_.auto_pad == AutoPad::kSameUpper
                            ? total / 2
                            : total - total / 2;
      c.out_spatial[i] = target;
    } else if (attrs_.auto_pad == AutoPad::kValid) {
      c.pads_begin[i] = 0;
      c.out_spatial[i] = full;
    } else {
      c.out_spatial[i] = full - s->pads_begin[i] - s->pads_end[i];
    }
    if (c.out_spatial[i] < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output spatial dim ", i, " would be ", c.out_spatial[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterConvTransposeOp(OpRegistry& registry) {
  registry.Register("ConvTranspose", FactoryOf<ConvTransposeOp>());
}

}  // namespace coalesce
