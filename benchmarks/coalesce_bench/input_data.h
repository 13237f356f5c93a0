// The input tensors a benchmark sends: their resolved shapes and their bytes.
//
// Shapes come from the model's metadata (which has -1 for variable
// dimensions, and a leading -1 batch dimension when the model's config has
// max_batch_size > 0), completed by --batch-size and --shape. Bytes are
// either seeded random values of the right datatype or the contents of a raw
// file per input (little-endian, row-major, no header; BYTES elements as a
// 4-byte little-endian length then the bytes, as on the wire).
// Pure functions apart from ReadTensorFile's file read; thread-compatible.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_INPUT_DATA_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_INPUT_DATA_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coalesce::bench {

struct TensorSpec {
  std::string name;
  std::string datatype;        // wire name: FP32, INT64, BYTES, ...
  std::vector<int64_t> shape;  // -1 = variable (only before resolution)
};

// Bytes per element of a fixed-size datatype; 0 for BYTES. InvalidArgument
// for an unknown datatype string.
absl::StatusOr<int64_t> DatatypeByteSize(absl::string_view datatype);

// Number of elements of a fully resolved shape. REQUIRES: no dim < 0.
int64_t ElementCount(const std::vector<int64_t>& shape);

struct ShapeRequest {
  int64_t max_batch_size = 0;  // from ModelConfig; 0 = the model does not batch
  int64_t batch_size = 1;      // first dim when max_batch_size > 0
  bool batch_size_set = false;  // --batch-size given explicitly
  // --shape: dims without the batch dimension when the model batches.
  std::map<std::string, std::vector<int64_t>> shapes;
};

// Every input of `metadata_inputs` with a concrete shape. InvalidArgument,
// naming the input and the flag to use, when a variable dimension has no
// --shape, when a --shape disagrees with a fixed dimension or names no input,
// or when the batch size is out of range for the model.
absl::StatusOr<std::vector<TensorSpec>> ResolveInputShapes(
    const std::vector<TensorSpec>& metadata_inputs,
    const ShapeRequest& request);

// Seeded random contents for `spec` (resolved): floats uniform in [-1, 1),
// integers in [0, 100), BOOL 0/1, BYTES short ASCII strings.
absl::StatusOr<std::string> RandomTensorData(const TensorSpec& spec,
                                             uint64_t seed);

// Contents of the file `dir`/<input name>. InvalidArgument (naming the file,
// its size and the expected size) when it does not match the spec; NotFound
// when it cannot be read.
absl::StatusOr<std::string> ReadTensorFile(const std::string& dir,
                                           const TensorSpec& spec);

// Checks that `data` holds exactly `elements` length-prefixed BYTES elements.
absl::Status CheckBytesTensor(absl::string_view data, int64_t elements);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_INPUT_DATA_H_
