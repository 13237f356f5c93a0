// The simulated device's fused attention over packed rows
// (AttentionArgs::pack) against the same attention over the padded batch,
// on the same device: a left-padded sequence with a hole, a sequence
// without real rows, a right-padded one; a mask that differs per query
// row, so that it must be read at each row's position in its sequence;
// and the bucket's filler rows written as zeros. And the CUDA kernel's
// search for a sequence's rows against the CPU's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "engine/device/simulated_device.h"
#include "engine/device/simulated_kernels.h"
#include "engine/packing_indices.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cuda/attention_math.h"

namespace coalesce {
namespace {

constexpr int64_t kBatch = 3, kSeq = 5, kHeads = 2, kHeadDim = 4;
constexpr int64_t kE = kHeads * kHeadDim;  // one of q, k, v per row
constexpr int64_t kW = 3 * kE;             // q, k and v side by side

// The views of an attention over rows of kW (q, k, v at 0, kE, 2 kE) into
// rows of kE, heads kHeadDim apart, a [kBatch, 1, kSeq, kSeq] mask.
AttentionArgs Views(const float* qkv, const float* mask, float* out) {
  AttentionArgs a;
  a.batch = kBatch;
  a.heads = kHeads;
  a.q_len = a.kv_len = kSeq;
  a.head_dim = kHeadDim;
  a.q = qkv;
  a.k = qkv + kE;
  a.v = qkv + 2 * kE;
  a.q_strides = a.k_strides = a.v_strides = {kSeq * kW, kHeadDim, kW, 1};
  a.mask = mask;
  a.mask_strides = {kSeq * kSeq, 0, kSeq, 1};
  a.out = out;
  a.out_strides = {kSeq * kE, kHeadDim, kE, 1};
  a.scale = 0.5f;
  return a;
}

TEST(SimulatedAttentionTest, PackedRowsMatchThePaddedBatch) {
  const std::vector<uint8_t> real = {0, 1, 1, 0, 1,   // left padding, a hole
                                     0, 0, 0, 0, 0,   // no real row
                                     1, 1, 1, 0, 0};  // right padding
  PackingIndices p;
  ASSERT_TRUE(ComputePackingIndices(real.data(), DataType::kBool, kBatch, kSeq,
                                    &p, /*buckets=*/2)
                  .ok());
  ASSERT_EQ(p.tokens, 6);
  ASSERT_EQ(p.pack.size(), 8u);  // two fillers
  const int64_t rows = 8, padded_rows = kBatch * kSeq;

  SimulatedDevice device;
  auto kernels = CreateSimulatedKernels(&device);
  auto stream = device.CreateStream();
  auto done = device.CreateEvent();
  ASSERT_TRUE(stream.ok() && done.ok());
  const int64_t floats = padded_rows * kW + rows * kW + kBatch * kSeq * kSeq +
                         padded_rows * kE + rows * kE;
  auto memory =
      device.AllocateDevice(floats * sizeof(float) + rows * sizeof(int64_t));
  ASSERT_TRUE(memory.ok()) << memory.status();
  // The pack index first: the allocation's start is aligned for it.
  auto* pack = static_cast<int64_t*>((*memory)->data());
  float* qkv = reinterpret_cast<float*>(pack + rows);
  float* packed_qkv = qkv + padded_rows * kW;
  float* mask = packed_qkv + rows * kW;
  float* out = mask + kBatch * kSeq * kSeq;
  float* packed_out = out + padded_rows * kE;

  for (int64_t i = 0; i < padded_rows * kW; ++i)
    qkv[i] = std::sin(0.37f * static_cast<float>(i));
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(packed_qkv + r * kW, qkv + p.pack[r] * kW, kW * sizeof(float));
    pack[r] = p.pack[r];
  }
  // Padded keys at float32's lowest, as exports mask them; real ones a
  // finite bias that depends on the query's and the key's positions.
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t i = 0; i < kSeq; ++i) {
      for (int64_t j = 0; j < kSeq; ++j) {
        mask[(b * kSeq + i) * kSeq + j] =
            real[b * kSeq + j] != 0 ? 0.25f * static_cast<float>(i - 2 * j)
                                    : std::numeric_limits<float>::lowest();
      }
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill(out, out + padded_rows * kE, nan);
  std::fill(packed_out, packed_out + rows * kE, nan);

  AttentionArgs padded = Views(qkv, mask, out);
  AttentionArgs packed = Views(packed_qkv, mask, packed_out);
  packed.pack = pack;
  packed.packed_rows = rows;
  ASSERT_TRUE(kernels->Attention(**stream, padded).ok());
  ASSERT_TRUE(kernels->Attention(**stream, packed).ok());
  ASSERT_TRUE(device.RecordEvent(**done, **stream).ok());
  ASSERT_TRUE(device.SynchronizeEvent(**done).ok());
  EXPECT_THAT(device.problems(), ::testing::IsEmpty());

  // The same keys in the same order (a masked key's weight is exactly 0):
  // equal, not close.
  for (int64_t r = 0; r < p.tokens; ++r) {
    for (int64_t c = 0; c < kE; ++c) {
      EXPECT_EQ(packed_out[r * kE + c], out[p.pack[r] * kE + c])
          << "packed row " << r << " (padded row " << p.pack[r] << "), column "
          << c;
    }
  }
  for (int64_t r = p.tokens; r < rows; ++r) {
    for (int64_t c = 0; c < kE; ++c)
      EXPECT_EQ(packed_out[r * kE + c], 0.0f) << "filler row " << r;
  }
}

// The CUDA kernel finds each sequence's packed rows by a warp's 32-way
// search (kernels/cuda/attention_math.h's SearchPackedRow, its ballot run
// serially here), the simulated device and the CPU by PackedRealRows's
// scan (engine/packing_indices.h): the same rows, on random masks of every
// density, with and without fillers, and on a mask without real rows.
TEST(SimulatedAttentionTest, TheKernelsSearchFindsTheCpusRows) {
  std::mt19937 random(27);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t batch = 1 + trial % 5, seq = 1 + (trial / 5) % 9;
    const int64_t buckets = 1 + trial % 4;
    const double density = (trial % 7) / 6.0;  // 0, 1/6, ..., 1
    std::bernoulli_distribution real(density);
    std::vector<uint8_t> mask(batch * seq);
    for (uint8_t& m : mask) m = real(random) ? 1 : 0;
    PackingIndices p;
    ASSERT_TRUE(ComputePackingIndices(mask.data(), DataType::kBool, batch, seq,
                                      &p, buckets)
                    .ok());
    const int64_t rows = static_cast<int64_t>(p.pack.size());
    std::vector<int64_t> offsets(batch + 1), positions(rows);
    const int64_t count = PackedRealRows(p.pack.data(), rows, batch, seq,
                                         offsets.data(), positions.data());
    SCOPED_TRACE(::testing::PrintToString(p.pack));
    const kernels::cuda::SerialBallot ballot;
    const int64_t padded = batch * seq;
    ASSERT_EQ(kernels::cuda::SearchPackedRow(p.pack.data(), rows, padded,
                                             padded, ballot),
              count);
    for (int64_t b = 0; b <= batch; ++b) {
      EXPECT_EQ(kernels::cuda::SearchPackedRow(p.pack.data(), rows, padded,
                                               b * seq, ballot),
                offsets[b])
          << "entry " << b;
    }
  }
}

