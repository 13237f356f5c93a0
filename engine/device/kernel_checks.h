// The argument checks both DeviceKernels implementations (the CUDA plugin's
// and the simulated device's, engine/device/device_kernels.h) make before
// they enqueue a primitive, written once so that the two refuse the same
// arguments with the same error. Each check also builds what the kernel
// takes (kernel_args.h: its indexer, its element types) and, where the
// kernel runs over y's elements, returns their count.
//
// Errors: InvalidArgument naming what is wrong; the caller then enqueues
// nothing. Pure functions, thread-safe.
#ifndef COALESCE_ENGINE_DEVICE_KERNEL_CHECKS_H_
#define COALESCE_ENGINE_DEVICE_KERNEL_CHECKS_H_

#include <cstdint>
#include <initializer_list>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/data_type.h"
#include "engine/device/device_kernels.h"
#include "kernels/cuda/elementwise_math.h"
#include "kernels/cuda/indexing_math.h"
#include "kernels/cuda/pad_math.h"
#include "kernels/cuda/quantize_math.h"
#include "kernels/cuda/resize_math.h"
#include "kernels/cuda/transpose_math.h"
#include "kernels/cuda/typed_math.h"

namespace coalesce {

// a and b broadcast together (rank <= 8).
absl::StatusOr<int64_t> CheckBinary(const BinaryArgs& a,
                                    kernels::cuda::BroadcastIndexer* ix);

// perm permutes x's axes (rank <= 8).
absl::StatusOr<int64_t> CheckTranspose(const TransposeArgs& a,
                                       kernels::cuda::TransposeIndexer* ix);

// x broadcasts to y_shape (rank <= 8).
absl::StatusOr<int64_t> CheckBroadcast(const BroadcastArgs& a,
                                       kernels::cuda::TransposeIndexer* ix);

// A type the typed kernels take, and operands that broadcast to y_shape
// (b only for a binary op).
absl::StatusOr<int64_t> CheckTyped(const TypedArgs& a,
                                   kernels::cuda::ElementType* element,
                                   kernels::cuda::TypedIndexer* ix);

// cond, x and z broadcast to y_shape; elements of 1, 2, 4 or 8 bytes.
absl::StatusOr<int64_t> CheckWhere(const WhereArgs& a,
                                   kernels::cuda::TypedIndexer* ix);

// Types the cast kernel takes.
absl::Status CheckCast(const CastArgs& a, kernels::cuda::ElementType* from,
                       kernels::cuda::ElementType* to);

// Rank <= 8, strides of y's rank, and every element read inside x.
absl::StatusOr<int64_t> CheckStridedCopy(const StridedCopyArgs& a,
                                         kernels::cuda::TransposeIndexer* ix);

// Rank <= 8, and x_shape, begin and y_shape of one rank.
absl::StatusOr<int64_t> CheckPad(const PadArgs& a,
                                 kernels::cuda::PadIndexer* ix);

// A quantized type the kernel takes in that direction.
absl::Status CheckQuantize(const QuantizeArgs& a,
                           kernels::cuda::QuantType* type);

// A Resize the kernel has (ResizeIndexerFor).
absl::StatusOr<int64_t> CheckResize(const ResizeArgs& a,
                                    kernels::cuda::ResizeIndexer* ix);

// Index tuples of at most 8.
absl::Status CheckGatherNd(const GatherNdArgs& a,
                           kernels::cuda::GatherNdIndexer* ix);

// Rank <= 8, data and indices of one rank, and the axis among them.
absl::Status CheckGatherElements(const GatherElementsArgs& a,
                                 kernels::cuda::GatherElementsIndexer* ix);

// InvalidArgument, naming `primitive`, when `types` hold both 16-bit types
// (a launch computes in float32 from float32 and ONE 16-bit type).
absl::Status CheckOne16BitType(std::initializer_list<DeviceFloat> types,
                               absl::string_view primitive);

// Non-negative sizes; one 16-bit type among x, the residual, sum and y;
// with a residual, rows a multiple of residual_rows (> 0), and y
// overlapping neither x nor the residual.
absl::Status CheckLayerNorm(const LayerNormArgs& a);

// Non-negative sizes, head_dim <= kMaxAttentionHeadDim, q, k and v of one
// type, and the head dimension contiguous (col stride 1) in q, k, v, out;
// with packed rows, as many queries as keys and at least one row.
absl::Status CheckAttention(const AttentionArgs& a);

// float32, int64 or int32: the types CumSum and ArgMax take (`primitive`
// names the caller in the error); `element`, when not null, receives the
// kernels' type.
absl::Status CheckArithmetic(DataType type, absl::string_view primitive,
                             kernels::cuda::ElementType* element = nullptr);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_KERNEL_CHECKS_H_
