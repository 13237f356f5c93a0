#include "server/infer_request_decoder.h"

#include <cstring>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

using inference::ModelInferRequest;

ModelInferRequest::InferInputTensor* AddInput(ModelInferRequest* r,
                                              const std::string& name,
                                              const std::string& datatype,
                                              std::vector<int64_t> shape) {
  auto* input = r->add_inputs();
  input->set_name(name);
  input->set_datatype(datatype);
  for (int64_t d : shape) input->add_shape(d);
  return input;
}

TEST(InferRequestDecoderTest, RawInputsAreViewsIntoTheMessage) {
  ModelInferRequest proto;
  proto.set_id("7");
  AddInput(&proto, "x", "FP32", {1, 2});
  const float values[] = {1.5f, -2.0f};
  proto.add_raw_input_contents(values, sizeof(values));
  proto.add_outputs()->set_name("y");
  std::deque<std::string> converted;
  InferenceRequest request;
  ASSERT_TRUE(DecodeInferRequest(proto, &converted, &request).ok());
  EXPECT_EQ(request.id, "7");
  ASSERT_EQ(request.inputs.size(), 1u);
  EXPECT_EQ(request.inputs[0].dtype, DataType::kFp32);
  EXPECT_EQ(request.inputs[0].shape, (Shape{1, 2}));
  EXPECT_EQ(request.inputs[0].data.data(), proto.raw_input_contents(0).data());
  EXPECT_EQ(request.requested_outputs, (std::vector<std::string>{"y"}));
  EXPECT_TRUE(converted.empty());
}

TEST(InferRequestDecoderTest, TypedInputsViewOrConvert) {
  ModelInferRequest proto;
  auto* f = AddInput(&proto, "f", "FP32", {2});
  f->mutable_contents()->add_fp32_contents(3.0f);
  f->mutable_contents()->add_fp32_contents(4.0f);
  auto* i8 = AddInput(&proto, "i8", "INT8", {2});
  i8->mutable_contents()->add_int_contents(-5);
  i8->mutable_contents()->add_int_contents(7);
  auto* s = AddInput(&proto, "s", "BYTES", {1});
  s->mutable_contents()->add_bytes_contents("abc");
  std::deque<std::string> converted;
  InferenceRequest request;
  ASSERT_TRUE(DecodeInferRequest(proto, &converted, &request).ok());
  float floats[2];
  std::memcpy(floats, request.inputs[0].data.data(), sizeof(floats));
  EXPECT_EQ(floats[1], 4.0f);
  EXPECT_EQ(request.inputs[1].data, std::string("\xfb\x07", 2));
  EXPECT_EQ(request.inputs[2].data, std::string("\x03\0\0\0abc", 7));
}

TEST(InferRequestDecoderTest, ParametersPriorityAndTimeout) {
  ModelInferRequest proto;
  (*proto.mutable_parameters())["priority"].set_uint64_param(2);
  (*proto.mutable_parameters())["timeout"].set_int64_param(1500);
  (*proto.mutable_parameters())["triton_enable_empty_final_response"]
      .set_bool_param(true);
  std::deque<std::string> converted;
  InferenceRequest request;
  ASSERT_TRUE(DecodeInferRequest(proto, &converted, &request).ok());
  EXPECT_EQ(request.priority, 2u);
  ASSERT_TRUE(request.timeout.has_value());
  EXPECT_EQ(*request.timeout, std::chrono::microseconds(1500));
}

TEST(InferRequestDecoderTest, SequenceParametersAsTritonclientSendsThem) {
  ModelInferRequest proto;
  (*proto.mutable_parameters())["sequence_id"].set_int64_param(42);
  (*proto.mutable_parameters())["sequence_start"].set_bool_param(true);
  std::deque<std::string> converted;
  InferenceRequest request;
  ASSERT_TRUE(DecodeInferRequest(proto, &converted, &request).ok());
  ASSERT_TRUE(request.sequence.has_value());
  EXPECT_EQ(request.sequence->id, CorrelationId(uint64_t{42}));
  EXPECT_TRUE(request.sequence->start);
  EXPECT_FALSE(request.sequence->end);

  (*proto.mutable_parameters())["sequence_id"].set_string_param("abc");
  (*proto.mutable_parameters())["sequence_end"].set_bool_param(true);
  InferenceRequest text;
  ASSERT_TRUE(DecodeInferRequest(proto, &converted, &text).ok());
  EXPECT_EQ(text.sequence->id, CorrelationId(std::string("abc")));
  EXPECT_TRUE(text.sequence->end);

  (*proto.mutable_parameters())["sequence_id"].set_int64_param(-1);
  InferenceRequest negative;
  EXPECT_EQ(DecodeInferRequest(proto, &converted, &negative).code(),
            absl::StatusCode::kInvalidArgument);
  (*proto.mutable_parameters())["sequence_id"].set_int64_param(1);
  (*proto.mutable_parameters())["sequence_end"].set_int64_param(1);
  InferenceRequest not_bool;
  EXPECT_EQ(DecodeInferRequest(proto, &converted, &not_bool).code(),
            absl::StatusCode::kInvalidArgument);

  InferenceRequest none;
  ASSERT_TRUE(DecodeInferRequest(ModelInferRequest(), &converted, &none).ok());
  EXPECT_FALSE(none.sequence.has_value());
}

TEST(InferRequestDecoderTest, ReservedTritonParametersAreRefused) {
  ModelInferRequest proto;
  (*proto.mutable_parameters())["triton_made_up"].set_bool_param(true);
  std::deque<std::string> converted;
  InferenceRequest request;
  const absl::Status s = DecodeInferRequest(proto, &converted, &request);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'triton_made_up' is reserved"),
            absl::string_view::npos);
}

TEST(InferRequestDecoderTest, MalformedRequestsNameTheTensor) {
  auto decode = [](const ModelInferRequest& proto) {
    std::deque<std::string> converted;
    InferenceRequest request;
    return DecodeInferRequest(proto, &converted, &request);
  };
  {
    ModelInferRequest proto;
    AddInput(&proto, "x", "FLOAT", {1});
    proto.add_raw_input_contents("abcd");
    absl::Status s = decode(proto);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("'x'"), std::string::npos);
  }
  {
    ModelInferRequest proto;
    AddInput(&proto, "x", "FP32", {1})
        ->mutable_contents()
        ->add_fp32_contents(1);
    proto.add_raw_input_contents("abcd");
    absl::Status s = decode(proto);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("raw_input_contents and typed"),
              std::string::npos);
  }
  {
    ModelInferRequest proto;
    AddInput(&proto, "x", "FP32", {1})->mutable_contents()->add_int_contents(1);
    absl::Status s = decode(proto);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("'x'"), std::string::npos);
  }
  {
    ModelInferRequest proto;
    AddInput(&proto, "x", "FP32", {1});
    AddInput(&proto, "y", "FP32", {1});
    proto.add_raw_input_contents("abcd");
    EXPECT_EQ(decode(proto).code(), absl::StatusCode::kInvalidArgument);
  }
  {
    ModelInferRequest proto;
    AddInput(&proto, "x", "FP32", {-1});
    proto.add_raw_input_contents("abcd");
    EXPECT_EQ(decode(proto).code(), absl::StatusCode::kInvalidArgument);
  }
  {
    ModelInferRequest proto;
    (*proto.mutable_parameters())["timeout"].set_string_param("soon");
    EXPECT_EQ(decode(proto).code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace coalesce
