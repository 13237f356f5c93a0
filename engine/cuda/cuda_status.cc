#include "engine/cuda/cuda_status.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

constexpr char kStickyPayload[] = "type.coalesce/cuda.sticky";

absl::StatusCode CodeFor(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::StatusCode::kResourceExhausted;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorDevicesUnavailable:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

bool IsStickyCudaError(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

absl::Status CudaStatus(cudaError_t error, absl::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  absl::Status status(CodeFor(error),
                      absl::StrCat(call, ": ", cudaGetErrorName(error), ": ",
                                   cudaGetErrorString(error)));
  if (IsStickyCudaError(error)) return MarkSticky(std::move(status));
  cudaGetLastError();  // not sticky: clear it
  return status;
}

absl::Status MarkSticky(absl::Status status) {
  if (!status.ok()) status.SetPayload(kStickyPayload, absl::Cord("1"));
  return status;
}

bool IsStickyCudaStatus(const absl::Status& status) {
  return status.GetPayload(kStickyPayload).has_value();
}

}  // namespace coalesce
