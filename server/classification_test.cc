#include "server/classification.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;

template <typename T>
void AddOutput(inference::ModelInferResponse* r, const std::string& name,
               const std::string& datatype, std::vector<int64_t> shape,
               const std::vector<T>& values) {
  auto* out = r->add_outputs();
  out->set_name(name);
  out->set_datatype(datatype);
  for (int64_t d : shape) out->add_shape(d);
  std::string* raw = r->add_raw_output_contents();
  raw->resize(values.size() * sizeof(T));
  std::memcpy(raw->data(), values.data(), raw->size());
}

std::vector<std::string> Strings(const std::string& raw) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 4 <= raw.size();) {
    uint32_t n;
    std::memcpy(&n, raw.data() + i, 4);
    out.push_back(raw.substr(i + 4, n));
    i += 4 + n;
  }
  return out;
}

TEST(ClassificationTest, TopKPerRowWithLabels) {
  inference::ModelInferResponse r;
  AddOutput<float>(&r, "probs", "FP32", {2, 4},
                   {0.1f, 0.7f, 0.2f, 0.7f,  //
                    0.9f, 0.0f, 0.05f, 0.05f});
  AddOutput<float>(&r, "other", "FP32", {2, 1}, {1, 2});
  auto labels = std::make_shared<OutputLabels>();
  (*labels)["probs"] = {"cat", "dog", "fish"};  // index 3 has no label
  ClassificationRequest c{{{"probs", 2}}, /*batching=*/true, labels};
  ASSERT_TRUE(ApplyClassification(c, &r).ok());
  EXPECT_EQ(r.outputs(0).datatype(), "BYTES");
  EXPECT_THAT(r.outputs(0).shape(), ElementsAre(2, 2));
  EXPECT_THAT(
      Strings(r.raw_output_contents(0)),
      ElementsAre("0.700000:1:dog", "0.700000:3",  // tie: lower index first
                  "0.900000:0:cat", "0.050000:2:fish"));
  EXPECT_EQ(r.outputs(1).datatype(), "FP32");  // not asked for
}

TEST(ClassificationTest, WithoutBatchingAndKAboveTheClassCount) {
  inference::ModelInferResponse r;
  AddOutput<int32_t>(&r, "scores", "INT32", {3}, {5, -2, 9});
  ClassificationRequest c{{{"scores", 10}}, /*batching=*/false, nullptr};
  ASSERT_TRUE(ApplyClassification(c, &r).ok());
  EXPECT_THAT(r.outputs(0).shape(), ElementsAre(3));
  EXPECT_THAT(Strings(r.raw_output_contents(0)),
              ElementsAre("9:2", "5:0", "-2:1"));
}

TEST(ClassificationTest, NonNumericOutputsAreRefused) {
  inference::ModelInferResponse r;
  auto* out = r.add_outputs();
  out->set_name("text");
  out->set_datatype("BYTES");
  r.add_raw_output_contents();
  ClassificationRequest c{{{"text", 1}}, false, nullptr};
  const absl::Status s = ApplyClassification(c, &r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("output 'text'"), std::string::npos) << s;
}

TEST(ClassificationTest, ParametersMustBePositiveIntegers) {
  inference::ModelInferRequest req;
  auto* a = req.add_outputs();
  a->set_name("a");
  (*a->mutable_parameters())["classification"].set_int64_param(3);
  req.add_outputs()->set_name("b");
  auto k = ReadClassificationParameters(req);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->size(), 1u);
  EXPECT_EQ(k->at("a"), 3);
  (*a->mutable_parameters())["classification"].set_int64_param(0);
  EXPECT_EQ(ReadClassificationParameters(req).status().code(),
            absl::StatusCode::kInvalidArgument);
  (*a->mutable_parameters())["classification"].set_string_param("3");
  EXPECT_FALSE(ReadClassificationParameters(req).ok());
}

TEST(ClassificationTest, LabelsAreReadInsideTheModelDirectoryOnly) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "labels_model";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "labels.txt") << "zero\r\none\ntwo\n";
  inference::ModelConfig config;
  auto* out = config.add_output();
  out->set_name("probs");
  out->set_label_filename("labels.txt");
  auto labels = ReadOutputLabels(dir, config);
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_THAT(labels->at("probs"), ElementsAre("zero", "one", "two"));
  for (const char* bad : {"../secret.txt", "/etc/passwd", "missing.txt"}) {
    out->set_label_filename(bad);
    const auto r = ReadOutputLabels(dir, config);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("output 'probs'"), std::string::npos);
  }
}

}  // namespace
}  // namespace coalesce
