// libFuzzer target: the text of a config.pbtxt through what loading does
// before the model runs: parsing, completion against a model signature,
// the size check and sequence batching's options. None may crash, whatever
// the text; errors are fine.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/model_config_completion.h"
#include "server/model_config_io.h"
#include "server/sequence_config.h"

namespace {

coalesce::ModelSignature Signature() {
  using coalesce::DataType;
  return {{{"INPUT", DataType::kFp32, {-1, 16}},
           {"START", DataType::kInt32, {-1, 1}},
           {"STATE_IN", DataType::kFp32, {-1, 4}},
           {"text", DataType::kBytes, {-1, 2}}},
          {{"OUTPUT", DataType::kFp32, {-1, 16}},
           {"STATE_OUT", DataType::kFp32, {-1, 4}}}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = coalesce::ParseModelConfigText(
      std::string(reinterpret_cast<const char*>(data), size), "m");
  if (!config.ok()) return 0;
  if (!coalesce::CompleteModelConfig(Signature(), &*config).ok()) return 0;
  (void)coalesce::CheckTensorSizes(*config, int64_t{1} << 34);
  if (config->has_sequence_batching()) {
    // No initial_state files exist there: reading them must fail cleanly.
    (void)coalesce::SequenceOptionsFromConfig(*config, "/nonexistent-model");
  }
  return 0;
}
