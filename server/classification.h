// Triton's classification extension: a requested output with the parameter
// `classification: k` is returned as its top k classes instead of its
// values, as BYTES strings "score:index:label" (":label" only when the
// output's label_filename has a line for that index), highest score first,
// ties by lower index. Per batch row for batching models: [rows, k] (else
// [k]); k is capped at the number of classes (every element after the batch
// dimension is a class). Scores print as std::to_string of their type
// ("0.750000" for floats), as Triton does.
#ifndef COALESCE_SERVER_CLASSIFICATION_H_
#define COALESCE_SERVER_CLASSIFICATION_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/grpc_service.pb.h"
#include "proto/model_config.pb.h"

namespace coalesce {

// Output name -> its labels, line by line.
using OutputLabels = std::map<std::string, std::vector<std::string>>;

// The labels of every output of `config` with a label_filename, read from
// `model_dir`. InvalidArgument naming the output and file when one cannot
// be read or names a path outside the model directory.
absl::StatusOr<OutputLabels> ReadOutputLabels(
    const std::filesystem::path& model_dir,
    const inference::ModelConfig& config);

// What a request asked for: output name -> k.
struct ClassificationRequest {
  std::map<std::string, int64_t> top_k;
  bool batching = false;  // the model's outputs start with the batch dimension
  std::shared_ptr<const OutputLabels> labels;  // may be null
};

// The `classification` parameters of `request`'s requested outputs.
// InvalidArgument naming the output for a value that is not a positive
// integer.
absl::StatusOr<std::map<std::string, int64_t>> ReadClassificationParameters(
    const inference::ModelInferRequest& request);

// Replaces each output of `response` named in `classification` (raw contents
// in raw_output_contents, by position) with its classes. InvalidArgument
// for a non-numeric output.
absl::Status ApplyClassification(const ClassificationRequest& classification,
                                 inference::ModelInferResponse* response);

}  // namespace coalesce

#endif  // COALESCE_SERVER_CLASSIFICATION_H_
