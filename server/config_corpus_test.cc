// Every config of tests/configs/triton parses strictly: no field of it is
// unknown to proto/model_config.proto, so any Triton config parses and a
// feature Coalesce does not support is refused by name, never by a parse
// error. The loader's own reading (ReadModelConfig) accepts each one too.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "proto/model_config.pb.h"
#include "server/model_config_completion.h"
#include "server/model_config_io.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> Corpus() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(COALESCE_CONFIG_CORPUS)) {
    if (entry.path().extension() == ".pbtxt") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Records parse errors instead of logging them.
class Collector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    errors += "line " + std::to_string(line + 1) + " column " +
              std::to_string(column + 1) + ": " + message + "\n";
  }
  std::string errors;
};

TEST(ConfigCorpusTest, HoldsEveryKindOfConfig) {
  EXPECT_GE(Corpus().size(), 15u);
}

TEST(ConfigCorpusTest, EveryConfigParsesStrictly) {
  for (const fs::path& path : Corpus()) {
    inference::ModelConfig config;
    google::protobuf::TextFormat::Parser parser;  // unknown fields fail
    Collector collector;
    parser.RecordErrorsTo(&collector);
    EXPECT_TRUE(parser.ParseFromString(Read(path), &config))
        << path.filename() << ":\n"
        << collector.errors;
    EXPECT_EQ(config.name(), path.stem().string()) << path.filename();
  }
}

TEST(ConfigCorpusTest, TheLoaderReadsEveryConfig) {
  const fs::path repo = fs::path(testing::TempDir()) / "config_corpus_repo";
  for (const fs::path& path : Corpus()) {
    const fs::path dir = repo / path.stem();
    fs::create_directories(dir);
    fs::copy_file(path, dir / "config.pbtxt",
                  fs::copy_options::overwrite_existing);
    auto config = ReadModelConfig(dir, path.stem().string());
    EXPECT_TRUE(config.ok()) << path.filename() << ": " << config.status();
  }
}

TEST(ConfigCorpusTest, OtherBackendsAreRefusedByName) {
  struct Case {
    const char* file;
    const char* message;
  };
  for (const Case& c : {
           Case{"simple_identity",
                "backend 'python' is not supported by this server"},
           Case{"tensorrt_plan_options",
                "platform 'tensorrt_plan' is not supported by this server"},
           Case{"tensorflow_savedmodel_options",
                "platform 'tensorflow_savedmodel' is not supported"},
           Case{"ensemble_preprocess_classify",
                "platform 'ensemble' is not supported"},
       }) {
    inference::ModelConfig config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
        Read(fs::path(COALESCE_CONFIG_CORPUS) /
             (std::string(c.file) + ".pbtxt")),
        &config));
    const absl::Status status = CheckBackendSupported(config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.file;
    EXPECT_NE(status.message().find(c.message), absl::string_view::npos)
        << status.message();
  }
  for (const char* ok :
       {"simple", "densenet_onnx", "inception_onnx", "operational_options"}) {
    inference::ModelConfig config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
        Read(fs::path(COALESCE_CONFIG_CORPUS) / (std::string(ok) + ".pbtxt")),
        &config));
    EXPECT_TRUE(CheckBackendSupported(config).ok()) << ok;
  }
}

}  // namespace
}  // namespace coalesce
