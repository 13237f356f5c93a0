// How each value of a plan is stored on the device: float32, or the 16-bit
// type (float16 or bfloat16) where FP16 or BF16 mode keeps activations in
// 16 bits between operators.
//
// Decided once per bound plan, before lowering, from what each node's
// lowering can read and write (DeviceHalfUse, device_ops.h):
//   - a value is 16-bit only if it is a float32 intermediate (never a
//     model input, output or constant: the wire and the weights' sources
//     stay float32) and every node that writes or reads it handles 16 bits
//     there;
//   - nodes that only move elements (views, Concat, Transpose, Slice,
//     Split, Gather) tie their float inputs and outputs together: all
//     16-bit or all float32, so they move bytes without converting;
//   - a node that cannot read 16 bits (Where, Cast, Resize, ...) keeps
//     its float inputs float32, so their producers write float32.
// Conversions therefore happen only inside the operators that compute
// (a convolution reading a float32 model input converts it once), never as
// separate reorders between two operators that both handle 16 bits.
//
// Layout is not decided here: channels-last is a graph rewrite at load
// (engine/optimizer/channels_last.cc, ModelOptions::ForDevice), so every
// value's layout is explicit in the plan's shapes.
#ifndef COALESCE_ENGINE_DEVICE_DEVICE_STORAGE_H_
#define COALESCE_ENGINE_DEVICE_DEVICE_STORAGE_H_

#include <cstddef>
#include <vector>

#include "engine/attention_pattern.h"
#include "engine/device/device_kernels.h"
#include "engine/neutral_plan.h"

namespace coalesce {

// By value id of `plan`: every value kFloat when `activations` is kFloat;
// else (kHalf: FP16 mode, kBFloat16: BF16 mode) the values the rules above
// allow are stored in that type.
// The nodes of each fused attention in `attention` count as one node that
// computes (reading q, k, v and the mask as stored, writing out as stored),
// with q, k and v stored alike (the kernel's operands share one type).
std::vector<DeviceFloat> PlanDeviceStorage(
    const NeutralPlan& plan, DeviceFloat activations,
    const std::vector<AttentionSite>& attention = {});

// Bytes of value `id` as stored: half of its float32 size in 16 bits.
size_t StoredBytes(const NeutralPlan& plan,
                   const std::vector<DeviceFloat>& storage, int id);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_STORAGE_H_
