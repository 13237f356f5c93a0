// Concat along `axis` (negative counts from the end). Any element type. A
// plan computes each input's chunk size once.
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"
#include "engine/schema/tensor_schema.h"
#include "engine/string_ref.h"
#include "kernels/cpu/copy.h"

namespace coalesce {
namespace {

// Bytes of a tensor of `shape` and `dtype` from `axis` inwards: what one
// input adds to each output row.
size_t ChunkBytes(const Shape& shape, DataType dtype, int64_t axis) {
  return DimProduct(shape, axis, shape.size()) * StorageByteSize(dtype);
}

// Concat for one plan's shapes.
class PreparedConcat : public PreparedKernel {
 public:
  PreparedConcat(std::vector<size_t> chunk_bytes, int64_t outer)
      : chunk_bytes_(std::move(chunk_bytes)),
        outer_(outer),
        sources_(chunk_bytes_.size()) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    for (size_t i = 0; i < sources_.size(); ++i) sources_[i] = in[i].data;
    kernels::Concat(sources_, chunk_bytes_, outer_, out[0].data);
    return absl::OkStatus();
  }

 private:
  std::vector<size_t> chunk_bytes_;
  int64_t outer_;
  std::vector<const void*> sources_;  // refilled by every Run
};

class ConcatOp : public SchemaKernel {
 public:
  ConcatOp(const OpNode& node, const ConcatAttrs& attrs)
      : SchemaKernel(node), axis_(attrs.axis) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& out_shape = *out[0].shape;
    const int64_t axis = *NormalizeAxis(axis_, out_shape.size());
    std::vector<const void*> sources;
    std::vector<size_t> chunk_bytes;
    for (const ConstTensorView& t : in) {
      sources.push_back(t.data);
      chunk_bytes.push_back(ChunkBytes(*t.shape, t.dtype, axis));
    }
    kernels::Concat(sources, chunk_bytes, DimProduct(out_shape, 0, axis),
                    out[0].data);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    const Shape& first = in[0].shape;
    absl::StatusOr<int64_t> axis = NormalizeAxis(axis_, first.size());
    if (!axis.ok()) return axis.status();
    std::vector<size_t> chunk_bytes;
    for (const TensorInfo& t : in)
      chunk_bytes.push_back(ChunkBytes(t.shape, t.dtype, *axis));
    return std::make_unique<PreparedConcat>(std::move(chunk_bytes),
                                            DimProduct(first, 0, *axis));
  }

 private:
  int64_t axis_;
};

}  // namespace

void RegisterConcatOp(OpRegistry& registry) {
  registry.Register("Concat", SchemaFactoryOf<ConcatOp, ConcatAttrs>());
}

}  // namespace coalesce
