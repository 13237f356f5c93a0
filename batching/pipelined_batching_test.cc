// The dynamic batcher driving a double-buffered PipelinedExecutor on the
// simulated device: the batcher knows nothing about devices (it sees only
// engine/executor.h), yet batch k+1 is copied in while batch k computes, and
// every response carries its own request's data under concurrent load.
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "batching/dynamic_batcher.h"
#include "batching/recording_sink.h"
#include "engine/device/pipelined_executor.h"
#include "engine/device/simulated_device.h"
#include "engine/testing/host_shared_device_memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using Kind = SimulatedDevice::OpKind;
using ::testing::IsEmpty;

constexpr absl::Duration kBound = absl::Seconds(20);  // only hit on failure
constexpr int64_t kCols = 3;

// y = x, as one simulated kernel taking `duration`.
class CopyKernelProgram : public DeviceProgram {
 public:
  CopyKernelProgram(SimulatedDevice* device, std::chrono::microseconds duration)
      : device_(device), duration_(duration) {
    signature_.inputs = {{"x", DataType::kFp32, {-1, kCols}}};
    signature_.outputs = {{"y", DataType::kFp32, {-1, kCols}}};
  }
  const ModelSignature& signature() const override { return signature_; }
  absl::StatusOr<std::vector<Shape>> OutputShapes(
      const std::vector<Shape>& in) const override {
    return in;
  }
  absl::Status Enqueue(DeviceStream& stream, const std::vector<Shape>& shapes,
                       const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) override {
    const size_t bytes = shapes[0][0] * kCols * sizeof(float);
    const void* x = inputs[0];
    void* y = outputs[0];
    SimulatedDevice::Kernel k{
        "copy", {{x, bytes}}, {{y, bytes}}, duration_, [=] {
          std::memcpy(y, x, bytes);
          return absl::OkStatus();
        }};
    return device_->Launch(stream, std::move(k));
  }

 private:
  SimulatedDevice* device_;
  std::chrono::microseconds duration_;
  ModelSignature signature_;
};

std::string Floats(float first, int64_t count) {
  std::string bytes(count * sizeof(float), '\0');
  for (int64_t i = 0; i < count; ++i) {
    const float v = first + i;
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
  }
  return bytes;
}

class PipelinedBatchingTest : public ::testing::Test {
 protected:
  // `ordinal`: the device's, for shared device memory (-1: none).
  void Start(std::chrono::microseconds kernel_time, int ordinal = -1) {
    device_ = std::make_shared<SimulatedDevice>();
    auto executor = CreatePipelinedExecutor(
        device_,
        std::make_unique<CopyKernelProgram>(device_.get(), kernel_time),
        PipelinedExecutorOptions{/*num_slots=*/2, ordinal});
    ASSERT_TRUE(executor.ok()) << executor.status();
    std::vector<std::unique_ptr<ExecutorInstance>> instances;
    instances.push_back(*std::move(executor));
    SchedulerOptions options;
    options.model_name = "m";
    options.max_batch_size = 16;
    options.dynamic_batching = true;
    options.max_queue_delay = Clock::Duration(0);
    options.inputs = {{"x", DataType::kFp32, {kCols}}};
    options.outputs = {{"y", DataType::kFp32, {kCols}}};
    options.clock = RealClock();
    auto batcher = DynamicBatcher::Create(options, std::move(instances));
    ASSERT_TRUE(batcher.ok()) << batcher.status();
    batcher_ = *std::move(batcher);
  }

  void TearDown() override {
    if (device_ != nullptr) device_->ReleaseAll();
    batcher_.reset();
  }

  std::shared_ptr<SinkRecord> Send(float first, int64_t rows) {
    std::string* data;
    {
      absl::MutexLock lock(&mu_);
      data_.push_back(Floats(first, rows * kCols));
      data = &data_.back();
    }
    auto request = std::make_unique<InferenceRequest>();
    request->inputs.push_back(
        RequestInput{"x", DataType::kFp32, {rows, kCols}, *data});
    auto record = std::make_shared<SinkRecord>();
    request->sink = std::make_unique<RecordingSink>(record);
    EXPECT_TRUE(batcher_->Enqueue(&request).ok());
    return record;
  }

