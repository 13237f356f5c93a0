// DeviceKernels' arguments (engine/device/device_kernels.h) as kernels/cuda/
// takes them: the enums mapped, and the index descriptors of broadcasting
// and transposition built from shapes. Header-only and free of CUDA
// includes, so the simulated device's kernels (engine/device/),
// which run the same math on the host, build them the same way.
#ifndef COALESCE_ENGINE_DEVICE_KERNEL_ARGS_H_
#define COALESCE_ENGINE_DEVICE_KERNEL_ARGS_H_

#include <cstdint>
#include <vector>

#include "engine/device/device_kernels.h"
#include "engine/shape.h"
#include "kernels/cuda/elementwise_math.h"
#include "kernels/cuda/float_storage.h"
#include "kernels/cuda/gather_math.h"
#include "kernels/cuda/indexing_math.h"
#include "kernels/cuda/pad_math.h"
#include "kernels/cuda/pool_math.h"
#include "kernels/cuda/quantize_math.h"
#include "kernels/cuda/resize_math.h"
#include "kernels/cuda/transpose_math.h"
#include "kernels/cuda/typed_math.h"

namespace coalesce {

// A floating operand's storage, and FloatIn/FloatOut as FloatSource and
// FloatTarget: the same address, the storage mapped.
inline kernels::cuda::FloatStorage ToKernel(DeviceFloat type) {
  switch (type) {
    case DeviceFloat::kHalf:
      return kernels::cuda::FloatStorage::kHalf;
    case DeviceFloat::kBFloat16:
      return kernels::cuda::FloatStorage::kBFloat16;
    case DeviceFloat::kFloat:
      break;
  }
  return kernels::cuda::FloatStorage::kFloat;
}

inline kernels::cuda::FloatSource ToKernel(FloatIn x) {
  return {x.data, ToKernel(x.type)};
}

inline kernels::cuda::FloatTarget ToKernel(FloatOut y) {
  return {y.data, ToKernel(y.type)};
}

inline kernels::cuda::Activation ToKernel(DeviceActivation a) {
  using K = kernels::cuda::Activation;
  switch (a) {
    case DeviceActivation::kIdentity:
      return K::kIdentity;
    case DeviceActivation::kRelu:
      return K::kRelu;
    case DeviceActivation::kSigmoid:
      return K::kSigmoid;
    case DeviceActivation::kTanh:
      return K::kTanh;
    case DeviceActivation::kGeluErf:
      return K::kGeluErf;
    case DeviceActivation::kGeluTanh:
      return K::kGeluTanh;
    case DeviceActivation::kLeakyRelu:
      return K::kLeakyRelu;
    case DeviceActivation::kClip:
      return K::kClip;
    case DeviceActivation::kErf:
      return K::kErf;
    case DeviceActivation::kPow:
      return K::kPow;
    case DeviceActivation::kSqrt:
      return K::kSqrt;
    case DeviceActivation::kExp:
      return K::kExp;
    case DeviceActivation::kHardSigmoid:
      return K::kHardSigmoid;
    case DeviceActivation::kHardSwish:
      return K::kHardSwish;
    case DeviceActivation::kReciprocal:
      return K::kReciprocal;
    case DeviceActivation::kNeg:
      return K::kNeg;
    case DeviceActivation::kAbs:
      return K::kAbs;
    case DeviceActivation::kSin:
      return K::kSin;
    case DeviceActivation::kCos:
      return K::kCos;
    case DeviceActivation::kFloor:
      return K::kFloor;
    case DeviceActivation::kCeil:
      return K::kCeil;
    case DeviceActivation::kSilu:
      return K::kSilu;
  }
  return K::kIdentity;
}

inline kernels::cuda::BinaryOp ToKernel(DeviceBinaryOp op) {
  using K = kernels::cuda::BinaryOp;
  switch (op) {
    case DeviceBinaryOp::kAdd:
      return K::kAdd;
    case DeviceBinaryOp::kSub:
      return K::kSub;
    case DeviceBinaryOp::kMul:
      return K::kMul;
    case DeviceBinaryOp::kDiv:
      return K::kDiv;
  }
  return K::kAdd;
}

inline kernels::cuda::TypedOp ToKernel(DeviceTypedOp op) {
  using K = kernels::cuda::TypedOp;
  using D = DeviceTypedOp;
  switch (op) {
    case D::kAdd:
      return K::kAdd;
    case D::kSub:
      return K::kSub;
    case D::kMul:
      return K::kMul;
    case D::kDiv:
      return K::kDiv;
    case D::kMod:
      return K::kMod;
    case D::kFmod:
      return K::kFmod;
    case D::kMax:
      return K::kMax;
    case D::kMin:
      return K::kMin;
    case D::kNeg:
      return K::kNeg;
    case D::kAbs:
      return K::kAbs;
    case D::kEqual:
      return K::kEqual;
    case D::kLess:
      return K::kLess;
    case D::kLessOrEqual:
      return K::kLessOrEqual;
    case D::kGreater:
      return K::kGreater;
    case D::kGreaterOrEqual:
      return K::kGreaterOrEqual;
    case D::kAnd:
      return K::kAnd;
    case D::kOr:
      return K::kOr;
    case D::kXor:
      return K::kXor;
    case D::kNot:
      return K::kNot;
    case D::kIsNaN:
      return K::kIsNaN;
    case D::kIsInf:
      return K::kIsInf;
    case D::kIsPosInf:
      return K::kIsPosInf;
    case D::kIsNegInf:
      return K::kIsNegInf;
  }
  return K::kAdd;
}

// The typed kernels' element type of `type`; false for types they lack.
inline bool ElementTypeOf(DataType type, kernels::cuda::ElementType* out) {
  using K = kernels::cuda::ElementType;
  switch (type) {
    case DataType::kFp32:
      *out = K::kFloat;
      return true;
    case DataType::kInt64:
      *out = K::kInt64;
      return true;
    case DataType::kInt32:
      *out = K::kInt32;
      return true;
    case DataType::kUint8:
      *out = K::kUint8;
      return true;
    case DataType::kBool:
      *out = K::kBool;
      return true;
    default:
      return false;
  }
}

// The typed kernels' indexer for `inputs` broadcast to y; y's element
// count, or -1 when an input does not broadcast or a rank is above 8.
inline int64_t TypedIndexerFor(const std::vector<const Shape*>& inputs,
                               const Shape& y,
                               kernels::cuda::TypedIndexer* ix) {
  const int64_t* dims[kernels::cuda::kMaxTypedInputs] = {};
  int ranks[kernels::cuda::kMaxTypedInputs] = {};
  if (inputs.size() > kernels::cuda::kMaxTypedInputs) return -1;
  for (size_t k = 0; k < inputs.size(); ++k) {
    dims[k] = inputs[k]->data();
    ranks[k] = static_cast<int>(inputs[k]->size());
  }
  return kernels::cuda::MakeTypedIndexer(static_cast<int>(inputs.size()), dims,
                                         ranks, y.data(),
                                         static_cast<int>(y.size()), ix);
}

inline kernels::cuda::Pool2DGeometry ToGeometry(const Pool2DArgs& a) {
  kernels::cuda::Pool2DGeometry g;
  g.in_h = a.in_h;
  g.in_w = a.in_w;
  g.out_h = a.out_h;
  g.out_w = a.out_w;
  g.kernel_h = a.kernel_h;
  g.kernel_w = a.kernel_w;
  g.stride_h = a.stride_h;
  g.stride_w = a.stride_w;
  g.dilation_h = a.dilation_h;
  g.dilation_w = a.dilation_w;
  g.pad_top = a.pad_top;
  g.pad_left = a.pad_left;
  g.pad_bottom = a.pad_bottom;
  g.pad_right = a.pad_right;
  g.max = a.max;
  g.count_include_pad = a.count_include_pad;
  return g;
}

// The output's element count, or -1 when the shapes do not broadcast.
inline int64_t BroadcastIndexerFor(const Shape& a, const Shape& b,
                                   kernels::cuda::BroadcastIndexer* ix) {
  return kernels::cuda::MakeBroadcastIndexer(
      a.data(), static_cast<int>(a.size()), b.data(),
      static_cast<int>(b.size()), ix);
}

// The element count, or -1 for a bad permutation or rank.
inline int64_t TransposeIndexerFor(const Shape& x,
                                   const std::vector<int64_t>& perm,
                                   kernels::cuda::TransposeIndexer* ix) {
  if (perm.size() != x.size()) return -1;
  return kernels::cuda::MakeTransposeIndexer(x.data(), perm.data(),
                                             static_cast<int>(x.size()), ix);
}

// The Transpose kernel's indexer for x broadcast to y (Expand): y's dims,
// and x's strides with 0 on every broadcast axis. The element count of y,
// or -1 when the rank is above kMaxTransposeRank or x does not broadcast
// to y.
inline int64_t ExpandIndexerFor(const Shape& x, const Shape& y,
                                kernels::cuda::TransposeIndexer* ix) {
  const int rank = static_cast<int>(y.size());
  if (x.size() > y.size() || rank > kernels::cuda::kMaxTransposeRank) return -1;
  *ix = kernels::cuda::TransposeIndexer{};
  ix->rank = rank;
  const int offset = rank - static_cast<int>(x.size());
  int64_t stride = 1, count = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t in = d >= offset ? x[d - offset] : 1;
    if (in != y[d] && in != 1) return -1;
    ix->out_dims[d] = y[d];
    ix->in_strides[d] = in == 1 ? 0 : stride;
    stride *= in;
    count *= y[d];
  }
  return count;
}

