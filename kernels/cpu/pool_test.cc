#include "kernels/cpu/pool.h"

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/threading.h"

namespace coalesce::kernels {
namespace {

PoolGeometry Geometry2d(int64_t planes, PoolGeometry::Dims in,
                        PoolGeometry::Dims out, PoolGeometry::Dims kernel,
                        PoolGeometry::Dims strides,
                        std::array<int64_t, 4> pads = {0, 0, 0, 0}) {
  PoolGeometry g;
  g.planes = planes;
  g.axes = 2;
  g.in = in;
  g.out = out;
  g.kernel = kernel;
  g.strides = strides;
  g.dilations = {1, 1};
  g.pads_begin = {pads[0], pads[1]};
  g.pads_end = {pads[2], pads[3]};
  return g;
}

// A 1-D pooling without dilation.
PoolGeometry Geometry1d(int64_t planes, int64_t in, int64_t out, int64_t kernel,
                        int64_t stride, int64_t pad_begin, int64_t pad_end) {
  PoolGeometry g;
  g.planes = planes;
  g.axes = 1;
  g.in = {in};
  g.out = {out};
  g.kernel = {kernel};
  g.strides = {stride};
  g.dilations = {1};
  g.pads_begin = {pad_begin};
  g.pads_end = {pad_end};
  return g;
}

// x = 0..15 as a 4x4 plane: 2x2 windows, stride 2.
TEST(PoolTest, MaxAndIndicesOf2x2Windows) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  const PoolGeometry g = Geometry2d(1, {4, 4}, {2, 2}, {2, 2}, {2, 2});
  std::vector<float> y(4);
  std::vector<int64_t> idx(4);
  MaxPool(g, x.data(), y.data(), idx.data());
  EXPECT_EQ(y, (std::vector<float>{5, 7, 13, 15}));
  EXPECT_EQ(idx, (std::vector<int64_t>{5, 7, 13, 15}));
  MaxPool(g, x.data(), y.data(), idx.data(), /*column_major=*/true);
  // Column-major offset of (h, w) is h + 4 * w.
  EXPECT_EQ(idx, (std::vector<int64_t>{5, 13, 7, 15}));
}

TEST(PoolTest, IndicesCountEarlierPlanes) {
  std::vector<float> x = {1, 3, 2, 0, /*plane 1*/ 4, 0, 9, 1};
  const PoolGeometry g = Geometry1d(2, /*in=*/4, /*out=*/2, /*kernel=*/2,
                                    /*stride=*/2, 0, 0);
  std::vector<float> y(4);
  std::vector<int64_t> idx(4);
  MaxPool(g, x.data(), y.data(), idx.data());
  EXPECT_EQ(y, (std::vector<float>{3, 2, 4, 9}));
  EXPECT_EQ(idx, (std::vector<int64_t>{1, 2, 4, 6}));
}

TEST(PoolTest, AverageDivisorWithAndWithoutPadding) {
  std::vector<float> x = {1, 2, 3, 4};  // 2x2
  // 3x3 window, pads 1 everywhere: one output covering the whole input.
  const PoolGeometry g =
      Geometry2d(1, {2, 2}, {1, 1}, {3, 3}, {1, 1}, {1, 1, 1, 1});
  float y = 0;
  AveragePool(g, x.data(), /*count_include_pad=*/false, &y);
  EXPECT_FLOAT_EQ(y, 2.5f);
  AveragePool(g, x.data(), /*count_include_pad=*/true, &y);
  EXPECT_FLOAT_EQ(y, 10.0f / 9.0f);
}

TEST(PoolTest, CeilModeWindowPastEndPaddingIsClipped) {
  std::vector<float> x = {1, 2, 3};
  // out = ceil((3 - 2) / 2) + 1
  const PoolGeometry g = Geometry1d(1, /*in=*/3, /*out=*/2, /*kernel=*/2,
                                    /*stride=*/2, 0, 0);
  std::vector<float> y(2);
  AveragePool(g, x.data(), /*count_include_pad=*/true, y.data());
  EXPECT_EQ(y, (std::vector<float>{1.5f, 3.0f}));
}

TEST(PoolTest, AllPaddingWindow) {
  std::vector<float> x = {5};
  const PoolGeometry g = Geometry1d(1, /*in=*/1, /*out=*/2, /*kernel=*/1,
                                    /*stride=*/1, /*pad_begin=*/1, 0);
  std::vector<float> y(2);
  std::vector<int64_t> idx(2);
  MaxPool(g, x.data(), y.data(), idx.data());
  EXPECT_EQ(y[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(idx, (std::vector<int64_t>{-1, 0}));
  AveragePool(g, x.data(), false, y.data());
  EXPECT_EQ(y, (std::vector<float>{0, 5}));
}

TEST(PoolTest, ThreadCountDoesNotChangeResults) {
  const int64_t planes = 8, h = 40, w = 40;
  std::vector<float> x(planes * h * w);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1 * i);
  const PoolGeometry g =
      Geometry2d(planes, {h, w}, {20, 20}, {3, 3}, {2, 2}, {1, 1, 1, 0});
  std::vector<float> one(planes * 400), many(planes * 400);
  const int before = IntraOpThreads();
  SetIntraOpThreads(1);
  AveragePool(g, x.data(), false, one.data());
  SetIntraOpThreads(4);
  AveragePool(g, x.data(), false, many.data());
  SetIntraOpThreads(before);
  EXPECT_EQ(one, many);
}

TEST(PoolTest, GlobalPools) {
  std::vector<float> x = {1, 2, 3, 4, -1, -5, -2, -8};
  std::vector<float> y(2);
  GlobalAveragePool(x.data(), 2, 4, y.data());
  EXPECT_EQ(y, (std::vector<float>{2.5f, -4.0f}));
  GlobalMaxPool(x.data(), 2, 4, y.data());
  EXPECT_EQ(y, (std::vector<float>{4.0f, -1.0f}));
}

// [planes = batch * channels, spatial] -> [batch, spatial, channels].
std::vector<float> ToChannelsLast(const std::vector<float>& x, int64_t batch,
                                  int64_t channels) {
  const int64_t spatial = static_cast<int64_t>(x.size()) / batch / channels;
  std::vector<float> out(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < spatial; ++i)
        out[(b * spatial + i) * channels + c] =
            x[(b * channels + c) * spatial + i];
  return out;
}

// The channels-last forms give the planar forms' values, transposed, on
// windows with padding on both sides, a clipped ceil-mode window, dilation
// and 1 to 3 axes; average with and without the padding counted.
TEST(PoolTest, ChannelsLastMatchesPlanar) {
  const int64_t batch = 2, channels = 5;
  PoolGeometry g1 = Geometry1d(batch, 9, 5, 3, 2, 1, 2);
  PoolGeometry g2 =
      Geometry2d(batch, {7, 6}, {4, 3}, {3, 2}, {2, 2}, {1, 0, 1, 1});
  g2.dilations = {1, 2};
  g2.out = {4, 2};
  PoolGeometry g3;
  g3.planes = batch;
  g3.axes = 3;
  g3.in = {3, 4, 5};
  g3.out = {2, 2, 3};
  g3.kernel = {2, 3, 2};
  g3.strides = {1, 2, 2};
  g3.dilations = {1, 1, 1};
  g3.pads_begin = {0, 1, 0};
  g3.pads_end = {0, 1, 1};
  for (const PoolGeometry& g : {g1, g2, g3}) {
    int64_t in = 1, out = 1;
    for (int a = 0; a < g.axes; ++a) in *= g.in[a], out *= g.out[a];
    std::vector<float> x(batch * channels * in);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * i + 0.3);
    PoolGeometry planar = g;
    planar.planes = batch * channels;
    std::vector<float> want(batch * channels * out), got(want.size());
    const std::vector<float> x_last = ToChannelsLast(x, batch, channels);
    MaxPool(planar, x.data(), want.data());
    MaxPoolChannelsLast(g, channels, x_last.data(), got.data());
    EXPECT_EQ(got, ToChannelsLast(want, batch, channels)) << g.axes << "-D max";
    for (bool include_pad : {false, true}) {
      AveragePool(planar, x.data(), include_pad, want.data());
      AveragePoolChannelsLast(g, channels, x_last.data(), include_pad,
                              got.data());
      const std::vector<float> expected = ToChannelsLast(want, batch, channels);
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], expected[i], 1e-6f)
            << g.axes << "-D average, include_pad " << include_pad << " at "
            << i;
    }
  }
}

TEST(PoolTest, GlobalPoolsChannelsLast) {
  // Two images of 4 positions and 2 channels: channel 0 is 1 2 3 4 and
  // -1 -5 -2 -8, channel 1 is ten times channel 0.
  std::vector<float> x = {1,  10,  2,  20,  3,  30,  4,  40,
                          -1, -10, -5, -50, -2, -20, -8, -80};
  std::vector<float> y(4);
  GlobalAveragePoolChannelsLast(x.data(), 2, 4, 2, y.data());
  EXPECT_EQ(y, (std::vector<float>{2.5f, 25.0f, -4.0f, -40.0f}));
  GlobalMaxPoolChannelsLast(x.data(), 2, 4, 2, y.data());
  EXPECT_EQ(y, (std::vector<float>{4.0f, 40.0f, -1.0f, -10.0f}));
}

}  // namespace
}  // namespace coalesce::kernels
