#include "kernels/cpu/transpose_primitive.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dnnl_util.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace coalesce::kernels {

using dnnl::memory;

struct TransposePrimitive::Impl {
  dnnl::stream stream{CpuEngine()};
  dnnl::reorder reorder;
  memory from, to;
};

TransposePrimitive::TransposePrimitive(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
TransposePrimitive::~TransposePrimitive() = default;

absl::StatusOr<std::unique_ptr<TransposePrimitive>> TransposePrimitive::Create(
    const std::vector<int64_t>& in_dims, const std::vector<int64_t>& perm) {
  const size_t rank = in_dims.size();
  if (rank < 1 || rank > 6 || perm.size() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("a oneDNN transpose takes rank 1 to 6, got ", rank));
  }
  // Dense strides of the output, then given to the input axis each output
  // axis comes from.
  memory::dims out_strides(rank), to_strides(rank, -1);
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    out_strides[i] = stride;
    stride *= in_dims[perm[i]];
  }
  for (size_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(rank) ||
        to_strides[perm[i]] != -1) {
      return absl::InvalidArgumentError("perm is not a permutation");
    }
    to_strides[perm[i]] = out_strides[i];
  }
  const memory::dims dims(in_dims.begin(), in_dims.end());
  auto impl = std::make_unique<Impl>();
  try {
    const memory::desc from(dims, memory::data_type::f32, PlainTag(rank));
    const memory::desc to(dims, memory::data_type::f32, to_strides);
    impl->from = UnboundMemory(from);
    impl->to = UnboundMemory(to);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::reorder::primitive_desc pd(CpuEngine(), from, CpuEngine(), to,
                                           attr);
    if (pd.scratchpad_desc().get_size() != 0) {
      return absl::InvalidArgumentError("this reorder needs a scratchpad");
    }
    impl->reorder = dnnl::reorder(pd);
  } catch (const dnnl::error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("oneDNN has no reorder for this transpose: ", e.what()));
  }
  return std::unique_ptr<TransposePrimitive>(
      new TransposePrimitive(std::move(impl)));
}

absl::Status TransposePrimitive::Run(const float* in, float* out) {
  Impl& p = *impl_;
  p.from.set_data_handle(const_cast<float*>(in));
  p.to.set_data_handle(out);
  absl::Status s = ExecutePrimitive(
      p.reorder, p.stream, {{DNNL_ARG_FROM, &p.from}, {DNNL_ARG_TO, &p.to}});
  p.stream.wait();
  return s;
}

}  // namespace coalesce::kernels
