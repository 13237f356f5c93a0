// DeviceKernels' floating operands (FloatIn, FloatOut:
// engine/device/device_kernels.h) as kernels/cuda/ takes them
// (kernels/cuda/float_storage.h): the same address, the storage mapped.
// Header-only; part of libcoalesce_cuda.so.
#ifndef COALESCE_ENGINE_CUDA_CUDA_FLOAT_ARGS_H_
#define COALESCE_ENGINE_CUDA_CUDA_FLOAT_ARGS_H_

#include "engine/device/device_kernels.h"
#include "kernels/cuda/float_storage.h"

namespace coalesce {

inline kernels::cuda::FloatStorage ToKernel(DeviceFloat type) {
  return type == DeviceFloat::kHalf ? kernels::cuda::FloatStorage::kHalf
                                    : kernels::cuda::FloatStorage::kFloat;
}

inline kernels::cuda::FloatSource ToKernel(FloatIn x) {
  return {x.data, ToKernel(x.type)};
}

inline kernels::cuda::FloatTarget ToKernel(FloatOut y) {
  return {y.data, ToKernel(y.type)};
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_FLOAT_ARGS_H_
