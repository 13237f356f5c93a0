#include "engine/cuda/graph_conv_scope.h"

#include "gtest/gtest.h"

namespace coalesce {
namespace {

// A float16 convolution with no epilogue.
ConvArgs Conv(bool channels_last) {
  static const Half kData[1] = {};
  ConvArgs a;
  a.x = {kData, DeviceFloat::kHalf};
  a.channels_last = channels_last;
  return a;
}

// Each epilogue part alone sends an NCHW convolution to the legacy path;
// NHWC keeps every one on the graph, and so does the switch.
TEST(GraphConvScopeTest, NchwWithAnEpilogueTakesTheLegacyPath) {
  static const float kBias[1] = {0.0f};
  static const Half kZ[1] = {};
  ConvArgs bias = Conv(false), z = Conv(false), act = Conv(false);
  bias.bias = kBias;
  z.z = {kZ, DeviceFloat::kHalf};
  act.activation.kind = DeviceActivation::kSilu;
  for (ConvArgs* a : {&bias, &z, &act}) {
    EXPECT_TRUE(absl::IsUnimplemented(GraphConvLayoutAllows(*a, false)));
    EXPECT_TRUE(GraphConvLayoutAllows(*a, true).ok());
    a->channels_last = true;
    EXPECT_TRUE(GraphConvLayoutAllows(*a, false).ok());
  }
}

TEST(GraphConvScopeTest, BareConvolutionsTakeTheGraphInEitherLayout) {
  EXPECT_TRUE(GraphConvLayoutAllows(Conv(false), false).ok());
  EXPECT_TRUE(GraphConvLayoutAllows(Conv(true), false).ok());
}

}  // namespace
}  // namespace coalesce
