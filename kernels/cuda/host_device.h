// COALESCE_HD marks the math shared by CUDA kernels and host code: compiled
// by nvcc it is __host__ __device__, by the host compiler a plain inline
// function, so the same lines are unit-tested on machines without a GPU.
#ifndef COALESCE_KERNELS_CUDA_HOST_DEVICE_H_
#define COALESCE_KERNELS_CUDA_HOST_DEVICE_H_

#ifdef __CUDACC__
#define COALESCE_HD __host__ __device__ __forceinline__
#else
#define COALESCE_HD inline
#endif

// `#pragma unroll` for nvcc, nothing for the host compiler (which would
// warn about a pragma it does not know).
#ifdef __CUDACC__
#define COALESCE_UNROLL _Pragma("unroll")
#else
#define COALESCE_UNROLL
#endif

#endif  // COALESCE_KERNELS_CUDA_HOST_DEVICE_H_
