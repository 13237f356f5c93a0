#include "kernels/cpu/conv.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "kernels/cpu/dnnl_util.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace coalesce::kernels {

using dnnl::memory;

struct ConvWeightsCache::Impl {
  absl::Mutex mu;
  // (layout, reordered weights); a node sees a handful of layouts at most.
  std::vector<std::pair<memory::desc, memory>> entries ABSL_GUARDED_BY(mu);

  // The weights in `layout`, reordered from `plain` on first use.
  absl::StatusOr<memory> Get(const memory::desc& layout, const memory& plain) {
    absl::MutexLock lock(&mu);
    for (const auto& [desc, mem] : entries)
      if (desc == layout) return mem;
    absl::StatusOr<memory> packed = ReorderToNew(plain, layout);
    if (packed.ok()) entries.emplace_back(layout, *packed);
    return packed;
  }
};

ConvWeightsCache::ConvWeightsCache() : impl_(std::make_unique<Impl>()) {}
ConvWeightsCache::~ConvWeightsCache() = default;

namespace {

// A tensor as the caller holds it (in the caller's layout, bound at Run) and
// as the primitive reads or writes it. When the layouts differ, `inner` lives
// in scratch (or, for constant weights, in the cache) and a reorder connects
// them.
struct Operand {
  memory user;
  memory inner;
  dnnl::reorder reorder;  // user -> inner (inputs) or inner -> user (dst)
  bool needs_reorder = false;
  size_t scratch_offset = 0;

  void Init(const memory::desc& held, const memory::desc& wanted,
            bool is_output, ScratchLayout* scratch) {
    user = UnboundMemory(held);
    inner = user;
    if (wanted == held) return;
    needs_reorder = true;
    inner = UnboundMemory(wanted);
    scratch_offset = scratch->Add(wanted.get_size());
    reorder =
        is_output ? dnnl::reorder(inner, user) : dnnl::reorder(user, inner);
  }
};

absl::Status Execute(
    const dnnl::primitive& prim, const dnnl::stream& stream,
    std::initializer_list<std::pair<int, const memory*>> args) {
  return ExecutePrimitive(prim, stream, args);
}

absl::Status RunReorder(const Operand& op, const dnnl::stream& stream,
                        bool is_output) {
  if (!op.needs_reorder) return absl::OkStatus();
  const memory* from = is_output ? &op.inner : &op.user;
  const memory* to = is_output ? &op.user : &op.inner;
  return Execute(op.reorder, stream,
                 {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

memory::dims ActivationDims(int64_t n, int64_t c,
                            const std::vector<int64_t>& spatial) {
  memory::dims dims = {n, c};
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  return dims;
}

// oneDNN's grouped weights are [groups, out/groups, in/groups, kernel...],
// the same bytes as ONNX's [out, in/groups, kernel...].
memory::dims WeightDims(const ConvGeometry& g) {
  memory::dims dims;
  if (g.groups > 1) dims.push_back(g.groups);
  dims.push_back(g.out_channels / g.groups);
  dims.push_back(g.in_channels / g.groups);
  dims.insert(dims.end(), g.kernel.begin(), g.kernel.end());
  return dims;
}

memory::desc PlainDesc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, PlainTag(dims.size()));
}

// An activation ([N, C, spatial...] dims) as the caller holds it.
memory::desc UserActivationDesc(const memory::dims& dims, bool channels_last) {
  return memory::desc(
      dims, memory::data_type::f32,
      channels_last ? ChannelsLastTag(dims.size()) : PlainTag(dims.size()));
}

absl::StatusOr<dnnl::convolution_forward::primitive_desc> MakeDesc(
    const ConvGeometry& g, bool has_bias, const FusedActivation& act,
    bool accumulate) {
  memory::dims dilates;
  for (int64_t d : g.dilations) dilates.push_back(d - 1);
  const auto any = memory::format_tag::any;
  const auto f32 = memory::data_type::f32;
  memory::desc bias_md;
  if (has_bias) bias_md = PlainDesc({g.out_channels});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(PostOpsFor(act, /*sum_first=*/accumulate));
  try {
    dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        memory::desc(ActivationDims(g.batch, g.in_channels, g.in_spatial), f32,
                     any),
        memory::desc(WeightDims(g), f32, any), bias_md,
        memory::desc(ActivationDims(g.batch, g.out_channels, g.out_spatial),
                     f32, any),
        g.strides, dilates, g.pads_begin, g.pads_end);
    return dnnl::convolution_forward::primitive_desc(desc, attr, CpuEngine());
  } catch (const dnnl::error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("oneDNN cannot run this convolution: ", e.what()));
  }
}

