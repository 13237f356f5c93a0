#include "engine/packing_indices.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

// Whether element `i` of `mask` is nonzero: any bit of an integer, any bit
// but the sign of a float (-0 is zero).
bool IsReal(const unsigned char* mask, DataType dtype, size_t width,
            int64_t i) {
  const unsigned char* e = mask + static_cast<size_t>(i) * width;
  switch (dtype) {
    case DataType::kFp32: {
      float f;
      std::memcpy(&f, e, sizeof f);
      return f != 0.0f;
    }
    case DataType::kFp64: {
      double d;
      std::memcpy(&d, e, sizeof d);
      return d != 0.0;
    }
    case DataType::kFp16:
    case DataType::kBf16: {
      uint16_t bits;
      std::memcpy(&bits, e, sizeof bits);
      return (bits & 0x7fffu) != 0;
    }
    default:
      return std::any_of(e, e + width, [](unsigned char b) { return b != 0; });
  }
}

}  // namespace

int64_t CpuTokenBuckets(int64_t batch, int64_t seq) {
  return std::max<int64_t>(1,
                           (batch * seq + kCpuTokenRows - 1) / kCpuTokenRows);
}

int64_t TokenBucket(int64_t tokens, int64_t batch, int64_t seq,
                    int64_t buckets) {
  const int64_t rows = batch * seq;
  const int64_t step = (rows + buckets - 1) / buckets;
  const int64_t bucket = std::max<int64_t>(1, (tokens + step - 1) / step);
  return std::min(rows, bucket * step);
}

int64_t PackedRealRows(const int64_t* pack, int64_t rows, int64_t batch,
                       int64_t seq, int64_t* offsets, int64_t* positions) {
  const int64_t padded = batch * seq;
  int64_t real = 0;
  while (real < rows && pack[real] >= 0 && pack[real] < padded &&
         (real == 0 || pack[real] > pack[real - 1])) {
    ++real;
  }
  int64_t r = 0;
  for (int64_t b = 0; b <= batch; ++b) {
    while (r < real && pack[r] < b * seq) ++r;
    offsets[b] = b == batch ? real : r;
  }
  for (r = 0; r < real; ++r) positions[r] = pack[r] % seq;
  return real;
}

absl::Status ComputePackingIndices(const void* mask, DataType dtype,
                                   int64_t batch, int64_t seq,
                                   PackingIndices* out, int64_t buckets) {
  const size_t width = ElementByteSize(dtype);
  if (width == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a padding mask of type ", std::string(DataTypeName(dtype)),
        " (a numeric or BOOL mask is needed)"));
  }
  const auto* bytes = static_cast<const unsigned char*>(mask);
  const int64_t rows = batch * seq;
  out->pack.clear();
  out->unpack.assign(rows, -1);
  for (int64_t r = 0; r < rows; ++r) {
    if (!IsReal(bytes, dtype, width, r)) continue;
    out->unpack[r] = static_cast<int64_t>(out->pack.size());
    out->pack.push_back(r);
  }
  out->tokens = static_cast<int64_t>(out->pack.size());
  const int64_t bucket = TokenBucket(out->tokens, batch, seq, buckets);
  const int64_t filler = out->pack.empty() ? 0 : out->pack.front();
  out->pack.resize(bucket, filler);
  out->spread = out->unpack;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t* const spread = out->spread.data() + b * seq;
    int64_t* const unpack = out->unpack.data() + b * seq;
    const int64_t* real =
        std::find_if(unpack, unpack + seq, [](int64_t u) { return u >= 0; });
    const int64_t own = real == unpack + seq ? 0 : *real;
    for (int64_t s = 0; s < seq; ++s) {
      if (unpack[s] >= 0) continue;
      unpack[s] = bucket;
      spread[s] = own;
    }
  }
  return absl::OkStatus();
}

absl::Status WriteMaskWithTokens(void* mask, DataType dtype, int64_t elements,
                                 int64_t tokens) {
  const size_t width = ElementByteSize(dtype);
  if (width == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a padding mask of type ", std::string(DataTypeName(dtype)),
        " (a numeric or BOOL mask is needed)"));
  }
  // One element holding 1: little-endian 1 for integers and BOOL.
  unsigned char one[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  switch (dtype) {
    case DataType::kFp32: {
      const float f = 1.0f;
      std::memcpy(one, &f, sizeof f);
      break;
    }
    case DataType::kFp64: {
      const double d = 1.0;
      std::memcpy(one, &d, sizeof d);
      break;
    }
    case DataType::kFp16:
    case DataType::kBf16: {
      const uint16_t bits = dtype == DataType::kFp16 ? 0x3c00u : 0x3f80u;
      std::memcpy(one, &bits, sizeof bits);
      break;
    }
    default:
      break;
  }
  auto* bytes = static_cast<unsigned char*>(mask);
  for (int64_t i = 0; i < tokens; ++i)
    std::memcpy(bytes + static_cast<size_t>(i) * width, one, width);
  std::memset(bytes + static_cast<size_t>(tokens) * width, 0,
              static_cast<size_t>(elements - tokens) * width);
  return absl::OkStatus();
}

}  // namespace coalesce
