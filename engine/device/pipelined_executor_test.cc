// The pipelined executor on the simulated device: results, overlap of copies
// with compute, slot safety, errors, out of memory and shutdown. Overlap is
// asserted without timing: the simulated device holds a kernel at its start
// while the test checks what else ran meanwhile.
#include "engine/device/pipelined_executor.h"

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/simulated_device.h"
#include "engine/testing/host_shared_device_memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using Kind = SimulatedDevice::OpKind;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr absl::Duration kBound = absl::Seconds(20);  // only hit on failure
constexpr int64_t kWidth = 4;

// y = 2x + 1 on FP32 [batch, 4], as one simulated kernel.
class AffineProgram : public DeviceProgram {
 public:
  AffineProgram(SimulatedDevice* device, std::chrono::microseconds duration)
      : device_(device), duration_(duration) {
    signature_.inputs = {{"x", DataType::kFp32, {-1, kWidth}}};
    signature_.outputs = {{"y", DataType::kFp32, {-1, kWidth}}};
  }
  const ModelSignature& signature() const override { return signature_; }
  absl::StatusOr<std::vector<Shape>> OutputShapes(
      const std::vector<Shape>& in) const override {
    if (in[0].size() != 2 || in[0][1] != kWidth) {
      return absl::InvalidArgumentError("input 'x' must be [batch, 4]");
    }
    return in;
  }
  absl::Status Enqueue(DeviceStream& stream, const std::vector<Shape>& shapes,
                       const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) override {
    const size_t n = static_cast<size_t>(shapes[0][0] * kWidth);
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    SimulatedDevice::Kernel kernel;
    kernel.name = "affine";
    kernel.reads = {{x, n * sizeof(float)}};
    kernel.writes = {{y, n * sizeof(float)}};
    kernel.duration = duration_;
    kernel.body = [x, y, n] {
      for (size_t i = 0; i < n; ++i) y[i] = 2 * x[i] + 1;
      return absl::OkStatus();
    };
    return device_->Launch(stream, std::move(kernel));
  }

 private:
  SimulatedDevice* device_;
  std::chrono::microseconds duration_;
  ModelSignature signature_;
};

class PipelinedExecutorTest : public ::testing::Test {
 protected:
  void Create(SimulatedDevice::Options device_options = {}, int num_slots = 2,
              std::chrono::microseconds kernel_time = {}, int ordinal = -1) {
    device_ = std::make_shared<SimulatedDevice>(device_options);
    auto created = CreatePipelinedExecutor(
        device_, std::make_unique<AffineProgram>(device_.get(), kernel_time),
        PipelinedExecutorOptions{num_slots, ordinal});
    ASSERT_TRUE(created.ok()) << created.status();
    executor_ = *std::move(created);
  }

  void TearDown() override {
    if (device_ != nullptr) device_->ReleaseAll();  // a failed test held ops
    executor_.reset();
  }

  // Fills the slot with rows of value `seed`, enqueues the three steps and
  // returns CopyOut's event.
  std::shared_ptr<Event> Submit(int slot_index, int64_t rows, float seed) {
    BatchSlot* slot = executor_->slot(slot_index);
    absl::Status shaped = slot->SetInputShapes({{rows, kWidth}});
    EXPECT_TRUE(shaped.ok()) << shaped;
    auto* x = reinterpret_cast<float*>(slot->input_data(0));
    for (int64_t i = 0; i < rows * kWidth; ++i) x[i] = seed + i;
    executor_->CopyIn(slot);
    executor_->Run(slot);
    return executor_->CopyOut(slot);
  }

  void ExpectOutputs(int slot_index, int64_t rows, float seed) {
    const BatchSlot* slot = executor_->slot(slot_index);
    ASSERT_EQ(slot->output_shape(0), (Shape{rows, kWidth}));
    ASSERT_EQ(slot->output_byte_size(0), rows * kWidth * sizeof(float));
    const auto* y = reinterpret_cast<const float*>(slot->output_data(0));
    for (int64_t i = 0; i < rows * kWidth; ++i) {
      ASSERT_EQ(y[i], 2 * (seed + i) + 1)
          << "slot " << slot_index << " i " << i;
    }
  }

  SimulatedDevice::OpRecord Op(Kind kind, int index) {
    for (const auto& op : device_->timeline()) {
      if (op.kind == kind && op.index == index) return op;
    }
    ADD_FAILURE() << "op " << index << " not in the timeline";
    return {};
  }

  std::shared_ptr<SimulatedDevice> device_;
  std::unique_ptr<PipelinedExecutor> executor_;
};

