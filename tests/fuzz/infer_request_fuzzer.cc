// libFuzzer target: a ModelInferRequest as it arrives off the wire, through
// the request decoder and the batcher's validator, for a batching model
// with an FP32, an INT64 and a BYTES input. Neither may crash, read out of
// bounds or leak whatever the bytes are; errors are fine.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "batching/request_validator.h"
#include "proto/grpc_service.pb.h"
#include "server/infer_request_decoder.h"

namespace {

const coalesce::RequestValidator& Validator(bool batching) {
  using coalesce::DataType;
  static const coalesce::RequestValidator batched(
      8,
      {{"x", DataType::kFp32, {-1, 4}},
       {"ids", DataType::kInt64, {3}},
       {"text", DataType::kBytes, {2}}},
      {{"y", DataType::kFp32, {4}}, {"label", DataType::kBytes, {1}}});
  static const coalesce::RequestValidator unbatched(
      0, {{"x", DataType::kFp32, {2, 2}}, {"text", DataType::kBytes, {-1}}},
      {{"y", DataType::kFp32, {2, 2}}});
  return batching ? batched : unbatched;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inference::ModelInferRequest proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  std::deque<std::string> converted;
  coalesce::InferenceRequest request;
  std::vector<coalesce::SharedMemorySpan> spans;
  if (!coalesce::DecodeInferRequest(proto, &converted, &request, nullptr,
                                    &spans)
           .ok()) {
    return 0;
  }
  for (bool batching : {true, false}) {
    (void)Validator(batching).Validate(request);
  }
  return 0;
}
