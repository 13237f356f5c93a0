#include "kernels/cpu/dnnl_util.h"

#include "absl/strings/str_cat.h"

namespace coalesce::kernels {

using dnnl::memory;

const dnnl::engine& CpuEngine() {
  static const dnnl::engine* engine =
      new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

memory::format_tag PlainTag(size_t rank) {
  switch (rank) {
    case 1:
      return memory::format_tag::a;
    case 2:
      return memory::format_tag::ab;
    case 3:
      return memory::format_tag::abc;
    case 4:
      return memory::format_tag::abcd;
    case 5:
      return memory::format_tag::abcde;
    default:
      return memory::format_tag::abcdef;
  }
}

memory::format_tag ChannelsLastTag(size_t rank) {
  switch (rank) {
    case 3:
      return memory::format_tag::acb;
    case 4:
      return memory::format_tag::acdb;
    default:
      return memory::format_tag::acdeb;
  }
}

absl::Status ExecutePrimitive(
    const dnnl::primitive& prim, const dnnl::stream& stream,
    std::initializer_list<std::pair<int, const memory*>> args) {
  dnnl_exec_arg_t c_args[8];
  int n = 0;
  for (const auto& [arg, mem] : args) {
    if (n == 8) return absl::InternalError("more than 8 oneDNN arguments");
    c_args[n++] = {arg, mem->get()};
  }
  const dnnl_status_t status =
      dnnl_primitive_execute(prim.get(), stream.get(), n, c_args);
  if (status != dnnl_success) {
    return absl::InternalError(absl::StrCat(
        "oneDNN execute failed with status ", static_cast<int>(status)));
  }
  return absl::OkStatus();
}

memory UnboundMemory(const memory::desc& desc) {
  return memory(desc, CpuEngine(), DNNL_MEMORY_NONE);
}

dnnl::post_ops PostOpsFor(const FusedActivation& act, bool sum_first) {
  using Kind = FusedActivation::Kind;
  dnnl::post_ops ops;
  if (sum_first) ops.append_sum(1.0f);
  switch (act.kind) {
    case Kind::kNone:
      break;
    case Kind::kRelu:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      break;
    case Kind::kLeakyRelu:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, act.alpha, 0.0f);
      break;
    case Kind::kClip:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, act.alpha,
                         act.beta);
      break;
    case Kind::kSigmoid:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f);
      break;
    case Kind::kTanh:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_tanh, 0.0f, 0.0f);
      break;
    case Kind::kSilu:  // swish: x * sigmoid(alpha x)
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, act.alpha, 0.0f);
      break;
    case Kind::kHardSwish:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f);
      break;
    case Kind::kGeluErf:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
      break;
    case Kind::kGeluTanh:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
      break;
    case Kind::kHardSigmoid:  // oneDNN 2 has no hardsigmoid: linear, clip
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, act.alpha,
                         act.beta);
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, 0.0f, 1.0f);
      break;
  }
  return ops;
}

absl::StatusOr<memory> ReorderToNew(const memory& from,
                                    const memory::desc& layout) {
  try {
    memory to(layout, CpuEngine());
    dnnl::stream stream(CpuEngine());
    dnnl::reorder(from, to).execute(stream, const_cast<memory&>(from), to);
    stream.wait();
    return to;
  } catch (const dnnl::error& e) {
    return absl::InternalError(
        absl::StrCat("oneDNN reorder failed: ", e.what()));
  }
}

size_t ScratchLayout::Add(size_t bytes) {
  const size_t offset = total_;
  total_ += (bytes + 63) / 64 * 64;
  return offset;
}

}  // namespace coalesce::kernels
