#include "tests/conformance/conformance_util.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "gtest/gtest.h"

namespace coalesce::conformance {
namespace {

HostTensor Floats(const Shape& shape, const std::vector<float>& values) {
  HostTensor t{"t", DataType::kFp32, shape,
               std::string(values.size() * 4, '\0')};
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

TEST(TensorFromProtoTest, ReadsRawData) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(2);
  const float values[] = {1.5f, -2.0f};
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(values), 8));
  absl::StatusOr<HostTensor> t = TensorFromProto(proto);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype, DataType::kFp32);
  EXPECT_EQ(t->shape, (Shape{2}));
  EXPECT_TRUE(AllClose(Floats({2}, {1.5f, -2.0f}), *t, Tolerance{}).ok());
}

TEST(TensorFromProtoTest, ReadsTypedFields) {
  onnx::TensorProto f;
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(1);
  f.add_dims(2);
  f.add_float_data(3.0f);
  f.add_float_data(4.0f);
  absl::StatusOr<HostTensor> ft = TensorFromProto(f);
  ASSERT_TRUE(ft.ok()) << ft.status();
  EXPECT_TRUE(AllClose(Floats({1, 2}, {3.0f, 4.0f}), *ft, Tolerance{}).ok());

  onnx::TensorProto i64;
  i64.set_data_type(onnx::TensorProto::INT64);
  i64.add_dims(2);
  i64.add_int64_data(-7);
  i64.add_int64_data(int64_t{1} << 40);
  absl::StatusOr<HostTensor> it = TensorFromProto(i64);
  ASSERT_TRUE(it.ok()) << it.status();
  int64_t got[2];
  std::memcpy(got, it->bytes.data(), sizeof(got));
  EXPECT_EQ(got[0], -7);
  EXPECT_EQ(got[1], int64_t{1} << 40);

  onnx::TensorProto i32;
  i32.set_data_type(onnx::TensorProto::INT32);
  i32.add_int32_data(-3);  // no dims: a scalar
  absl::StatusOr<HostTensor> i32t = TensorFromProto(i32);
  ASSERT_TRUE(i32t.ok()) << i32t.status();
  EXPECT_EQ(i32t->shape, Shape{});
  int32_t scalar;
  std::memcpy(&scalar, i32t->bytes.data(), 4);
  EXPECT_EQ(scalar, -3);

  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  for (int v : {1, 0, 1}) b.add_int32_data(v);
  absl::StatusOr<HostTensor> bt = TensorFromProto(b);
  ASSERT_TRUE(bt.ok()) << bt.status();
  EXPECT_EQ(bt->dtype, DataType::kBool);
  EXPECT_EQ(bt->bytes, std::string("\1\0\1", 3));
}

TEST(TensorFromProtoTest, RejectsCountMismatchAndStrings) {
  onnx::TensorProto short_data;
  short_data.set_data_type(onnx::TensorProto::FLOAT);
  short_data.add_dims(3);
  short_data.add_float_data(1.0f);
  EXPECT_EQ(TensorFromProto(short_data).status().code(),
            absl::StatusCode::kInvalidArgument);

  onnx::TensorProto strings;
  strings.set_data_type(onnx::TensorProto::STRING);
  strings.add_string_data("monday");
  EXPECT_EQ(TensorFromProto(strings).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReadTensorFileTest, RoundTripsAndReportsMissingFile) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(2);
  proto.add_float_data(0.25f);
  proto.add_float_data(8.0f);
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("conformance_util_test_" + std::to_string(::getpid()) + ".pb"))
          .string();
  {
    std::ofstream out(path, std::ios::binary);
    out << proto.SerializeAsString();
  }
  absl::StatusOr<HostTensor> t = ReadTensorFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(AllClose(Floats({2}, {0.25f, 8.0f}), *t, Tolerance{}).ok());

  EXPECT_EQ(ReadTensorFile(path).status().code(), absl::StatusCode::kNotFound);
}

