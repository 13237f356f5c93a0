// CUDA runtime errors as absl::Status, the one conversion the plugin uses.
//
// Codes: out of memory -> ResourceExhausted; no driver or no device ->
// Unavailable; anything else -> Internal. The message names the call and the
// runtime's error name and text. Errors that leave the CUDA context unusable
// (kernel faults: illegal address, launch failure, ...) carry a payload that
// IsStickyCudaStatus recognises. A non-sticky error is also cleared from the
// runtime's per-thread last error, so it cannot fail a later, unrelated call.
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
// `status` marked sticky (unchanged when OK).
absl::Status MarkSticky(absl::Status status);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_STATUS_H_
