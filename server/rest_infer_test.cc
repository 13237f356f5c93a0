#include "server/rest_infer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "batching/inference_request.h"
#include "nlohmann/json.hpp"
#include "server/infer_request_decoder.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

std::string Serialized(const std::vector<std::string>& strings) {
  std::string s;
  for (const std::string& v : strings) {
    const uint32_t n = static_cast<uint32_t>(v.size());
    s.append(reinterpret_cast<const char*>(&n), 4);
    s += v;
  }
  return s;
}

absl::Status ErrorOf(const std::string& body,
                     std::optional<size_t> header_length = std::nullopt) {
  return ParseRestInfer(body, header_length, "m", "").status();
}

// JSON tensors, flat or nested, become the raw contents a gRPC client would
// send, and the gRPC decoder reads them as such.
TEST(RestInferTest, JsonTensorsBecomeRawContents) {
  const std::string body = R"({
    "id": "r1",
    "parameters": {"priority": 2, "sequence_id": "s", "sequence_start": true,
                   "big": 18446744073709551615, "ratio": 0.5,
                   "binary_data_output": false},
    "inputs": [
      {"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [[1, 2.5], [3, 4]]},
      {"name": "ids", "shape": [3], "datatype": "INT64", "data": [1, -2, 3]},
      {"name": "mask", "shape": [2], "datatype": "BOOL", "data": [true, false]},
      {"name": "text", "shape": [1, 2], "datatype": "BYTES", "data": ["ab", ""]},
      {"name": "u8", "shape": [2], "datatype": "UINT8", "data": [0, 255]}],
    "outputs": [{"name": "y", "parameters": {"classification": 2}}]})";
  auto request = ParseRestInfer(body, std::nullopt, "model", "3");
  ASSERT_TRUE(request.ok()) << request.status();
  const inference::ModelInferRequest& p = request->proto;
  EXPECT_EQ(p.model_name(), "model");
  EXPECT_EQ(p.model_version(), "3");
  EXPECT_EQ(p.id(), "r1");
  ASSERT_EQ(p.raw_input_contents_size(), 5);
  EXPECT_EQ(p.raw_input_contents(0), Bytes<float>({1, 2.5f, 3, 4}));
  EXPECT_EQ(p.raw_input_contents(1), Bytes<int64_t>({1, -2, 3}));
  EXPECT_EQ(p.raw_input_contents(2), std::string("\x01\x00", 2));
  EXPECT_EQ(p.raw_input_contents(3), Serialized({"ab", ""}));
  EXPECT_EQ(p.raw_input_contents(4), std::string("\x00\xff", 2));
  EXPECT_EQ(p.parameters().at("priority").int64_param(), 2);
  EXPECT_EQ(p.parameters().at("sequence_id").string_param(), "s");
  EXPECT_TRUE(p.parameters().at("sequence_start").bool_param());
  EXPECT_EQ(p.parameters().at("big").uint64_param(), UINT64_MAX);
  EXPECT_EQ(p.parameters().at("ratio").double_param(), 0.5);
  EXPECT_FALSE(p.parameters().contains("binary_data_output"));
  ASSERT_EQ(p.outputs_size(), 1);
  EXPECT_EQ(p.outputs(0).parameters().at("classification").int64_param(), 2);

  std::deque<std::string> converted;
  InferenceRequest decoded;
  ASSERT_TRUE(DecodeInferRequest(p, &converted, &decoded).ok());
  ASSERT_EQ(decoded.inputs.size(), 5u);
  EXPECT_EQ(decoded.inputs[0].shape, (Shape{2, 2}));
  EXPECT_EQ(decoded.inputs[0].data, Bytes<float>({1, 2.5f, 3, 4}));
  EXPECT_EQ(decoded.priority, 2u);
  ASSERT_TRUE(decoded.sequence.has_value());
  EXPECT_TRUE(decoded.sequence->start);
}

