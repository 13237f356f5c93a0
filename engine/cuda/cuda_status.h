// CUDA runtime errors as absl::Status, the one conversion the plugin uses.
//
// Codes: out of memory -> ResourceExhausted; no driver or no device ->
// Unavailable; anything else -> Internal. The message names the call and the
// runtime's error name and text. Errors that leave the CUDA context unusable
// (kernel faults: illegal address, launch failure, ...) carry a payload that
// IsStickyCudaStatus recognises.
#ifndef COALESCE_ENGINE_CUDA_CUDA_STATUS_H_
#define COALESCE_ENGINE_CUDA_CUDA_STATUS_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace coalesce {

// OK for cudaSuccess.
absl::Status CudaStatus(cudaError_t error, absl::string_view call);

bool IsStickyCudaError(cudaError_t error);
bool IsStickyCudaStatus(const absl::Status& status);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_STATUS_H_