  // A request whose input and output "y" are in shared device memory on
  // device `ordinal` (as CUDA shared memory is), the output's span with
  // room for `rows`.
  struct DeviceRequest {
    std::shared_ptr<SinkRecord> record;
    DeviceMemoryRef in, out;
  };
  DeviceRequest SendOnDevice(float first, int64_t rows, int ordinal) {
    DeviceRequest sent{std::make_shared<SinkRecord>(),
                       HostDeviceRef(ordinal, Floats(first, rows * kCols)),
                       HostDeviceRef(ordinal, Floats(0, rows * kCols))};
    auto request = std::make_unique<InferenceRequest>();
    RequestInput input{"x", DataType::kFp32, {rows, kCols}, {}};
    input.device = sent.in;
    request->inputs.push_back(input);
    request->device_outputs["y"] = sent.out;
    request->sink = std::make_unique<RecordingSink>(sent.record);
    EXPECT_TRUE(batcher_->Enqueue(&request).ok());
    return sent;
  }

  static int HostCopies(const DeviceMemoryRef& ref) {
    return static_cast<HostSharedDeviceMemory&>(*ref.memory).host_copies();
  }

  static void ExpectEcho(const SinkRecord& record, float first, int64_t rows) {
    ASSERT_EQ(record.outputs().size(), 1u);
    EXPECT_EQ(record.outputs()[0].shape, (Shape{rows, kCols}));
    EXPECT_EQ(record.outputs()[0].data, Floats(first, rows * kCols))
        << "request starting at " << first;
  }

  std::shared_ptr<SimulatedDevice> device_;
  std::unique_ptr<DynamicBatcher> batcher_;
  absl::Mutex mu_;
  std::deque<std::string> data_;  // request bytes; outlive the requests
};

TEST_F(PipelinedBatchingTest, NextBatchIsCopiedInWhileTheLastComputes) {
  Start(std::chrono::microseconds(0));
  device_->Hold(Kind::kKernel, 0);
  auto a = Send(1, /*rows=*/2);
  ASSERT_TRUE(device_->AwaitStart(Kind::kKernel, 0, kBound));
  auto b = Send(100, /*rows=*/3);  // the second slot takes it at once
  ASSERT_TRUE(device_->AwaitEnd(Kind::kCopyToDevice, 1, kBound));
  EXPECT_FALSE(a->finished());
  device_->Release(Kind::kKernel, 0);
  ASSERT_TRUE(a->AwaitFinish().ok());
  ASSERT_TRUE(b->AwaitFinish().ok());
  ExpectEcho(*a, 1, 2);
  ExpectEcho(*b, 100, 3);
  EXPECT_THAT(device_->problems(), IsEmpty());
}

TEST_F(PipelinedBatchingTest, ConcurrentRequestsEachGetTheirOwnRows) {
  Start(std::chrono::microseconds(300));
  constexpr int kThreads = 4, kPerThread = 40;
  std::vector<std::thread> senders;
  std::vector<std::vector<
      std::pair<std::shared_ptr<SinkRecord>, std::pair<float, int64_t>>>>
      sent(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([this, t, &sent] {
      std::mt19937 rng(t);
      for (int i = 0; i < kPerThread; ++i) {
        const float first = 1000.0f * t + 10.0f * i;
        const int64_t rows = 1 + rng() % 3;
        sent[t].push_back({Send(first, rows), {first, rows}});
      }
    });
  }
  for (auto& s : senders) s.join();
  for (const auto& per_thread : sent) {
    for (const auto& [record, request] : per_thread) {
      ASSERT_TRUE(record->AwaitFinish().ok());
      ExpectEcho(*record, request.first, request.second);
    }
  }
  EXPECT_THAT(device_->problems(), IsEmpty());  // no race, no unpinned copy
}

