#include <cstdint>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

TEST(ArgMaxOpTest, AxesKeepdimsAndSelectLastMatchNaive) {
  const std::vector<float> x = {3, 1, 3, 0, 2, 2, 5, 5, 1, 4, 0, 4};  // [2,2,3]
  for (int64_t axis : {0, 1, 2, -1}) {
    for (int64_t keepdims : {0, 1}) {
      for (int64_t last : {0, 1}) {
        testing::OnnxModelBuilder b(/*opset=*/13);
        b.Input("x", {2, 2, 3}).Output("y", {}, onnx::TensorProto::INT64);
        auto& n = b.Node("ArgMax", {"x"}, {"y"});
        testing::SetIntAttr(n, "axis", axis);
        testing::SetIntAttr(n, "keepdims", keepdims);
        testing::SetIntAttr(n, "select_last_index", last);
        auto model = b.Load();
        ASSERT_TRUE(model.ok()) << model.status();
        auto out = testing::RunModelTyped(
            *model, {testing::MakeTyped(DataType::kFp32, {2, 2, 3}, x)});
        ASSERT_TRUE(out.ok()) << out.status();
        const int64_t a = axis < 0 ? axis + 3 : axis;
        const int64_t dims[3] = {2, 2, 3};
        Shape want_shape;
        for (int64_t d = 0; d < 3; ++d) {
          if (d != a)
            want_shape.push_back(dims[d]);
          else if (keepdims)
            want_shape.push_back(1);
        }
        std::vector<int64_t> want;
        int64_t idx[3];
        for (idx[0] = 0; idx[0] < (a == 0 ? 1 : 2); ++idx[0])
          for (idx[1] = 0; idx[1] < (a == 1 ? 1 : 2); ++idx[1])
            for (idx[2] = 0; idx[2] < (a == 2 ? 1 : 3); ++idx[2]) {
              int64_t best = 0;
              float best_v = -1e30f;
              for (int64_t k = 0; k < dims[a]; ++k) {
                int64_t at[3] = {idx[0], idx[1], idx[2]};
                at[a] = k;
                const float v = x[(at[0] * 2 + at[1]) * 3 + at[2]];
                if (v > best_v || (last && v == best_v)) best = k, best_v = v;
              }
              want.push_back(best);
            }
        EXPECT_EQ((*out)[0].shape, want_shape);
        EXPECT_EQ((*out)[0].values<int64_t>(), want)
            << "axis " << axis << " keepdims " << keepdims << " last " << last;
      }
    }
  }
}

}  // namespace
}  // namespace coalesce