TEST_F(PipelinedExecutorTest, ComputesThroughDeviceMemory) {
  Create();
  for (int round = 0; round < 3; ++round) {
    for (int s = 0; s < 2; ++s) {
      const int64_t rows = 1 + 7 * s + 13 * round;  // buffers grow
      ASSERT_TRUE(Submit(s, rows, 10.0f * s + round)->Wait().ok());
      ExpectOutputs(s, rows, 10.0f * s + round);
    }
  }
  EXPECT_THAT(device_->problems(), IsEmpty());  // no race, no unpinned copy
}

TEST_F(PipelinedExecutorTest, NextCopyInAndLastCopyOutOverlapCompute) {
  Create();
  device_->Hold(Kind::kKernel, 0);
  device_->Hold(Kind::kKernel, 1);
  auto done0 = Submit(0, 8, 1.0f);
  auto done1 = Submit(1, 8, 100.0f);

  // Batch 1 is copied in while batch 0's kernel is still running.
  ASSERT_TRUE(device_->AwaitStart(Kind::kKernel, 0, kBound));
  ASSERT_TRUE(device_->AwaitEnd(Kind::kCopyToDevice, 1, kBound));
  EXPECT_FALSE(done0->IsComplete());
  device_->Release(Kind::kKernel, 0);

  // Batch 0 is copied out while batch 1's kernel is running.
  ASSERT_TRUE(device_->AwaitStart(Kind::kKernel, 1, kBound));
  ASSERT_TRUE(done0->Wait().ok());
  ExpectOutputs(0, 8, 1.0f);
  EXPECT_FALSE(done1->IsComplete());
  device_->Release(Kind::kKernel, 1);
  ASSERT_TRUE(done1->Wait().ok());
  ExpectOutputs(1, 8, 100.0f);

  // The same facts from the recorded timeline.
  EXPECT_LT(Op(Kind::kCopyToDevice, 1).end_tick, Op(Kind::kKernel, 0).end_tick);
  EXPECT_LT(Op(Kind::kCopyToHost, 0).end_tick, Op(Kind::kKernel, 1).end_tick);
  EXPECT_LT(Op(Kind::kKernel, 0).end_tick, Op(Kind::kKernel, 1).start_tick);
  EXPECT_THAT(device_->problems(), IsEmpty());
}

TEST_F(PipelinedExecutorTest, SlotIsRewrittenOnlyAfterItsCopyOut) {
  // Driven as the batcher does: a slot is refilled once its CopyOut is done.
  SimulatedDevice::Options options;
  options.copy_latency = std::chrono::microseconds(300);
  Create(options, /*num_slots=*/2,
         /*kernel_time=*/std::chrono::microseconds(500));
  constexpr int kBatches = 12;
  std::vector<std::shared_ptr<Event>> done(2);
  for (int b = 0; b < kBatches; ++b) {
    const int s = b % 2;
    if (done[s] != nullptr) {
      ASSERT_TRUE(done[s]->Wait().ok());
      ExpectOutputs(s, 4 + b - 2, static_cast<float>(b - 2));
    }
    done[s] = Submit(s, 4 + b, static_cast<float>(b));
  }
  for (int s = 0; s < 2; ++s) {
    ASSERT_TRUE(done[s]->Wait().ok());
    ExpectOutputs(s, 4 + kBatches - 2 + s,
                  static_cast<float>(kBatches - 2 + s));
  }
  for (int b = 2; b < kBatches; ++b) {
    EXPECT_GT(Op(Kind::kCopyToDevice, b).start_tick,
              Op(Kind::kCopyToHost, b - 2).end_tick)
        << "batch " << b << " rewrote its slot before batch " << b - 2
        << " was copied out";
  }
  EXPECT_THAT(device_->problems(), IsEmpty());
}

TEST_F(PipelinedExecutorTest, EnqueueErrorFailsExactlyItsBatch) {
  Create();
  device_->FailNextEnqueue(Kind::kKernel,
                           absl::InternalError("invalid launch configuration"));
  auto done0 = Submit(0, 2, 1.0f);
  auto done1 = Submit(1, 3, 2.0f);
  absl::Status failed = done0->Wait();
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(failed.message(), HasSubstr("run on simulated"));
  EXPECT_THAT(failed.message(), HasSubstr("invalid launch configuration"));
  ASSERT_TRUE(done1->Wait().ok());
  ExpectOutputs(1, 3, 2.0f);
  ASSERT_TRUE(Submit(0, 5, 3.0f)->Wait().ok());  // the slot is usable again
  ExpectOutputs(0, 5, 3.0f);
  EXPECT_TRUE(executor_->health().ok());
}