// Grouped convolutions oneDNN runs only as im2col + GEMM (`gemm:jit`, group
// sizes that are not multiples of the SIMD width, such as ShuffleNet's 24
// to 112 channels in 4 groups) are 5x faster here as one dense convolution
// with zeros between the groups, up to this many groups (the dense form
// does `groups` times the work).
constexpr int64_t kMaxGroupsToExpand = 8;

bool RunsAsGemm(const dnnl::convolution_forward::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).find("gemm") != std::string::npos;
}

// ONNX weights [out, in / groups, kernel...] as the dense [out, in,
// kernel...] of the same convolution: zero where input and output channel
// are in different groups.
std::vector<float> ExpandGroups(const ConvGeometry& g, const float* w) {
  int64_t taps = 1;
  for (int64_t k : g.kernel) taps *= k;
  const int64_t cg = g.in_channels / g.groups, mg = g.out_channels / g.groups;
  std::vector<float> dense(g.out_channels * g.in_channels * taps, 0.0f);
  for (int64_t m = 0; m < g.out_channels; ++m) {
    const int64_t first = m / mg * cg;  // the group's first input channel
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t t = 0; t < taps; ++t)
        dense[(m * g.in_channels + first + c) * taps + t] =
            w[(m * cg + c) * taps + t];
  }
  return dense;
}

}  // namespace

struct ConvPrimitive::Impl {
  dnnl::stream stream{CpuEngine()};
  dnnl::convolution_forward conv;
  Operand src, weights, dst;
  // With `accumulate` and a dst in another layout than the caller's: what
  // dst holds enters the inner layout before the convolution adds to it.
  dnnl::reorder dst_in;
  memory bias, scratchpad;
  bool has_bias = false;
  bool accumulate = false;
  bool weights_constant = false;
  ScratchLayout scratch;
  size_t scratchpad_offset = 0;
};

