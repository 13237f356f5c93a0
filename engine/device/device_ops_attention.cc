// The fused attention's lowering (device_ops.h, LowerAttention): one
// DeviceKernels::Attention step over the site's strided views.
#include "engine/attention_pattern.h"
#include "engine/device/device_ops.h"
#include "engine/device/device_ops_internal.h"

namespace coalesce {

using device_ops::In;

absl::StatusOr<LoweredNode> LowerAttention(const AttentionSite& site,
                                           LoweringOptions options,
                                           const PackedRowsSite& packed) {
  if (site.head_dim > kMaxAttentionHeadDim) {
    return absl::UnimplementedError(
        absl::StrCat("attention with head dimension ", site.head_dim,
                     " (at most ", kMaxAttentionHeadDim, " on the device)"));
  }
  auto stored = [&](int id) {
    return options.storage != nullptr ? (*options.storage)[id]
                                      : DeviceFloat::kFloat;
  };
  AttentionArgs args;
  args.batch = site.batch;
  args.heads = site.heads;
  args.q_len = site.q_len;
  args.kv_len = site.kv_len;
  args.head_dim = site.head_dim;
  args.q_strides = site.q.strides;
  args.k_strides = site.k.strides;
  args.v_strides = site.v.strides;
  args.mask_strides = site.mask.strides;
  args.out_strides = site.out.strides;
  args.scale = site.scale;
  args.zero_masked_rows = site.zero_masked_rows;
  AttentionOperand q = site.q, k = site.k, v = site.v, mask = site.mask,
                   out = site.out;
  int pack_index = -1;
  if (packed.pack_index >= 0) {
    // The same views, over the packed rows (PackedRowsOf checked that they
    // are whole rows of the same width).
    q.value = k.value = v.value = packed.rows_in;
    out.value = packed.rows_out;
    pack_index = packed.pack_index;
    args.packed_rows = packed.rows;
  }
  const DeviceFloat q_type = stored(q.value), k_type = stored(k.value),
                    v_type = stored(v.value), out_type = stored(out.value);
  const DeviceFloat mask_type =
      mask.value >= 0 ? stored(mask.value) : DeviceFloat::kFloat;
  LoweredNode lowered;
  lowered.reads = {q.value, k.value, v.value};
  if (mask.value >= 0) lowered.reads.push_back(mask.value);
  if (pack_index >= 0) {
    lowered.reads.push_back(pack_index);
    lowered.writes = {out.value};
  }
  if (site.batch * site.heads * site.q_len * site.head_dim == 0) return lowered;
  // An operand's view starts `offset` elements into its value (a Split's
  // output read in place).
  auto at = [](const StepContext& c, const AttentionOperand& o,
               DeviceFloat type) {
    return FloatIn(static_cast<const char*>(c.addresses[o.value]) +
                       o.offset * DeviceFloatBytes(type),
                   type);
  };
  auto at_out = [](const StepContext& c, const AttentionOperand& o,
                   DeviceFloat type) {
    return FloatOut(static_cast<char*>(c.addresses[o.value]) +
                        o.offset * DeviceFloatBytes(type),
                    type);
  };
  lowered.steps.push_back([=](const StepContext& c) mutable {
    args.q = at(c, q, q_type);
    args.k = at(c, k, k_type);
    args.v = at(c, v, v_type);
    if (mask.value >= 0) args.mask = In(c, mask.value, mask_type);
    if (pack_index >= 0)
      args.pack = static_cast<const int64_t*>(c.addresses[pack_index]);
    args.out = at_out(c, out, out_type);
    return c.kernels.Attention(c.stream, args);
  });
  return lowered;
}

}  // namespace coalesce
