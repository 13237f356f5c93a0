#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;
using testing::OnnxModelBuilder;

struct GemmCase {
  bool trans_a, trans_b;
  float alpha, beta;
  Shape c_shape;  // empty vector + has_c=false means no C
  bool has_c;
};

// Reference Y[i][j] = alpha * sum_l A'(i,l) B'(l,j) + beta * C(bcast i,j).
std::vector<float> Reference(const GemmCase& p, int64_t m, int64_t n, int64_t k,
                             const std::vector<float>& a,
                             const std::vector<float>& b,
                             const std::vector<float>& c) {
  std::vector<float> y(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l) {
        acc += double(p.trans_a ? a[l * m + i] : a[i * k + l]) *
               (p.trans_b ? b[j * k + l] : b[l * n + j]);
      }
      double cv = 0;
      if (p.has_c) {
        const Shape& s = p.c_shape;
        const int64_t rows = s.size() == 2 ? s[0] : 1;
        const int64_t cols = s.empty() ? 1 : s.back();
        cv = c[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
      }
      y[i * n + j] = static_cast<float>(p.alpha * acc + p.beta * cv);
    }
  }
  return y;
}

void RunCase(const GemmCase& p, int64_t m, int64_t n, int64_t k) {
  OnnxModelBuilder builder(/*opset=*/13);
  const Shape a_shape = p.trans_a ? Shape{k, m} : Shape{m, k};
  const Shape b_shape = p.trans_b ? Shape{n, k} : Shape{k, n};
  const auto a = testing::RandomFloats(m * k, 1),
             b = testing::RandomFloats(k * n, 2);
  int64_t c_count = 1;
  for (int64_t d : p.c_shape) c_count *= d;
  const auto c = testing::RandomFloats(c_count, 3);
  builder.Input("a", a_shape).Output("y");
  builder.FloatInitializer("b", b_shape, b);
  std::vector<std::string> inputs = {"a", "b"};
  if (p.has_c) {
    builder.FloatInitializer("c", p.c_shape, c);
    inputs.push_back("c");
  }
  auto& node = builder.Node("Gemm", inputs, {"y"});
  testing::SetIntAttr(node, "transA", p.trans_a);
  testing::SetIntAttr(node, "transB", p.trans_b);
  testing::SetFloatAttr(node, "alpha", p.alpha);
  testing::SetFloatAttr(node, "beta", p.beta);
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {HostTensor{a_shape, a}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape, (Shape{m, n}));
  const auto want = Reference(p, m, n, k, a, b, c);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR((*out)[0].data[i], want[i], 1e-4f * (1 + std::abs(want[i])))
        << i;
  }
}

TEST(GemmOpTest, Plain) {
  RunCase({false, false, 1.0f, 1.0f, {}, false}, 3, 4, 5);
}
TEST(GemmOpTest, TransposesAndScales) {
  RunCase({true, false, 0.5f, 2.0f, {4}, true}, 3, 4, 5);
  RunCase({false, true, 1.0f, 1.0f, {1, 4}, true}, 3, 4, 5);
  RunCase({true, true, -1.5f, 0.5f, {3, 4}, true}, 3, 4, 5);
}
TEST(GemmOpTest, CBroadcastForms) {
  RunCase({false, false, 1.0f, 1.0f, {}, true}, 2, 3, 4);      // scalar
  RunCase({false, false, 1.0f, 1.0f, {3, 1}, true}, 3, 5, 2);  // column
  RunCase({false, false, 1.0f, 1.0f, {1, 1}, true}, 3, 5, 2);
}
TEST(GemmOpTest, LargeUsesOneDnn) {
  RunCase({false, true, 1.0f, 1.0f, {256}, true}, 64, 256, 128);
}

TEST(GemmOpTest, KMismatchIsInvalidArgumentNamingInputs) {
  OnnxModelBuilder builder;
  builder.Input("x", {-1, 3}).Output("y");
  builder.FloatInitializer("w", {4, 5}, std::vector<float>(20, 1.0f));
  builder.Node("Gemm", {"x", "w"}, {"y"}, "fc");
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model,
                                   {HostTensor{{2, 3}, std::vector<float>(6)}});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              ::testing::AllOf(::testing::HasSubstr("node 'fc'"),
                               ::testing::HasSubstr("'x' [2,3]"),
                               ::testing::HasSubstr("K=")));
}

}  // namespace
}  // namespace coalesce