TEST(WriteTensorFileTest, RoundTripsThroughReadTensorFile) {
  HostTensor ints{"out/1", DataType::kInt64, {2, 1}, std::string(16, '\0')};
  const int64_t values[] = {-5, int64_t{1} << 40};
  std::memcpy(ints.bytes.data(), values, sizeof(values));
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("write_tensor_test_" + std::to_string(::getpid()) + ".pb"))
          .string();
  ASSERT_TRUE(WriteTensorFile(ints, path).ok());
  absl::StatusOr<HostTensor> back = ReadTensorFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "out/1");
  EXPECT_EQ(back->dtype, DataType::kInt64);
  EXPECT_EQ(back->shape, (Shape{2, 1}));
  EXPECT_EQ(back->bytes, ints.bytes);

  EXPECT_EQ(OnnxElemTypeFromDataType(DataType::kFp32),
            onnx::TensorProto::FLOAT);
  EXPECT_EQ(OnnxElemTypeFromDataType(DataType::kBool), onnx::TensorProto::BOOL);
  HostTensor short_bytes{"s", DataType::kFp32, {3}, std::string(8, '\0')};
  EXPECT_EQ(WriteTensorFile(short_bytes, path).code(),
            absl::StatusCode::kInvalidArgument);
  HostTensor strings{"b", DataType::kBytes, {1}, "x"};
  EXPECT_EQ(WriteTensorFile(strings, path).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AllCloseTest, UsesAtolPlusRtolTimesExpected) {
  const Tolerance tol{/*rtol=*/1e-3, /*atol=*/1e-7};
  // 1000 * 1e-3 + 1e-7 allows a difference of just over 1.
  EXPECT_TRUE(
      AllClose(Floats({1}, {1000.0f}), Floats({1}, {1000.9f}), tol).ok());
  EXPECT_EQ(
      AllClose(Floats({1}, {1000.0f}), Floats({1}, {1001.5f}), tol).code(),
      absl::StatusCode::kInvalidArgument);
  // Near zero only atol is left.
  EXPECT_TRUE(AllClose(Floats({1}, {0.0f}), Floats({1}, {5e-8f}), tol).ok());
  EXPECT_FALSE(AllClose(Floats({1}, {0.0f}), Floats({1}, {1e-6f}), tol).ok());
  EXPECT_TRUE(AllClose(Floats({1}, {0.0f}), Floats({1}, {1e-6f}),
                       Tolerance{/*rtol=*/1e-3, /*atol=*/1e-5})
                  .ok());
  // Asymmetric like numpy: the tolerance scales with the expected value.
  EXPECT_FALSE(AllClose(Floats({1}, {1.0f}), Floats({1}, {1.0015f}), tol).ok());
}

TEST(AllCloseTest, NanAndInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tolerance tol;
  EXPECT_TRUE(
      AllClose(Floats({2}, {nan, inf}), Floats({2}, {nan, inf}), tol).ok());
  EXPECT_FALSE(AllClose(Floats({1}, {nan}), Floats({1}, {0.0f}), tol).ok());
  EXPECT_FALSE(AllClose(Floats({1}, {1.0f}), Floats({1}, {nan}), tol).ok());
  EXPECT_FALSE(AllClose(Floats({1}, {inf}), Floats({1}, {-inf}), tol).ok());
  EXPECT_FALSE(AllClose(Floats({1}, {inf}), Floats({1}, {3e38f}), tol).ok());
}

TEST(AllCloseTest, ShapeAndDtypeMustMatch) {
  absl::Status s =
      AllClose(Floats({2, 1}, {1, 2}), Floats({2}, {1, 2}), Tolerance{});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("shape [2]"), std::string::npos) << s;

  HostTensor ints{"t", DataType::kInt64, {1}, std::string(8, '\0')};
  HostTensor floats = Floats({1}, {0.0f});
  EXPECT_EQ(AllClose(ints, floats, Tolerance{}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AllCloseTest, NamesTheWorstElement) {
  absl::Status s = AllClose(Floats({3}, {1, 2, 3}),
                            Floats({3}, {1, 2.5f, 3.1f}), Tolerance{});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("2 of 3 elements"), std::string::npos) << s;
  EXPECT_NE(s.message().find("flat index 1"), std::string::npos) << s;
}

TEST(ParseLoadErrorTest, ListsEachMissingOpOnce) {
  UnsupportedReason r = ParseLoadError(absl::InvalidArgumentError(
      "'m.onnx': unsupported operators: node 'a' (op 'Cos'), node 'b' "
      "(op 'Erf'), node 'c' (op 'Cos'), node 'd' (op 'Fused') in domain "
      "'com.microsoft'"));
  EXPECT_EQ(r.ops,
            (std::vector<std::string>{"Cos", "Erf", "com.microsoft/Fused"}));
  EXPECT_TRUE(r.datatypes.empty());
}

TEST(ParseLoadErrorTest, DatatypesAreUnsupportedOtherErrorsAreNot) {
  UnsupportedReason type = ParseLoadError(absl::InvalidArgumentError(
      "'m.onnx': graph input 'x': unsupported element type STRING"));
  EXPECT_EQ(type.datatypes, std::vector<std::string>{"datatype STRING"});

  UnsupportedReason seq = ParseLoadError(
      absl::InvalidArgumentError("'m.onnx': graph input 'x' is not a tensor"));
  EXPECT_EQ(seq.datatypes.size(), 1u);

  UnsupportedReason other = ParseLoadError(absl::InvalidArgumentError(
      "'m.onnx': node 'n' input 'y' is not produced by anything"));
  EXPECT_TRUE(other.ops.empty());
  EXPECT_TRUE(other.datatypes.empty());
}

}  // namespace
}  // namespace coalesce::conformance
