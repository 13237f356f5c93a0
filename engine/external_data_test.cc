#include "engine/external_data.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/half.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::HostTensor;
using testing::OnnxModelBuilder;

// A fresh folder per test, removed afterwards.
class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("coalesce_external_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    folder_ = root_ / "model" / "1";
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // y = x [1, 4] MatMul w [4, 2], with w's 8 floats stored externally.
  static OnnxModelBuilder MatMulModel(const std::vector<float>& w) {
    OnnxModelBuilder b(/*opset=*/17);
    b.Input("x", {1, 4}).Output("y", {1, 2});
    b.FloatInitializer("w", {4, 2}, w);
    b.Node("MatMul", {"x", "w"}, {"y"});
    return b;
  }

  // Moves initializer `name`'s raw bytes to `file` (relative to the model
  // folder) at `offset`, and points the tensor there.
  void Externalize(OnnxModelBuilder& b, const std::string& name,
                   const std::string& location, const fs::path& file,
                   int64_t offset, bool with_length = true) {
    for (onnx::TensorProto& t :
         *b.proto().mutable_graph()->mutable_initializer()) {
      if (t.name() != name) continue;
      std::string bytes = t.raw_data();
      if (bytes.empty()) {  // typed floats: write them as raw bytes
        for (float f : t.float_data())
          bytes.append(reinterpret_cast<const char*>(&f), sizeof f);
        t.clear_float_data();
      }
      WriteAt(file, offset, bytes);
      t.clear_raw_data();
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      AddEntry(t, "location", location);
      AddEntry(t, "offset", std::to_string(offset));
      if (with_length) AddEntry(t, "length", std::to_string(bytes.size()));
    }
  }

  static void AddEntry(onnx::TensorProto& t, const std::string& key,
                       const std::string& value) {
    onnx::StringStringEntryProto* e = t.add_external_data();
    e->set_key(key);
    e->set_value(value);
  }

  static void WriteAt(const fs::path& file, int64_t offset,
                      const std::string& bytes) {
    if (!fs::exists(file)) std::ofstream(file, std::ios::binary).flush();
    std::fstream out(file, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(offset);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  std::string Save(const OnnxModelBuilder& b) {
    const fs::path path = folder_ / "model.onnx";
    std::ofstream(path, std::ios::binary) << b.Serialize();
    return path.string();
  }

  static std::vector<float> Run(std::shared_ptr<const Model> model) {
    auto out = testing::RunModelOnce(
        std::move(model), {HostTensor{{1, 4}, {1.0f, 2.0f, 3.0f, 4.0f}}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0].data : std::vector<float>{};
  }

  const ConstantTensor* ConstantNamed(const Model& model,
                                      const std::string& name) {
    const Graph& g = model.graph();
    for (size_t id = 0; id < g.value_names.size(); ++id)
      if (g.value_names[id] == name) return g.constants[id].get();
    return nullptr;
  }

  fs::path root_, folder_;
};

// Column 0 of w is all 1, column 1 counts 1..4: y = [10, 30].
const std::vector<float> kWeights = {1, 1, 1, 2, 1, 3, 1, 4};
const std::vector<float> kExpected = {10, 30};

TEST_F(ExternalDataTest, AlignedTensorIsMappedNotCopied) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "model.onnx.data", folder_ / "model.onnx.data",
              /*offset=*/4096);
  auto model = Model::LoadFromFile(Save(b));
  ASSERT_TRUE(model.ok()) << model.status();
  const ConstantTensor* w = ConstantNamed(**model, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->mapped, nullptr);
  EXPECT_NE(w->mapping, nullptr);
  EXPECT_EQ(w->bytes(), w->mapped);
  EXPECT_EQ(Run(*model), kExpected);
}

TEST_F(ExternalDataTest, UnalignedTensorIsCopied) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "weights.bin", folder_ / "weights.bin", /*offset=*/13);
  auto model = Model::LoadFromFile(Save(b));
  ASSERT_TRUE(model.ok()) << model.status();
  const ConstantTensor* w = ConstantNamed(**model, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->mapped, nullptr);
  EXPECT_EQ(Run(*model), kExpected);
}

TEST_F(ExternalDataTest, LengthMayBeOmittedAndSubfoldersAreInside) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  fs::create_directories(folder_ / "weights");
  Externalize(b, "w", "weights/w.bin", folder_ / "weights" / "w.bin",
              /*offset=*/0, /*with_length=*/false);
  auto model = Model::LoadFromFile(Save(b));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(Run(*model), kExpected);
}

TEST_F(ExternalDataTest, TensorBeyondTwoGibibytesLoads) {
  // A sparse file: 3 GiB long, the tensor at 2.5 GiB (past int32 offsets).
  const int64_t offset = int64_t{5} << 29;
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "big.data", folder_ / "big.data", offset);
  fs::resize_file(folder_ / "big.data", uintmax_t{3} << 30);
  auto model = Model::LoadFromFile(Save(b));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(Run(*model), kExpected);
}

TEST_F(ExternalDataTest, HalfTensorIsReadByTheOptimizer) {
  // FP16 weights are converted to FP32 at load by the optimizer's first
  // pass, which must read them from the external file.
  OnnxModelBuilder b(/*opset=*/17);
  b.Input("x", {1, 4}).Output("y", {1, 2});
  std::vector<uint16_t> half;
  for (float f : kWeights) half.push_back(kernels::FloatToHalfBits(f));
  b.RawInitializer("w", onnx::TensorProto::FLOAT16, {4, 2}, half.data(),
                   half.size() * sizeof(uint16_t));
  testing::SetIntAttr(b.Node("Cast", {"w"}, {"wf"}), "to",
                      onnx::TensorProto::FLOAT);
  b.Node("MatMul", {"x", "wf"}, {"y"});
  Externalize(b, "w", "model.onnx.data", folder_ / "model.onnx.data",
              /*offset=*/64);
  auto model = Model::LoadFromFile(Save(b));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(Run(*model), kExpected);
}

