#include "server/rest_messages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/escaping.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

TEST(RestMessagesTest, SixtyFourBitIntegersAreNumbersAtEveryDepth) {
  inference::ModelMetadataResponse metadata;
  metadata.set_name("m");
  auto* input = metadata.add_inputs();
  input->set_name("x");
  input->add_shape(-1);
  input->add_shape(16);
  Json json = ProtoJson(metadata);
  EXPECT_EQ(json["inputs"][0]["shape"], Json::parse("[-1, 16]"));
  EXPECT_EQ(json["outputs"], Json::array());  // printed though empty

  inference::ModelStatisticsResponse stats;
  auto* model = stats.add_model_stats();
  model->set_inference_count(18446744073709551615ull);
  model->mutable_inference_stats()->mutable_success()->set_ns(12);
  json = ProtoJson(stats);
  EXPECT_EQ(json["model_stats"][0]["inference_count"].get<uint64_t>(),
            18446744073709551615ull);
  EXPECT_EQ(json["model_stats"][0]["inference_stats"]["success"]["ns"], 12);

  // Map values are walked too.
  inference::SystemSharedMemoryStatusResponse shm;
  auto& region = (*shm.mutable_regions())["r"];
  region.set_byte_size(4096);
  json = ProtoJson(shm);
  EXPECT_EQ(json["regions"]["r"]["byte_size"], 4096);
}

TEST(RestMessagesTest, ModelConfigKeepsProtoFieldNames) {
  inference::ModelConfig config;
  config.set_max_batch_size(8);
  auto* input = config.add_input();
  input->set_name("x");
  input->add_dims(3);
  Json json = ProtoJson(config);
  EXPECT_EQ(json["max_batch_size"], 8);
  EXPECT_EQ(json["input"][0]["dims"], Json::parse("[3]"));
  EXPECT_EQ(json["input"][0]["data_type"], "TYPE_INVALID");
}

TEST(RestMessagesTest, LoadBodyDecodesFilesAndKeepsTheConfigString) {
  const std::string config = R"({"max_batch_size": 16})";
  const std::string body = Json{
      {"parameters",
       {{"config", config},
        {"file:1/model.onnx", absl::Base64Escape(std::string("\0\1x", 3))},
        {"flag", true}}}}.dump();
  auto req = ParseLoadBody("m", body);
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->model_name(), "m");
  EXPECT_EQ(req->parameters().at("config").string_param(), config);
  EXPECT_EQ(req->parameters().at("file:1/model.onnx").bytes_param(),
            std::string("\0\1x", 3));
  EXPECT_TRUE(req->parameters().at("flag").bool_param());
  EXPECT_TRUE(ParseLoadBody("m", "").ok());
}

TEST(RestMessagesTest, MalformedBodiesNameTheField) {
  EXPECT_THAT(ParseLoadBody("m", "{").status().message(),
              HasSubstr("model load body is not valid JSON"));
  EXPECT_THAT(ParseLoadBody("m", "[1]").status().message(),
              HasSubstr("must be a JSON object"));
  EXPECT_THAT(ParseLoadBody("m", R"({"parameters": {"file:a": "!!"}})")
                  .status()
                  .message(),
              HasSubstr("'file:a' must be the file's contents in base64"));
  EXPECT_THAT(ParseIndexBody(R"({"ready": "yes"})").status().message(),
              HasSubstr("'ready' must be a bool"));
  EXPECT_THAT(ParseUnloadBody("m", R"({"parameters": 3})").status().message(),
              HasSubstr("'parameters' must be an object"));
  EXPECT_THAT(
      ParseSystemRegisterBody("r", R"({"byte_size": 4})").status().message(),
      HasSubstr("needs 'key'"));
  EXPECT_THAT(ParseSystemRegisterBody("r", R"({"key": "/k", "offset": -1})")
                  .status()
                  .message(),
              HasSubstr("'offset' must be an unsigned integer"));
  EXPECT_THAT(
      ParseCudaRegisterBody("r", R"({"raw_handle": "abc"})").status().message(),
      HasSubstr("needs 'raw_handle'"));
}

TEST(RestMessagesTest, RegisterBodies) {
  auto system = ParseSystemRegisterBody(
      "r", R"({"key": "/k", "offset": 8, "byte_size": 64})");
  ASSERT_TRUE(system.ok()) << system.status();
  EXPECT_EQ(system->name(), "r");
  EXPECT_EQ(system->key(), "/k");
  EXPECT_EQ(system->offset(), 8u);
  EXPECT_EQ(system->byte_size(), 64u);
  const std::string handle(64, '\7');
  auto cuda = ParseCudaRegisterBody(
      "c", Json{{"raw_handle", {{"b64", absl::Base64Escape(handle)}}},
                {"device_id", 1},
                {"byte_size", 1024}}
               .dump());
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_EQ(cuda->raw_handle(), handle);
  EXPECT_EQ(cuda->device_id(), 1);
  EXPECT_EQ(cuda->byte_size(), 1024u);
}

TEST(RestMessagesTest, ParametersKeepTheirJsonType) {
  EXPECT_TRUE(InferParameterFromJson("k", Json(true))->bool_param());
  EXPECT_EQ(InferParameterFromJson("k", Json(-3))->int64_param(), -3);
  EXPECT_EQ(InferParameterFromJson("k", Json(18446744073709551615ull))
                ->uint64_param(),
            18446744073709551615ull);
  EXPECT_EQ(InferParameterFromJson("k", Json(0.5))->double_param(), 0.5);
  EXPECT_EQ(InferParameterFromJson("k", Json("s"))->string_param(), "s");
  EXPECT_THAT(InferParameterFromJson("k", Json::array()).status().message(),
              HasSubstr("parameter 'k' must be"));
}

}  // namespace
}  // namespace coalesce
