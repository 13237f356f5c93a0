// The model repository the server-side fuzz targets serve: written once into
// a temporary directory (removed at exit) and loaded by a real ModelManager.
//   identity_fp32   FP32 x [-1, 4] -> y, dynamic batching (500 us)
//   identity_bytes  BYTES text [-1, 2] -> text_out, no dynamic batching
// Header-only: each fuzz target compiles just what it exercises.
#ifndef COALESCE_TESTS_FUZZ_IDENTITY_REPOSITORY_H_
#define COALESCE_TESTS_FUZZ_IDENTITY_REPOSITORY_H_

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "batching/clock.h"
#include "engine/testing/onnx_model_builder.h"
#include "server/model_manager.h"

namespace coalesce::fuzz {

inline constexpr char kFp32Model[] = "identity_fp32";
inline constexpr char kBytesModel[] = "identity_bytes";

// Ends the input as a crash that libFuzzer records.
[[noreturn]] inline void Fail(const char* target, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", target, why.c_str());
  std::abort();
}

// A ModelManager with both models loaded; aborts naming `target` when they
// do not load.
inline std::unique_ptr<ModelManager> LoadIdentityModels(const char* target) {
  namespace fs = std::filesystem;
  static std::string* root = nullptr;
  char pattern[] = "/tmp/coalesce-fuzz-repo-XXXXXX";
  if (mkdtemp(pattern) == nullptr) Fail(target, "cannot create a repository");
  root = new std::string(pattern);
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(*root, ec);
  });
  auto write = [target](const fs::path& path, const std::string& contents) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::binary);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (ec || !out) Fail(target, absl::StrCat("cannot write ", path.string()));
  };
  auto identity = [](const std::string& in, const std::string& out,
                     int64_t width, int32_t elem_type) {
    testing::OnnxModelBuilder builder;
    builder.Input(in, {-1, width}, elem_type)
        .Output(out, {-1, width}, elem_type);
    builder.Node("Identity", {in}, {out});
    return builder.Serialize();
  };
  const fs::path dir(*root);
  write(dir / kFp32Model / "config.pbtxt", R"(
name: "identity_fp32"
max_batch_size: 8
input [ { name: "x", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ 4 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: 500 }
)");
  write(dir / kFp32Model / "1" / "model.onnx",
        identity("x", "y", 4, onnx::TensorProto::FLOAT));
  write(dir / kBytesModel / "config.pbtxt", R"(
name: "identity_bytes"
max_batch_size: 4
input [ { name: "text", data_type: TYPE_STRING, dims: [ 2 ] } ]
output [ { name: "text_out", data_type: TYPE_STRING, dims: [ 2 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
)");
  write(dir / kBytesModel / "1" / "model.onnx",
        identity("text", "text_out", 2, onnx::TensorProto::STRING));
  auto manager = std::make_unique<ModelManager>(*root, RealClock());
  if (absl::Status s = manager->LoadAll(); !s.ok()) Fail(target, s.ToString());
  for (const char* model : {kFp32Model, kBytesModel}) {
    if (!manager->Find(model, "").ok()) {
      Fail(target, absl::StrCat("model '", model, "' did not load"));
    }
  }
  return manager;
}

}  // namespace coalesce::fuzz

#endif  // COALESCE_TESTS_FUZZ_IDENTITY_REPOSITORY_H_