TEST_F(ExternalDataTest, ParentFolderIsRefused) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "../w.bin", folder_.parent_path() / "w.bin", 0);
  auto model = Model::LoadFromFile(Save(b));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              ::testing::AllOf(HasSubstr("tensor 'w'"),
                               HasSubstr("leaves the model's folder")));
}

TEST_F(ExternalDataTest, AbsolutePathIsRefused) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  const fs::path file = root_ / "w.bin";
  Externalize(b, "w", file.string(), file, 0);
  auto model = Model::LoadFromFile(Save(b));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("is absolute"));
}

TEST_F(ExternalDataTest, SymbolicLinksInTheFolderAreFollowed) {
  // The repository owner's link to a shared copy: the location itself stays
  // inside the folder, so it loads.
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "link.bin", root_ / "shared.bin", 0);
  fs::create_symlink(root_ / "shared.bin", folder_ / "link.bin");
  auto model = Model::LoadFromFile(Save(b));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(Run(*model), kExpected);
}

TEST_F(ExternalDataTest, FolderIsNotARegularFile) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "w.bin", folder_ / "w.bin", 0);
  fs::remove(folder_ / "w.bin");
  fs::create_directory(folder_ / "w.bin");
  auto model = Model::LoadFromFile(Save(b));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("is not a regular file"));
}

TEST_F(ExternalDataTest, ShortFileIsRefused) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "w.bin", folder_ / "w.bin", 0);
  fs::resize_file(folder_ / "w.bin", 20);  // 32 bytes needed
  auto model = Model::LoadFromFile(Save(b));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              ::testing::AllOf(HasSubstr("tensor 'w'"),
                               HasSubstr("has 20 bytes; the tensor needs 32")));
}

TEST_F(ExternalDataTest, OffsetPastTheEndIsRefused) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "w.bin", folder_ / "w.bin", 0);
  for (auto& e : *b.proto()
                      .mutable_graph()
                      ->mutable_initializer(0)
                      ->mutable_external_data())
    if (e.key() == "offset") e.set_value("18446744073709551615");
  auto model = Model::LoadFromFile(Save(b));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("has 32 bytes"));
}

TEST_F(ExternalDataTest, WrongLengthIsRefused) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "w.bin", folder_ / "w.bin", 0);
  for (auto& e : *b.proto()
                      .mutable_graph()
                      ->mutable_initializer(0)
                      ->mutable_external_data())
    if (e.key() == "length") e.set_value("16");
  auto model = Model::LoadFromFile(Save(b));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("length 16 does not match the 32 bytes"));
}

TEST_F(ExternalDataTest, MissingFileIsNotFound) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "w.bin", folder_ / "w.bin", 0);
  fs::remove(folder_ / "w.bin");
  auto model = Model::LoadFromFile(Save(b));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("'w.bin'"));
}

TEST_F(ExternalDataTest, MalformedEntriesAreRefused) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "w.bin", folder_ / "w.bin", 0);
  onnx::TensorProto& t = *b.proto().mutable_graph()->mutable_initializer(0);
  for (auto& e : *t.mutable_external_data())
    if (e.key() == "offset") e.set_value("-4");
  EXPECT_THAT(std::string(Model::LoadFromFile(Save(b)).status().message()),
              HasSubstr("offset '-4' is not a non-negative integer"));
  t.clear_external_data();
  auto model = Model::LoadFromFile(Save(b));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("external data has no location"));
}

TEST_F(ExternalDataTest, ModelInMemoryCannotReadExternalData) {
  OnnxModelBuilder b = MatMulModel(kWeights);
  Externalize(b, "w", "w.bin", folder_ / "w.bin", 0);
  auto model = Model::LoadFromBytes(b.Serialize());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("external data needs the model's folder"));
}

TEST_F(ExternalDataTest, OneMappingServesEveryTensorOfAFile) {
  OnnxModelBuilder b(/*opset=*/17);
  b.Input("x", {1, 4}).Output("y", {1, 2});
  b.FloatInitializer("w", {4, 2}, kWeights);
  b.FloatInitializer("bias", {2}, {0.5f, -0.5f});
  b.Node("MatMul", {"x", "w"}, {"h"});
  b.Node("Add", {"h", "bias"}, {"y"});
  Externalize(b, "w", "model.onnx.data", folder_ / "model.onnx.data", 0);
  Externalize(b, "bias", "model.onnx.data", folder_ / "model.onnx.data", 64);
  auto model = Model::LoadFromFile(Save(b));
  ASSERT_TRUE(model.ok()) << model.status();
  const ConstantTensor* w = ConstantNamed(**model, "w");
  const ConstantTensor* bias = ConstantNamed(**model, "bias");
  ASSERT_TRUE(w != nullptr && bias != nullptr);
  EXPECT_NE(w->mapping, nullptr);
  EXPECT_EQ(w->mapping, bias->mapping);
  EXPECT_EQ(Run(*model), (std::vector<float>{10.5f, 29.5f}));
}

}  // namespace
}  // namespace coalesce
