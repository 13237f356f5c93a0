#include "engine/cpu_executor.h"

#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/aligned_buffer.h"
#include "engine/cpu_stream.h"
#include "engine/execution_plan.h"
#include "engine/plan_cache.h"
#include "kernels/cpu/denormals.h"
#include "kernels/cpu/threading.h"

namespace coalesce {
namespace {

using Clock = std::chrono::steady_clock;

class CpuBatchSlot : public BatchSlot {
 public:
  CpuBatchSlot(PlanCache* plans, NodeProfile* profile)
      : plans_(plans), profile_(profile) {}

  absl::Status SetInputShapes(const std::vector<Shape>& shapes) override {
    plan_ = nullptr;
    absl::StatusOr<std::shared_ptr<const ExecutionPlan>> plan =
        plans_->Get(shapes);
    if (!plan.ok()) return plan.status();
    inputs_.resize((*plan)->num_inputs());
    outputs_.resize((*plan)->num_outputs());
    for (int i = 0; i < (*plan)->num_inputs(); ++i) {
      if (absl::Status s = inputs_[i].Reserve((*plan)->input_byte_size(i));
          !s.ok())
        return s;
    }
    for (int i = 0; i < (*plan)->num_outputs(); ++i) {
      if (absl::Status s = outputs_[i].Reserve((*plan)->output_byte_size(i));
          !s.ok())
        return s;
    }
    plan_ = *std::move(plan);
    return absl::OkStatus();
  }

  char* input_data(int index) override { return inputs_[index].data(); }
  size_t input_byte_size(int index) const override {
    return plan_->input_byte_size(index);
  }
  const Shape& output_shape(int index) const override {
    return plan_->output_shape(index);
  }
  const char* output_data(int index) const override {
    return outputs_[index].data();
  }
  size_t output_byte_size(int index) const override {
    return plan_->output_byte_size(index);
  }
  StepTimings timings() const override { return timings_; }

  // Worker-thread side. The protocol keeps the owner off the slot between
  // CopyIn and CopyOut's completion; the stream's queue orders the accesses.
  absl::Status BeginBatch() {
    status_ = plan_ ? absl::OkStatus()
                    : absl::FailedPreconditionError(
                          "CopyIn without a successful SetInputShapes");
    timings_ = StepTimings{};
    return status_;
  }

  absl::Status RunBatch(AlignedBuffer& arena) {
    if (!status_.ok()) return status_;
    status_ = arena.Reserve(plan_->arena_bytes());
    if (!status_.ok()) return status_;
    std::vector<const char*> in(inputs_.size());
    std::vector<char*> out(outputs_.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = inputs_[i].data();
    for (size_t i = 0; i < out.size(); ++i) out[i] = outputs_[i].data();
    status_ = plan_->Execute(in, out, arena.data(), profile_);
    return status_;
  }

  const absl::Status& status() const { return status_; }
  StepTimings& mutable_timings() { return timings_; }

 private:
  PlanCache* const plans_;
  NodeProfile* const profile_;  // may be null
  std::shared_ptr<const ExecutionPlan> plan_;
  std::vector<AlignedBuffer> inputs_;
  std::vector<AlignedBuffer> outputs_;
  absl::Status status_;
  StepTimings timings_;
};

class CpuExecutorInstance : public ExecutorInstance {
 public:
  CpuExecutorInstance(std::shared_ptr<const Model> model,
                      const CpuExecutorOptions& options)
      : plans_(std::move(model)), stream_([options] {
          kernels::SetIntraOpThreads(options.intra_op_threads);
          if (options.flush_denormals) kernels::SetFlushDenormals(true);
        }) {
    for (int i = 0; i < options.num_slots; ++i) {
      slots_.push_back(std::make_unique<CpuBatchSlot>(&plans_, options.profile));
    }
  }

  int num_slots() const override { return static_cast<int>(slots_.size()); }
  BatchSlot* slot(int index) override { return slots_[index].get(); }

  std::shared_ptr<Event> CopyIn(BatchSlot* slot) override {
    return Enqueue(slot, [](CpuBatchSlot& s, AlignedBuffer&) {
      absl::Status status = s.BeginBatch();
      return std::make_pair(status, &StepTimings::copy_in);
    });
  }

  std::shared_ptr<Event> Run(BatchSlot* slot) override {
    return Enqueue(slot, [](CpuBatchSlot& s, AlignedBuffer& arena) {
      absl::Status status = s.RunBatch(arena);
      return std::make_pair(status, &StepTimings::run);
    });
  }

  std::shared_ptr<Event> CopyOut(BatchSlot* slot) override {
    // Outputs were written in place by Run.
    return Enqueue(slot, [](CpuBatchSlot& s, AlignedBuffer&) {
      return std::make_pair(s.status(), &StepTimings::copy_out);
    });
  }

 private:
  using Step =
      std::pair<absl::Status, std::chrono::nanoseconds StepTimings::*> (*)(
          CpuBatchSlot&, AlignedBuffer&);

  // Queues `step` on the worker; it records its duration and completes the
  // returned event with its status.
  std::shared_ptr<Event> Enqueue(BatchSlot* slot, Step step) {
    auto event = std::make_shared<Event>();
    CpuBatchSlot* own = FindSlot(slot);
    if (own == nullptr) {
      event->Complete(
          absl::InvalidArgumentError("slot does not belong to this instance"));
      return event;
    }
    stream_.Enqueue([this, own, step, event] {
      const Clock::time_point start = Clock::now();
      auto [status, field] = step(*own, arena_);
      own->mutable_timings().*field = Clock::now() - start;
      event->Complete(status);
    });
    return event;
  }

  CpuBatchSlot* FindSlot(BatchSlot* slot) {
    for (auto& s : slots_) {
      if (s.get() == slot) return s.get();
    }
    return nullptr;
  }

  PlanCache plans_;
  std::vector<std::unique_ptr<CpuBatchSlot>> slots_;
  AlignedBuffer arena_;  // used only on the worker thread
  CpuStream stream_;     // last: joined first on destruction
};

}  // namespace

absl::StatusOr<std::unique_ptr<ExecutorInstance>> CreateCpuExecutor(
    std::shared_ptr<const Model> model, const CpuExecutorOptions& options) {
  if (model == nullptr) return absl::InvalidArgumentError("model is null");
  if (options.intra_op_threads < 1 || options.num_slots < 1) {
    return absl::InvalidArgumentError(
        "intra_op_threads and num_slots must be at least 1");
  }
  if (options.profile != nullptr &&
      options.profile->size() != model->graph().nodes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the profile has ", options.profile->size(), " nodes, the model ",
        model->graph().nodes.size()));
  }
  return std::make_unique<CpuExecutorInstance>(std::move(model), options);
}

}  // namespace coalesce