// The GatherND kernel's indexer; false when k is above 8.
inline bool GatherNdIndexerFor(const GatherNdArgs& a,
                               kernels::cuda::GatherNdIndexer* ix) {
  const size_t k = a.dims.size();
  if (k > kernels::cuda::kMaxIndexingRank) return false;
  *ix = kernels::cuda::GatherNdIndexer{};
  ix->rows_per_batch = a.rows_per_batch;
  ix->slice = a.slice;
  ix->k = static_cast<int>(k);
  int64_t stride = a.slice;
  for (size_t j = k; j-- > 0;) {
    ix->dims[j] = a.dims[j];
    ix->strides[j] = stride;
    stride *= a.dims[j];
  }
  ix->batch_stride = stride;
  return true;
}

// The GatherElements kernel's indexer; false for a rank above 8, ranks
// that differ, or an axis out of range.
inline bool GatherElementsIndexerFor(const GatherElementsArgs& a,
                                     kernels::cuda::GatherElementsIndexer* ix) {
  const size_t rank = a.data_shape.size();
  if (rank > kernels::cuda::kMaxIndexingRank ||
      a.indices_shape.size() != rank || a.axis < 0 ||
      a.axis >= static_cast<int64_t>(rank)) {
    return false;
  }
  *ix = kernels::cuda::GatherElementsIndexer{};
  ix->rank = static_cast<int>(rank);
  ix->axis = static_cast<int>(a.axis);
  ix->axis_dim = a.data_shape[a.axis];
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    ix->out_dims[d] = a.indices_shape[d];
    ix->data_strides[d] = stride;
    stride *= a.data_shape[d];
  }
  return true;
}

