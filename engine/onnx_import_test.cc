#include "engine/onnx_import.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/string_ref.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;

onnx::TensorProto Proto(int32_t type, std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

template <typename T>
std::vector<T> Values(const ConstantTensor& c) {
  std::vector<T> v(c.byte_size / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), c.bytes(), c.byte_size);
  return v;
}

template <typename T>
void ExpectRawRoundTrip(int32_t onnx_type, DataType dtype,
                        const std::vector<T>& values) {
  onnx::TensorProto t = Proto(onnx_type, {static_cast<int64_t>(values.size())});
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                             values.size() * sizeof(T)));
  auto c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << onnx_type << ": " << c.status();
  EXPECT_EQ((*c)->dtype, dtype);
  EXPECT_EQ((*c)->shape, (Shape{static_cast<int64_t>(values.size())}));
  EXPECT_EQ(Values<T>(**c), values) << onnx_type;
}

TEST(OnnxImportTest, RawDataOfEveryNumericType) {
  ExpectRawRoundTrip<uint8_t>(onnx::TensorProto::BOOL, DataType::kBool, {1, 0});
  ExpectRawRoundTrip<uint8_t>(onnx::TensorProto::UINT8, DataType::kUint8,
                              {0, 255});
  ExpectRawRoundTrip<int8_t>(onnx::TensorProto::INT8, DataType::kInt8,
                             {-128, 127});
  ExpectRawRoundTrip<uint16_t>(onnx::TensorProto::UINT16, DataType::kUint16,
                               {65535, 1});
  ExpectRawRoundTrip<int16_t>(onnx::TensorProto::INT16, DataType::kInt16,
                              {-32768, 7});
  ExpectRawRoundTrip<int32_t>(onnx::TensorProto::INT32, DataType::kInt32,
                              {-5, 1 << 30});
  ExpectRawRoundTrip<uint32_t>(onnx::TensorProto::UINT32, DataType::kUint32,
                               {4294967295u, 0});
  ExpectRawRoundTrip<int64_t>(onnx::TensorProto::INT64, DataType::kInt64,
                              {-1, 1ll << 40});
  ExpectRawRoundTrip<uint64_t>(onnx::TensorProto::UINT64, DataType::kUint64,
                               {18446744073709551615ull});
  ExpectRawRoundTrip<uint16_t>(onnx::TensorProto::FLOAT16, DataType::kFp16,
                               {0x3c00, 0xc100});
  ExpectRawRoundTrip<uint16_t>(onnx::TensorProto::BFLOAT16, DataType::kBf16,
                               {0x3f80, 0x4049});
  ExpectRawRoundTrip<float>(onnx::TensorProto::FLOAT, DataType::kFp32,
                            {0.5f, -2.0f});
  ExpectRawRoundTrip<double>(onnx::TensorProto::DOUBLE, DataType::kFp64,
                             {0.1, -1e300});
}

TEST(OnnxImportTest, TypedFieldsOfEveryNumericType) {
  // ONNX keeps the narrow types (and float16/bfloat16 bit patterns) in
  // int32_data, UINT32/UINT64 in uint64_data, DOUBLE in double_data.
  onnx::TensorProto t = Proto(onnx::TensorProto::INT8, {2});
  t.add_int32_data(-128);
  t.add_int32_data(5);
  auto c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<int8_t>(**c), (std::vector<int8_t>{-128, 5}));

  t = Proto(onnx::TensorProto::UINT8, {2});
  t.add_int32_data(255);
  t.add_int32_data(0);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<uint8_t>(**c), (std::vector<uint8_t>{255, 0}));

  t = Proto(onnx::TensorProto::INT16, {1});
  t.add_int32_data(-300);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<int16_t>(**c), (std::vector<int16_t>{-300}));

  t = Proto(onnx::TensorProto::UINT16, {1});
  t.add_int32_data(65535);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<uint16_t>(**c), (std::vector<uint16_t>{65535}));

  t = Proto(onnx::TensorProto::BOOL, {3});
  for (int v : {1, 0, 1}) t.add_int32_data(v);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<uint8_t>(**c), (std::vector<uint8_t>{1, 0, 1}));

  t = Proto(onnx::TensorProto::FLOAT16, {2});
  t.add_int32_data(0x3c00);
  t.add_int32_data(0xc100);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->dtype, DataType::kFp16);
  EXPECT_EQ(Values<uint16_t>(**c), (std::vector<uint16_t>{0x3c00, 0xc100}));

  t = Proto(onnx::TensorProto::BFLOAT16, {1});
  t.add_int32_data(0x4049);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<uint16_t>(**c), (std::vector<uint16_t>{0x4049}));

  t = Proto(onnx::TensorProto::UINT32, {2});
  t.add_uint64_data(4294967295u);
  t.add_uint64_data(3);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<uint32_t>(**c), (std::vector<uint32_t>{4294967295u, 3}));

  t = Proto(onnx::TensorProto::UINT64, {1});
  t.add_uint64_data(18446744073709551615ull);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<uint64_t>(**c),
            (std::vector<uint64_t>{18446744073709551615ull}));

  t = Proto(onnx::TensorProto::DOUBLE, {2});
  t.add_double_data(0.1);
  t.add_double_data(-2.5);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<double>(**c), (std::vector<double>{0.1, -2.5}));

  t = Proto(onnx::TensorProto::INT32, {1});
  t.add_int32_data(-9);
  c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values<int32_t>(**c), (std::vector<int32_t>{-9}));
}

