#include "engine/cuda/sdpa_layout.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace coalesce {
namespace {

// Strides of a compact row-major array of `dims`.
std::array<int64_t, 4> CompactStrides(const std::array<int64_t, 4>& dims) {
  std::array<int64_t, 4> s;
  s[3] = 1;
  for (int i = 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// Strides of 16-byte rows on every axis but the contiguous last (an axis
// of one excepted), which then replace those of the axes of one.
absl::Status CheckStrides(const char* name, SdpaTensor& t) {
  if (t.strides[3] != 1) {
    return absl::UnimplementedError(
        absl::StrCat("cuDNN SDPA: ", name, "'s last axis is strided"));
  }
  int64_t extent = t.dims[3];
  for (int i = 0; i < 3; ++i) {
    if (t.dims[i] == 1) continue;
    if (t.strides[i] <= 0 || t.strides[i] % 8 != 0) {
      return absl::UnimplementedError(
          absl::StrCat("cuDNN SDPA: ", name, "'s stride ", t.strides[i],
                       " on axis ", i, " is not a multiple of 8 elements"));
    }
    extent = std::max(extent, t.strides[i] * t.dims[i]);
  }
  for (int i = 0; i < 3; ++i) {
    if (t.dims[i] == 1) t.strides[i] = extent;
  }
  return absl::OkStatus();
}

// The mask as cuDNN's bias: broadcast axes (stride 0) of dimension 1.
absl::Status BiasOf(const AttentionArgs& a, DeviceFloat type, SdpaLayout& l) {
  const std::array<int64_t, 4> full = {a.batch, a.heads, a.q_len, a.kv_len};
  if (a.mask_strides[3] != 1) {
    return absl::UnimplementedError(
        "cuDNN SDPA: the mask's key axis is not contiguous");
  }
  SdpaTensor& b = l.bias;
  for (int i = 0; i < 4; ++i) b.dims[i] = a.mask_strides[i] == 0 ? 1 : full[i];
  const std::array<int64_t, 4> compact = CompactStrides(b.dims);
  l.has_bias = true;
  if (a.mask.type == type) {
    b.strides = a.mask_strides;
    return CheckStrides("the mask", b);
  }
  if (a.mask.type != DeviceFloat::kFloat) {
    return absl::UnimplementedError(
        "cuDNN SDPA: a 16-bit mask of another type than q's");
  }
  for (int i = 0; i < 4; ++i) {
    if (b.dims[i] > 1 && a.mask_strides[i] != compact[i]) {
      return absl::UnimplementedError(
          "cuDNN SDPA: a float32 mask whose axes are not compact and "
          "row-major (it is converted as one contiguous run)");
    }
  }
  b.strides = compact;
  l.convert_bias = true;
  l.bias_elements = b.dims[0] * b.dims[1] * b.dims[2] * b.dims[3];
  return CheckStrides("the converted mask", b);
}

std::string TensorKey(const SdpaTensor& t) {
  return absl::StrCat(absl::StrJoin(t.dims, "x"), "/",
                      absl::StrJoin(t.strides, ","));
}

}  // namespace

absl::StatusOr<SdpaLayout> SdpaLayoutOf(const AttentionArgs& a) {
  const DeviceFloat type = a.q.type;
  if (type == DeviceFloat::kFloat || a.k.type != type || a.v.type != type ||
      a.out.type != type) {
    return absl::UnimplementedError(
        "cuDNN SDPA: q, k, v and out not of one 16-bit type");
  }
  if (a.head_dim % 8 != 0 || a.head_dim > kMaxSdpaHeadDim) {
    return absl::UnimplementedError(
        absl::StrCat("cuDNN SDPA: head dimension ", a.head_dim,
                     " (a multiple of 8, at most ", kMaxSdpaHeadDim, ")"));
  }
  if (a.zero_masked_rows) {
    return absl::UnimplementedError(
        "cuDNN SDPA: fully masked rows must give 0 (PyTorch's guard)");
  }
  if (a.batch < 1 || a.heads < 1 || a.q_len < 1 || a.kv_len < 1) {
    return absl::UnimplementedError("cuDNN SDPA: an empty attention");
  }
  if (a.pack != nullptr) {
    return absl::UnimplementedError(
        "cuDNN SDPA: packed rows (not described to cuDNN's ragged offsets "
        "yet)");
  }
  SdpaLayout l;
  l.type = type;
  l.q = {{a.batch, a.heads, a.q_len, a.head_dim}, a.q_strides};
  l.k = {{a.batch, a.heads, a.kv_len, a.head_dim}, a.k_strides};
  l.v = {{a.batch, a.heads, a.kv_len, a.head_dim}, a.v_strides};
  l.out = {{a.batch, a.heads, a.q_len, a.head_dim}, a.out_strides};
  for (const auto& [name, t] :
       {std::pair{"q", &l.q}, std::pair{"k", &l.k}, std::pair{"v", &l.v},
        std::pair{"out", &l.out}}) {
    if (absl::Status s = CheckStrides(name, *t); !s.ok()) return s;
  }
  if (a.mask.data != nullptr) {
    if (absl::Status s = BiasOf(a, type, l); !s.ok()) return s;
  }
  return l;
}

std::string SdpaKey(const SdpaLayout& l, float scale) {
  uint32_t scale_bits;
  std::memcpy(&scale_bits, &scale, sizeof(scale_bits));
  std::string key =
      absl::StrCat("sdpa/1 t=", static_cast<int>(l.type), " q=", TensorKey(l.q),
                   " k=", TensorKey(l.k), " v=", TensorKey(l.v),
                   " o=", TensorKey(l.out), " scale=", scale_bits);
  if (l.has_bias) {
    absl::StrAppend(&key, " bias=", TensorKey(l.bias),
                    l.convert_bias ? " converted" : "");
  }
  return key;
}

}  // namespace coalesce