// The quantize kernel's type of `type`; false for another.
inline bool QuantTypeOf(DataType type, kernels::cuda::QuantType* out) {
  using K = kernels::cuda::QuantType;
  switch (type) {
    case DataType::kInt8:
      *out = K::kInt8;
      return true;
    case DataType::kUint8:
      *out = K::kUint8;
      return true;
    case DataType::kInt16:
      *out = K::kInt16;
      return true;
    case DataType::kUint16:
      *out = K::kUint16;
      return true;
    case DataType::kInt32:
      *out = K::kInt32;
      return true;
    default:
      return false;
  }
}

// The Resize kernel's indexer; y's element count, or -1 for a form the
// kernel lacks (rank above 8, cubic, tf_crop_and_resize).
inline int64_t ResizeIndexerFor(const ResizeArgs& a,
                                kernels::cuda::ResizeIndexer* ix) {
  using K = kernels::cuda::ResizeCoordinateKind;
  if (a.axes.size() > kernels::cuda::kMaxResizeRank ||
      a.mode == ResizeMode::kCubic ||
      a.coordinate == ResizeCoordinate::kTfCropAndResize) {
    return -1;
  }
  *ix = kernels::cuda::ResizeIndexer{};
  ix->rank = static_cast<int>(a.axes.size());
  ix->linear = a.mode == ResizeMode::kLinear;
  switch (a.coordinate) {
    case ResizeCoordinate::kHalfPixelSymmetric:
      ix->coordinate = K::kHalfPixelSymmetric;
      break;
    case ResizeCoordinate::kPytorchHalfPixel:
      ix->coordinate = K::kPytorchHalfPixel;
      break;
    case ResizeCoordinate::kAlignCorners:
      ix->coordinate = K::kAlignCorners;
      break;
    case ResizeCoordinate::kAsymmetric:
      ix->coordinate = K::kAsymmetric;
      break;
    case ResizeCoordinate::kTfHalfPixelForNn:
      ix->coordinate = K::kTfHalfPixelForNn;
      break;
    default:
      ix->coordinate = K::kHalfPixel;
  }
  using N = kernels::cuda::NearestKind;
  ix->nearest = a.nearest == NearestRounding::kRoundPreferCeil
                    ? N::kRoundPreferCeil
                : a.nearest == NearestRounding::kFloor ? N::kFloor
                : a.nearest == NearestRounding::kCeil  ? N::kCeil
                                                       : N::kRoundPreferFloor;
  int64_t count = 1;
  for (size_t d = 0; d < a.axes.size(); ++d) {
    ix->in[d] = a.axes[d].in;
    ix->out[d] = a.axes[d].out;
    ix->scale[d] = a.axes[d].scale;
    count *= a.axes[d].out;
  }
  return count;
}

