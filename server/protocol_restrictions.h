// ProtocolRestrictions: Triton's --grpc-restricted-protocol. Groups of RPCs
// (health, metadata, inference, shared-memory, model-config,
// model-repository, statistics, trace, logging) may each require a request
// header with a given value; a call to a restricted group without it is
// answered UNAVAILABLE "This protocol is restricted, expecting header
// '<key>'", as Triton answers. Immutable once parsed; thread-safe.
#ifndef COALESCE_SERVER_PROTOCOL_RESTRICTIONS_H_
#define COALESCE_SERVER_PROTOCOL_RESTRICTIONS_H_

#include <array>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace coalesce {

enum class ProtocolGroup {
  kHealth,           // ServerLive, ServerReady, ModelReady
  kMetadata,         // ServerMetadata, ModelMetadata
  kInference,        // ModelInfer, ModelStreamInfer
  kSharedMemory,     // system and CUDA shared memory RPCs
  kModelConfig,      // ModelConfig
  kModelRepository,  // RepositoryIndex, RepositoryModelLoad/Unload
  kStatistics,       // ModelStatistics
  kTrace,            // TraceSetting
  kLogging,          // LogSettings
};
inline constexpr int kProtocolGroups = 9;

class ProtocolRestrictions {
 public:
  // Adds one flag value "<group>[,<group>...]:<header>=<value>". The header
  // name is matched case-insensitively (gRPC sends it lower-case).
  // InvalidArgument for bad syntax, an unknown group, an empty header, or a
  // group already restricted by an earlier value.
  absl::Status Add(absl::string_view flag_value);

  // OK when `group` is open, or when `header(key)` returns the required
  // value; else Unavailable naming the header. `header` looks a request
  // header up by its lower-case name (nullopt when absent).
  absl::Status Check(
      ProtocolGroup group,
      absl::FunctionRef<std::optional<absl::string_view>(absl::string_view)>
          header) const;

  bool empty() const;

 private:
  struct Rule {
    std::string header;  // lower-case
    std::string value;
  };
  std::array<std::optional<Rule>, kProtocolGroups> rules_;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_PROTOCOL_RESTRICTIONS_H_