// The same on a large pack index (searches of three rounds): 3000 real
// rows of 64 sequences of 64 positions, then fillers up to the bucket.
TEST(SimulatedAttentionTest, TheKernelsSearchFindsTheCpusRowsInLargeBuckets) {
  constexpr int64_t kBatch = 64, kSeq = 64;
  std::mt19937 random(29);
  std::vector<uint8_t> mask(kBatch * kSeq, 0);
  std::vector<int64_t> order(kBatch * kSeq);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::shuffle(order.begin(), order.end(), random);
  for (int i = 0; i < 3000; ++i) mask[order[i]] = 1;
  PackingIndices p;
  ASSERT_TRUE(
      ComputePackingIndices(mask.data(), DataType::kBool, kBatch, kSeq, &p)
          .ok());
  const int64_t rows = static_cast<int64_t>(p.pack.size());
  ASSERT_GT(rows, 3000);  // fillers
  std::vector<int64_t> offsets(kBatch + 1), positions(rows);
  const int64_t count = PackedRealRows(p.pack.data(), rows, kBatch, kSeq,
                                       offsets.data(), positions.data());
  ASSERT_EQ(count, 3000);
  const kernels::cuda::SerialBallot ballot;
  for (int64_t b = 0; b <= kBatch; ++b) {
    EXPECT_EQ(kernels::cuda::SearchPackedRow(p.pack.data(), rows, kBatch * kSeq,
                                             b * kSeq, ballot),
              offsets[b])
        << "entry " << b;
  }
}

// Packed rows need as many queries as keys.
TEST(SimulatedAttentionTest, PackedRowsRefuseOtherKeyCounts) {
  SimulatedDevice device;
  auto kernels = CreateSimulatedKernels(&device);
  auto stream = device.CreateStream();
  ASSERT_TRUE(stream.ok());
  const int64_t pack[1] = {0};
  std::vector<float> memory(kW + kE);  // refused before it is read
  AttentionArgs a = Views(memory.data(), nullptr, memory.data() + kW);
  a.kv_len = kSeq + 1;
  a.pack = pack;
  a.packed_rows = 1;
  EXPECT_EQ(kernels->Attention(**stream, a).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
