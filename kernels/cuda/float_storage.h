// How the CUDA kernels that compute in float32 store a floating tensor:
// float32, float16 (FP16 mode keeps activations in float16 between
// operators) or bfloat16 (BF16 mode, likewise). Float16 elements are held as
// their IEEE binary16 bits (uint16_t, CUDA's __half layout) and converted with
// half_math.h, as half.cu does: loads are exact, stores round to nearest even,
// and device and host (the simulated device, constants) give the same bits, NaN
// signs included.
//
// FloatSource and FloatTarget are a launcher's view of an operand: the
// address and its storage; the launcher dispatches on the storage to a
// kernel templated over the element type (float, uint16_t for float16 or
// BFloat16Bits), which reads
// and writes through ToFloat and FromFloat. Pure functions; host and
// device; unit-tested on the host (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_FLOAT_STORAGE_H_
#define COALESCE_KERNELS_CUDA_FLOAT_STORAGE_H_

#include <stdint.h>

#include "kernels/cuda/half_math.h"
#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

enum class FloatStorage : uint8_t { kFloat, kHalf, kBFloat16 };

// The element type of bfloat16 storage: its bits, a type of its own so that
// kernels templated over the element type tell it from float16 (uint16_t).
struct BFloat16Bits {
  uint16_t bits;
};

// A float32 or 16-bit array in device memory that a kernel reads; `data`
// null stands for an absent optional operand where a launcher allows one.
struct FloatSource {
  const void* data = nullptr;
  FloatStorage storage = FloatStorage::kFloat;
};

// A float32 or 16-bit array in device memory that a kernel writes.
struct FloatTarget {
  void* data = nullptr;
  FloatStorage storage = FloatStorage::kFloat;
};

// A stored element as float32 (exact).
COALESCE_HD float ToFloat(float stored) { return stored; }
COALESCE_HD float ToFloat(uint16_t half_bits) {
  return HalfBitsToFloat(half_bits);
}
COALESCE_HD float ToFloat(BFloat16Bits stored) {
  return BFloat16BitsToFloat(stored.bits);
}

// A float32 value stored as T (float, or uint16_t: float16 bits rounded to
// nearest even).
template <typename T>
COALESCE_HD T FromFloat(float value);

template <>
COALESCE_HD float FromFloat<float>(float value) {
  return value;
}

template <>
COALESCE_HD uint16_t FromFloat<uint16_t>(float value) {
  return FloatToHalfBits(value);
}

template <>
COALESCE_HD BFloat16Bits FromFloat<BFloat16Bits>(float value) {
  return BFloat16Bits{FloatToBFloat16Bits(value)};
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_FLOAT_STORAGE_H_
