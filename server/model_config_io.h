// Reading a model's config.pbtxt and listing its version folders: the on-disk
// side of a Triton-style repository (<repo>/<model>/config.pbtxt,
// <repo>/<model>/<version>/model.onnx). Stateless functions; thread-safe.
#ifndef COALESCE_SERVER_MODEL_CONFIG_IO_H_
#define COALESCE_SERVER_MODEL_CONFIG_IO_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/model_config.pb.h"

namespace coalesce {

// Parses <model_dir>/config.pbtxt as protobuf text. A missing file gives an
// empty config (to be completed from the model). Fields this build does not
// know are skipped. InvalidArgument naming the line and column on a syntax
// error, or when the config's name differs from `model_name`. The returned
// config has its name set.
absl::StatusOr<inference::ModelConfig> ReadModelConfig(
    const std::filesystem::path& model_dir, const std::string& model_name);

// ReadModelConfig's parsing and name check, on the text of a config.pbtxt.
absl::StatusOr<inference::ModelConfig> ParseModelConfigText(
    const std::string& text, const std::string& model_name);

// Version folders of a model (positive integer names), ascending.
std::vector<int64_t> ListVersionFolders(const std::filesystem::path& model_dir);

// The versions `policy` selects from `available` (ascending): latest N
// (default 1), all, or the specific ones that exist.
std::vector<int64_t> SelectVersions(const inference::ModelVersionPolicy& policy,
                                    const std::vector<int64_t>& available);

// Model folders of a repository (subdirectories), sorted by name.
absl::StatusOr<std::vector<std::string>> ListModelFolders(
    const std::filesystem::path& repository);

}  // namespace coalesce

#endif  // COALESCE_SERVER_MODEL_CONFIG_IO_H_
