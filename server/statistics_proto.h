// Converting the batcher's statistics into Triton's ModelStatistics message.
#ifndef COALESCE_SERVER_STATISTICS_PROTO_H_
#define COALESCE_SERVER_STATISTICS_PROTO_H_

#include "batching/model_stats.h"
#include "proto/grpc_service.pb.h"
#include "server/served_model.h"

namespace coalesce {

// Fills `out` for one served version (name, numeric version, counts and
// durations, one batch_stats entry per executed batch size).
void FillModelStatistics(const ServedModel& model,
                         inference::ModelStatistics* out);

}  // namespace coalesce

#endif  // COALESCE_SERVER_STATISTICS_PROTO_H_