TEST(OnnxImportTest, WrongValueCountsAreRefused) {
  onnx::TensorProto t = Proto(onnx::TensorProto::UINT16, {3});
  t.add_int32_data(1);
  auto c = ImportTensor(t);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("'t'"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("needs 3"));

  t = Proto(onnx::TensorProto::DOUBLE, {2});
  t.set_raw_data(std::string(12, '\0'));  // 16 needed
  EXPECT_EQ(ImportTensor(t).status().code(),
            absl::StatusCode::kInvalidArgument);

  t = Proto(onnx::TensorProto::UINT64, {2});
  t.add_int64_data(1);  // the wrong field
  t.add_int64_data(2);
  EXPECT_EQ(ImportTensor(t).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OnnxImportTest, StringTensorsOwnTheirBytes) {
  const std::string binary("\0\xff\x01", 3);
  onnx::TensorProto t = Proto(onnx::TensorProto::STRING, {2, 2});
  for (const std::string& s :
       {std::string("hello"), std::string(), binary, std::string("x")})
    t.add_string_data(s);
  auto c = ImportTensor(t);
  ASSERT_TRUE(c.ok()) << c.status();
  t.Clear();  // the tensor must not point into the proto
  EXPECT_EQ((*c)->dtype, DataType::kBytes);
  EXPECT_EQ((*c)->shape, (Shape{2, 2}));
  ASSERT_EQ((*c)->byte_size, 4 * sizeof(StringRef));
  const std::vector<StringRef> refs = Values<StringRef>(**c);
  EXPECT_EQ(refs[0].view(), "hello");
  EXPECT_EQ(refs[1].view(), "");
  EXPECT_EQ(refs[2].view(), binary);
  EXPECT_EQ(refs[3].view(), "x");
}

TEST(OnnxImportTest, BadStringTensorsAreRefused) {
  onnx::TensorProto t = Proto(onnx::TensorProto::STRING, {3});
  t.add_string_data("only one");
  auto c = ImportTensor(t);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("needs 3"));
  t = Proto(onnx::TensorProto::STRING, {1});
  t.set_raw_data("abcd");
  c = ImportTensor(t);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("raw_data"));
}

TEST(OnnxImportTest, ConstantNodeStrings) {
  onnx::NodeProto node;
  node.set_op_type("Constant");
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name("value_strings");
  attr->set_type(onnx::AttributeProto::STRINGS);
  attr->add_strings("a");
  attr->add_strings("bc");
  auto c = ImportConstantNode(node);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->shape, (Shape{2}));
  const std::vector<StringRef> refs = Values<StringRef>(**c);
  EXPECT_EQ(refs[0].view(), "a");
  EXPECT_EQ(refs[1].view(), "bc");
}

TEST(OnnxImportTest, TypeMappingBothWays) {
  for (int32_t t = 1; t <= 16; ++t) {
    absl::StatusOr<DataType> dtype = DataTypeFromOnnx(t);
    const bool complex =
        t == onnx::TensorProto::COMPLEX64 || t == onnx::TensorProto::COMPLEX128;
    if (complex) {
      EXPECT_EQ(dtype.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    ASSERT_TRUE(dtype.ok()) << t << ": " << dtype.status();
    EXPECT_EQ(OnnxTypeOf(*dtype), t);
  }
  EXPECT_EQ(*DataTypeFromOnnx(onnx::TensorProto::STRING), DataType::kBytes);
  EXPECT_EQ(*DataTypeFromOnnx(onnx::TensorProto::BFLOAT16), DataType::kBf16);
  EXPECT_EQ(DataTypeFromOnnx(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DataTypeFromOnnx(999).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
