#include "engine/cpu_attention.h"

#include <algorithm>
#include <utility>

namespace coalesce {
namespace {

template <typename T>
T* At(char* const* data, const AttentionOperand& o) {
  return reinterpret_cast<T*>(data[o.value]) + o.offset;
}

}  // namespace

kernels::AttentionViews CpuAttentionViews(const AttentionSite& site,
                                          char* const* data) {
  kernels::AttentionViews a;
  a.batch = site.batch;
  a.heads = site.heads;
  a.q_len = site.q_len;
  a.kv_len = site.kv_len;
  a.head_dim = site.head_dim;
  a.q_strides = site.q.strides;
  a.k_strides = site.k.strides;
  a.v_strides = site.v.strides;
  a.mask_strides = site.mask.strides;
  a.out_strides = site.out.strides;
  a.scale = site.scale;
  a.zero_masked_rows = site.zero_masked_rows;
  // The matcher gives an axis of extent 1 stride 0; one row is read at
  // any row stride, and the GEMMs want it at least head_dim.
  const auto one_row = [&](std::array<int64_t, 4>& s) {
    s[2] = std::max(s[2], site.head_dim);
  };
  if (site.q_len == 1) {
    one_row(a.q_strides);
    one_row(a.out_strides);
  }
  if (site.kv_len == 1) {
    one_row(a.k_strides);
    one_row(a.v_strides);
  }
  if (data == nullptr) return a;
  a.q = At<const float>(data, site.q);
  a.k = At<const float>(data, site.k);
  a.v = At<const float>(data, site.v);
  if (site.mask.value >= 0) a.mask = At<const float>(data, site.mask);
  a.out = At<float>(data, site.out);
  return a;
}

std::vector<AttentionSite> CpuAttentionSites(const NeutralPlan& plan) {
  std::vector<AttentionSite> taken;
  for (AttentionSite& site : FindAttention(plan)) {
    bool floats = true;
    for (const AttentionOperand* o :
         {&site.q, &site.k, &site.v, &site.mask, &site.out}) {
      if (o->value >= 0 && plan.values[o->value].info.dtype != DataType::kFp32)
        floats = false;
    }
    if (floats && kernels::AttentionTakes(CpuAttentionViews(site, nullptr)))
      taken.push_back(std::move(site));
  }
  return taken;
}

}  // namespace coalesce
