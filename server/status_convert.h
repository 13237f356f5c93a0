// The one place an absl::Status becomes a grpc::Status. The codes are the
// same numbers in both (both follow google.rpc.Code).
#ifndef COALESCE_SERVER_STATUS_CONVERT_H_
#define COALESCE_SERVER_STATUS_CONVERT_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace coalesce {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace coalesce

#endif  // COALESCE_SERVER_STATUS_CONVERT_H_