// The binary tensor data extension: inputs with binary_data_size take their
// bytes from after the JSON, in input order, beside JSON inputs.
TEST(RestInferTest, BinaryDataFollowsTheJsonHeader) {
  const std::string header = R"({"inputs": [
      {"name": "a", "shape": [2], "datatype": "FP16",
       "parameters": {"binary_data_size": 4}},
      {"name": "b", "shape": [1], "datatype": "INT32", "data": [7]},
      {"name": "c", "shape": [3], "datatype": "UINT8",
       "parameters": {"binary_data_size": 3}}]})";
  const std::string body = header + std::string("\x00\x3c\x00\x40", 4) + "xyz";
  auto request = ParseRestInfer(body, header.size(), "m", "");
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_EQ(request->proto.raw_input_contents_size(), 3);
  EXPECT_EQ(request->proto.raw_input_contents(0),
            std::string("\x00\x3c\x00\x40", 4));
  EXPECT_EQ(request->proto.raw_input_contents(1), Bytes<int32_t>({7}));
  EXPECT_EQ(request->proto.raw_input_contents(2), "xyz");
  EXPECT_FALSE(
      request->proto.inputs(0).parameters().contains("binary_data_size"));
}

TEST(RestInferTest, SharedMemoryInputsCarryTheirRegionAndNoData) {
  const std::string body = R"({"inputs": [
      {"name": "a", "shape": [4], "datatype": "FP32",
       "parameters": {"shared_memory_region": "r", "shared_memory_byte_size": 16}},
      {"name": "b", "shape": [1], "datatype": "FP32", "data": [1]}]})";
  auto request = ParseRestInfer(body, std::nullopt, "m", "");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->proto.raw_input_contents_size(), 1);
  EXPECT_EQ(request->proto.inputs(0)
                .parameters()
                .at("shared_memory_region")
                .string_param(),
            "r");
  EXPECT_EQ(request->proto.inputs(0)
                .parameters()
                .at("shared_memory_byte_size")
                .int64_param(),
            16);
}

