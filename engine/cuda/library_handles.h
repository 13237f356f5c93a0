// LibHandle: the owner of one handle or descriptor of a library the plugin
// loads at run time (cuBLASLt: cublaslt_library.h; cuDNN: cudnn_library.h).
// It destroys what it holds through the library's function table, the only
// way to reach a dlopened library, so no code path pairs a Create with a
// Destroy by hand: not a destructor, not an error path.
//
// Use: make it with its table, then let the library's Create write into
// receive(): `lt.MatmulDescCreate(desc.receive(), ...)`. The table must
// outlive it (the tables live for the process). A Destroy's status is
// dropped: there is nothing left to do about it. Movable, not copyable; one
// owner, so not thread-safe.
#ifndef COALESCE_ENGINE_CUDA_LIBRARY_HANDLES_H_
#define COALESCE_ENGINE_CUDA_LIBRARY_HANDLES_H_

#include <cublasLt.h>
#include <cudnn.h>

#include <utility>

#include "engine/cuda/cublaslt_library.h"
#include "engine/cuda/cudnn_library.h"

namespace coalesce {

// `kDestroy` is the table's member holding the Destroy function of T.
template <typename Table, typename T, auto kDestroy>
class LibHandle {
 public:
  explicit LibHandle(const Table& table) : table_(&table) {}
  ~LibHandle() { reset(); }

  LibHandle(LibHandle&& other) noexcept
      : table_(other.table_), handle_(std::exchange(other.handle_, nullptr)) {}
  LibHandle& operator=(LibHandle&& other) noexcept {
    if (this != &other) {
      reset();
      table_ = other.table_;
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  LibHandle(const LibHandle&) = delete;
  LibHandle& operator=(const LibHandle&) = delete;

  // Null until a Create succeeded.
  T get() const { return handle_; }

  // Destroys what it holds and returns where a Create writes the new one.
  T* receive() {
    reset();
    return &handle_;
  }

  void reset() {
    if (handle_ != nullptr) (table_->*kDestroy)(handle_);
    handle_ = nullptr;
  }

 private:
  const Table* table_;
  T handle_ = nullptr;
};

using LtHandle = LibHandle<CublasLt, cublasLtHandle_t, &CublasLt::Destroy>;
using LtMatmulDesc =
    LibHandle<CublasLt, cublasLtMatmulDesc_t, &CublasLt::MatmulDescDestroy>;
using LtMatrixLayout =
    LibHandle<CublasLt, cublasLtMatrixLayout_t, &CublasLt::MatrixLayoutDestroy>;
using LtMatmulPreference = LibHandle<CublasLt, cublasLtMatmulPreference_t,
                                     &CublasLt::MatmulPreferenceDestroy>;

using DnnHandle = LibHandle<Cudnn, cudnnHandle_t, &Cudnn::Destroy>;
using DnnTensorDesc =
    LibHandle<Cudnn, cudnnTensorDescriptor_t, &Cudnn::DestroyTensorDescriptor>;
using DnnFilterDesc =
    LibHandle<Cudnn, cudnnFilterDescriptor_t, &Cudnn::DestroyFilterDescriptor>;
using DnnConvolutionDesc = LibHandle<Cudnn, cudnnConvolutionDescriptor_t,
                                     &Cudnn::DestroyConvolutionDescriptor>;
using DnnActivationDesc = LibHandle<Cudnn, cudnnActivationDescriptor_t,
                                    &Cudnn::DestroyActivationDescriptor>;

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_LIBRARY_HANDLES_H_