ConvPrimitive::ConvPrimitive(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
ConvPrimitive::~ConvPrimitive() = default;

absl::StatusOr<std::unique_ptr<ConvPrimitive>> ConvPrimitive::Create(
    const ConvGeometry& g, bool has_bias, const FusedActivation& activation,
    const float* weights, ConvWeightsCache* weights_cache, bool accumulate) {
  if (g.in_spatial.empty() || g.in_spatial.size() > 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "convolution supports 1 to 3 spatial dims, got ", g.in_spatial.size()));
  }
  absl::StatusOr<dnnl::convolution_forward::primitive_desc> pd =
      MakeDesc(g, has_bias, activation, accumulate);
  if (!pd.ok()) return pd.status();
  ConvGeometry used = g;  // the geometry the primitive runs
  std::vector<float> dense_weights;
  if (g.groups > 1 && g.groups <= kMaxGroupsToExpand &&
      weights_cache != nullptr && RunsAsGemm(*pd)) {
    ConvGeometry dense = g;
    dense.groups = 1;
    absl::StatusOr<dnnl::convolution_forward::primitive_desc> dense_pd =
        MakeDesc(dense, has_bias, activation, accumulate);
    if (dense_pd.ok() && !RunsAsGemm(*dense_pd)) {
      pd = *std::move(dense_pd);
      dense_weights = ExpandGroups(g, weights);
      weights = dense_weights.data();
      used = dense;
    }
  }
  auto impl = std::make_unique<Impl>();
  Impl& p = *impl;
  try {
    p.conv = dnnl::convolution_forward(*pd);
    p.has_bias = has_bias;
    if (has_bias) p.bias = UnboundMemory(pd->bias_desc());
    p.src.Init(
        UserActivationDesc(ActivationDims(g.batch, g.in_channels, g.in_spatial),
                           g.channels_last),
        pd->src_desc(), /*is_output=*/false, &p.scratch);
    p.dst.Init(UserActivationDesc(
                   ActivationDims(g.batch, g.out_channels, g.out_spatial),
                   g.channels_last),
               pd->dst_desc(), /*is_output=*/true, &p.scratch);
    p.accumulate = accumulate;
    if (accumulate && p.dst.needs_reorder)
      p.dst_in = dnnl::reorder(p.dst.user, p.dst.inner);
    p.scratchpad_offset = p.scratch.Add(pd->scratchpad_desc().get_size());
    p.scratchpad = UnboundMemory(pd->scratchpad_desc());
    const memory::desc plain_weights = PlainDesc(WeightDims(used));
    if (weights_cache != nullptr) {
      p.weights_constant = true;
      p.weights.user = UnboundMemory(plain_weights);
      p.weights.user.set_data_handle(const_cast<float*>(weights));
      absl::StatusOr<memory> packed =
          weights_cache->impl().Get(pd->weights_desc(), p.weights.user);
      if (!packed.ok()) return packed.status();
      p.weights.inner = *packed;
    } else {
      p.weights.Init(plain_weights, pd->weights_desc(), /*is_output=*/false,
                     &p.scratch);
    }
  } catch (const dnnl::error& e) {
    return absl::InternalError(
        absl::StrCat("oneDNN convolution setup failed: ", e.what()));
  }
  return std::unique_ptr<ConvPrimitive>(new ConvPrimitive(std::move(impl)));
}

size_t ConvPrimitive::scratch_bytes() const { return impl_->scratch.total(); }

absl::Status ConvPrimitive::Run(const float* src, const float* weights,
                                const float* bias, float* dst, char* scratch) {
  Impl& p = *impl_;
  auto bind = [scratch](Operand& op, const void* data) {
    op.user.set_data_handle(const_cast<void*>(data));
    if (op.needs_reorder) op.inner.set_data_handle(scratch + op.scratch_offset);
  };
  bind(p.src, src);
  bind(p.dst, dst);
  if (!p.weights_constant) bind(p.weights, weights);
  if (p.has_bias) p.bias.set_data_handle(const_cast<float*>(bias));
  p.scratchpad.set_data_handle(scratch + p.scratchpad_offset);

  if (absl::Status s = RunReorder(p.src, p.stream, false); !s.ok()) return s;
  if (p.accumulate && p.dst.needs_reorder) {
    if (absl::Status s = Execute(
            p.dst_in, p.stream,
            {{DNNL_ARG_FROM, &p.dst.user}, {DNNL_ARG_TO, &p.dst.inner}});
        !s.ok())
      return s;
  }
  if (!p.weights_constant) {
    if (absl::Status s = RunReorder(p.weights, p.stream, false); !s.ok())
      return s;
  }
  absl::Status s = p.has_bias ? Execute(p.conv, p.stream,
                                        {{DNNL_ARG_SRC, &p.src.inner},
                                         {DNNL_ARG_WEIGHTS, &p.weights.inner},
                                         {DNNL_ARG_BIAS, &p.bias},
                                         {DNNL_ARG_DST, &p.dst.inner},
                                         {DNNL_ARG_SCRATCHPAD, &p.scratchpad}})
                              : Execute(p.conv, p.stream,
                                        {{DNNL_ARG_SRC, &p.src.inner},
                                         {DNNL_ARG_WEIGHTS, &p.weights.inner},
                                         {DNNL_ARG_DST, &p.dst.inner},
                                         {DNNL_ARG_SCRATCHPAD, &p.scratchpad}});
  if (!s.ok()) return s;
  if (s = RunReorder(p.dst, p.stream, true); !s.ok()) return s;
  p.stream.wait();
  return absl::OkStatus();
}

}  // namespace coalesce::kernels
