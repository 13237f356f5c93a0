// BuildInferRequest: a ModelInferRequest a benchmark sends (one of the
// request pool's variants, request_pool.h), with its inputs as
// raw_input_contents (as Triton's clients send them) and no requested
// outputs (the server returns every output).
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_INFER_REQUEST_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_INFER_REQUEST_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/coalesce_bench/input_data.h"
#include "proto/grpc_service.pb.h"

namespace coalesce::bench {

struct RequestContents {
  std::string model;
  std::string version;             // empty: latest
  std::vector<TensorSpec> inputs;  // resolved shapes
  std::string input_data_dir;      // empty: seeded random data
  // Input i's random data uses seed + i.
  uint64_t seed = 1;
  // Inputs whose bytes are given (a padding mask): used as they are, neither
  // read from input_data_dir nor generated.
  std::map<std::string, std::string> given;
};

// Errors from reading or generating an input (input_data.h).
absl::StatusOr<inference::ModelInferRequest> BuildInferRequest(
    const RequestContents& contents);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_INFER_REQUEST_H_