// Each malformed body gets InvalidArgument naming what is wrong.
TEST(RestInferTest, BadBodiesAreRefusedNamingTheTensor) {
  struct Case {
    std::string body;
    std::optional<size_t> header_length;
    std::string message;
  };
  const std::string one = R"({"name": "x", "shape": [2], "datatype": )";
  const std::vector<Case> cases = {
      {"{not json", {}, "not a JSON object"},
      {"[1, 2]", {}, "not a JSON object"},
      {R"({"id": 1, "inputs": []})", {}, "'id' must be a string"},
      {R"({"outputs": []})", {}, "needs an 'inputs' array"},
      {R"({"inputs": [{"shape": [1], "datatype": "FP32", "data": [1]}]})",
       {},
       "needs a 'name'"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "data": [1]}]})",
       {},
       "input 'x': needs a 'shape' array"},
      {R"({"inputs": [{"name": "x", "shape": [-1], "datatype": "FP32", "data": []}]})",
       {},
       "input 'x': shape dims must be non-negative"},
      {R"({"inputs": [)" + one + R"("FP32", "data": [1, 2, 3]}]})",
       {},
       "input 'x': 3 values for shape with 2 elements"},
      {R"({"inputs": [)" + one + R"("FP32", "data": [1, "2"]}]})",
       {},
       "input 'x': value 1 is not a FP32 value (JSON numbers)"},
      {R"({"inputs": [)" + one + R"("INT8", "data": [1, 300]}]})",
       {},
       "input 'x': value 1 is not a INT8 value"},
      {R"({"inputs": [)" + one + R"("UINT32", "data": [1, -1]}]})",
       {},
       "input 'x': value 1 is not a UINT32 value"},
      {R"({"inputs": [)" + one + R"("BOOL", "data": [1, 0]}]})",
       {},
       "value 0 is not a BOOL value (JSON booleans)"},
      {R"({"inputs": [)" + one + R"("FP16", "data": [1, 2]}]})",
       {},
       "input 'x': FP16 values cannot be written in JSON"},
      {R"({"inputs": [)" + one + R"("FLOAT", "data": [1, 2]}]})",
       {},
       "input 'x': unknown datatype 'FLOAT'"},
      {R"({"inputs": [)" + one + R"("FP32"}]})",
       {},
       "input 'x': needs exactly one of"},
      {R"({"inputs": [)" + one +
           R"("FP32", "data": [1, 2], "parameters": {"binary_data_size": 8}}]})",
       {},
       "input 'x': needs exactly one of"},
      {R"({"inputs": [)" + one +
           R"("FP32", "parameters": {"binary_data_size": 8}}]})",
       {},
       "input 'x': binary_data_size 8 is past the end of the 0 bytes"},
      {R"({"inputs": [)" + one +
           R"("FP32", "parameters": {"binary_data_size": "8"}}]})",
       {},
       "'binary_data_size' must be a non-negative integer"},
      {R"({"inputs": [], "parameters": {"p": [1]}})",
       {},
       "parameter 'p' must be a bool, a number or a string"},
      {R"({"inputs": [], "parameters": {"binary_data_output": 1}})",
       {},
       "'binary_data_output' must be a bool"},
      {R"({"inputs": []})", 99, "Inference-Header-Content-Length 99 is past"},
      {R"({"inputs": []}xx)", 14, "2 bytes of binary data, but the inputs'"},
      {R"({"inputs": [], "outputs": [{"name": "y", "parameters": {"binary_data": 1}}]})",
       {},
       "output 'y': 'binary_data' must be a bool"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    const absl::Status s = ErrorOf(c.body, c.header_length);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

inference::ModelInferResponse Response() {
  inference::ModelInferResponse r;
  r.set_model_name("m");
  r.set_model_version("1");
  r.set_id("r1");
  auto add = [&r](const std::string& name, const std::string& type,
                  std::vector<int64_t> shape, std::string raw) {
    auto* o = r.add_outputs();
    o->set_name(name);
    o->set_datatype(type);
    for (int64_t d : shape) o->add_shape(d);
    r.add_raw_output_contents(std::move(raw));
  };
  add("y", "FP32", {1, 2}, Bytes<float>({0.5f, -1}));
  add("label", "BYTES", {1}, Serialized({"cat"}));
  add("h", "FP16", {1}, std::string("\x00\x3c", 2));
  add("ids", "INT64", {2}, Bytes<int64_t>({4, 5}));
  add("shm", "FP32", {1}, "");
  return r;
}

// Outputs go back as JSON values unless binary is asked for (or they are
// FP16/BF16); shared memory outputs carry their region and no data.
TEST(RestInferTest, OutputsAsJsonOrBinary) {
  const std::string body = R"({"inputs": [], "outputs": [
      {"name": "y"}, {"name": "label"}, {"name": "h"},
      {"name": "ids", "parameters": {"binary_data": true}},
      {"name": "shm", "parameters": {"shared_memory_region": "out",
                                     "shared_memory_byte_size": 4}}]})";
  auto request = ParseRestInfer(body, std::nullopt, "m", "");
  ASSERT_TRUE(request.ok()) << request.status();
  auto response = FormatRestInfer(Response(), *request);
  ASSERT_TRUE(response.ok()) << response.status();
  const Json json = Json::parse(response->json);
  EXPECT_EQ(json["model_name"], "m");
  EXPECT_EQ(json["id"], "r1");
  const Json& outs = json["outputs"];
  ASSERT_EQ(outs.size(), 5u);
  EXPECT_EQ(outs[0]["data"], Json::parse("[0.5, -1.0]"));
  EXPECT_EQ(outs[0]["shape"], Json::parse("[1, 2]"));
  EXPECT_EQ(outs[1]["data"], Json::parse(R"(["cat"])"));
  EXPECT_EQ(outs[2]["parameters"]["binary_data_size"], 2);
  EXPECT_FALSE(outs[2].contains("data"));
  EXPECT_EQ(outs[3]["parameters"]["binary_data_size"], 16);
  EXPECT_EQ(outs[4]["parameters"]["shared_memory_region"], "out");
  EXPECT_FALSE(outs[4].contains("data"));
  EXPECT_EQ(response->binary,
            std::string("\x00\x3c", 2) + Bytes<int64_t>({4, 5}));

  auto all_binary = ParseRestInfer(
      R"({"inputs": [], "parameters": {"binary_data_output": true}})",
      std::nullopt, "m", "");
  ASSERT_TRUE(all_binary.ok());
  auto binary = FormatRestInfer(Response(), *all_binary);
  ASSERT_TRUE(binary.ok());
  EXPECT_FALSE(Json::parse(binary->json)["outputs"][0].contains("data"));
  EXPECT_EQ(binary->binary.size(), 8u + 7u + 2u + 16u + 0u);
}

TEST(RestInferTest, OutputBytesThatDoNotFitTheShapeAreAnInternalError) {
  inference::ModelInferResponse r = Response();
  r.mutable_raw_output_contents(0)->resize(5);
  auto request = ParseRestInfer(R"({"inputs": []})", std::nullopt, "m", "");
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(FormatRestInfer(r, *request).status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace coalesce
