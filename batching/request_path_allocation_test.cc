// Heap allocations per request on the batcher's side of the request path:
// from DynamicBatcher::Enqueue to the sink's Finish, through the CPU
// executor, one request at a time (each batch formed on the enqueuing thread,
// run and answered on the instance's worker), in steady state. Counts every
// global operator new on every thread (engine/testing/counting_allocator.h).
//
// The goal is zero (issue 16). Today's count is the budget below, so that
// any new allocation on this path fails the test; each one left is listed
// next to the budget. The frontend's own (gRPC's messages, the request and
// sink objects it builds) are outside what this counts: the requests are
// built before counting starts.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "batching/dynamic_batcher.h"
#include "engine/cpu_executor.h"
#include "engine/testing/counting_allocator.h"
#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

constexpr int64_t kWidth = 16;

// Writes the output into memory it owns and signals Finish; allocates
// nothing itself.
class PreparedSink : public ResponseSink {
 public:
  PreparedSink(absl::Notification* done, absl::Status* status)
      : done_(done), status_(status) {}
  char* AddOutput(const std::string&, DataType, const Shape&,
                  size_t byte_size) override {
    return byte_size <= sizeof(output_) ? output_ : nullptr;
  }
  void Finish(const absl::Status& status) override {
    *status_ = status;
    done_->Notify();
  }
  bool IsCancelled() const override { return false; }

 private:
  absl::Notification* const done_;
  absl::Status* const status_;
  char output_[kWidth * sizeof(float)];
};

struct PreparedRequest {
  std::unique_ptr<InferenceRequest> request;
  absl::Notification done;
  absl::Status status;
};

class RequestPathAllocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::OnnxModelBuilder b(13);
    b.Input("x", {-1, kWidth}).Output("y");
    b.Node("Identity", {"x"}, {"y"});
    auto model = b.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    CpuExecutorOptions cpu;
    cpu.num_slots = 2;
    auto instance = CreateCpuExecutor(*model, cpu);
    ASSERT_TRUE(instance.ok()) << instance.status();
    std::vector<std::unique_ptr<ExecutorInstance>> instances;
    instances.push_back(*std::move(instance));
    SchedulerOptions options;
    options.model_name = "identity";
    options.max_batch_size = 8;
    options.dynamic_batching = true;
    options.inputs = {{"x", DataType::kFp32, {kWidth}}};
    options.outputs = {{"y", DataType::kFp32, {kWidth}}};
    auto batcher = DynamicBatcher::Create(options, std::move(instances));
    ASSERT_TRUE(batcher.ok()) << batcher.status();
    batcher_ = *std::move(batcher);
    input_.assign(kWidth * sizeof(float), '\0');
  }

  std::unique_ptr<PreparedRequest> Prepare() {
    auto prepared = std::make_unique<PreparedRequest>();
    prepared->request = std::make_unique<InferenceRequest>();
    prepared->request->inputs.push_back(
        RequestInput{"x", DataType::kFp32, {1, kWidth}, input_, {}});
    prepared->request->sink =
        std::make_unique<PreparedSink>(&prepared->done, &prepared->status);
    return prepared;
  }

  // Sends each request and waits for its answer; the allocations made
  // meanwhile, on every thread.
  int64_t SendOneAtATime(std::vector<std::unique_ptr<PreparedRequest>>& batch) {
    const int64_t before = testing::HeapAllocations();
    for (auto& prepared : batch) {
      EXPECT_TRUE(batcher_->Enqueue(&prepared->request).ok());
      prepared->done.WaitForNotification();
      EXPECT_TRUE(prepared->status.ok()) << prepared->status;
    }
    return testing::HeapAllocations() - before;
  }

  std::string input_;
  std::unique_ptr<DynamicBatcher> batcher_;
};

TEST_F(RequestPathAllocationTest, PerRequestCountStaysWithinItsBudget) {
  constexpr int kWarmup = 64;
  constexpr int kCounted = 256;
  std::vector<std::unique_ptr<PreparedRequest>> warmup, counted;
  for (int i = 0; i < kWarmup; ++i) warmup.push_back(Prepare());
  for (int i = 0; i < kCounted; ++i) counted.push_back(Prepare());
  SendOneAtATime(warmup);  // sizes the plan cache, slot buffers, queues
  const int64_t allocations = SendOneAtATime(counted);
  const double per_request = static_cast<double>(allocations) / kCounted;
  std::printf("allocations per request: %.2f\n", per_request);
  // Today's count: 18.11 (4636 over 256 requests, the same on every run;
  // 29.23 before the CPU executor ran a batch as one task, Submit, and the
  // instance timeline reused its vectors).
  // Where they come from (a malloc probe with call stacks, perf record -e
  // probe_libc:malloc --call-graph dwarf, on this test):
  //   the request's layout (RequestValidator: input and output order, item
  //     shapes and each shape's vector) and its std::list queue node;
  //   the batch: the plan's member refs, the Batch object and its request
  //     vector, the shapes given to SetInputShapes, the scatter's statuses;
  //   the CPU executor: the batch's Event, its completion callback and the
  //     callback vector, and the std::function task on the worker's queue.
  // Lower it when one goes; never raise it without saying why here.
  constexpr double kBudget = 19;
  EXPECT_LE(per_request, kBudget);
}

}  // namespace
}  // namespace coalesce