// Zero-copy CUDA shared memory through the batcher: requests in shared
// device memory and in host memory share one batch; the device requests'
// rows are copied on the device, both ways, and their sinks are told the
// output is already there.
TEST_F(PipelinedBatchingTest, DeviceMemoryRequestsBatchWithHostOnes) {
  Start(std::chrono::microseconds(0), /*ordinal=*/0);
  device_->Hold(Kind::kKernel, 0);
  device_->Hold(Kind::kKernel, 1);
  auto a = Send(1, 1);
  ASSERT_TRUE(device_->AwaitStart(Kind::kKernel, 0, kBound));
  auto b = Send(2, 1);  // the second slot; its kernel waits for the first
  ASSERT_TRUE(device_->AwaitEnd(Kind::kCopyToDevice, 1, kBound));
  // Both slots busy: these two queue and then form one batch.
  auto c = Send(10, 2);
  DeviceRequest d = SendOnDevice(100, 3, 0);
  auto e = Send(20, 1);
  device_->Release(Kind::kKernel, 0);
  device_->Release(Kind::kKernel, 1);
  for (auto* record : {a.get(), b.get(), c.get(), d.record.get(), e.get()}) {
    ASSERT_TRUE(record->AwaitFinish().ok());
  }
  ExpectEcho(*c, 10, 2);
  ExpectEcho(*e, 20, 1);
  ASSERT_EQ(d.record->outputs().size(), 1u);
  const SinkRecord::Output y = d.record->outputs()[0];  // a copy
  EXPECT_TRUE(y.on_device);
  EXPECT_EQ(y.shape, (Shape{3, kCols}));
  EXPECT_EQ(y.byte_size, 3 * kCols * sizeof(float));
  EXPECT_EQ(std::string(d.out.device_data(), d.out.size),
            Floats(100, 3 * kCols));
  EXPECT_EQ(HostCopies(d.in) + HostCopies(d.out), 0);
  int on_device = 0, kernels = 0;
  for (const auto& op : device_->timeline()) {
    on_device += op.kind == Kind::kCopyOnDevice;
    kernels += op.kind == Kind::kKernel;
  }
  EXPECT_EQ(kernels, 3);    // a, b, and c d e as one batch
  EXPECT_EQ(on_device, 2);  // d's input rows in, its output rows out
  EXPECT_THAT(device_->problems(), IsEmpty());
}

// Shared device memory on another device than the instance's takes the
// host path: the input is read through the host, the output handed to the
// sink as any other (which writes it back).
TEST_F(PipelinedBatchingTest, DeviceMemoryOnAnotherDeviceGoesThroughTheHost) {
  Start(std::chrono::microseconds(0), /*ordinal=*/0);
  DeviceRequest d = SendOnDevice(7, 2, /*ordinal=*/1);
  ASSERT_TRUE(d.record->AwaitFinish().ok());
  ExpectEcho(*d.record, 7, 2);
  EXPECT_FALSE(d.record->outputs()[0].on_device);
  EXPECT_EQ(HostCopies(d.in), 1);
  for (const auto& op : device_->timeline())
    EXPECT_NE(op.kind, Kind::kCopyOnDevice);
}

// A sticky fault on the simulated device (a kernel that faults, as an
// illegal address poisons a CUDA context): the executor's health() reports
// it, the batcher fails the batch with it and then refuses requests with
// UNAVAILABLE naming it, and its Health() says the model cannot serve.
TEST_F(PipelinedBatchingTest, AStickyDeviceFaultMakesTheModelUnavailable) {
  Start(std::chrono::microseconds(100));
  const absl::Status fault = absl::InternalError("illegal address");
  device_->FaultOnRun(Kind::kKernel, 0, fault);
  auto first = Send(1.0f, 2);
  const absl::Status failed = first->AwaitFinish();
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("illegal address"), std::string::npos)
      << failed;
  const absl::Status health = batcher_->Health();
  EXPECT_EQ(health.code(), absl::StatusCode::kUnavailable) << health;
  EXPECT_NE(health.message().find("instance 0: "), std::string::npos) << health;
  const std::string bytes = Floats(0.0f, kCols);
  auto request = std::make_unique<InferenceRequest>();
  request->inputs.push_back(
      RequestInput{"x", DataType::kFp32, {1, kCols}, bytes});
  request->sink =
      std::make_unique<RecordingSink>(std::make_shared<SinkRecord>());
  EXPECT_EQ(batcher_->Enqueue(&request).code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace coalesce
