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
