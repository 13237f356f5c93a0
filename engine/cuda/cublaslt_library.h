// CublasLt: cuBLASLt, loaded at run time (dlopen) the first time a GPU
// instance needs it, so libcoalesce_cuda.so itself loads where cuBLAS is not
// installed (CI, a machine with only the driver) and can say so.
//
// It looks for libcublasLt.so.<major of the headers we built against> where
// library_search.h says.
// Thread-safe; the library stays loaded for the life of the process.
#ifndef COALESCE_ENGINE_CUDA_CUBLASLT_LIBRARY_H_
#define COALESCE_ENGINE_CUDA_CUBLASLT_LIBRARY_H_

#include <cublasLt.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coalesce {

struct CublasLt {
  // The file loaded and the library's version, for logs and gpu-check.
  std::string path;
  size_t version = 0;

  decltype(&::cublasLtCreate) Create = nullptr;
  decltype(&::cublasLtDestroy) Destroy = nullptr;
  decltype(&::cublasLtGetStatusName) GetStatusName = nullptr;
  decltype(&::cublasLtMatmul) Matmul = nullptr;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute =
      nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy =
      nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute)
      MatmulPreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic = nullptr;
};

// The process's cuBLASLt; FailedPrecondition listing every place tried when
// it is not found or lacks a symbol. The result (either) is computed once.
absl::StatusOr<const CublasLt*> LoadCublasLt();

// OK for CUBLAS_STATUS_SUCCESS; ResourceExhausted for ALLOC_FAILED; else
// Internal naming `call` and the status.
absl::Status CublasStatus(const CublasLt& lt, cublasStatus_t status,
                          absl::string_view call);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUBLASLT_LIBRARY_H_
