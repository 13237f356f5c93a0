// MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool on the CPU
// (engine/schema/pool_schema.h says what they compute).
#include "kernels/cpu/pool.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/pool_schema.h"

namespace coalesce {
namespace {

static_assert(kMaxPoolSpatialAxes == kernels::kMaxPoolAxes);

// [N, spatial..., C] -> [N, C, spatial...], the dims the geometry reads.
Shape Planar(const Shape& shape) {
  Shape planar = {shape[0], shape.back()};
  planar.insert(planar.end(), shape.begin() + 1, shape.end() - 1);
  return planar;
}

// The kernels' windows of a planar input `shape` ([N, C, spatial...]).
absl::StatusOr<kernels::PoolGeometry> ResolveGeometry(const PoolAttrs& a,
                                                      const Shape& shape) {
  const std::vector<int64_t> spatial(shape.begin() + 2, shape.end());
  absl::StatusOr<PoolWindows> w = ResolvePoolWindows(a, spatial);
  if (!w.ok()) return w.status();
  kernels::PoolGeometry g;
  g.planes = shape[0] * shape[1];
  g.axes = static_cast<int>(a.kernel.size());
  for (int i = 0; i < g.axes; ++i) {
    g.in[i] = spatial[i];
    g.out[i] = w->out[i];
    g.kernel[i] = a.kernel[i];
    g.strides[i] = a.strides[i];
    g.dilations[i] = a.dilations[i];
    g.pads_begin[i] = w->pads_begin[i];
    g.pads_end[i] = w->pads_end[i];
  }
  return g;
}

class PoolOp : public SchemaKernel {
 public:
  PoolOp(const OpNode& node, const PoolAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    absl::StatusOr<kernels::PoolGeometry> g = Geometry(*in[0].shape);
    if (!g.ok()) return g.status();
    if (attrs_.channels_last) {
      const int64_t channels = in[0].shape->back();
      if (!attrs_.max) {
        kernels::AveragePoolChannelsLast(*g, channels, in[0].as<float>(),
                                         attrs_.count_include_pad,
                                         out[0].as<float>());
      } else {
        kernels::MaxPoolChannelsLast(*g, channels, in[0].as<float>(),
                                     out[0].as<float>());
      }
      return absl::OkStatus();
    }
    if (!attrs_.max) {
      kernels::AveragePool(*g, in[0].as<float>(), attrs_.count_include_pad,
                           out[0].as<float>());
      return absl::OkStatus();
    }
    int64_t* indices = out.size() > 1 ? out[1].as<int64_t>() : nullptr;
    kernels::MaxPool(*g, in[0].as<float>(), out[0].as<float>(), indices,
                     attrs_.column_major_indices);
    return absl::OkStatus();
  }

 private:
  // The windows of input `shape`; channels-last: one plane per image.
  absl::StatusOr<kernels::PoolGeometry> Geometry(const Shape& shape) const {
    if (!attrs_.channels_last) return ResolveGeometry(attrs_, shape);
    if (shape.size() < 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("channels-last input of shape ", ShapeToString(shape),
                       " has no spatial dims"));
    }
    absl::StatusOr<kernels::PoolGeometry> g =
        ResolveGeometry(attrs_, Planar(shape));
    if (g.ok()) g->planes = shape[0];
    return g;
  }

  const PoolAttrs attrs_;
};

// GlobalMaxPool and GlobalAveragePool: [N, C, spatial...] -> [N, C, 1...].
class GlobalPoolOp : public SchemaKernel {
 public:
  GlobalPoolOp(const OpNode& node, const GlobalPoolAttrs& attrs)
      : SchemaKernel(node),
        max_(attrs.max),
        channels_last_(attrs.channels_last) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    if (channels_last_) {
      const int64_t plane_size = DimProduct(s, 1, s.size() - 1);
      if (max_) {
        kernels::GlobalMaxPoolChannelsLast(in[0].as<float>(), s[0], plane_size,
                                           s.back(), out[0].as<float>());
      } else {
        kernels::GlobalAveragePoolChannelsLast(
            in[0].as<float>(), s[0], plane_size, s.back(), out[0].as<float>());
      }
      return absl::OkStatus();
    }
    const int64_t planes = s[0] * s[1];
    const int64_t plane_size = DimProduct(s, 2, s.size());
    if (max_) {
      kernels::GlobalMaxPool(in[0].as<float>(), planes, plane_size,
                             out[0].as<float>());
    } else {
      kernels::GlobalAveragePool(in[0].as<float>(), planes, plane_size,
                                 out[0].as<float>());
    }
    return absl::OkStatus();
  }

 private:
  const bool max_;
  const bool channels_last_;  // X [N, spatial..., C], Y [N, 1..., C]
};

}  // namespace

void RegisterPoolOps(OpRegistry& registry) {
  for (const char* op : {"MaxPool", "AveragePool"})
    registry.Register(op, SchemaFactoryOf<PoolOp, PoolAttrs>());
  for (const char* op : {"GlobalMaxPool", "GlobalAveragePool"})
    registry.Register(op, SchemaFactoryOf<GlobalPoolOp, GlobalPoolAttrs>());
}

}  // namespace coalesce