// The strided view of StridedCopy as a Transpose kernel indexer (y's dims,
// the given strides); y's element count, or -1 for a rank above 8 or
// strides of another rank.
inline int64_t StridedIndexerFor(const std::vector<int64_t>& strides,
                                 const Shape& y,
                                 kernels::cuda::TransposeIndexer* ix) {
  if (y.size() > kernels::cuda::kMaxTransposeRank || strides.size() != y.size())
    return -1;
  *ix = kernels::cuda::TransposeIndexer{};
  ix->rank = static_cast<int>(y.size());
  int64_t count = 1;
  for (size_t d = 0; d < y.size(); ++d) {
    ix->out_dims[d] = y[d];
    ix->in_strides[d] = strides[d];
    count *= y[d];
  }
  return count;
}

// True when every element a strided view (offset, strides over y's dims)
// reads lies in x's `x_count` elements: the extremes of the view are at
// the corners of its box. A GPU would read past x silently.
inline bool StridedViewInBounds(int64_t x_count, int64_t offset,
                                const std::vector<int64_t>& strides,
                                const Shape& y) {
  int64_t lo = offset, hi = offset, count = 1;
  for (size_t d = 0; d < y.size() && d < strides.size(); ++d) {
    count *= y[d];
    const int64_t span = (y[d] - 1) * strides[d];
    (span < 0 ? lo : hi) += span;
  }
  return count == 0 || (lo >= 0 && hi < x_count);
}

// The Pad kernel's indexer; y's element count, or -1 for a rank above 8 or
// shapes of different ranks.
inline int64_t PadIndexerFor(const PadArgs& a, kernels::cuda::PadIndexer* ix) {
  const size_t rank = a.y_shape.size();
  if (rank > kernels::cuda::kMaxPadRank || a.x_shape.size() != rank ||
      a.begin.size() != rank) {
    return -1;
  }
  *ix = kernels::cuda::PadIndexer{};
  ix->rank = static_cast<int>(rank);
  ix->kind = a.mode == DevicePadMode::kEdge ? kernels::cuda::PadKind::kEdge
             : a.mode == DevicePadMode::kReflect
                 ? kernels::cuda::PadKind::kReflect
                 : kernels::cuda::PadKind::kConstant;
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    ix->out_dims[d] = a.y_shape[d];
    ix->in_dims[d] = a.x_shape[d];
    ix->begin[d] = a.begin[d];
    count *= a.y_shape[d];
  }
  return count;
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_KERNEL_ARGS_H_
