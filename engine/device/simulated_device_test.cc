// The simulated device itself: stream order, events across streams, the race
// and pinned-memory checks, memory capacity, and sticky faults; and one
// rule its kernels share with the CUDA ones (kernel_checks.h): a launch
// takes one 16-bit type.
#include "engine/device/simulated_device.h"

#include <cstring>
#include <vector>

#include "engine/device/simulated_kernels.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cuda/half_math.h"

namespace coalesce {
namespace {

using Kind = SimulatedDevice::OpKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr absl::Duration kBound = absl::Seconds(20);  // only hit on failure

// Declared after the streams: releases held ops before the streams drain, so
// a failed assertion cannot leave a stream waiting forever.
struct ReleaseHeldOps {
  SimulatedDevice& device;
  ~ReleaseHeldOps() { device.ReleaseAll(); }
};

template <typename T>
T Must(absl::StatusOr<T> value) {
  EXPECT_TRUE(value.ok()) << value.status();
  return *std::move(value);
}

SimulatedDevice::Kernel Fill(void* p, size_t n, char value) {
  SimulatedDevice::Kernel k;
  k.name = "fill";
  k.writes = {{p, n}};
  k.body = [=] {
    std::memset(p, value, n);
    return absl::OkStatus();
  };
  return k;
}

TEST(SimulatedDeviceTest, StreamRunsItsWorkInOrder) {
  SimulatedDevice device;
  auto event = Must(device.CreateEvent());
  auto host = Must(device.AllocatePinnedHost(64));
  auto dev = Must(device.AllocateDevice(64));
  auto stream = Must(device.CreateStream());
  std::memset(host->data(), 1, 64);
  ASSERT_TRUE(device.CopyToDevice(*stream, dev->data(), host->data(), 64).ok());
  ASSERT_TRUE(device.Launch(*stream, Fill(dev->data(), 32, 7)).ok());
  ASSERT_TRUE(device.CopyToHost(*stream, host->data(), dev->data(), 64).ok());
  ASSERT_TRUE(device.RecordEvent(*event, *stream).ok());
  ASSERT_TRUE(device.SynchronizeEvent(*event).ok());
  const char* h = static_cast<const char*>(host->data());
  EXPECT_EQ(h[0], 7);
  EXPECT_EQ(h[63], 1);
  auto timeline = device.timeline();
  ASSERT_EQ(timeline.size(), 3u);
  EXPECT_LT(timeline[0].end_tick, timeline[1].start_tick);
  EXPECT_LT(timeline[1].end_tick, timeline[2].start_tick);
  EXPECT_THAT(device.problems(), IsEmpty());
}

TEST(SimulatedDeviceTest, StreamWaitEventOrdersWorkAcrossStreams) {
  SimulatedDevice device;
  auto event = Must(device.CreateEvent());
  auto buf = Must(device.AllocateDevice(16));
  auto host = Must(device.AllocatePinnedHost(16));
  auto a = Must(device.CreateStream());
  auto b = Must(device.CreateStream());
  ReleaseHeldOps release{device};
  device.Hold(Kind::kKernel, 0);
  ASSERT_TRUE(device.Launch(*a, Fill(buf->data(), 16, 3)).ok());
  ASSERT_TRUE(device.RecordEvent(*event, *a).ok());
  ASSERT_TRUE(device.StreamWaitEvent(*b, *event).ok());
  ASSERT_TRUE(device.CopyToHost(*b, host->data(), buf->data(), 16).ok());
  ASSERT_TRUE(device.AwaitStart(Kind::kKernel, 0, kBound));
  device.Release(Kind::kKernel, 0);
  ASSERT_TRUE(device.AwaitEnd(Kind::kCopyToHost, 0, kBound));
  EXPECT_EQ(static_cast<const char*>(host->data())[15], 3);
  auto timeline = device.timeline();
  ASSERT_EQ(timeline.size(), 2u);
  EXPECT_EQ(timeline[0].kind, Kind::kKernel);
  EXPECT_LT(timeline[0].end_tick, timeline[1].start_tick);
  EXPECT_THAT(device.problems(), IsEmpty());
}

TEST(SimulatedDeviceTest, ConcurrentAccessToTheSameMemoryIsReported) {
  SimulatedDevice device;
  auto buf = Must(device.AllocateDevice(64));
  auto host = Must(device.AllocatePinnedHost(64));
  auto a = Must(device.CreateStream());
  auto b = Must(device.CreateStream());
  ReleaseHeldOps release{device};
  device.Hold(Kind::kKernel, 0);
  ASSERT_TRUE(device.Launch(*a, Fill(buf->data(), 64, 1)).ok());
  ASSERT_TRUE(device.AwaitStart(Kind::kKernel, 0, kBound));
  // No event orders this copy after the kernel: a race.
  ASSERT_TRUE(device
                  .CopyToDevice(*b, static_cast<char*>(buf->data()) + 32,
                                host->data(), 8)
                  .ok());
  ASSERT_TRUE(device.AwaitEnd(Kind::kCopyToDevice, 0, kBound));
  device.Release(Kind::kKernel, 0);
  ASSERT_TRUE(device.AwaitEnd(Kind::kKernel, 0, kBound));
  EXPECT_THAT(
      device.problems(),
      ElementsAre(HasSubstr("race: copy_to_device #0 started while fill #0")));
}

TEST(SimulatedDeviceTest, CopyFromUnpinnedHostMemoryIsReported) {
  SimulatedDevice device;
  auto event = Must(device.CreateEvent());
  auto buf = Must(device.AllocateDevice(8));
  char pageable[8] = {};
  auto stream = Must(device.CreateStream());
  ASSERT_TRUE(device.CopyToDevice(*stream, buf->data(), pageable, 8).ok());
  ASSERT_TRUE(device.RecordEvent(*event, *stream).ok());
  ASSERT_TRUE(device.SynchronizeEvent(*event).ok());
  EXPECT_THAT(device.problems(), ElementsAre(HasSubstr("not pinned")));
}

TEST(SimulatedDeviceTest, MemoryBeyondCapacityIsResourceExhausted) {
  SimulatedDevice::Options options;
  options.device_memory_bytes = 1000;
  SimulatedDevice device(options);
  auto first = Must(device.AllocateDevice(600));
  auto second = device.AllocateDevice(600);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(device.device_bytes_in_use(), 600u);
  first.reset();
  EXPECT_TRUE(device.AllocateDevice(600).ok());
}

TEST(SimulatedDeviceTest, EnqueueFailureIsNotStickyButARunFaultIs) {
  SimulatedDevice device;
  auto event = Must(device.CreateEvent());
  auto buf = Must(device.AllocateDevice(8));
  auto stream = Must(device.CreateStream());
  ReleaseHeldOps release{device};
  device.FailNextEnqueue(Kind::kKernel, absl::InternalError("bad launch"));
  absl::Status refused = device.Launch(*stream, Fill(buf->data(), 8, 1));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(device.IsSticky(refused));
  ASSERT_TRUE(device.Launch(*stream, Fill(buf->data(), 8, 1)).ok());

  const absl::Status fault = absl::InternalError("illegal address");
  device.FaultOnRun(Kind::kKernel, 1, fault);
  device.Hold(Kind::kKernel, 1);  // so the fault comes after the record
  ASSERT_TRUE(device.Launch(*stream, Fill(buf->data(), 8, 2)).ok());
  ASSERT_TRUE(device.RecordEvent(*event, *stream).ok());
  device.Release(Kind::kKernel, 1);
  EXPECT_EQ(device.SynchronizeEvent(*event), fault);
  EXPECT_TRUE(device.IsSticky(fault));
  EXPECT_EQ(device.Launch(*stream, Fill(buf->data(), 8, 3)), fault);
  EXPECT_EQ(device.AllocateDevice(8).status(), fault);
}

// A residual LayerNorm may read float32 operands and write a 16-bit sum
// (an Add of two model inputs whose result is stored in 16 bits), but no
// launch mixes float16 and bfloat16 operands.
TEST(SimulatedKernelsTest, ALaunchTakesOneSixteenBitType) {
  SimulatedDevice device;
  auto simulated = CreateSimulatedKernels(&device);
  auto stream = Must(device.CreateStream());
  auto event = Must(device.CreateEvent());
  auto memory = Must(device.AllocateDevice(256));
  float* x = static_cast<float*>(memory->data());
  float* r = x + 4;
  float* scale = x + 8;
  Half* sum = reinterpret_cast<Half*>(x + 12);
  Half* y = sum + 4;
  const float fine = 1.0f + 1.0f / 512;  // a float16, not a bfloat16
  for (int i = 0; i < 4; ++i) {
    x[i] = fine;
    r[i] = static_cast<float>(i);
    scale[i] = 1.0f;
  }
  LayerNormArgs a;
  a.x = x;
  a.residual = r;
  a.residual_rows = 1;
  a.scale = scale;
  a.rows = 1;
  a.cols = 4;
  a.sum = FloatOut(sum, DeviceFloat::kBFloat16);
  a.y = FloatOut(y, DeviceFloat::kBFloat16);
  ASSERT_TRUE(simulated->LayerNorm(*stream, a).ok());
  ASSERT_TRUE(device.RecordEvent(*event, *stream).ok());
  ASSERT_TRUE(device.SynchronizeEvent(*event).ok());
  EXPECT_EQ(kernels::cuda::BFloat16BitsToFloat(sum[0]), 1.0f);  // rounded
  EXPECT_EQ(kernels::cuda::BFloat16BitsToFloat(sum[2]), 3.0f);

  LayerNormArgs mixed = a;
  mixed.x = FloatIn(reinterpret_cast<const Half*>(x), DeviceFloat::kHalf);
  const absl::Status refused = simulated->LayerNorm(*stream, mixed);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("two 16-bit types"));
}

}  // namespace
}  // namespace coalesce
