#include "engine/tensor_file.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

std::string FloatBytes(const std::vector<float>& values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
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
  EXPECT_EQ(t->shape, (Shape{2}));
  EXPECT_EQ(t->bytes, FloatBytes({1.5f, -2.0f}));
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
  EXPECT_EQ(ft->shape, (Shape{1, 2}));
  EXPECT_EQ(ft->bytes, FloatBytes({3.0f, 4.0f}));

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
       ("tensor_file_test_" + std::to_string(::getpid()) + ".pb"))
          .string();
  {
    std::ofstream out(path, std::ios::binary);
    out << proto.SerializeAsString();
  }
  absl::StatusOr<HostTensor> t = ReadTensorFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape, (Shape{2}));
  EXPECT_EQ(t->bytes, FloatBytes({0.25f, 8.0f}));

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

  HostTensor short_bytes{"s", DataType::kFp32, {3}, std::string(8, '\0')};
  EXPECT_EQ(WriteTensorFile(short_bytes, path).code(),
            absl::StatusCode::kInvalidArgument);
  HostTensor strings{"b", DataType::kBytes, {1}, "x"};
  EXPECT_EQ(WriteTensorFile(strings, path).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorFromProtoTest, RejectsExternalData) {
  onnx::TensorProto proto;
  proto.set_name("w");
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(1);
  proto.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = proto.add_external_data();
  location->set_key("location");
  location->set_value("w.bin");
  absl::StatusOr<HostTensor> t = TensorFromProto(proto);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("'w'"), std::string::npos) << t.status();
}

}  // namespace
}  // namespace coalesce
