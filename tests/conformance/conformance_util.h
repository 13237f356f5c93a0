// Pieces of the ONNX conformance runner that are worth testing on their own:
// comparing a result with an expected tensor the way the ONNX backend tests
// do (numpy allclose), and telling an "unsupported" load error from a real
// failure.
//
// Everything here is a pure function of its arguments and thread-safe.
#ifndef COALESCE_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
#define COALESCE_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/data_type.h"
#include "engine/shape.h"
#include "engine/tensor_file.h"

namespace coalesce::conformance {

// Tensors and tensor files (HostTensor, ReadTensorFile, WriteTensorFile) are
// the engine's (engine/tensor_file.h).

struct Tolerance {
  double rtol = 1e-3;  // the ONNX backend runner's defaults
  double atol = 1e-7;
};

// OK when `actual` has the dtype and shape of `expected` and every element
// satisfies |actual - expected| <= atol + rtol * |expected| (numpy allclose,
// `expected` being numpy's `b`). NaN equals NaN and an infinity equals the
// same infinity (np.testing.assert_allclose, which the ONNX backend uses).
// Integer and bool elements go through the same formula as doubles.
// Otherwise InvalidArgument describing the mismatch count, the worst element
// and its values.
absl::Status AllClose(const HostTensor& expected, const HostTensor& actual,
                      const Tolerance& tolerance);

// Why Model::Load rejected a model, when the reason is a missing feature of
// the engine rather than a bug: the op types or data types it named.
struct UnsupportedReason {
  // "Cos", "Erf", "com.microsoft/FusedConv": every distinct operator named,
  // in first-seen order.
  std::vector<std::string> ops;
  // "datatype STRING", "non-tensor value" (a sequence, map or optional).
  std::vector<std::string> datatypes;
};

// Reads Model::LoadFromFile's error message. An empty result (no ops and no
// datatypes) means the error is not about support: the case failed.
UnsupportedReason ParseLoadError(const absl::Status& status);

}  // namespace coalesce::conformance

#endif  // COALESCE_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
