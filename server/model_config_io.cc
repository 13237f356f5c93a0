#include "server/model_config_io.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;

// Collects the first parse error as text.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (error_.empty()) {
      error_ = absl::StrCat("line ", line + 1, " column ", column + 1, ": ",
                            message);
    }
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

bool ParsePositiveInt(const std::string& text, int64_t* value) {
  if (text.empty() || text[0] == '0') return false;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size() && *value > 0;
}

}  // namespace

absl::StatusOr<inference::ModelConfig> ReadModelConfig(
    const fs::path& model_dir, const std::string& model_name) {
  inference::ModelConfig config;
  const fs::path path = model_dir / "config.pbtxt";
  std::error_code ec;
  if (fs::exists(path, ec)) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read config.pbtxt of model '", model_name, "'"));
    }
    return ParseModelConfigText(text.str(), model_name);
  }
  config.set_name(model_name);
  return config;
}

absl::StatusOr<inference::ModelConfig> ParseModelConfigText(
    const std::string& text, const std::string& model_name) {
  inference::ModelConfig config;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(true);
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.pbtxt of model '", model_name, "': ", errors.error()));
  }
  if (!config.name().empty() && config.name() != model_name) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.pbtxt names the model '", config.name(),
                     "' but its folder is '", model_name, "'"));
  }
  config.set_name(model_name);
  return config;
}

std::vector<int64_t> ListVersionFolders(const fs::path& model_dir) {
  std::vector<int64_t> versions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(model_dir, ec)) {
    int64_t version = 0;
    if (entry.is_directory(ec) &&
        ParsePositiveInt(entry.path().filename().string(), &version)) {
      versions.push_back(version);
    }
  }
  std::sort(versions.begin(), versions.end());
  return versions;
}

std::vector<int64_t> SelectVersions(const inference::ModelVersionPolicy& policy,
                                    const std::vector<int64_t>& available) {
  using Policy = inference::ModelVersionPolicy;
  switch (policy.policy_choice_case()) {
    case Policy::kAll:
      return available;
    case Policy::kSpecific: {
      std::vector<int64_t> chosen;
      for (int64_t v : available) {
        const auto& wanted = policy.specific().versions();
        if (std::find(wanted.begin(), wanted.end(), v) != wanted.end()) {
          chosen.push_back(v);
        }
      }
      return chosen;
    }
    case Policy::kLatest:
    case Policy::POLICY_CHOICE_NOT_SET:
      break;
  }
  size_t n = 1;
  if (policy.has_latest() && policy.latest().num_versions() > 0) {
    n = policy.latest().num_versions();
  }
  n = std::min(n, available.size());
  return std::vector<int64_t>(available.end() - n, available.end());
}

absl::StatusOr<std::vector<std::string>> ListModelFolders(
    const fs::path& repository) {
  std::error_code ec;
  if (!fs::is_directory(repository, ec)) {
    return absl::NotFoundError(absl::StrCat(
        "model repository '", repository.string(), "' is not a directory"));
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(repository, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && !name.empty() && name[0] != '.') {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace coalesce
