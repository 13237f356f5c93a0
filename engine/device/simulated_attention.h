// The host math of the simulated device's Attention primitive
// (DeviceKernels::Attention, engine/device/device_kernels.h): per query row
// over the strided views, or per sequence over its packed rows
// (AttentionArgs::pack; the fillers' rows zeroed), the CUDA kernel's steps
// in one tile
// (kernels/cuda/attention_math.h: the max, each weight exp(score - max),
// float16 operands' weights rounded to float16, the output as accumulator /
// sum with its masked-row rule), float32 throughout. The launch around it
// (regions, the race check) stays in simulated_kernels.cc.
// Internal to engine/device/.
#ifndef COALESCE_ENGINE_DEVICE_SIMULATED_ATTENTION_H_
#define COALESCE_ENGINE_DEVICE_SIMULATED_ATTENTION_H_

#include <array>
#include <cstdint>

#include "engine/device/device_kernels.h"

namespace coalesce {

// Elements from an operand's first element to one past its last, for the
// view `strides` over [batch, heads, rows, cols].
int64_t AttentionSpan(const std::array<int64_t, 4>& strides,
                      const std::array<int64_t, 4>& dims);

// REQUIRES: the args as CheckAttention (kernel_checks.h) accepts them.
void RunSimulatedAttention(const AttentionArgs& a);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_SIMULATED_ATTENTION_H_
