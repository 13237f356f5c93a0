#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

int64_t Count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Reference for operands already promoted to rank >= 2 with equal rank;
// batch dims broadcast by index clamping.
std::vector<float> Reference(const Shape& a, const std::vector<float>& av,
                             const Shape& b, const std::vector<float>& bv,
                             Shape* out_shape) {
  const size_t r = a.size();
  const int64_t m = a[r - 2], k = a[r - 1], n = b[r - 1];
  Shape batch(r - 2);
  for (size_t d = 0; d + 2 < r; ++d) batch[d] = std::max(a[d], b[d]);
  *out_shape = batch;
  out_shape->push_back(m);
  out_shape->push_back(n);
  std::vector<float> y(Count(*out_shape));
  for (int64_t bi = 0; bi < Count(batch); ++bi) {
    int64_t rem = bi, a_off = 0, b_off = 0, a_mul = 1, b_mul = 1;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      a_off += (a[d] == 1 ? 0 : idx) * a_mul;
      b_off += (b[d] == 1 ? 0 : idx) * b_mul;
      a_mul *= a[d];
      b_mul *= b[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l)
          acc += double(av[a_off * m * k + i * k + l]) *
                 bv[b_off * k * n + l * n + j];
        y[bi * m * n + i * n + j] = static_cast<float>(acc);
      }
  }
  return y;
}

void Check(const Shape& a_shape, const Shape& b_shape,
           const Shape& want_shape) {
  testing::OnnxModelBuilder builder(/*opset=*/13);
  builder.Input("a", a_shape).Input("b", b_shape).Output("y");
  builder.Node("MatMul", {"a", "b"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const auto a = testing::RandomFloats(Count(a_shape), 5);
  const auto b = testing::RandomFloats(Count(b_shape), 6);
  auto out = testing::RunModelOnce(
      *model, {HostTensor{a_shape, a}, HostTensor{b_shape, b}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, want_shape);
  // Promote to equal rank >= 2 for the reference.
  Shape pa = a_shape.size() == 1 ? Shape{1, a_shape[0]} : a_shape;
  Shape pb = b_shape.size() == 1 ? Shape{b_shape[0], 1} : b_shape;
  while (pa.size() < pb.size()) pa.insert(pa.begin(), 1);
  while (pb.size() < pa.size()) pb.insert(pb.begin(), 1);
  Shape ref_shape;
  const auto want = Reference(pa, a, pb, b, &ref_shape);
  ASSERT_EQ(want.size(), (*out)[0].data.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR((*out)[0].data[i], want[i], 1e-4) << i;
}

TEST(MatMulOpTest, TwoD) { Check({3, 4}, {4, 5}, {3, 5}); }
TEST(MatMulOpTest, BatchedSameBatch) { Check({2, 3, 4}, {2, 4, 5}, {2, 3, 5}); }
TEST(MatMulOpTest, BatchedAgainstMatrix) {
  Check({2, 3, 4}, {4, 5}, {2, 3, 5});
}
TEST(MatMulOpTest, BroadcastBatchDims) {
  Check({2, 1, 3, 4}, {3, 4, 2}, {2, 3, 3, 2});
  Check({4, 3}, {2, 3, 6}, {2, 4, 6});
}
TEST(MatMulOpTest, OneDCases) {
  Check({4}, {4, 5}, {5});
  Check({3, 4}, {4}, {3});
  Check({4}, {4}, {});
  Check({4}, {2, 4, 3}, {2, 3});
}
TEST(MatMulOpTest, Mismatch) {
  testing::OnnxModelBuilder builder;
  builder.Input("a", {2, 3}).Input("b", {4, 5}).Output("y");
  builder.Node("MatMul", {"a", "b"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok());
  auto out = testing::RunModelOnce(
      *model, {HostTensor{{2, 3}, std::vector<float>(6)},
               HostTensor{{4, 5}, std::vector<float>(20)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
