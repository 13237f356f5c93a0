#include "batching/request_validator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <string>

namespace coalesce {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RequestValidatorTest : public ::testing::Test {
 protected:
  RequestValidatorTest()
      : validator_(
            /*max_batch_size=*/4,
            {{"a", DataType::kFp32, {-1, 3}}, {"b", DataType::kInt32, {2}}},
            {{"y", DataType::kFp32, {3}}, {"z", DataType::kInt32, {}}}) {
    request_.inputs.push_back({"b", DataType::kInt32, {2, 2}, Bytes(16)});
    request_.inputs.push_back({"a", DataType::kFp32, {2, 5, 3}, Bytes(120)});
  }

  std::string_view Bytes(size_t n) {
    storage_.push_back(std::string(n, '\0'));
    return storage_.back();
  }

  void ExpectInvalid(const std::string& substring) {
    const absl::StatusOr<RequestLayout> layout = validator_.Validate(request_);
    EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(layout.status().message(), HasSubstr(substring));
  }

  std::deque<std::string> storage_;
  RequestValidator validator_;
  InferenceRequest request_;
};

TEST_F(RequestValidatorTest, ValidRequestGetsItsLayout) {
  const absl::StatusOr<RequestLayout> layout = validator_.Validate(request_);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->batch_size, 2);
  EXPECT_THAT(layout->input_order, ElementsAre(1, 0));
  EXPECT_THAT(layout->output_order, ElementsAre(0, 1));
  EXPECT_THAT(layout->item_shapes, ElementsAre(Shape{5, 3}, Shape{2}));
}

TEST_F(RequestValidatorTest, RequestedOutputsKeepTheirOrder) {
  request_.requested_outputs = {"z", "y"};
  const absl::StatusOr<RequestLayout> layout = validator_.Validate(request_);
  ASSERT_TRUE(layout.ok());
  EXPECT_THAT(layout->output_order, ElementsAre(1, 0));
}

TEST_F(RequestValidatorTest, MissingInput) {
  request_.inputs.pop_back();
  ExpectInvalid("input 'a': missing");
}

TEST_F(RequestValidatorTest, UnexpectedInput) {
  request_.inputs.push_back({"c", DataType::kFp32, {1}, Bytes(4)});
  ExpectInvalid("input 'c': unexpected");
}

TEST_F(RequestValidatorTest, DuplicateInput) {
  request_.inputs.push_back(request_.inputs[0]);
  ExpectInvalid("input 'b': duplicate");
}

TEST_F(RequestValidatorTest, DatatypeMismatch) {
  request_.inputs[1].dtype = DataType::kFp16;
  ExpectInvalid("input 'a': datatype FP16 does not match the model's FP32");
}

TEST_F(RequestValidatorTest, ShapeMismatch) {
  request_.inputs[1].shape = {2, 5, 4};
  request_.inputs[1].data = Bytes(160);
  ExpectInvalid(
      "input 'a': shape [2,5,4] does not match the model dims "
      "[-1,-1,3]");
}

TEST_F(RequestValidatorTest, MissingBatchDim) {
  request_.inputs[0].shape = {};
  ExpectInvalid("input 'b'");
}

TEST_F(RequestValidatorTest, BatchDimsDisagree) {
  request_.inputs[1].shape = {1, 10, 3};
  ExpectInvalid("input 'b': batch size 2 differs from the other inputs' 1");
}

TEST_F(RequestValidatorTest, BatchSizeZero) {
  request_.inputs[0].shape = {0, 2};
  request_.inputs[0].data = Bytes(0);
  ExpectInvalid("input 'b': batch size 0 is outside [1, 4]");
}

TEST_F(RequestValidatorTest, BatchSizeAboveMax) {
  request_.inputs[0].shape = {5, 2};
  request_.inputs[0].data = Bytes(40);
  ExpectInvalid("input 'b': batch size 5 is outside [1, 4]");
}

TEST_F(RequestValidatorTest, ByteSizeMismatch) {
  request_.inputs[0].data = Bytes(15);
  ExpectInvalid("input 'b': got 15 bytes");
}

TEST_F(RequestValidatorTest, NegativeDimension) {
  request_.inputs[1].shape = {2, -5, 3};
  ExpectInvalid("input 'a'");
}

TEST_F(RequestValidatorTest, UnknownRequestedOutput) {
  request_.requested_outputs = {"y", "w"};
  ExpectInvalid("requested output 'w'");
}

TEST_F(RequestValidatorTest, DuplicateRequestedOutput) {
  request_.requested_outputs = {"y", "y"};
  ExpectInvalid("requested output 'y': requested twice");
}

TEST(RequestValidatorNoBatchTest, FullShapeIsMatchedAndBatchSizeIsOne) {
  RequestValidator validator(/*max_batch_size=*/0,
                             {{"a", DataType::kUint8, {2, -1}}},
                             {{"y", DataType::kUint8, {2}}});
  std::string data(6, '\0');
  InferenceRequest request;
  request.inputs.push_back({"a", DataType::kUint8, {2, 3}, data});
  const absl::StatusOr<RequestLayout> layout = validator.Validate(request);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->batch_size, 1);
  EXPECT_THAT(layout->item_shapes, ElementsAre(Shape{2, 3}));
  request.inputs[0].shape = {3, 2};
  EXPECT_THAT(validator.Validate(request).status().message(),
              HasSubstr("input 'a': shape [3,2] does not match the model "
                        "dims [2,-1]"));
}

TEST(RequestValidatorBytesTest, SerializedElementsMustMatchTheShapeExactly) {
  const RequestValidator validator(/*max_batch_size=*/4,
                                   {{"s", DataType::kBytes, {2}}},
                                   {{"t", DataType::kBytes, {2}}});
  auto check = [&](const std::string& data) {
    InferenceRequest request;
    request.inputs.push_back({"s", DataType::kBytes, {1, 2}, data});
    return validator.Validate(request).status();
  };
  const std::string len1("\x01\x00\x00\x00", 4), len0("\0\0\0\0", 4);
  EXPECT_TRUE(check(len1 + "x" + len0).ok());
  absl::Status s = check(len1 + "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("input 's': BYTES data ends before its 2"));
  s = check(len1 + "x" + len0 + "zz");
  EXPECT_THAT(s.message(), HasSubstr("2 bytes after its 2 elements"));
  // A length pointing past the end of the data.
  s = check(std::string("\xff\x00\x00\x00", 4) + "x" + len0);
  EXPECT_THAT(s.message(), HasSubstr("ends before"));
}

}  // namespace
}  // namespace coalesce
