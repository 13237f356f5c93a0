// The per-element math of the CUDA elementwise kernels (elementwise.cu):
// activations, binary arithmetic, and the index mapping of multidirectional
// (NumPy-style) broadcasting. Host and device (host_device.h); unit-tested
// on the host against double-precision references (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_ELEMENTWISE_MATH_H_
#define COALESCE_KERNELS_CUDA_ELEMENTWISE_MATH_H_

#include <math.h>
#include <stdint.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

enum class Activation {
  kIdentity,
  kRelu,
  kSigmoid,
  kTanh,
  kGeluErf,
  kGeluTanh,
  kLeakyRelu,
  kClip,
  kErf,
  kPow,  // x^alpha (Pow by a constant scalar exponent)
  kSqrt,
  kExp,
  kHardSigmoid,  // max(0, min(1, alpha x + beta))
  kHardSwish,    // x max(0, min(1, x / 6 + 1/2))
  kReciprocal,
  kNeg,
  kAbs,
  kSin,
  kCos,
  kFloor,
  kCeil,
  kSilu,  // x sigmoid(alpha x)
};

// ONNX semantics: Gelu (approximate="none") is 0.5 x (1 + erf(x / sqrt 2)),
// the form ONNX exports use; kGeluTanh is approximate="tanh". LeakyRelu's
// slope is `alpha`; Clip's bounds are [alpha, beta] (NaN stays NaN); Pow's
// exponent is `alpha`; Silu's sigmoid scale is `alpha` (1: SiLU; 1.702:
// quick GELU).
COALESCE_HD float ApplyActivation(Activation act, float x, float alpha = 0.0f,
                                  float beta = 0.0f) {
  switch (act) {
    case Activation::kLeakyRelu:
      return x >= 0.0f ? x : alpha * x;
    case Activation::kClip:
      return x < alpha ? alpha : (x > beta ? beta : x);
    case Activation::kErf:
      return erff(x);
    case Activation::kPow:
      return alpha == 2.0f ? x * x : powf(x, alpha);
    case Activation::kSqrt:
      return sqrtf(x);
    case Activation::kExp:
      return expf(x);
    case Activation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case Activation::kSigmoid:
      return 1.0f / (1.0f + expf(-x));
    case Activation::kTanh:
      return tanhf(x);
    case Activation::kSilu:
      return x / (1.0f + expf(-alpha * x));
    case Activation::kGeluErf:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case Activation::kGeluTanh: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + tanhf(inner));
    }
    case Activation::kHardSigmoid: {
      const float y = alpha * x + beta;
      return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
    }
    case Activation::kHardSwish: {
      const float y = x / 6.0f + 0.5f;
      return x * (y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y));
    }
    case Activation::kReciprocal:
      return 1.0f / x;
    case Activation::kNeg:
      return -x;
    case Activation::kAbs:
      return fabsf(x);
    case Activation::kSin:
      return sinf(x);
    case Activation::kCos:
      return cosf(x);
    case Activation::kFloor:
      return floorf(x);
    case Activation::kCeil:
      return ceilf(x);
    case Activation::kIdentity:
      break;
  }
  return x;
}

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

COALESCE_HD float ApplyBinary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
  }
  return a;
}

inline constexpr int kMaxBroadcastRank = 8;

// Maps an output element to the elements of two broadcast inputs. Built on
// the host by MakeBroadcastIndexer, passed to kernels by value.
struct BroadcastIndexer {
  int rank = 0;
  int64_t out_dims[kMaxBroadcastRank] = {};
  int64_t a_strides[kMaxBroadcastRank] = {};  // 0 where a is broadcast
  int64_t b_strides[kMaxBroadcastRank] = {};
};

// Offsets into a and b of output element `index` (row-major).
COALESCE_HD void BroadcastOffsets(const BroadcastIndexer& ix, int64_t index,
                                  int64_t* a_offset, int64_t* b_offset) {
  int64_t a = 0, b = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t coord = index % ix.out_dims[d];
    index /= ix.out_dims[d];
    a += coord * ix.a_strides[d];
    b += coord * ix.b_strides[d];
  }
  *a_offset = a;
  *b_offset = b;
}

// True when output element i is element i of a and of b: neither input is
// broadcast (axes of size 1 aside), so a kernel may skip BroadcastOffsets.
inline bool BroadcastIsIdentity(const BroadcastIndexer& ix) {
  int64_t stride = 1;
  for (int d = ix.rank - 1; d >= 0; --d) {
    if (ix.out_dims[d] != 1 &&
        (ix.a_strides[d] != stride || ix.b_strides[d] != stride)) {
      return false;
    }
    stride *= ix.out_dims[d];
  }
  return true;
}

// Fills `ix` for a and b of the given shapes (each rank <= kMaxBroadcastRank)
// and returns the output's element count; -1 when the shapes do not
// broadcast or the rank is too large.
inline int64_t MakeBroadcastIndexer(const int64_t* a_dims, int a_rank,
                                    const int64_t* b_dims, int b_rank,
                                    BroadcastIndexer* ix) {
  const int rank = a_rank > b_rank ? a_rank : b_rank;
  if (rank > kMaxBroadcastRank) return -1;
  *ix = BroadcastIndexer{};
  ix->rank = rank;
  int64_t count = 1, a_stride = 1, b_stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const int ad = d - (rank - a_rank), bd = d - (rank - b_rank);
    const int64_t a = ad >= 0 ? a_dims[ad] : 1;
    const int64_t b = bd >= 0 ? b_dims[bd] : 1;
    if (a != b && a != 1 && b != 1) return -1;
    ix->out_dims[d] = a == 1 ? b : a;
    ix->a_strides[d] = a == 1 ? 0 : a_stride;
    ix->b_strides[d] = b == 1 ? 0 : b_stride;
    a_stride *= a;
    b_stride *= b;
    count *= ix->out_dims[d];
  }
  return count;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_ELEMENTWISE_MATH_H_
