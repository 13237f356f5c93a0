#include "benchmarks/coalesce_bench/rest_infer_body.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace coalesce::bench {
namespace {

using Json = nlohmann::json;

TEST(RestInferBodyTest, JsonHeaderThenEachInputsBytes) {
  inference::ModelInferRequest request;
  request.set_model_name("m");
  auto* a = request.add_inputs();
  a->set_name("a");
  a->set_datatype("FP32");
  a->add_shape(1);
  a->add_shape(2);
  request.add_raw_input_contents(std::string(8, 'A'));
  auto* b = request.add_inputs();
  b->set_name("b");
  b->set_datatype("INT8");
  b->add_shape(3);
  request.add_raw_input_contents("bbb");
  (*request.mutable_parameters())["sequence_id"].set_uint64_param(7);
  request.add_outputs()->set_name("y");

  auto built = BuildRestInferBody(request);
  ASSERT_TRUE(built.ok()) << built.status();
  const Json header = Json::parse(built->body.substr(0, built->header_length));
  EXPECT_EQ(built->body.substr(built->header_length),
            std::string(8, 'A') + "bbb");
  EXPECT_EQ(header["inputs"][0]["name"], "a");
  EXPECT_EQ(header["inputs"][0]["shape"], Json::parse("[1, 2]"));
  EXPECT_EQ(header["inputs"][0]["parameters"]["binary_data_size"], 8);
  EXPECT_EQ(header["inputs"][1]["datatype"], "INT8");
  EXPECT_EQ(header["inputs"][1]["parameters"]["binary_data_size"], 3);
  EXPECT_EQ(header["parameters"]["sequence_id"], 7);
  EXPECT_EQ(header["parameters"]["binary_data_output"], true);
  EXPECT_EQ(header["outputs"][0]["name"], "y");
  EXPECT_EQ(header["outputs"][0]["parameters"]["binary_data"], true);
}

TEST(RestInferBodyTest, RefusesInputsOutsideRawContents) {
  inference::ModelInferRequest request;
  request.add_inputs()->set_name("a");
  EXPECT_FALSE(BuildRestInferBody(request).ok());
}

TEST(RestInferBodyTest, ModelPathsArePercentEncoded) {
  EXPECT_EQ(RestModelPath("mlp", ""), "/v2/models/mlp");
  EXPECT_EQ(RestModelPath("my model/x", "2"),
            "/v2/models/my%20model%2Fx/versions/2");
}

}  // namespace
}  // namespace coalesce::bench