TEST_F(PipelinedExecutorTest, CopyEnqueueErrorFailsTheLaterSteps) {
  Create();
  device_->FailNextEnqueue(Kind::kCopyToDevice,
                           absl::InvalidArgumentError("bad pointer"));
  BatchSlot* slot = executor_->slot(0);
  ASSERT_TRUE(slot->SetInputShapes({{2, kWidth}}).ok());
  absl::Status in = executor_->CopyIn(slot)->Wait();
  absl::Status run = executor_->Run(slot)->Wait();
  absl::Status out = executor_->CopyOut(slot)->Wait();
  EXPECT_EQ(in.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(in.message(), HasSubstr("input 'x'"));
  EXPECT_EQ(run, in);
  EXPECT_EQ(out, in);
  EXPECT_THAT(device_->timeline(), IsEmpty());  // nothing ran
}

TEST_F(PipelinedExecutorTest, StickyFaultFailsItsBatchAndMarksUnhealthy) {
  Create();
  ASSERT_TRUE(Submit(0, 2, 1.0f)->Wait().ok());
  device_->FaultOnRun(Kind::kKernel, 1,
                      absl::InternalError("illegal memory access"));
  absl::Status failed = Submit(1, 2, 1.0f)->Wait();
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(failed.message(), HasSubstr("illegal memory access"));
  absl::Status health = executor_->health();
  EXPECT_EQ(health.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(health.message(), HasSubstr("illegal memory access"));
  absl::Status refused = executor_->slot(0)->SetInputShapes({{2, kWidth}});
  EXPECT_EQ(refused, health);
}

TEST_F(PipelinedExecutorTest,
       OutOfDeviceMemoryIsResourceExhaustedNamingTensor) {
  SimulatedDevice::Options options;
  options.device_memory_bytes = 8 << 10;
  Create(options);
  absl::Status s = executor_->slot(0)->SetInputShapes({{1024, kWidth}});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("input 'x'"));
  // Smaller batches still fit, and the instance stays healthy.
  ASSERT_TRUE(Submit(0, 16, 1.0f)->Wait().ok());
  ExpectOutputs(0, 16, 1.0f);
  EXPECT_TRUE(executor_->health().ok());
}

TEST_F(PipelinedExecutorTest, BadShapeIsInvalidArgument) {
  Create();
  absl::Status s = executor_->slot(0)->SetInputShapes({{2, kWidth + 1}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'x'"));
}

TEST_F(PipelinedExecutorTest, DestructionWaitsForEnqueuedBatches) {
  Create();
  device_->Hold(Kind::kKernel, 1);
  auto done0 = Submit(0, 4, 1.0f);
  auto done1 = Submit(1, 4, 2.0f);
  // Kernel 1 is let go only once it has started: the destruction below
  // begins while batch 1 cannot have finished.
  std::thread releaser([this] {
    if (device_->AwaitStart(Kind::kKernel, 1, kBound)) {
      device_->Release(Kind::kKernel, 1);
    }
  });
  executor_.reset();
  releaser.join();
  ASSERT_TRUE(done0->IsComplete());
  ASSERT_TRUE(done1->IsComplete());
  EXPECT_TRUE(done0->Wait().ok());
  EXPECT_TRUE(done1->Wait().ok());
  EXPECT_EQ(device_->timeline().size(), 6u);  // 2 x (copy in, kernel, copy out)
  EXPECT_EQ(device_->device_bytes_in_use(), 0u);
}

TEST_F(PipelinedExecutorTest, OneSlotStillRunsEveryBatch) {
  Create({}, /*num_slots=*/1);
  for (int b = 0; b < 4; ++b) {
    ASSERT_TRUE(Submit(0, 1 + b, static_cast<float>(b))->Wait().ok());
    ExpectOutputs(0, 1 + b, static_cast<float>(b));
  }
}

// Rows of `count` floats first, first + 1, ... as bytes.
std::string FloatBytes(float first, int64_t count) {
  std::string bytes(count * sizeof(float), '\0');
  for (int64_t i = 0; i < count; ++i) {
    const float v = first + static_cast<float>(i);
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
  }
  return bytes;
}

// The bytes of every finished op of `kind`, in end order.
std::vector<size_t> CopySizes(const SimulatedDevice& device, Kind kind) {
  std::vector<size_t> sizes;
  for (const auto& op : device.timeline()) {
    if (op.kind == kind) sizes.push_back(op.bytes);
  }
  return sizes;
}

// Zero copy: row 1 of the input comes from shared device memory, rows 1-2
// of the output go to it; only the other rows touch the host staging.
TEST_F(PipelinedExecutorTest, SharedDeviceMemoryRowsAreCopiedOnTheDevice) {
  Create({}, 2, {}, /*ordinal=*/0);
  constexpr size_t kRow = kWidth * sizeof(float);
  // The input row at offset kRow of its region, the output rows at 0.
  DeviceMemoryRef in = HostDeviceRef(0, FloatBytes(-1, 2 * kWidth));
  in.offset = kRow;
  in.size = kRow;
  DeviceMemoryRef out = HostDeviceRef(0, std::string(2 * kRow, '\0'));
  BatchSlot* slot = executor_->slot(0);
  ASSERT_TRUE(slot->Addresses(*in.memory));
  ASSERT_TRUE(slot->SetInputShapes({{3, kWidth}}).ok());
  std::memcpy(slot->input_data(0), FloatBytes(0, kWidth).data(), kRow);
  std::memset(slot->input_data(0) + kRow, 0x7f, kRow);  // must not be read
  std::memcpy(slot->input_data(0) + 2 * kRow, FloatBytes(8, kWidth).data(),
              kRow);
  ASSERT_TRUE(slot->SetInputFromDevice(0, kRow, in).ok());
  ASSERT_TRUE(slot->SetOutputToDevice(0, 1, 2, 3, out).ok());
  executor_->CopyIn(slot);
  executor_->Run(slot);
  ASSERT_TRUE(executor_->CopyOut(slot)->Wait().ok());

  // y = 2x + 1: row 0 from the host, row 1 from in's x = 3..6, row 2 x = 8..
  const auto* y = reinterpret_cast<const float*>(slot->output_data(0));
  for (int i = 0; i < kWidth; ++i) EXPECT_EQ(y[i], 2 * i + 1);
  const auto* device_y = reinterpret_cast<const float*>(out.device_data());
  for (int i = 0; i < kWidth; ++i) {
    EXPECT_EQ(device_y[i], 2 * (3 + i) + 1) << i;
    EXPECT_EQ(device_y[kWidth + i], 2 * (8 + i) + 1) << i;
  }
  EXPECT_EQ(CopySizes(*device_, Kind::kCopyToDevice),
            (std::vector<size_t>{kRow, kRow}));  // rows 0 and 2
  EXPECT_EQ(CopySizes(*device_, Kind::kCopyOnDevice),
            (std::vector<size_t>{kRow, 2 * kRow}));
  EXPECT_EQ(CopySizes(*device_, Kind::kCopyToHost),
            (std::vector<size_t>{kRow}));  // row 0
  EXPECT_THAT(device_->problems(), IsEmpty());

  // The next batch on the slot registered nothing: all through the host.
  ASSERT_TRUE(Submit(0, 3, 5)->Wait().ok());
  ExpectOutputs(0, 3, 5);
  EXPECT_EQ(CopySizes(*device_, Kind::kCopyOnDevice).size(), 2u);
}

TEST_F(PipelinedExecutorTest, SharedDeviceMemoryItCannotUseIsRefused) {
  Create({}, 2, {}, /*ordinal=*/0);
  constexpr size_t kRow = kWidth * sizeof(float);
  BatchSlot* slot = executor_->slot(0);
  ASSERT_TRUE(slot->SetInputShapes({{2, kWidth}}).ok());
  DeviceMemoryRef other_gpu = HostDeviceRef(1, std::string(kRow, '\0'));
  EXPECT_FALSE(slot->Addresses(*other_gpu.memory));
  EXPECT_EQ(slot->SetInputFromDevice(0, 0, other_gpu).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(slot->SetOutputToDevice(0, 0, 1, 2, other_gpu).code(),
            absl::StatusCode::kUnimplemented);
  DeviceMemoryRef row = HostDeviceRef(0, std::string(kRow, '\0'));
  EXPECT_EQ(slot->SetInputFromDevice(0, 2 * kRow, row).code(),
            absl::StatusCode::kInvalidArgument);  // past the batch
  EXPECT_EQ(slot->SetOutputToDevice(0, 0, 2, 2, row).code(),
            absl::StatusCode::kInvalidArgument);  // two rows, room for one
  EXPECT_EQ(slot->SetOutputToDevice(0, 1, 2, 2, row).code(),
            absl::StatusCode::kInvalidArgument);  // rows past the batch
  EXPECT_TRUE(slot->SetOutputToDevice(0, 1, 1, 2, row).ok());

  Create();  // no ordinal: addresses no shared device memory
  EXPECT_FALSE(executor_->slot(0)->Addresses(*row.memory));
}

TEST(CreatePipelinedExecutorTest, RejectsBadArguments) {
  auto device = std::make_shared<SimulatedDevice>();
  auto no_program = CreatePipelinedExecutor(device, nullptr, {});
  EXPECT_EQ(no_program.status().code(), absl::StatusCode::kInvalidArgument);
  auto no_slots =
      CreatePipelinedExecutor(device,
                              std::make_unique<AffineProgram>(
                                  device.get(), std::chrono::microseconds(0)),
                              PipelinedExecutorOptions{0});
  EXPECT_EQ(no_slots.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
