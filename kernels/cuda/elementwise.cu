#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch_util.cuh"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = kLoopThreads;

int Blocks(int64_t n) { return LoopBlocks(n); }

__global__ void ActivationKernel(Activation act, float alpha, float beta,
                                 const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = ApplyActivation(act, x[i], alpha, beta);
  }
}

__global__ void BinaryKernel(BinaryOp op, BroadcastIndexer ix, const float* a,
                             const float* b, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t ai = 0, bi = 0;
    BroadcastOffsets(ix, i, &ai, &bi);
    y[i] = ApplyBinary(op, a[ai], b[bi]);
  }
}

}  // namespace

cudaError_t LaunchActivation(Activation act, float alpha, float beta,
                             const float* x, float* y, int64_t n,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ActivationKernel<<<Blocks(n), kThreads, 0, stream>>>(act, alpha, beta, x, y,
                                                       n);
  return cudaGetLastError();
}

cudaError_t LaunchBinary(BinaryOp op, const BroadcastIndexer& ix,
                         const float* a, const float* b, float* y, int64_t n,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  BinaryKernel<<<Blocks(n), kThreads, 0, stream>>>(op, ix, a, b, y, n);
  return cudaGetLastError();
}

}  // namespace coalesce::kernels::cuda
