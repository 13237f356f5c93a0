#include "engine/plan_cache.h"

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

TEST(PlanCacheTest, BuildsEachShapeSetOnce) {
  testing::OnnxModelBuilder b;
  b.Input("x", {-1, 4}).Output("y");
  b.Node("Relu", {"x"}, {"y"});
  PlanCache cache(*b.Load());
  for (int round = 0; round < 3; ++round) {
    for (int64_t batch = 1; batch <= 64; batch *= 2) {
      auto plan = cache.Get({{batch, 4}});
      ASSERT_TRUE(plan.ok()) << plan.status();
      EXPECT_EQ((*plan)->output_shape(0), (Shape{batch, 4}));
    }
  }
  EXPECT_EQ(cache.plans_built(), 7);
  auto first = cache.Get({{8, 4}});
  auto second = cache.Get({{8, 4}});
  EXPECT_EQ(first->get(), second->get());
  EXPECT_FALSE(cache.Get({{8, 5}}).ok());
  EXPECT_EQ(cache.plans_built(), 7);
}

TEST(PlanCacheTest, BeyondCapacityPlansAreBuiltButNotKept) {
  testing::OnnxModelBuilder b;
  b.Input("x", {-1}).Output("y");
  b.Node("Relu", {"x"}, {"y"});
  PlanCache cache(*b.Load(), /*max_plans=*/2);
  for (int64_t n : {1, 2, 3, 3}) ASSERT_TRUE(cache.Get({{n}}).ok());
  EXPECT_EQ(cache.plans_built(), 4);
}

}  // namespace
}  // namespace coalesce
